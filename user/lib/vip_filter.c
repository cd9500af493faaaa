// SPDX-License-Identifier: GPL-2.0
/* rm_vip_slots from userspace: see vip_filter.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "vip_filter.h"

static __u16 slot_join(__u16 a, __u16 b)
{
	if (a == RM_VIP_SLOT_NONE)
		return b;
	if (b == RM_VIP_SLOT_NONE || a == b)
		return a;
	return RM_VIP_SLOT_MANY;
}

void rm_vip_slots_set(struct rm_vip_slots *t, const struct rm_svc_key *k,
		      __u32 id)
{
	__u32 s = rm_vip_key_slot(k);
	__u16 v = id < RM_MAX_SERVICES ? (__u16)(id + 1) : RM_VIP_SLOT_MANY;

	t->s[s] = slot_join(t->s[s], v);
}

int rm_vip_slots_compute(int services_fd, struct rm_vip_slots *t)
{
	struct rm_svc_key key, prev;
	struct rm_svc v;
	void *p = NULL;

	memset(t, 0, sizeof(*t));
	while (!bpf_map_get_next_key(services_fd, p, &key)) {
		/* a key gone meanwhile needs no slot */
		if (!bpf_map_lookup_elem(services_fd, &key, &v))
			rm_vip_slots_set(t, &key, v.id);
		else if (errno != ENOENT)
			return -errno;
		prev = key;
		p = &prev;
	}
	return errno == ENOENT ? 0 : -errno;
}

/* The table as pinned (malloc'd), or NULL with *err set. */
static struct rm_vip_slots *slots_read(int slots_fd, int *err)
{
	struct rm_vip_slots *cur = malloc(sizeof(*cur));
	__u32 zero = 0;

	*err = 0;
	if (!cur) {
		*err = -ENOMEM;
		return NULL;
	}
	if (bpf_map_lookup_elem(slots_fd, &zero, cur)) {
		*err = errno ? -errno : -EIO;
		free(cur);
		return NULL;
	}
	return cur;
}

static int slots_write(int slots_fd, const struct rm_vip_slots *t)
{
	__u32 zero = 0;

	return bpf_map_update_elem(slots_fd, &zero, t, BPF_ANY) ? -errno : 0;
}

int rm_vip_slots_merge(int slots_fd, const struct rm_vip_slots *add)
{
	bool changed = false;
	int err;
	struct rm_vip_slots *cur = slots_read(slots_fd, &err);

	if (!cur)
		return err;
	for (__u32 i = 0; i < RM_VIP_SLOTS; i++) {
		__u16 v = slot_join(cur->s[i], add->s[i]);

		changed |= v != cur->s[i];
		cur->s[i] = v;
	}
	if (changed)
		err = slots_write(slots_fd, cur);
	free(cur);
	return err;
}

int rm_vip_slots_add(int slots_fd, const struct rm_svc_key *k, __u32 id)
{
	struct rm_vip_slots *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	rm_vip_slots_set(t, k, id);
	err = rm_vip_slots_merge(slots_fd, t);
	free(t);
	return err;
}

int rm_vip_slots_forget(int slots_fd, const __u8 *ids)
{
	bool changed = false, any = false;
	struct rm_vip_slots *cur;
	int err;

	/* a change of nodes alone names no service: no 128 kB read */
	for (__u32 i = 0; i < RM_MAX_SERVICES && !any; i++)
		any = ids[i];
	if (!any)
		return 0;
	cur = slots_read(slots_fd, &err);
	if (!cur)
		return err;
	for (__u32 i = 0; i < RM_VIP_SLOTS; i++) {
		__u16 v = cur->s[i];

		if (v != RM_VIP_SLOT_NONE && v != RM_VIP_SLOT_MANY &&
		    v - 1 < RM_MAX_SERVICES && ids[v - 1]) {
			cur->s[i] = RM_VIP_SLOT_MANY;
			changed = true;
		}
	}
	if (changed)
		err = slots_write(slots_fd, cur);
	free(cur);
	return err;
}

int rm_vip_slots_sync(int slots_fd, int services_fd)
{
	struct rm_vip_slots *t = malloc(sizeof(*t)), *cur = NULL;
	int err;

	if (!t)
		return -ENOMEM;
	err = rm_vip_slots_compute(services_fd, t);
	if (!err)
		cur = slots_read(slots_fd, &err);
	if (cur && memcmp(cur, t, sizeof(*t)))
		err = slots_write(slots_fd, t);
	free(cur);
	free(t);
	return err;
}
