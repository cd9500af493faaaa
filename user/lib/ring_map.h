/* SPDX-License-Identifier: GPL-2.0 */
/* Kernel ring maps: the one way a ring becomes an inner array. */
#ifndef RM_RING_MAP_H
#define RM_RING_MAP_H

#include <ringmaster/rm_common.h>

/* A new inner ring array of nslots slots holding slots[], complete before
 * any program can see it (the caller swaps it into rm_rings). Returns the
 * map fd or -errno. */
int rm_ring_map_create(const struct rm_slot *slots, __u32 nslots,
		       const char *name);
/* The same for ring r, encoded straight into the map's memory (no copy
 * of the ring's megabytes of index through a buffer). */
struct rm_ring;
int rm_ring_map_encode(const struct rm_ring *r, const char *name);

#endif
