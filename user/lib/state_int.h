/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to the state_*.c files of libringmaster, which together implement
 * state.h: the helpers they share, defined in state.c. Not part of the
 * public API; nothing outside user/lib/state*.c includes this.
 */
#ifndef RM_STATE_INT_H
#define RM_STATE_INT_H

#include <stddef.h>
#include <linux/types.h>
#include "state.h"

/* Why the last call failed, as rm_errmsg() returns it; written by rm_state_fail(). */
extern __thread char rm_errbuf[512];

/* Record why, return err: every failure path is `return rm_state_fail(...)`. */
int __attribute__((format(printf, 2, 3))) rm_state_fail(int err, const char *fmt, ...);

/* Zero-padded copy: names are compared and dumped as whole fields. */
void rm_name_copy(char *dst, const char *src, size_t size);

/* Keys 0..n-1 of an array map: one batch call, or one call per key where
 * batching is unsupported. */
int rm_array_read(int fd, __u32 n, size_t vsize, void *out);

/* The ring array at key of outer map `map` (rm_rings, rm_rings_old),
 * opened: its fd, or -ENOENT (no message) when the key holds none. */
int rm_state_inner_open(struct rm_state *st, enum rm_map_id map, __u32 key);

#endif /* RM_STATE_INT_H */
