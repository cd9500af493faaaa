// SPDX-License-Identifier: GPL-2.0
/*
 * Part 1: per-packet cost in the kernel, bpf_prog_test_run_opts with
 * repeat >= 1,000,000, director vs the baseline program (bpf/baseline.bpf.c)
 * on each of the director's paths, for rings of 1k..256k entries.
 *
 * Each figure is the median over interleaved rounds (baseline, director,
 * floor, then the reverse order next round, ...) with min and max. A
 * round's figure is the duration the kernel reports: time per run in
 * whole nanoseconds, measured inside the loop. Wall-clock time around the
 * syscall is in the JSON too; it is not used because, for repeat > 1,
 * test_run installs the program in the XDP dispatcher and removes it
 * again, which waits for RCU grace periods: ~4-16 ms per call here, 4-16
 * ns per packet at this repeat, in steps of the scheduler tick.
 *
 * The floor: an empty program (returns XDP_TX) timed the same way, i.e.
 * what test_run itself costs around any program on this machine.
 *
 * The kernel runs the program `repeat` times on one buffer without
 * restoring it, so a run only measures the intended path if the program's
 * output takes that path again. Checked:
 *   - before timing: run once, feed the output back in, and require the
 *     same verdict and the same frame (a fixed point), equal to the frame
 *     computed here (for the director: the MACs of the node that
 *     rm_ring_lookup names for the flow, with the same seed and ring);
 *   - every timed run: verdict and output frame as expected, and the
 *     director's outcome counters moved by exactly `repeat` on the
 *     expected one and 0 on every other (conn-hit by `repeat` on the
 *     table-hit path, by 0 on the SYN path).
 *
 * `ringbench kernel CANDIDATE.bpf.o` measures a changed data plane (a
 * build of bpf/ringmaster.bpf.c with a change under test) against the
 * built director instead of the baseline: loaded on the director's maps,
 * same frames, same checks, interleaved in the same rounds. On a shared
 * VM whose speed moves by 2x from one minute to the next, two runs cannot
 * be compared; two programs in one run can. An A/A run (the built object
 * as its own candidate) shows what a difference must exceed: 0.9-1.1x.
 *
 * One flow repeated touches the same cache lines every time. The
 * "65,536 flows" rows put trafficgen's tg_mix in front: it gives each run
 * the next source port and tail-calls the program under test, so every
 * run lands on another ring position. Their floor is tg_mix
 * tail-calling the empty program. The connection table is emptied
 * before each ring size (entries outlive ring swaps by design) and
 * filled, for the table-hit rows, by one pass of SYNs and one of ACKs
 * (the director writes an entry on the first non-SYN packet).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "ringmaster.skel.h"
#include "baseline.skel.h"
#include "trafficgen.skel.h"
#include "root.skel.h"
#include "allcpu.h"
#include "bench.h"
#include "director.h"
#include "ringfix.h"
#include "state.h"

#define KB_REPEAT 1000000u
#define KB_MAX_ROUNDS 101
#define KB_MIX_BASE 1024u
#define KB_MAX_SIZES 8

/* K_PASS: passes the frame unchanged (the chain's root, empty chain);
 * K_PROBE: tg_conn_probe, a bare lookup in the director's rm_conns */
enum kind { K_BASE, K_DIR, K_WRAP, K_PASS, K_PROBE };
enum path { P_SEARCH, P_HIT, P_NOTSVC };

struct variant {
	const char *name;
	enum kind kind;
	int fd;	     /* program run by bpf_prog_test_run */
	int next_fd; /* mixed rows: program tg_mix tail-calls */
	/* a ring of its own (the 1M vs 64k row): installed as the service's
	 * ring before each run, its slots give the expected owners */
	int ring_fd;
	const struct rm_slot *slots;
	__u32 nslots;
	double ns[KB_MAX_ROUNDS], wall[KB_MAX_ROUNDS];
};

struct row {
	const char *path_name;
	enum path path;
	bool mixed;
	__u8 frame[64];
	size_t len;
	int nvar;
	/* baseline, director, harness floor; the established-flow rows add
	 * the bare table lookup */
	struct variant var[4];
	char status[160]; /* empty = measured */
	struct bench_stat st[4], wall[4], ratio_rounds;
	double ratio, net_ratio;
};

struct kctx {
	const struct bench_opts *o;
	struct director d;
	struct baseline_bpf *bl;
	struct trafficgen_bpf *tg;
	int tg_next_fd;
	__u32 repeat;
	const struct rm_slot *slots;
	__u32 nslots;
	__u32 mix_mask;
	__u8 bl_dst[6];
	__u32 lo_ifindex;
	/* the chain: the director again, for slot 0 of chain, on the same
	 * maps; a root over it, and a root over an empty chain */
	struct ringmaster_bpf *chained;
	struct root_bpf *root, *root_empty;
	int chain_fd;
	/* `ringbench kernel CANDIDATE.bpf.o`: a changed data plane, on the
	 * built director's maps, measured against it in the same rounds */
	struct bpf_object *cand;
	int cand_fd;
	/* --reference OBJ: the data plane before a change (the Makefile's
	 * ringmaster-noidx.bpf.o), measured beside the director on the 64k
	 * ring's new flows: the reference of the new-flow target */
	struct bpf_object *ref;
	int ref_fd;
};

struct trun {
	__u32 retval, out_len;
	double ns;   /* the kernel's duration: ns per run, whole */
	double wall; /* around the syscall, per run */
};

static int trun(int fd, const void *in, __u32 len, void *out, __u32 cap,
		__u32 repeat, struct trun *r)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = len,
		    .data_out = out, .data_size_out = cap, .repeat = repeat);
	__u64 t0, t1;
	int err;

	t0 = bench_now_ns();
	err = bpf_prog_test_run_opts(fd, &opts);
	t1 = bench_now_ns();
	if (err)
		return -errno;
	r->retval = opts.retval;
	r->ns = opts.duration;
	r->out_len = opts.data_size_out;
	r->wall = (double)(t1 - t0) / repeat;
	return 0;
}

/* Frame and verdict variant v must produce from in after runs runs. */
static int expect(struct kctx *k, const struct row *row,
		  const struct variant *v, __u32 runs, __u8 *out, __u32 *retval)
{
	__u32 id;

	memcpy(out, row->frame, row->len);
	if (row->mixed)
		bench_frame_set_sport(
		    out, (__u16)(KB_MIX_BASE + ((runs - 1) & k->mix_mask)));
	*retval = XDP_TX;
	switch (v->kind) {
	case K_WRAP:
	case K_PROBE:
		return 0;
	case K_PASS:
		*retval = XDP_PASS;
		return 0;
	case K_BASE:
		memcpy(out, k->bl_dst, 6);
		memcpy(out + 6, bench_dir_mac, 6);
		return 0;
	case K_DIR:
		if (row->path == P_NOTSVC) {
			*retval = XDP_PASS;
			return 0;
		}
		if (bench_frame_owner(out, k->slots, k->nslots, &id))
			return -1;
		bench_node_mac(id, out);
		memcpy(out + 6, bench_dir_mac, 6);
		return 0;
	}
	return -1;
}

/* Counter movement of one director run of `runs` packets on row's path. */
static int check_counters(const struct row *row, const __u64 *before,
			  const __u64 *after, __u64 runs, char *why,
			  size_t wlen)
{
	int want =
	    row->path == P_NOTSVC ? RM_CNT_PASS_NOT_SERVICE : RM_CNT_FWD_TX;

	return dir_counters_moved(before, after, want, runs,
				  row->path == P_HIT	  ? (long long)runs
				  : row->path == P_SEARCH ? 0
							  : -1,
				  why, wlen);
}

static int set_next(struct kctx *k, int fd)
{
	__u32 zero = 0;

	return bpf_map_update_elem(k->tg_next_fd, &zero, &fd, BPF_ANY) ? -errno
								       : 0;
}

/* One checked run of variant vi; ns and kernel duration on success. */
static int run_checked(struct kctx *k, struct row *row, int vi, const __u8 *in,
		       __u32 repeat, struct trun *r, __u8 *out, char *why,
		       size_t wlen)
{
	struct variant *v = &row->var[vi];
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	__u8 exp[64];
	__u32 exp_ret;
	int err;

	if (v->ring_fd > 0) {
		err = dir_ring_install(&k->d, BENCH_SVC_ID, v->ring_fd);
		if (err) {
			snprintf(why, wlen, "ring swap: %s", strerror(-err));
			return err;
		}
		k->slots = v->slots;
		k->nslots = v->nslots;
	}
	if (row->mixed) {
		err = set_next(k, v->next_fd);
		if (err) {
			snprintf(why, wlen, "tg_next: %s", strerror(-err));
			return err;
		}
		k->tg->bss->tg_seq = 0;
	}
	k->tg->bss->tg_probe_misses = 0;
	if (v->kind == K_DIR && dir_counters(&k->d, before)) {
		snprintf(why, wlen, "counters: %s", strerror(errno));
		return -1;
	}
	err = trun(v->fd, in, row->len, out, 64, repeat, r);
	if (err) {
		snprintf(why, wlen, "test_run: %s", strerror(-err));
		return err;
	}
	if (v->kind == K_DIR && dir_counters(&k->d, after)) {
		snprintf(why, wlen, "counters: %s", strerror(errno));
		return -1;
	}
	if (expect(k, row, v, repeat, exp, &exp_ret)) {
		snprintf(why, wlen, "no owner for the flow in userspace");
		return -1;
	}
	if (r->retval != exp_ret) {
		snprintf(why, wlen, "%s returned %u, expected %u", v->name,
			 r->retval, exp_ret);
		return -1;
	}
	if (r->out_len != row->len) {
		snprintf(why, wlen, "%s output is %u bytes, expected %zu",
			 v->name, r->out_len, row->len);
		return -1;
	}
	for (size_t i = 0; i < row->len; i++)
		if (out[i] != exp[i]) {
			snprintf(why, wlen,
				 "%s output differs from the expected frame "
				 "at byte %zu (%#x, expected %#x)",
				 v->name, i, out[i], exp[i]);
			return -1;
		}
	if (v->kind == K_PROBE && k->tg->bss->tg_probe_misses) {
		snprintf(why, wlen, "the bare lookup missed %llu of %u flows",
			 (unsigned long long)k->tg->bss->tg_probe_misses,
			 repeat);
		return -1;
	}
	if (v->kind == K_DIR)
		return check_counters(row, before, after, repeat, why, wlen);
	return 0;
}

/* Single-flow rows: the output of one run, fed back, must give the same
 * verdict and the same frame: then `repeat` runs all take one path. */
static int check_fixed_point(struct kctx *k, struct row *row, char *why,
			     size_t wlen)
{
	__u8 out1[64], out2[64];
	struct trun r1, r2;

	for (int vi = 0; vi < row->nvar; vi++) {
		if (run_checked(k, row, vi, row->frame, 1, &r1, out1, why,
				wlen))
			return -1;
		if (trun(row->var[vi].fd, out1, row->len, out2, sizeof(out2), 1,
			 &r2)) {
			snprintf(why, wlen, "test_run: %s", strerror(errno));
			return -1;
		}
		if (r2.retval != r1.retval || r2.out_len != r1.out_len ||
		    memcmp(out1, out2, row->len)) {
			snprintf(why, wlen,
				 "%s: output of run 1 takes another path "
				 "(verdict %u -> %u)",
				 row->var[vi].name, r1.retval, r2.retval);
			return -1;
		}
	}
	return 0;
}

/* A variant runs PROG_FD alone, or on the mixed-flow rows behind tg_mix,
 * which picks the flow and tail-calls it. */
static void variant_set(const struct kctx *k, struct variant *v,
			const char *name, enum kind kind, bool mixed,
			int prog_fd)
{
	v->name = name;
	v->kind = kind;
	v->fd = mixed ? bpf_program__fd(k->tg->progs.tg_mix) : prog_fd;
	v->next_fd = mixed ? prog_fd : 0;
}

static void row_init(struct kctx *k, struct row *row, const char *name,
		     enum path path, bool mixed, __u32 daddr, __u8 flags)
{
	memset(row, 0, sizeof(*row));
	row->path_name = name;
	row->path = path;
	row->mixed = mixed;
	/* SYN rows come from another client address than the ACK rows, so
	 * they are new connections, as SYNs are: the table holds no entry
	 * of theirs for the SYN to forget */
	row->len = bench_frame(row->frame, bench_dir_mac, bench_client_mac,
			       flags == BENCH_TCP_SYN ? BENCH_CLIENT_IP + 1
						      : BENCH_CLIENT_IP,
			       daddr, 40000, BENCH_PORT, IPPROTO_TCP, flags);
	if (k->cand) {
		/* the director is the reference, the candidate takes its
		 * place; same frames, same checks */
		variant_set(k, &row->var[0], "director (built)", K_DIR, mixed,
			    k->d.prog_fd);
		variant_set(k, &row->var[1], "candidate", K_DIR, mixed,
			    k->cand_fd);
	} else {
		variant_set(k, &row->var[0], "baseline", K_BASE, mixed,
			    bpf_program__fd(k->bl->progs.bl_tx));
		variant_set(k, &row->var[1], "director", K_DIR, mixed,
			    k->d.prog_fd);
	}
	variant_set(k, &row->var[2], mixed ? "tg_mix alone" : "empty program",
		    K_WRAP, mixed, bpf_program__fd(k->tg->progs.tg_ret_tx));
	row->nvar = 3;
	if (!k->cand && mixed && path == P_HIT && k->d.conns_fd >= 0) {
		variant_set(k, &row->var[3], "bare rm_conns lookup", K_PROBE,
			    true, bpf_program__fd(k->tg->progs.tg_conn_probe));
		row->nvar = 4;
	}
}

/* Empty the connection table: entries outlive a ring swap (that is what
 * they are for), so the next ring's rows would see the last ring's
 * owners. Keys are collected first: deleting while walking would make
 * every walk restart from the first bucket. The presence index too: the
 * old flows' tags would share its sets with the next rows' flows. */
static int conns_clear(struct kctx *k)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), n = 0;
	__u8 *keys;
	int err = 0;

	if (k->d.conns_fd < 0)
		return 0;
	err = rm_conn_idx_clear(bpf_map__fd(k->d.skel->maps.rm_conn_idx));
	if (err)
		return err;
	if (bpf_obj_get_info_by_fd(k->d.conns_fd, &info, &len))
		return -errno;
	keys = malloc((size_t)info.max_entries * info.key_size);
	if (!keys)
		return -ENOMEM;
	while (n < info.max_entries &&
	       !bpf_map_get_next_key(k->d.conns_fd,
				     n ? keys + (size_t)(n - 1) * info.key_size
				       : NULL,
				     keys + (size_t)n * info.key_size))
		n++;
	for (__u32 i = 0; i < n && !err; i++)
		if (bpf_map_delete_elem(k->d.conns_fd,
					keys + (size_t)i * info.key_size) &&
		    errno != ENOENT)
			err = -errno;
	free(keys);
	return err;
}

/* Put every flow of a mixed row into the connection table: one pass of
 * SYNs, then one of ACKs, each flow once, through tg_mix and the
 * director. */
static int prime_conns(struct kctx *k, const struct row *row, char *why,
		       size_t wlen)
{
	__u8 syn[64], out[64];
	struct trun r;
	int err;

	memcpy(syn, row->frame, row->len);
	syn[ETH_HLEN + 20 + 13] = BENCH_TCP_SYN;
	err = set_next(k, k->d.prog_fd);
	if (err)
		goto fail;
	for (int pass = 0; pass < 2; pass++) {
		k->tg->bss->tg_seq = 0;
		err = trun(row->mixed ? bpf_program__fd(k->tg->progs.tg_mix)
				      : k->d.prog_fd,
			   pass ? row->frame : syn, row->len, out, sizeof(out),
			   row->mixed ? k->mix_mask + 1 : 1, &r);
		if (err)
			goto fail;
	}
	return 0;
fail:
	snprintf(why, wlen, "priming the connection table: %s", strerror(-err));
	return err;
}

static void measure_row(struct kctx *k, struct row *row)
{
	const int rounds = k->o->rounds;
	char why[128] = "";
	__u8 out[64];
	struct trun r;

	if (row->path == P_HIT && k->d.conns_fd < 0) {
		snprintf(row->status, sizeof(row->status),
			 "n/a (no connection table yet)");
		return;
	}
	if (row->path == P_HIT && prime_conns(k, row, why, sizeof(why)))
		goto fail;
	if (!row->mixed && check_fixed_point(k, row, why, sizeof(why)))
		goto fail;
	/* warm-up: one unmeasured round */
	for (int vi = 0; vi < row->nvar; vi++)
		if (run_checked(k, row, vi, row->frame, k->repeat / 10, &r, out,
				why, sizeof(why)))
			goto fail;
	for (int rd = 0; rd < rounds; rd++)
		for (int n = 0; n < row->nvar; n++) {
			int vi = rd % 2 ? row->nvar - 1 - n : n;

			if (run_checked(k, row, vi, row->frame, k->repeat, &r,
					out, why, sizeof(why)))
				goto fail;
			row->var[vi].ns[rd] = r.ns;
			row->var[vi].wall[rd] = r.wall;
		}
	{
		double rr[KB_MAX_ROUNDS];

		for (int vi = 0; vi < row->nvar; vi++) {
			bench_stat_of(row->var[vi].ns, rounds, &row->st[vi]);
			bench_stat_of(row->var[vi].wall, rounds,
				      &row->wall[vi]);
		}
		for (int rd = 0; rd < rounds; rd++)
			rr[rd] = row->var[1].ns[rd] / row->var[0].ns[rd];
		bench_stat_of(rr, rounds, &row->ratio_rounds);
		row->ratio = row->st[1].med / row->st[0].med;
		row->net_ratio = (row->st[1].med - row->st[2].med) /
				 (row->st[0].med - row->st[2].med);
	}
	return;
fail:
	snprintf(row->status, sizeof(row->status),
		 "FAILED: path not verified: %s", why);
}

/* The chain (rm_common.h): the director loaded again for slot 0 of a
 * program array, every map but rm_chain the first one's (same ring, same
 * counters, so the same checks hold), a root over that array, and a root
 * over an empty one. */
static int chain_open(struct kctx *k)
{
	struct bpf_map *m;
	int err = 0;

	k->chain_fd =
	    bpf_map_create(BPF_MAP_TYPE_PROG_ARRAY, RM_CHAIN_MAP, sizeof(__u32),
			   sizeof(__u32), RM_CHAIN_SLOTS, NULL);
	k->chained = ringmaster_bpf__open();
	k->root = root_bpf__open();
	k->root_empty = root_bpf__open_and_load();
	if (k->chain_fd < 0 || !k->chained || !k->root || !k->root_empty)
		return -errno;
	k->chained->rodata->rm_chain_slot = 0;
	bpf_object__for_each_map(m, k->chained->obj)
	{
		struct bpf_map *mine;

		if (bpf_map__is_internal(m))
			continue;
		if (m == k->chained->maps.rm_chain) {
			err = bpf_map__reuse_fd(m, k->chain_fd);
		} else {
			mine = bpf_object__find_map_by_name(k->d.skel->obj,
							    bpf_map__name(m));
			err = mine ? bpf_map__reuse_fd(m, bpf_map__fd(mine))
				   : -ENOENT;
		}
		if (err)
			return err;
	}
	err = bpf_map__reuse_fd(k->root->maps.rm_chain, k->chain_fd);
	if (err || ringmaster_bpf__load(k->chained) || root_bpf__load(k->root))
		return err ? err : -errno;
	{
		__u32 zero = 0;
		int fd = bpf_program__fd(k->chained->progs.rm_xdp);

		if (bpf_map_update_elem(k->chain_fd, &zero, &fd, BPF_ANY))
			return -errno;
	}
	return 0;
}

static void chain_close(struct kctx *k)
{
	root_bpf__destroy(k->root);
	root_bpf__destroy(k->root_empty);
	ringmaster_bpf__destroy(k->chained);
	if (k->chain_fd > 0)
		close(k->chain_fd);
}

/* A chain row: the director alone, the root with the director in slot 0,
 * and the root over an empty chain (which passes). */
static void row_init_chain(struct kctx *k, struct row *row, const char *name,
			   enum path path, __u32 daddr)
{
	row_init(k, row, name, path, false, daddr, BENCH_TCP_SYN);
	variant_set(k, &row->var[0], "director alone", K_DIR, false,
		    k->d.prog_fd);
	variant_set(k, &row->var[1], "root + director in slot 0", K_DIR,
		    false, bpf_program__fd(k->root->progs.rm_root));
	variant_set(k, &row->var[2], "root, empty chain", K_PASS, false,
		    bpf_program__fd(k->root_empty->progs.rm_root));
}

/* The chain's rows, measured on the ring installed now. */
static int chain_measure(struct kctx *k, struct row rows[2])
{
	int err = chain_open(k);

	if (err) {
		for (int r = 0; r < 2; r++) {
			rows[r].path_name = r ? "not a service (pass)"
					      : "ring search (TCP SYN)";
			snprintf(rows[r].status, sizeof(rows[r].status),
				 "FAILED: loading the chain: %s",
				 strerror(-err));
		}
		return 2;
	}
	row_init_chain(k, &rows[0], "ring search (TCP SYN)", P_SEARCH,
		       BENCH_VIP);
	row_init_chain(k, &rows[1], "not a service (pass)", P_NOTSVC,
		       BENCH_NOT_VIP);
	for (int r = 0; r < 2; r++)
		measure_row(k, &rows[r]);
	return !strncmp(rows[0].status, "FAILED", 6) +
	       !strncmp(rows[1].status, "FAILED", 6);
}

static void chain_print(struct rm_json *j, const char *lbl,
			const struct row rows[2])
{
	printf("\n### The chain's cost (ringload attach --chain), ring %s, one "
	       "flow: the director alone vs the root with the director in "
	       "slot 0 (%d slots; a passed packet tries the %d after it)\n\n",
	       lbl, RM_CHAIN_SLOTS, RM_CHAIN_SLOTS - 1);
	printf("| path | director alone ns | root + director ns | ratio | "
	       "hop ns | root, empty chain ns |\n");
	printf("|---|---:|---:|---:|---:|---:|\n");
	rm_json_arr_open(j, "chain");
	for (int r = 0; r < 2; r++) {
		const struct row *row = &rows[r];

		rm_json_obj_open(j, NULL);
		rm_json_str(j, "path", row->path_name);
		rm_json_str(j, "ring", lbl);
		rm_json_str(j, "status", row->status[0] ? row->status : "ok");
		if (row->status[0]) {
			printf("| %s | %s | | | | |\n", row->path_name,
			       row->status);
		} else {
			printf("| %s | %.0f [%.0f-%.0f] | %.0f [%.0f-%.0f] | "
			       "%.2fx | %.0f | %.0f |\n",
			       row->path_name, row->st[0].med, row->st[0].min,
			       row->st[0].max, row->st[1].med, row->st[1].min,
			       row->st[1].max, row->ratio,
			       row->st[1].med - row->st[0].med, row->st[2].med);
			bench_json_stat(j, "director_alone_ns", &row->st[0]);
			bench_json_stat(j, "root_and_director_ns", &row->st[1]);
			bench_json_stat(j, "root_empty_chain_ns", &row->st[2]);
			rm_json_num(j, "ratio", row->ratio);
			rm_json_num(j, "hop_ns",
				    row->st[1].med - row->st[0].med);
		}
		rm_json_obj_close(j);
	}
	rm_json_arr_close(j);
}

static void print_row(struct rm_json *j, const char *size,
		      const struct row *row)
{
	const char *flows = row->mixed ? "65,536" : "1";

	if (row->status[0]) {
		printf("| %s | %s | %s | %s | | | |\n", size, row->path_name,
		       flows, row->status);
	} else {
		printf("| %s | %s | %s | %.0f [%.0f-%.0f] | %.0f [%.0f-%.0f] "
		       "| %.2fx | %.0f |\n",
		       size, row->path_name, flows, row->st[0].med,
		       row->st[0].min, row->st[0].max, row->st[1].med,
		       row->st[1].min, row->st[1].max, row->ratio,
		       row->st[2].med);
	}
	rm_json_obj_open(j, NULL);
	rm_json_str(j, "path", row->path_name);
	rm_json_u64(j, "flows", row->mixed ? 65536 : 1);
	rm_json_str(j, "status", row->status[0] ? row->status : "ok");
	if (!row->status[0]) {
		bench_json_stat(j, "baseline_ns", &row->st[0]);
		bench_json_stat(j, "director_ns", &row->st[1]);
		bench_json_stat(j,
				row->mixed ? "floor_tg_mix_alone_ns"
					   : "floor_empty_program_ns",
				&row->st[2]);
		if (row->nvar > 3)
			bench_json_stat(j, "bare_table_lookup_ns", &row->st[3]);
		rm_json_num(j, "ratio", row->ratio);
		bench_json_stat(j, "ratio_per_round", &row->ratio_rounds);
		rm_json_num(j, "ratio_net_of_floor", row->net_ratio);
		rm_json_obj_open(j, "wall_clock_ns");
		for (int vi = 0; vi < row->nvar; vi++)
			bench_json_stat(j, row->var[vi].name, &row->wall[vi]);
		rm_json_obj_close(j);
	}
	rm_json_obj_close(j);
}

static int load_helpers(struct kctx *k)
{
	k->bl = baseline_bpf__open();
	if (!k->bl)
		return -errno;
	if (baseline_bpf__load(k->bl))
		return -errno;
	bench_node_mac(0, k->bl_dst);
	memcpy(k->bl->bss->bl_dst_mac, k->bl_dst, 6);
	memcpy(k->bl->bss->bl_src_mac, bench_dir_mac, 6);
	k->tg = trafficgen_bpf__open();
	if (!k->tg)
		return -errno;
	k->tg->rodata->tg_mix_base = KB_MIX_BASE;
	k->tg->rodata->tg_mix_mask = k->mix_mask;
	if (k->d.conns_fd >= 0 &&
	    bpf_map__reuse_fd(k->tg->maps.tg_conns, k->d.conns_fd))
		return -errno;
	if (trafficgen_bpf__load(k->tg))
		return -errno;
	k->tg_next_fd = bpf_map__fd(k->tg->maps.tg_next);
	return 0;
}

/* The 1M-entry ring against the 64k one on 65,536 new flows, in the same
 * rounds: rows measured minutes apart see the machine in other states
 * (here the baseline itself moves by 2x between rows), so a ratio of
 * two rows can be off by more than the 1.3x it is judged by. Variants:
 * the director on the 64k ring, on the 1M ring (each swapped in before
 * its runs), and the baseline. */
static void row_init_ring_pair(struct kctx *k, struct row *row, int fd64,
			       const struct bench_ring *b64, int fd1m,
			       const struct bench_ring *b1m)
{
	struct variant base;

	row_init(k, row, "ring search (TCP SYN)", P_SEARCH, true, BENCH_VIP,
		 BENCH_TCP_SYN);
	base = row->var[0];
	row->var[0] = row->var[1];
	row->var[0].name = "director, 64k ring";
	row->var[0].ring_fd = fd64;
	row->var[0].slots = b64->slots;
	row->var[0].nslots = b64->nslots;
	row->var[1].name = "director, 1M ring";
	row->var[1].ring_fd = fd1m;
	row->var[1].slots = b1m->slots;
	row->var[1].nslots = b1m->nslots;
	row->var[2] = base;
}

static void print_ring_pair(struct rm_json *j, const struct row *row)
{
	printf("\n### The 1M-entry ring vs the 64k one, 65,536 new flows, "
	       "in the same rounds (the director on each ring and the "
	       "baseline interleaved, the ring swapped in before each run)"
	       "\n\n");
	rm_json_obj_open(j, "ring_1m_vs_64k");
	rm_json_str(j, "status", row->status[0] ? row->status : "ok");
	if (row->status[0]) {
		printf("%s\n", row->status);
		rm_json_obj_close(j);
		return;
	}
	printf("| 64k ring ns | 1M ring ns | 1M / 64k | per round | baseline "
	       "ns |\n|---:|---:|---:|---|---:|\n");
	printf("| %.0f [%.0f-%.0f] | %.0f [%.0f-%.0f] | %.2fx | %.2f-%.2f | "
	       "%.0f |\n",
	       row->st[0].med, row->st[0].min, row->st[0].max, row->st[1].med,
	       row->st[1].min, row->st[1].max, row->ratio,
	       row->ratio_rounds.min, row->ratio_rounds.max, row->st[2].med);
	bench_json_stat(j, "ring_64k_ns", &row->st[0]);
	bench_json_stat(j, "ring_1m_ns", &row->st[1]);
	bench_json_stat(j, "baseline_ns", &row->st[2]);
	rm_json_num(j, "ratio", row->ratio);
	bench_json_stat(j, "ratio_per_round", &row->ratio_rounds);
	rm_json_obj_close(j);
}

static void prog_json(struct rm_json *j, const char *key, int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return;
	rm_json_obj_open(j, key);
	rm_json_u64(j, "xlated_bytes", info.xlated_prog_len);
	rm_json_u64(j, "jited_bytes", info.jited_prog_len);
	rm_json_obj_close(j);
}

static int read_int_file(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Issue 23's targets of this part, in one block: 65,536 new flows at the
 * 64k ring at most KB_NEW_FLOWS_MAX of the data plane before the presence
 * index (bpf/conntrack.h), measured in the same rounds when ringbench
 * has --reference (make bench gives it build/ringmaster-noidx.bpf.o);
 * then the 1M ring against the 64k one; then every CPU at once, each row
 * at least 0.9 as fast per CPU as alone (allcpu.c). Issue 16's ratios to
 * the baseline program are retired: on these VMs that program costs 6-8
 * ns, so ratios to it measured the harness. */
#define KB_NEW_FLOWS_MAX 0.8
/* Without --reference: issue 23's figure for this row before the index,
 * `make bench` on the 2-vCPU AMD EPYC VM (about 100 ns). A figure of
 * another run in another minute: the same-round reference is the one
 * to trust. */
#define KB_NEW_FLOWS_REF_NS 100.0

static void new_flows_target(const struct bench_opts *o, const char *ring,
			     const struct row *k64, const struct row *ref)
{
	char name[96], want[64], meas[160], note[200];
	double r;

	snprintf(name, sizeof(name),
		 "65,536 new flows at %s vs the design before the presence "
		 "index",
		 ring[0] ? ring : "64k");

	snprintf(want, sizeof(want), "<= %.1fx", KB_NEW_FLOWS_MAX);
	if (ref && !ref->status[0]) {
		snprintf(meas, sizeof(meas), "%.2fx (%.0f vs %.0f ns)",
			 ref->ratio, ref->st[1].med, ref->st[0].med);
		snprintf(note, sizeof(note),
			 "same rounds; per round %.2f-%.2fx; baseline %.0f ns",
			 ref->ratio_rounds.min, ref->ratio_rounds.max,
			 ref->st[2].med);
		bench_target(o, name, want, meas,
			     ref->ratio <= KB_NEW_FLOWS_MAX ? "met" : "missed",
			     note);
		return;
	}
	if (!k64 || !k64->path_name || k64->status[0]) {
		bench_target(o, name, want,
			     ref ? ref->status
				 : (k64 && k64->path_name ? k64->status
							   : "not run"),
			     "n/a", o->quick ? "--quick run" : "");
		return;
	}
	r = k64->st[1].med / KB_NEW_FLOWS_REF_NS;
	snprintf(meas, sizeof(meas), "%.2fx (%.0f vs %.0f ns)", r,
		 k64->st[1].med, KB_NEW_FLOWS_REF_NS);
	bench_target(o, name, want, meas, r <= KB_NEW_FLOWS_MAX ? "met" : "missed",
		     "no --reference: against issue 23's figure (another "
		     "run, another minute)");
}

/* The 1M ring's 65,536 new flows against the 64k ring's, director
 * against director. */
static void ring_pair_target(const struct bench_opts *o, const struct row *k64,
			     const struct row *big_new, const struct row *pair)
{
	char meas[160], note[160];

	if (pair && !pair->status[0]) {
		snprintf(meas, sizeof(meas), "%.2fx (%.0f vs %.0f ns)",
			 pair->ratio, pair->st[1].med, pair->st[0].med);
		snprintf(note, sizeof(note),
			 "director vs director, same rounds; per round "
			 "%.2f-%.2fx; baseline %.0f ns",
			 pair->ratio_rounds.min, pair->ratio_rounds.max,
			 pair->st[2].med);
		bench_target(o, "1M-entry ring vs 64k, 65,536 new flows",
			     "<= 1.3x", meas,
			     pair->ratio <= 1.3 ? "met" : "missed", note);
		return;
	}
	if (!big_new || big_new->status[0] || !k64->path_name ||
	    k64->status[0]) {
		bench_target(o, "1M-entry ring vs 64k, 65,536 new flows",
			     "<= 1.3x", big_new ? big_new->status : "not run",
			     "n/a", o->quick ? "--quick run" : "");
		return;
	}
	snprintf(meas, sizeof(meas), "%.2fx (%.0f vs %.0f ns)",
		 big_new->st[1].med / k64->st[1].med, big_new->st[1].med,
		 k64->st[1].med);
	snprintf(note, sizeof(note),
		 "director vs director; baseline %.0f vs %.0f ns",
		 big_new->st[0].med, k64->st[0].med);
	bench_target(
	    o, "1M-entry ring vs 64k, 65,536 new flows", "<= 1.3x", meas,
	    big_new->st[1].med / k64->st[1].med <= 1.3 ? "met" : "missed",
	    note);
}

/* The new-flow row with the design before the index in the same rounds:
 * the reference, the director, the baseline (ratio director /
 * reference). */
static void row_init_new_ref(struct kctx *k, struct row *row)
{
	struct variant base;

	row_init(k, row, "ring search (TCP SYN)", P_SEARCH, true, BENCH_VIP,
		 BENCH_TCP_SYN);
	base = row->var[0];
	row->var[0] = row->var[1];
	variant_set(k, &row->var[0], "director before the index", K_DIR, true,
		    k->ref_fd);
	row->var[2] = base;
}

static void print_new_ref(struct rm_json *j, const char *lbl,
			  const struct row *row)
{
	printf("\n### New flows, ring %s, 65,536 flows: the director vs the "
	       "design before the presence index (--reference), in the same "
	       "rounds\n\n",
	       lbl);
	rm_json_obj_open(j, "new_flows_vs_reference");
	rm_json_str(j, "ring", lbl);
	rm_json_str(j, "status", row->status[0] ? row->status : "ok");
	if (row->status[0]) {
		printf("%s\n", row->status);
		rm_json_obj_close(j);
		return;
	}
	printf("| before ns | director ns | director / before | per round | "
	       "baseline ns |\n|---:|---:|---:|---|---:|\n");
	printf("| %.0f [%.0f-%.0f] | %.0f [%.0f-%.0f] | %.2fx | %.2f-%.2f | "
	       "%.0f |\n",
	       row->st[0].med, row->st[0].min, row->st[0].max, row->st[1].med,
	       row->st[1].min, row->st[1].max, row->ratio,
	       row->ratio_rounds.min, row->ratio_rounds.max, row->st[2].med);
	bench_json_stat(j, "reference_ns", &row->st[0]);
	bench_json_stat(j, "director_ns", &row->st[1]);
	bench_json_stat(j, "baseline_ns", &row->st[2]);
	rm_json_num(j, "ratio", row->ratio);
	bench_json_stat(j, "ratio_per_round", &row->ratio_rounds);
	rm_json_obj_close(j);
}

/* Every CPU at once (allcpu.c) on the ring installed now. The table is
 * emptied first: the rows before filled this CPU's share of it. */
static int allcpu_part(struct kctx *k, struct allcpu_row rows[ALLCPU_ROWS])
{
	struct allcpu_env e = {
	    .o = k->o,
	    .d = &k->d,
	    .mix_fd = bpf_program__fd(k->tg->progs.tg_mix_cpu),
	    .seq_fd = bpf_map__fd(k->tg->maps.tg_cpu_seq),
	    .next_fd = k->tg_next_fd,
	    .slots = k->slots,
	    .nslots = k->nslots,
	    /* a quick run checks the counts, not the speed */
	    .repeat = k->o->quick ? k->repeat / 10 : k->repeat,
	    .mix_base = KB_MIX_BASE,
	    .mix_mask = k->mix_mask,
	};
	int err = conns_clear(k);

	if (err) {
		for (int r = 0; r < ALLCPU_ROWS; r++)
			snprintf(rows[r].status, sizeof(rows[r].status),
				 "FAILED: clearing rm_conns: %s",
				 strerror(-err));
		return ALLCPU_ROWS;
	}
	return allcpu_measure(&e, rows);
}

int cmd_kernel(const struct bench_opts *o)
{
	/* nodes, vnodes, rows: the last ring (2^20 entries, the largest a
	 * ring may have) is measured on 65,536 new flows only, against the
	 * 64k ring: the cost of a ring that does not fit the cache */
	static const __u32 cfg[][3] = {
	    {4, 256, 5},    {16, 1024, 5},  {64, 1024, 5},
	    {256, 1024, 5}, {256, 4096, 1},
	};
	const int nsizes = o->quick ? 2 : sizeof(cfg) / sizeof(cfg[0]);
	struct kctx k = {.o = o, .repeat = KB_REPEAT, .mix_mask = 0xffff};
	static struct row keep64[4], big_new, pair;
	struct bench_ring br64 = {0};
	static struct {
		char lbl[16];
		struct row row;
	} probe[KB_MAX_SIZES];
	int nprobe = 0;
	int inner64 = -1, inner1m = -1;
	bool pair_done = false;
	struct row rows[5], *big = NULL;
	struct rm_json j;
	int rc = 1, failed = 0;
	static struct row chain_rows[2];
	char chain_lbl[16] = "";
	static struct row new_ref;
	static struct allcpu_row ac_res[ALLCPU_ROWS];
	bool new_ref_done = false;
	char ac_lbl[16] = "";
	FILE *jf = NULL;
	char lbl[16];

	memset(rows, 0, sizeof(rows));
	if (o->rounds > KB_MAX_ROUNDS)
		return 2;
	if (o->argc > 1) {
		fprintf(stderr, "usage: ringbench kernel [CANDIDATE.bpf.o]\n");
		return 2;
	}
	bench_pin_cpu();
	k.lo_ifindex = if_nametoindex("lo");
	if (!k.lo_ifindex) {
		fprintf(stderr, "kernel: no lo interface\n");
		return 1;
	}
	if (dir_open(&k.d) || load_helpers(&k)) {
		fprintf(stderr, "kernel: loading programs failed: %s\n",
			strerror(errno));
		goto out;
	}
	if (o->argc == 1 &&
	    dir_obj_load(&k.d, o->argv[0], "candidate", &k.cand, &k.cand_fd))
		goto out;
	if (o->reference && !k.cand &&
	    dir_obj_load(&k.d, o->reference, "reference", &k.ref, &k.ref_fd))
		goto out;
	if (dir_seed(&k.d) || dir_service(&k.d, BENCH_VIP, BENCH_PORT,
					  IPPROTO_TCP, BENCH_SVC_ID)) {
		fprintf(stderr, "kernel: configuring the director: %s\n",
			strerror(errno));
		goto out;
	}

	jf = bench_json_open(o, &j);
	if (!jf)
		goto out;
	rm_json_u64(&j, "repeat", k.repeat);
	/* with a candidate, each row's baseline_ns is the built director's
	 * and director_ns the candidate's */
	if (k.cand)
		rm_json_str(&j, "candidate", o->argv[0]);
	rm_json_u64(&j, "rounds", o->rounds);
	rm_json_str(&j, "timing",
		    "kernel-reported duration (ns per run, whole ns), median "
		    "of interleaved rounds; wall_clock_ns adds the XDP "
		    "dispatcher update test_run does for repeat > 1");
	rm_json_bool(&j, "connection_table", k.d.conns_fd >= 0);
	rm_json_i64(&j, "bpf_jit_enable",
		    read_int_file("/proc/sys/net/core/bpf_jit_enable"));
	prog_json(&j, "director_prog", k.d.prog_fd);
	prog_json(&j, "baseline_prog", bpf_program__fd(k.bl->progs.bl_tx));
	printf("\n### Per-packet cost in the kernel (bpf_prog_test_run, repeat "
	       "%u, median [min-max] of %d interleaved rounds, ns/packet as "
	       "the kernel reports it: whole ns)\n\n",
	       k.repeat, o->rounds);
	if (k.cand)
		printf("Candidate %s against the built director: ratio = "
		       "candidate / director.\n\n| ring | path | flows | "
		       "director ns | candidate ns | ratio | harness floor ns "
		       "|\n",
		       o->argv[0]);
	else
		printf("| ring | path | flows | baseline ns | director ns | "
		       "ratio | harness floor ns |\n");
	printf("|---:|---|---:|---:|---:|---:|---:|\n");
	rm_json_arr_open(&j, "rings");

	for (int s = 0; s < nsizes; s++) {
		__u32 nodes = cfg[s][0], vnodes = cfg[s][1], id;
		int nrows = cfg[s][2];
		struct bench_ring br;
		int inner, err;
		__u8 mac[6];

		err = bench_ring(nodes, vnodes, &br);
		if (err) {
			fprintf(stderr, "kernel: ring: %s\n", strerror(-err));
			goto out;
		}
		for (id = 0; id < nodes && !err; id++) {
			bench_node_mac(id, mac);
			err = dir_node(&k.d, id, mac, bench_dir_mac,
				       k.lo_ifindex, BENCH_SVC_ID);
		}
		inner = err ? err : dir_ring_map(br.slots, br.nslots);
		if (inner < 0 || dir_ring_install(&k.d, BENCH_SVC_ID, inner)) {
			fprintf(stderr, "kernel: installing the ring: %s\n",
				strerror(inner < 0 ? -inner : errno));
			if (inner >= 0)
				close(inner);
			bench_ring_free(&br);
			goto out;
		}
		/* the outer map holds it; the 64k and 1M rings' fds are kept
		 * for their row in the same rounds */
		if (br.ring.n == 65536 && inner64 < 0)
			inner64 = inner;
		else if (br.ring.n == RM_MAX_RING_ENTRIES)
			inner1m = inner;
		else
			close(inner);
		err = conns_clear(&k);
		if (err) {
			fprintf(stderr, "kernel: clearing rm_conns: %s\n",
				strerror(-err));
			bench_ring_free(&br);
			goto out;
		}
		k.slots = br.slots;
		k.nslots = br.nslots;
		bench_size_label(br.ring.n, lbl, sizeof(lbl));

		/* rows[0] is the one row of a one-row ring */
		row_init(&k, &rows[nrows == 1 ? 1 : 0], "ring search (TCP SYN)",
			 P_SEARCH, false, BENCH_VIP, BENCH_TCP_SYN);
		row_init(&k, &rows[nrows == 1 ? 0 : 1], "ring search (TCP SYN)",
			 P_SEARCH, true, BENCH_VIP, BENCH_TCP_SYN);
		row_init(&k, &rows[2], "connection-table hit (TCP ACK)", P_HIT,
			 false, BENCH_VIP, BENCH_TCP_ACK);
		row_init(&k, &rows[3], "connection-table hit (TCP ACK)", P_HIT,
			 true, BENCH_VIP, BENCH_TCP_ACK);
		row_init(&k, &rows[4], "not a service (pass)", P_NOTSVC, false,
			 BENCH_NOT_VIP, BENCH_TCP_SYN);
		rm_json_obj_open(&j, NULL);
		rm_json_u64(&j, "entries", br.ring.n);
		rm_json_u64(&j, "nodes", nodes);
		rm_json_u64(&j, "vnodes", vnodes);
		rm_json_arr_open(&j, "rows");
		for (int r = 0; r < nrows; r++) {
			measure_row(&k, &rows[r]);
			if (!strncmp(rows[r].status, "FAILED", 6))
				failed++;
			print_row(&j, lbl, &rows[r]);
			if (rows[r].nvar > 3 && !rows[r].status[0] &&
			    nprobe < KB_MAX_SIZES) {
				snprintf(probe[nprobe].lbl,
					 sizeof(probe[nprobe].lbl), "%s", lbl);
				probe[nprobe++].row = rows[r];
			}
		}
		rm_json_arr_close(&j);
		rm_json_obj_close(&j);
		if (br.ring.n == 65536 && nrows == 5)
			memcpy(keep64, rows, sizeof(keep64));
		/* the chain at the 64k ring, or the last one of a quick run */
		if (!chain_lbl[0] && !k.cand &&
		    (br.ring.n == 65536 || (o->quick && s == nsizes - 1))) {
			failed += chain_measure(&k, chain_rows);
			snprintf(chain_lbl, sizeof(chain_lbl), "%s", lbl);
		}
		/* at the 64k ring (the last of a quick run): new flows
		 * against the design before the index, and every CPU at
		 * once */
		if (!ac_lbl[0] && !k.cand &&
		    (br.ring.n == 65536 || (o->quick && s == nsizes - 1))) {
			if (k.ref) {
				row_init_new_ref(&k, &new_ref);
				measure_row(&k, &new_ref);
				failed += !strncmp(new_ref.status, "FAILED", 6);
				new_ref_done = true;
			}
			failed += allcpu_part(&k, ac_res);
			snprintf(ac_lbl, sizeof(ac_lbl), "%s", lbl);
		}
		if (br.ring.n == RM_MAX_RING_ENTRIES && nrows == 1) {
			big_new = rows[0];
			big = &big_new;
		}
		if (br.ring.n == RM_MAX_RING_ENTRIES && inner64 >= 0 &&
		    inner1m >= 0 && !k.cand) {
			row_init_ring_pair(&k, &pair, inner64, &br64, inner1m,
					   &br);
			measure_row(&k, &pair);
			if (!strncmp(pair.status, "FAILED", 6))
				failed++;
			pair_done = true;
		}
		if (br.ring.n == 65536 && !br64.slots)
			br64 = br; /* freed at the end */
		else
			bench_ring_free(&br);
		k.slots = NULL;
	}
	rm_json_arr_close(&j);
	printf("\nratio = %s (medians). Harness floor: what "
	       "test_run costs around any program: an empty program (returns "
	       "XDP_TX) for one flow; tg_mix tail-calling the empty program "
	       "for 65,536 flows (tg_mix gives every run the next source port "
	       "and tail-calls the program measured).\n",
	       k.cand ? "candidate / director" : "director / baseline");

	if (chain_lbl[0])
		chain_print(&j, chain_lbl, chain_rows);
	if (pair_done)
		print_ring_pair(&j, &pair);
	if (new_ref_done)
		print_new_ref(&j, ac_lbl, &new_ref);
	if (ac_lbl[0])
		allcpu_print(&j, ac_lbl, ac_res);
	if (nprobe) {
		printf("\n### Established flows, 65,536 cycling: the director "
		       "vs a bare lookup of the same flows in its own table "
		       "(tg_conn_probe: the key, one bpf_map_lookup_elem, "
		       "nothing else), same rounds\n\n");
		printf("| ring | director ns | bare rm_conns lookup ns | "
		       "tg_mix alone ns | director - lookup ns |\n"
		       "|---:|---:|---:|---:|---:|\n");
		for (int i = 0; i < nprobe; i++) {
			const struct row *r = &probe[i].row;

			printf("| %s | %.0f [%.0f-%.0f] | %.0f [%.0f-%.0f] | "
			       "%.0f | %.0f |\n",
			       probe[i].lbl, r->st[1].med, r->st[1].min,
			       r->st[1].max, r->st[3].med, r->st[3].min,
			       r->st[3].max, r->st[2].med,
			       r->st[1].med - r->st[3].med);
		}
	}

	if (!k.cand) {
		ring_pair_target(o, &keep64[1], big, pair_done ? &pair : NULL);
		/* issue 23's, one block */
		new_flows_target(o, ac_lbl, &keep64[1],
				 new_ref_done ? &new_ref : NULL);
		if (ac_lbl[0])
			allcpu_targets(o, ac_res);
	}
	rc = failed ? 3 : 0;
out:
	if (jf)
		bench_json_close(jf, &j);
	if (br64.slots)
		bench_ring_free(&br64);
	if (inner64 >= 0)
		close(inner64);
	if (inner1m >= 0)
		close(inner1m);
	bpf_object__close(k.cand);
	bpf_object__close(k.ref);
	trafficgen_bpf__destroy(k.tg);
	baseline_bpf__destroy(k.bl);
	chain_close(&k);
	dir_close(&k.d);
	return rc;
}
