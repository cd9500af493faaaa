// SPDX-License-Identifier: GPL-2.0
/*
 * Part 2: userspace search cost with random keys.
 *
 * Rings of 1k..1M entries, each searched for the same precomputed random
 * keys (4M of them, 16 MiB: far more than any cache level holds, read in
 * order so the prefetcher hides them) with rm_ring_lookup, the kernel's
 * indexed search, and with a plain lower-bound binary search over the same
 * encoded entries. One round times every (ring, method) pair once, in the
 * same order; the figure is the median over rounds, with min and max.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "bench.h"
#include "ringfix.h"

struct search_ring {
	__u32 nodes, vnodes;
	struct bench_ring r;
	struct bench_ring huge; /* same slots on 2 MiB pages, if granted */
	__u64 huge_kb;		/* AnonHugePages backing huge.slots */
	double build_ms;
	double *idx_ns, *bin_ns, *huge_ns; /* per round */
};

#define HUGE_SZ (2u << 20)

/* kB of transparent huge pages backing the mapping that holds p. */
static __u64 thp_kb(const void *p)
{
	unsigned long lo, hi, kb;
	bool in = false;
	char line[256];
	__u64 res = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1) {
			res = kb;
			break;
		}
	}
	fclose(f);
	return res;
}

/* A copy of r's slots on transparent huge pages: the TLB-miss-free
 * variant, to tell cache misses from TLB misses. The kernel's array
 * maps sit on 4 KiB vmalloc pages, like the default variant. */
static int huge_copy(const struct bench_ring *r, struct bench_ring *h)
{
	size_t sz = (size_t)r->nslots * sizeof(*r->slots);
	size_t alloc = (sz + HUGE_SZ - 1) / HUGE_SZ * HUGE_SZ;
	void *p = NULL;

	memset(h, 0, sizeof(*h));
	if (posix_memalign(&p, HUGE_SZ, alloc))
		return -ENOMEM;
	madvise(p, alloc, MADV_HUGEPAGE);
	memcpy(p, r->slots, sz);
	h->slots = p;
	h->nslots = r->nslots;
	return 0;
}

/* Plain lower bound over the encoded entries, same header checks and
 * same wrap as the indexed search, no index. Not inlined, like
 * rm_ring_lookup, so both pay one call. */
__attribute__((noinline)) static int
plain_lookup(const struct rm_slot *slots, __u32 nslots, __u32 key, __u32 *id)
{
	__u32 n, base, lo, hi;

	if (nslots < 1)
		return -1;
	n = slots[0].a;
	if (n == 0)
		return -1;
	base = 1 + RM_RING_IDX_SLOTS(RM_RING_HDR_BITS(slots[0].b) & 31);
	if (base + (n + 1) / 2 > nslots)
		return -1;
	lo = 0;
	hi = n;
	while (lo < hi) {
		__u32 mid = lo + ((hi - lo) >> 1);

		if (RM_ENTRY_POINT(&slots[base + (mid >> 1)], mid) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= n)
		lo = 0;
	*id = RM_ENTRY_NODE(&slots[base + (lo >> 1)], lo);
	return 0;
}

static volatile __u64 sink;

static double time_indexed(const struct bench_ring *r, const __u32 *keys,
			   size_t nkeys)
{
	__u64 t0, t1, acc = 0;
	__u32 id = 0;

	t0 = bench_now_ns();
	for (size_t i = 0; i < nkeys; i++) {
		rm_ring_lookup(r->slots, r->nslots, keys[i], &id);
		acc += id;
	}
	t1 = bench_now_ns();
	sink += acc;
	return (double)(t1 - t0) / (double)nkeys;
}

static double time_plain(const struct bench_ring *r, const __u32 *keys,
			 size_t nkeys)
{
	__u64 t0, t1, acc = 0;
	__u32 id = 0;

	t0 = bench_now_ns();
	for (size_t i = 0; i < nkeys; i++) {
		plain_lookup(r->slots, r->nslots, keys[i], &id);
		acc += id;
	}
	t1 = bench_now_ns();
	sink += acc;
	return (double)(t1 - t0) / (double)nkeys;
}

/* Both searches must name the same owner for every key checked. */
static int check_agree(const struct bench_ring *r, const __u32 *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		__u32 a = ~0u, b = ~0u;

		if (rm_ring_lookup(r->slots, r->nslots, keys[i], &a) ||
		    plain_lookup(r->slots, r->nslots, keys[i], &b) || a != b) {
			fprintf(stderr,
				"search: owners differ for key %#x: %u vs %u\n",
				keys[i], a, b);
			return -1;
		}
	}
	return 0;
}

int cmd_search(const struct bench_opts *o)
{
	static const __u32 cfg[][2] = {
	    /* nodes, vnodes: entries = nodes * vnodes */
	    {4, 256}, {16, 1024}, {64, 1024}, {256, 1024}, {1024, 1024},
	};
	const int nr = sizeof(cfg) / sizeof(cfg[0]);
	size_t nkeys = o->quick ? (1u << 18) : (4u << 20);
	struct search_ring rings[sizeof(cfg) / sizeof(cfg[0])];
	struct bench_stat si, sb, sh, ratio_idx, ratio_bin, ratio_huge;
	double *ri = NULL, *rb = NULL, *rh = NULL;
	__u64 rs = 0x5eed5eed;
	__u32 *keys = NULL;
	struct rm_json j;
	int i, k, rc = 1;
	char lbl[16];
	FILE *jf;

	memset(rings, 0, sizeof(rings));
	bench_pin_cpu();
	keys = malloc(nkeys * sizeof(*keys));
	ri = calloc(o->rounds, sizeof(*ri));
	rb = calloc(o->rounds, sizeof(*rb));
	rh = calloc(o->rounds, sizeof(*rh));
	if (!keys || !ri || !rb || !rh)
		goto out;
	for (size_t n = 0; n < nkeys; n++)
		keys[n] = (__u32)bench_rand(&rs);

	for (i = 0; i < nr; i++) {
		struct search_ring *s = &rings[i];
		__u64 t0 = bench_now_ns();
		int err;

		s->nodes = cfg[i][0];
		s->vnodes = cfg[i][1];
		err = bench_ring(s->nodes, s->vnodes, &s->r);
		if (err) {
			fprintf(stderr, "search: ring %ux%u: %s\n", s->nodes,
				s->vnodes, strerror(-err));
			goto out;
		}
		s->build_ms = (double)(bench_now_ns() - t0) / 1e6;
		s->idx_ns = calloc(o->rounds, sizeof(double));
		s->bin_ns = calloc(o->rounds, sizeof(double));
		s->huge_ns = calloc(o->rounds, sizeof(double));
		if (!s->idx_ns || !s->bin_ns || !s->huge_ns ||
		    huge_copy(&s->r, &s->huge))
			goto out;
		s->huge_kb = thp_kb(s->huge.slots);
		if (check_agree(&s->r, keys, nkeys < 200000 ? nkeys : 200000))
			goto out;
		/* warm: fault the pages in, fill the caches once */
		time_indexed(&s->r, keys, nkeys / 8);
		time_plain(&s->r, keys, nkeys / 8);
		time_indexed(&s->huge, keys, nkeys / 8);
	}

	/* interleaved rounds: every ring and method once per round; the
	 * method order alternates so neither always runs second */
	for (k = 0; k < o->rounds; k++)
		for (i = 0; i < nr; i++) {
			struct search_ring *s = &rings[i];

			if (k % 2 == 0) {
				s->idx_ns[k] = time_indexed(&s->r, keys, nkeys);
				s->bin_ns[k] = time_plain(&s->r, keys, nkeys);
				s->huge_ns[k] =
				    time_indexed(&s->huge, keys, nkeys);
			} else {
				s->huge_ns[k] =
				    time_indexed(&s->huge, keys, nkeys);
				s->bin_ns[k] = time_plain(&s->r, keys, nkeys);
				s->idx_ns[k] = time_indexed(&s->r, keys, nkeys);
			}
		}

	jf = bench_json_open(o, &j);
	if (!jf)
		goto out;
	printf("\n### Userspace ring search, random keys (%zu keys per round, "
	       "%d rounds, one CPU)\n\n",
	       nkeys, o->rounds);
	printf("| ring entries | nodes x vnodes | encoded bytes | build ms | "
	       "indexed search ns (median [min-max]) | plain binary search ns "
	       "| indexed / plain | indexed, 2 MiB pages (diagnostic) |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	rm_json_u64(&j, "keys_per_round", nkeys);
	rm_json_str(&j, "method_indexed", "rm_ring_lookup (rm_search.h)");
	rm_json_str(&j, "method_plain",
		    "lower-bound binary search over the same encoded entries");
	rm_json_arr_open(&j, "rings");
	for (i = 0; i < nr; i++) {
		struct search_ring *s = &rings[i];

		bench_stat_of(s->idx_ns, o->rounds, &si);
		bench_stat_of(s->bin_ns, o->rounds, &sb);
		bench_stat_of(s->huge_ns, o->rounds, &sh);
		printf("| %s | %u x %u | %zu | %.1f | %.2f [%.2f-%.2f] | %.2f "
		       "[%.2f-%.2f] | %.2f | %.2f [%.2f-%.2f], %llu kB THP |\n",
		       bench_size_label(s->r.ring.n, lbl, sizeof(lbl)),
		       s->nodes, s->vnodes, (size_t)s->r.nslots * 8,
		       s->build_ms, si.med, si.min, si.max, sb.med, sb.min,
		       sb.max, si.med / sb.med, sh.med, sh.min, sh.max,
		       (unsigned long long)s->huge_kb);
		rm_json_obj_open(&j, NULL);
		rm_json_u64(&j, "entries", s->r.ring.n);
		rm_json_u64(&j, "nodes", s->nodes);
		rm_json_u64(&j, "vnodes", s->vnodes);
		rm_json_u64(&j, "index_bits", s->r.slots[0].b);
		rm_json_u64(&j, "encoded_bytes", (__u64)s->r.nslots * 8);
		rm_json_num(&j, "build_ms", s->build_ms);
		bench_json_stat(&j, "indexed_ns", &si);
		bench_json_stat(&j, "plain_ns", &sb);
		bench_json_stat(&j, "indexed_hugepage_ns", &sh);
		rm_json_u64(&j, "hugepage_kb", s->huge_kb);
		rm_json_obj_close(&j);
	}
	rm_json_arr_close(&j);

	/* 1M / 1k, per round (both sizes ran in the same round) */
	for (k = 0; k < o->rounds; k++) {
		ri[k] = rings[nr - 1].idx_ns[k] / rings[0].idx_ns[k];
		rb[k] = rings[nr - 1].bin_ns[k] / rings[0].bin_ns[k];
		rh[k] = rings[nr - 1].huge_ns[k] / rings[0].huge_ns[k];
	}
	bench_stat_of(ri, o->rounds, &ratio_idx);
	bench_stat_of(rb, o->rounds, &ratio_bin);
	bench_stat_of(rh, o->rounds, &ratio_huge);
	bench_stat_of(rings[nr - 1].idx_ns, o->rounds, &si);
	bench_stat_of(rings[0].idx_ns, o->rounds, &sb);
	{
		double r = si.med / sb.med;
		char meas[96], note[160];

		printf(
		    "\nratio %s/%s indexed: %.2fx (per-round %.2f-%.2f); "
		    "plain binary search: %.2fx; indexed on 2 MiB pages: "
		    "%.2fx\n",
		    bench_size_label(rings[nr - 1].r.ring.n, lbl, sizeof(lbl)),
		    "1k", r, ratio_idx.min, ratio_idx.max, ratio_bin.med,
		    ratio_huge.med);
		rm_json_obj_open(&j, "ratio_largest_smallest");
		rm_json_num(&j, "indexed", r);
		rm_json_num(&j, "indexed_best_rounds", si.min / sb.min);
		bench_json_stat(&j, "indexed_per_round", &ratio_idx);
		bench_json_stat(&j, "plain_per_round", &ratio_bin);
		bench_json_stat(&j, "indexed_hugepage_per_round", &ratio_huge);
		rm_json_obj_close(&j);
		snprintf(meas, sizeof(meas), "%.2fx (%.2f / %.2f ns)", r,
			 si.med, sb.med);
		snprintf(note, sizeof(note),
			 "best rounds: %.2fx; plain binary search over the "
			 "same points: %.2fx; indexed on 2 MiB pages (no TLB "
			 "misses): %.2fx",
			 si.min / sb.min, ratio_bin.med, ratio_huge.med);
		/* no target: 1M entries do not fit the cache, so a lookup
		 * costs one memory access, the floor for such a ring; the
		 * kernel part compares the 1M ring with the 64k one instead */
		bench_target(o, "random-key search 1M / 1k", "(none: retired)",
			     meas, "n/a", o->quick ? "--quick run" : note);
	}
	bench_json_close(jf, &j);
	rc = 0;
out:
	for (i = 0; i < nr; i++) {
		bench_ring_free(&rings[i].r);
		free(rings[i].huge.slots);
		free(rings[i].huge_ns);
		free(rings[i].idx_ns);
		free(rings[i].bin_ns);
	}
	free(keys);
	free(ri);
	free(rb);
	free(rh);
	return rc;
}
