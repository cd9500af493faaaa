// SPDX-License-Identifier: GPL-2.0
/*
 * Ring builder, exact analytics, kernel encoding and search
 * (user/lib/ring.c, include/ringmaster/rm_search.h) and the parsers of
 * user/lib/util.c.
 *
 * Quality numbers are asserted on the exact arcs (keys owned, summing to
 * 2^32), never on samples, for fixed seeds and for several seeds drawn
 * from a fixed PRNG, so every run checks the same rings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <cmocka.h>
#include <ringmaster/rm_hash.h>
#include "ring.h"
#include "util.h"

/* The result codes live in rm_search.h, which needs a slot accessor; the
 * search itself is exercised through rm_ring_lookup. */
struct null_ring;
#define RM_RING_T const struct null_ring *
#define RM_RING_SLOT(ring, idx)                                                \
	((void)(ring), (void)(idx), (const struct rm_slot *)NULL)
#include <ringmaster/rm_search.h>

#define KEYSPACE (1ULL << 32)
#define N_SEEDS 7 /* two fixed + five drawn from the PRNG */

/* ---- deterministic PRNG (splitmix64) --------------------------------- */
static __u64 rng_state;

static __u64 rng_next(void)
{
	return rm_splitmix64(&rng_state);
}

/* Seeds every quality test runs over: the all-zero seed (ringctl's offline
 * default), a fixed text seed, then five from the PRNG. */
static struct rm_seed test_seed(int i)
{
	struct rm_seed s = {0, 0};

	if (i == 1) {
		s.k0 = 0x7473616d676e6972ULL; /* "ringmaster-seed!" */
		s.k1 = 0x21646565732d7265ULL;
	} else if (i >= 2) {
		__u64 saved = rng_state;

		rng_state = 0x51ed0000 + (__u64)i;
		s.k0 = rng_next();
		s.k1 = rng_next();
		rng_state = saved;
	}
	return s;
}

/* ---- helpers ---------------------------------------------------------- */
/* n nodes "<prefix>NN", weight 1, id = rank by name (names sort by NN). */
static struct rm_node_spec *make_specs(__u32 n, const char *prefix)
{
	struct rm_node_spec *s = calloc(n ? n : 1, sizeof(*s));

	assert_non_null(s);
	for (__u32 i = 0; i < n; i++) {
		snprintf(s[i].name, RM_NAME_MAX, "%s%04u", prefix, i);
		s[i].weight = 1;
		s[i].id = i;
	}
	return s;
}

static void build_ok(const struct rm_seed *seed,
		     const struct rm_node_spec *specs, __u32 n, __u32 vnodes,
		     struct rm_ring *r)
{
	int err = rm_ring_build(seed, specs, n, vnodes, r);

	if (err)
		print_error("rm_ring_build: %d\n", err);
	assert_int_equal(err, 0);
}

static __u64 *arcs_of(const struct rm_ring *r)
{
	__u64 *a = calloc(r->n_nodes ? r->n_nodes : 1, sizeof(*a));

	assert_non_null(a);
	rm_ring_arcs(r, a);
	return a;
}

static __u64 arcs_sum(const struct rm_ring *r, const __u64 *a)
{
	__u64 s = 0;

	for (__u32 i = 0; i < r->n_nodes; i++)
		s += a[i];
	return s;
}

/* Largest share over weight-fair share, from the exact arcs. */
static double peak_to_mean(const struct rm_ring *r)
{
	__u64 *a = arcs_of(r), wsum = 0;
	double peak = 0;

	for (__u32 i = 0; i < r->n_nodes; i++)
		wsum += r->nodes[i].weight;
	for (__u32 i = 0; i < r->n_nodes; i++) {
		double ratio = (double)a[i] / KEYSPACE /
			       ((double)r->nodes[i].weight / wsum);

		if (ratio > peak)
			peak = ratio;
	}
	free(a);
	return peak;
}

static struct rm_slot *encode(const struct rm_ring *r, __u32 *nslots)
{
	struct rm_slot *s;

	*nslots = rm_ring_nslots(r);
	s = calloc(*nslots, sizeof(*s));
	assert_non_null(s);
	assert_int_equal(rm_ring_encode(r, s, *nslots), 0);
	return s;
}

/* A slot array whose end touches an inaccessible page, so a read past
 * nslots faults instead of passing silently. */
struct guarded {
	void *map;
	size_t len;
	struct rm_slot *slots;
};

static void guard_alloc(struct guarded *g, const struct rm_slot *src,
			__u32 nslots)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = (size_t)nslots * sizeof(struct rm_slot);
	size_t data = (bytes + pg - 1) / pg * pg;

	g->len = data + pg;
	g->map = mmap(NULL, g->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(g->map != MAP_FAILED);
	assert_int_equal(mprotect((char *)g->map + data, pg, PROT_NONE), 0);
	g->slots = (struct rm_slot *)((char *)g->map + data - bytes);
	if (bytes)
		memcpy(g->slots, src, bytes);
}

static void guard_free(struct guarded *g)
{
	munmap(g->map, g->len);
}

/* The first entry at or past key (r->n if none): the plain binary search
 * every indexed lookup is compared with. */
static __u32 plain_lower_bound(const struct rm_ring *r, __u64 key)
{
	__u32 lo = 0, hi = r->n;

	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (r->entries[mid].point < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Reference owner: plain lower bound over the sorted entries, wrapping. */
static __u32 ref_owner_idx(const struct rm_ring *r, __u32 key)
{
	__u32 lo = plain_lower_bound(r, key);

	return lo == r->n ? 0 : lo;
}

static __u32 ref_owner_id(const struct rm_ring *r, __u32 key)
{
	return r->nodes[r->entries[ref_owner_idx(r, key)].node].id;
}

static void check_key(const struct rm_ring *r, const struct rm_slot *slots,
		      __u32 nslots, __u32 key)
{
	__u32 id = 0xdeadbeef;
	int res = rm_ring_lookup(slots, nslots, key, &id);

	if (r->n == 0) {
		assert_int_equal(res, RM_SEARCH_EMPTY);
		return;
	}
	if (res != RM_SEARCH_OK || id != ref_owner_id(r, key))
		print_error("n=%u key 0x%08x: res %d id %u, want %u\n", r->n,
			    key, res, id, ref_owner_id(r, key));
	assert_int_equal(res, RM_SEARCH_OK);
	assert_int_equal(id, ref_owner_id(r, key));
}

/* Encoded indexed search == lower bound, for random keys, every point and
 * its neighbours, and both ends of the keyspace. */
static void check_lookup_all(const struct rm_ring *r, __u32 random_keys)
{
	__u32 nslots;
	struct rm_slot *slots = encode(r, &nslots);
	struct guarded g;

	guard_alloc(&g, slots, nslots);
	check_key(r, g.slots, nslots, 0);
	check_key(r, g.slots, nslots, 0xffffffff);
	for (__u32 i = 0; i < r->n; i++) {
		__u32 p = r->entries[i].point;

		check_key(r, g.slots, nslots, p);
		check_key(r, g.slots, nslots, p - 1);
		check_key(r, g.slots, nslots, p + 1);
	}
	for (__u32 i = 0; i < random_keys; i++)
		check_key(r, g.slots, nslots, (__u32)rng_next());
	guard_free(&g);
	free(slots);
}

/* A hand-made ring: one node per entry (id = 3 * i + 1), given points,
 * sorted; exercises layouts a real build rarely produces. */
static void crafted_ring(struct rm_ring *r, __u32 *points, __u32 n)
{
	memset(r, 0, sizeof(*r));
	for (__u32 i = 1; i < n; i++) /* insertion sort is fine: callers */
		assert_true(points[i - 1] <= points[i]); /* pass sorted */
	r->n = n;
	r->n_nodes = n;
	r->vnodes = 1;
	r->nodes = calloc(n ? n : 1, sizeof(*r->nodes));
	r->entries = calloc(n ? n : 1, sizeof(*r->entries));
	assert_non_null(r->nodes);
	assert_non_null(r->entries);
	for (__u32 i = 0; i < n; i++) {
		snprintf(r->nodes[i].name, RM_NAME_MAX, "c%u", i);
		r->nodes[i].weight = 1;
		r->nodes[i].id = 3 * i + 1;
		r->entries[i].point = points[i];
		r->entries[i].node = i;
	}
}

static int u32_cmp(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

static void shuffle(struct rm_node_spec *s, __u32 n)
{
	for (__u32 i = n; i > 1; i--) {
		__u32 j = (__u32)(rng_next() % i);
		struct rm_node_spec t = s[i - 1];

		s[i - 1] = s[j];
		s[j] = t;
	}
}

/* ---- determinism ------------------------------------------------------ */
static void test_build_deterministic_under_reordering(void **state)
{
	static const char *names[] = {"web-3", "db",	 "cache.a", "web-10",
				      "Z9",    "web-1",	 "a",	    "b_b",
				      "x-ray", "node.7", "m",	    "web-2"};
	const __u32 n = sizeof(names) / sizeof(names[0]);
	struct rm_node_spec base[sizeof(names) / sizeof(names[0])];
	struct rm_seed seed = test_seed(1);
	struct rm_ring ref;
	struct rm_slot *ref_slots;
	__u32 ref_nslots;

	(void)state;
	rng_state = 0xd37;
	memset(base, 0, sizeof(base));
	for (__u32 i = 0; i < n; i++) {
		snprintf(base[i].name, RM_NAME_MAX, "%s", names[i]);
		base[i].weight = 1 + i % 3;
	}
	/* ids by name rank, as ringctl assigns them offline */
	for (__u32 i = 0; i < n; i++)
		for (__u32 j = 0; j < n; j++)
			base[i].id += strcmp(base[j].name, base[i].name) < 0;

	build_ok(&seed, base, n, 97, &ref);
	ref_slots = encode(&ref, &ref_nslots);
	for (__u32 i = 1; i < ref.n_nodes; i++)
		assert_true(strcmp(ref.nodes[i - 1].name, ref.nodes[i].name) <
			    0);

	for (int round = 0; round < 8; round++) {
		struct rm_node_spec in[sizeof(names) / sizeof(names[0])];
		struct rm_ring r;
		struct rm_slot *slots;
		__u32 nslots;

		memcpy(in, base, sizeof(in));
		shuffle(in, n);
		/* bytes after the NUL must not leak into the ring */
		for (__u32 i = 0; i < n; i++) {
			size_t len = strlen(in[i].name);

			memset(in[i].name + len + 1, 0x40 + round,
			       RM_NAME_MAX - len - 1);
		}
		build_ok(&seed, in, n, 97, &r);
		assert_int_equal(r.n, ref.n);
		assert_int_equal(r.n_nodes, ref.n_nodes);
		assert_int_equal(r.vnodes, ref.vnodes);
		assert_memory_equal(&r.seed, &ref.seed, sizeof(r.seed));
		assert_memory_equal(r.nodes, ref.nodes, n * sizeof(*r.nodes));
		assert_memory_equal(r.entries, ref.entries,
				    r.n * sizeof(*r.entries));
		slots = encode(&r, &nslots);
		assert_int_equal(nslots, ref_nslots);
		assert_memory_equal(slots, ref_slots, nslots * sizeof(*slots));
		free(slots);
		rm_ring_free(&r);
	}
	free(ref_slots);
	rm_ring_free(&ref);
}

/* A ring big enough to hold equal points of different nodes: still the
 * same whatever the input order, equal points ordered by name. */
static void test_build_deterministic_with_collisions(void **state)
{
	const __u32 n = RM_MAX_RING_ENTRIES / RM_MAX_VNODES;
	struct rm_node_spec *s = make_specs(n, "node-");
	struct rm_seed seed = test_seed(1);
	struct rm_ring ref, r;
	__u32 ties = 0;

	(void)state;
	rng_state = 0xc011;
	build_ok(&seed, s, n, RM_MAX_VNODES, &ref);
	for (__u32 i = 1; i < ref.n; i++)
		if (ref.entries[i - 1].point == ref.entries[i].point) {
			assert_true(ref.entries[i - 1].node <=
				    ref.entries[i].node);
			ties += ref.entries[i - 1].node != ref.entries[i].node;
		}
	print_message("%u entries: %u equal points of different nodes\n", ref.n,
		      ties);
	/* ~n^2 / 2^33 expected: at the default limit there are some, or this
	 * test would show nothing about ties */
	if (RM_MAX_RING_ENTRIES >= (1u << 18))
		assert_true(ties > 0);
	for (int round = 0; round < 2; round++) {
		shuffle(s, n);
		build_ok(&seed, s, n, RM_MAX_VNODES, &r);
		assert_memory_equal(r.nodes, ref.nodes, n * sizeof(*r.nodes));
		assert_memory_equal(r.entries, ref.entries,
				    r.n * sizeof(*r.entries));
		rm_ring_free(&r);
	}
	rm_ring_free(&ref);
	free(s);
}

/* rm_ring_build_near() gives exactly what rm_ring_build_spec() gives for
 * the same nodes, whatever near is: one node more or less, a weight
 * changed, both at once, near of another seed, vnodes or scheme, no near,
 * a near whose entries do not match its nodes; with the ties of equal
 * points a ring at the entry limit has, and small rings (qsort). */
static void near_check(const struct rm_seed *seed,
		       const struct rm_ring_spec *spec,
		       const struct rm_node_spec *s, __u32 n, __u32 vnodes,
		       const struct rm_ring *near)
{
	struct rm_ring ref, r;

	assert_int_equal(rm_ring_build_spec(seed, spec, s, n, vnodes, &ref), 0);
	assert_int_equal(
	    rm_ring_build_near(seed, spec, s, n, vnodes, near, &r), 0);
	assert_int_equal(r.n, ref.n);
	assert_int_equal(r.n_nodes, ref.n_nodes);
	assert_memory_equal(r.nodes, ref.nodes, n * sizeof(*r.nodes));
	assert_memory_equal(r.entries, ref.entries, r.n * sizeof(*r.entries));
	rm_ring_free(&r);
	rm_ring_free(&ref);
}

static void test_build_near_equals_build(void **state)
{
	static const struct rm_ring_spec rmr = {0};
	struct rm_ring_spec ketama = {.scheme = RM_RING_KETAMA};
	const __u32 sizes[][2] = {{RM_MAX_RING_ENTRIES / RM_MAX_VNODES - 1,
				   RM_MAX_VNODES},
				  {100, 1000},
				  {12, 50}};
	struct rm_seed seed = test_seed(1), other = test_seed(3);

	(void)state;
	for (__u32 z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		__u32 n = sizes[z][0], v = sizes[z][1];
		struct rm_node_spec *s = make_specs(n + 1, "node-");
		struct rm_node_spec *w = make_specs(n + 1, "node-");
		struct rm_ring near;

		for (__u32 i = 0; i <= n; i++)
			snprintf(s[i].host, sizeof(s[i].host), "198.18.%u.%u",
				 i / 250, i % 250 + 1);
		build_ok(&seed, s, n, v, &near);
		near_check(&seed, &rmr, s, n + 1, v, &near); /* added */
		near_check(&seed, &rmr, s, n - 1, v, &near); /* removed */
		near_check(&seed, &rmr, s + 1, n, v, &near); /* one each */
		if (z == 0) { /* the ties at the limit: enough, and slow */
			rm_ring_free(&near);
			free(s);
			free(w);
			continue;
		}
		near_check(&seed, &rmr, s, n, v, &near);     /* the same */
		w[n / 2].weight = 2;			      /* reweighted */
		if ((__u64)(n + 1) * v <= RM_MAX_RING_ENTRIES)
			near_check(&seed, &rmr, w, n, v, &near);
		near_check(&other, &rmr, s, n, v, &near); /* other seed */
		near_check(&seed, &rmr, s, n, v > 1 ? v - 1 : 2, &near);
		near_check(&seed, &rmr, s, n, v, NULL);
		if ((__u64)n * RM_KETAMA_POINTS <= RM_MAX_RING_ENTRIES)
			near_check(&seed, &ketama, s, n, v, &near);
		/* a near whose node holds fewer entries than its weight
		 * makes: built instead */
		near.n--;
		near_check(&seed, &rmr, s, n + 1, v, &near);
		near.n++;
		near.nodes[0].weight = 2;
		near_check(&seed, &rmr, s, n + 1, v, &near);
		rm_ring_free(&near);
		free(s);
		free(w);
	}
}

/* Entries are exactly the vnode points of every node, sorted by (point,
 * name, vnode); weight w gives w * vnodes entries. */
static void test_build_entries_are_vnode_points(void **state)
{
	struct rm_node_spec s[4];
	struct rm_seed seed = test_seed(2);
	struct rm_ring r;
	__u32 *want, *got, k = 0;

	(void)state;
	memset(s, 0, sizeof(s));
	snprintf(s[0].name, RM_NAME_MAX, "delta");
	snprintf(s[1].name, RM_NAME_MAX, "alpha");
	snprintf(s[2].name, RM_NAME_MAX, "charlie");
	snprintf(s[3].name, RM_NAME_MAX, "bravo");
	for (int i = 0; i < 4; i++)
		s[i].weight = (__u32)i + 1;
	build_ok(&seed, s, 4, 50, &r);
	assert_int_equal(r.n, (1 + 2 + 3 + 4) * 50);
	want = calloc(r.n, sizeof(*want));
	got = calloc(r.n, sizeof(*got));
	assert_non_null(want);
	assert_non_null(got);
	for (int i = 0; i < 4; i++) {
		int idx = rm_ring_find(&r, s[i].name);
		__u32 cnt = 0;

		assert_true(idx >= 0);
		assert_string_equal(r.nodes[idx].name, s[i].name);
		for (__u32 v = 0; v < s[i].weight * 50; v++)
			want[k++] = rm_vnode_point(&seed, s[i].name, v);
		for (__u32 e = 0; e < r.n; e++)
			cnt += r.entries[e].node == (__u32)idx;
		assert_int_equal(cnt, s[i].weight * 50);
	}
	assert_int_equal(rm_ring_find(&r, "echo"), -1);
	for (__u32 e = 0; e < r.n; e++) {
		got[e] = r.entries[e].point;
		if (e)
			assert_true(r.entries[e - 1].point <=
				    r.entries[e].point);
	}
	qsort(want, r.n, sizeof(*want), u32_cmp);
	assert_memory_equal(want, got, r.n * sizeof(*got));
	free(want);
	free(got);
	rm_ring_free(&r);
}

/* ---- quality ---------------------------------------------------------- */
static void quality(__u32 n_nodes, double limit)
{
	struct rm_node_spec *s = make_specs(n_nodes, "node-");
	double worst = 0;

	for (int i = 0; i < N_SEEDS; i++) {
		struct rm_seed seed = test_seed(i);
		struct rm_ring r;
		__u64 *a;
		double p;

		build_ok(&seed, s, n_nodes, RM_DEFAULT_VNODES, &r);
		assert_int_equal(r.n, n_nodes * RM_DEFAULT_VNODES);
		a = arcs_of(&r);
		assert_int_equal(arcs_sum(&r, a), KEYSPACE);
		p = peak_to_mean(&r);
		if (p > worst)
			worst = p;
		if (p > limit)
			print_error("%u nodes seed #%d: peak-to-mean %.4f > "
				    "%.2f\n",
				    n_nodes, i, p, limit);
		assert_true(p <= limit);
		free(a);
		rm_ring_free(&r);
	}
	print_message("%u nodes x %u vnodes: worst peak-to-mean %.4f over %d "
		      "seeds (limit %.2f)\n",
		      n_nodes, RM_DEFAULT_VNODES, worst, N_SEEDS, limit);
	free(s);
}

static void test_quality_16_nodes(void **state)
{
	(void)state;
	quality(16, 1.10);
}

static void test_quality_64_nodes(void **state)
{
	(void)state;
	quality(64, 1.12);
}

/* Adding a 17th node to 16: every moved key goes to the new node, old
 * nodes only lose keys, and the move is near the ideal 1/17. */
static void test_add_node_moves_only_to_new(void **state)
{
	struct rm_node_spec *s = make_specs(17, "node-");
	double worst = 0;

	(void)state;
	for (int i = 0; i < N_SEEDS; i++) {
		struct rm_seed seed = test_seed(i);
		struct rm_ring a, b;
		struct rm_move *mv;
		size_t nmv;
		__u64 moved, sum = 0, *arcs_a, *arcs_b;
		int inew;

		build_ok(&seed, s, 16, RM_DEFAULT_VNODES, &a);
		build_ok(&seed, s, 17, RM_DEFAULT_VNODES, &b);
		assert_int_equal(rm_ring_diff(&a, &b, &mv, &nmv, &moved), 0);
		inew = rm_ring_find(&b, s[16].name);
		assert_true(inew >= 0);
		assert_true(nmv > 0);
		for (size_t m = 0; m < nmv; m++) {
			assert_string_equal(mv[m].to, s[16].name);
			assert_string_not_equal(mv[m].from, s[16].name);
			assert_true(rm_ring_find(&a, mv[m].from) >= 0);
			sum += mv[m].keys;
		}
		assert_int_equal(sum, moved);
		arcs_a = arcs_of(&a);
		arcs_b = arcs_of(&b);
		/* what moved is exactly what the new node owns */
		assert_int_equal(moved, arcs_b[inew]);
		for (int n = 0; n < 16; n++) {
			int ia = rm_ring_find(&a, s[n].name);
			int ib = rm_ring_find(&b, s[n].name);

			assert_true(arcs_b[ib] <= arcs_a[ia]);
		}
		if ((double)moved / KEYSPACE > worst)
			worst = (double)moved / KEYSPACE;
		assert_true((double)moved / KEYSPACE <= 1.25 / 17);
		free(arcs_a);
		free(arcs_b);
		free(mv);
		rm_ring_free(&a);
		rm_ring_free(&b);
	}
	print_message("16 -> 17 nodes: worst moved share %.4f (ideal %.4f, "
		      "limit %.4f)\n",
		      worst, 1.0 / 17, 1.25 / 17);
	free(s);
}

/* Removing one of 16: exactly the removed node's keys move, all to
 * survivors, nothing between survivors. */
static void test_remove_node_moves_only_its_keys(void **state)
{
	struct rm_node_spec *s = make_specs(16, "node-");
	static const int victims[] = {0, 7, 15};

	(void)state;
	for (int i = 0; i < N_SEEDS; i++) {
		struct rm_seed seed = test_seed(i);
		struct rm_ring a;
		__u64 *arcs_a;

		build_ok(&seed, s, 16, RM_DEFAULT_VNODES, &a);
		arcs_a = arcs_of(&a);
		for (size_t v = 0; v < sizeof(victims) / sizeof(*victims);
		     v++) {
			struct rm_node_spec rest[16];
			const char *gone = s[victims[v]].name;
			struct rm_ring b;
			struct rm_move *mv;
			size_t nmv;
			__u64 moved, sum = 0;
			__u32 k = 0;

			for (int n = 0; n < 16; n++)
				if (n != victims[v])
					rest[k++] = s[n];
			build_ok(&seed, rest, 15, RM_DEFAULT_VNODES, &b);
			assert_int_equal(
			    rm_ring_diff(&a, &b, &mv, &nmv, &moved), 0);
			assert_int_equal(moved, arcs_a[rm_ring_find(&a, gone)]);
			for (size_t m = 0; m < nmv; m++) {
				assert_string_equal(mv[m].from, gone);
				assert_string_not_equal(mv[m].to, gone);
				assert_true(rm_ring_find(&b, mv[m].to) >= 0);
				sum += mv[m].keys;
			}
			assert_int_equal(sum, moved);
			free(mv);
			rm_ring_free(&b);
		}
		free(arcs_a);
		rm_ring_free(&a);
	}
	free(s);
}

/* A node of weight 2 among weight-1 nodes owns about twice their mean. */
static void test_weight_two_gets_double(void **state)
{
	struct rm_node_spec *s = make_specs(9, "node-");
	double lo = 10, hi = 0;

	(void)state;
	s[4].weight = 2;
	for (int i = 0; i < N_SEEDS; i++) {
		struct rm_seed seed = test_seed(i);
		struct rm_ring r;
		__u64 *a, light = 0;
		double ratio;
		int heavy;

		build_ok(&seed, s, 9, RM_DEFAULT_VNODES, &r);
		assert_int_equal(r.n, 10 * RM_DEFAULT_VNODES);
		a = arcs_of(&r);
		heavy = rm_ring_find(&r, s[4].name);
		for (__u32 n = 0; n < 9; n++)
			if ((int)n != heavy)
				light += a[n];
		ratio = (double)a[heavy] / ((double)light / 8);
		if (ratio < lo)
			lo = ratio;
		if (ratio > hi)
			hi = ratio;
		assert_true(ratio >= 1.8 && ratio <= 2.2);
		free(a);
		rm_ring_free(&r);
	}
	print_message("weight 2 vs weight 1: share ratio in [%.4f, %.4f]\n", lo,
		      hi);
	free(s);
}

static void test_arcs_sum_to_keyspace(void **state)
{
	static const __u32 sizes[][2] = {
	    /* nodes, vnodes */
	    {1, 1}, {1, 7}, {2, 1}, {3, 4}, {5, 333}, {16, 1000}, {100, 10},
	};
	__u32 edge[] = {0, 1, 0x7fffffff, 0xfffffffe, 0xffffffff};
	__u32 same[] = {42, 42, 42};
	/* not NULL: rm_ring_build memcpy()s from it even for 0 nodes */
	struct rm_node_spec same_spec[1] = {{.name = "x", .weight = 1}};
	struct rm_ring r;
	__u64 *a;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int si = 0; si < N_SEEDS; si++) {
			struct rm_seed seed = test_seed(si);
			struct rm_node_spec *s = make_specs(sizes[i][0], "n");

			s[0].weight = 3;
			build_ok(&seed, s, sizes[i][0], sizes[i][1], &r);
			a = arcs_of(&r);
			assert_int_equal(arcs_sum(&r, a), KEYSPACE);
			if (sizes[i][0] == 1)
				assert_int_equal(a[0], KEYSPACE);
			free(a);
			free(s);
			rm_ring_free(&r);
		}
	/* points at the ends of the keyspace, and all points equal */
	crafted_ring(&r, edge, 5);
	a = arcs_of(&r);
	assert_int_equal(arcs_sum(&r, a), KEYSPACE);
	assert_int_equal(a[0], 1);	    /* key 0 only */
	assert_int_equal(a[1], 1);	    /* key 1 */
	assert_int_equal(a[2], 0x7ffffffe); /* 2..0x7fffffff */
	assert_int_equal(a[3], 0x7fffffff); /* ..0xfffffffe */
	assert_int_equal(a[4], 1);	    /* 0xffffffff */
	free(a);
	rm_ring_free(&r);
	crafted_ring(&r, same, 3);
	a = arcs_of(&r);
	assert_int_equal(a[0], KEYSPACE); /* the first of equal points owns */
	assert_int_equal(a[1], 0);
	assert_int_equal(a[2], 0);
	free(a);
	rm_ring_free(&r);
	/* an empty ring has no arcs and no crash */
	build_ok(&(struct rm_seed){0, 0}, same_spec, 0, 10, &r);
	assert_int_equal(r.n, 0);
	assert_int_equal(r.n_nodes, 0);
	a = arcs_of(&r);
	free(a);
	rm_ring_free(&r);
}

/* ---- diff against brute force ----------------------------------------- */
/* Owner of key by the definition, from the specs alone (no ring): the
 * vnode with the smallest (point, name, vnode) at or after key, wrapping
 * to the smallest overall. "-" when there are no nodes. */
static bool vnode_before(__u32 p1, const char *n1, __u32 v1, __u32 p2,
			 const char *n2, __u32 v2)
{
	if (p1 != p2)
		return p1 < p2;
	if (strcmp(n1, n2))
		return strcmp(n1, n2) < 0;
	return v1 < v2;
}

static const char *def_owner(const struct rm_seed *seed,
			     const struct rm_node_spec *s, __u32 n,
			     __u32 vnodes, __u32 key)
{
	const char *best = NULL, *first = NULL;
	__u32 bp = 0, fp = 0, bv = 0, fv = 0;

	for (__u32 i = 0; i < n; i++)
		for (__u32 v = 0; v < s[i].weight * vnodes; v++) {
			__u32 p = rm_vnode_point(seed, s[i].name, v);

			if (!first ||
			    vnode_before(p, s[i].name, v, fp, first, fv)) {
				first = s[i].name;
				fp = p;
				fv = v;
			}
			if (p >= key && (!best || vnode_before(p, s[i].name, v,
							       bp, best, bv))) {
				best = s[i].name;
				bp = p;
				bv = v;
			}
		}
	return best ? best : first ? first : "-";
}

struct side {
	struct rm_seed seed;
	const struct rm_node_spec *s;
	__u32 n;
};

#define VN_SMALL 4

static void diff_vs_brute(const struct side *A, const struct side *B)
{
	struct rm_ring a, b;
	struct rm_move *mv;
	size_t nmv, nb = 0;
	__u64 moved, total = 0;
	__u32 *starts, ns = 0;
	struct rm_move brute[64];

	build_ok(&A->seed, A->s, A->n, VN_SMALL, &a);
	build_ok(&B->seed, B->s, B->n, VN_SMALL, &b);
	assert_int_equal(rm_ring_diff(&a, &b, &mv, &nmv, &moved), 0);
	/* the count alone (the change log's) is the diff's total */
	assert_int_equal(rm_ring_moved(&a, &b), moved);

	/* owners can only change just after a point of either ring */
	starts = calloc(a.n + b.n + 1, sizeof(*starts));
	assert_non_null(starts);
	starts[ns++] = 0;
	for (__u32 i = 0; i < a.n; i++)
		if (a.entries[i].point != 0xffffffff)
			starts[ns++] = a.entries[i].point + 1;
	for (__u32 i = 0; i < b.n; i++)
		if (b.entries[i].point != 0xffffffff)
			starts[ns++] = b.entries[i].point + 1;
	qsort(starts, ns, sizeof(*starts), u32_cmp);
	memset(brute, 0, sizeof(brute));
	for (__u32 i = 0; i < ns; i++) {
		__u64 lo = starts[i], hi;
		const char *oa, *ob;

		if (i + 1 < ns && starts[i + 1] == starts[i])
			continue;
		hi = i + 1 < ns ? (__u64)starts[i + 1] - 1 : KEYSPACE - 1;
		/* both boundary-adjacent keys of the interval agree */
		oa = def_owner(&A->seed, A->s, A->n, VN_SMALL, (__u32)lo);
		ob = def_owner(&B->seed, B->s, B->n, VN_SMALL, (__u32)lo);
		assert_string_equal(
		    oa, def_owner(&A->seed, A->s, A->n, VN_SMALL, (__u32)hi));
		assert_string_equal(
		    ob, def_owner(&B->seed, B->s, B->n, VN_SMALL, (__u32)hi));
		if (!strcmp(oa, ob))
			continue;
		total += hi - lo + 1;
		for (size_t m = 0;; m++) {
			if (m == nb) {
				assert_true(nb < 64);
				snprintf(brute[m].from, RM_NAME_MAX, "%s", oa);
				snprintf(brute[m].to, RM_NAME_MAX, "%s", ob);
				nb++;
			}
			if (!strcmp(brute[m].from, oa) &&
			    !strcmp(brute[m].to, ob)) {
				brute[m].keys += hi - lo + 1;
				break;
			}
		}
	}
	assert_int_equal(moved, total);
	assert_int_equal(nmv, nb);
	for (size_t m = 0; m < nmv; m++) {
		size_t k;

		for (k = 0; k < nb; k++)
			if (!strcmp(brute[k].from, mv[m].from) &&
			    !strcmp(brute[k].to, mv[m].to))
				break;
		assert_true(k < nb);
		assert_int_equal(mv[m].keys, brute[k].keys);
		/* sorted by keys descending, then from, then to */
		if (m) {
			assert_true(mv[m - 1].keys >= mv[m].keys);
			if (mv[m - 1].keys == mv[m].keys) {
				int c = strcmp(mv[m - 1].from, mv[m].from);

				assert_true(c < 0 ||
					    (c == 0 && strcmp(mv[m - 1].to,
							      mv[m].to) < 0));
			}
		}
	}
	free(starts);
	free(mv);
	rm_ring_free(&a);
	rm_ring_free(&b);
}

static void test_diff_matches_brute_force(void **state)
{
	struct rm_node_spec abc[3], abcd[4], ac[2], ab2c[3], bcd[3];
	static const char *nm[] = {"a", "b", "c", "d"};

	(void)state;
	memset(abcd, 0, sizeof(abcd));
	for (int i = 0; i < 4; i++) {
		snprintf(abcd[i].name, RM_NAME_MAX, "%s", nm[i]);
		abcd[i].weight = 1;
		abcd[i].id = (__u32)i;
	}
	memcpy(abc, abcd, sizeof(abc));
	memcpy(bcd, abcd + 1, sizeof(bcd));
	ac[0] = abcd[0];
	ac[1] = abcd[2];
	memcpy(ab2c, abc, sizeof(ab2c));
	ab2c[1].weight = 2;

	rng_state = 0xd1ff;
	for (int round = 0; round < 25; round++) {
		struct rm_seed s1 = {rng_next(), rng_next()};
		struct rm_seed s2 = {rng_next(), rng_next()};
		const struct side cases[][2] = {
		    {{s1, abc, 3}, {s1, abcd, 4}}, /* add */
		    {{s1, abcd, 4}, {s1, abc, 3}}, /* remove */
		    {{s1, abc, 3}, {s1, ac, 2}},   /* remove middle */
		    {{s1, abc, 3}, {s1, ab2c, 3}}, /* reweight */
		    {{s1, ab2c, 3}, {s1, abc, 3}},
		    {{s1, abc, 3}, {s1, bcd, 3}}, /* replace */
		    {{s1, abc, 3}, {s2, abc, 3}}, /* reseed */
		    {{s1, abc, 3}, {s1, abc, 3}}, /* no change */
		    {{s1, abc, 0}, {s1, abc, 3}}, /* from empty */
		    {{s1, abc, 3}, {s1, abc, 0}}, /* to empty */
		    {{s1, abc, 0}, {s1, abc, 0}}, /* both empty */
		    {{s1, abc, 1}, {s1, abcd, 4}},
		};

		for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
			diff_vs_brute(&cases[c][0], &cases[c][1]);
	}
}

/* Diff from an empty ring moves each node's exact arc from "-". */
static void test_diff_from_empty_equals_arcs(void **state)
{
	struct rm_node_spec *s = make_specs(16, "node-");
	struct rm_seed seed = test_seed(3);
	struct rm_ring e, r;
	struct rm_move *mv;
	size_t nmv;
	__u64 moved, *a;

	(void)state;
	build_ok(&seed, s, 0, 100, &e);
	build_ok(&seed, s, 16, 100, &r);
	a = arcs_of(&r);
	assert_int_equal(rm_ring_diff(&e, &r, &mv, &nmv, &moved), 0);
	assert_int_equal(moved, KEYSPACE);
	assert_int_equal(nmv, 16);
	for (size_t m = 0; m < nmv; m++) {
		assert_string_equal(mv[m].from, "-");
		assert_int_equal(mv[m].keys, a[rm_ring_find(&r, mv[m].to)]);
	}
	free(mv);
	assert_int_equal(rm_ring_diff(&r, &r, &mv, &nmv, &moved), 0);
	assert_int_equal(moved, 0);
	assert_int_equal(nmv, 0);
	free(mv);
	free(a);
	free(s);
	rm_ring_free(&e);
	rm_ring_free(&r);
}

/* ---- encoding and search ---------------------------------------------- */
static void test_index_bits(void **state)
{
	/* two buckets per entry: bits = ceil(log2(2n)), clamped */
	static const __u32 tab[][2] = {
	    {0, 2},
	    {1, 2},
	    {2, 2},
	    {3, 3},
	    {4, 3},
	    {5, 4},
	    {1000, 11},
	    {1024, 11},
	    {1025, 12},
	    {RM_MAX_RING_ENTRIES / 2, RM_INDEX_BITS_MAX - 1},
	    {RM_MAX_RING_ENTRIES, RM_INDEX_BITS_MAX},
	    {RM_MAX_RING_ENTRIES + 1, RM_INDEX_BITS_MAX},
	    {0xffffffff, RM_INDEX_BITS_MAX},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		assert_int_equal(rm_ring_index_bits(tab[i][0]), tab[i][1]);
}

/* The bucket word rm_common.h documents for the bucket whose points are
 * entries [lo, hi) of r, written out again from the documentation. */
static __u32 doc_word(const struct rm_ring *r, __u32 lo, __u32 hi, __u32 bits)
{
	__u32 first = r->nodes[r->entries[lo < r->n ? lo : 0].node].id;
	__u32 shift = 32 - bits, cnt = hi - lo;

	if (cnt == 0)
		return first; /* DIRECT */
	if (cnt == 1 && bits >= 14 && first < 4096)
		return 1u << 30 | (r->entries[lo].point & ((1u << shift) - 1))
					<< 12 | first;
	return 2u << 30 | (cnt < 511 ? cnt : 511) << 21 | lo;
}

/* Entries [lo, hi) of bucket k: points at or past its first key and
 * below the next bucket's. */
static void bucket_range(const struct rm_ring *r, __u32 bits, __u32 k,
			 __u32 *lo, __u32 *hi);

/* The encoded layout is what rm_common.h documents: header, every
 * bucket's word, every entry. */
static void check_layout(const struct rm_ring *r, const struct rm_slot *sl,
			 __u32 nslots, __u32 forms[3])
{
	__u32 bits = rm_ring_index_bits(r->n), nb = 1u << bits;
	__u32 base = 1 + nb / 4;

	assert_int_equal(nslots, 1 + nb / 4 + (r->n + 1) / 2);
	assert_int_equal(nslots, RM_RING_SLOTS(bits, r->n));
	assert_int_equal(sl[0].a, r->n);
	assert_int_equal(sl[0].b, bits | 2u << 8);
	for (__u32 k = 0; r->n && k < nb; k++) {
		__u32 lo, hi, w = ((const __u32 *)&sl[1 + k / 4])[k % 4];

		bucket_range(r, bits, k, &lo, &hi);
		assert_int_equal(w, doc_word(r, lo, hi, bits));
		if (forms)
			forms[w >> 30]++;
	}
	for (__u32 e = 0; e < r->n; e++) {
		const struct rm_slot *es = &sl[base + (e >> 1)];

		assert_int_equal(RM_ENTRY_POINT(es, e), r->entries[e].point);
		assert_int_equal(RM_ENTRY_NODE(es, e),
				 r->nodes[r->entries[e].node].id);
	}
	if (r->n & 1) /* the unused half of the last slot is zero */
		assert_true(sl[base + r->n / 2].c == 0 &&
			    sl[base + r->n / 2].d == 0);
}

static void test_encode_layout(void **state)
{
	static const __u32 counts[] = {1, 2, 3, 5, 64, 1000};

	(void)state;
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		struct rm_node_spec *s = make_specs(counts[c], "e");
		struct rm_seed seed = test_seed(4);
		struct rm_ring r;
		struct rm_slot *sl;
		__u32 nslots;

		for (__u32 i = 0; i < counts[c]; i++)
			s[i].id = 5000 + 11 * i;
		build_ok(&seed, s, counts[c], 1, &r);
		sl = encode(&r, &nslots);
		check_layout(&r, sl, nslots, NULL);
		free(sl);
		free(s);
		rm_ring_free(&r);
	}
}

static void test_encode_enospc(void **state)
{
	struct rm_node_spec *s = make_specs(10, "x");
	struct rm_seed seed = test_seed(0);
	struct rm_ring r, e;
	struct rm_slot *buf;
	__u32 need;

	(void)state;
	build_ok(&seed, s, 10, 100, &r);
	need = rm_ring_nslots(&r);
	assert_int_equal(need, RM_RING_SLOTS(11, 1000));
	buf = malloc((need + 8) * sizeof(*buf));
	assert_non_null(buf);
	memset(buf, 0x5a, (need + 8) * sizeof(*buf));
	assert_int_equal(rm_ring_encode(&r, buf, need - 1), -ENOSPC);
	assert_int_equal(rm_ring_encode(&r, buf, 0), -ENOSPC);
	assert_int_equal(rm_ring_encode(&r, buf, 1), -ENOSPC);
	for (__u32 i = 0; i < need + 8; i++) /* nothing written */
		assert_true(buf[i].a == 0x5a5a5a5a && buf[i].b == 0x5a5a5a5a);
	assert_int_equal(rm_ring_encode(&r, buf, need + 8), 0);
	for (__u32 i = need; i < need + 8; i++) /* spare slots zeroed */
		assert_true(buf[i].a == 0 && buf[i].b == 0);
	assert_int_equal(rm_ring_encode(&r, buf, need), 0);
	/* an empty ring: header + one slot of 4 buckets */
	build_ok(&seed, s, 0, 100, &e);
	assert_int_equal(rm_ring_nslots(&e), 2);
	assert_int_equal(rm_ring_encode(&e, buf, 1), -ENOSPC);
	assert_int_equal(rm_ring_encode(&e, buf, 2), 0);
	assert_int_equal(buf[0].a, 0);
	free(buf);
	free(s);
	rm_ring_free(&r);
	rm_ring_free(&e);
}

/* rm_ring_encoded_in() accepts what rm_ring_encode() wrote, for rings
 * of odd and even sizes and the empty one, and refuses a slot array with
 * another header, entry, node id, size, or a changed first or last index
 * bucket. */
static void test_encoded_in(void **state)
{
	static const __u32 sizes[][2] = {{0, 10}, {1, 1}, {3, 7}, {10, 100},
					 {64, 1000}};
	struct rm_seed seed = test_seed(9);

	(void)state;
	for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++) {
		struct rm_node_spec *s = make_specs(sizes[c][0], "n");
		struct rm_ring r;
		struct rm_slot *buf;
		__u32 m, base;

		for (__u32 i = 0; i < sizes[c][0]; i++)
			s[i].id = 2000 + 7 * i;
		build_ok(&seed, s, sizes[c][0], sizes[c][1], &r);
		m = rm_ring_nslots(&r);
		base = 1 + RM_RING_IDX_SLOTS(rm_ring_index_bits(r.n));
		buf = calloc(m + 1, sizeof(*buf));
		assert_non_null(buf);
		assert_int_equal(rm_ring_encode(&r, buf, m), 0);
		assert_true(rm_ring_encoded_in(&r, buf, m));
		assert_false(rm_ring_encoded_in(&r, buf, m + 1));
		buf[0].c = 12345; /* a retired ring's stamp is not content */
		assert_true(rm_ring_encoded_in(&r, buf, m));
		buf[0].a++;
		assert_false(rm_ring_encoded_in(&r, buf, m));
		buf[0].a--;
		if (r.n) {
			buf[base + (r.n - 1) / 2].b ^= 1; /* a node id */
			assert_false(rm_ring_encoded_in(&r, buf, m));
			buf[base + (r.n - 1) / 2].b ^= 1;
			buf[base].a ^= 1; /* a point */
			assert_false(rm_ring_encoded_in(&r, buf, m));
			buf[base].a ^= 1;
			buf[1].a ^= 1; /* the first bucket */
			assert_false(rm_ring_encoded_in(&r, buf, m));
			buf[1].a ^= 1;
			buf[base - 1].d ^= 1; /* the last bucket */
			assert_false(rm_ring_encoded_in(&r, buf, m));
			buf[base - 1].d ^= 1;
			assert_true(rm_ring_encoded_in(&r, buf, m));
		}
		if (r.n & 1) { /* the unused half of the last entry slot */
			buf[m - 1].c = 1;
			assert_false(rm_ring_encoded_in(&r, buf, m));
		}
		free(buf);
		free(s);
		rm_ring_free(&r);
	}
}

#define LOOKUP_KEYS 1000000

static void lookup_built(__u32 n_nodes, __u32 vnodes, __u32 keys)
{
	struct rm_node_spec *s = make_specs(n_nodes, "node-");
	struct rm_seed seed = test_seed(5);
	struct rm_ring r;

	/* ids unlike indexes, so an index/id mix-up shows */
	for (__u32 i = 0; i < n_nodes; i++)
		s[i].id = 4000 - 3 * i;
	build_ok(&seed, s, n_nodes, vnodes, &r);
	assert_int_equal(r.n, n_nodes * vnodes);
	check_lookup_all(&r, keys);
	free(s);
	rm_ring_free(&r);
}

static void test_lookup_empty(void **state)
{
	(void)state;
	rng_state = 0xe;
	lookup_built(0, 1, LOOKUP_KEYS);
}

static void test_lookup_small(void **state)
{
	(void)state;
	rng_state = 0x1;
	lookup_built(1, 1, LOOKUP_KEYS); /* 1 entry */
	lookup_built(2, 1, LOOKUP_KEYS); /* 2 */
	lookup_built(1, 2, LOOKUP_KEYS / 4);
	lookup_built(3, 1, LOOKUP_KEYS); /* 3 */
	for (__u32 n = 4; n <= 40; n++)
		lookup_built(n, 1, 20000);
}

static void test_lookup_1000(void **state)
{
	(void)state;
	rng_state = 0x1000;
	lookup_built(10, 100, LOOKUP_KEYS);
	lookup_built(1, 1000, LOOKUP_KEYS / 4);
	lookup_built(1000, 1, LOOKUP_KEYS / 4);
}

static void test_lookup_max_entries(void **state)
{
	(void)state;
	rng_state = 0x40000;
	/* 64 x 4096 = RM_MAX_RING_ENTRIES */
	lookup_built(RM_MAX_RING_ENTRIES / RM_MAX_VNODES, RM_MAX_VNODES,
		     LOOKUP_KEYS);
}

/* Hand-made layouts: clusters, duplicates, the keyspace ends, sizes at
 * powers of two; and a full-size ring with every entry in one bucket,
 * which needs every one of RM_SEARCH_MAX_PROBES probes. */
static void test_lookup_crafted(void **state)
{
	static const __u32 sizes[] = {1, 2,   3,   4,	5,    7,    8,
				      9, 255, 256, 257, 1023, 1024, 1025};
	__u32 *p = calloc(RM_MAX_RING_ENTRIES, sizeof(*p));
	struct rm_slot *slots;
	struct rm_ring r;
	__u32 nslots;

	(void)state;
	assert_non_null(p);
	rng_state = 0xc4af7;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		__u32 n = sizes[i];

		/* uniform */
		for (__u32 k = 0; k < n; k++)
			p[k] = (__u32)rng_next();
		qsort(p, n, sizeof(*p), u32_cmp);
		crafted_ring(&r, p, n);
		check_lookup_all(&r, 20000);
		rm_ring_free(&r);
		/* clustered at the top, with duplicates */
		for (__u32 k = 0; k < n; k++)
			p[k] = 0xffffff00u | (__u32)(rng_next() & 0xff);
		qsort(p, n, sizeof(*p), u32_cmp);
		crafted_ring(&r, p, n);
		check_lookup_all(&r, 20000);
		rm_ring_free(&r);
		/* clustered at the bottom, including 0 */
		for (__u32 k = 0; k < n; k++)
			p[k] = k ? (__u32)(rng_next() & 0xfff) : 0;
		qsort(p, n, sizeof(*p), u32_cmp);
		crafted_ring(&r, p, n);
		check_lookup_all(&r, 20000);
		rm_ring_free(&r);
		/* all equal */
		for (__u32 k = 0; k < n; k++)
			p[k] = 0x80000000u;
		crafted_ring(&r, p, n);
		check_lookup_all(&r, 2000);
		rm_ring_free(&r);
	}
	/* RM_MAX_RING_ENTRIES entries in the first bucket of the widest
	 * index (2^(32 - RM_INDEX_BITS_MAX) keys), duplicates included */
	for (__u32 k = 0; k < RM_MAX_RING_ENTRIES; k++)
		p[k] = (__u32)(((__u64)k << (32 - RM_INDEX_BITS_MAX)) /
			       RM_MAX_RING_ENTRIES);
	crafted_ring(&r, p, RM_MAX_RING_ENTRIES);
	slots = encode(&r, &nslots);
	assert_int_equal(slots[0].b, RM_RING_HDR_B(RM_INDEX_BITS_MAX));
	/* one bucket, searched to the end of the ring */
	assert_int_equal(slots[1].a, RM_BKT_SEARCH << 30 |
					 RM_BKT_CNT_MAX << RM_BKT_LO_BITS);
	free(slots);
	check_lookup_all(&r, 100000);
	rm_ring_free(&r);
	/* one bucket, entry 0 below key 1 and every other entry at 1: the
	 * lower bound of key 1 is entry 1, found only on the last of the
	 * RM_SEARCH_MAX_PROBES probes */
	for (__u32 k = 0; k < RM_MAX_RING_ENTRIES; k++)
		p[k] = k ? 1 : 0;
	crafted_ring(&r, p, RM_MAX_RING_ENTRIES);
	slots = encode(&r, &nslots);
	assert_int_equal(slots[1].a, RM_BKT_SEARCH << 30 |
					 RM_BKT_CNT_MAX << RM_BKT_LO_BITS);
	check_key(&r, slots, nslots, 1);
	assert_int_equal(ref_owner_idx(&r, 1), 1);
	free(slots);
	check_lookup_all(&r, 1000);
	rm_ring_free(&r);
	/* ... and all equal to the top key */
	for (__u32 k = 0; k < RM_MAX_RING_ENTRIES; k++)
		p[k] = 0xffffffff;
	crafted_ring(&r, p, RM_MAX_RING_ENTRIES);
	check_lookup_all(&r, 1000);
	rm_ring_free(&r);
	free(p);
}

static void bucket_range(const struct rm_ring *r, __u32 bits, __u32 k,
			 __u32 *lo, __u32 *hi)
{
	*lo = plain_lower_bound(r, (__u64)k << (32 - bits));
	*hi = plain_lower_bound(r, (__u64)(k + 1) << (32 - bits));
}

/* Encode r, check its layout word by word, and every bucket's first and
 * last key, every point and its neighbours, 0, 2^32 - 1 and random keys
 * against the plain search; forms[] counts DIRECT, SPLIT, SEARCH words. */
static void check_index(const struct rm_ring *r, __u32 forms[3])
{
	__u32 bits = rm_ring_index_bits(r->n), nslots;
	struct rm_slot *sl = encode(r, &nslots);

	check_layout(r, sl, nslots, forms);
	for (__u64 k = 0; k < 1ull << bits; k++) {
		check_key(r, sl, nslots, (__u32)(k << (32 - bits)));
		check_key(r, sl, nslots, (__u32)(((k + 1) << (32 - bits)) - 1));
	}
	free(sl);
	check_lookup_all(r, 20000);
}

/* A crafted ring (crafted_ring) with node ids id0 + i % mod. */
static void ids_ring(struct rm_ring *r, __u32 *p, __u32 n, __u32 id0,
		     __u32 mod)
{
	qsort(p, n, sizeof(*p), u32_cmp);
	crafted_ring(r, p, n);
	for (__u32 i = 0; i < n; i++)
		r->nodes[i].id = id0 + i % mod;
}

/* The index's three word forms at their boundaries, each lookup compared
 * with a plain binary search: buckets of 0, 1 and many points; a key
 * exactly at a point, one below and above; a point at a bucket's first
 * and last key; a one-point bucket whose later keys go to the next
 * bucket in the same slot, in the next slot, and past the last bucket to
 * entry 0 (the wrap); the next bucket of each form; node ids that do not
 * fit a SPLIT word; a ring of one point; the empty ring. */
static void test_index_forms(void **state)
{
	/* 8,192 entries: the smallest ring with SPLIT words (bits 14) */
	static const __u32 sizes[] = {8192, 20000, 65536};
	__u32 *p = calloc(65536 + 16, sizeof(*p));
	struct rm_ring r;

	(void)state;
	assert_non_null(p);
	rng_state = 0x1dec5;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		__u32 n = sizes[i], bits = rm_ring_index_bits(n);
		__u32 shift = 32 - bits, forms[3] = {0}, m = 0;

		assert_true(bits >= 14);
		/* uniform points; ids all fit a SPLIT word */
		for (__u32 k = 0; k < n; k++)
			p[k] = (__u32)rng_next();
		ids_ring(&r, p, n, 1, 4000);
		check_index(&r, forms);
		assert_true(forms[0] && forms[1] && forms[2]);
		/* DIRECT and SPLIT words: 9 buckets in 10 */
		assert_true(forms[0] + forms[1] > 8 * (forms[2] + 1));
		rm_ring_free(&r);
		/* ids around the 12-bit limit: half the one-point buckets
		 * search instead */
		for (__u32 k = 0; k < n; k++)
			p[k] = (__u32)rng_next();
		ids_ring(&r, p, n, 4090, 12);
		check_index(&r, NULL);
		rm_ring_free(&r);
		/* hand-placed: bucket b gets b % 4 points (0, 1, 2, 3 ...),
		 * at its first key, its last, both, or between; a one-point
		 * bucket in each slot position, followed by each form */
		for (__u32 b = 0; m + 3 < n && b < (1u << bits); b++) {
			__u32 start = b << shift, last = start | ((1u << shift) - 1);

			switch ((b / 4 + b) % 4) {
			case 1:
				p[m++] = b % 3 == 0 ? start :
					 b % 3 == 1 ? last : start + 77;
				break;
			case 2:
				p[m++] = start;
				p[m++] = last;
				break;
			case 3:
				p[m++] = start + 1;
				p[m++] = start + 1; /* a duplicate */
				p[m++] = last - 1;
				break;
			default:
				break;
			}
		}
		/* the last bucket: one point below its last key, so the keys
		 * past it wrap to entry 0 */
		p[m++] = 0xfffffff0u;
		ids_ring(&r, p, m, 7, 4000);
		memset(forms, 0, sizeof(forms));
		check_index(&r, forms);
		assert_true(forms[0] && forms[1] && forms[2]);
		rm_ring_free(&r);
	}
	/* a ring of one point: at 0, in the middle, at the top */
	{
		static const __u32 one[] = {0, 0x12345678, 0xffffffff};

		for (size_t i = 0; i < 3; i++) {
			p[0] = one[i];
			ids_ring(&r, p, 1, 9, 1);
			check_index(&r, NULL);
			rm_ring_free(&r);
		}
	}
	/* the empty ring */
	ids_ring(&r, p, 0, 0, 1);
	check_index(&r, NULL);
	rm_ring_free(&r);
	free(p);
}

/* Corrupt slots give RM_SEARCH_CORRUPT, never a crash or a read past
 * nslots (the slot array ends at an inaccessible page). */
static int lookup_guarded(const struct rm_slot *src, __u32 nslots, __u32 key,
			  __u32 *id)
{
	struct guarded g;
	int res;

	guard_alloc(&g, src, nslots);
	res = rm_ring_lookup(g.slots, nslots, key, id);
	guard_free(&g);
	return res;
}

static void expect_corrupt_all(const struct rm_slot *src, __u32 nslots)
{
	static const __u32 keys[] = {
	    0, 1, 0x12345678, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff};
	struct guarded g;

	guard_alloc(&g, src, nslots);
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		__u32 id = 0;

		assert_int_equal(rm_ring_lookup(g.slots, nslots, keys[k], &id),
				 RM_SEARCH_CORRUPT);
	}
	for (int k = 0; k < 1000; k++) {
		__u32 id = 0;

		assert_int_equal(
		    rm_ring_lookup(g.slots, nslots, (__u32)rng_next(), &id),
		    RM_SEARCH_CORRUPT);
	}
	guard_free(&g);
}

/* A ring cut short after its index: the buckets present answer for the
 * keys they cover alone (with the right owner); every other key is
 * corrupt; nothing reads past the end (guard page). */
static void expect_owner_or_corrupt(const struct rm_slot *src, __u32 nslots,
				    const struct rm_ring *r)
{
	struct guarded g;
	__u32 corrupt = 0, id;

	guard_alloc(&g, src, nslots);
	for (int k = 0; k < 100000; k++) {
		__u32 key = (__u32)rng_next();
		int res = rm_ring_lookup(g.slots, nslots, key, &id);

		if (res == RM_SEARCH_CORRUPT) {
			corrupt++;
			continue;
		}
		assert_int_equal(res, RM_SEARCH_OK);
		assert_int_equal(id, ref_owner_id(r, key));
	}
	guard_free(&g);
	assert_true(corrupt > 0);
}

static void test_lookup_corrupt(void **state)
{
	static const __u32 bad_n[] = {RM_MAX_RING_ENTRIES + 1, 0x80000000u,
				      0xffffffff};
	static const __u32 bad_bits[] = {
	    0, RM_INDEX_BITS_MAX + 1, 31, 32, 33, 64, 0xffffffff};
	struct rm_node_spec *s = make_specs(10, "node-");
	struct rm_seed seed = test_seed(6);
	struct rm_ring r;
	struct rm_slot *good, *bad;
	__u32 nslots, bits, base, key = 0, id;
	size_t bytes;

	(void)state;
	rng_state = 0xbad;
	build_ok(&seed, s, 10, 100, &r);
	good = encode(&r, &nslots);
	bits = RM_RING_HDR_BITS(good[0].b);
	base = 1 + RM_RING_IDX_SLOTS(bits);
	assert_int_equal(bits, 11);
	bytes = nslots * sizeof(*good);
	bad = malloc(bytes);
	assert_non_null(bad);

	/* header: n too big */
	for (size_t i = 0; i < sizeof(bad_n) / sizeof(*bad_n); i++) {
		memcpy(bad, good, bytes);
		bad[0].a = bad_n[i];
		expect_corrupt_all(bad, nslots);
	}
	/* header: bits out of range */
	for (size_t i = 0; i < sizeof(bad_bits) / sizeof(*bad_bits); i++) {
		memcpy(bad, good, bytes);
		bad[0].b = bad_bits[i] | RM_RING_FORMAT << 8;
		expect_corrupt_all(bad, nslots);
	}
	/* header: another ring format (the one before, b = bits; the next),
	 * never read as this one */
	for (__u32 f = 0; f < 4; f++) {
		if (f == RM_RING_FORMAT)
			continue;
		memcpy(bad, good, bytes);
		bad[0].b = bits | f << 8;
		expect_corrupt_all(bad, nslots);
	}
	/* nslots too small: no header, no index, no entries */
	expect_corrupt_all(good, 0);
	expect_corrupt_all(good, 1);
	expect_owner_or_corrupt(good, 2, &r);
	/* header and index only: a bucket answers alone for the keys up to
	 * its first point (right owner), any key needing an entry is
	 * corrupt, and nothing reads past the end */
	expect_owner_or_corrupt(good, base, &r);
	/* entries cut short: a key whose search must read the missing slot
	 * (an entry that is not its bucket's first, which the bucket
	 * answers alone) is corrupt; the full ring answers it */
	{
		__u32 t, found = 0;

		for (t = nslots - 1; t > base && !found; t--)
			for (__u32 e = 2 * (t - base); e < 2 * (t - base) + 2 &&
						       e < r.n && !found;
			     e++) {
				__u32 bk = r.entries[e].point >> (32 - bits);

				/* a bucket that must search its entries */
				if (RM_BKT_TAG(RM_BKT_WORD(&good[1 + bk / 4],
							   bk)) !=
				    RM_BKT_SEARCH)
					continue;
				key = r.entries[e].point;
				found = 1;
				assert_int_equal(
				    lookup_guarded(good, t, key, &id),
				    RM_SEARCH_CORRUPT);
			}
		assert_true(found);
		assert_int_equal(lookup_guarded(good, nslots, key, &id),
				 RM_SEARCH_OK);
		assert_int_equal(id, ref_owner_id(&r, key));
	}

	/* index: no such tag, lo > n, lo + count > n, a point offset wider
	 * than SPLIT holds, in one bucket; others still resolve */
	for (int variant = 0; variant < 4; variant++) {
		__u32 b = 1 + (__u32)(rng_next() % ((1u << bits) - 2));
		__u32 inb = (b << (32 - bits)) | 0x1234;
		__u32 other = ((b + 1) << (32 - bits)) | 0x1234;
		struct guarded g;

		static const __u32 words[] = {0xffffffffu, 2u << 30 | 1u << 21,
					      2u << 30 | 5u << 21, 1u << 30};
		__u32 w = words[variant];

		if (variant == 1)
			w += r.n + 1;
		else if (variant == 2)
			w += r.n - 1;
		memcpy(bad, good, bytes);
		((__u32 *)&bad[1 + b / 4])[b % 4] = w;
		guard_alloc(&g, bad, nslots);
		assert_int_equal(rm_ring_lookup(g.slots, nslots, inb, &id),
				 RM_SEARCH_CORRUPT);
		assert_int_equal(rm_ring_lookup(g.slots, nslots, other, &id),
				 RM_SEARCH_OK);
		assert_int_equal(id, ref_owner_id(&r, other));
		guard_free(&g);
	}

	/* a well-formed index one bit wider than RM_INDEX_BITS_MAX, with
	 * every slot it needs: only the header check rejects it */
	{
		__u32 wb = RM_INDEX_BITS_MAX + 1, wn = 1u << wb;
		__u32 wslots = RM_RING_SLOTS(wb, r.n), e = 0;
		struct rm_slot *wide = calloc(wslots, sizeof(*wide));

		assert_non_null(wide);
		wide[0].a = r.n;
		wide[0].b = RM_RING_HDR_B(wb);
		for (__u32 k = 0; k < wn; k++) {
			__u32 lo = e;

			while (e < r.n && r.entries[e].point <
					      ((__u64)(k + 1) << (32 - wb)))
				e++;
			((__u32 *)&wide[1 + k / 4])[k % 4] =
			    e - lo ? 2u << 30 | (e - lo) << 21 | lo
				   : r.nodes[r.entries[lo % r.n].node].id;
		}
		for (e = 0; e < r.n; e++) {
			struct rm_slot *ws = &wide[1 + wn / 4 + (e >> 1)];

			if (e & 1) {
				ws->c = r.entries[e].point;
				ws->d = r.nodes[r.entries[e].node].id;
			} else {
				ws->a = r.entries[e].point;
				ws->b = r.nodes[r.entries[e].node].id;
			}
		}
		expect_corrupt_all(wide, wslots);
		free(wide);
	}

	/* header bits larger than the index: buckets past nslots */
	memcpy(bad, good, bytes);
	bad[0].b = RM_RING_HDR_B(RM_INDEX_BITS_MAX);
	assert_int_equal(lookup_guarded(bad, nslots, 0xffffffff, &id),
			 RM_SEARCH_CORRUPT);
	/* header n smaller than a searching bucket's entries */
	memcpy(bad, good, bytes);
	bad[0].a = 10;
	assert_int_equal(lookup_guarded(bad, nslots,
					r.entries[r.n - 1].point, &id),
			 RM_SEARCH_CORRUPT);

	/* fuzz: random damage never crashes, never reads past nslots, and
	 * reports EMPTY only for n = 0 */
	for (int it = 0; it < 20000; it++) {
		__u32 ns = nslots, nd = 1 + (__u32)(rng_next() % 4);
		struct guarded g;

		memcpy(bad, good, bytes);
		for (__u32 d = 0; d < nd; d++) {
			__u64 x = rng_next();
			__u32 at = (__u32)(x % (x & 1 ? base : nslots));
			__u32 v;

			switch ((x >> 32) % 4) {
			case 0:
				v = (__u32)(x >> 40) % (r.n + 4);
				break;
			case 1:
				v = (__u32)(x >> 40) % 24;
				break;
			case 2:
				v = 0xffffffff - (__u32)((x >> 40) % 4);
				break;
			default:
				v = (__u32)rng_next();
				break;
			}
			if (x & 2)
				bad[at].a = v;
			else
				bad[at].b = v;
		}
		if (rng_next() % 4 == 0)
			ns = (__u32)(rng_next() % (nslots + 1));
		guard_alloc(&g, bad, ns);
		for (int k = 0; k < 16; k++) {
			int res =
			    rm_ring_lookup(g.slots, ns, (__u32)rng_next(), &id);

			assert_true(res == RM_SEARCH_OK ||
				    res == RM_SEARCH_EMPTY ||
				    res == RM_SEARCH_CORRUPT);
			if (res == RM_SEARCH_EMPTY)
				assert_true(ns >= 1 && g.slots[0].a == 0);
			if (res == RM_SEARCH_OK)
				assert_true(ns >= 2);
		}
		guard_free(&g);
	}
	free(bad);
	free(good);
	free(s);
	rm_ring_free(&r);
}

/* ---- bad input -------------------------------------------------------- */
static void expect_build_error(const struct rm_node_spec *s, __u32 n,
			       __u32 vnodes, int want)
{
	struct rm_ring r, zero;
	int err;

	memset(&r, 0xaa, sizeof(r));
	memset(&zero, 0, sizeof(zero));
	err = rm_ring_build(&(struct rm_seed){1, 2}, s, n, vnodes, &r);
	if (err != want)
		print_error("rm_ring_build: got %d, want %d\n", err, want);
	assert_int_equal(err, want);
	assert_memory_equal(&r, &zero, sizeof(r)); /* no ring */
}

static void test_build_bad_input(void **state)
{
	struct rm_node_spec *s = make_specs(RM_MAX_NODES_PER_RING + 1, "n");
	struct rm_node_spec t[4];
	struct rm_ring r;
	__u32 heavy;
	static const char *bad_names[] = {"",	      "a b", "a/b", "a\n",
					  "\xc3\xa4", "a:b", "a,b", "tab\t"};

	(void)state;
	memset(t, 0, sizeof(t));
	for (int i = 0; i < 4; i++) {
		snprintf(t[i].name, RM_NAME_MAX, "%c", 'a' + i);
		t[i].weight = 1;
	}
	/* names */
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(*bad_names); i++) {
		snprintf(t[2].name, RM_NAME_MAX, "%s", bad_names[i]);
		expect_build_error(t, 4, 10, -EINVAL);
	}
	memset(t[2].name, 'x', RM_NAME_MAX); /* 32 chars, no NUL */
	expect_build_error(t, 4, 10, -EINVAL);
	memset(t[2].name, 'x', RM_NAME_MAX - 1); /* 31: the longest */
	t[2].name[RM_NAME_MAX - 1] = '\0';
	build_ok(&(struct rm_seed){1, 2}, t, 4, 10, &r);
	rm_ring_free(&r);
	/* duplicate, wherever it is */
	snprintf(t[2].name, RM_NAME_MAX, "a");
	expect_build_error(t, 4, 10, -EEXIST);
	snprintf(t[2].name, RM_NAME_MAX, "d");
	expect_build_error(t, 4, 10, -EEXIST);
	snprintf(t[2].name, RM_NAME_MAX, "c");
	/* weight */
	t[1].weight = 0;
	expect_build_error(t, 4, 10, -ERANGE);
	t[1].weight = RM_MAX_WEIGHT + 1;
	expect_build_error(t, 4, 10, -ERANGE);
	t[1].weight = 0xffffffff;
	expect_build_error(t, 4, 10, -ERANGE);
	t[1].weight = RM_MAX_WEIGHT;
	build_ok(&(struct rm_seed){1, 2}, t, 4, 10, &r);
	assert_int_equal(r.n, (3 + RM_MAX_WEIGHT) * 10);
	rm_ring_free(&r);
	t[1].weight = 1;
	/* vnodes */
	expect_build_error(t, 4, 0, -EINVAL);
	expect_build_error(t, 4, RM_MAX_VNODES + 1, -EINVAL);
	expect_build_error(t, 0, 0, -EINVAL);
	build_ok(&(struct rm_seed){1, 2}, t, 4, RM_MAX_VNODES, &r);
	rm_ring_free(&r);
	/* size: entries over RM_MAX_RING_ENTRIES, nodes over the per-ring
	 * limit; exactly at each limit is fine */
	expect_build_error(s, RM_MAX_RING_ENTRIES / RM_MAX_VNODES + 1,
			   RM_MAX_VNODES, -E2BIG);
	s[0].weight = 2;
	expect_build_error(s, RM_MAX_RING_ENTRIES / RM_MAX_VNODES,
			   RM_MAX_VNODES, -E2BIG);
	s[0].weight = 1;
	build_ok(&(struct rm_seed){1, 2}, s,
		 RM_MAX_RING_ENTRIES / RM_MAX_VNODES, RM_MAX_VNODES, &r);
	assert_int_equal(r.n, RM_MAX_RING_ENTRIES);
	rm_ring_free(&r);
	/* heaviest nodes at the most vnodes, one node over the limit */
	heavy = RM_MAX_RING_ENTRIES / (RM_MAX_WEIGHT * RM_MAX_VNODES) + 1;
	for (__u32 i = 0; i < heavy; i++)
		s[i].weight = RM_MAX_WEIGHT;
	expect_build_error(s, heavy, RM_MAX_VNODES, -E2BIG);
	for (__u32 i = 0; i < heavy; i++)
		s[i].weight = 1;
	/* exactly RM_MAX_RING_ENTRIES + 1 entries, where some vnodes count
	 * divides it within the node and weight limits */
	for (__u32 v = 1; v <= RM_MAX_VNODES; v++) {
		__u32 units = (RM_MAX_RING_ENTRIES + 1) / v, k = 0;

		if ((RM_MAX_RING_ENTRIES + 1) % v ||
		    units > RM_MAX_NODES_PER_RING * RM_MAX_WEIGHT)
			continue;
		for (; units; k++) {
			s[k].weight =
			    units < RM_MAX_WEIGHT ? units : RM_MAX_WEIGHT;
			units -= s[k].weight;
		}
		expect_build_error(s, k, v, -E2BIG);
		s[0].weight -= 1; /* one unit less: v entries under */
		build_ok(&(struct rm_seed){1, 2}, s, k, v, &r);
		assert_int_equal(r.n, RM_MAX_RING_ENTRIES + 1 - v);
		rm_ring_free(&r);
		for (__u32 i = 0; i < k; i++)
			s[i].weight = 1;
		print_message("exact limit: %u nodes x %u vnodes = %u entries "
			      "rejected\n",
			      k, v, RM_MAX_RING_ENTRIES + 1);
		break;
	}
	expect_build_error(s, RM_MAX_NODES_PER_RING + 1, 1, -E2BIG);
	build_ok(&(struct rm_seed){1, 2}, s, RM_MAX_NODES_PER_RING, 1, &r);
	rm_ring_free(&r);
	free(s);
}

/* ---- scratch memory (user/lib/util.c) --------------------------------- */
static bool inside(const void *p, const char *block, size_t len)
{
	return (const char *)p >= block && (const char *)p < block + len;
}

static bool all_zero(const void *p, size_t len)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++)
		if (c[i])
			return false;
	return true;
}

/* Loans come from the rest of a filled block's last huge page, zeroed
 * every time, the latest one's room back on its return; what does not
 * fit, or comes after the block went, is ordinary memory; a loan the
 * block outlives stays usable. */
static void test_scratch_memory(void **state)
{
	const size_t huge = 2UL << 20, snap = 960000;
	char *block, *p1, *p2, *p3, *big, *late;

	(void)state;
	/* no block yet: calloc's memory */
	p1 = rm_scratch_alloc(100);
	assert_non_null(p1);
	assert_true(all_zero(p1, 100));
	rm_scratch_free(p1);

	block = rm_huge_alloc_filled(snap);
	assert_non_null(block);
	p1 = rm_scratch_alloc(5000);
	assert_true(inside(p1, block + snap, huge - snap));
	assert_true(all_zero(p1, 5000));
	memset(p1, 0xa5, 5000);
	p2 = rm_huge_alloc(800000);
	assert_true(inside(p2, block + snap, huge - snap));
	assert_true(p2 >= p1 + 5000);
	assert_true(all_zero(p2, 800000));
	memset(p2, 0x5a, 800000);
	/* more than is left: a mapping of its own */
	big = rm_huge_alloc(400000);
	assert_non_null(big);
	assert_false(inside(big, block, huge));
	rm_huge_free(big, 400000);
	/* the latest loan returned: its room, zeroed again */
	rm_huge_free(p2, 800000);
	p3 = rm_scratch_alloc(300000);
	assert_ptr_equal(p3, p2);
	assert_true(all_zero(p3, 300000));
	memset(p3, 0x77, 300000);
	rm_scratch_free(p1); /* not the latest: its room waits */
	rm_scratch_free(p3); /* none out: all of it again */
	p1 = rm_scratch_alloc(5000);
	assert_true(inside(p1, block + snap, huge - snap));
	assert_true(all_zero(p1, 5000));

	/* the block goes while p1 is out: p1 stays, nothing new is lent */
	rm_huge_free(block, snap);
	memset(p1, 0x11, 5000);
	late = rm_scratch_alloc(64);
	assert_false(inside(late, block, huge));
	assert_true(all_zero(late, 64));
	rm_scratch_free(late);
	rm_scratch_free(p1);

	/* a new block lends afresh */
	block = rm_huge_alloc_filled(snap);
	p1 = rm_scratch_alloc(64);
	assert_true(inside(p1, block + snap, huge - snap));
	rm_scratch_free(p1);
	rm_huge_free(block, snap);
	late = rm_scratch_alloc(64);
	assert_false(inside(late, block, huge));
	rm_scratch_free(late);
}

/* ---- parsers (user/lib/util.c) ---------------------------------------- */
static void test_parse_nodes(void **state)
{
	struct rm_node_spec *sp;
	__u32 n;
	static const struct {
		const char *in;
		int err;
	} bad[] = {
	    {"a,,b", -EINVAL},
	    {"a:", -EINVAL},
	    {":2", -EINVAL},
	    {"a:0", -ERANGE},
	    {"a:101", -ERANGE},
	    {"", -EINVAL},
	    {",a", -EINVAL},
	    {"a,", -EINVAL},
	    {",", -EINVAL},
	    {"a:2:3", -EINVAL},
	    {"a:-1", -EINVAL},
	    {"a:+1", -EINVAL},
	    {"a:1x", -EINVAL},
	    {"a: 1", -EINVAL},
	    {"a b", -EINVAL},
	    {"a,b:0,c", -ERANGE},
	    {"a:99999999999999999999", -EINVAL},
	    {"0123456789012345678901234567890123", -EINVAL},
	};

	(void)state;
	assert_int_equal(rm_parse_nodes("a,b:2,c", &sp, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(sp[0].name, "a");
	assert_int_equal(sp[0].weight, 1);
	assert_int_equal(sp[0].id, 0);
	assert_string_equal(sp[1].name, "b");
	assert_int_equal(sp[1].weight, 2);
	assert_int_equal(sp[1].id, 1);
	assert_string_equal(sp[2].name, "c");
	assert_int_equal(sp[2].weight, 1);
	assert_int_equal(sp[2].id, 2);
	free(sp);
	assert_int_equal(rm_parse_nodes("solo", &sp, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(sp[0].name, "solo");
	free(sp);
	assert_int_equal(rm_parse_nodes("x:100,y:1,"
					"abcdefghijklmnopqrstuvwxyz01234",
					&sp, &n),
			 0);
	assert_int_equal(n, 3);
	assert_int_equal(sp[0].weight, RM_MAX_WEIGHT);
	assert_string_equal(sp[2].name, "abcdefghijklmnopqrstuvwxyz01234");
	free(sp);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err;

		sp = (void *)0x1;
		n = 77;
		err = rm_parse_nodes(bad[i].in, &sp, &n);
		if (err != bad[i].err)
			print_error("rm_parse_nodes(\"%s\") = %d, want %d\n",
				    bad[i].in, err, bad[i].err);
		assert_int_equal(err, bad[i].err);
		assert_null(sp);
		assert_int_equal(n, 0);
	}
	assert_int_equal(rm_parse_nodes(NULL, &sp, &n), -EINVAL);
}

static void test_parse_seed_round_trip(void **state)
{
	struct rm_seed s, t;
	char out[33], in[40];

	(void)state;
	assert_int_equal(rm_parse_seed("000102030405060708090a0b0c0d0e0f", &s),
			 0);
	assert_int_equal(s.k0, 0x0706050403020100ULL);
	assert_int_equal(s.k1, 0x0f0e0d0c0b0a0908ULL);
	memset(out, 'Z', sizeof(out));
	rm_format_seed(&s, out);
	assert_string_equal(out, "000102030405060708090a0b0c0d0e0f");
	assert_int_equal(
	    rm_parse_seed("0X000102030405060708090A0B0C0D0E0F", &t), 0);
	assert_memory_equal(&s, &t, sizeof(s));
	assert_int_equal(
	    rm_parse_seed("0xffeeddccbbaa99887766554433221100", &t), 0);
	assert_int_equal(t.k0, 0x8899aabbccddeeffULL);
	assert_int_equal(t.k1, 0x0011223344556677ULL);

	rng_state = 0x5eed;
	for (int i = 0; i < 1000; i++) {
		s.k0 = rng_next();
		s.k1 = i == 0 ? 0 : i == 1 ? ~0ULL : rng_next();
		rm_format_seed(&s, out);
		assert_int_equal(strlen(out), 32);
		assert_int_equal(strspn(out, "0123456789abcdef"), 32);
		assert_int_equal(rm_parse_seed(out, &t), 0);
		assert_memory_equal(&s, &t, sizeof(s));
		snprintf(in, sizeof(in), "0x%s", out);
		assert_int_equal(rm_parse_seed(in, &t), 0);
		assert_memory_equal(&s, &t, sizeof(s));
	}

	static const char *bad[] = {
	    "",
	    "0x",
	    "0",
	    "000102030405060708090a0b0c0d0e0",
	    "000102030405060708090a0b0c0d0e0f0",
	    "000102030405060708090a0b0c0d0e0g",
	    " 000102030405060708090a0b0c0d0e0f",
	    "000102030405060708090a0b0c0d0e0f ",
	    "0x0x0102030405060708090a0b0c0d0e0f",
	    "-00102030405060708090a0b0c0d0e0f",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(rm_parse_seed(bad[i], &t), -EINVAL);
	assert_int_equal(rm_parse_seed(NULL, &t), -EINVAL);
}

static void test_parse_addr(void **state)
{
	__be32 a[4];
	__u8 fam = 0;
	static const __u8 v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
				    0,	  0,	0,    0,    0, 0, 0, 1};
	static const char *bad[] = {
	    "",
	    "1.2.3",
	    "256.1.1.1",
	    "1.2.3.4 ",
	    " 1.2.3.4",
	    "1.2.3.4/24",
	    "2001:db8::1::2",
	    "gggg::",
	    "example.com",
	    "1.2.3.4.5",
	    "::ffff:1.2.3",
	    "[::1]",
	};

	(void)state;
	memset(a, 0xee, sizeof(a));
	assert_int_equal(rm_parse_addr("10.0.0.1", a, &fam), 0);
	assert_int_equal(fam, RM_FAMILY_V4);
	assert_int_equal(a[0], htonl(0x0a000001));
	assert_int_equal(a[1], 0);
	assert_int_equal(a[2], 0);
	assert_int_equal(a[3], 0);
	assert_int_equal(rm_parse_addr("255.255.255.255", a, &fam), 0);
	assert_int_equal(a[0], 0xffffffff);
	assert_int_equal(rm_parse_addr("2001:db8::1", a, &fam), 0);
	assert_int_equal(fam, RM_FAMILY_V6);
	assert_memory_equal(a, v6, 16);
	assert_int_equal(rm_parse_addr("::", a, &fam), 0);
	assert_int_equal(fam, RM_FAMILY_V6);
	assert_true(!a[0] && !a[1] && !a[2] && !a[3]);
	assert_int_equal(rm_parse_addr("::ffff:1.2.3.4", a, &fam), 0);
	assert_int_equal(fam, RM_FAMILY_V6);
	assert_int_equal(a[2], htonl(0xffff));
	assert_int_equal(a[3], htonl(0x01020304));
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		if (rm_parse_addr(bad[i], a, &fam) != -EINVAL)
			print_error("rm_parse_addr accepted \"%s\"\n", bad[i]);
		assert_int_equal(rm_parse_addr(bad[i], a, &fam), -EINVAL);
	}
	assert_int_equal(rm_parse_addr(NULL, a, &fam), -EINVAL);
}

static void test_parse_mac(void **state)
{
	__u8 m[6];
	static const __u8 want[6] = {0x00, 0x11, 0x22, 0xaa, 0xbb, 0xff};
	static const char *bad[] = {
	    "",
	    "00:11:22:33:44",
	    "00:11:22:33:44:55:66",
	    "00-11-22-33-44-55",
	    "0:11:22:33:44:55",
	    "000:11:22:33:44:5",
	    "zz:11:22:33:44:55",
	    "00:11:22:33:44:5g",
	    "00:11:22:33:44:55 ",
	    "00:11:22:33:44:55:",
	    "0011.2233.4455",
	    /* sscanf would take these: sign, space, 0x prefix */
	    " 1:22:33:44:55:66",
	    "+1:22:33:44:55:66",
	    "-1:22:33:44:55:66",
	    "0x:22:33:44:55:66",
	    "00:11:22:33:44: 5",
	};

	(void)state;
	assert_int_equal(rm_parse_mac("00:11:22:aa:BB:ff", m), 0);
	assert_memory_equal(m, want, 6);
	assert_int_equal(rm_parse_mac("ff:ff:ff:ff:ff:ff", m), 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(m[i], 0xff);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		int err = rm_parse_mac(bad[i], m);

		if (err != -EINVAL)
			print_error("rm_parse_mac accepted \"%s\"\n", bad[i]);
		assert_int_equal(err, -EINVAL);
	}
	assert_int_equal(rm_parse_mac(NULL, m), -EINVAL);
}

static void test_parse_u32(void **state)
{
	__u32 v;
	static const struct {
		const char *in;
		__u32 min, max;
		int err;
		__u32 val;
	} tab[] = {
	    {"0", 0, 10, 0, 0},
	    {"10", 0, 10, 0, 10},
	    {"007", 0, 10, 0, 7},
	    {"4294967295", 0, 0xffffffff, 0, 0xffffffff},
	    {"11", 0, 10, -ERANGE, 0},
	    {"0", 1, 10, -ERANGE, 0},
	    {"4294967296", 0, 0xffffffff, -ERANGE, 0},
	    {"99999999999", 0, 0xffffffff, -ERANGE, 0},
	    {"", 0, 10, -EINVAL, 0},
	    {"-1", 0, 10, -EINVAL, 0},
	    {"+1", 0, 10, -EINVAL, 0},
	    {"1a", 0, 10, -EINVAL, 0},
	    {"0x5", 0, 10, -EINVAL, 0},
	    {"1 ", 0, 10, -EINVAL, 0},
	    {" 1", 0, 10, -EINVAL, 0},
	    {" -18446744073709551615", 0, 10, -EINVAL, 0},
	    {"\t5", 0, 10, -EINVAL, 0},
	    {"1.0", 0, 10, -EINVAL, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		int err;

		v = 12345;
		err = rm_parse_u32(tab[i].in, tab[i].min, tab[i].max, &v);
		if (err != tab[i].err)
			print_error("rm_parse_u32(\"%s\", %u, %u) = %d (v=%u), "
				    "want %d\n",
				    tab[i].in, tab[i].min, tab[i].max, err, v,
				    tab[i].err);
		assert_int_equal(err, tab[i].err);
		if (!err)
			assert_int_equal(v, tab[i].val);
		else
			assert_int_equal(v, 12345); /* untouched */
	}
	/* out of unsigned long long: rejected either way, value untouched */
	v = 12345;
	assert_true(rm_parse_u32("18446744073709551616", 0, 0xffffffff, &v) <
		    0);
	assert_int_equal(v, 12345);
	assert_int_equal(rm_parse_u32(NULL, 0, 10, &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_build_deterministic_under_reordering),
	    cmocka_unit_test(test_build_deterministic_with_collisions),
	    cmocka_unit_test(test_build_entries_are_vnode_points),
	    cmocka_unit_test(test_build_near_equals_build),
	    cmocka_unit_test(test_quality_16_nodes),
	    cmocka_unit_test(test_quality_64_nodes),
	    cmocka_unit_test(test_add_node_moves_only_to_new),
	    cmocka_unit_test(test_remove_node_moves_only_its_keys),
	    cmocka_unit_test(test_weight_two_gets_double),
	    cmocka_unit_test(test_arcs_sum_to_keyspace),
	    cmocka_unit_test(test_diff_matches_brute_force),
	    cmocka_unit_test(test_diff_from_empty_equals_arcs),
	    cmocka_unit_test(test_index_bits),
	    cmocka_unit_test(test_encode_layout),
	    cmocka_unit_test(test_encode_enospc),
	    cmocka_unit_test(test_encoded_in),
	    cmocka_unit_test(test_lookup_empty),
	    cmocka_unit_test(test_lookup_small),
	    cmocka_unit_test(test_lookup_1000),
	    cmocka_unit_test(test_lookup_max_entries),
	    cmocka_unit_test(test_lookup_crafted),
	    cmocka_unit_test(test_index_forms),
	    cmocka_unit_test(test_lookup_corrupt),
	    cmocka_unit_test(test_build_bad_input),
	    cmocka_unit_test(test_parse_nodes),
	    cmocka_unit_test(test_parse_seed_round_trip),
	    cmocka_unit_test(test_parse_addr),
	    cmocka_unit_test(test_parse_mac),
	    cmocka_unit_test(test_parse_u32),
	    cmocka_unit_test(test_scratch_memory),
	};

	return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
