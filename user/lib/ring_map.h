/* SPDX-License-Identifier: GPL-2.0 */
/* Kernel ring maps: the one way a ring becomes an inner array, and the
 * one way one is read back. */
#ifndef RM_RING_MAP_H
#define RM_RING_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <ringmaster/rm_common.h>

/* n values of vsize bytes at keys into map fd, in order: one batch update
 * (for an outer map, one grace period for all), or one key at a time
 * where the kernel has no batch update for the map. 0 or -errno. */
int rm_map_write(int fd, const __u32 *keys, const void *values, size_t vsize,
		 __u32 n);
/* An inner ring array of nslots slots holding slots[], complete before
 * any program can see it (the caller swaps it into rm_rings). Returns the
 * map fd or -errno. */
int rm_ring_map_create(const struct rm_slot *slots, __u32 nslots,
		       const char *name);
/* slots[0, nslots) written into fd, an array of rm_ring_map_pages()
 * shape as a spare is (no program reads it): 0, -ENOSPC if it does not
 * fit them, or -errno. */
int rm_ring_map_refill(int fd, const struct rm_slot *slots, __u32 nslots);
/* The same for ring r, written into spare (an array of rm_ring_map_pages()
 * shape that no outer map and no program holds any more; -1: none) when
 * it is large enough and not much larger, else into a new array. Returns
 * the fd (spare's own when it was taken: close spare only when the fd
 * returned is another) or -errno. */
struct rm_ring;
int rm_ring_map_encode(const struct rm_ring *r, const char *name, int spare);

/* Is fd a ring array? Its elements in *pages; -EPROTO if not one. */
int rm_ring_map_pages(int fd, __u32 *pages);
/* Slots in use of an array of cap slots: as its header says (a header out
 * of bounds: cap, for the reader to refuse it). */
__u32 rm_ring_map_used(const struct rm_slot *slots, __u32 cap);
/* The array fd mapped (read-write when rw): *slots, the slots in use in
 * *nslots, the mapping's length in *len (rm_ring_map_len(*nslots): what
 * munmap takes). 0 or -errno. */
int rm_ring_map_mmap(int fd, bool rw, struct rm_slot **slots, __u32 *nslots,
		     size_t *len);
size_t rm_ring_map_len(__u32 nslots);
/* The array's first page alone mapped (read-write when rw): *hdr, its
 * header slot first. Unmap with rm_ring_map_head_unmap(). 0 or -errno. */
int rm_ring_map_head(int fd, bool rw, struct rm_slot **hdr);
void rm_ring_map_head_unmap(struct rm_slot *hdr);
/* Slots [first, first + count) of ring array fd (of pages elements),
 * count > 0, copied by the kernel in one batch lookup of the elements
 * holding them into fresh huge-page memory: rd->slots points at slot
 * first. Where a fresh mapping costs a fault per 4 KiB page touched (a
 * VM's shadow pages), this takes half the time of reading them through
 * rm_ring_map_mmap(). Free with rm_ring_map_read_free(). 0, -ERANGE past
 * the array, or -errno. */
struct rm_slot_read {
	const struct rm_slot *slots;
	void *mem;
	size_t len;
};
int rm_ring_map_read(int fd, __u32 pages, __u32 first, __u32 count,
		     struct rm_slot_read *rd);
void rm_ring_map_read_free(struct rm_slot_read *rd);
/* The slots in use copied into *slots (malloc'd). 0 or -errno. */
int rm_ring_map_copy(int fd, struct rm_slot **slots, __u32 *nslots);

#endif
