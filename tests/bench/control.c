// SPDX-License-Identifier: GPL-2.0
/*
 * Part 5: control plane. How long from "add a node" to the new ring being
 * what the data plane searches, for a service of 64 nodes at the default
 * vnodes; and memory per ring entry and per connection-table entry.
 *
 * Runs in its own mount and network namespaces (unshare), with a private
 * bpffs on a temporary directory: the state API (user/lib/state.h) pins
 * its maps there, and everything vanishes when the process exits. Nodes
 * use "lo" of the new network namespace as their interface, which is also
 * where bpf_prog_test_run says packets arrive, so forwarded test frames
 * are XDP_TX; nothing is sent anywhere.
 *
 * One add: take the pin dir lock, read the live state, add node-0063,
 * commit (builds the 64k-entry ring, fills a new inner map, swaps it in),
 * release the lock. "Live" is then checked with the director program
 * itself: bpf_prog_test_run of a flow that the new ring gives to the new
 * node, until its output carries that node's MAC. The clock runs from the
 * first call until that check passes. Deleting the node again (not the
 * target; it waits out in-flight packets) resets the state for the next
 * round. With a ringctl path, `ringctl node add` is timed the same way,
 * process start-up included.
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
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ringmaster/rm_hash.h>
#include "ringmaster.skel.h"
#include "bench.h"
#include "director.h"
#include "ringfix.h"
#include "state.h"
#include "util.h"

#define CB_NODES 64
#define CB_SVC "bench"
#define CB_POLL_NS (2ULL * 1000000000ULL)

struct cctx {
	char dir[64];
	char pin[128];
	bool mounted;
	struct ringmaster_bpf *skel;
	struct rm_state st;
	bool st_open;
	struct rm_snap *old, *new;
	int svc;
	__u8 frame[64]; /* a flow the 64-node ring gives to node-0063 */
	size_t len;
	__u8 mac63[6];
	double read_ms; /* of the last change: lock + rm_state_read */
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
	if (c->dir[0])
		rmdir(c->dir);
	free(c->old);
	free(c->new);
}

/* One change the way ringctl makes it: lock, read, edit, commit. */
enum change { CH_SERVICE, CH_NODES, CH_ADD63, CH_DEL63 };

static int change(struct cctx *c, enum change what)
{
	char name[RM_NAME_MAX];
	int lock, err = 0, slot;
	__u8 mac[6];

	__u64 t0 = bench_now_ns();

	lock = rm_lock_pin_dir(c->pin, RM_LOCK_EX);
	if (lock < 0)
		return lock;
	err = rm_state_read(&c->st, c->old);
	if (err)
		goto out;
	c->read_ms = (double)(bench_now_ns() - t0) / 1e6;
	memcpy(c->new, c->old, sizeof(*c->new));
	switch (what) {
	case CH_SERVICE: {
		struct rm_svc_meta m = {.vnodes = RM_DEFAULT_VNODES};

		snprintf(m.name, sizeof(m.name), "%s", CB_SVC);
		m.key.vip[0] = htonl(BENCH_VIP);
		m.key.port = htons(BENCH_PORT);
		m.key.proto = IPPROTO_TCP;
		err = rm_snap_svc_add(c->new, c->old, &m);
		if (err >= 0) {
			c->svc = err;
			err = 0;
		}
		break;
	}
	case CH_NODES:
		for (__u32 i = 0; i < CB_NODES - 1 && !err; i++) {
			bench_node_name(name, sizeof(name), i);
			bench_node_mac(i, mac);
			err = rm_snap_node_add(c->new, c->old, c->svc, name,
					       mac, "lo", 1);
			err = err < 0 ? err : 0;
		}
		break;
	case CH_ADD63:
		bench_node_name(name, sizeof(name), CB_NODES - 1);
		err = rm_snap_node_add(c->new, c->old, c->svc, name, c->mac63,
				       "lo", 1);
		err = err < 0 ? err : 0;
		break;
	case CH_DEL63:
		bench_node_name(name, sizeof(name), CB_NODES - 1);
		slot = rm_snap_find_node(c->new, c->svc, name);
		if (slot < 0) {
			err = -ENOENT;
			break;
		}
		rm_snap_node_del(c->new, slot);
		break;
	}
	if (!err)
		err = rm_state_commit(&c->st, c->old, c->new, 0);
out:
	close(lock);
	return err;
}

/* Does the data plane send c->frame to node-0063 (want) or elsewhere?
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
		    (memcmp(out, c->mac63, 6) == 0) == want)
			return now;
	} while (now - start < CB_POLL_NS);
	return 0;
}

/* A source port whose flow the 64-node ring gives to node-0063. */
static int pick_flow(struct cctx *c)
{
	struct rm_node_spec *specs = bench_specs(0, CB_NODES);
	struct rm_ring r;
	struct bench_ring br = {0};
	int err;

	if (!specs)
		return -ENOMEM;
	err = rm_ring_build(&c->old->cfg.seed, specs, CB_NODES,
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
		    id == CB_NODES - 1) {
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

static int run_ringctl(const char *ringctl, const char *pin,
		       const char *const *args)
{
	const char *argv[16];
	int n = 0, status;
	pid_t pid;

	argv[n++] = ringctl;
	argv[n++] = "--pin-dir";
	argv[n++] = pin;
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execv(ringctl, (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* The steps of a ring update one by one: build, map create, and the fill
 * two ways: through a BPF_F_MMAPABLE array's mapping, as the state API
 * does it (rm_ring_map_create), and, for comparison, the batch update an
 * array without BPF_F_MMAPABLE would need. */
static int time_steps(struct bench_ring *br, double *build, double *create,
		      double *fill, double *mmfill)
{
	LIBBPF_OPTS(bpf_map_create_opts, inner, .map_flags = BPF_F_INNER_MAP);
	LIBBPF_OPTS(bpf_map_create_opts, mm,
		    .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	LIBBPF_OPTS(bpf_map_batch_opts, bo);
	__u64 t0 = bench_now_ns(), t1, t2;
	__u32 *keys = NULL, count;
	int err, fd = -1;
	size_t sz;
	void *p;

	err = bench_ring(CB_NODES, RM_DEFAULT_VNODES, br);
	if (err)
		return err;
	t1 = bench_now_ns();
	*build = (double)(t1 - t0) / 1e6;
	count = br->nslots;
	sz = (size_t)br->nslots * sizeof(*br->slots);
	keys = malloc((size_t)br->nslots * sizeof(*keys));
	err = -ENOMEM;
	if (!keys)
		goto out;
	for (__u32 i = 0; i < br->nslots; i++)
		keys[i] = i;
	t1 = bench_now_ns();
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rm_ring", 4,
			    sizeof(struct rm_slot), br->nslots, &inner);
	t2 = bench_now_ns();
	err = -errno;
	if (fd < 0)
		goto out;
	*create = (double)(t2 - t1) / 1e6;
	err = bpf_map_update_batch(fd, keys, br->slots, &count, &bo);
	*fill = (double)(bench_now_ns() - t2) / 1e6;
	if (err)
		goto out;
	close(fd);

	t1 = bench_now_ns();
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rm_ring_mm", 4,
			    sizeof(struct rm_slot), br->nslots, &mm);
	err = -errno;
	if (fd < 0)
		goto out;
	p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	err = -errno;
	if (p == MAP_FAILED)
		goto out;
	memcpy(p, br->slots, sz);
	*mmfill = (double)(bench_now_ns() - t1) / 1e6;
	munmap(p, sz);
	err = 0;
out:
	if (fd >= 0)
		close(fd);
	free(keys);
	bench_ring_free(br);
	return err;
}

int cmd_control(const struct bench_opts *o)
{
	const char *ringctl = o->argc > 0 ? o->argv[0] : NULL;
	const int rounds = o->rounds;
	double add[rounds], add_commit[rounds], del[rounds], cli[rounds];
	double build[rounds], create[rounds], fill[rounds], mmfill[rounds];
	double readt[rounds];
	struct bench_stat s_add, s_commit, s_del, s_cli, s_build, s_fill;
	struct bench_stat s_create, s_mmfill, s_read;
	struct cctx c = {0};
	int ncli = 0, rc = 1, err;
	char cli_err[96] = "";
	struct rm_json j;
	FILE *jf = NULL;
	char mactext[18];

	bench_node_mac(CB_NODES - 1, c.mac63);
	rm_format_mac(c.mac63, mactext);
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
		err = change(&c, CH_SERVICE);
	if (!err)
		err = change(&c, CH_NODES);
	if (!err)
		err = pick_flow(&c);
	if (err) {
		fprintf(stderr, "control: setting up the state: %s (%s)\n",
			rm_errmsg(), strerror(-err));
		goto out;
	}
	if (!poll_live(&c, false)) {
		fprintf(stderr, "control: the 63-node ring does not forward "
				"the test flow\n");
		goto out;
	}

	bench_pin_cpu();
	for (int r = 0; r < rounds; r++) {
		__u64 t0, t1, t2;

		t0 = bench_now_ns();
		err = change(&c, CH_ADD63);
		t1 = bench_now_ns();
		t2 = err ? 0 : poll_live(&c, true);
		if (!t2) {
			fprintf(stderr, "control: node add: %s\n",
				err ? rm_errmsg() : "new ring never live");
			goto out;
		}
		add[r] = (double)(t2 - t0) / 1e6;
		add_commit[r] = (double)(t1 - t0) / 1e6;
		readt[r] = c.read_ms;
		t0 = bench_now_ns();
		err = change(&c, CH_DEL63);
		t2 = err ? 0 : poll_live(&c, false);
		if (!t2) {
			fprintf(stderr, "control: node del: %s\n",
				err ? rm_errmsg() : "old ring never back");
			goto out;
		}
		del[r] = (double)(t2 - t0) / 1e6;

		if (ringctl && !cli_err[0]) {
			const char *a[] = {"node",	"add",	 CB_SVC,
					   "node-0063", "--mac", mactext,
					   "--dev",	"lo",	 NULL};
			const char *d[] = {"node", "del", CB_SVC, "node-0063",
					   NULL};

			t0 = bench_now_ns();
			err = run_ringctl(ringctl, c.pin, a);
			t2 = err ? 0 : poll_live(&c, true);
			if (!t2) {
				snprintf(cli_err, sizeof(cli_err),
					 "n/a (`ringctl node add` failed)");
			} else {
				cli[ncli++] = (double)(t2 - t0) / 1e6;
				if (run_ringctl(ringctl, c.pin, d) ||
				    !poll_live(&c, false)) {
					fprintf(stderr,
						"control: `ringctl node "
						"del` failed\n");
					goto out;
				}
			}
		}
	}
	if (ringctl && !ncli && !cli_err[0])
		snprintf(cli_err, sizeof(cli_err), "n/a");
	if (!ringctl)
		snprintf(cli_err, sizeof(cli_err), "n/a (no ringctl given)");

	/* where an add's time goes: each step alone, as commit does it */
	for (int r = 0; r < rounds; r++) {
		struct bench_ring br;

		err = time_steps(&br, &build[r], &create[r], &fill[r],
				 &mmfill[r]);
		if (err) {
			fprintf(stderr, "control: breakdown: %s\n",
				strerror(-err));
			goto out;
		}
	}

	bench_stat_of(add, rounds, &s_add);
	bench_stat_of(add_commit, rounds, &s_commit);
	bench_stat_of(del, rounds, &s_del);
	bench_stat_of(cli, ncli, &s_cli);
	bench_stat_of(build, rounds, &s_build);
	bench_stat_of(create, rounds, &s_create);
	bench_stat_of(fill, rounds, &s_fill);
	bench_stat_of(mmfill, rounds, &s_mmfill);
	bench_stat_of(readt, rounds, &s_read);

	jf = bench_json_open(o, &j);
	if (!jf)
		goto out;
	rm_json_u64(&j, "nodes", CB_NODES);
	rm_json_u64(&j, "vnodes", RM_DEFAULT_VNODES);
	rm_json_u64(&j, "entries", CB_NODES * RM_DEFAULT_VNODES);
	bench_json_stat(&j, "api_add_to_live_ms", &s_add);
	bench_json_stat(&j, "api_add_commit_returned_ms", &s_commit);
	bench_json_stat(&j, "api_del_to_live_ms", &s_del);
	if (ncli)
		bench_json_stat(&j, "ringctl_add_to_live_ms", &s_cli);
	else
		rm_json_str(&j, "ringctl_add_to_live_ms", cli_err);
	rm_json_obj_open(&j, "breakdown");
	bench_json_stat(&j, "lock_and_state_read_ms", &s_read);
	bench_json_stat(&j, "ring_build_ms", &s_build);
	bench_json_stat(&j, "inner_map_create_ms", &s_create);
	bench_json_stat(&j, "comparison_fill_update_batch_ms", &s_fill);
	bench_json_stat(&j, "inner_map_fill_mmap_memcpy_ms", &s_mmfill);
	rm_json_obj_close(&j);

	printf("\n### Control plane: node add to live ring (64 nodes x %u "
	       "vnodes = %u entries; median [min-max] of %d rounds, ms)\n\n",
	       RM_DEFAULT_VNODES, CB_NODES * RM_DEFAULT_VNODES, rounds);
	printf("| step | ms |\n|---|---:|\n");
	printf("| state API: lock, read, add node, commit, until a test packet "
	       "reaches the new node | %.2f [%.2f-%.2f] |\n",
	       s_add.med, s_add.min, s_add.max);
	printf("| ... of which until rm_state_commit returned | %.2f "
	       "[%.2f-%.2f] |\n",
	       s_commit.med, s_commit.min, s_commit.max);
	printf("| ... of which lock + rm_state_read | %.2f [%.2f-%.2f] |\n",
	       s_read.med, s_read.min, s_read.max);
	printf("| step alone: ring build (rm_ring_build, 64k entries) | %.2f "
	       "[%.2f-%.2f] |\n",
	       s_build.med, s_build.min, s_build.max);
	printf("| step alone: inner map create | %.2f [%.2f-%.2f] |\n",
	       s_create.med, s_create.min, s_create.max);
	printf("| step alone: inner map fill through mmap (what the state "
	       "API does) | %.2f [%.2f-%.2f] |\n",
	       s_mmfill.med, s_mmfill.min, s_mmfill.max);
	printf("| comparison: the same fill by bpf_map_update_batch | %.2f "
	       "[%.2f-%.2f] |\n",
	       s_fill.med, s_fill.min, s_fill.max);
	if (ncli)
		printf("| `ringctl node add` (process start included) until "
		       "live | %.2f [%.2f-%.2f] |\n",
		       s_cli.med, s_cli.min, s_cli.max);
	else
		printf("| `ringctl node add` until live | %s |\n", cli_err);
	printf("| node del until the old owner is back (includes the wait "
	       "for in-flight packets) | %.2f [%.2f-%.2f] |\n",
	       s_del.med, s_del.min, s_del.max);

	/* memory: the kernel's own accounting of the maps (fdinfo), with
	 * all 64 nodes in */
	if (change(&c, CH_ADD63) || !poll_live(&c, true)) {
		fprintf(stderr, "control: node add: %s\n", rm_errmsg());
		goto out;
	}
	{
		__u32 key = c.svc, id = 0, hdr_key = 0;
		struct rm_slot hdr = {0};
		struct bpf_map *m;
		long long ring_mem = -1, conn_mem = -1;
		struct bpf_map_info info = {};
		__u32 ilen = sizeof(info);
		int fd = -1;

		if (!bpf_map_lookup_elem(bpf_map__fd(c.skel->maps.rm_rings),
					 &key, &id))
			fd = bpf_map_get_fd_by_id(id);
		if (fd >= 0) {
			ring_mem = fdinfo_memlock(fd);
			bpf_map_lookup_elem(fd, &hdr_key, &hdr);
			close(fd);
		}
		printf("\n### Memory\n\n| what | bytes |\n|---|---:|\n");
		rm_json_obj_open(&j, "memory");
		if (ring_mem > 0 && hdr.a) {
			__u32 n = hdr.a, nslots = RM_RING_SLOTS(hdr.b, n);

			printf(
			    "| ring entry, encoded (header + index + entries "
			    ") / entries, %u entries | %.2f |\n",
			    n, (double)nslots * 8 / n);
			printf("| ring entry, kernel accounting of the inner "
			       "map (fdinfo memlock) / entries | %.2f |\n",
			       (double)ring_mem / n);
			rm_json_u64(&j, "ring_entries", n);
			rm_json_num(&j, "ring_bytes_per_entry_encoded",
				    (double)nslots * 8 / n);
			rm_json_num(&j, "ring_bytes_per_entry_kernel",
				    (double)ring_mem / n);
		}
		m = bpf_object__find_map_by_name(c.skel->obj, RM_MAP_NAME(CONNS));
		if (m &&
		    !bpf_obj_get_info_by_fd(bpf_map__fd(m), &info, &ilen)) {
			conn_mem = fdinfo_memlock(bpf_map__fd(m));
			printf("| connection entry: key %u + value %u bytes; "
			       "kernel accounting (fdinfo memlock) / %u "
			       "max entries | %.1f |\n",
			       info.key_size, info.value_size, info.max_entries,
			       (double)conn_mem / info.max_entries);
			rm_json_u64(&j, "conn_key_bytes", info.key_size);
			rm_json_u64(&j, "conn_value_bytes", info.value_size);
			rm_json_u64(&j, "conn_max_entries", info.max_entries);
			rm_json_num(&j, "conn_bytes_per_entry_kernel",
				    (double)conn_mem / info.max_entries);
		} else {
			printf("| connection entry | n/a (no connection table "
			       "yet) |\n");
			rm_json_str(&j, "conn_bytes_per_entry_kernel",
				    "n/a (no connection table yet)");
		}
		rm_json_obj_close(&j);
	}
	{
		char meas[96];

		snprintf(meas, sizeof(meas), "%.2f ms (%.2f-%.2f)", s_add.med,
			 s_add.min, s_add.max);
		bench_target(o, "ring update live, 64 nodes", "<= 20 ms", meas,
			     s_add.med <= 20.0 ? "met" : "missed",
			     "state API call to verified forwarding");
	}
	rc = 0;
out:
	if (jf)
		bench_json_close(jf, &j);
	teardown(&c);
	return rc;
}
