// SPDX-License-Identifier: GPL-2.0
/* The change log (history.h): rm_history, a bounded ARRAY under the pin
 * dir, one record per committed change. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "apply.h"
#include "history.h"
#include "ring.h"
#include "state_int.h"

static int history_open(const char *pin_dir, bool create)
{
	return rm_pinned_array_open(pin_dir, RM_MAP_HISTORY,
				    sizeof(union rm_history_slot),
				    RM_HISTORY_MAX + 1, create);
}

int rm_history_create(const char *pin_dir)
{
	int fd = history_open(pin_dir, true);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* One printable line: logs are read by people and parsed by lines. */
static void copy_line(char *dst, const char *src, size_t size)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < size; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f
				 ? ' '
				 : src[i];
	memset(dst + i, 0, size - i);
}

int rm_history_moved(const struct rm_snap *old, const struct rm_snap *new,
		     __u32 svc, __u64 *moved)
{
	struct rm_ring a = {0}, b = {0};
	int err = 0;

	*moved = 0;
	if (old->svc[svc].in_use)
		err = rm_snap_ring(old, svc, &a);
	if (!err && new->svc[svc].in_use)
		err = rm_snap_ring(new, svc, &b);
	if (!err)
		*moved = rm_ring_moved(&a, &b);
	rm_ring_free(&a);
	rm_ring_free(&b);
	return err;
}

int rm_history_append(struct rm_state *st, const char *who, const char *what,
		      const struct rm_snap *old, const struct rm_snap *new)
{
	struct rm_moved m = {.counted = true};
	bool dirty[RM_MAX_SERVICES];
	__u64 moved;
	int err = 0;

	rm_snap_rings_changed(old, new, 0, dirty);
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++) {
		bool gone = old->svc[i].in_use && !new->svc[i].in_use;

		if (!dirty[i] && !gone)
			continue;
		err = rm_history_moved(old, new, i, &moved);
		m.keys += moved;
		m.services++;
	}
	return err ? err : rm_history_append_moved(st, who, what, &m);
}

int rm_history_append_moved(struct rm_state *st, const char *who,
			    const char *what, const struct rm_moved *m)
{
	union rm_history_slot head, rec;
	__u32 zero = 0, slot;
	int fd, err = 0;

	memset(&rec, 0, sizeof(rec));
	rec.rec.moved_keys = m->keys;
	rec.rec.services = m->services;
	fd = history_open(st->pin_dir, true);
	if (fd < 0)
		return rm_state_fail(fd, "cannot open %s/%s: %s", st->pin_dir,
				     RM_MAP_HISTORY, strerror(-fd));
	if (bpf_map_lookup_elem(fd, &zero, &head)) {
		err = rm_state_fail(-errno, "cannot read %s: %s",
				    RM_MAP_HISTORY, strerror(errno));
		goto out;
	}
	rec.rec.seq = head.head.appended + 1;
	rec.rec.time_ns = rm_realtime_ns();
	copy_line(rec.rec.who, who, sizeof(rec.rec.who));
	copy_line(rec.rec.what, what, sizeof(rec.rec.what));
	slot = 1 + (__u32)((rec.rec.seq - 1) % RM_HISTORY_MAX);
	/* the record first: a head never names a record not written */
	if (bpf_map_update_elem(fd, &slot, &rec, BPF_ANY)) {
		err = rm_state_fail(-errno, "cannot write %s: %s",
				    RM_MAP_HISTORY, strerror(errno));
		goto out;
	}
	head.head.appended = rec.rec.seq;
	head.head.swaps += rec.rec.services;
	head.head.last_ns = rec.rec.time_ns;
	if (bpf_map_update_elem(fd, &zero, &head, BPF_ANY))
		err = rm_state_fail(-errno, "cannot write %s: %s",
				    RM_MAP_HISTORY, strerror(errno));
out:
	close(fd);
	return err;
}

int rm_history_read(const char *pin_dir, struct rm_history_head *head,
		    struct rm_history_rec **recs, __u32 *n)
{
	union rm_history_slot *all;
	__u64 first;
	int fd, err;

	memset(head, 0, sizeof(*head));
	*recs = NULL;
	*n = 0;
	fd = history_open(pin_dir, false);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return rm_state_fail(fd, "cannot open %s/%s: %s", pin_dir,
				     RM_MAP_HISTORY, strerror(-fd));
	all = calloc(RM_HISTORY_MAX + 1, sizeof(*all));
	*recs = calloc(RM_HISTORY_MAX, sizeof(**recs));
	err = all && *recs ? rm_array_read(fd, RM_HISTORY_MAX + 1,
					   sizeof(*all), all)
			   : -ENOMEM;
	close(fd);
	if (err) {
		free(all);
		free(*recs);
		*recs = NULL;
		return rm_state_fail(err, "cannot read %s/%s: %s", pin_dir,
				     RM_MAP_HISTORY, strerror(-err));
	}
	*head = all[0].head;
	first = head->appended > RM_HISTORY_MAX
		    ? head->appended - RM_HISTORY_MAX + 1
		    : 1;
	for (__u64 seq = first; seq && seq <= head->appended; seq++) {
		const struct rm_history_rec *r =
		    &all[1 + (seq - 1) % RM_HISTORY_MAX].rec;

		if (r->seq == seq)
			(*recs)[(*n)++] = *r;
	}
	free(all);
	return 0;
}
