/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ring search, compiled unchanged into the BPF program and userspace
 * (ringctl lookup, tests, benchmarks), so both pick the same owner.
 *
 * The includer defines how a slot is read, before including this file:
 *   RM_RING_T                 the ring handle type
 *   RM_RING_SLOT(ring, idx)   const struct rm_slot * or NULL if out of range
 *   RM_RING_SLOT_PROBE        optional: the same for the probed entries
 * BPF reads slots with bpf_map_lookup_elem on the inner array; userspace
 * indexes a bounds-checked array. Layout: see struct rm_slot.
 *
 * Why an index in front of the binary search: a plain binary search over
 * a sorted array misses cache at every level once the ring outgrows it,
 * and in BPF every read of an inner-map slot is a helper call. The top
 * `bits` of the key select a bucket word (rm_common.h, rm_rings) that
 * names the owner alone when no point, or one, lies in the bucket: with
 * two buckets per entry 9 keys in 10, from one read of an index of four
 * bytes a bucket, which a cache keeps where the entries would not fit.
 * The rest search the few entries of their bucket. The owner is always
 * the same as a full lower-bound search over the sorted points: tested.
 */
#ifndef RM_SEARCH_H
#define RM_SEARCH_H

#include "rm_common.h"

#if !defined(RM_RING_T) || !defined(RM_RING_SLOT)
#error "define RM_RING_T and RM_RING_SLOT before including rm_search.h"
#endif
/* RM_RING_SLOT_PROBE(ring, idx): the same, for the entries a search
 * probes (an index that changes from probe to probe, which BPF reads
 * another way: bpf/ring.h). RM_RING_SLOT unless the includer says. */
#ifndef RM_RING_SLOT_PROBE
#define RM_RING_SLOT_PROBE RM_RING_SLOT
#endif

enum rm_search_result {
	RM_SEARCH_OK = 0,
	RM_SEARCH_EMPTY = 1,   /* ring has no entries: no node */
	RM_SEARCH_CORRUPT = 2, /* header or index points outside the ring */
};

/* Node of entry i (entry 0 for i = n: past the last point, wrap). */
RM_INLINE int rm_ring_entry_node(RM_RING_T ring, __u32 base, __u32 n,
				 __u32 i, __u32 *node)
{
	const struct rm_slot *s;

	if (i >= n)
		i = 0;
	s = RM_RING_SLOT_PROBE(ring, base + (i >> 1));
	if (!s)
		return RM_SEARCH_CORRUPT;
	*node = RM_ENTRY_NODE(s, i);
	return RM_SEARCH_OK;
}

/* Find the node owning key. On RM_SEARCH_OK, *node is the owner's id. */
RM_INLINE int rm_ring_search(RM_RING_T ring, __u32 key, __u32 *node)
{
	const struct rm_slot *hdr, *s;
	__u32 n, bits, shift, nb, base, b, w, lo, hi, i;

	hdr = RM_RING_SLOT(ring, 0);
	if (!hdr)
		return RM_SEARCH_CORRUPT;
	n = hdr->a;
	bits = RM_RING_HDR_BITS(hdr->b);
	/* a ring of another format is never read as this one */
	if (RM_RING_HDR_FORMAT(hdr->b) != RM_RING_FORMAT)
		return RM_SEARCH_CORRUPT;
	if (n == 0)
		return RM_SEARCH_EMPTY;
	if (n > RM_MAX_RING_ENTRIES || bits < RM_INDEX_BITS_MIN ||
	    bits > RM_INDEX_BITS_MAX)
		return RM_SEARCH_CORRUPT;
	shift = 32 - bits;
	nb = 1u << bits;
	base = 1 + (nb >> 2);

	b = key >> shift;
	s = RM_RING_SLOT(ring, 1 + (b >> 2));
	if (!s)
		return RM_SEARCH_CORRUPT;
	w = RM_BKT_WORD(s, b);
	if (RM_BKT_TAG(w) == RM_BKT_SPLIT) {
		if (shift > RM_BKT_SPLIT_OFF_BITS)
			return RM_SEARCH_CORRUPT;
		if ((key & ((1u << shift) - 1)) >
		    ((w & RM_BKT_ID_MASK) >> RM_BKT_SPLIT_ID_BITS)) {
			/* past the point: the next bucket's first owner
			 * (bucket 0's after the last: entry 0, the wrap) */
			b = (b + 1) & (nb - 1);
			if (!(b & 3)) {
				s = RM_RING_SLOT(ring, 1 + (b >> 2));
				if (!s)
					return RM_SEARCH_CORRUPT;
			}
			w = RM_BKT_WORD(s, b);
			if (RM_BKT_TAG(w) == RM_BKT_SEARCH) {
				lo = w & ((1u << RM_BKT_LO_BITS) - 1);
				if (lo > n)
					return RM_SEARCH_CORRUPT;
				return rm_ring_entry_node(ring, base, n, lo,
							  node);
			}
		}
		if (RM_BKT_TAG(w) == RM_BKT_SPLIT) {
			*node = w & ((1u << RM_BKT_SPLIT_ID_BITS) - 1);
			return RM_SEARCH_OK;
		}
	}
	if (RM_BKT_TAG(w) == RM_BKT_DIRECT) {
		*node = w;
		return RM_SEARCH_OK;
	}
	if (RM_BKT_TAG(w) != RM_BKT_SEARCH)
		return RM_SEARCH_CORRUPT;
	lo = w & ((1u << RM_BKT_LO_BITS) - 1);
	hi = (w & RM_BKT_ID_MASK) >> RM_BKT_LO_BITS;
	hi = hi == RM_BKT_CNT_MAX ? n : lo + hi;
	if (hi > n || lo > hi)
		return RM_SEARCH_CORRUPT;

	/* lower bound of key in [lo, hi); hi itself is the first entry of
	 * a later bucket, the owner when nothing in this bucket is >= key */
	for (i = 0; i < RM_SEARCH_MAX_PROBES; i++) {
		__u32 mid;

		if (lo >= hi)
			break;
		mid = lo + ((hi - lo) >> 1);
		s = RM_RING_SLOT_PROBE(ring, base + (mid >> 1));
		if (!s)
			return RM_SEARCH_CORRUPT;
		if (RM_ENTRY_POINT(s, mid) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return rm_ring_entry_node(ring, base, n, lo, node);
}

#endif /* RM_SEARCH_H */
