/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rm_quic_keys (rm_common.h): each encrypted --key quic service's key and
 * the kernel crypto context made from it. Defined once for the two
 * objects that share its pin: the director built with RM_QUIC_CRYPT
 * (bpf/quic_crypt.h) and the syscall program that makes the contexts
 * (bpf/quic_key.bpf.c).
 */
#ifndef RM_BPF_QUIC_CRYPT_MAP_H
#define RM_BPF_QUIC_CRYPT_MAP_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include <ringmaster/rm_common.h>

/* The kernel's (kernel/bpf/crypto.c): a kptr's type is matched by name,
 * and must be a complete struct in the program's BTF. Never read here. */
struct bpf_crypto_ctx {
	int opaque;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RM_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct rm_quic_key);
} rm_quic_keys SEC(".maps");

#endif /* RM_BPF_QUIC_CRYPT_MAP_H */
