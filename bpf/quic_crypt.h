/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Encrypted QUIC-LB CIDs in the director (include/ringmaster/
 * rm_quic_crypt.h), built only into ringmaster_crypt.bpf.o (make
 * -DRM_QUIC_CRYPT): its AES-128-ECB block is the kernel's, through the
 * BPF crypto kfuncs (Linux 6.10+, XDP among the program types that may
 * call them). The loader picks that object where the kernel has them
 * (user/lib/director_obj.c), the plaintext one elsewhere.
 */
#ifndef RM_BPF_QUIC_CRYPT_H
#define RM_BPF_QUIC_CRYPT_H

#include <ringmaster/rm_quic.h>

#include "quic_crypt_map.h"

#define RM_QUIC_AES_T struct rm_quic_aes_bpf
struct rm_quic_aes_bpf;
static __always_inline int rm_quic_aes(struct rm_quic_aes_bpf *a, __u8 *blk,
				       int decrypt);
#include <ringmaster/rm_quic_crypt.h>

extern int bpf_crypto_encrypt(struct bpf_crypto_ctx *ctx,
			      const struct bpf_dynptr *src,
			      const struct bpf_dynptr *dst,
			      const struct bpf_dynptr *siv) __ksym;
extern int bpf_crypto_decrypt(struct bpf_crypto_ctx *ctx,
			      const struct bpf_dynptr *src,
			      const struct bpf_dynptr *dst,
			      const struct bpf_dynptr *siv) __ksym;

/* A decode's octets (rm_quic_ws: the stack has no room for them beside
 * the director's) and the AES block's output: the kfuncs take dynptrs,
 * and a local dynptr must be over a map value. One per CPU: XDP does
 * not migrate. */
struct rm_quic_aes_buf {
	struct rm_quic_ws ws;
	__u8 out[RM_QUIC_AES_BLOCK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_quic_aes_buf);
} rm_quic_aes_buf SEC(".maps");

struct rm_quic_aes_bpf {
	struct bpf_crypto_ctx *ctx;
	struct rm_quic_aes_buf *buf;
};

/* blk is the workspace's, in the map value */
static __always_inline int rm_quic_aes(struct rm_quic_aes_bpf *a, __u8 *blk,
				       int decrypt)
{
	struct bpf_dynptr src, dst;
	__u32 i;
	int err;

	if (bpf_dynptr_from_mem(blk, RM_QUIC_AES_BLOCK, 0, &src) ||
	    bpf_dynptr_from_mem(a->buf->out, RM_QUIC_AES_BLOCK, 0, &dst))
		return -22;
	err = decrypt ? bpf_crypto_decrypt(a->ctx, &src, &dst, NULL)
		      : bpf_crypto_encrypt(a->ctx, &src, &dst, NULL);
	if (err)
		return err;
	for (i = 0; i < RM_QUIC_AES_BLOCK; i++)
		blk[i] = a->buf->out[i];
	return 0;
}

/* The server ID of DCID c under service svc_id's encrypted
 * configuration q: rm_quic_decode_aes() with the service's context, or
 * RM_QUIC_NO_KEY when it has none. */
static __always_inline int rm_quic_decode_enc(__u32 svc_id,
					      const struct rm_quic_spec *q,
					      const struct rm_quic_cid *c,
					      struct rm_quic_sid_key *k)
{
	struct rm_quic_aes_bpf a;
	struct rm_quic_key *v;
	__u32 zero = 0;
	int res = rm_quic_check(q, c);

	if (res != RM_QUIC_OK)
		return res;
	v = bpf_map_lookup_elem(&rm_quic_keys, &svc_id);
	a.buf = bpf_map_lookup_elem(&rm_quic_aes_buf, &zero);
	if (!v || !a.buf)
		return RM_QUIC_NO_KEY;
	a.ctx = v->ctx;
	if (!a.ctx)
		return RM_QUIC_NO_KEY;
	return rm_quic_decode_aes(q, c, k, &a, &a.buf->ws);
}

#endif /* RM_BPF_QUIC_CRYPT_H */
