/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The change log: one record per change of the live state (ringctl, and
 * whatever else commits a snapshot: apply, the health checker, sync),
 * kept in rm_history, an ARRAY pinned beside the program's maps (bpffs
 * holds only pins, so no plain file). Bounded: the newest RM_HISTORY_MAX
 * records stay, older ones are overwritten. Slot 0 is the head, with the
 * totals the metrics report; slots 1.. hold records round-robin.
 *
 * Whoever commits a change calls rm_history_append() right after a
 * successful rm_state_commit(), still holding the exclusive lock, with
 * the old and new snapshots: the moved share is computed from them.
 */
#ifndef RM_HISTORY_H
#define RM_HISTORY_H

#include <linux/types.h>
#include "state.h"

#define RM_MAP_HISTORY "rm_history"
#ifndef RM_HISTORY_MAX
#define RM_HISTORY_MAX 1024 /* records kept */
#endif
#define RM_HISTORY_WHO 32
#define RM_HISTORY_WHAT 192

struct rm_history_head {
	__u64 appended;	 /* records ever appended: the newest has this seq */
	__u64 swaps;	 /* rings replaced by logged changes, in total */
	__u64 last_ns;	 /* CLOCK_REALTIME of the newest record; 0: none */
	__u64 pad[2];
};

struct rm_history_rec {
	__u64 seq;	  /* 1, 2, ...; 0 marks an empty slot */
	__u64 time_ns;	  /* CLOCK_REALTIME */
	__u64 moved_keys; /* keys that changed owner, summed over services */
	__u32 services;	  /* services whose ring was replaced */
	__u32 pad;
	char who[RM_HISTORY_WHO];   /* "ringctl", "ringd apply", "health" */
	char what[RM_HISTORY_WHAT]; /* the command or event, one line */
};

union rm_history_slot {
	struct rm_history_head head; /* slot 0 */
	struct rm_history_rec rec;   /* slots 1..RM_HISTORY_MAX */
};

/* Log one change from old to new (both as committed). who and what are
 * cut to fit and control characters become spaces. Creates rm_history on
 * first use. Call with the exclusive lock held. 0 or -errno (the change
 * itself stands either way; rm_errmsg() says why logging failed). */
int rm_history_append(struct rm_state *st, const char *who, const char *what,
		      const struct rm_snap *old, const struct rm_snap *new);
/* The same with what moved already counted (rm_state_commit_moved(),
 * or an apply's plan): no ring is built again. */
int rm_history_append_moved(struct rm_state *st, const char *who,
			    const char *what, const struct rm_moved *m);

/* Create the (empty) log if missing: ringload attach does, so that the
 * pins of a director are the same from attach on. 0 or -errno. */
int rm_history_create(const char *pin_dir);

/* The head and the records, oldest first (*recs malloc'd, *n of them).
 * No log yet: a zero head and no records, not an error. */
int rm_history_read(const char *pin_dir, struct rm_history_head *head,
		    struct rm_history_rec **recs, __u32 *n);

/* Keys of one service that change owner from old to new (a service added
 * or removed moves its whole keyspace, 2^32), and whether its ring
 * changes at all. */
int rm_history_moved(const struct rm_snap *old, const struct rm_snap *new,
		     __u32 svc, __u64 *moved);

#endif
