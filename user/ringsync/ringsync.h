/* SPDX-License-Identifier: GPL-2.0 */
/* ringsync: one etcd key -> this director's live state, and the VIP's
 * announcement through BIRD while the director can forward. */
#ifndef RINGSYNC_H
#define RINGSYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include "etcd.h"

struct sync_opts {
	struct rm_etcd_opts etcd;
	const char *key;
	const char *pin_dir;
	const char *ringctl, *ringload, *birdc;
	const char *bird_socket;   /* NULL: no BIRD to drive */
	const char *bird_protocol; /* the static protocol holding the VIP */
	long interval_ms;	   /* longest wait between two reads */
	long backoff_max_ms;
	long fresh_s; /* withdraw when not confirmed current for this long
			 (0: never for an etcd outage) */
};

struct sync_buf {
	char *p;
	size_t n;
};

extern volatile sig_atomic_t sync_stop;

/* Log one line (stdout, time-stamped). */
void sync_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* run.c: argv with in on stdin; stdout/stderr collected. Returns the exit
 * status (128 + signal if killed), or a negative errno. */
int sync_run(char *const argv[], const char *in, size_t in_len,
	     struct sync_buf *out, struct sync_buf *err);
const char *sync_last_line(struct sync_buf *b);

/* announce.c: can this director forward (XDP attached, state present and
 * seeded, a revision applied and, with fresh_s, confirmed recently)?
 * Enables or disables the BIRD protocol to match. */
void announce_update(const struct sync_opts *o, bool *announced,
		     bool *known);
void announce_withdraw(const struct sync_opts *o);

#endif
