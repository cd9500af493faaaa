/* SPDX-License-Identifier: GPL-2.0 */
/*
 * QUIC by connection ID: the plaintext algorithm of QUIC-LB
 * (draft-ietf-quic-load-balancers, "Generating Routable QUIC Connection
 * IDs"), compiled unchanged into the BPF program (bpf/quic.h) and
 * userspace (ringctl lookup --cid, ringctl quic-cid, the tests' QUIC
 * server), so the director and every tool read a CID alike.
 *
 * A server of a --key quic service issues CIDs that carry its server ID:
 *
 *   first octet   config rotation (3 bits: the service's codepoint cr,
 *                 0..6; 0b111 means unroutable), then the CID's length
 *                 minus one (self-encoded length) or random bits
 *   server ID     sid_len bytes, from the second octet on
 *   nonce         nonce_len bytes, unique per CID
 *   server use    optional bytes up to a fixed cid_len
 *
 * The director reads each packet's Destination CID by the version-
 * invariant header (RFC 8999): a long header carries its length, a short
 * header's is the service's cid_len, or self-encoded. A DCID of the
 * service's config rotation, long enough, whose server ID a node of the
 * service holds, goes to that node whatever the ring says: the
 * connection survives client migration and ring changes with no table.
 * Every other DCID goes to the ring by its own hash (SipHash-1-3 of its
 * bytes under the seed, like a key: rm_key_hash()), so a client's
 * Initial and 0-RTT packets (its own random DCID) and their retransmits
 * reach one node. A header too short to hold its DCID, or a DCID over
 * RM_QUIC_CID_MAX bytes, goes by the flow hash.
 */
#ifndef RM_QUIC_H
#define RM_QUIC_H

#include "rm_common.h"
#include "rm_hash.h"

#define RM_QUIC_V1 0x00000001u
#define RM_QUIC_V2 0x6b3343cfu /* RFC 9369: its long header types differ */
#define RM_QUIC_CR_UNROUTABLE 7
#define RM_QUIC_LONG 0x80 /* header form bit */
/* Header bytes the director reads: a long header up to its SCID length
 * octet with the longest DCID (1 + 4 + 1 + 20 + 1), a power of two. */
#define RM_QUIC_WINDOW 32
#define RM_QUIC_CID_WORDS 3 /* RM_QUIC_CID_MAX bytes in __u64 words */

/* What kind of packet a DCID came in (rm_quic_parse()). */
enum rm_quic_pkt {
	RM_QUIC_PKT_SHORT = 0,
	RM_QUIC_PKT_INITIAL,	   /* Initial or 0-RTT, version 1 or 2 */
	RM_QUIC_PKT_LONG,	   /* Handshake or Retry, version 1 or 2 */
	RM_QUIC_PKT_VN,		   /* version negotiation (version 0) */
	RM_QUIC_PKT_OTHER_VERSION, /* a long header of another version */
};

/* Why a DCID routes to a node or not. */
enum rm_quic_res {
	RM_QUIC_OK = 0,	      /* a server ID of the configuration */
	RM_QUIC_CONFIG,	      /* config rotation not the service's, 0b111 */
	RM_QUIC_LENGTH,	      /* too short, or self-encoded length wrong */
	RM_QUIC_UNKNOWN,      /* no node of the service takes that ID */
	RM_QUIC_TRUNCATED,    /* the datagram ends inside the header */
	RM_QUIC_CID_TOO_LONG, /* a DCID length over RM_QUIC_CID_MAX */
	/* encrypted services (rm_quic_crypt.h) */
	RM_QUIC_NO_KEY,	      /* no key loaded (or no crypto in the kernel) */
	RM_QUIC_DECRYPT,      /* the AES block failed */
	RM_QUIC_RES_NR,
};

/* A packet's DCID: its bytes with a zero tail (hashed by words). */
struct rm_quic_cid {
	__u64 w[RM_QUIC_CID_WORDS];
	__u32 len;
	__u32 pkt; /* enum rm_quic_pkt */
};

#define RM_QUIC_B(c, i) (((const __u8 *)(c)->w)[(i)])

RM_INLINE __u32 rm_quic_self_len(__u8 first)
{
	return (__u32)(first & 0x1f) + 1;
}

/* Read the DCID of the QUIC packet whose first wlen (<= RM_QUIC_WINDOW)
 * bytes are win, under configuration q: RM_QUIC_OK, _TRUNCATED or
 * _CID_TOO_LONG. */
RM_INLINE int rm_quic_parse(const __u8 *win, __u32 wlen,
			    const struct rm_quic_spec *q,
			    struct rm_quic_cid *c)
{
	__u32 i, start, len, ver;
	__u8 b0;

	c->w[0] = c->w[1] = c->w[2] = 0;
	c->len = 0;
	c->pkt = RM_QUIC_PKT_SHORT;
	if (wlen < 2 || wlen > RM_QUIC_WINDOW)
		return RM_QUIC_TRUNCATED;
	b0 = win[0];
	if (b0 & RM_QUIC_LONG) {
		/* flags, version, DCID length, DCID, SCID length */
		if (wlen < 7)
			return RM_QUIC_TRUNCATED;
		ver = ((__u32)win[1] << 24) | ((__u32)win[2] << 16) |
		      ((__u32)win[3] << 8) | win[4];
		len = win[5];
		if (len > RM_QUIC_CID_MAX)
			return RM_QUIC_CID_TOO_LONG;
		if (6 + len + 1 > wlen)
			return RM_QUIC_TRUNCATED;
		start = 6;
		if (!ver)
			c->pkt = RM_QUIC_PKT_VN;
		else if (ver == RM_QUIC_V1)
			c->pkt = ((b0 >> 4) & 3) <= 1 ? RM_QUIC_PKT_INITIAL
						     : RM_QUIC_PKT_LONG;
		else if (ver == RM_QUIC_V2)
			c->pkt = ((b0 >> 4) & 3) == 1 || ((b0 >> 4) & 3) == 2
				     ? RM_QUIC_PKT_INITIAL
				     : RM_QUIC_PKT_LONG;
		else
			c->pkt = RM_QUIC_PKT_OTHER_VERSION;
	} else {
		/* the DCID's length is not on the wire: the service's, or
		 * self-encoded (always, for the unroutable codepoint) */
		start = 1;
		len = q->cid_len && (win[1] >> 5) != RM_QUIC_CR_UNROUTABLE
			  ? q->cid_len
			  : rm_quic_self_len(win[1]);
		if (len > RM_QUIC_CID_MAX)
			return RM_QUIC_CID_TOO_LONG;
		if (start + len > wlen)
			return RM_QUIC_TRUNCATED;
	}
	/* every byte written, the tail as zero: no variable-length copy
	 * (which clang would make a memcpy call BPF cannot take) */
	for (i = 0; i < RM_QUIC_CID_MAX; i++)
		((__u8 *)c->w)[i] =
		    i < len ? win[(start + i) & (RM_QUIC_WINDOW - 1)] : 0;
	c->len = len;
	return RM_QUIC_OK;
}

/* Does DCID c fit configuration q (its codepoint, long enough, a
 * self-encoded length that agrees)? RM_QUIC_OK, _CONFIG or _LENGTH. */
RM_INLINE int rm_quic_check(const struct rm_quic_spec *q,
			    const struct rm_quic_cid *c)
{
	__u8 first;

	if (!c->len)
		return RM_QUIC_LENGTH;
	first = RM_QUIC_B(c, 0);
	if ((first >> 5) != q->cr || q->cr == RM_QUIC_CR_UNROUTABLE)
		return RM_QUIC_CONFIG;
	if (c->len < 1u + q->sid_len + q->nonce_len ||
	    !q->sid_len || q->sid_len > RM_QUIC_SID_MAX)
		return RM_QUIC_LENGTH;
	/* a self-encoding server pool: a long header's length must agree */
	if (!q->cid_len && rm_quic_self_len(first) != c->len)
		return RM_QUIC_LENGTH;
	return RM_QUIC_OK;
}

/* The server ID DCID c carries under plaintext configuration q, in *k
 * (k->svc_id left to the caller): RM_QUIC_OK, _CONFIG or _LENGTH. */
RM_INLINE int rm_quic_decode(const struct rm_quic_spec *q,
			     const struct rm_quic_cid *c,
			     struct rm_quic_sid_key *k)
{
	int res = rm_quic_check(q, c);
	__u32 i;

	if (res != RM_QUIC_OK)
		return res;
	k->len = q->sid_len;
	for (i = 0; i < RM_QUIC_SID_MAX; i++)
		k->sid[i] = i < q->sid_len ? RM_QUIC_B(c, 1 + i) : 0;
	return RM_QUIC_OK;
}

/* The DCID's ring position: SipHash-1-3 of its bytes under the seed,
 * the low 32 bits (what rm_key_hash() gives the same bytes). */
RM_INLINE __u32 rm_quic_cid_hash(const struct rm_seed *seed,
				 const struct rm_quic_cid *c)
{
	__u64 last = (__u64)c->len << 56;
	struct rm_sip s;
	__u32 i;

	rm_sip_init(&s, seed);
	for (i = 0; i < RM_QUIC_CID_WORDS; i++) {
		if ((i + 1) * 8 > c->len) {
			last |= c->w[i];
			break;
		}
		rm_sip_word(&s, c->w[i]);
	}
	return (__u32)rm_sip_final(&s, last);
}

/* The counter of a packet that reached a --key quic service: res is the
 * parse result, or else the decode's (RM_QUIC_UNKNOWN when no node took
 * the server ID). */
RM_INLINE __u32 rm_quic_counter(const struct rm_quic_cid *c, int res)
{
	if (res == RM_QUIC_OK)
		return RM_CNT_QUIC_CID_ROUTED;
	if (res == RM_QUIC_TRUNCATED)
		return RM_CNT_QUIC_FB_TRUNCATED;
	if (res == RM_QUIC_CID_TOO_LONG)
		return RM_CNT_QUIC_FB_CID_TOO_LONG;
	switch (c->pkt) {
	case RM_QUIC_PKT_INITIAL:
		return RM_CNT_QUIC_INITIAL_HASHED;
	case RM_QUIC_PKT_VN:
		return RM_CNT_QUIC_FB_VERSION_NEG;
	case RM_QUIC_PKT_OTHER_VERSION:
		return RM_CNT_QUIC_FB_UNKNOWN_VERSION;
	}
	if (res == RM_QUIC_NO_KEY)
		return RM_CNT_QUIC_FB_NO_KEY;
	if (res == RM_QUIC_DECRYPT)
		return RM_CNT_QUIC_FB_DECRYPT;
	if (res == RM_QUIC_CONFIG)
		return RM_CNT_QUIC_FB_CONFIG;
	if (res == RM_QUIC_LENGTH)
		return RM_CNT_QUIC_FB_LENGTH;
	return RM_CNT_QUIC_FB_UNKNOWN_SID;
}

/* Is q a configuration the draft allows (and the data plane takes)? */
RM_INLINE int rm_quic_spec_valid(const struct rm_quic_spec *q)
{
	__u32 min = 1u + q->sid_len + q->nonce_len;

	return q->sid_len >= 1 && q->sid_len <= RM_QUIC_SID_MAX &&
	       q->nonce_len >= RM_QUIC_NONCE_MIN &&
	       q->sid_len + q->nonce_len <= RM_QUIC_CID_MAX - 1 &&
	       q->cr < RM_QUIC_CR_UNROUTABLE &&
	       (!q->cid_len ||
		(q->cid_len >= min && q->cid_len <= RM_QUIC_CID_MAX)) &&
	       q->enc <= RM_QUIC_ENC_AES && !q->pad[0] && !q->pad[1] &&
	       !q->pad[2];
}

#ifndef __BPF__
/* The length of q's CIDs. */
static inline __u32 rm_quic_cid_len(const struct rm_quic_spec *q)
{
	return q->cid_len ? q->cid_len : 1u + q->sid_len + q->nonce_len;
}

/* A CID for server ID sid (q->sid_len bytes) under q, in out
 * (rm_quic_cid_len(q) bytes, returned): rnd supplies the nonce, the
 * server-use bytes and, without a self-encoded length, the first
 * octet's low bits (RM_QUIC_CID_MAX random bytes; a server must never
 * reuse a nonce: fresh random bytes for each CID). */
static inline __u32 rm_quic_cid_make(const struct rm_quic_spec *q,
				     const __u8 *sid, const __u8 *rnd,
				     __u8 *out)
{
	__u32 len = rm_quic_cid_len(q), i;

	out[0] = (__u8)(q->cr << 5) |
		 (q->cid_len ? rnd[0] & 0x1f : (__u8)(len - 1));
	for (i = 0; i < q->sid_len; i++)
		out[1 + i] = sid[i];
	for (i = 1 + q->sid_len; i < len; i++)
		out[i] = rnd[i];
	return len;
}
#endif

#endif /* RM_QUIC_H */
