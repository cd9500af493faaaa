/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel part's rows on every CPU at once (allcpu.c): one pinned
 * thread per CPU, each on flows of its own, against the same threads one
 * at a time, interleaved in the same rounds. kernel.c calls it on the
 * ring it has installed.
 */
#ifndef RM_BENCH_ALLCPU_H
#define RM_BENCH_ALLCPU_H

#include "bench.h"
#include "director.h"

#define ALLCPU_ROWS 5

struct allcpu_env {
	const struct bench_opts *o;
	struct director *d;
	int mix_fd;  /* tg_mix_cpu: a source-port sequence per CPU */
	int seq_fd;  /* its tg_cpu_seq */
	int next_fd; /* tg_next, which the director is put in */
	const struct rm_slot *slots; /* the installed ring: expected owners */
	__u32 nslots;
	__u32 repeat, mix_base, mix_mask;
};

/* One row's result: status empty when measured. */
struct allcpu_row {
	const char *path;
	bool mixed;
	char status[160];
	int ncpu;
	struct bench_stat alone, together, eff_rounds;
	double efficiency;
};

/* Measures the rows on the ring installed now: the number FAILED. */
int allcpu_measure(const struct allcpu_env *e,
		   struct allcpu_row rows[ALLCPU_ROWS]);
/* Prints them and writes "all_cpus" into j (an open object). */
void allcpu_print(struct rm_json *j, const char *ring,
		  const struct allcpu_row rows[ALLCPU_ROWS]);
/* The scaling target of every row, one line each. */
void allcpu_targets(const struct bench_opts *o,
		    const struct allcpu_row rows[ALLCPU_ROWS]);

#endif
