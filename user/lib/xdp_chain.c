// SPDX-License-Identifier: GPL-2.0
/* Reading an interface's XDP chain from the kernel (xdp_chain.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xdp_chain.h"

void rm_prog_name(__u32 id, char *out, size_t len)
{
	struct bpf_prog_info info = {};
	__u32 ilen = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);

	snprintf(out, len, "?");
	if (fd < 0)
		return;
	if (!bpf_obj_get_info_by_fd(fd, &info, &ilen))
		snprintf(out, len, "%s", info.name);
	close(fd);
}

/* The rm_chain a program uses, from its maps. */
static int prog_chain_fd(__u32 root_id)
{
	__u32 map_ids[16], ilen;
	struct bpf_prog_info info;
	int fd = bpf_prog_get_fd_by_id(root_id), ret = -ENOENT;

	if (fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
	info.map_ids = (__u64)(unsigned long)map_ids;
	ilen = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen)) {
		ret = -errno;
		info.nr_map_ids = 0;
	}
	close(fd);
	for (__u32 i = 0; i < info.nr_map_ids && i < 16 && ret == -ENOENT; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(map_ids[i]);

		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &mlen) &&
		    mi.type == BPF_MAP_TYPE_PROG_ARRAY &&
		    !strcmp(mi.name, RM_CHAIN_MAP))
			ret = mfd;
		else
			close(mfd);
	}
	return ret;
}

int rm_xdp_chain_read(int ifindex, struct rm_xdp_chain *c)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int err;

	memset(c, 0, sizeof(*c));
	c->map_fd = -1;
	if (bpf_xdp_query(ifindex, 0, &q))
		return -errno;
	c->attach_mode = q.attach_mode;
	c->attached_id = q.prog_id     ? q.prog_id
			 : q.drv_prog_id ? q.drv_prog_id
					 : q.skb_prog_id;
	if (!c->attached_id)
		return 0;
	rm_prog_name(c->attached_id, c->attached_name,
		     sizeof(c->attached_name));
	if (strcmp(c->attached_name, RM_ROOT_PROG_NAME))
		return 0;
	c->root_id = c->attached_id;
	err = prog_chain_fd(c->root_id);
	if (err < 0)
		return err;
	c->map_fd = err;
	for (__u32 i = 0; i < RM_CHAIN_SLOTS; i++) {
		/* a program array gives the program's id to userspace */
		if (bpf_map_lookup_elem(c->map_fd, &i, &c->ids[i])) {
			if (errno != ENOENT)
				return -errno;
			c->ids[i] = 0;
			continue;
		}
		rm_prog_name(c->ids[i], c->names[i], sizeof(c->names[i]));
	}
	return 0;
}

void rm_xdp_chain_close(struct rm_xdp_chain *c)
{
	if (c->map_fd >= 0)
		close(c->map_fd);
	c->map_fd = -1;
}

int rm_xdp_chain_find(const struct rm_xdp_chain *c, const char *name,
		      __u32 want_id)
{
	for (int i = 0; i < RM_CHAIN_SLOTS; i++)
		if (c->ids[i] && !strcmp(c->names[i], name) &&
		    (!want_id || c->ids[i] == want_id))
			return i;
	return -1;
}

int rm_xdp_chain_used(const struct rm_xdp_chain *c)
{
	int n = 0;

	for (int i = 0; i < RM_CHAIN_SLOTS; i++)
		n += !!c->ids[i];
	return n;
}

bool rm_prog_uses_chain(__u32 id)
{
	int fd = prog_chain_fd(id);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}
