/* SPDX-License-Identifier: GPL-2.0 */
/* ringhealth: the checker daemon. One event loop (epoll), every probe
 * non-blocking, so a slow node delays nobody. */
#ifndef RINGHEALTH_H
#define RINGHEALTH_H

#include <spawn.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <ringmaster/rm_common.h>
#include "health.h"

enum probe_phase {
	PH_IDLE,    /* waiting for next_ms */
	PH_CONNECT, /* tcp/http: connect in flight */
	PH_RECV,    /* http: request sent; udp: payload sent */
	PH_EXEC,    /* exec: child running */
};

/* One node of one service with a check. */
struct target {
	__u32 svc, slot;
	char svc_name[RM_NAME_MAX], name[RM_NAME_MAX];
	struct rm_check check; /* as configured */
	struct rm_hc_params p;
	__u16 svc_port; /* host order */
	struct sockaddr_storage sa; /* node address and check port */
	socklen_t salen;
	char addr_text[64];
	bool has_addr;
	/* the probe in flight */
	enum probe_phase phase;
	int fd, pidfd;
	pid_t pid;
	__u64 due_ms;	   /* when this check was due (lag) */
	__u64 next_ms;	   /* PH_IDLE: start then */
	__u64 deadline_ms; /* otherwise: give up then */
	char buf[256];
	int blen;
	/* results */
	struct rm_hc_node hc;
	bool checked;  /* has a result since the checker started */
	bool dirty;    /* something a reader sees changed: publish */
	char err[RM_HEALTH_ERR_MAX];
	bool seen; /* reconcile mark */
	bool noaddr_logged;
};

struct checker {
	const char *pin_dir;
	bool verbose;
	int epfd;
	struct target **t;
	__u32 n, cap;
	struct target *by_slot[RM_MAX_NODES]; /* a slot is one node */
	__u64 cnt[RM_HC_CNT_MAX];
	bool panic[RM_MAX_SERVICES];
	__u64 seed; /* jitter */
	posix_spawnattr_t spawn; /* exec checks: probe_init() */
};

__u64 now_ms(void);
void hlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* probe.c: how exec checks are started (0 or -errno); once. */
int probe_init(struct checker *c);
/* probe.c: start the check of t (at now), handle its events, and its
 * timeout. Each ends, sooner or later, in probe_done(). */
void probe_start(struct checker *c, struct target *t, __u64 now);
void probe_event(struct checker *c, struct target *t, __u32 events,
		 __u64 now);
void probe_timeout(struct checker *c, struct target *t, __u64 now);
/* Abort anything in flight (no result). */
void probe_abort(struct checker *c, struct target *t);
/* main.c: a result. */
void probe_done(struct checker *c, struct target *t, bool ok, __u64 now,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
