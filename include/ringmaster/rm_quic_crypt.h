/* SPDX-License-Identifier: GPL-2.0 */
/*
 * QUIC-LB encrypted CIDs (draft-ietf-quic-load-balancers, "Server ID
 * Encoding in Connection IDs" with a key), compiled unchanged into the
 * BPF program (bpf/quic_crypt.h) and userspace (user/lib/quic_crypt.c:
 * ringctl lookup --cid, quic-cid), so the director and the tools cannot
 * read a CID differently.
 *
 * The CID is the plaintext one (rm_quic.h) with its sid_len + nonce_len
 * octets after the first (the plaintext block, len) encrypted under the
 * service's AES-128 key:
 *   len 16      single pass: the block is one AES-ECB block
 *   otherwise   four passes of a Feistel network whose round function
 *               is AES-ECB of expand(len, pass, half): the half's octets,
 *               zeros, len in octet 15, pass in octet 16. An odd len
 *               splits its middle octet: the left half keeps its high
 *               nibble, the right half its low one.
 * The load balancer needs three passes (left_0 holds the server ID) or
 * four (a server ID longer than len / 2); encoding takes four.
 *
 * Each side supplies the block cipher before including this header:
 *   RM_QUIC_AES_T  its key handle type
 *   static int rm_quic_aes(RM_QUIC_AES_T *a, __u8 *blk, int decrypt)
 *                  one 16-octet block in place; 0 or a negative errno
 * (the kernel: the bpf_crypto kfuncs; userspace: nettle).
 */
#ifndef RM_QUIC_CRYPT_H
#define RM_QUIC_CRYPT_H

#include "rm_quic.h"

#ifndef RM_QUIC_AES_T
#error "define RM_QUIC_AES_T and rm_quic_aes() before rm_quic_crypt.h"
#endif

#define RM_QUIC_AES_BLOCK 16
#define RM_QUIC_SINGLE_PASS 16		     /* len of the single-pass case */
#define RM_QUIC_PT_MAX (RM_QUIC_CID_MAX - 1) /* the longest block, 19 */
#define RM_QUIC_HALF_MAX ((RM_QUIC_PT_MAX + 1) / 2)

/* The octets one decode or encode works on: the caller's (the kernel's
 * per CPU, as a BPF program's stack is too small for them beside the
 * director's). */
struct rm_quic_ws {
	__u8 blk[RM_QUIC_AES_BLOCK];
	__u8 l[RM_QUIC_HALF_MAX], r[RM_QUIC_HALF_MAX];
	__u8 in[RM_QUIC_PT_MAX], out[RM_QUIC_PT_MAX];
};

/* The nibble an odd len's halves leave out: the left's last octet's low
 * one, the right's first octet's high one. */
RM_INLINE void rm_quic_clear_left(__u8 *l, __u32 half, __u32 odd)
{
	__u32 i;

	for (i = 0; i < RM_QUIC_HALF_MAX; i++)
		if (odd && i + 1 == half)
			l[i] &= 0xf0;
}

RM_INLINE void rm_quic_clear_right(__u8 *r, __u32 odd)
{
	if (odd)
		r[0] &= 0x0f;
}

/* One pass: y ^= truncate(AES(expand(len, pass, x)), half). */
RM_INLINE int rm_quic_pass(RM_QUIC_AES_T *a, __u8 *blk, const __u8 *x,
			   __u8 *y, __u32 half, __u32 len, __u32 pass)
{
	__u32 i;
	int err;

	for (i = 0; i < RM_QUIC_AES_BLOCK; i++)
		blk[i] = i < half && i < RM_QUIC_HALF_MAX ? x[i] : 0;
	blk[14] = (__u8)len;
	blk[15] = (__u8)pass;
	err = rm_quic_aes(a, blk, 0);
	if (err)
		return err;
	for (i = 0; i < RM_QUIC_HALF_MAX; i++)
		if (i < half)
			y[i] ^= blk[i];
	return 0;
}

/* w->in's first len octets (one block) to w->out (octets past len
 * zero), encrypted or decrypted. decrypt needs only the first sid_len
 * octets of out right: the load balancer's three passes when they fit
 * in left_0. 0 or a negative errno. */
RM_INLINE int rm_quic_crypt(RM_QUIC_AES_T *a, struct rm_quic_ws *w,
			    __u32 len, __u32 sid_len, int decrypt)
{
	__u8 *l = w->l, *r = w->r, *in = w->in, *out = w->out, *b = w->blk;
	__u32 half = (len + 1) / 2, odd = len & 1, i;
	int err = 0;

	if (len < 5 || len > RM_QUIC_PT_MAX)
		return -22; /* EINVAL */
	if (len == RM_QUIC_SINGLE_PASS) {
		for (i = 0; i < RM_QUIC_PT_MAX; i++)
			out[i] = i < RM_QUIC_AES_BLOCK ? in[i] : 0;
		return rm_quic_aes(a, out, decrypt);
	}
	/* split: the right half starts at len - half (the middle octet,
	 * for an odd len) */
	for (i = 0; i < RM_QUIC_HALF_MAX; i++) {
		__u32 j = len - half + i;

		l[i] = i < half ? in[i] : 0;
		r[i] = i < half && j < RM_QUIC_PT_MAX ? in[j] : 0;
	}
	rm_quic_clear_left(l, half, odd);
	rm_quic_clear_right(r, odd);
	if (decrypt) {
		err = rm_quic_pass(a, b, r, l, half, len, 4);
		rm_quic_clear_left(l, half, odd);
		err = err ?: rm_quic_pass(a, b, l, r, half, len, 3);
		rm_quic_clear_right(r, odd);
		err = err ?: rm_quic_pass(a, b, r, l, half, len, 2);
		rm_quic_clear_left(l, half, odd);
		if (sid_len > len / 2)
			err = err ?: rm_quic_pass(a, b, l, r, half, len, 1);
		rm_quic_clear_right(r, odd);
	} else {
		err = rm_quic_pass(a, b, l, r, half, len, 1);
		rm_quic_clear_right(r, odd);
		err = err ?: rm_quic_pass(a, b, r, l, half, len, 2);
		rm_quic_clear_left(l, half, odd);
		err = err ?: rm_quic_pass(a, b, l, r, half, len, 3);
		rm_quic_clear_right(r, odd);
		err = err ?: rm_quic_pass(a, b, r, l, half, len, 4);
		rm_quic_clear_left(l, half, odd);
	}
	if (err)
		return err;
	/* join: an odd len's middle octet is the left's high nibble and
	 * the right's low one */
	for (i = 0; i < RM_QUIC_PT_MAX; i++) {
		__u32 j = i + half - len;
		__u8 v = 0;

		if (i < half)
			v = l[i];
		if (i + half >= len && i < len && j < RM_QUIC_HALF_MAX)
			v |= r[j];
		out[i] = v;
	}
	return 0;
}

/* The server ID DCID c carries under encrypted configuration q, in *k
 * (k->svc_id left to the caller): RM_QUIC_OK, _CONFIG, _LENGTH or
 * _DECRYPT. */
RM_INLINE int rm_quic_decode_aes(const struct rm_quic_spec *q,
				 const struct rm_quic_cid *c,
				 struct rm_quic_sid_key *k, RM_QUIC_AES_T *a,
				 struct rm_quic_ws *w)
{
	__u32 len = (__u32)q->sid_len + q->nonce_len, i;
	int res = rm_quic_check(q, c);

	if (res != RM_QUIC_OK)
		return res;
	for (i = 0; i < RM_QUIC_PT_MAX; i++)
		w->in[i] = i < len ? RM_QUIC_B(c, 1 + i) : 0;
	if (rm_quic_crypt(a, w, len, q->sid_len, 1))
		return RM_QUIC_DECRYPT;
	k->len = q->sid_len;
	for (i = 0; i < RM_QUIC_SID_MAX; i++)
		k->sid[i] = i < q->sid_len ? w->out[i] : 0;
	return RM_QUIC_OK;
}

#ifndef __BPF__
/* rm_quic_cid_make() under an encrypted configuration: the same CID
 * with its plaintext block encrypted (the server-use octets past it,
 * random, stay as they are). The length, or a negative errno. */
static inline int rm_quic_cid_make_aes(const struct rm_quic_spec *q,
				       const __u8 *sid, const __u8 *rnd,
				       __u8 *out, RM_QUIC_AES_T *a)
{
	__u32 n = rm_quic_cid_make(q, sid, rnd, out),
	      len = (__u32)q->sid_len + q->nonce_len, i;
	struct rm_quic_ws w = {0};
	int err;

	for (i = 0; i < len; i++)
		w.in[i] = out[1 + i];
	err = rm_quic_crypt(a, &w, len, q->sid_len, 0);
	if (err)
		return err;
	for (i = 0; i < len; i++)
		out[1 + i] = w.out[i];
	return (int)n;
}
#endif

#endif /* RM_QUIC_CRYPT_H */
