// SPDX-License-Identifier: GPL-2.0
/*
 * The crypto context of an encrypted QUIC service (rm_quic_crypt.h):
 * ringctl writes the service's key into rm_quic_keys (which releases the
 * element's old context), then runs this with bpf_prog_test_run: it makes
 * an AES-128-ECB context from that key and stores it in the element,
 * where the director (bpf/quic_crypt.h) finds it. Contexts are made only
 * by sleepable programs (bpf_crypto_ctx_create allocates), which a
 * syscall program is; loaded only on kernels with the BPF crypto kfuncs.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include <ringmaster/rm_common.h>

#include "quic_crypt_map.h"

#define RM_EINVAL 22
#define RM_ENOENT 2
#define RM_ENOMEM 12

/* The kernel's bpf_crypto_ctx_create() argument (kernel/bpf/crypto.c):
 * its size is checked, the fields are the kernel's. */
struct bpf_crypto_params {
	char type[14];
	__u8 reserved[2];
	char algo[128];
	__u8 key[256];
	__u32 key_len;
	__u32 authsize;
};

extern struct bpf_crypto_ctx *
bpf_crypto_ctx_create(const struct bpf_crypto_params *params,
		      __u32 params__sz, int *err) __ksym;
extern void bpf_crypto_ctx_release(struct bpf_crypto_ctx *ctx) __ksym;

SEC("syscall")
int rm_quic_key_load(struct rm_quic_key_args *args)
{
	struct bpf_crypto_params p = {};
	struct bpf_crypto_ctx *c = NULL, *old;
	struct rm_quic_key *v;
	__u32 id = args->svc_id;
	int err = 0;

	v = bpf_map_lookup_elem(&rm_quic_keys, &id);
	if (!v) {
		args->err = -RM_ENOENT;
		return 0;
	}
	if (v->set) {
		__builtin_memcpy(p.type, "skcipher", sizeof("skcipher"));
		__builtin_memcpy(p.algo, "ecb(aes)", sizeof("ecb(aes)"));
		__builtin_memcpy(p.key, v->key, RM_QUIC_KEY_LEN);
		p.key_len = RM_QUIC_KEY_LEN;
		c = bpf_crypto_ctx_create(&p, sizeof(p), &err);
		if (!c) {
			args->err = err ? err : -RM_ENOMEM;
			return 0;
		}
	}
	/* unset: the element's context goes (none made) */
	old = bpf_kptr_xchg(&v->ctx, c);
	if (old)
		bpf_crypto_ctx_release(old);
	args->err = 0;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
