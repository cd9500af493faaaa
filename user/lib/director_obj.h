/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which director object this kernel runs. The build makes two from
 * bpf/ringmaster.bpf.c: the plaintext one, and one that also decodes
 * encrypted QUIC-LB CIDs with the kernel's BPF crypto kfuncs
 * (bpf/quic_crypt.h, Linux 6.10+), which a kernel without them refuses
 * to load. Both have every map and program of the plaintext one, so the
 * crypto one opens into the plaintext skeleton's struct and all the
 * code that loads the director works with either.
 */
#ifndef RM_DIRECTOR_OBJ_H
#define RM_DIRECTOR_OBJ_H

#include <stdbool.h>

struct ringmaster_bpf;

/* Does this kernel give XDP the BPF crypto kfuncs (its BTF has them)?
 * RM_QUIC_CRYPT=0 in the environment says no (tests of the plaintext
 * object on a kernel with them). */
bool rm_director_crypt(void);
/* The director's skeleton, opened (not loaded) from the object this
 * kernel takes; NULL with errno on failure. Free with
 * ringmaster_bpf__destroy(). */
struct ringmaster_bpf *rm_director_open(void);

/* clang 14 leaves btf_type_tag out of BTF, and the kernel knows the
 * crypto context in rm_quic_key (rm_common.h) for a kptr only by its
 * "kptr" tag: put the tag into obj's BTF after open, before load (a
 * compiler that keeps it leaves nothing to do). 0 or -errno. */
struct bpf_object;
int rm_quic_kptr_tag(struct bpf_object *obj);

#endif
