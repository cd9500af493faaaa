/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How to read the data plane's counters (RM_COUNTERS, rm_common.h): most
 * count a packet's one outcome (rm_counter_is_outcome); the others come
 * on top of it: conn-*, key-*, encap-* by their prefixes, and the rest
 * (icmp-forwarded) as packet events. One place for the metrics, top and
 * doctor to tell them apart.
 */
#ifndef RM_COUNTERS_H
#define RM_COUNTERS_H

#include <stdbool.h>
#include <ringmaster/rm_common.h>

enum rm_counter_kind {
	RM_CNT_KIND_OUTCOME, /* a packet's one outcome */
	RM_CNT_KIND_CONN,    /* conn-*: connection-table events */
	RM_CNT_KIND_KEY,     /* key-*: how a keyed service's packet was hashed */
	RM_CNT_KIND_ENCAP,   /* encap-*: forwarded packets by encapsulation */
	RM_CNT_KIND_EVENT,   /* any other counter on top of an outcome */
};

extern const char *const rm_counter_names[RM_CNT_MAX];
enum rm_counter_kind rm_counter_kind(int id);
/* The name without its kind's prefix ("hit" for conn-hit). */
const char *rm_counter_short_name(int id);
/* An outcome that loses the packet: dropped-*, redirect-failed, fib-*,
 * icmp-too-big-limited. */
bool rm_counter_is_drop(int id);

#endif
