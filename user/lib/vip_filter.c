// SPDX-License-Identifier: GPL-2.0
/* rm_vip_filter from userspace: see vip_filter.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "vip_filter.h"

void rm_vip_filter_set(struct rm_vip_filter *f, const struct rm_svc_key *k)
{
	__u32 bit = rm_vip_filter_key_bit(k);

	f->w[bit / 64] |= 1ULL << (bit % 64);
}

int rm_vip_filter_compute(int services_fd, struct rm_vip_filter *f)
{
	struct rm_svc_key key, prev;
	void *p = NULL;

	memset(f, 0, sizeof(*f));
	while (!bpf_map_get_next_key(services_fd, p, &key)) {
		rm_vip_filter_set(f, &key);
		prev = key;
		p = &prev;
	}
	return errno == ENOENT ? 0 : -errno;
}

int rm_vip_filter_or(int filter_fd, const struct rm_vip_filter *add)
{
	struct rm_vip_filter *cur = malloc(sizeof(*cur));
	bool grow = false;
	__u32 zero = 0;
	int err = 0;

	if (!cur)
		return -ENOMEM;
	if (bpf_map_lookup_elem(filter_fd, &zero, cur)) {
		err = -errno;
		goto out;
	}
	for (__u32 i = 0; i < RM_VIP_FILTER_WORDS; i++) {
		grow |= (add->w[i] & ~cur->w[i]) != 0;
		cur->w[i] |= add->w[i];
	}
	if (grow && bpf_map_update_elem(filter_fd, &zero, cur, BPF_ANY))
		err = -errno;
out:
	free(cur);
	return err;
}

int rm_vip_filter_add(int filter_fd, const struct rm_svc_key *k)
{
	struct rm_vip_filter *f = calloc(1, sizeof(*f));
	int err;

	if (!f)
		return -ENOMEM;
	rm_vip_filter_set(f, k);
	err = rm_vip_filter_or(filter_fd, f);
	free(f);
	return err;
}

int rm_vip_filter_sync(int filter_fd, int services_fd)
{
	struct rm_vip_filter *f = malloc(sizeof(*f));
	__u32 zero = 0;
	int err;

	if (!f)
		return -ENOMEM;
	err = rm_vip_filter_compute(services_fd, f);
	if (!err && bpf_map_update_elem(filter_fd, &zero, f, BPF_ANY))
		err = -errno;
	free(f);
	return err;
}
