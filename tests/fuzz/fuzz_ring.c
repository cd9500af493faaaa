// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: the ring builder's inputs (user/lib/ring.c). The input
 * is a seed (16 bytes), vnodes, then nodes as (weight byte, name bytes up
 * to ',' ). Oracles: rm_ring_build() refuses exactly the invalid sets
 * (bad name, duplicate, weight out of range) and accepts the rest; the
 * same set in reverse order builds the same ring; the encoded ring's
 * search (the kernel's code) finds, for keys from the input, the owner a
 * plain lower-bound search over the entries finds; diff between the two
 * builds moves nothing. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
/* rm_search.h holds the result codes and needs a slot accessor; the
 * search runs through rm_ring_lookup() */
struct null_ring;
#define RM_RING_T const struct null_ring *
#define RM_RING_SLOT(ring, idx)                                                \
	((void)(ring), (void)(idx), (const struct rm_slot *)NULL)
#include <ringmaster/rm_search.h>
#include "ring.h"
#include "util.h"

#define MAX_FUZZ_NODES 16
#define MAX_FUZZ_VNODES 16 /* keeps one run fast: 16*16*100 entries max */

static __u32 ref_owner(const struct rm_ring *r, __u32 key)
{
	__u32 lo = 0, hi = r->n;

	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (r->entries[mid].point < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return r->nodes[r->entries[lo == r->n ? 0 : lo].node].id;
}

static int expected(const struct rm_node_spec *n, __u32 count)
{
	for (__u32 i = 0; i < count; i++) {
		if (!rm_name_valid(n[i].name))
			return -EINVAL;
	}
	for (__u32 i = 0; i < count; i++)
		if (n[i].weight < 1 || n[i].weight > RM_MAX_WEIGHT)
			return -ERANGE;
	for (__u32 i = 0; i < count; i++)
		for (__u32 j = i + 1; j < count; j++)
			if (!strcmp(n[i].name, n[j].name))
				return -EEXIST;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rm_node_spec nodes[MAX_FUZZ_NODES], rev[MAX_FUZZ_NODES];
	struct rm_ring a, b;
	struct rm_seed seed;
	struct rm_slot *slots;
	struct rm_move *moves;
	size_t pos = 18, n_moves;
	__u64 moved;
	__u32 vnodes, count = 0, nslots, id;
	int want, err;

	if (size < 18)
		return 0;
	memcpy(&seed, data, 16);
	vnodes = data[16] % (MAX_FUZZ_VNODES + 1); /* 0 is invalid */
	(void)data[17]; /* reserved: keeps old corpora meaningful */
	memset(nodes, 0, sizeof(nodes));
	while (pos < size && count < MAX_FUZZ_NODES) {
		size_t len = 0;

		nodes[count].weight = data[pos++] % (RM_MAX_WEIGHT + 2);
		while (pos < size && data[pos] != ',') {
			if (len < RM_NAME_MAX - 1)
				nodes[count].name[len++] = (char)data[pos];
			pos++;
		}
		pos++; /* the ',' */
		nodes[count].id = count * 7 + 3;
		count++;
	}
	want = vnodes ? expected(nodes, count) : -EINVAL;
	err = rm_ring_build(&seed, nodes, count, vnodes, &a);
	/* an invalid name and a bad weight in one set: either error is right */
	if (want && err && want != err) {
		FUZZ_ASSERT(err == -EINVAL || err == -ERANGE || err == -EEXIST);
		return 0;
	}
	FUZZ_ASSERT(err == want);
	if (err)
		return 0;
	FUZZ_ASSERT(a.n_nodes == count);
	for (__u32 i = 0; i < count; i++)
		rev[i] = nodes[count - 1 - i];
	FUZZ_ASSERT(!rm_ring_build(&seed, rev, count, vnodes, &b));
	FUZZ_ASSERT(a.n == b.n);
	for (__u32 i = 0; i < a.n; i++) {
		FUZZ_ASSERT(a.entries[i].point == b.entries[i].point);
		FUZZ_ASSERT(!strcmp(a.nodes[a.entries[i].node].name,
				    b.nodes[b.entries[i].node].name));
		if (i)
			FUZZ_ASSERT(a.entries[i - 1].point <=
				    a.entries[i].point);
	}
	FUZZ_ASSERT(!rm_ring_diff(&a, &b, &moves, &n_moves, &moved));
	FUZZ_ASSERT(moved == 0);
	free(moves);

	nslots = rm_ring_nslots(&a);
	slots = calloc(nslots ? nslots : 1, sizeof(*slots));
	FUZZ_ASSERT(slots);
	FUZZ_ASSERT(!rm_ring_encode(&a, slots, nslots));
	if (nslots > 1)
		FUZZ_ASSERT(rm_ring_encode(&a, slots, nslots - 1) == -ENOSPC);
	for (size_t k = 0; k + 4 <= size; k += 3) {
		__u32 key;

		memcpy(&key, data + k, 4);
		err = rm_ring_lookup(slots, nslots, key, &id);
		if (!a.n) {
			FUZZ_ASSERT(err == RM_SEARCH_EMPTY);
			continue;
		}
		FUZZ_ASSERT(err == RM_SEARCH_OK);
		FUZZ_ASSERT(id == ref_owner(&a, key));
	}
	free(slots);
	rm_ring_free(&a);
	rm_ring_free(&b);
	return 0;
}
