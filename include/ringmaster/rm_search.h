/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ring search, compiled unchanged into the BPF program and userspace
 * (ringctl lookup, tests, benchmarks), so both pick the same owner.
 *
 * The includer defines how a slot is read, before including this file:
 *   RM_RING_T                 the ring handle type
 *   RM_RING_SLOT(ring, idx)   const struct rm_slot * or NULL if out of range
 * BPF reads slots with bpf_map_lookup_elem on the inner array; userspace
 * indexes a bounds-checked array. Layout: see struct rm_slot.
 *
 * Why an index in front of the binary search: a plain binary search over
 * a sorted array misses cache at every level once the ring outgrows it,
 * and in BPF every read of an inner-map slot is a helper call. The top
 * `bits` of the key select a bucket that stores the range of entries able
 * to own the key and the owner of the bucket's first part; with two
 * buckets per entry most lookups are answered by header + bucket, and the
 * rest probe one or two entries, whatever n is. The owner is always the
 * same as a full lower-bound search over the sorted points: tested.
 */
#ifndef RM_SEARCH_H
#define RM_SEARCH_H

#include "rm_common.h"

#if !defined(RM_RING_T) || !defined(RM_RING_SLOT)
#error "define RM_RING_T and RM_RING_SLOT before including rm_search.h"
#endif

enum rm_search_result {
	RM_SEARCH_OK = 0,
	RM_SEARCH_EMPTY = 1,   /* ring has no entries: no node */
	RM_SEARCH_CORRUPT = 2, /* header or index points outside the ring */
};

/* Find the node owning key. On RM_SEARCH_OK, *node is the owner's id. */
RM_INLINE int rm_ring_search(RM_RING_T ring, __u32 key, __u32 *node)
{
	const struct rm_slot *hdr, *bucket, *s;
	__u32 n, bits, base, lo, hi, i;

	hdr = RM_RING_SLOT(ring, 0);
	if (!hdr)
		return RM_SEARCH_CORRUPT;
	n = hdr->a;
	bits = hdr->b;
	if (n == 0)
		return RM_SEARCH_EMPTY;
	if (n > RM_MAX_RING_ENTRIES || bits < RM_INDEX_BITS_MIN ||
	    bits > RM_INDEX_BITS_MAX)
		return RM_SEARCH_CORRUPT;
	base = 1 + (1u << bits);

	bucket = RM_RING_SLOT(ring, 1 + (key >> (32 - bits)));
	if (!bucket)
		return RM_SEARCH_CORRUPT;
	lo = bucket->a;
	hi = bucket->b;
	if (hi > n || lo > hi)
		return RM_SEARCH_CORRUPT;
	/* the common case: the bucket's first owner covers the key */
	if (lo == hi || key <= bucket->c) {
		*node = bucket->d;
		return RM_SEARCH_OK;
	}

	/* entry lo is below key: lower bound of key in (lo, hi); hi itself
	 * is the first entry of a later bucket, the owner when nothing in
	 * this bucket is >= key */
	lo++;
	for (i = 0; i < RM_SEARCH_MAX_PROBES; i++) {
		__u32 mid;

		if (lo >= hi)
			break;
		mid = lo + ((hi - lo) >> 1);
		s = RM_RING_SLOT(ring, base + (mid >> 1));
		if (!s)
			return RM_SEARCH_CORRUPT;
		if (RM_ENTRY_POINT(s, mid) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= n)
		lo = 0; /* past the last point: wrap to the first */
	s = RM_RING_SLOT(ring, base + (lo >> 1));
	if (!s)
		return RM_SEARCH_CORRUPT;
	*node = RM_ENTRY_NODE(s, lo);
	return RM_SEARCH_OK;
}

#endif /* RM_SEARCH_H */
