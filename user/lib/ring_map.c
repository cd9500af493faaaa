// SPDX-License-Identifier: GPL-2.0
/* Ring arrays are mmapable (RM_RING_MAP_FLAGS) so a ring is written with
 * one memcpy instead of one syscall per slot or a batch update: a 64-node
 * ring (130k slots) fills in well under a millisecond instead of ~30 ms. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>
#include "ring.h"
#include "ring_map.h"

static size_t map_len(__u32 nslots)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = (size_t)nslots * sizeof(struct rm_slot);

	return (bytes + page - 1) / page * page;
}

/* BPF_MAP_CREATE itself, not libbpf's bpf_map_create(): that one first
 * loads a probe program to learn how memory is accounted (a few ms on
 * every ringctl change), which ringctl has no use for. */
static int ring_map_new(__u32 nslots, const char *name)
{
	union bpf_attr attr;
	int fd;

	if (nslots == 0)
		return -EINVAL;
	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = sizeof(__u32);
	attr.value_size = sizeof(struct rm_slot);
	attr.max_entries = nslots;
	attr.map_flags = RM_RING_MAP_FLAGS;
	snprintf(attr.map_name, sizeof(attr.map_name), "%s", name);
	fd = (int)syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

/* A new ring array of nslots, mapped for writing: fill(mem) writes it. */
static int ring_map_fill(__u32 nslots, const char *name,
			 int (*fill)(void *mem, const void *arg), const void *arg)
{
	size_t len = map_len(nslots);
	void *mem;
	int fd, err;

	fd = ring_map_new(nslots, name);
	if (fd < 0)
		return fd;
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	err = fill(mem, arg);
	munmap(mem, len);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

struct copy_arg {
	const struct rm_slot *slots;
	__u32 nslots;
};

static int fill_copy(void *mem, const void *arg)
{
	const struct copy_arg *a = arg;

	memcpy(mem, a->slots, (size_t)a->nslots * sizeof(*a->slots));
	return 0;
}

int rm_ring_map_create(const struct rm_slot *slots, __u32 nslots,
		       const char *name)
{
	struct copy_arg a = {slots, nslots};

	return ring_map_fill(nslots, name, fill_copy, &a);
}

static int fill_encode(void *mem, const void *arg)
{
	const struct rm_ring *r = arg;

	return rm_ring_encode(r, mem, rm_ring_nslots(r));
}

int rm_ring_map_encode(const struct rm_ring *r, const char *name)
{
	return ring_map_fill(rm_ring_nslots(r), name, fill_encode, r);
}
