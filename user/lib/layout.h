/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which layout a pin dir holds. The pinned maps change between releases
 * (new maps, fields appended to a map's value); a program loaded over pins
 * of another layout fails inside libbpf or, where the sizes happen to
 * match, reads old bytes with a new meaning. So the state records its
 * layout when it is created, in the pinned array RM_LAYOUT_MAP, and
 * ringload attach compares it with its own before using the pins.
 *
 * The identity is a fingerprint computed from the BPF object this build
 * embeds: every pinned map's name, type, key and value size, max_entries
 * (the connection tables' excepted: sized at attach), flags, the shape of
 * its key and value types from BTF (member names, offsets, sizes), and
 * rm_rings' inner map, and the format of the rings' slots (RM_RING_FORMAT,
 * rm_common.h). Nobody has to remember to bump it. RM_LAYOUT_NUMBER
 * is for people ("layout 2"): bump it with a change of the pinned maps.
 * Pins without a record hold layout 0, from before records.
 */
#ifndef RM_LAYOUT_H
#define RM_LAYOUT_H

#include <stddef.h>
#include <linux/types.h>

#ifndef RM_LAYOUT_NUMBER
#define RM_LAYOUT_NUMBER 2 /* 2: ring format 2 (4-byte buckets) */
#endif
#define RM_LAYOUT_MAP "rm_layout"

/* The record (one ARRAY element); only grows by appending fields. */
struct rm_layout {
	__u32 number;	   /* RM_LAYOUT_NUMBER of the build that created it */
	__u32 ring_format; /* its RM_RING_FORMAT (0: before ring format 2) */
	__u64 fingerprint; /* of that build's maps */
	char version[32];  /* its rm_version(), for people */
};

/* This build's layout. 0 or -errno (rm_errmsg() says why). */
int rm_layout_ours(struct rm_layout *out);
/* The pins' layout: 0 and *out (number 0, fingerprint 0: pins from before
 * records), or -ENOENT when pin_dir holds no state at all. */
int rm_layout_pinned(const char *pin_dir, struct rm_layout *out);
/* Whether a writer may change pin_dir's rings: 0 when they are in this
 * build's ring format (or there is no state yet), else -EPROTO with a
 * message naming --migrate: the program attached there reads its own
 * format only. */
int rm_layout_writable(const char *pin_dir);
/* Record l as pin_dir's layout (made when missing). */
int rm_layout_record(const char *pin_dir, const struct rm_layout *l);
static inline int rm_layout_same(const struct rm_layout *a,
				 const struct rm_layout *b)
{
	return a->fingerprint == b->fingerprint;
}
/* "layout 1 (3f2a9c1d0b7e4a55, ringmaster 0.1.0)" or "layout 0 (from
 * before layout records)" */
void rm_layout_text(const struct rm_layout *l, char *out, size_t len);

#endif
