/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Health checks, the pure part: a check's parameters with their defaults,
 * the per-node state machine (fall, rise, first result, flap damping) and
 * a service's verdict with fail-open. No I/O and no clock of its own:
 * callers pass the time, so tests drive it with a fake clock.
 *
 * The rules, one result at a time:
 *   unchecked  -ok-> healthy        -fail-> unhealthy  (the first decides)
 *   healthy    -fail-> failing 1 (unhealthy if fall is 1)
 *   failing n  -fail-> failing n+1, unhealthy at fall; -ok-> healthy
 *   unhealthy  -ok-> n successes, healthy at rise; -fail-> count 0
 * Flap damping: every healthy -> unhealthy adds RM_HC_FLAP_PENALTY to a
 * penalty that halves every RM_HC_FLAP_HALF_LIFE intervals; a node whose
 * penalty passes RM_HC_FLAP_SUPPRESS is damped: it stays unhealthy, rise
 * or not, until the penalty decays below RM_HC_FLAP_REUSE.
 * Fail-open: when fewer than panic_pct % of a service's active nodes are
 * healthy (unchecked counts as healthy), no active node is taken out.
 */
#ifndef RM_HEALTH_H
#define RM_HEALTH_H

#include <stdbool.h>
#include <ringmaster/rm_common.h>

#define RM_HC_FLAP_PENALTY 1000
#define RM_HC_FLAP_SUPPRESS 2500 /* about three flaps in a short while */
#define RM_HC_FLAP_REUSE 1000
#define RM_HC_FLAP_HALF_LIFE 30 /* intervals */

#define RM_CHECK_INTERVAL_MIN_MS 50
#define RM_CHECK_INTERVAL_MAX_MS 3600000
#define RM_CHECK_TIMEOUT_MIN_MS 10

/* A check's parameters with the defaults filled in. */
struct rm_hc_params {
	__u32 interval_ms, timeout_ms, fall, rise, panic_pct;
	__u16 port, status; /* port: 0 = the service port */
};
void rm_check_params(const struct rm_check *c, struct rm_hc_params *p);
const char *rm_check_type_name(__u32 type);
/* "tcp" ... -> RM_CHECK_*; -1 if unknown. */
int rm_check_type_parse(const char *s);
/* Check strings hold no whitespace or control characters. */
bool rm_check_str_valid(const char *s);
/* Decode the escapes of a payload (\n \r \t \s \\ \xHH); returns the
 * length written to out (at most size), -1 if malformed. */
int rm_check_unescape(const char *s, char *out, int size);
const char *rm_health_state_name(__u32 state);

/* One node's checker state. */
struct rm_hc_node {
	__u32 state; /* RM_HEALTH_* */
	__u32 count; /* as in struct rm_node_health */
	__u32 flags; /* RM_HEALTH_F_DAMPED */
	__u64 since_ms;
	double penalty;
	__u64 penalty_ms; /* when penalty was last decayed */
};

enum rm_hc_change {
	RM_HC_SAME = 0,	 /* nothing a reader would see changed */
	RM_HC_COUNT = 1, /* only the count (failing n of fall, ...) */
	RM_HC_STATE = 2, /* the state changed */
};
/* Feed one result at now_ms. */
enum rm_hc_change rm_hc_result(struct rm_hc_node *n,
			       const struct rm_hc_params *p, bool ok,
			       __u64 now_ms);

/* One node of a service, for the verdict. */
struct rm_hc_member {
	__u32 health;  /* RM_HEALTH_* */
	bool eligible; /* the operator has it ACTIVE */
	bool out;      /* result: out of the ring for health */
};
/* Decide out for every member; returns true when the service fails open
 * (unhealthy active nodes kept in). healthy/total: the counts it used. */
bool rm_hc_verdicts(struct rm_hc_member *m, __u32 n, __u32 panic_pct,
		    __u32 *healthy, __u32 *total);

/* ---- the checker's counters ------------------------------------------ */
/* ringhealth keeps them in a pinned ARRAY [1] of __u64[RM_HC_CNT_MAX]
 * (<pin dir>/rm_hc_counters, created by the checker, read by ringctl
 * stats); control plane only, written outside the lock. */
#define RM_MAP_HC_COUNTERS "rm_hc_counters"
#define RM_HC_COUNTERS(X)                                                  \
	X(RM_HC_CHECKS, "checks")                                          \
	X(RM_HC_CHECKS_FAILED, "checks-failed")                            \
	X(RM_HC_TRANSITIONS, "transitions")                                \
	X(RM_HC_RING_OUT, "ring-out")                                      \
	X(RM_HC_RING_IN, "ring-in")                                        \
	X(RM_HC_FAIL_OPEN, "fail-open")                                    \
	X(RM_HC_COMMITS, "commits")                                        \
	X(RM_HC_COMMIT_ERRORS, "commit-errors")                            \
	X(RM_HC_CHECKS_LATE, "checks-late")                                \
	X(RM_HC_LAG_MAX_MS, "lag-max-ms")                                  \
	X(RM_HC_TARGETS, "targets")
/* checks-late: started more than RM_HC_LATE_MS after they were due;
 * lag-max-ms: the most any check started late; targets: nodes checked */
#define RM_HC_LATE_MS 100
#define RM_HC_COUNTER_ENUM(id, name) id,
enum rm_hc_counter { RM_HC_COUNTERS(RM_HC_COUNTER_ENUM) RM_HC_CNT_MAX };
#undef RM_HC_COUNTER_ENUM
extern const char *const rm_hc_counter_names[RM_HC_CNT_MAX];

/* Open the pinned counters (create: make and pin them if missing).
 * Returns an fd or a negative errno (-ENOENT: no checker ever ran). */
int rm_hc_counters_open(const char *pin_dir, bool create);
int rm_hc_counters_read(int fd, __u64 out[RM_HC_CNT_MAX]);
int rm_hc_counters_write(int fd, const __u64 in[RM_HC_CNT_MAX]);

#endif /* RM_HEALTH_H */
