// SPDX-License-Identifier: GPL-2.0
/*
 * attach over pins of another layout (user/lib/layout.h): refused, naming
 * both layouts and the way through, or with --migrate that way taken here:
 * `ringctl save`, detach every interface, purge, create the state anew
 * (same connection-table size), `ringctl restore`, the connection table
 * copied over where its entries still fit, attach every interface again
 * (same mode and chain slot). ringctl is the one next to this ringload: the
 * save and restore a user would run, not a second copy of them.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <net/if.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "layout.h"
#include "ringload.h"
#include "xdp_chain.h"

extern char **environ;

/* where the saved configuration waits while the state is recreated */
#define MIGRATE_DIR "/run/ringmaster"

struct was_attached {
	char name[RM_IFNAME_MAX];
	enum xdp_attach_mode mode;
	int slot; /* chain slot, -1: attached alone */
};

/* One connection-table entry as read, its node named. */
struct conn_copy {
	bool v6;
	struct rm_flow key; /* the larger of the two keys */
	struct rm_conn val;
};

struct migration {
	const char *pin_dir;
	char ringctl[PATH_MAX], file[PATH_MAX];
	struct rm_snap *old;
	struct conn_copy *conns;
	size_t nconns;
	__u32 conn_max;
	struct was_attached ifs[RM_MAX_IFACES];
	int nifs;
};

static int run_ringctl(const struct migration *m, const char *cmd,
		       const char *arg1, const char *arg2)
{
	char *argv[] = {(char *)m->ringctl, "--pin-dir", (char *)m->pin_dir,
			(char *)cmd, (char *)arg1, (char *)arg2, NULL};
	pid_t pid;
	int st;

	fflush(stdout); /* our lines before its */
	if (posix_spawn(&pid, m->ringctl, NULL, NULL, argv, environ))
		return -errno;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -EIO;
}

/* The ringctl installed beside this ringload. */
static int find_ringctl(struct migration *m)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		return -errno;
	self[n] = '\0';
	snprintf(m->ringctl, sizeof(m->ringctl), "%s/ringctl", dirname(self));
	return access(m->ringctl, X_OK) ? -errno : 0;
}

static void conn_read(struct migration *m, int fd, bool v6)
{
	size_t ksize = v6 ? sizeof(struct rm_flow) : sizeof(struct rm_conn_key4);
	struct rm_flow key, next;
	struct conn_copy *c;

	for (void *prev = NULL; !bpf_map_get_next_key(fd, prev, &next);
	     prev = &key) {
		key = next;
		if (m->nconns % 4096 == 0) {
			c = realloc(m->conns, (m->nconns + 4096) * sizeof(*c));
			if (!c)
				return; /* keep what was read */
			m->conns = c;
		}
		c = &m->conns[m->nconns];
		memset(c, 0, sizeof(*c));
		c->v6 = v6;
		memcpy(&c->key, &key, ksize);
		/* an older entry may be shorter: zero-extended */
		if (!bpf_map_lookup_elem(fd, &key, &c->val))
			m->nconns++;
	}
}

/* The old state's configuration (for the nodes' names), its connection
 * table where the keys still fit, and where it is attached. */
static int read_old(struct migration *m)
{
	struct rm_iface all[RM_MAX_IFACES];
	struct rm_state st;
	struct rm_xdp_chain c;
	enum xdp_attach_mode mode;
	int fd, err;
	__u32 id;

	m->old = malloc(sizeof(*m->old));
	if (!m->old)
		return -ENOMEM;
	err = rm_state_open(&st, m->pin_dir, RM_LOCK_SH);
	if (!err)
		err = rm_state_read(&st, m->old);
	if (!err)
		err = rm_state_conn_max(&st, &m->conn_max);
	if (err)
		return err;
	conn_read(m, st.fd[RM_M_CONNS], false);
	conn_read(m, st.fd[RM_M_CONNS6], true);
	rm_state_close(&st);
	fd = ifaces_open(m->pin_dir, false);
	if (fd < 0 || ifaces_read(fd, all))
		memset(all, 0, sizeof(all));
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < RM_MAX_IFACES; i++) {
		struct was_attached *w = &m->ifs[m->nifs];

		if (!all[i].ifindex || ifaces_find_prog(all[i].ifindex,
							all[i].prog_id, &id,
							&mode))
			continue;
		snprintf(w->name, sizeof(w->name), "%s", all[i].name);
		w->mode = (enum xdp_attach_mode)all[i].mode;
		w->slot = -1;
		if (!rm_xdp_chain_read(all[i].ifindex, &c))
			w->slot = rm_xdp_chain_find(&c, RM_PROG_NAME, id);
		rm_xdp_chain_close(&c);
		m->nifs++;
	}
	return 0;
}

/* The old entries, their nodes found again by service and node name. */
static size_t conn_write(struct migration *m)
{
	struct rm_snap *now = malloc(sizeof(*now));
	struct rm_state st;
	size_t kept = 0;

	if (!now || rm_state_open(&st, m->pin_dir, RM_LOCK_EX)) {
		free(now);
		return 0;
	}
	if (!rm_state_read(&st, now))
		for (size_t i = 0; i < m->nconns; i++) {
			struct rm_conn v = m->conns[i].val;
			const struct rm_node *n;
			int svc, slot;

			if (v.node >= RM_MAX_NODES)
				continue;
			n = &m->old->node[v.node];
			if (n->state == RM_NODE_FREE || n->gen != v.gen)
				continue; /* not honoured before either */
			svc = rm_snap_find_svc(now,
					       m->old->svc[n->svc_id].name);
			slot = svc < 0 ? -1
				       : rm_snap_find_node(now, (__u32)svc,
							   n->name);
			if (slot < 0)
				continue;
			v.node = (__u32)slot;
			v.gen = now->node[slot].gen;
			if (!bpf_map_update_elem(
				st.fd[m->conns[i].v6 ? RM_M_CONNS6 : RM_M_CONNS],
				&m->conns[i].key, &v, BPF_NOEXIST))
				kept++;
		}
	rm_state_close(&st);
	free(now);
	return kept;
}

static int migrate(struct load_opts *o, const char *from, const char *to)
{
	struct migration m = {.pin_dir = o->pin_dir};
	struct load_opts a;
	bool asked_done = false, touched = false;
	size_t kept;
	int err, ret = RM_EXIT_RUNTIME;

	err = find_ringctl(&m);
	if (err)
		return load_error(RM_EXIT_RUNTIME,
				  "--migrate: no ringctl beside this ringload "
				  "(%s): %s",
				  m.ringctl, strerror(-err));
	if (mkdir(MIGRATE_DIR, 0700) && errno != EEXIST)
		return load_error(RM_EXIT_RUNTIME, "--migrate: cannot create "
				  "%s: %s", MIGRATE_DIR, strerror(errno));
	snprintf(m.file, sizeof(m.file), "%s/migrate-%u.conf", MIGRATE_DIR,
		 (unsigned)getpid());
	printf("migrating %s from %s to %s\n", o->pin_dir, from, to);
	/* nothing is touched until the configuration is safe in a file */
	if (run_ringctl(&m, "save", "--output", m.file)) {
		load_error(RM_EXIT_RUNTIME,
			   "--migrate: ringctl save failed: the state is left "
			   "as it was");
		goto out;
	}
	err = read_old(&m);
	if (err) {
		load_error(RM_EXIT_RUNTIME, "--migrate: %s: the state is left "
			   "as it was",
			   err == -ENOMEM ? "out of memory" : rm_errmsg());
		goto out;
	}
	touched = true;
	for (int i = 0; i < m.nifs; i++) {
		a = *o;
		a.iface = m.ifs[i].name;
		a.purge = false;
		if (cmd_detach(&a))
			goto broken;
	}
	a = *o;
	if (cmd_purge(&a))
		goto broken;
	if (rm_state_create_sized(o->pin_dir, m.conn_max, NULL)) {
		load_error(RM_EXIT_RUNTIME, "--migrate: %s", rm_errmsg());
		goto broken;
	}
	if (run_ringctl(&m, "restore", m.file, NULL))
		goto broken;
	kept = conn_write(&m);
	for (int i = 0; i < m.nifs; i++) {
		a = *o;
		a.iface = m.ifs[i].name;
		a.mode.val = m.ifs[i].mode == XDP_MODE_SKB ? LOAD_GENERIC
							   : LOAD_NATIVE;
		a.chain = m.ifs[i].slot >= 0;
		a.slot.val = a.chain ? (__u32)m.ifs[i].slot : 0;
		a.slot.set = a.chain;
		a.reuse = false;
		a.migrate = false;
		if (cmd_attach(&a))
			goto broken;
		asked_done |= o->iface && !strcmp(a.iface, o->iface);
	}
	a = *o;
	a.migrate = false;
	if (o->iface && !asked_done && cmd_attach(&a))
		goto broken;
	printf("migrated %s to %s: configuration restored, %zu of %zu "
	       "connection-table entries kept, %d interface%s attached "
	       "again\n",
	       o->pin_dir, to, kept, m.nconns, m.nifs, m.nifs == 1 ? "" : "s");
	unlink(m.file);
	rmdir(MIGRATE_DIR); /* when nothing else waits there */
	ret = RM_EXIT_OK;
	goto out;
broken:
	load_error(RM_EXIT_RUNTIME,
		   "--migrate stopped half-way: the configuration is in %s "
		   "(`ringload attach IFACE`, then `ringctl restore %s`)",
		   m.file, m.file);
out:
	if (ret && !touched) {
		unlink(m.file); /* nothing was changed: nothing to keep */
		rmdir(MIGRATE_DIR);
	}
	free(m.old);
	free(m.conns);
	return ret;
}

int cmd_migrate(struct load_opts *o)
{
	int ret;

	o->migrate = true;
	o->iface = NULL; /* only those attached are attached again */
	ret = layout_check(o);
	if (ret < 0)
		printf("%s: nothing to migrate (no state, or this layout)\n",
		       o->pin_dir);
	return ret < 0 ? RM_EXIT_OK : ret;
}

int layout_check(struct load_opts *o)
{
	struct rm_layout ours, pinned;
	char from[96], to[96];
	int err = rm_layout_pinned(o->pin_dir, &pinned);

	if (err == -ENOENT)
		return -1; /* no state yet: attach creates it */
	if (!err)
		err = rm_layout_ours(&ours);
	if (err)
		return load_error(RM_EXIT_RUNTIME, "%s", rm_errmsg());
	if (rm_layout_same(&pinned, &ours))
		return -1;
	rm_layout_text(&pinned, from, sizeof(from));
	rm_layout_text(&ours, to, sizeof(to));
	if (o->migrate)
		return migrate(o, from, to);
	return load_error(RM_EXIT_RUNTIME,
			  "%s holds %s, this ringload has %s: `ringctl save "
			  "--output FILE`, `ringload detach` every interface, "
			  "`ringload purge`, `ringload attach %s`, `ringctl "
			  "restore FILE`; or `ringload attach %s --migrate` "
			  "does all that",
			  o->pin_dir, from, to, o->iface, o->iface);
}
