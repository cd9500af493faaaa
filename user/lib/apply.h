/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declarative apply: make the live state equal to a desired snapshot.
 *
 * The caller builds the desired snapshot from a document (ringctl's
 * restore/apply parser replays its lines on a copy of the live snapshot
 * read under the exclusive lock), then
 *   rm_apply_prepare()  compares it with the live one, service by
 *                       service, and computes what every ring that
 *                       changes moves (live ring against the would-be
 *                       one, by from/to node): nothing is written;
 *   rm_apply_commit()   commits it in one rm_state_commit(): each
 *                       changed ring swapped once, nothing at all when
 *                       nothing differs, and records the applied
 *                       revision beside the state (rm_applied).
 * ringctl apply and ringsync (through ringctl apply) share this code.
 */
#ifndef RM_APPLY_H
#define RM_APPLY_H

#include <stdbool.h>
#include <stdio.h>
#include "ring.h"
#include "state.h"

enum rm_svc_change {
	RM_SVC_SAME,	/* nothing differs */
	RM_SVC_ADDED,
	RM_SVC_REMOVED,
	RM_SVC_CHANGED, /* nodes, weights, states, vnodes or key differ */
};

struct rm_apply_svc {
	__u32 id;
	char name[RM_NAME_MAX];
	enum rm_svc_change change;
	bool ring;			 /* its ring is rebuilt and swapped */
	__u32 nodes_added, nodes_removed, nodes_changed;
	struct rm_move *moves;		 /* live ring -> new ring, by keys */
	size_t n_moves;
	__u64 moved;			 /* keys that change owner */
};

struct rm_apply {
	bool changed;	   /* anything differs: a commit writes */
	bool seed_changed; /* every ring rebuilt */
	bool cfg_changed;  /* UDP timeout or insert rate */
	bool local_changed; /* this director's own settings (rm_cfg_local) */
	__u32 n_svc;	   /* services that differ, in id order */
	struct rm_apply_svc svc[RM_MAX_SERVICES];
	/* prepare's plan (its rings built), which the commit applies
	 * instead of building every ring again */
	struct rm_plan *plan;
};

/* Compare new with old (read under the lock) and compute the moves of
 * every ring that changes. Validates new as a commit would (a document
 * that cannot be committed fails here, before anything is printed).
 * Free with rm_apply_free(). */
int rm_apply_prepare(struct rm_state *st, const struct rm_snap *old,
		     const struct rm_snap *new, struct rm_apply *a);
/* Commit new if a->changed; then, with rec non-NULL, record rec as the
 * applied revision (also when nothing changed: the revision is current),
 * its applied and checked times set to the moment the commit completed.
 * Call with the exclusive lock held, old and new as prepare saw them
 * (the commit takes prepare's plan: a commit is once per prepare). */
struct rm_applied;
int rm_apply_commit(struct rm_state *st, const struct rm_snap *old,
		    const struct rm_snap *new, struct rm_apply *a,
		    const struct rm_applied *rec);
void rm_apply_free(struct rm_apply *a);

/* ---- settings local to one director ------------------------------------ */
/* A fleet's document (ringctl save --fleet, publish, ringsync) holds what
 * every director must share: the seed, the table's settings, services,
 * nodes and checks. A director's own settings are not in it: the outer
 * source addresses of its encapsulated packets (config --encap-src4,
 * --encap-src6), an address of that director only. docs/
 * fleet-local-settings.md has the rules; these two are the one list. */
bool rm_cfg_local_same(const struct rm_config *a, const struct rm_config *b);
/* dst's local settings become live's: an apply that keeps them. */
void rm_cfg_keep_local(struct rm_config *dst, const struct rm_config *live);

/* ---- what ringsync applied, pinned beside the state -------------------- */
/* rm_applied: an ARRAY of one record that ringctl apply --revision and
 * ringsync create and pin as <pin dir>/rm_applied (bpffs holds only pins;
 * the data plane never reads it). Times are CLOCK_REALTIME nanoseconds, so
 * they mean the same to every process and survive restarts. */
#define RM_MAP_APPLIED "rm_applied"
#define RM_SOURCE_MAX 128
struct rm_applied {
	__u64 revision;	      /* etcd mod_revision of the applied document */
	__u64 applied_ns;     /* when it was applied (0: never) */
	__u64 checked_ns;     /* ringsync last confirmed it is current */
	__u64 rejected;	      /* documents refused (invalid) */
	__u64 rejected_revision; /* the last one refused */
	__u64 source_down_ns; /* etcd unreachable since (0: reachable) */
	char source[RM_SOURCE_MAX]; /* "URL key" it came from */
};
/* -ENOENT (no record yet) leaves *out zeroed. */
int rm_applied_read(const char *pin_dir, struct rm_applied *out);
int rm_applied_write(const char *pin_dir, const struct rm_applied *rec);
__u64 rm_realtime_ns(void);
/* "applied": {present, revision, applied_at, age_s, checked_age_s, ...}
 * for show and status; the text form prints nothing without a record. */
struct rm_json;
void rm_applied_json(struct rm_json *j, const char *pin_dir);
void rm_applied_text(FILE *f, const char *pin_dir);

#endif /* RM_APPLY_H */
