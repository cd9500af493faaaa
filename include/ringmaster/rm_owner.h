/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A key's owner: the request's key (rm_key.h), hashed as the service's
 * ring scheme says (enum rm_ring_scheme), then searched on the service's
 * ring (rm_search.h). Compiled unchanged into the BPF program (bpf/key.h)
 * and userspace (ringctl lookup --key, tests), and callable by any
 * application that wants a key's node, the getNode(key) of client
 * libraries: given the same ring slots, seed, key spec and scheme, every
 * caller gets the same owner as the kernel, bit for bit.
 *
 * Key hash per scheme, of exactly the key's bytes (for --key dns, the
 * lowercased wire-format QNAME):
 *   ringmaster  SipHash-1-3 under the director's seed, low 32 bits
 *   ketama      MD5, bytes 0-3 of the digest little-endian (libhashkit's
 *               MD5 key hash, which libmemcached's ketama uses)
 *   md5-vnodes  MD5, bytes 0-3 of the digest big-endian
 * The MD5 schemes are unkeyed: anyone can compute which node a key goes
 * to, and pick keys that all land on one node.
 *
 * Userspace: define RM_RING_T / RM_RING_SLOT before including this to
 * search your own ring handle, or take struct rm_ring_view, a flat array
 * of slots as the kernel's inner map holds them.
 */
#ifndef RM_OWNER_H
#define RM_OWNER_H

#include "rm_common.h"
#include "rm_key.h"
#include "rm_md5.h"

#if !defined(RM_RING_T) && !defined(__BPF__)
/* A ring as a flat array of nslots slots (struct rm_slot layout). */
struct rm_ring_view {
	const struct rm_slot *slots;
	__u32 nslots;
};
#define RM_RING_T const struct rm_ring_view *
#define RM_RING_SLOT(v, idx) ((idx) < (v)->nslots ? &(v)->slots[(idx)] : NULL)
#endif
#include "rm_search.h"

RM_INLINE __u32 rm_owner_bswap32(__u32 x)
{
	return (x >> 24) | ((x >> 8) & 0xff00) | ((x << 8) & 0xff0000) |
	       (x << 24);
}

/* The ring position of key bytes buf[0, len) (len <= RM_MD5_MAX; buf
 * RM_MD5_BUF bytes) under an MD5 scheme. */
RM_INLINE __u32 rm_owner_md5_hash(const __u8 *buf, __u32 len, __u32 scheme)
{
	struct rm_md5 d;

	rm_md5(buf, len, &d);
	return scheme == RM_RING_KETAMA ? d.h[0] : rm_owner_bswap32(d.h[0]);
}

/* The ring position of the key in b (b->key[0, b->klen), as
 * rm_key_extract() or rm_key_from_text() leave it) under scheme. A BPF
 * global function: the MD5 is verified once, on its own. */
RM_KEY_FN __u32 rm_owner_key_hash(const struct rm_key_buf *b, __u32 scheme,
				  const struct rm_seed *seed)
{
	if (!b || !seed)
		return 0;
	if (scheme == RM_RING_KETAMA || scheme == RM_RING_MD5_VNODES)
		return rm_owner_md5_hash(RM_KEY_K(b), b->klen, scheme);
	return rm_key_hash(seed, b->key, b->klen);
}

/* Read the key of the request in b (win, wlen, plen and spec set) and
 * hash it: RM_KEY_OK and *hash, or why the key cannot be read (the data
 * plane then routes the request by its flow). */
RM_INLINE int rm_owner_request_hash(struct rm_key_buf *b, __u32 scheme,
				    const struct rm_seed *seed, __u32 *hash)
{
	int res = rm_key_extract(b);

	if (res == RM_KEY_OK)
		*hash = rm_owner_key_hash(b, scheme, seed);
	return res;
}

/* The owner of a hash on ring: RM_SEARCH_OK and *node (the node id the
 * ring stores: the rm_nodes slot), or RM_SEARCH_EMPTY / _CORRUPT. */
RM_INLINE int rm_owner_find(RM_RING_T ring, __u32 hash, __u32 *node)
{
	return rm_ring_search(ring, hash, node);
}

#ifndef __BPF__
/* The owner of a key given as text (rm_key_from_text(): a memcached key
 * as sent, a DNS name like "Example.com.") of a service with key spec
 * spec and ring scheme scheme, on ring: 0 with *node and *hash;
 * RM_KEY_* (> 0) the text is no key of that spec; -1 the ring has no
 * node (or is corrupt). b is the caller's scratch (it is large). */
static inline int rm_owner_of_key(RM_RING_T ring,
				  const struct rm_key_spec *spec,
				  __u32 scheme, const struct rm_seed *seed,
				  const char *key, __u32 len,
				  struct rm_key_buf *b, __u32 *node,
				  __u32 *hash)
{
	int res = rm_key_from_text(spec, key, len, b);

	if (res != RM_KEY_OK)
		return res;
	*hash = rm_owner_key_hash(b, scheme, seed);
	return rm_owner_find(ring, *hash, node) == RM_SEARCH_OK ? 0 : -1;
}
#endif

#endif /* RM_OWNER_H */
