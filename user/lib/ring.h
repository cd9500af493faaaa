/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace consistent-hash ring: build (deterministic), exact analytics,
 * and encoding into the kernel's slot layout (struct rm_slot).
 */
#ifndef RM_RING_H
#define RM_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <ringmaster/rm_common.h>
#include <ringmaster/rm_hash.h>

/* Keys of the 32-bit ring: a share is keys / RM_KEYSPACE. */
#define RM_KEYSPACE 4294967296.0

/* One node as the caller describes it. id is opaque to the ring and is
 * what the encoded ring stores per entry (live: the rm_nodes slot; offline:
 * the node's rank by name). */
/* What a node is called in a ketama ring: "ADDR" or "ADDR:PORT". */
#define RM_KETAMA_HOST_MAX 64

struct rm_node_spec {
	char name[RM_NAME_MAX];
	__u32 weight;
	__u32 id;
	/* ketama: the server as libmemcached names it (rm_ketama_host) */
	char host[RM_KETAMA_HOST_MAX];
};

struct rm_ring_entry {
	__u32 point; /* position on the 32-bit ring */
	__u32 node;  /* index into rm_ring.nodes */
};

struct rm_ring {
	struct rm_seed seed;
	struct rm_ring_spec spec; /* the scheme: where the points are */
	__u32 vnodes;             /* per unit of weight */
	__u32 n_nodes;
	struct rm_node_spec *nodes; /* sorted by name: canonical order */
	__u32 n;                  /* entries */
	struct rm_ring_entry *entries; /* sorted by (point, name, vnode) */
	size_t mem_len; /* entries in rm_huge_alloc() memory of this size;
			 * 0: malloc'd (rm_ring_free() knows which) */
};

/* Keyed point of a node's vnode: SipHash-1-3 of the name zero-padded to
 * RM_NAME_MAX bytes followed by the 4-byte little-endian vnode index. */
__u32 rm_vnode_point(const struct rm_seed *seed, const char *name, __u32 vnode);
/* The same for many vnodes of one name: the SipHash state after the
 * padded name, compressed once, so each point costs the last block and
 * the finalisation (4 rounds of 8, no copy of the name). */
struct rm_vnode_hasher {
	struct rm_sip s;
};
void rm_vnode_hasher_init(struct rm_vnode_hasher *h, const struct rm_seed *seed,
			  const char *name);
__u32 rm_vnode_hasher_point(const struct rm_vnode_hasher *h, __u32 vnode);

/* Build a ring. Same seed, vnodes and set of (name, weight) in any order
 * give a byte-identical ring. 0 nodes gives an empty ring. Errors (no ring
 * is returned): -EINVAL bad name (empty, too long, not printable) or vnodes
 * out of 1..RM_MAX_VNODES, -EEXIST duplicate name, -ERANGE weight out of
 * 1..RM_MAX_WEIGHT, -E2BIG too many nodes or entries, -ENOMEM. */
int rm_ring_build(const struct rm_seed *seed, const struct rm_node_spec *nodes,
		  __u32 n_nodes, __u32 vnodes, struct rm_ring *out);
/* The same under a ring scheme (struct rm_ring_spec; rm_ring_build() is
 * this with the ringmaster scheme):
 *   ringmaster  weight x vnodes keyed points a node (rm_vnode_point)
 *   ketama      libmemcached's weighted ketama: rm_ketama_points() a
 *               node, four per MD5 digest of "HOST-K" (host from
 *               nodes[].host, K from 0), each digest word little-endian;
 *               vnodes unused
 *   md5-vnodes  weight x spec->count points a node: the first 4 bytes,
 *               big-endian, of the MD5 of the template filled with the
 *               node's name and the vnode index i (from 0); vnodes unused
 * Equal points are ordered by node name. -EINVAL also for a ketama node
 * without host or a template whose name is too long. */
int rm_ring_build_spec(const struct rm_seed *seed,
		       const struct rm_ring_spec *spec,
		       const struct rm_node_spec *nodes, __u32 n_nodes,
		       __u32 vnodes, struct rm_ring *out);
/* The same ring rm_ring_build_spec() builds, made from near (a ring a
 * change away: the live ring against the next, or the next against the
 * one it replaces) where near has the same seed, vnodes and ringmaster
 * scheme: the entries of nodes both hold with the same weight are taken
 * from near, only the others' points are computed and sorted, and the
 * two merged. Otherwise (or near NULL) it builds. A one-node change
 * costs a merge instead of a build. */
int rm_ring_build_near(const struct rm_seed *seed,
		       const struct rm_ring_spec *spec,
		       const struct rm_node_spec *nodes, __u32 n_nodes,
		       __u32 vnodes, const struct rm_ring *near,
		       struct rm_ring *out);
/* libmemcached's name of a server host:port in its ketama continuum:
 * "HOST" for port 11211 (or 0, which it takes as 11211), else
 * "HOST:PORT". */
void rm_ketama_host(const char *host, __u16 port, char *out, size_t len);
/* Points a node of weight gets in a weighted ketama ring of n_nodes
 * nodes weighing total_weight: libmemcached's formula, float rounding
 * included (160 for equal weights, or 156 where float rounds down). */
__u32 rm_ketama_points(__u32 weight, __u64 total_weight, __u32 n_nodes);
/* An md5-vnodes template with {node} and {i} filled into out; 0, or
 * -ENAMETOOLONG when it does not fit len or RM_MD5_MAX bytes. */
int rm_md5_vnode_name(const char *tmpl, const char *node, __u32 i, char *out,
		      size_t len);
void rm_ring_free(struct rm_ring *r);
/* The largest vnodes (<= RM_MAX_VNODES) at which these nodes fit in
 * RM_MAX_RING_ENTRIES, 0 if none does. */
__u32 rm_ring_max_vnodes(const struct rm_node_spec *nodes, __u32 n_nodes);
/* Why rm_ring_build() returns -E2BIG for these nodes at vnodes, in words
 * that name the fix: too many nodes for one ring, or too many entries
 * (then the largest --vnodes that fits). */
void rm_ring_too_big(const struct rm_node_spec *nodes, __u32 n_nodes,
		     __u32 vnodes, char *out, size_t len);

/* Exact keyspace owned by each node, in keys (sums to 2^32 when n > 0):
 * arcs[i] belongs to r->nodes[i]. */
void rm_ring_arcs(const struct rm_ring *r, __u64 *arcs);

/* Index of a node by name in r->nodes, or -1. */
int rm_ring_find(const struct rm_ring *r, const char *name);

/* Keyspace that changes owner between two rings, by (from, to) name. */
struct rm_move {
	char from[RM_NAME_MAX];
	char to[RM_NAME_MAX];
	__u64 keys; /* exact count of 32-bit keys */
};
/* *moves is malloc'd (free it), sorted by keys descending then names.
 * *moved is the total. Either ring may be empty (then everything owned
 * moves to/from "-"). Returns 0 or -ENOMEM. */
int rm_ring_diff(const struct rm_ring *from, const struct rm_ring *to,
		 struct rm_move **moves, size_t *n_moves, __u64 *moved);

/* r's nodes (sorted by name), size and scheme as rm_ring_build_spec()
 * makes them, without its points (no entries): what rm_ring_digest()
 * reads. Same errors; rm_ring_free() it. */
int rm_ring_plan(const struct rm_seed *seed, const struct rm_ring_spec *spec,
		 const struct rm_node_spec *nodes, __u32 n_nodes, __u32 vnodes,
		 struct rm_ring *r);
/* What a ring is built from, in 64 bits: SipHash-1-3 keyed by its seed
 * over its scheme, vnodes, entry count and each node's name, weight, id
 * and ketama host, in name order. rm_ring_encode() writes it into a live
 * ring's header (c/d, where a retired ring keeps its stamp), so a reader
 * can tell the ring is the one its records build without hashing and
 * sorting its points again (rm_ring_decode_check()). Never 0: a ring
 * written before the digest, or a retired one, never passes for one. */
__u64 rm_ring_digest(const struct rm_ring *r);

/* Kernel layout. Index bits for n entries: ceil(log2(2n)) clamped to
 * [RM_INDEX_BITS_MIN, RM_INDEX_BITS_MAX]. */
__u32 rm_ring_index_bits(__u32 n);
/* Slots the encoded ring needs: RM_RING_SLOTS(bits, n). */
__u32 rm_ring_nslots(const struct rm_ring *r);
/* Encode into slots[0..nslots): entries carry r->nodes[].id.
 * Returns 0 or -ENOSPC if nslots < rm_ring_nslots(r). */
int rm_ring_encode(const struct rm_ring *r, struct rm_slot *slots,
		   __u32 nslots);
/* Do slots hold r's encoding? The header's size fields and every entry
 * are compared exactly, the index at RM_RING_CHECK_BUCKETS buckets spread
 * evenly (and its first and last): the index is a function of the
 * entries, written with them before a ring is installed, and reading all
 * of it would cost more than the rest of a
 * read command (at 100k entries the index is 1 MB, the entries 400 KB).
 * Nothing is allocated. The header's c/d (a retired ring's
 * stamp) are not compared. */
#ifndef RM_RING_CHECK_BUCKETS
#define RM_RING_CHECK_BUCKETS 64 /* at least 2 */
#endif
bool rm_ring_encoded_in(const struct rm_ring *r, const struct rm_slot *slots,
			__u32 nslots);
/* Keys whose owner (by name) differs between two rings: the total
 * rm_ring_diff() gives, without its list (nothing is allocated). */
__u64 rm_ring_moved(const struct rm_ring *from, const struct rm_ring *to);

/* The kernel's search (include/ringmaster/rm_search.h) over an encoded
 * ring in memory. Returns RM_SEARCH_OK with *id, or RM_SEARCH_EMPTY /
 * RM_SEARCH_CORRUPT. */
int rm_ring_lookup(const struct rm_slot *slots, __u32 nslots, __u32 key,
		   __u32 *id);

#endif /* RM_RING_H */
