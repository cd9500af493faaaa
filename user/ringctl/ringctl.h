/* SPDX-License-Identifier: GPL-2.0 */
/* ringctl: one options struct filled by main.c, one handler per command. */
#ifndef RINGCTL_H
#define RINGCTL_H

#include <stdbool.h>
#include <ringmaster/rm_common.h>
#include "util.h"

/* Every option any command takes; main.c parses them all with one
 * getopt_long table and each command checks the ones it needs. "set"
 * flags say whether an option was given at all. */
struct ctl_opts {
	bool json, dry_run, verbose;
	const char *pin_dir;
	/* planning */
	const char *nodes, *from, *to;
	__u32 vnodes;
	bool vnodes_set;
	struct rm_seed seed;
	bool seed_set;
	/* services and nodes */
	const char *vip, *proto, *hash, *mac, *dev;
	__u32 port, weight;
	bool port_set, weight_set;
	/* lookup */
	const char *src, *dst;
	__u32 sport, dport;
	bool sport_set, dport_set;
	/* node state */
	bool drain, active, down;
	/* seed --set HEX */
	const char *set;
	/* positional arguments after the command words */
	int argc;
	char **argv;
};

typedef int (*ctl_handler)(struct ctl_opts *o);

/* A one-line error on stderr, for usage errors (returns RM_EXIT_USAGE)
 * and runtime errors (returns RM_EXIT_RUNTIME). */
int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ctl_runtime_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* offline planning: cmd_plan.c */
int cmd_ring(struct ctl_opts *o);
int cmd_diff(struct ctl_opts *o);

/* live state: see the files named in main.c's table */
int cmd_service_add(struct ctl_opts *o);
int cmd_service_del(struct ctl_opts *o);
int cmd_service_list(struct ctl_opts *o);
int cmd_node_add(struct ctl_opts *o);
int cmd_node_del(struct ctl_opts *o);
int cmd_node_set(struct ctl_opts *o);
int cmd_show(struct ctl_opts *o);
int cmd_lookup(struct ctl_opts *o);
int cmd_stats(struct ctl_opts *o);
int cmd_save(struct ctl_opts *o);
int cmd_restore(struct ctl_opts *o);
int cmd_seed(struct ctl_opts *o);

#endif
