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
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
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

/* The inner map at key of an outer map, opened: an fd, or -ENOENT. */
static int inner_open(int outer_fd, __u32 key)
{
	__u32 id;
	int fd;

	if (bpf_map_lookup_elem(outer_fd, &key, &id))
		return -ENOENT;
	fd = bpf_map_get_fd_by_id(id);
	return fd < 0 ? -errno : fd;
}

/* An inner ring array mapped (read-write when rw), its size in slots. */
static struct rm_slot *ring_mmap(int fd, bool rw, __u32 *nslots, size_t *len)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *mem;

	if (bpf_obj_get_info_by_fd(fd, &info, &ilen) ||
	    info.value_size != sizeof(struct rm_slot) || !info.max_entries)
		return NULL;
	*nslots = info.max_entries;
	*len = ((size_t)*nslots * sizeof(struct rm_slot) + page - 1) / page *
	       page;
	mem = mmap(NULL, *len, rw ? PROT_READ | PROT_WRITE : PROT_READ,
		   MAP_SHARED, fd, 0);
	return mem == MAP_FAILED ? NULL : mem;
}

/* Do two rings hold the same entries (the header's retire stamp aside)? */
static bool ring_same(const struct rm_slot *a, __u32 na, const struct rm_slot *b,
		      __u32 nb)
{
	return na == nb && a[0].a == b[0].a && a[0].b == b[0].b &&
	       !memcmp(a + 1, b + 1, (size_t)(na - 1) * sizeof(*a));
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

/* Move generation g - 1 of svc to g (or empty g when g - 1 is empty). */
static int gen_shift(struct rm_state *st, __u32 svc, __u32 g)
{
	int ofd = st->fd[RM_M_RINGS_OLD], fd = inner_open(ofd, gen_key(svc, g - 1));
	__u32 key = gen_key(svc, g);
	int err = 0;

	if (fd == -ENOENT) {
		if (bpf_map_delete_elem(ofd, &key) && errno != ENOENT)
			err = -errno;
	} else if (fd < 0) {
		err = fd;
	} else {
		if (bpf_map_update_elem(ofd, &key, &fd, BPF_ANY))
			err = -errno;
		close(fd);
	}
	if (err)
		return rm_state_fail(err, "cannot move %s[%u]: %s",
				     RM_MAP_NAME(RINGS_OLD), key,
				     strerror(-err));
	return 0;
}

int rm_gens_retire(struct rm_state *st, __u32 svc, int new_fd, __u64 now)
{
	struct rm_slot *live = NULL, *next = NULL;
	__u32 nl = 0, nn = 0, key = gen_key(svc, 0);
	size_t ll = 0, ln = 0;
	int fd, err = 0;
	bool same;

	fd = inner_open(st->fd[RM_M_RINGS], svc);
	if (fd == -ENOENT)
		return 0; /* a new service: nothing replaced */
	if (fd < 0)
		return rm_state_fail(fd, "cannot open ring %u: %s", svc,
				     strerror(-fd));
	live = ring_mmap(fd, true, &nl, &ll);
	next = ring_mmap(new_fd, false, &nn, &ln);
	if (!live || !next) {
		err = rm_state_fail(-EIO, "cannot map ring %u to retire it",
				    svc);
		goto out;
	}
	/* an empty ring names no owner: nothing to remember */
	same = ring_same(live, nl, next, nn);
	if (same || !live[0].a)
		goto out;
	/* the stamp first: a generation is never seen without its time */
	live[0].c = (__u32)now;
	live[0].d = (__u32)(now >> 32);
	for (__u32 g = RM_RING_GENS - 1; g > 0 && !err; g--)
		err = gen_shift(st, svc, g);
	if (!err && bpf_map_update_elem(st->fd[RM_M_RINGS_OLD], &key, &fd,
					BPF_ANY))
		err = rm_state_fail(-errno, "cannot write %s[%u]: %s",
				    RM_MAP_NAME(RINGS_OLD), key,
				    strerror(errno));
out:
	if (live)
		munmap(live, ll);
	if (next)
		munmap(next, ln);
	close(fd);
	return err;
}

int rm_gens_save(struct rm_state *st, int *fds)
{
	for (__u32 k = 0; k < RM_RINGS_OLD_MAX; k++) {
		fds[k] = inner_open(st->fd[RM_M_RINGS_OLD], k);
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
