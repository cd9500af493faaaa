// SPDX-License-Identifier: GPL-2.0
/* attach / detach / purge. The program is loaded once per interface with
 * every map pointed at its pin, so all instances and every later load
 * share one state; libxdp attaches it through the multiprog dispatcher so
 * other XDP programs keep running beside it. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include "ringmaster.skel.h"
#include "director_obj.h"
#include "history.h"
#include "ringload.h"
#include "xdp_chain.h"

static const char *hint(int err, enum xdp_attach_mode mode)
{
	if (err == -EPERM || err == -EACCES)
		return "run as root (needs CAP_BPF, CAP_NET_ADMIN)";
	if (err == -EEXIST || err == -EBUSY)
		return "another XDP program holds the interface outside libxdp "
		       "or in another mode: detach it, or try --mode generic";
	if (mode == XDP_MODE_NATIVE)
		return "the driver refused native XDP: try --mode generic";
	return "ringload -v shows the details";
}

/* Load a fresh instance on the pinned maps and attach it in one mode. */
static int attach_mode(struct load_opts *o, int ifindex,
		       enum xdp_attach_mode mode)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, opts, .prog_name = RM_PROG_NAME);
	struct ringmaster_bpf *skel = rm_director_open();
	struct xdp_program *prog = NULL;
	int err;

	if (!skel)
		return errno ? -errno : -ENOMEM;
	/* rm_conns as pinned: rm_state_create_sized() made or checked it */
	err = rm_obj_pin_maps(skel->obj, o->pin_dir);
	if (err)
		goto out;
	opts.obj = skel->obj;
	prog = xdp_program__create(&opts);
	err = libxdp_get_error(prog);
	if (err) {
		prog = NULL;
		goto out;
	}
	/* libxdp loads it (as an extension of its dispatcher), reusing the
	 * pinned maps, then attaches */
	err = xdp_program__attach(prog, ifindex, mode, 0);
out:
	xdp_program__close(prog);
	ringmaster_bpf__destroy(skel);
	return err;
}

/* Is this program on ifindex the one this pin dir attached? */
static bool registered(int fd, int ifindex, __u32 prog_id)
{
	struct rm_iface all[RM_MAX_IFACES];

	if (ifaces_read(fd, all))
		return false;
	for (int i = 0; i < RM_MAX_IFACES; i++)
		if (all[i].ifindex == (__u32)ifindex && all[i].prog_id == prog_id)
			return true;
	return false;
}

/* Does ifindex run the chain's root? */
static bool chained(int ifindex)
{
	struct rm_xdp_chain c;
	bool yes = !rm_xdp_chain_read(ifindex, &c) && c.root_id;

	rm_xdp_chain_close(&c);
	return yes;
}

int cmd_attach(struct load_opts *o)
{
	enum xdp_attach_mode mode =
	    o->mode.val == LOAD_GENERIC ? XDP_MODE_SKB : XDP_MODE_NATIVE;
	enum xdp_attach_mode cur;
	struct rm_iface rec = {0};
	int ifindex, fd = -1, lock = -1, err, ret = RM_EXIT_RUNTIME;
	__u32 id;

	ifindex = if_nametoindex(o->iface);
	if (!ifindex)
		return load_error(RM_EXIT_RUNTIME,
				  "interface '%s' not found "
				  "(`ip link` lists them)",
				  o->iface);
	if (strlen(o->iface) >= RM_IFNAME_MAX)
		return load_error(RM_EXIT_USAGE, "interface name too long");
	/* pins of another layout are never loaded over */
	ret = layout_check(o);
	if (ret >= 0)
		return ret;
	ret = RM_EXIT_RUNTIME;
	/* creates the state, or checks the pinned one (a connection table
	 * of another size than --conn-table asks for is refused) */
	if (rm_state_create_sized(o->pin_dir, o->conn_table.val, NULL))
		return load_error(RM_EXIT_RUNTIME, "%s", rm_errmsg());
	lock = rm_lock_pin_dir(o->pin_dir, RM_LOCK_EX);
	if (lock < 0) {
		load_error(RM_EXIT_RUNTIME, "cannot lock %s: %s", o->pin_dir,
			   strerror(-lock));
		goto out;
	}
	fd = ifaces_open(o->pin_dir, true);
	if (fd < 0) {
		load_error(RM_EXIT_RUNTIME, "cannot create %s/%s: %s",
			   o->pin_dir, RM_MAP_IFACES, strerror(-fd));
		goto out;
	}
	/* the change log too: a director's pins stay the same from here on */
	err = rm_history_create(o->pin_dir);
	if (err) {
		load_error(RM_EXIT_RUNTIME, "cannot create %s/%s: %s",
			   o->pin_dir, RM_MAP_HISTORY, strerror(-err));
		goto out;
	}
	if (!ifaces_find_prog(ifindex, 0, &id, &cur)) {
		if (o->reuse && registered(fd, ifindex, id)) {
			printf("%s already runs on %s (prog id %u), state in "
			       "%s: left as it is\n",
			       RM_PROG_NAME, o->iface, id, o->pin_dir);
			ret = RM_EXIT_OK;
			goto out;
		}
		load_error(RM_EXIT_RUNTIME,
			   "%s already runs %s (prog id %u): "
			   "`ringload detach %s` first",
			   o->iface, RM_PROG_NAME, id, o->iface);
		goto out;
	}
	if (o->chain) {
		/* says what went wrong itself */
		if (chain_attach_director(o, ifindex, &mode, &id))
			goto out;
		rec.prog_id = id;
		goto record;
	}
	if (chained(ifindex)) {
		load_error(RM_EXIT_RUNTIME,
			   "%s runs the chain's root (%s): `ringload attach %s "
			   "--chain [--slot N]` puts the director in its chain",
			   o->iface, RM_ROOT_PROG_NAME, o->iface);
		goto out;
	}
	err = attach_mode(o, ifindex, mode);
	if (err && o->mode.val == LOAD_AUTO) {
		fprintf(stderr,
			"ringload: native XDP failed on %s (%s): "
			"falling back to generic mode\n",
			o->iface, strerror(-err));
		mode = XDP_MODE_SKB;
		err = attach_mode(o, ifindex, mode);
	}
	if (err) {
		load_error(RM_EXIT_RUNTIME,
			   "cannot attach to %s in %s mode: "
			   "%s: %s",
			   o->iface, ifaces_mode_name(mode), strerror(-err),
			   hint(err, mode));
		goto out;
	}
	err = ifaces_find_prog(ifindex, 0, &id, &mode);
	rec.prog_id = err ? 0 : id;
record:
	rec.ifindex = ifindex;
	rec.mode = mode;
	snprintf(rec.name, sizeof(rec.name), "%s", o->iface);
	err = ifaces_put(fd, &rec);
	if (err) {
		load_error(RM_EXIT_RUNTIME,
			   "attached, but cannot record %s in "
			   "%s/%s: %s",
			   o->iface, o->pin_dir, RM_MAP_IFACES, strerror(-err));
		goto out;
	}
	if (o->chain)
		printf("attached %s to slot %u of %s's chain in %s mode (prog "
		       "id %u), state in %s\n",
		       RM_PROG_NAME, o->slot.val, o->iface,
		       ifaces_mode_name(mode), rec.prog_id, o->pin_dir);
	else
		printf("attached %s to %s in %s mode (prog id %u), state in "
		       "%s\n",
		       RM_PROG_NAME, o->iface, ifaces_mode_name(mode),
		       rec.prog_id, o->pin_dir);
	ret = RM_EXIT_OK;
out:
	if (fd >= 0)
		close(fd);
	if (lock >= 0)
		close(lock);
	return ret;
}

/* Purge only when no recorded interface still runs us. */
static int purge_locked(struct load_opts *o, int fd)
{
	char path[RM_PATH_MAX + RM_NAME_MAX];
	struct rm_iface all[RM_MAX_IFACES];
	enum xdp_attach_mode mode;
	__u32 id;
	int err = fd >= 0 ? ifaces_read(fd, all) : 0;

	if (fd < 0)
		memset(all, 0, sizeof(all));
	if (err)
		return load_error(RM_EXIT_RUNTIME, "cannot read %s: %s",
				  RM_MAP_IFACES, strerror(-err));
	for (int i = 0; i < RM_MAX_IFACES; i++)
		if (all[i].ifindex &&
		    !ifaces_find_prog(all[i].ifindex, all[i].prog_id, &id,
				      &mode))
			return load_error(RM_EXIT_RUNTIME,
					  "state kept: %s is "
					  "still attached (`ringload detach "
					  "%s` first)",
					  all[i].name, all[i].name);
	/* a chain holding only others' programs keeps the pin dir */
	snprintf(path, sizeof(path), "%s/%s", o->pin_dir, RM_CHAIN_DIR);
	if (rmdir(path) && errno != ENOENT)
		return load_error(RM_EXIT_RUNTIME,
				  "state kept: %s still holds interfaces' "
				  "chains (`ringload chain show IFACE`, "
				  "`ringload chain del IFACE --slot N`)",
				  path);
	if (rm_state_purge(o->pin_dir))
		return load_error(RM_EXIT_RUNTIME, "%s", rm_errmsg());
	printf("removed %s\n", o->pin_dir);
	return RM_EXIT_OK;
}

int cmd_detach(struct load_opts *o)
{
	struct rm_iface all[RM_MAX_IFACES];
	struct xdp_program *prog = NULL;
	struct rm_xdp_chain c;
	enum xdp_attach_mode mode;
	int ifindex, fd, lock, err, slot = -1, ret = RM_EXIT_RUNTIME;
	__u32 want = 0, id;

	/* without the pin dir (removed by hand) the program can still be
	 * found by name and detached */
	lock = rm_lock_pin_dir(o->pin_dir, RM_LOCK_EX);
	if (lock < 0 && lock != -ENOENT)
		return load_error(RM_EXIT_RUNTIME, "cannot lock %s: %s",
				  o->pin_dir, strerror(-lock));
	fd = lock < 0 ? -1 : ifaces_open(o->pin_dir, false);
	if (fd >= 0 && !ifaces_read(fd, all))
		for (int i = 0; i < RM_MAX_IFACES; i++)
			if (all[i].ifindex &&
			    !strncmp(all[i].name, o->iface, RM_IFNAME_MAX))
				want = all[i].prog_id;
	ifindex = if_nametoindex(o->iface);
	if (!ifindex) {
		load_error(RM_EXIT_RUNTIME,
			   "interface '%s' not found (`ip "
			   "link` lists them)",
			   o->iface);
		goto forget;
	}
	/* the instance we recorded, else any rm_xdp (registry lost) */
	err = ifaces_find_prog(ifindex, want, &id, &mode);
	if (err && want)
		err = ifaces_find_prog(ifindex, 0, &id, &mode);
	if (err) {
		load_error(RM_EXIT_RUNTIME,
			   "%s does not run %s: nothing to "
			   "detach",
			   o->iface, RM_PROG_NAME);
		goto forget;
	}
	err = rm_xdp_chain_read(ifindex, &c);
	slot = err ? -1 : rm_xdp_chain_find(&c, RM_PROG_NAME, id);
	if (slot >= 0) {
		/* only what attach --chain added: its slot, and the root if
		 * nothing else is left in the chain */
		err = chain_detach_director(o, ifindex, &c, slot);
	} else {
		prog = xdp_program__from_id(id);
		err = libxdp_get_error(prog);
		if (err)
			prog = NULL;
		else
			err = xdp_program__detach(prog, ifindex, mode, 0);
		xdp_program__close(prog);
	}
	rm_xdp_chain_close(&c);
	if (err) {
		load_error(RM_EXIT_RUNTIME,
			   "cannot detach from %s: %s (-v "
			   "shows details)",
			   o->iface, strerror(-err));
		goto out;
	}
	if (slot >= 0)
		printf("took %s out of slot %d of %s's chain%s; state kept in "
		       "%s\n",
		       RM_PROG_NAME, slot, o->iface,
		       rm_xdp_chain_used(&c) ? " (the others stay)"
					     : ", and the root off",
		       o->pin_dir);
	else if (lock >= 0)
		printf("detached %s from %s; state kept in %s\n", RM_PROG_NAME,
		       o->iface, o->pin_dir);
	else
		printf("detached %s from %s (no state at %s)\n", RM_PROG_NAME,
		       o->iface, o->pin_dir);
	ret = RM_EXIT_OK;
forget:
	/* gone from the interface either way: drop the record */
	if (fd >= 0)
		ifaces_del(fd, o->iface);
	if (ret == RM_EXIT_OK && o->purge && lock >= 0)
		ret = purge_locked(o, fd);
out:
	if (fd >= 0)
		close(fd);
	if (lock >= 0)
		close(lock);
	return ret;
}

int cmd_purge(struct load_opts *o)
{
	int lock, fd, ret;

	lock = rm_lock_pin_dir(o->pin_dir, RM_LOCK_EX);
	if (lock < 0)
		return load_error(RM_EXIT_RUNTIME,
				  "no Ringmaster state at %s "
				  "(%s): nothing to purge",
				  o->pin_dir, strerror(-lock));
	fd = ifaces_open(o->pin_dir, false);
	ret = purge_locked(o, fd);
	if (fd >= 0)
		close(fd);
	close(lock);
	return ret;
}
