/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Keyed services: the hash of the request's key (include/ringmaster/
 * rm_key.h, hashed as the service's ring scheme says: rm_owner.h)
 * instead of the flow's, so each request goes to its key's owner on the
 * service's ring. One datagram is one request, so these
 * services skip the connection table: every request follows its key.
 */
#ifndef RM_BPF_KEY_H
#define RM_BPF_KEY_H

/* BPF global functions are defined here, so one object only may include
 * this header: a second would carry its own copies, which the verifier
 * checks again and a BPF link could not merge. */
#ifndef RM_BPF_DIRECTOR_UNIT
#error "bpf/key.h defines BPF global functions: include it from ringmaster.bpf.c only"
#endif

#include <ringmaster/rm_key.h>
/* after ring.h, whose slot reader rm_owner.h's search uses */
#include <ringmaster/rm_owner.h>

#include "counters.h"
#include "maps.h"
#include "parse.h"

/* Per-CPU scratch: the payload window and the key, too big for the
 * stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_key_buf);
} rm_key_scratch SEC(".maps");

/* Counter of each rm_key_extract() result. */
static __always_inline __u32 rm_key_counter(int res)
{
	switch (res) {
	case RM_KEY_OK:
		return RM_CNT_KEY_ROUTED;
	case RM_KEY_TRUNCATED:
		return RM_CNT_KEY_FB_TRUNCATED;
	case RM_KEY_TOO_LONG:
		return RM_CNT_KEY_FB_TOO_LONG;
	case RM_KEY_MALFORMED:
		return RM_CNT_KEY_FB_MALFORMED;
	case RM_KEY_MULTI:
		return RM_CNT_KEY_FB_MULTI;
	}
	return RM_CNT_KEY_FB_NO_KEY;
}

/* The key hash of the UDP payload at offset off_len >> 16 (off_len &
 * 0xffff bytes, as the UDP and IP lengths allow) for service svc_id:
 * RM_KEY_OK and *hash, or why not. A global function: verified once, on
 * its own (parse.h); offset and length share an argument as BPF calls
 * take five. */
__noinline int rm_key_hash_payload(struct xdp_md *ctx, __u32 off_len,
				   __u32 svc_id, const struct rm_seed *seed,
				   __u32 *hash)
{
	__u32 zero = 0, n, off = off_len >> 16, plen = off_len & 0xffff;
	const struct rm_svc_meta *m;
	struct rm_key_buf *b;

	if (!hash || !seed)
		return RM_KEY_NO_KEY;
	m = bpf_map_lookup_elem(&rm_svc_meta, &svc_id);
	b = bpf_map_lookup_elem(&rm_key_scratch, &zero);
	if (!m || !b)
		return RM_KEY_NO_KEY;
	n = plen < RM_KEY_WINDOW ? plen : RM_KEY_WINDOW;
	if (!n)
		return RM_KEY_TRUNCATED;
	/* the verifier needs the size in [1, RM_KEY_WINDOW] as it sees it */
	n &= 2 * RM_KEY_WINDOW - 1;
	if (n < 1 || n > RM_KEY_WINDOW)
		return RM_KEY_TRUNCATED;
	if (bpf_xdp_load_bytes(ctx, off, b->win, n))
		return RM_KEY_TRUNCATED;
	b->spec = m->keyspec;
	b->wlen = n;
	b->plen = plen;
	return rm_owner_request_hash(b, m->ring.scheme, seed, hash);
}

/* The hash a keyed service routes pkt by: its key's, or the flow's when
 * the key cannot be read (counted by reason). ICMP errors quote no
 * payload and go by the flow, uncounted. */
static __always_inline __u32 rm_key_route(struct xdp_md *ctx,
					  const struct rm_pkt *pkt,
					  __u32 svc_id,
					  const struct rm_seed *seed)
{
	__u32 h = 0;
	int res;

	if (pkt->icmp)
		return rm_flow_hash(seed, &pkt->flow);
	if (pkt->frag != RM_FRAG_NONE) {
		rm_count(RM_CNT_KEY_FB_FRAGMENT);
		return rm_flow_hash(seed, &pkt->flow);
	}
	res = rm_key_hash_payload(ctx, ((__u32)pkt->l4_off << 16) | pkt->l4_len,
				  svc_id, seed, &h);
	rm_count(rm_key_counter(res));
	return res == RM_KEY_OK ? h : rm_flow_hash(seed, &pkt->flow);
}

#endif /* RM_BPF_KEY_H */
