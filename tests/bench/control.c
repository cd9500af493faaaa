// SPDX-License-Identifier: GPL-2.0
/*
 * Part 5: control plane. The commands of issue 23, each a fresh `ringctl`
 * process against a pinned state of 100 nodes x 1000 vnodes (100k ring
 * entries), as an operator runs them: the reads `service list`, `seed`,
 * `show --json`; `node add` of a 101st node and `node del` of it again;
 * `apply` of a saved document one node away from the live state (a node
 * removed, then added back). Rounds interleave the commands, and each
 * round also times /bin/true: the floor a process start costs on this
 * machine, and bpftool dumping the one-entry rm_config: the issue's
 * yardstick for a read ("bpftool answers a read in a few ms"). Wall time from fork to exit (what the targets judge)
 * and the process's CPU time (user + system, rusage) are reported.
 * After each `node add` the director program itself (bpf_prog_test_run)
 * must send a flow the new ring gives to the new node there, and after
 * `node del` elsewhere again: checked outside the timing.
 *
 * Runs in its own mount and network namespaces (unshare), with a private
 * bpffs on a temporary directory: the state API (user/lib/state.h) pins
 * its maps there, and everything vanishes when the process exits. Nodes
 * use "lo" of the new network namespace as their interface, which is also
 * where bpf_prog_test_run says packets arrive, so forwarded test frames
 * are XDP_TX; nothing is sent anywhere.
 *
 * Then where a change's time goes, step by step (ring build, inner map
 * create, fill), and memory per ring entry and per connection-table entry.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ringmaster/rm_hash.h>
#include "ringmaster.skel.h"
#include "bench.h"
#include "director.h"
#include "ring_map.h"
#include "ringfix.h"
#include "state.h"
#include "util.h"

#define CB_NODES 100 /* the state; node-0100 comes and goes */
#define CB_SVC "bench"
#define CB_POLL_NS (2ULL * 1000000000ULL)
#define CB_DOC_MAX (64 * 1024)

struct cctx {
	char dir[64];
	char pin[128];
	char doc[128], doc_less[128]; /* saved; saved without node-0099 */
	bool mounted;
	struct ringmaster_bpf *skel;
	struct rm_state st;
	bool st_open;
	struct rm_snap *old, *new;
	int svc;
	__u8 frame[64]; /* a flow the 101-node ring gives to node-0100 */
	size_t len;
	__u8 mac_new[6];
	char bpftool[256]; /* its path; empty: not found, row not measured */
	char cfg_pin[160]; /* the pinned rm_config, which bpftool dumps */
};

static int isolate(struct cctx *c)
{
	if (unshare(CLONE_NEWNS | CLONE_NEWNET)) {
		fprintf(stderr, "control: unshare: %s\n", strerror(errno));
		return -1;
	}
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		fprintf(stderr, "control: private mounts: %s\n",
			strerror(errno));
		return -1;
	}
	snprintf(c->dir, sizeof(c->dir), "/tmp/ringbench-ctl-XXXXXX");
	if (!mkdtemp(c->dir)) {
		fprintf(stderr, "control: mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	if (mount("bpf", c->dir, "bpf", 0, "mode=0700")) {
		fprintf(stderr, "control: mount bpffs: %s\n", strerror(errno));
		rmdir(c->dir);
		c->dir[0] = 0;
		return -1;
	}
	c->mounted = true;
	snprintf(c->pin, sizeof(c->pin), "%s/ringmaster", c->dir);
	return 0;
}

static void teardown(struct cctx *c)
{
	if (c->st_open)
		rm_state_close(&c->st);
	ringmaster_bpf__destroy(c->skel);
	if (c->mounted) {
		rm_state_purge(c->pin);
		umount2(c->dir, MNT_DETACH);
	}
	if (c->doc[0])
		unlink(c->doc);
	if (c->doc_less[0])
		unlink(c->doc_less);
	if (c->dir[0])
		rmdir(c->dir);
	free(c->old);
	free(c->new);
}

/* The state to measure against, made through the state API: a service
 * and CB_NODES nodes, one change. */
static int populate(struct cctx *c)
{
	struct rm_svc_meta m = {.vnodes = RM_DEFAULT_VNODES};
	char name[RM_NAME_MAX];
	int lock, err;
	__u8 mac[6];

	lock = rm_lock_pin_dir(c->pin, RM_LOCK_EX);
	if (lock < 0)
		return lock;
	err = rm_state_read(&c->st, c->old);
	if (err)
		goto out;
	memcpy(c->new, c->old, sizeof(*c->new));
	snprintf(m.name, sizeof(m.name), "%s", CB_SVC);
	m.key.vip[0] = htonl(BENCH_VIP);
	m.key.port = htons(BENCH_PORT);
	m.key.proto = IPPROTO_TCP;
	err = rm_snap_svc_add(c->new, c->old, &m);
	if (err < 0)
		goto out;
	c->svc = err;
	err = 0;
	for (__u32 i = 0; i < CB_NODES && !err; i++) {
		bench_node_name(name, sizeof(name), i);
		bench_node_mac(i, mac);
		err = rm_snap_node_add(c->new, c->old, c->svc, name, mac, "lo",
				       1);
		err = err < 0 ? err : 0;
	}
	if (!err)
		err = rm_state_commit(&c->st, c->old, c->new, 0);
out:
	close(lock);
	return err;
}

/* Does the data plane send c->frame to node-0100 (want) or elsewhere?
 * Polls until it matches want; the time it matched, or 0 on timeout. */
static __u64 poll_live(struct cctx *c, bool want)
{
	int fd = bpf_program__fd(c->skel->progs.rm_xdp);
	__u64 start = bench_now_ns(), now;
	__u8 out[64];

	do {
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = c->frame,
			    .data_size_in = c->len, .data_out = out,
			    .data_size_out = sizeof(out), .repeat = 1);

		if (bpf_prog_test_run_opts(fd, &opts))
			return 0;
		now = bench_now_ns();
		if (opts.retval == XDP_TX &&
		    (memcmp(out, c->mac_new, 6) == 0) == want)
			return now;
	} while (now - start < CB_POLL_NS);
	return 0;
}

/* A source port whose flow the ring of CB_NODES + 1 nodes gives to the
 * last one (node slots are taken in order: ids = numbers). */
static int pick_flow(struct cctx *c)
{
	struct rm_node_spec *specs = bench_specs(0, CB_NODES + 1);
	struct rm_ring r;
	struct bench_ring br = {0};
	int err;

	if (!specs)
		return -ENOMEM;
	err = rm_ring_build(&c->old->cfg.seed, specs, CB_NODES + 1,
			    RM_DEFAULT_VNODES, &r);
	free(specs);
	if (err)
		return err;
	br.ring = r;
	br.nslots = rm_ring_nslots(&r);
	br.slots = calloc(br.nslots, sizeof(*br.slots));
	if (!br.slots) {
		rm_ring_free(&r);
		return -ENOMEM;
	}
	rm_ring_encode(&r, br.slots, br.nslots);
	err = -ENOENT;
	for (__u32 sport = 1024; sport < 65535; sport++) {
		struct rm_flow f;
		__u32 id;

		c->len = bench_frame(c->frame, bench_dir_mac, bench_client_mac,
				     BENCH_CLIENT_IP, BENCH_VIP, sport,
				     BENCH_PORT, IPPROTO_TCP, BENCH_TCP_SYN);
		bench_frame_flow(c->frame, &f);
		if (!rm_ring_lookup(br.slots, br.nslots,
				    rm_flow_hash(&c->old->cfg.seed, &f), &id) &&
		    id == CB_NODES) {
			err = 0;
			break;
		}
	}
	bench_ring_free(&br);
	return err;
}

static long long fdinfo_memlock(int fd)
{
	char path[64], line[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Run argv (argv[0] a path) to its exit, stdout to out (NULL: none):
 * wall time from fork to exit and the child's CPU time, in ms. */
static int run_timed(const char *const *argv, const char *out, double *wall,
		     double *cpu)
{
	struct rusage ru;
	__u64 t0 = bench_now_ns();
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(out ? out : "/dev/null",
			      O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0)
			dup2(fd, STDOUT_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0)
		return -errno;
	*wall = (double)(bench_now_ns() - t0) / 1e6;
	*cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* The commands, in the order each round runs them. */
enum cmd {
	C_LIST,
	C_SEED,
	C_SHOW,
	C_ADD,
	C_DEL,
	C_APPLY_LESS,
	C_APPLY_BACK,
	C_BPFTOOL,
	C_VERSION,
	C_TRUE,
	C_NR
};

static const char *const cmd_label[C_NR] = {
    [C_LIST] = "`ringctl service list`",
    [C_SEED] = "`ringctl seed`",
    [C_SHOW] = "`ringctl show --json`",
    [C_ADD] = "`ringctl node add` (node 101)",
    [C_DEL] = "`ringctl node del` (back to 100)",
    [C_APPLY_LESS] = "`ringctl apply` of a saved document, one node less",
    [C_APPLY_BACK] = "`ringctl apply` of a saved document, the node back",
    [C_BPFTOOL] = "yardstick: `bpftool map dump pinned .../rm_config` (one "
		  "map of one entry)",
    [C_VERSION] = "start alone: `ringctl --version` (exec, dynamic loading, "
		  "no state)",
    [C_TRUE] = "floor: `/bin/true` (fork, exec, exit)",
};

static const char *const cmd_key[C_NR] = {
    [C_LIST] = "service_list",	 [C_SEED] = "seed",
    [C_SHOW] = "show_json",	 [C_ADD] = "node_add",
    [C_DEL] = "node_del",	 [C_APPLY_LESS] = "apply_one_node_less",
    [C_APPLY_BACK] = "apply_one_node_back", [C_VERSION] = "version",
    [C_BPFTOOL] = "bpftool_dump_config",
    [C_TRUE] = "bin_true",
};

/* Each command's words after `ringctl --pin-dir DIR`: "@mac" is the
 * new node's MAC, "@doc" the document the apply takes. */
static const char *const cmd_args[C_NR][9] = {
    [C_LIST] = {"service", "list"},
    [C_SEED] = {"seed"},
    [C_SHOW] = {"show", "--json"},
    [C_ADD] = {"node", "add", CB_SVC, "node-0100", "--mac", "@mac", "--dev",
	       "lo"},
    [C_DEL] = {"node", "del", CB_SVC, "node-0100"},
    [C_APPLY_LESS] = {"apply", "@doc"},
    [C_APPLY_BACK] = {"apply", "@doc"},
    [C_VERSION] = {"--version"},
};

/* bpftool's path from PATH into c->bpftool (empty when it is not
 * there: the yardstick row is then reported as not measured). */
static void find_bpftool(struct cctx *c)
{
	const char *path = getenv("PATH");
	char dirs[1024], *save = NULL;

	c->bpftool[0] = 0;
	snprintf(dirs, sizeof(dirs), "%s",
		 path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
	for (char *d = strtok_r(dirs, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(c->bpftool, sizeof(c->bpftool), "%s/bpftool", d);
		if (!access(c->bpftool, X_OK))
			return;
	}
	c->bpftool[0] = 0;
	fprintf(stderr, "control: bpftool is not in PATH: the yardstick row "
			"is not measured (scripts/install-deps.sh installs "
			"it)\n");
}

static int run_cmd(struct cctx *c, const char *ringctl, enum cmd k,
		   double *wall, double *cpu)
{
	const char *argv[16] = {ringctl, "--pin-dir", c->pin};
	int n = 3, err;
	char mac[18];

	rm_format_mac(c->mac_new, mac);
	for (int i = 0; i < 9 && cmd_args[k][i]; i++) {
		const char *w = cmd_args[k][i];

		argv[n++] = !strcmp(w, "@mac")	 ? mac
			    : !strcmp(w, "@doc") ? (k == C_APPLY_LESS
							? c->doc_less
							: c->doc)
						 : w;
	}
	if (k == C_TRUE) {
		argv[0] = "/bin/true";
		argv[1] = NULL;
	}
	if (k == C_BPFTOOL) {
		const char *bt[] = {c->bpftool, "map", "dump", "pinned",
				    c->cfg_pin, NULL};

		if (!c->bpftool[0]) {
			*wall = *cpu = 0;
			return 0;
		}
		memcpy(argv, bt, sizeof(bt));
	}
	err = run_timed(argv, NULL, wall, cpu);
	if (err) {
		fprintf(stderr, "control: %s failed\n", cmd_label[k]);
		return err;
	}
	/* the change is live when the command returns: the data plane says */
	if ((k == C_ADD || k == C_DEL) && !poll_live(c, k == C_ADD)) {
		fprintf(stderr, "control: after %s the data plane does not "
				"send the test flow %s\n",
			cmd_label[k], k == C_ADD ? "to the new node" : "elsewhere");
		return -EIO;
	}
	return 0;
}

/* `ringctl save` of the state into c->doc, and c->doc_less: the same
 * without node-0099's line (a one-node change away). */
static int make_docs(struct cctx *c, const char *ringctl)
{
	const char *argv[] = {ringctl, "--pin-dir", c->pin, "save", NULL};
	char *buf = malloc(CB_DOC_MAX), line[512];
	FILE *in = NULL, *out = NULL;
	double w, u;
	int err;

	snprintf(c->doc, sizeof(c->doc), "/tmp/ringbench-ctl-%d.doc",
		 (int)getpid());
	snprintf(c->doc_less, sizeof(c->doc_less),
		 "/tmp/ringbench-ctl-%d-less.doc", (int)getpid());
	err = buf ? run_timed(argv, c->doc, &w, &u) : -ENOMEM;
	if (!err) {
		in = fopen(c->doc, "r");
		out = fopen(c->doc_less, "w");
		err = in && out ? 0 : -errno;
	}
	while (!err && fgets(line, sizeof(line), in))
		if (!strstr(line, " node-0099 "))
			fputs(line, out);
	if (in)
		fclose(in);
	if (out && fclose(out) && !err)
		err = -errno;
	free(buf);
	return err;
}

/* What fresh memory costs this machine: CB_FRESH bytes of anonymous
 * memory in small pages written once (each page faulted in and zeroed,
 * and on the VMs of docs/control-plane-performance.md the hypervisor
 * filling each page's entry as well), then written again. Every command
 * is a new process, all of whose memory is fresh, and a ring change
 * fills a new inner map: the part of a command's time the machine sets,
 * shown beside the steps so a reader can tell the two apart. */
#define CB_FRESH (1UL << 20)
static int time_fresh(double *first, double *again)
{
	__u8 *p = mmap(NULL, CB_FRESH, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__u64 t0, t1;

	if (p == MAP_FAILED)
		return -errno;
	madvise(p, CB_FRESH, MADV_NOHUGEPAGE);
	t0 = bench_now_ns();
	memset(p, 1, CB_FRESH);
	t1 = bench_now_ns();
	memset(p, 2, CB_FRESH);
	*again = (double)(bench_now_ns() - t1) / 1e6;
	*first = (double)(t1 - t0) / 1e6;
	munmap(p, CB_FRESH);
	return 0;
}

/* The steps of a ring update one by one: build, array create, and the
 * fill: by one batch update of its pages (rm_ring_map_create, what the
 * state API does) into the fresh array, then into the same array again
 * (a spare: state_spare.c), and, for comparison, a fresh array filled
 * through its mapping (what the state API did before spares). */
struct steps {
	double build, create, fill_fresh, fill_spare, fill_mmap;
};

static int time_steps(struct bench_ring *br, struct steps *t)
{
	LIBBPF_OPTS(bpf_map_create_opts, mm, .map_flags = RM_RING_MAP_FLAGS);
	__u64 t0 = bench_now_ns(), t1;
	int err, fd = -1;
	__u32 pages;
	size_t sz;
	void *p;

	err = bench_ring(CB_NODES, RM_DEFAULT_VNODES, br);
	if (err)
		return err;
	pages = RM_RING_PAGES(br->nslots);
	sz = (size_t)pages * sizeof(struct rm_ring_page);
	t1 = bench_now_ns();
	t->build = (double)(t1 - t0) / 1e6;
	/* rm_ring_map_create() is create + fill: the create alone first */
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rm_ring", 4,
			    sizeof(struct rm_ring_page), pages, &mm);
	t->create = (double)(bench_now_ns() - t1) / 1e6;
	err = fd < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	if (err)
		goto out;
	t0 = bench_now_ns();
	fd = rm_ring_map_create(br->slots, br->nslots, "rm_ring");
	t1 = bench_now_ns();
	err = fd < 0 ? fd : 0;
	if (err)
		goto out;
	t->fill_fresh = (double)(t1 - t0) / 1e6 - t->create;
	err = rm_ring_map_refill(fd, br->slots, br->nslots);
	t->fill_spare = (double)(bench_now_ns() - t1) / 1e6;
	close(fd);
	fd = -1;
	if (err)
		goto out;

	t1 = bench_now_ns();
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rm_ring_mm", 4,
			    sizeof(struct rm_ring_page), pages, &mm);
	err = -errno;
	if (fd < 0)
		goto out;
	p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	err = -errno;
	if (p == MAP_FAILED)
		goto out;
	memcpy(p, br->slots, (size_t)br->nslots * sizeof(*br->slots));
	t->fill_mmap = (double)(bench_now_ns() - t1) / 1e6 - t->create;
	munmap(p, sz);
	err = 0;
out:
	if (fd >= 0)
		close(fd);
	bench_ring_free(br);
	return err;
}

/* Memory, by the kernel's own accounting of the maps (fdinfo). */
static void memory(struct cctx *c, struct rm_json *j)
{
	__u32 key = c->svc, id = 0, hdr_key = 0;
	struct rm_ring_page page = {0};
	const struct rm_slot *hdr = &page.slot[0];
	struct bpf_map *m;
	long long ring_mem = -1, conn_mem = -1;
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	int fd = -1;

	if (!bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.rm_rings), &key,
				 &id))
		fd = bpf_map_get_fd_by_id(id);
	if (fd >= 0) {
		ring_mem = fdinfo_memlock(fd);
		bpf_map_lookup_elem(fd, &hdr_key, &page);
		close(fd);
	}
	printf("\n### Memory\n\n| what | bytes |\n|---|---:|\n");
	rm_json_obj_open(j, "memory");
	if (ring_mem > 0 && hdr->a) {
		__u32 n = hdr->a,
		      nslots = RM_RING_SLOTS(RM_RING_HDR_BITS(hdr->b), n);

		printf("| ring entry, encoded (header + index + entries) / "
		       "entries, %u entries | %.2f |\n",
		       n, (double)nslots * 8 / n);
		printf("| ring entry, kernel accounting of the inner map "
		       "(fdinfo memlock) / entries | %.2f |\n",
		       (double)ring_mem / n);
		rm_json_u64(j, "ring_entries", n);
		rm_json_num(j, "ring_bytes_per_entry_encoded",
			    (double)nslots * 8 / n);
		rm_json_num(j, "ring_bytes_per_entry_kernel",
			    (double)ring_mem / n);
	}
	m = bpf_object__find_map_by_name(c->skel->obj, RM_MAP_NAME(CONNS));
	if (m && !bpf_obj_get_info_by_fd(bpf_map__fd(m), &info, &ilen)) {
		conn_mem = fdinfo_memlock(bpf_map__fd(m));
		printf("| connection entry: key %u + value %u bytes; kernel "
		       "accounting (fdinfo memlock) / %u max entries | %.1f |\n",
		       info.key_size, info.value_size, info.max_entries,
		       (double)conn_mem / info.max_entries);
		rm_json_u64(j, "conn_key_bytes", info.key_size);
		rm_json_u64(j, "conn_value_bytes", info.value_size);
		rm_json_u64(j, "conn_max_entries", info.max_entries);
		rm_json_num(j, "conn_bytes_per_entry_kernel",
			    (double)conn_mem / info.max_entries);
	} else {
		printf("| connection entry | n/a (no connection table yet) |\n");
		rm_json_str(j, "conn_bytes_per_entry_kernel",
			    "n/a (no connection table yet)");
	}
	rm_json_obj_close(j);
}

/* One verdict: the median wall time of the commands in ks (the slowest
 * of them) against limit_ms; yardstick: the bpftool row's median, or
 * below 0 for none. */
static void verdict(const struct bench_opts *o, const char *name,
		    const char *target, double limit_ms,
		    const struct bench_stat *wall, const enum cmd *ks, int n,
		    double yardstick)
{
	const struct bench_stat *worst = &wall[ks[0]];
	char meas[96], note[192];

	for (int i = 1; i < n; i++)
		if (wall[ks[i]].med > worst->med)
			worst = &wall[ks[i]];
	snprintf(meas, sizeof(meas), "%.2f ms (%.2f-%.2f)", worst->med,
		 worst->min, worst->max);
	snprintf(note, sizeof(note),
		 "fresh ringctl process, fork to exit, median; the machine's "
		 "process floor is in the control table");
	if (yardstick >= 0)
		snprintf(note + strlen(note), sizeof(note) - strlen(note),
			 "; bpftool's dump of one map: %.2f ms", yardstick);
	bench_target(o, name, target, meas,
		     worst->med <= limit_ms ? "met" : "missed", note);
}

int cmd_control(const struct bench_opts *o)
{
	const char *ringctl = o->argc > 0 ? o->argv[0] : NULL;
	const int rounds = o->rounds;
	double wall[C_NR][rounds], cpu[C_NR][rounds];
	struct steps steps[rounds];
	double v[rounds];
	double fresh[rounds], warm[rounds];
	struct bench_stat s_wall[C_NR], s_cpu[C_NR], s_build, s_fill;
	struct bench_stat s_create, s_spare, s_mmfill, s_fresh, s_warm;
	struct cctx c = {0};
	int rc = 1, err;
	struct rm_json j;
	FILE *jf = NULL;

	if (!ringctl) {
		fprintf(stderr, "control: usage: ringbench control RINGCTL\n");
		return 2;
	}
	bench_node_mac(CB_NODES, c.mac_new);
	c.old = malloc(sizeof(*c.old));
	c.new = malloc(sizeof(*c.new));
	if (!c.old || !c.new || isolate(&c))
		goto out;
	err = rm_state_create(c.pin, &c.skel);
	if (!err) {
		err = rm_state_open(&c.st, c.pin, RM_LOCK_NONE);
		c.st_open = !err;
	}
	if (!err)
		err = populate(&c);
	if (!err)
		err = pick_flow(&c);
	if (!err)
		err = make_docs(&c, ringctl);
	if (err) {
		fprintf(stderr, "control: setting up the state: %s (%s)\n",
			rm_errmsg(), strerror(-err));
		goto out;
	}
	if (!poll_live(&c, false)) {
		fprintf(stderr, "control: the %d-node ring does not forward "
				"the test flow\n",
			CB_NODES);
		goto out;
	}

	find_bpftool(&c);
	snprintf(c.cfg_pin, sizeof(c.cfg_pin), "%s/%s", c.pin,
		 RM_MAP_NAME(CONFIG));
	bench_pin_cpu();
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < C_NR; k++)
			if (run_cmd(&c, ringctl, (enum cmd)k, &wall[k][r],
				    &cpu[k][r]))
				goto out;

	/* where a change's time goes: each step alone, as commit does it */
	for (int r = 0; r < rounds; r++) {
		struct bench_ring br;

		err = time_steps(&br, &steps[r]);
		if (!err)
			err = time_fresh(&fresh[r], &warm[r]);
		if (err) {
			fprintf(stderr, "control: breakdown: %s\n",
				strerror(-err));
			goto out;
		}
	}

	for (int k = 0; k < C_NR; k++) {
		bench_stat_of(wall[k], rounds, &s_wall[k]);
		bench_stat_of(cpu[k], rounds, &s_cpu[k]);
	}
#define STEP_STAT(field, out)                                              \
	do {                                                               \
		for (int r = 0; r < rounds; r++)                           \
			v[r] = steps[r].field;                             \
		bench_stat_of(v, rounds, out);                             \
	} while (0)
	STEP_STAT(build, &s_build);
	STEP_STAT(create, &s_create);
	STEP_STAT(fill_fresh, &s_fill);
	STEP_STAT(fill_spare, &s_spare);
	STEP_STAT(fill_mmap, &s_mmfill);
#undef STEP_STAT
	bench_stat_of(fresh, rounds, &s_fresh);
	bench_stat_of(warm, rounds, &s_warm);

	jf = bench_json_open(o, &j);
	if (!jf)
		goto out;
	rm_json_u64(&j, "nodes", CB_NODES);
	rm_json_u64(&j, "vnodes", RM_DEFAULT_VNODES);
	rm_json_u64(&j, "entries", CB_NODES * RM_DEFAULT_VNODES);
	rm_json_obj_open(&j, "commands_wall_ms");
	for (int k = 0; k < C_NR; k++)
		if (k != C_BPFTOOL || c.bpftool[0])
			bench_json_stat(&j, cmd_key[k], &s_wall[k]);
	rm_json_obj_close(&j);
	rm_json_obj_open(&j, "commands_cpu_ms");
	for (int k = 0; k < C_NR; k++)
		if (k != C_BPFTOOL || c.bpftool[0])
			bench_json_stat(&j, cmd_key[k], &s_cpu[k]);
	rm_json_obj_close(&j);
	rm_json_obj_open(&j, "breakdown");
	bench_json_stat(&j, "ring_build_ms", &s_build);
	bench_json_stat(&j, "inner_map_create_ms", &s_create);
	bench_json_stat(&j, "inner_map_fill_fresh_batch_ms", &s_fill);
	bench_json_stat(&j, "inner_map_fill_spare_batch_ms", &s_spare);
	bench_json_stat(&j, "comparison_fill_fresh_mmap_ms", &s_mmfill);
	bench_json_stat(&j, "machine_fresh_1mb_first_write_ms", &s_fresh);
	bench_json_stat(&j, "machine_fresh_1mb_second_write_ms", &s_warm);
	rm_json_obj_close(&j);

	printf("\n### Control plane: ringctl commands (%d nodes x %u vnodes = "
	       "%u entries; each a fresh process; median [min-max] of %d "
	       "interleaved rounds, ms)\n\n",
	       CB_NODES, RM_DEFAULT_VNODES, CB_NODES * RM_DEFAULT_VNODES,
	       rounds);
	printf("| command | wall, fork to exit | CPU (user + system) |\n"
	       "|---|---:|---:|\n");
	for (int k = 0; k < C_NR; k++)
		if (k == C_BPFTOOL && !c.bpftool[0])
			printf("| %s | not measured: no bpftool | |\n",
			       cmd_label[k]);
		else
			printf("| %s | %.2f [%.2f-%.2f] | %.2f [%.2f-%.2f] "
			       "|\n",
			       cmd_label[k], s_wall[k].med, s_wall[k].min,
			       s_wall[k].max, s_cpu[k].med, s_cpu[k].min,
			       s_cpu[k].max);
	printf("\n### A ring update step by step (%d nodes, ms)\n\n"
	       "| step | ms |\n|---|---:|\n",
	       CB_NODES);
	printf("| ring build (rm_ring_build, %uk entries) | %.2f [%.2f-%.2f] "
	       "|\n",
	       CB_NODES * RM_DEFAULT_VNODES / 1000, s_build.med, s_build.min,
	       s_build.max);
	printf("| inner map create | %.2f [%.2f-%.2f] |\n", s_create.med,
	       s_create.min, s_create.max);
	printf("| inner map fill, a fresh array (batch update of its pages) | "
	       "%.2f [%.2f-%.2f] |\n",
	       s_fill.med, s_fill.min, s_fill.max);
	printf("| inner map fill, a spare the kernel wrote before (what a "
	       "change after the first few does) | %.2f [%.2f-%.2f] |\n",
	       s_spare.med, s_spare.min, s_spare.max);
	printf("| comparison: a fresh array filled through its mapping (the "
	       "state API before spares) | %.2f [%.2f-%.2f] |\n",
	       s_mmfill.med, s_mmfill.min, s_mmfill.max);
	printf("| machine: first write to 1 MB of fresh memory (small pages) "
	       "| %.2f [%.2f-%.2f] |\n"
	       "| machine: the same 1 MB written again | %.2f [%.2f-%.2f] |\n",
	       s_fresh.med, s_fresh.min, s_fresh.max, s_warm.med, s_warm.min,
	       s_warm.max);

	memory(&c, &j);

	/* issue 23's targets */
	{
		static const enum cmd reads[] = {C_LIST, C_SEED, C_SHOW};
		static const enum cmd add[] = {C_ADD}, del[] = {C_DEL};
		static const enum cmd apply[] = {C_APPLY_LESS, C_APPLY_BACK};

		verdict(o, "ringctl read command (service list, seed, show "
			   "--json), 100 nodes",
			"<= 5 ms", 5, s_wall, reads, 3,
			c.bpftool[0] ? s_wall[C_BPFTOOL].med : -1);
		verdict(o, "ringctl node add, 100 nodes", "<= 20 ms", 20,
			s_wall, add, 1, -1);
		verdict(o, "ringctl node del, 100 nodes", "<= 20 ms", 20,
			s_wall, del, 1, -1);
		verdict(o, "ringctl apply of a one-node change, 100 nodes",
			"<= 30 ms", 30, s_wall, apply, 2, -1);
	}
	rc = 0;
out:
	if (jf)
		bench_json_close(jf, &j);
	teardown(&c);
	return rc;
}
