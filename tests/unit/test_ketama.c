// SPDX-License-Identifier: GPL-2.0
/*
 * Ring schemes that agree with existing clients (--ring ketama,
 * --ring md5-vnodes), checked against implementations that are not ours:
 *
 *   md5         include/ringmaster/rm_md5.h against RFC 1321's vectors
 *               and libhashkit's MD5 on messages of every length 0..255
 *   ketama      libmemcached itself (weighted ketama, MD5), its
 *               memcached_generate_hash() against rm_owner_of_key() on
 *               our encoded ring: 100,000 keys per fleet, identical
 *               owners, for fleets of equal and unequal weights, the
 *               default port and others, IPv4 and IPv6 addresses
 *   md5-vnodes  an independent build (libhashkit's MD5, qsort, a plain
 *               lower-bound search) against ours on 100,000 keys
 *   specs       --ring text read back as itself; bad specs refused;
 *               ring size limits
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <libmemcached/memcached.h>
#include <libhashkit-1.0/hashkit.h>

#include <ringmaster/rm_owner.h>
#include "key.h"
#include "ring.h"

#define KEYS 100000

static __u64 rng = 0x6b6574616d61;

static __u32 rnd(__u32 n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (__u32)(rng % n);
}

/* A memcached key: 1..250 printable bytes, no space or control. */
static __u32 random_key(char *k)
{
	__u32 len = rnd(8) ? 1 + rnd(40) : 1 + rnd(250), i;

	for (i = 0; i < len; i++)
		k[i] = (char)('!' + rnd('~' - '!' + 1));
	k[len] = 0;
	return len;
}

/* ---- md5 --------------------------------------------------------------- */
static void md5_bytes(const void *msg, __u32 len, __u8 out[16])
{
	static __u8 buf[RM_MD5_BUF];
	struct rm_md5 d;

	/* junk past the message: rm_md5 must never read it */
	memset(buf, 0xa5, sizeof(buf));
	memcpy(buf, msg, len);
	rm_md5(buf, len, &d);
	memcpy(out, d.h, 16);
}

static void test_md5(void **state)
{
	static const char *const rfc[][2] = {
	    {"", "d41d8cd98f00b204e9800998ecf8427e"},
	    {"a", "0cc175b9c0f1b6a831c399e269772661"},
	    {"abc", "900150983cd24fb0d6963f7d28e17f72"},
	    {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
	    {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
	    {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
	     "d174ab98d277d9f5a5611c2c9f419d9f"},
	    {"1234567890123456789012345678901234567890123456789012345678901"
	     "2345678901234567890",
	     "57edf4a22be3c955ac49da2e2107b67a"},
	};
	__u8 msg[RM_MD5_MAX], ours[16], theirs[16];
	char hex[33];

	(void)state;
	for (size_t i = 0; i < sizeof(rfc) / sizeof(rfc[0]); i++) {
		md5_bytes(rfc[i][0], (__u32)strlen(rfc[i][0]), ours);
		for (int j = 0; j < 16; j++)
			sprintf(hex + 2 * j, "%02x", ours[j]);
		assert_string_equal(hex, rfc[i][1]);
	}
	/* every length, each padding case (55, 56, 63, 64, 119, 120 ...) */
	for (__u32 len = 0; len <= RM_MD5_MAX; len++)
		for (int rep = 0; rep < 8; rep++) {
			for (__u32 i = 0; i < len; i++)
				msg[i] = (__u8)rnd(256);
			md5_bytes(msg, len, ours);
			libhashkit_md5_signature(msg, len, theirs);
			if (memcmp(ours, theirs, 16))
				fail_msg("md5 of %u bytes differs from "
					 "libhashkit's",
					 len);
		}
}

/* ---- ketama against libmemcached --------------------------------------- */
struct server {
	const char *addr;
	__u16 port;
	__u32 weight;
};

/* Our ring of servers (node i named "n%03d", id i) and a libmemcached
 * client with the same servers listed in the same (name) order. */
static void build_both(const struct server *sv, __u32 n, struct rm_ring *r,
		       struct rm_slot **slots, __u32 *nslots,
		       memcached_st **memc)
{
	struct rm_ring_spec spec = {.scheme = RM_RING_KETAMA};
	struct rm_node_spec *nodes = calloc(n, sizeof(*nodes));
	__u64 points = 0, weights = 0;

	assert_non_null(nodes);
	*memc = memcached_create(NULL);
	assert_non_null(*memc);
	assert_int_equal(memcached_behavior_set(*memc,
						MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED,
						1),
			 MEMCACHED_SUCCESS);
	assert_int_equal(memcached_behavior_set(*memc, MEMCACHED_BEHAVIOR_HASH,
						MEMCACHED_HASH_MD5),
			 MEMCACHED_SUCCESS);
	for (__u32 i = 0; i < n; i++) {
		snprintf(nodes[i].name, sizeof(nodes[i].name), "n%03u", i);
		nodes[i].weight = sv[i].weight;
		nodes[i].id = i;
		rm_ketama_host(sv[i].addr, sv[i].port, nodes[i].host,
			       sizeof(nodes[i].host));
		if (memcached_server_add_with_weight(*memc, sv[i].addr,
						     sv[i].port, sv[i].weight) !=
		    MEMCACHED_SUCCESS)
			fail_msg("libmemcached refused server %s port %u",
				 sv[i].addr, sv[i].port);
		weights += sv[i].weight;
	}
	assert_int_equal(memcached_server_count(*memc), n);
	assert_int_equal(rm_ring_build_spec(&(struct rm_seed){1, 2}, &spec,
					    nodes, n, 1, r),
			 0);
	for (__u32 i = 0; i < n; i++)
		points += rm_ketama_points(sv[i].weight, weights, n);
	assert_int_equal(r->n, points);
	*nslots = rm_ring_nslots(r);
	*slots = calloc(*nslots, sizeof(**slots));
	assert_non_null(*slots);
	assert_int_equal(rm_ring_encode(r, *slots, *nslots), 0);
	free(nodes);
}

static void compare_fleet(const char *desc, const struct server *sv, __u32 n)
{
	static struct rm_key_buf b;
	static char key[RM_KEY_MC_MAX + 1];
	struct rm_key_spec mc = {.kind = RM_KEY_MEMCACHED};
	struct rm_slot *slots;
	struct rm_ring r;
	memcached_st *memc;
	__u32 nslots, bad = 0, used = 0, *per = calloc(n, sizeof(*per));

	assert_non_null(per);
	build_both(sv, n, &r, &slots, &nslots, &memc);
	for (int i = 0; i < KEYS; i++) {
		struct rm_ring_view v = {.slots = slots, .nslots = nslots};
		__u32 len = random_key(key), node = ~0u, h = 0;
		__u32 theirs = memcached_generate_hash(memc, key, len);

		assert_int_equal(rm_owner_of_key(&v, &mc, RM_RING_KETAMA,
						 &r.seed, key, len, &b, &node,
						 &h),
				 0);
		/* the key hash alone: libhashkit's MD5 hash */
		if (h != libhashkit_md5(key, len) || node != theirs) {
			if (++bad <= 5)
				print_error("%s: key '%s': ours n%03u hash "
					    "0x%08x, libmemcached n%03u "
					    "hash 0x%08x\n",
					    desc, key, node, h, theirs,
					    libhashkit_md5(key, len));
			continue;
		}
		if (!per[node]++)
			used++;
	}
	print_message("ketama %-34s %u nodes, %u points, %d keys: %u "
		      "mismatches, %u nodes used\n",
		      desc, n, r.n, KEYS, bad, used);
	assert_int_equal(bad, 0);
	assert_int_equal(used, n);
	memcached_free(memc);
	rm_ring_free(&r);
	free(slots);
	free(per);
}

static void test_ketama_libmemcached(void **state)
{
	static const struct server three[] = {
	    {"198.18.0.11", 11211, 1},
	    {"198.18.0.12", 11211, 1},
	    {"198.18.0.13", 11211, 1},
	};
	static const struct server weighted[] = {
	    {"198.18.1.1", 11311, 1}, {"198.18.1.2", 11311, 3},
	    {"198.18.1.3", 11311, 2}, {"198.18.1.4", 11311, 5},
	    {"198.18.1.5", 11311, 1}, {"198.18.1.6", 11311, 4},
	    {"198.18.1.7", 11311, 1}, {"198.18.1.8", 11311, 2},
	    {"198.18.1.9", 11311, 7}, {"198.18.1.10", 11311, 1},
	};
	static const struct server mixed[] = {
	    {"2001:db8::a", 11211, 2},
	    {"2001:db8::b", 5000, 1},
	    {"198.18.2.1", 11211, 1},
	    {"198.18.2.2", 40000, 3},
	    {"cache-e.example", 11211, 1},
	};
	struct server *many;
	__u32 n;

	(void)state;
	compare_fleet("3 nodes, port 11211", three, 3);
	compare_fleet("10 nodes, weights 1-7, port 11311", weighted, 10);
	compare_fleet("IPv6, names, ports, weights", mixed, 5);
	/* equal weights where float rounding gives 156 points, not 160 */
	for (n = 2; n <= 64 && rm_ketama_points(1, n, n) == 160; n++)
		;
	assert_true(n <= 64);
	many = calloc(64, sizeof(*many));
	assert_non_null(many);
	for (__u32 i = 0; i < 64; i++) {
		static char addrs[64][20];

		snprintf(addrs[i], sizeof(addrs[i]), "198.18.3.%u", i + 1);
		many[i].addr = addrs[i];
		many[i].port = 11211;
		many[i].weight = 1;
	}
	print_message("ketama: %u equal nodes get %u points each\n", n,
		      rm_ketama_points(1, n, n));
	compare_fleet("equal weights, float rounding", many, n);
	compare_fleet("64 nodes", many, 64);
	free(many);
}

/* ---- md5-vnodes against an independent build --------------------------- */
struct ref_point {
	__u32 point, node, vnode;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref_point *x = a, *y = b;

	if (x->point != y->point)
		return x->point < y->point ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->vnode < y->vnode ? -1 : x->vnode > y->vnode;
}

static __u32 md5_be(const char *s, size_t len)
{
	unsigned char d[16];

	libhashkit_md5_signature((const unsigned char *)s, len, d);
	return (__u32)d[0] << 24 | (__u32)d[1] << 16 | (__u32)d[2] << 8 | d[3];
}

/* The template filled by hand: prefix {node} middle {i} suffix (or the
 * other way round), with no code of ours. */
static void fill(const char *tmpl, const char *node, __u32 i, char *out)
{
	const char *pn = strstr(tmpl, "{node}"), *pi = strstr(tmpl, "{i}");
	char num[16];

	snprintf(num, sizeof(num), "%u", i);
	if (pn < pi)
		sprintf(out, "%.*s%s%.*s%s%s", (int)(pn - tmpl), tmpl, node,
			(int)(pi - pn - 6), pn + 6, num, pi + 3);
	else
		sprintf(out, "%.*s%s%.*s%s%s", (int)(pi - tmpl), tmpl, num,
			(int)(pn - pi - 3), pi + 3, node, pn + 6);
}

static void compare_vnodes(const char *text, __u32 n, const __u32 *weights)
{
	static struct rm_key_buf b;
	static char key[RM_KEY_MC_MAX + 1], name[300];
	struct rm_key_spec mc = {.kind = RM_KEY_MEMCACHED};
	struct rm_node_spec *nodes = calloc(n, sizeof(*nodes));
	struct rm_ring_spec spec;
	struct ref_point *ref;
	struct rm_slot *slots;
	struct rm_ring r;
	const char *why;
	__u32 total = 0, k = 0, nslots, bad = 0;

	assert_non_null(nodes);
	assert_int_equal(rm_parse_ringspec(text, &spec, &why), 0);
	for (__u32 i = 0; i < n; i++) {
		snprintf(nodes[i].name, sizeof(nodes[i].name), "cache-%02u", i);
		nodes[i].weight = weights[i];
		nodes[i].id = i;
		total += weights[i] * spec.count;
	}
	assert_int_equal(rm_ring_build_spec(&(struct rm_seed){3, 4}, &spec,
					    nodes, n, 1, &r),
			 0);
	assert_int_equal(r.n, total);
	nslots = rm_ring_nslots(&r);
	slots = calloc(nslots, sizeof(*slots));
	assert_non_null(slots);
	assert_int_equal(rm_ring_encode(&r, slots, nslots), 0);

	ref = calloc(total, sizeof(*ref));
	assert_non_null(ref);
	for (__u32 i = 0; i < n; i++)
		for (__u32 v = 0; v < weights[i] * spec.count; v++) {
			fill(spec.tmpl, nodes[i].name, v, name);
			ref[k].point = md5_be(name, strlen(name));
			ref[k].node = i;
			ref[k++].vnode = v;
		}
	qsort(ref, total, sizeof(*ref), ref_cmp);
	for (__u32 i = 0; i < total; i++)
		if (r.entries[i].point != ref[i].point ||
		    r.nodes[r.entries[i].node].id != ref[i].node)
			fail_msg("%s: entry %u differs", text, i);
	for (int i = 0; i < KEYS; i++) {
		struct rm_ring_view v = {.slots = slots, .nslots = nslots};
		__u32 len = random_key(key), node = ~0u, h = 0, lo = 0,
		      hi = total, want = md5_be(key, len);

		while (lo < hi) {
			__u32 mid = lo + (hi - lo) / 2;

			if (ref[mid].point < want)
				lo = mid + 1;
			else
				hi = mid;
		}
		assert_int_equal(rm_owner_of_key(&v, &mc, RM_RING_MD5_VNODES,
						 &r.seed, key, len, &b, &node,
						 &h),
				 0);
		if (h != want || node != ref[lo == total ? 0 : lo].node)
			bad++;
	}
	print_message("md5-vnodes %-28s %u nodes, %u points, %d keys: %u "
		      "mismatches\n",
		      text, n, total, KEYS, bad);
	assert_int_equal(bad, 0);
	rm_ring_free(&r);
	free(slots);
	free(ref);
	free(nodes);
}

static void test_md5_vnodes(void **state)
{
	static const __u32 ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	static const __u32 mixed[5] = {1, 2, 1, 3, 1};

	(void)state;
	compare_vnodes("md5-vnodes:{node}-vnode-{i}:150", 8, ones);
	compare_vnodes("md5-vnodes:{node}#vnode{i}:128", 5, mixed);
	compare_vnodes("md5-vnodes:{i}:{node}:40", 8, ones);
}

/* ---- --ring text and limits --------------------------------------------- */
static void test_ring_spec(void **state)
{
	static const char *const good[] = {
	    "ringmaster", "ketama", "md5-vnodes:{node}-vnode-{i}:150",
	    "md5-vnodes:{node}#vnode{i}:128", "md5-vnodes:{i}:{node}:4096",
	    "md5-vnodes:x{node}y{i}z:1",
	};
	static const char *const bad[] = {
	    "", "Ketama", "ketama:1", "md5", "md5-vnodes",
	    "md5-vnodes:{node}-{i}", "md5-vnodes:{node}-{i}:0",
	    "md5-vnodes:{node}-{i}:4097", "md5-vnodes:{node}-{i}:x",
	    "md5-vnodes:{node}-{i}:-1", "md5-vnodes:{node}:10",
	    "md5-vnodes:{i}:10", "md5-vnodes:{node}{node}{i}:10",
	    "md5-vnodes:{node}{i}{i}:10", "md5-vnodes:{node} {i}:10",
	    "md5-vnodes::10",
	    "md5-vnodes:{node}-0123456789012345678901234567890123456-{i}:1",
	};
	struct rm_ring_spec spec, again;
	char text[96];
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (rm_parse_ringspec(good[i], &spec, &why))
			fail_msg("--ring '%s' refused: %s", good[i], why);
		assert_true(rm_ringspec_valid(&spec));
		rm_format_ringspec(&spec, text, sizeof(text));
		assert_string_equal(text, good[i]);
		assert_int_equal(rm_parse_ringspec(text, &again, &why), 0);
		assert_memory_equal(&spec, &again, sizeof(spec));
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		if (!rm_parse_ringspec(bad[i], &spec, &why))
			fail_msg("--ring '%s' accepted", bad[i]);
		assert_non_null(why);
	}
}

static void test_limits(void **state)
{
	struct rm_ring_spec ketama = {.scheme = RM_RING_KETAMA};
	struct rm_ring_spec vn;
	struct rm_node_spec *nodes;
	const __u32 n = RM_MAX_NODES_PER_RING;
	struct rm_ring r;
	const char *why;

	(void)state;
	/* a full ring of equal nodes fits: 160 points each at most */
	assert_true((__u64)n * RM_KETAMA_POINTS <= RM_MAX_RING_ENTRIES);
	nodes = calloc(n, sizeof(*nodes));
	assert_non_null(nodes);
	for (__u32 i = 0; i < n; i++) {
		snprintf(nodes[i].name, sizeof(nodes[i].name), "n%u", i);
		snprintf(nodes[i].host, sizeof(nodes[i].host), "198.18.%u.%u",
			 i / 250, i % 250 + 1);
		nodes[i].weight = 1 + i % RM_MAX_WEIGHT;
		nodes[i].id = i;
	}
	assert_int_equal(rm_ring_build_spec(&(struct rm_seed){1, 1}, &ketama,
					    nodes, n, 1, &r),
			 0);
	assert_true(r.n <= (__u64)n * RM_KETAMA_POINTS);
	rm_ring_free(&r);
	/* a ketama node without a name to hash */
	nodes[7].host[0] = 0;
	assert_int_equal(rm_ring_build_spec(&(struct rm_seed){1, 1}, &ketama,
					    nodes, 8, 1, &r),
			 -EINVAL);
	/* md5-vnodes: weight x COUNT over the ring's entries */
	for (__u32 i = 0; i < 8; i++)
		nodes[i].weight = RM_MAX_WEIGHT;
	assert_true(8ull * RM_MAX_WEIGHT * RM_MAX_VNODES > RM_MAX_RING_ENTRIES);
	assert_int_equal(rm_parse_ringspec("md5-vnodes:{node}-{i}:4096", &vn,
					   &why),
			 0);
	assert_int_equal(rm_ring_build_spec(&(struct rm_seed){1, 1}, &vn,
					    nodes, 8, 1, &r),
			 -E2BIG);
	free(nodes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_md5),
	    cmocka_unit_test(test_ketama_libmemcached),
	    cmocka_unit_test(test_md5_vnodes),
	    cmocka_unit_test(test_ring_spec),
	    cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests_name("ketama", tests, NULL, NULL);
}
