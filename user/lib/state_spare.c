// SPDX-License-Identifier: GPL-2.0
/*
 * Spare ring arrays. A fresh array costs a change ~3 ms in first touches
 * of its pages (ring_map.c); one the kernel has written before takes a
 * ring in ~0.3 ms. So the array a change lets go of (the oldest
 * generation falling out of rm_rings_old, or the live ring replaced when
 * no generation is kept) is pinned as the service's spare,
 * <pin dir>/rm_ring_spare_<id>, and the service's next ring is written
 * into it.
 *
 * A spare is a cache: losing it costs time only. It is taken only when
 * neither rm_rings nor rm_rings_old holds its map id: the kernel waited
 * for running programs when it left them (a map-in-map write from
 * userspace returns after a grace period), so no packet can be reading
 * it while it is rewritten, whatever a crash left pinned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "state.h"
#include "state_int.h"

static void spare_path(const struct rm_state *st, __u32 svc, char *out,
		       size_t len)
{
	snprintf(out, len, "%s/%s%u", st->pin_dir, RM_RING_SPARE_PIN, svc);
}

/* Is id held by any slot of outer (n slots)? On a read error: yes. */
static bool outer_holds(int outer, __u32 n, __u32 id)
{
	__u32 *keys = calloc(n, sizeof(*keys)), *ids = calloc(n, sizeof(*ids));
	__u32 count = n, batch;
	bool held = true;
	int err;

	if (!keys || !ids)
		goto out;
	err = bpf_map_lookup_batch(outer, NULL, &batch, keys, ids, &count,
				   NULL);
	if (err && err != -ENOENT) {
		/* no batch read here: one key at a time */
		held = false;
		for (__u32 k = 0; k < n && !held; k++)
			held = !bpf_map_lookup_elem(outer, &k, &ids[0]) &&
			       ids[0] == id;
		goto out;
	}
	held = false;
	for (__u32 i = 0; i < count && !held; i++)
		held = ids[i] == id;
out:
	free(keys);
	free(ids);
	return held;
}

int rm_spare_take(struct rm_state *st, __u32 svc)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	char path[RM_PATH_MAX + 64];
	int fd;

	if (svc >= RM_MAX_SERVICES)
		return -1;
	spare_path(st, svc, path, sizeof(path));
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -1;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    outer_holds(st->fd[RM_M_RINGS], RM_MAX_SERVICES, info.id) ||
	    outer_holds(st->fd[RM_M_RINGS_OLD], RM_RINGS_OLD_MAX, info.id)) {
		/* not free to write: never offered again */
		close(fd);
		unlink(path);
		return -1;
	}
	/* the pin goes: were this change to die, the array would be
	 * freed, not offered to the next one while installed */
	unlink(path);
	return fd;
}

void rm_spare_put(struct rm_state *st, __u32 svc, int fd)
{
	char path[RM_PATH_MAX + 64], tmp[RM_PATH_MAX + 80];

	if (svc >= RM_MAX_SERVICES || fd < 0)
		return;
	spare_path(st, svc, path, sizeof(path));
	/* bpffs refuses a name with a dot in it */
	snprintf(tmp, sizeof(tmp), "%s_new", path);
	unlink(tmp);
	/* pinned whole under its name, or not at all */
	if (bpf_obj_pin(fd, tmp) || rename(tmp, path))
		unlink(tmp);
}

void rm_spare_drop(struct rm_state *st, __u32 svc)
{
	char path[RM_PATH_MAX + 64], tmp[RM_PATH_MAX + 80];

	if (svc >= RM_MAX_SERVICES)
		return;
	spare_path(st, svc, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s_new", path);
	unlink(path);
	/* and what a writer killed between pin and rename left */
	unlink(tmp);
}
