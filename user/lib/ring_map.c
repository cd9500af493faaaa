// SPDX-License-Identifier: GPL-2.0
/* Ring arrays: an element is a page of slots (struct rm_ring_page), so
 * the kernel writes a whole ring in one batch update of a few hundred
 * copies. Written that way, into an array the kernel has written before
 * (a spare: state_spare.c), a 100k-entry ring costs ~0.3 ms; a fresh
 * array costs ~3 ms whichever way it is filled, the first touch of each
 * of its pages (and as much again through a process's own mapping, which
 * every ringctl is). Readers map the array: reads are cheap. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include "ring.h"
#include "ring_map.h"
#include "util.h"

/* A new array's elements, rounded up to a multiple of this: a spare then
 * fits the rings of nearby sizes (a node more or less). */
#ifndef RM_RING_PAGES_ROUND
#define RM_RING_PAGES_ROUND 16
#endif

static __u32 cap_pages(__u32 nslots)
{
	__u32 p = RM_RING_PAGES(nslots);

	return (p + RM_RING_PAGES_ROUND - 1) / RM_RING_PAGES_ROUND *
	       RM_RING_PAGES_ROUND;
}

/* -errno of the call that just failed (never 0, whatever it left) */
static int fail_errno(void)
{
	return errno ? -errno : -EIO;
}

/* BPF_MAP_CREATE itself, not libbpf's bpf_map_create(): that one first
 * loads a probe program to learn how memory is accounted (a few ms on
 * every ringctl change), which ringctl has no use for. */
static int ring_map_new(__u32 pages, const char *name)
{
	union bpf_attr attr;
	int fd;

	if (pages == 0)
		return -EINVAL;
	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = sizeof(__u32);
	attr.value_size = sizeof(struct rm_ring_page);
	attr.max_entries = pages;
	attr.map_flags = RM_RING_MAP_FLAGS;
	snprintf(attr.map_name, sizeof(attr.map_name), "%s", name);
	fd = (int)syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	return fd < 0 ? fail_errno() : fd;
}

int rm_ring_map_pages(int fd, __u32 *pages)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	*pages = 0;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return fail_errno();
	if (info.type != BPF_MAP_TYPE_ARRAY ||
	    info.value_size != sizeof(struct rm_ring_page) ||
	    info.key_size != sizeof(__u32) || !info.max_entries ||
	    (info.map_flags & RM_RING_MAP_FLAGS) != RM_RING_MAP_FLAGS)
		return -EPROTO;
	*pages = info.max_entries;
	return 0;
}

int rm_map_write(int fd, const __u32 *keys, const void *values, size_t vsize,
		 __u32 n)
{
	__u32 done = n;
	int err = bpf_map_update_batch(fd, keys, values, &done, NULL);

	if (!err)
		return 0;
	if (err != -EINVAL && err != -EOPNOTSUPP && err != -524 /*ENOTSUPP*/)
		return err;
	for (__u32 i = done < n ? done : 0; i < n; i++)
		if (bpf_map_update_elem(fd, &keys[i],
					(const char *)values + i * vsize, BPF_ANY))
			return fail_errno();
	return 0;
}

/* pages elements of buf into fd, keys 0..pages-1. */
static int write_pages(int fd, const struct rm_ring_page *buf, __u32 pages)
{
	__u32 *keys = malloc((size_t)pages * sizeof(*keys));
	int err;

	if (!keys)
		return -ENOMEM;
	for (__u32 i = 0; i < pages; i++)
		keys[i] = i;
	err = rm_map_write(fd, keys, buf, sizeof(*buf), pages);
	free(keys);
	return err;
}

/* Does spare fit a ring of nslots: enough elements, no more than a new
 * array would have? Its elements in *pages. */
static bool spare_fits(int spare, __u32 nslots, __u32 *pages)
{
	return spare >= 0 && !rm_ring_map_pages(spare, pages) &&
	       *pages >= RM_RING_PAGES(nslots) && *pages <= cap_pages(nslots);
}

/* The array for a ring of nslots: spare when it fits, else a new one. */
static int ring_map_for(__u32 nslots, const char *name, int spare,
			__u32 *pages)
{
	if (spare_fits(spare, nslots, pages))
		return spare;
	*pages = cap_pages(nslots);
	return ring_map_new(*pages, name);
}

/* fill(buf, nslots of the array, arg) writes the slots; then the array
 * (spare or new) is written whole. */
static int ring_map_fill(__u32 nslots, const char *name, int spare,
			 int (*fill)(struct rm_slot *buf, __u32 n,
				     const void *arg),
			 const void *arg)
{
	size_t len;
	struct rm_ring_page *buf;
	__u32 pages;
	int fd, err;

	fd = ring_map_for(nslots, name, spare, &pages);
	if (fd < 0)
		return fd;
	len = (size_t)pages * sizeof(*buf);
	buf = rm_huge_alloc(len);
	err = buf ? fill(buf->slot, pages * RM_RING_PAGE_SLOTS, arg) : -ENOMEM;
	if (!err)
		err = write_pages(fd, buf, pages);
	if (err && err != -ENOMEM && fd == spare) {
		/* a spare that takes no write is no spare: a new array */
		rm_huge_free(buf, len);
		return ring_map_fill(nslots, name, -1, fill, arg);
	}
	rm_huge_free(buf, len);
	if (err) {
		if (fd != spare)
			close(fd);
		return err;
	}
	return fd;
}

struct copy_arg {
	const struct rm_slot *slots;
	__u32 nslots;
};

static int fill_copy(struct rm_slot *buf, __u32 n, const void *arg)
{
	const struct copy_arg *a = arg;

	memcpy(buf, a->slots, (size_t)a->nslots * sizeof(*a->slots));
	memset(buf + a->nslots, 0, (size_t)(n - a->nslots) * sizeof(*buf));
	return 0;
}

int rm_ring_map_create(const struct rm_slot *slots, __u32 nslots,
		       const char *name)
{
	struct copy_arg a = {slots, nslots};

	return ring_map_fill(nslots, name, -1, fill_copy, &a);
}

int rm_ring_map_refill(int fd, const struct rm_slot *slots, __u32 nslots)
{
	struct copy_arg a = {slots, nslots};
	__u32 pages;

	int got;

	if (!spare_fits(fd, nslots, &pages))
		return -ENOSPC;
	got = ring_map_fill(nslots, "", fd, fill_copy, &a);
	if (got >= 0 && got != fd) { /* fd took no write: another array */
		close(got);
		return -EIO;
	}
	return got < 0 ? got : 0;
}

static int fill_encode(struct rm_slot *buf, __u32 n, const void *arg)
{
	return rm_ring_encode(arg, buf, n);
}

int rm_ring_map_encode(const struct rm_ring *r, const char *name, int spare)
{
	return ring_map_fill(rm_ring_nslots(r), name, spare, fill_encode, r);
}

__u32 rm_ring_map_used(const struct rm_slot *slots, __u32 cap)
{
	__u32 bits = RM_RING_HDR_BITS(slots[0].b), n = slots[0].a;

	/* a header that cannot be ours: all of it, for the reader to refuse */
	if (bits > RM_INDEX_BITS_MAX || n > RM_MAX_RING_ENTRIES)
		return cap;
	return RM_RING_SLOTS(bits, n) < cap ? RM_RING_SLOTS(bits, n) : cap;
}

static size_t map_len(__u32 pages)
{
	return (size_t)pages * sizeof(struct rm_ring_page);
}

int rm_ring_map_mmap(int fd, bool rw, struct rm_slot **slots, __u32 *nslots,
		     size_t *len)
{
	__u32 pages;
	void *mem;
	int err;

	*slots = NULL;
	*nslots = 0;
	*len = 0;
	err = rm_ring_map_pages(fd, &pages);
	if (err)
		return err;
	mem = mmap(NULL, map_len(pages), rw ? PROT_READ | PROT_WRITE : PROT_READ,
		   MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED || !mem)
		return fail_errno();
	*slots = mem;
	*nslots = rm_ring_map_used(mem, pages * RM_RING_PAGE_SLOTS);
	/* just the slots in use stay mapped: the caller unmaps what its
	 * nslots covers (rm_ring_map_len()) */
	*len = rm_ring_map_len(*nslots);
	if (*len < map_len(pages))
		munmap((char *)mem + *len, map_len(pages) - *len);
	return 0;
}

/* One page of the system's: the least a mapping takes, and always within
 * the kernel's page-aligned array */
int rm_ring_map_head(int fd, bool rw, struct rm_slot **hdr)
{
	void *mem = mmap(NULL, rm_ring_map_len(1),
			 rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED,
			 fd, 0);

	*hdr = mem == MAP_FAILED ? NULL : mem;
	return *hdr ? 0 : fail_errno();
}

void rm_ring_map_head_unmap(struct rm_slot *hdr)
{
	if (hdr)
		munmap(hdr, rm_ring_map_len(1));
}

size_t rm_ring_map_len(__u32 nslots)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return ((size_t)nslots * sizeof(struct rm_slot) + page - 1) / page *
	       page;
}

int rm_ring_map_read(int fd, __u32 pages, __u32 first, __u32 count,
		     struct rm_slot_read *rd)
{
	__u32 p0 = first / RM_RING_PAGE_SLOTS, n, done, prev = p0 - 1, tok;
	__u32 *keys = NULL;
	int err = -ENOMEM;

	memset(rd, 0, sizeof(*rd));
	if (!count || (__u64)first + count > (__u64)pages * RM_RING_PAGE_SLOTS)
		return -ERANGE;
	n = (first + count - 1) / RM_RING_PAGE_SLOTS - p0 + 1;
	rd->len = (size_t)n * sizeof(struct rm_ring_page);
	rd->mem = rm_huge_alloc(rd->len);
	keys = calloc(n, sizeof(*keys));
	if (!rd->mem || !keys)
		goto out;
	done = n;
	/* an array's batch starts after the key in_batch names */
	err = bpf_map_lookup_batch(fd, p0 ? &prev : NULL, &tok, keys, rd->mem,
				   &done, NULL);
	if (err == -ENOENT && done == n) /* stopped at the array's end */
		err = 0;
	if (err == -EINVAL || err == -EOPNOTSUPP || err == -524 /*ENOTSUPP*/) {
		/* a kernel without batch reads of arrays: one at a time */
		struct rm_ring_page *pg = rd->mem;

		err = 0;
		for (__u32 i = 0; i < n && !err; i++) {
			keys[i] = p0 + i;
			err = bpf_map_lookup_elem(fd, &keys[i], &pg[i])
				  ? fail_errno()
				  : 0;
		}
		done = err ? 0 : n;
	}
	for (__u32 i = 0; !err && i < n; i++)
		if (done != n || keys[i] != p0 + i)
			err = -EIO;
	if (!err)
		rd->slots = (const struct rm_slot *)rd->mem +
			    (first - p0 * RM_RING_PAGE_SLOTS);
out:
	free(keys);
	if (err)
		rm_ring_map_read_free(rd);
	return err;
}

void rm_ring_map_read_free(struct rm_slot_read *rd)
{
	if (rd->mem)
		rm_huge_free(rd->mem, rd->len);
	memset(rd, 0, sizeof(*rd));
}

int rm_ring_map_copy(int fd, struct rm_slot **slots, __u32 *nslots)
{
	struct rm_slot *mem;
	size_t len;
	int err = rm_ring_map_mmap(fd, false, &mem, nslots, &len);

	*slots = NULL;
	if (err || !mem)
		return err ? err : -EIO;
	*slots = malloc((size_t)*nslots * sizeof(**slots));
	if (*slots)
		memcpy(*slots, mem, (size_t)*nslots * sizeof(**slots));
	munmap(mem, len);
	return *slots ? 0 : -ENOMEM;
}
