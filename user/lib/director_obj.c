// SPDX-License-Identifier: GPL-2.0
/* Which director object this kernel runs (director.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/btf.h>
#include "director_obj.h"
#include "ringmaster.skel.h"
#include "ringmaster_crypt.skel.h"

bool rm_director_crypt(void)
{
	static int known = -1;
	const char *env = getenv("RM_QUIC_CRYPT");
	struct btf *vmlinux;

	if (env && !strcmp(env, "0"))
		return false;
	if (known >= 0)
		return known;
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux || libbpf_get_error(vmlinux)) {
		known = 0;
		return false;
	}
	/* the kfuncs the director calls, and the context's type its map
	 * holds as a kptr */
	known = btf__find_by_name_kind(vmlinux, "bpf_crypto_decrypt",
				       BTF_KIND_FUNC) > 0 &&
		btf__find_by_name_kind(vmlinux, "bpf_crypto_encrypt",
				       BTF_KIND_FUNC) > 0 &&
		btf__find_by_name_kind(vmlinux, "bpf_crypto_ctx_create",
				       BTF_KIND_FUNC) > 0 &&
		btf__find_by_name_kind(vmlinux, "bpf_crypto_ctx",
				       BTF_KIND_STRUCT) > 0;
	btf__free(vmlinux);
	return known;
}

int rm_quic_kptr_tag(struct bpf_object *obj)
{
	struct btf *btf = bpf_object__btf(obj);
	const struct btf_type *t, *p;
	struct btf_member *m;
	int id, tag, ptr;
	__u16 i, n;

	id = btf ? btf__find_by_name_kind(btf, "rm_quic_key", BTF_KIND_STRUCT)
		 : -ENOENT;
	if (id < 0)
		return 0; /* an object without rm_quic_keys */
	t = btf__type_by_id(btf, id);
	n = btf_vlen(t);
	for (i = 0, m = btf_members(t); i < n; i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), "ctx"))
			break;
	if (i == n)
		return -EINVAL;
	p = btf__type_by_id(btf, m->type);
	if (!p || !btf_is_ptr(p))
		return -EINVAL;
	if (btf_is_type_tag(btf__type_by_id(btf, p->type)))
		return 0; /* a compiler that keeps the tag */
	tag = btf__add_type_tag(btf, "kptr", p->type);
	if (tag < 0)
		return tag;
	ptr = btf__add_ptr(btf, tag);
	if (ptr < 0)
		return ptr;
	/* adding types may have moved them: find the member again */
	m = btf_members(btf__type_by_id(btf, id)) + i;
	m->type = ptr;
	return 0;
}

struct ringmaster_bpf *rm_director_open(void)
{
	struct ringmaster_bpf *obj;
	int err;

	if (!rm_director_crypt())
		return ringmaster_bpf__open();
	obj = calloc(1, sizeof(*obj));
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	/* the plaintext skeleton's names (maps, program, .rodata) over the
	 * crypto object's bytes: it has all of them */
	err = ringmaster_bpf__create_skeleton(obj);
	if (!err) {
		obj->skeleton->data = (void *)
		    ringmaster_crypt_bpf__elf_bytes(&obj->skeleton->data_sz);
		err = bpf_object__open_skeleton(obj->skeleton, NULL);
	}
	if (!err)
		err = rm_quic_kptr_tag(obj->obj);
	if (err) {
		ringmaster_bpf__destroy(obj);
		errno = err < 0 ? -err : EINVAL;
		return NULL;
	}
	return obj;
}
