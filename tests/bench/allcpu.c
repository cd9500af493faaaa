// SPDX-License-Identifier: GPL-2.0
/*
 * Every CPU at once: the kernel part's rows (ring search and table hit,
 * one flow and 65,536 flows, a packet not for a service) run by one
 * thread per CPU, each pinned to its CPU (bpf_prog_test_run runs the
 * program on the calling CPU) and each on flows of its own: its own
 * client address, and on the 65,536-flow rows tg_mix_cpu's per-CPU port
 * sequence. Every round runs each thread alone, one after the other, and
 * all of them together (the order swapped every other round), so
 *
 *   efficiency = sum of the CPUs' ns alone / sum of their ns together
 *
 * per round, median over rounds: 1.0 when nothing the CPUs share slows
 * them down (a written cache line, a lock, memory bandwidth).
 *
 * The same checks as the single-CPU rows, per thread and per run: the
 * verdict, the output frame (the owner's MACs of the thread's last flow)
 * and the director's counters over all CPUs: the row's outcome and, on
 * the table-hit rows, conn-hit moved by exactly threads x repeat.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "allcpu.h"

#define AC_MAX_CPUS 64
#define AC_MAX_ROUNDS 101
/* client addresses of this part: BENCH_CLIENT_IP + AC_CLIENT_OFF + 2 *
 * thread (+ 1 on the SYN rows, new connections as SYNs are) */
#define AC_CLIENT_OFF 0x1000u

enum ac_path { AC_SEARCH, AC_HIT, AC_NOTSVC };

static const struct {
	const char *name;
	enum ac_path path;
	bool mixed;
} ac_rows[ALLCPU_ROWS] = {
    {"ring search (TCP SYN)", AC_SEARCH, false},
    {"ring search (TCP SYN)", AC_SEARCH, true},
    {"connection-table hit (TCP ACK)", AC_HIT, false},
    {"connection-table hit (TCP ACK)", AC_HIT, true},
    {"not a service (pass)", AC_NOTSVC, false},
};

struct worker {
	pthread_t th;
	int cpu;
	pthread_barrier_t *start; /* NULL: runs alone */
	int fd;
	__u8 in[64];
	size_t len;
	__u32 repeat;
	/* results */
	int err;
	__u32 retval, out_len;
	__u8 out[64];
	double ns;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	w->err = sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
	if (w->start)
		pthread_barrier_wait(w->start);
	if (!w->err) {
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = w->in,
			    .data_size_in = w->len, .data_out = w->out,
			    .data_size_out = sizeof(w->out),
			    .repeat = w->repeat);

		w->err = bpf_prog_test_run_opts(w->fd, &opts) ? -errno : 0;
		w->retval = opts.retval;
		w->out_len = opts.data_size_out;
		w->ns = opts.duration;
	}
	return NULL;
}

/* Run workers ws[0..n) at once (together) or one after the other. */
static int run_workers(struct worker *ws, int n, bool together)
{
	pthread_barrier_t bar;
	int err = 0, started = 0;

	if (together && pthread_barrier_init(&bar, NULL, n))
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		ws[i].start = together ? &bar : NULL;
		if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i])) {
			err = -EAGAIN;
			break;
		}
		started++;
		if (!together)
			pthread_join(ws[i].th, NULL);
	}
	if (together) {
		/* a thread that could not start would hold the rest at the
		 * barrier forever: cannot happen past the first, as the
		 * barrier counts n */
		for (int i = 0; i < started; i++)
			pthread_join(ws[i].th, NULL);
		pthread_barrier_destroy(&bar);
	}
	return err;
}

static int seq_reset(const struct allcpu_env *e)
{
	int ncpus = libbpf_num_possible_cpus();
	__u64 *zeros = calloc(ncpus > 0 ? ncpus : 1, sizeof(*zeros));
	__u32 zero = 0;
	int err;

	if (!zeros)
		return -ENOMEM;
	err = bpf_map_update_elem(e->seq_fd, &zero, zeros, BPF_ANY) ? -errno
								    : 0;
	free(zeros);
	return err;
}

/* The frame thread i sends on row r (TCP flags given). */
static size_t row_frame(int r, int i, __u8 flags, __u8 *buf)
{
	__u32 saddr = BENCH_CLIENT_IP + AC_CLIENT_OFF + 2 * i +
		      (ac_rows[r].path == AC_HIT ? 0 : 1);

	return bench_frame(buf, bench_dir_mac, bench_client_mac, saddr,
			   ac_rows[r].path == AC_NOTSVC ? BENCH_NOT_VIP
							: BENCH_VIP,
			   40000, BENCH_PORT, IPPROTO_TCP, flags);
}

/* One run of n workers checked as kernel.c checks its rows. */
static int run_checked(const struct allcpu_env *e, int r, struct worker *ws,
		       int n, bool together, char *why, size_t wlen)
{
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	int want = ac_rows[r].path == AC_NOTSVC ? RM_CNT_PASS_NOT_SERVICE
						: RM_CNT_FWD_TX;
	__u64 runs = (__u64)n * ws[0].repeat;
	int err;

	if (ac_rows[r].mixed && (err = seq_reset(e))) {
		snprintf(why, wlen, "tg_cpu_seq: %s", strerror(-err));
		return err;
	}
	if (dir_counters(e->d, before)) {
		snprintf(why, wlen, "counters: %s", strerror(errno));
		return -1;
	}
	err = run_workers(ws, n, together);
	if (err || dir_counters(e->d, after)) {
		snprintf(why, wlen, "threads or counters: %s",
			 strerror(err ? -err : errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct worker *w = &ws[i];
		__u32 exp_ret = want == RM_CNT_FWD_TX ? XDP_TX : XDP_PASS, id;
		__u8 exp[64];

		if (w->err) {
			snprintf(why, wlen, "CPU %d: test_run: %s", w->cpu,
				 strerror(-w->err));
			return -1;
		}
		memcpy(exp, w->in, w->len);
		if (ac_rows[r].mixed)
			bench_frame_set_sport(
			    exp, (__u16)(e->mix_base +
					 ((w->repeat - 1) & e->mix_mask)));
		if (exp_ret == XDP_TX) {
			if (bench_frame_owner(exp, e->slots, e->nslots, &id)) {
				snprintf(why, wlen, "no owner in userspace");
				return -1;
			}
			bench_node_mac(id, exp);
			memcpy(exp + 6, bench_dir_mac, 6);
		}
		if (w->retval != exp_ret || w->out_len != w->len ||
		    memcmp(w->out, exp, w->len)) {
			snprintf(why, wlen,
				 "CPU %d: verdict %u (expected %u) or output "
				 "frame not the expected one",
				 w->cpu, w->retval, exp_ret);
			return -1;
		}
	}
	return dir_counters_moved(before, after, want, runs,
				  ac_rows[r].path == AC_HIT	 ? (long long)runs
				  : ac_rows[r].path == AC_SEARCH ? 0
								 : -1,
				  why, wlen);
}

/* Table-hit rows: each thread's flows into the table from its own CPU
 * (each CPU's LRU list holds only max_entries / ncpus): its SYNs, then
 * its ACKs. */
static int prime(const struct allcpu_env *e, int r, struct worker *ws, int n,
		 char *why, size_t wlen)
{
	struct worker p[AC_MAX_CPUS];
	__u32 runs = ac_rows[r].mixed ? e->mix_mask + 1 : 1;

	for (int pass = 0; pass < 2; pass++) {
		if (ac_rows[r].mixed && seq_reset(e))
			goto fail;
		for (int i = 0; i < n; i++) {
			p[i] = ws[i];
			p[i].repeat = runs;
			memcpy(p[i].in, ws[i].in, ws[i].len);
			if (!pass)
				p[i].in[ETH_HLEN + 20 + 13] = BENCH_TCP_SYN;
		}
		if (run_workers(p, n, false))
			goto fail;
		for (int i = 0; i < n; i++)
			if (p[i].err)
				goto fail;
	}
	return 0;
fail:
	snprintf(why, wlen, "priming the connection table failed");
	return -1;
}

static void measure_row(const struct allcpu_env *e, int r, const int *cpus,
			int n, struct allcpu_row *row)
{
	static double alone[AC_MAX_CPUS][AC_MAX_ROUNDS],
	    together[AC_MAX_CPUS][AC_MAX_ROUNDS];
	double a_sum[AC_MAX_ROUNDS], t_sum[AC_MAX_ROUNDS], eff[AC_MAX_ROUNDS];
	struct worker ws[AC_MAX_CPUS];
	const int rounds = e->o->rounds;
	char why[128] = "";

	memset(row, 0, sizeof(*row));
	row->path = ac_rows[r].name;
	row->mixed = ac_rows[r].mixed;
	row->ncpu = n;
	memset(ws, 0, sizeof(ws));
	for (int i = 0; i < n; i++) {
		ws[i].cpu = cpus[i];
		ws[i].fd = ac_rows[r].mixed ? e->mix_fd : e->d->prog_fd;
		ws[i].len = row_frame(r, i,
				      ac_rows[r].path == AC_HIT ? BENCH_TCP_ACK
								: BENCH_TCP_SYN,
				      ws[i].in);
		ws[i].repeat = e->repeat / 10;
	}
	if (ac_rows[r].path == AC_HIT && prime(e, r, ws, n, why, sizeof(why)))
		goto fail;
	/* warm-up: one unmeasured run together */
	if (run_checked(e, r, ws, n, true, why, sizeof(why)))
		goto fail;
	for (int i = 0; i < n; i++)
		ws[i].repeat = e->repeat;
	for (int rd = 0; rd < rounds; rd++) {
		for (int k = 0; k < 2; k++) {
			bool tog = (rd + k) % 2;

			if (run_checked(e, r, ws, n, tog, why, sizeof(why)))
				goto fail;
			for (int i = 0; i < n; i++)
				(tog ? together : alone)[i][rd] = ws[i].ns;
		}
		a_sum[rd] = t_sum[rd] = 0;
		for (int i = 0; i < n; i++) {
			a_sum[rd] += alone[i][rd] / n;
			t_sum[rd] += together[i][rd] / n;
		}
		eff[rd] = t_sum[rd] > 0 ? a_sum[rd] / t_sum[rd] : 0;
	}
	bench_stat_of(a_sum, rounds, &row->alone);
	bench_stat_of(t_sum, rounds, &row->together);
	bench_stat_of(eff, rounds, &row->eff_rounds);
	row->efficiency = row->eff_rounds.med;
	return;
fail:
	snprintf(row->status, sizeof(row->status),
		 "FAILED: path not verified: %s", why);
}

/* The online CPUs (/sys/devices/system/cpu/online: "0-3,6"), up to
 * AC_MAX_CPUS: the process itself is pinned to one by kernel.c. */
static int online_cpus(int *cpus)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	int n = 0, lo, hi;
	char sep;

	if (!f)
		return -errno;
	while (n < AC_MAX_CPUS && fscanf(f, "%d", &lo) == 1) {
		hi = lo;
		sep = (char)fgetc(f);
		if (sep == '-') {
			if (fscanf(f, "%d", &hi) != 1)
				break;
			sep = (char)fgetc(f);
		}
		for (int c = lo; c <= hi && n < AC_MAX_CPUS; c++)
			cpus[n++] = c;
		if (sep != ',')
			break;
	}
	fclose(f);
	return n;
}

int allcpu_measure(const struct allcpu_env *e,
		   struct allcpu_row rows[ALLCPU_ROWS])
{
	int cpus[AC_MAX_CPUS], n = online_cpus(cpus), failed = 0;
	__u32 zero = 0;

	for (int r = 0; r < ALLCPU_ROWS; r++) {
		if (n < 1 || bpf_map_update_elem(e->next_fd, &zero,
						 &e->d->prog_fd, BPF_ANY)) {
			memset(&rows[r], 0, sizeof(rows[r]));
			rows[r].path = ac_rows[r].name;
			rows[r].mixed = ac_rows[r].mixed;
			snprintf(rows[r].status, sizeof(rows[r].status),
				 "FAILED: no online CPUs or tg_next: %s",
				 strerror(n < 0 ? -n : errno));
		} else {
			measure_row(e, r, cpus, n, &rows[r]);
		}
		failed += !!rows[r].status[0];
	}
	return failed;
}

void allcpu_print(struct rm_json *j, const char *ring,
		  const struct allcpu_row rows[ALLCPU_ROWS])
{
	int n = rows[0].ncpu;

	printf("\n### Every CPU at once, ring %s: one pinned thread per CPU "
	       "(%d), flows of its own, alone one after the other and all "
	       "together in the same rounds; efficiency = ns alone / ns "
	       "together, per round, median\n\n",
	       ring, n);
	printf("| path | flows per CPU | one CPU ns | all CPUs, ns per CPU | "
	       "efficiency | per round |\n|---|---:|---:|---:|---:|---|\n");
	rm_json_obj_open(j, "all_cpus");
	rm_json_str(j, "ring", ring);
	rm_json_i64(j, "cpus", n);
	rm_json_str(j, "efficiency",
		    "per round: mean ns of the threads alone / mean ns of the "
		    "same threads together; median over rounds");
	rm_json_arr_open(j, "rows");
	for (int r = 0; r < ALLCPU_ROWS; r++) {
		const struct allcpu_row *row = &rows[r];
		const char *flows = row->mixed ? "65,536" : "1";

		rm_json_obj_open(j, NULL);
		rm_json_str(j, "path", row->path);
		rm_json_u64(j, "flows_per_cpu", row->mixed ? 65536 : 1);
		rm_json_str(j, "status", row->status[0] ? row->status : "ok");
		if (row->status[0]) {
			printf("| %s | %s | %s | | | |\n", row->path, flows,
			       row->status);
		} else {
			printf("| %s | %s | %.0f [%.0f-%.0f] | %.0f [%.0f-%.0f] "
			       "| %.2f | %.2f-%.2f |\n",
			       row->path, flows, row->alone.med, row->alone.min,
			       row->alone.max, row->together.med,
			       row->together.min, row->together.max,
			       row->efficiency, row->eff_rounds.min,
			       row->eff_rounds.max);
			bench_json_stat(j, "one_cpu_ns", &row->alone);
			bench_json_stat(j, "all_cpus_ns_per_cpu", &row->together);
			rm_json_num(j, "efficiency", row->efficiency);
			bench_json_stat(j, "efficiency_per_round",
					&row->eff_rounds);
		}
		rm_json_obj_close(j);
	}
	rm_json_arr_close(j);
	rm_json_obj_close(j);
}

void allcpu_targets(const struct bench_opts *o,
		    const struct allcpu_row rows[ALLCPU_ROWS])
{
	for (int r = 0; r < ALLCPU_ROWS; r++) {
		const struct allcpu_row *row = &rows[r];
		char name[128], meas[160];

		if (!row->path)
			return;
		snprintf(name, sizeof(name), "every CPU at once: %s, %s flow%s",
			 row->path, row->mixed ? "65,536" : "1",
			 row->mixed ? "s" : "");
		if (row->status[0]) {
			bench_target(o, name, ">= 0.90 efficiency", row->status,
				     "n/a", "");
			continue;
		}
		snprintf(meas, sizeof(meas),
			 "%.2f (%.0f ns alone, %.0f ns on each of %d CPUs)",
			 row->efficiency, row->alone.med, row->together.med,
			 row->ncpu);
		bench_target(o, name, ">= 0.90 efficiency", meas,
			     row->efficiency >= 0.9 ? "met" : "missed",
			     "per round min-max in the JSON");
	}
}
