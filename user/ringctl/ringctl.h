/* SPDX-License-Identifier: GPL-2.0 */
/* ringctl: the options struct the tables in commands.c fill, one handler
 * per command, one error channel. */
#ifndef RINGCTL_H
#define RINGCTL_H

#include <stdbool.h>
#include <ringmaster/rm_common.h>
#include "cli.h"
#include "util.h"

/* Every option of every command (commands.c says which command takes
 * which); a cli_* field says whether the option was given. */
struct ctl_opts {
	bool json, dry_run, verbose, help, version;
	const char *pin_dir;
	/* planning */
	const char *nodes, *from, *to;
	struct cli_u32 vnodes;
	struct cli_hex seed;
	/* services and nodes */
	struct cli_addr vip;
	struct cli_u32 port;
	struct cli_enum proto, hash;
	struct cli_mac mac;
	const char *dev;
	struct cli_u32 weight;
	/* service add --key SPEC: what a UDP service hashes (user/lib/key.h) */
	const char *keyspec;
	/* service add --ring SCHEME: where the ring puts nodes and keys */
	const char *ringspec;
	/* lookup: a flow, or a keyed service's key (--key, --qname, or
	 * --key-file, a key a line) */
	struct cli_addr src, dst;
	struct cli_u32 sport, dport;
	const char *lookup_key, *qname, *key_file, *sport_file;
	/* node state */
	bool drain, active, down;
	/* node add --server-id HEX: a --key quic service's QUIC-LB server ID;
	 * lookup --cid HEX; quic-cid --count N */
	const char *server_id, *cid;
	/* service add --quic-key-file FILE: encrypted QUIC-LB CIDs */
	const char *quic_key_file;
	struct cli_u32 count;
	/* save --output FILE */
	const char *output;
	/* save --fleet, apply --keep-local: this director's own settings
	 * (rm_cfg_local_same) out of a fleet's document */
	bool fleet, keep_local;
	/* node add/set --addr: where health checks go and, for a node
	 * reached by --via ipip|gue, where its packets are sent */
	struct cli_addr addr;
	struct cli_enum via;
	struct cli_u32 gue_port;
	/* service set: the health check (cmd_health.c) */
	struct cli_enum check;
	const char *check_path, *check_host, *check_payload, *check_expect;
	const char *check_cmd, *interval, *timeout;
	struct cli_u32 check_port, check_status, fall, rise, panic_share;
	/* seed --set HEX */
	struct cli_hex set;
	/* config */
	struct cli_u32 udp_timeout, insert_rate;
	const char *encap_src4, *encap_src6; /* an address, or "none" */
	const char *handover; /* --handover-window DURATION */
	/* apply --revision N --source TEXT (what ringsync applied) */
	struct cli_u32 revision;
	const char *source;
	/* publish: etcd, key, compare-and-swap, TLS and auth */
	const char *etcd, *key, *cacert, *cert, *tls_key, *user, *password_file;
	struct cli_u32 expect_revision;
	/* stats --prometheus [--textfile DIR] */
	bool prometheus;
	const char *textfile;
	/* top --once (top and doctor take --interval too) */
	bool once;
	/* positional arguments after the command words */
	int argc;
	char **argv;
};

typedef int (*ctl_handler)(struct ctl_opts *o);

/*
 * The one error channel: record why (one line, no "ringctl: "), return the
 * exit code (RM_EXIT_USAGE or RM_EXIT_RUNTIME). main() prints the last
 * message once when the command fails. ctl_error_context() puts context in
 * front of the recorded message ("restore: line 3: ...").
 */
int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ctl_runtime_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
int ctl_error_context(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *ctl_error_msg(void);

/* offline planning: cmd_plan.c */
int cmd_ring(struct ctl_opts *o);
int cmd_diff(struct ctl_opts *o);

/* live state: see the files named in commands.c's table */
int cmd_service_list(struct ctl_opts *o);
int cmd_show(struct ctl_opts *o);
int cmd_lookup(struct ctl_opts *o);
int cmd_stats(struct ctl_opts *o);
int cmd_save(struct ctl_opts *o);
int cmd_restore(struct ctl_opts *o);
int cmd_seed(struct ctl_opts *o);
int cmd_config(struct ctl_opts *o);
int cmd_apply(struct ctl_opts *o);
int cmd_publish(struct ctl_opts *o);
int cmd_quic_cid(struct ctl_opts *o);
/* observability: cmd_metrics.c, cmd_history.c, cmd_doctor.c, cmd_top.c */
int cmd_stats_prometheus(struct ctl_opts *o);
int cmd_history(struct ctl_opts *o);
int cmd_doctor(struct ctl_opts *o);
int cmd_top(struct ctl_opts *o);
/* The command line, recorded with every change (call first thing). */
void history_set_cmdline(int argc, char **argv);

#endif
