// SPDX-License-Identifier: GPL-2.0
/*
 * Part 3: how even each scheme spreads the keyspace and how much of it
 * moves when one node joins or leaves. All figures are exact, none sampled:
 *
 *   ring     exact arcs (rm_ring_arcs) and exact moved keyspace between two
 *            rings (rm_ring_diff), over all 2^32 keys.
 *   Maglev   lookup table of M = 65537 slots populated as in Eisenbud et
 *            al., "Maglev", NSDI 2016 (section 3.4): each backend walks
 *            its own permutation offset + j * skip (mod M), offset and skip
 *            from two keyed hashes of its name; backends take turns
 *            claiming their next free slot until the table is full. Shares
 *            and movement are slot counts; a key owns slot hash % M.
 *   modulo   owner = hash % N. With a uniform 32-bit hash, key k's owner
 *            is k mod N; shares and movement are counted exactly over one
 *            period of the two moduli and scaled to 2^32.
 *
 * Removing a node removes the last one ("node-(N-1)"); adding adds
 * "node-N". Names, not positions, decide whether a key moved.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ringmaster/rm_hash.h>
#include "bench.h"
#include "ringfix.h"

#define KEYSPACE (1ULL << 32)
#define MAGLEV_M 65537u /* prime, as the paper requires */

struct evenness {
	double peak_to_mean; /* max share / mean share */
	double stddev;	     /* of shares, as a fraction of the keyspace */
	double cov;	     /* stddev / mean */
};

/* counts[i] of total units owned by node i of n. */
static void evenness_of(const __u64 *counts, __u32 n, double total,
			struct evenness *e)
{
	double mean = 1.0 / n, var = 0, peak = 0;

	for (__u32 i = 0; i < n; i++) {
		double s = (double)counts[i] / total;

		var += (s - mean) * (s - mean);
		if (s > peak)
			peak = s;
	}
	e->stddev = sqrt(var / n);
	e->peak_to_mean = peak / mean;
	e->cov = e->stddev / mean;
}

/* ---- consistent-hash ring ------------------------------------------- */

static int ring_of(__u32 first, __u32 count, __u32 vnodes, struct rm_ring *r,
		   double *ms)
{
	struct rm_node_spec *specs = bench_specs(first, count);
	struct rm_seed seed;
	__u64 t0;
	int err;

	if (!specs)
		return -ENOMEM;
	bench_seed(&seed);
	t0 = bench_now_ns();
	err = rm_ring_build(&seed, specs, count, vnodes, r);
	if (ms)
		*ms = (double)(bench_now_ns() - t0) / 1e6;
	free(specs);
	return err;
}

static int ring_moved(const struct rm_ring *a, const struct rm_ring *b,
		      double *share)
{
	struct rm_move *moves;
	size_t n_moves;
	__u64 moved;
	int err = rm_ring_diff(a, b, &moves, &n_moves, &moved);

	if (err)
		return err;
	free(moves);
	*share = (double)moved / (double)KEYSPACE;
	return 0;
}

/* ---- Maglev ---------------------------------------------------------- */

static __u64 name_hash(const char *name, __u64 k0, __u64 k1)
{
	struct rm_seed seed = {.k0 = k0, .k1 = k1};
	__u64 w[RM_NAME_MAX / 8];

	memset(w, 0, sizeof(w));
	strncpy((char *)w, name, RM_NAME_MAX - 1);
	return rm_siphash13(&seed, w, RM_NAME_MAX / 8, RM_NAME_MAX);
}

/* table[M] = backend id for backends "node-0000".. of ids 0..n-1. */
static int maglev_build(__u32 n, __u32 *table)
{
	__u32 *offset = calloc(n, sizeof(*offset));
	__u32 *skip = calloc(n, sizeof(*skip));
	__u32 *next = calloc(n, sizeof(*next));
	__u32 filled = 0, i;
	char name[RM_NAME_MAX];

	if (!offset || !skip || !next) {
		free(offset);
		free(skip);
		free(next);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		bench_node_name(name, sizeof(name), i);
		offset[i] =
		    name_hash(name, BENCH_SEED_K0, BENCH_SEED_K1) % MAGLEV_M;
		skip[i] = name_hash(name, ~BENCH_SEED_K0,
				    BENCH_SEED_K1 ^ 0x6d61676c6576ULL) %
			      (MAGLEV_M - 1) +
			  1;
	}
	for (i = 0; i < MAGLEV_M; i++)
		table[i] = ~0u;
	while (n) {
		for (i = 0; i < n; i++) {
			/* permutation[i][next[i]], skipping taken slots */
			__u32 c = (__u32)(((__u64)offset[i] +
					   (__u64)next[i] * skip[i]) %
					  MAGLEV_M);

			while (table[c] != ~0u) {
				next[i]++;
				c = (__u32)(((__u64)offset[i] +
					     (__u64)next[i] * skip[i]) %
					    MAGLEV_M);
			}
			table[c] = i;
			next[i]++;
			if (++filled == MAGLEV_M)
				goto done;
		}
	}
done:
	free(offset);
	free(skip);
	free(next);
	return 0;
}

static double table_moved(const __u32 *a, const __u32 *b)
{
	__u32 moved = 0;

	for (__u32 i = 0; i < MAGLEV_M; i++)
		moved += a[i] != b[i];
	return (double)moved / MAGLEV_M;
}

/* ---- modulo ----------------------------------------------------------- */

/* Keys of [0, 2^32) whose owner k mod a differs from k mod b; owners are
 * node ids, the same id naming the same node in both. Exact: the pattern
 * repeats every a * b keys. */
static double modulo_moved(__u32 a, __u32 b)
{
	__u64 period = (__u64)a * b, full, rem, in_period = 0, in_rem = 0;

	for (__u64 k = 0; k < period; k++)
		in_period += (k % a) != (k % b);
	full = KEYSPACE / period;
	rem = KEYSPACE % period;
	for (__u64 k = 0; k < rem; k++)
		in_rem += (k % a) != (k % b);
	return (double)(full * in_period + in_rem) / (double)KEYSPACE;
}

/* ---- report ------------------------------------------------------------ */

struct row {
	const char *scheme;
	__u32 n;
	char size[32]; /* vnodes or table size */
	struct evenness e;
	double add, rm;
	double build_ms;
	__u64 bytes;
};

static void print_row(struct rm_json *j, const struct row *r)
{
	printf("| %s | %u | %s | %.4f | %.3g%% (%.2f%% of mean) | %.3f%% "
	       "(%.2fx ideal) | %.3f%% (%.2fx ideal) | %.2f | %llu |\n",
	       r->scheme, r->n, r->size, r->e.peak_to_mean, r->e.stddev * 100,
	       r->e.cov * 100, r->add * 100, r->add * (r->n + 1), r->rm * 100,
	       r->rm * r->n, r->build_ms, (unsigned long long)r->bytes);
	rm_json_obj_open(j, NULL);
	rm_json_str(j, "scheme", r->scheme);
	rm_json_u64(j, "nodes", r->n);
	rm_json_str(j, "size", r->size);
	rm_json_num(j, "peak_to_mean", r->e.peak_to_mean);
	rm_json_num(j, "share_stddev", r->e.stddev);
	rm_json_num(j, "share_cov", r->e.cov);
	rm_json_num(j, "moved_on_add", r->add);
	rm_json_num(j, "moved_on_add_ideal", 1.0 / (r->n + 1));
	rm_json_num(j, "moved_on_remove", r->rm);
	rm_json_num(j, "moved_on_remove_ideal", 1.0 / r->n);
	rm_json_num(j, "build_ms", r->build_ms);
	rm_json_u64(j, "bytes", r->bytes);
	rm_json_obj_close(j);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int ring_row(__u32 n, __u32 vnodes, struct row *row)
{
	struct rm_ring base, add, rm;
	double ms[3];
	__u64 *arcs;
	int err;

	memset(row, 0, sizeof(*row));
	row->scheme = "ring";
	row->n = n;
	snprintf(row->size, sizeof(row->size), "%u vnodes", vnodes);
	/* build time: median of three builds of the same ring */
	for (int k = 0; k < 3; k++) {
		err = ring_of(0, n, vnodes, &base, &ms[k]);
		if (err)
			return err;
		if (k < 2)
			rm_ring_free(&base);
	}
	qsort(ms, 3, sizeof(ms[0]), cmp_d);
	row->build_ms = ms[1];
	row->bytes = (__u64)rm_ring_nslots(&base) * sizeof(struct rm_slot);

	arcs = calloc(n, sizeof(*arcs));
	if (!arcs) {
		rm_ring_free(&base);
		return -ENOMEM;
	}
	rm_ring_arcs(&base, arcs);
	evenness_of(arcs, n, (double)KEYSPACE, &row->e);
	free(arcs);

	err = ring_of(0, n + 1, vnodes, &add, NULL);
	if (!err) {
		err = ring_moved(&base, &add, &row->add);
		rm_ring_free(&add);
	}
	if (!err) {
		err = ring_of(0, n - 1, vnodes, &rm, NULL);
		if (!err) {
			err = ring_moved(&base, &rm, &row->rm);
			rm_ring_free(&rm);
		}
	}
	rm_ring_free(&base);
	return err;
}

static int maglev_row(__u32 n, struct row *row)
{
	__u32 *t = malloc(MAGLEV_M * sizeof(*t));
	__u32 *t2 = malloc(MAGLEV_M * sizeof(*t2));
	__u64 counts[RM_MAX_NODES_PER_RING] = {0};
	double ms[3];
	int err = -ENOMEM;

	memset(row, 0, sizeof(*row));
	row->scheme = "maglev";
	row->n = n;
	snprintf(row->size, sizeof(row->size), "M = %u", MAGLEV_M);
	if (!t || !t2)
		goto out;
	for (int k = 0; k < 3; k++) {
		__u64 t0 = bench_now_ns();

		err = maglev_build(n, t);
		if (err)
			goto out;
		ms[k] = (double)(bench_now_ns() - t0) / 1e6;
	}
	qsort(ms, 3, sizeof(ms[0]), cmp_d);
	row->build_ms = ms[1];
	row->bytes = (__u64)MAGLEV_M * sizeof(__u32);
	for (__u32 i = 0; i < MAGLEV_M; i++)
		counts[t[i]]++;
	evenness_of(counts, n, MAGLEV_M, &row->e);
	err = maglev_build(n + 1, t2);
	if (err)
		goto out;
	row->add = table_moved(t, t2);
	err = maglev_build(n - 1, t2);
	if (err)
		goto out;
	row->rm = table_moved(t, t2);
out:
	free(t);
	free(t2);
	return err;
}

static void modulo_row(__u32 n, struct row *row)
{
	__u64 counts[RM_MAX_NODES_PER_RING];

	memset(row, 0, sizeof(*row));
	row->scheme = "modulo";
	row->n = n;
	snprintf(row->size, sizeof(row->size), "hash %% %u", n);
	for (__u32 i = 0; i < n; i++)
		counts[i] = KEYSPACE / n + (i < KEYSPACE % n);
	evenness_of(counts, n, (double)KEYSPACE, &row->e);
	row->add = modulo_moved(n, n + 1);
	row->rm = modulo_moved(n, n - 1);
	row->bytes = (__u64)n * sizeof(__u32);
}

int cmd_quality(const struct bench_opts *o)
{
	static const __u32 nodes[] = {3, 16, 64, 256};
	static const __u32 vnodes[] = {100, 300, 1000};
	struct rm_json j;
	struct row row;
	FILE *jf;
	int err;

	jf = bench_json_open(o, &j);
	if (!jf)
		return 1;
	printf("\n### Ring quality vs Maglev vs modulo (exact over the 2^32 "
	       "keyspace; add = node-N joins, remove = node-(N-1) leaves)\n\n");
	printf("| scheme | N | size | peak / mean share | stddev of shares "
	       "| moved on add (ideal 1/(N+1)) | moved on remove (ideal 1/N) "
	       "| build ms | bytes |\n");
	printf("|---|---:|---|---:|---:|---:|---:|---:|---:|\n");
	rm_json_str(&j, "keyspace", "2^32, exact");
	rm_json_u64(&j, "maglev_m", MAGLEV_M);
	rm_json_arr_open(&j, "rows");
	for (size_t a = 0; a < sizeof(nodes) / sizeof(nodes[0]); a++) {
		__u32 n = nodes[a];

		for (size_t b = 0; b < sizeof(vnodes) / sizeof(vnodes[0]);
		     b++) {
			if (o->quick && vnodes[b] != 100)
				continue;
			err = ring_row(n, vnodes[b], &row);
			if (err) {
				fprintf(stderr, "quality: ring %ux%u: %s\n", n,
					vnodes[b], strerror(-err));
				goto fail;
			}
			print_row(&j, &row);
		}
		err = maglev_row(n, &row);
		if (err) {
			fprintf(stderr, "quality: maglev %u: %s\n", n,
				strerror(-err));
			goto fail;
		}
		print_row(&j, &row);
		modulo_row(n, &row);
		print_row(&j, &row);
	}
	rm_json_arr_close(&j);
	printf("\nstddev is of the per-node share of the keyspace (mean 1/N); "
	       "ideal movement is the joining node's or the leaving node's "
	       "fair share; bytes: ring = encoded slots x 8 (header, index, "
	       "entries), Maglev = M x 4, modulo = N x 4.\n");
	bench_json_close(jf, &j);
	return 0;
fail:
	rm_json_arr_close(&j);
	bench_json_close(jf, &j);
	return 1;
}
