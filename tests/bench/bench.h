/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ringbench: one binary, one subcommand per part of `make bench`.
 *
 * Every subcommand prints markdown on stdout, writes its figures as one
 * JSON object to --json FILE and appends its target verdicts, one TSV line
 * each, to --targets FILE; scripts/bench.sh stitches the parts together.
 */
#ifndef RM_BENCH_H
#define RM_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <linux/types.h>
#include "util.h"
#include "json.h"

/* Options shared by every subcommand; main.c fills them. */
struct bench_opts {
	const char *json_path;	  /* --json FILE: this part's JSON object */
	const char *targets_path; /* --targets FILE: TSV verdicts, appended */
	int rounds;		  /* --rounds N: interleaved rounds, >= 5 */
	bool quick;		  /* --quick: smaller sizes, for smoke runs */
	const char *reference;	  /* --reference OBJ: kernel's old design */
	int argc;		  /* arguments after the options */
	char **argv;
};

/* A timing over rounds: median, min and max of per-round values. */
struct bench_stat {
	double med, min, max;
	int rounds;
};

/* Fixed seed of every ring the benchmarks build: results are repeatable. */
#define BENCH_SEED_K0 0x0706050403020100ULL
#define BENCH_SEED_K1 0x0f0e0d0c0b0a0908ULL

static inline __u64 bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* splitmix64: the benchmarks' only source of "random" numbers. */
static inline __u64 bench_rand(__u64 *state)
{
	return rm_splitmix64(state);
}

void bench_stat_of(const double *v, int n, struct bench_stat *s);
void bench_json_stat(struct rm_json *j, const char *key,
		     const struct bench_stat *s);
/* Opens opts->json_path (or /dev/null) as a JSON writer; NULL on error. */
FILE *bench_json_open(const struct bench_opts *o, struct rm_json *j);
void bench_json_close(FILE *f, struct rm_json *j);
/* One verdict line: name, target text, measured text, status, note.
 * status is "met", "missed" or "n/a". */
void bench_target(const struct bench_opts *o, const char *name,
		  const char *target, const char *measured, const char *status,
		  const char *note);
/* Pin the calling thread to one CPU (the last one): less migration noise. */
void bench_pin_cpu(void);
/* A human size label: 1024 -> "1k", 1048576 -> "1M". */
const char *bench_size_label(__u32 n, char *buf, size_t len);

int cmd_search(const struct bench_opts *o);
int cmd_quality(const struct bench_opts *o);
int cmd_kernel(const struct bench_opts *o);
int cmd_encap(const struct bench_opts *o);
int cmd_control(const struct bench_opts *o);
int cmd_live(const struct bench_opts *o);
int cmd_keys(const struct bench_opts *o);
int cmd_decap(const struct bench_opts *o);

#endif
