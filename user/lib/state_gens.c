// SPDX-License-Identifier: GPL-2.0
/*
 * Second chance, control-plane side: each service's previous rings in
 * rm_rings_old (rm_common.h), kept for the handover window after each
 * change so the data plane can name a flow's older owners (rm_hops.h).
 *
 * A changed ring is retired before its replacement goes in: the live
 * inner array is stamped with the time (its header's unused c/d) and
 * moved whole into generation 0, older ones one down, the oldest out.
 * So a packet that sees the new ring sees the one it replaced too. A
 * ring rewritten unchanged (restore, repair) and an empty one retire
 * nothing.
 *
 * Generations are dropped where a remembered ring would name the wrong
 * thing: a seed change (its points were placed under the old seed), a
 * service deleted (its id may come back as another), the window turned
 * off, and a node slot given to another node while a remembered ring may
 * still name it (only near the slot limit: state_edit.c avoids such
 * slots).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "ring_map.h"
#include "state.h"
#include "state_int.h"

__u64 rm_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

static __u32 gen_key(__u32 svc, __u32 g)
{
	return svc * RM_RING_GENS + g;
}

/* Do the arrays a and b (headers ha, hb mapped) hold the same ring, the
 * header's retire stamp aside? 1 or 0, or -errno. The headers first: a
 * change of entry count or index size is answered without mapping the
 * megabytes of either ring. */
static int rings_same(int a, const struct rm_slot *ha, int b,
		      const struct rm_slot *hb)
{
	struct rm_slot *ma = NULL, *mb = NULL;
	__u32 na = 0, nb = 0;
	size_t la = 0, lb = 0;
	int err;

	if (ha->a != hb->a || ha->b != hb->b)
		return 0;
	err = rm_ring_map_mmap(a, false, &ma, &na, &la);
	if (!err)
		err = rm_ring_map_mmap(b, false, &mb, &nb, &lb);
	if (!err)
		err = na == nb &&
		      !memcmp(ma + 1, mb + 1, (size_t)(na - 1) * sizeof(*ma));
	if (ma)
		munmap(ma, la);
	if (mb)
		munmap(mb, lb);
	return err;
}

int rm_gens_drop(struct rm_state *st, __u32 svc)
{
	for (__u32 g = 0; g < RM_RING_GENS; g++) {
		__u32 key = gen_key(svc, g);

		if (bpf_map_delete_elem(st->fd[RM_M_RINGS_OLD], &key) &&
		    errno != ENOENT)
			return rm_state_fail(-errno, "cannot drop %s[%u]: %s",
					     RM_MAP_NAME(RINGS_OLD), key,
					     strerror(errno));
	}
	return 0;
}

int rm_gens_drop_all(struct rm_state *st)
{
	int err = 0;

	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++)
		err = rm_gens_drop(st, i);
	return err;
}

int rm_gens_retire(struct rm_state *st, __u32 svc, int new_fd, __u64 now,
		   int *dropped)
{
	struct rm_slot *live = NULL, *next = NULL;
	__u32 key = gen_key(svc, 0), keys[RM_RING_GENS], n = 0;
	int ofd = st->fd[RM_M_RINGS_OLD], fds[RM_RING_GENS];
	int fd, oldest = -1, err = 0, same;

	*dropped = -1;
	fd = rm_state_inner_open(st, RM_M_RINGS, svc);
	if (fd == -ENOENT)
		return 0; /* a new service: nothing replaced */
	if (fd < 0)
		return rm_state_fail(fd, "cannot open ring %u: %s", svc,
				     strerror(-fd));
	if (rm_ring_map_head(fd, true, &live) ||
	    rm_ring_map_head(new_fd, false, &next)) {
		err = rm_state_fail(-EIO, "cannot map ring %u to retire it",
				    svc);
		goto out;
	}
	/* an empty ring names no owner: nothing to remember */
	if (!live[0].a)
		goto out;
	same = rings_same(fd, live, new_fd, next);
	if (same < 0)
		err = rm_state_fail(same, "cannot map ring %u to retire it",
				    svc);
	if (same)
		goto out;
	/* the stamp first: a generation is never seen without its time */
	rm_ring_hdr_set_cd(&live[0], now);
	/* each generation one down (an empty one empties the next), the
	 * live ring into 0: every read before the first write, the writes
	 * from the oldest generation to the newest */
	for (__u32 g = RM_RING_GENS - 1; g > 0 && !err; g--) {
		int prev = rm_state_inner_open(st, RM_M_RINGS_OLD,
					       gen_key(svc, g - 1));
		__u32 k = gen_key(svc, g);

		if (prev >= 0) {
			keys[n] = k;
			fds[n++] = prev;
		} else if (prev != -ENOENT) {
			err = prev;
		} else if (bpf_map_delete_elem(ofd, &k) && errno != ENOENT) {
			err = -errno;
		}
	}
	keys[n] = key;
	fds[n++] = fd;
	/* the oldest generation's array leaves with this write */
	if (!err)
		oldest = rm_state_inner_open(st, RM_M_RINGS_OLD,
					      gen_key(svc, RM_RING_GENS - 1));
	if (!err)
		err = rm_map_write(ofd, keys, fds, sizeof(*fds), n);
	if (!err && oldest >= 0) {
		*dropped = oldest;
		oldest = -1;
	}
	if (oldest >= 0)
		close(oldest);
	if (err)
		err = rm_state_fail(err, "cannot move %s of service %u: %s",
				    RM_MAP_NAME(RINGS_OLD), svc,
				    strerror(-err));
	for (__u32 i = 0; i + 1 < n; i++)
		close(fds[i]);
out:
	rm_ring_map_head_unmap(live);
	rm_ring_map_head_unmap(next);
	close(fd);
	return err;
}

/* Which keys of rm_rings_old hold a ring: one batch read of the whole
 * outer array (a lookup of each of its RM_RINGS_OLD_MAX keys was 512
 * syscalls per change), which skips the empty keys. want[k] set for each
 * key held, and any key when the kernel has no batch read for it. */
static void gens_held(int ofd, bool *want)
{
	__u32 *keys = calloc(RM_RINGS_OLD_MAX, sizeof(*keys));
	__u32 *ids = calloc(RM_RINGS_OLD_MAX, sizeof(*ids));
	__u32 count = RM_RINGS_OLD_MAX, batch;
	int err = keys && ids ? bpf_map_lookup_batch(ofd, NULL, &batch, keys,
						    ids, &count, NULL)
			      : -ENOMEM;

	memset(want, !(!err || err == -ENOENT), RM_RINGS_OLD_MAX);
	for (__u32 i = 0; (!err || err == -ENOENT) && i < count; i++)
		if (keys[i] < RM_RINGS_OLD_MAX)
			want[keys[i]] = true;
	free(keys);
	free(ids);
}

int rm_gens_save(struct rm_state *st, int *fds)
{
	bool want[RM_RINGS_OLD_MAX];

	gens_held(st->fd[RM_M_RINGS_OLD], want);
	for (__u32 k = 0; k < RM_RINGS_OLD_MAX; k++) {
		fds[k] = want[k] ? rm_state_inner_open(st, RM_M_RINGS_OLD, k)
				 : -ENOENT;
		if (fds[k] < 0 && fds[k] != -ENOENT) {
			int err = fds[k];

			rm_gens_close(fds);
			return rm_state_fail(err, "cannot open %s[%u]: %s",
					     RM_MAP_NAME(RINGS_OLD), k,
					     strerror(-err));
		}
	}
	return 0;
}

int rm_gens_restore(struct rm_state *st, const int *fds)
{
	int ofd = st->fd[RM_M_RINGS_OLD];

	for (__u32 k = 0; k < RM_RINGS_OLD_MAX; k++) {
		int err = fds[k] >= 0
			      ? bpf_map_update_elem(ofd, &k, &fds[k], BPF_ANY)
			      : bpf_map_delete_elem(ofd, &k);

		if (err && errno != ENOENT)
			return rm_state_fail(-errno, "cannot write %s[%u]: %s",
					     RM_MAP_NAME(RINGS_OLD), k,
					     strerror(errno));
	}
	return 0;
}

void rm_gens_close(int *fds)
{
	for (__u32 k = 0; k < RM_RINGS_OLD_MAX; k++) {
		if (fds[k] >= 0)
			close(fds[k]);
		fds[k] = -1;
	}
}
