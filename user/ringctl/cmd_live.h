/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the live commands share. A change is an edit: parsed from the
 * command line without touching anything (syntax errors exit 2 even with
 * no state around), then applied to a copy of the snapshot read under the
 * exclusive lock, then committed as a whole. restore is a list of edits
 * applied the same way, so it accepts exactly what the commands accept.
 *
 * Exit codes: 2 for what the command line alone shows is wrong (missing
 * or malformed option, name, address, MAC, out-of-range number), 1 for
 * what depends on the system (unknown service or node, duplicate,
 * interface not found, no state, no permission, kernel refusal). Every
 * failure records its message with ctl_usage_error / ctl_runtime_error
 * (restore adds the line number in front) and returns the code.
 */
#ifndef RINGCTL_LIVE_H
#define RINGCTL_LIVE_H

#include "ringctl.h"
#include <stdio.h>
#include "state.h"

struct live {
	struct rm_state st;
	struct rm_snap *old; /* as read under the lock */
	struct rm_snap *new; /* the copy edits change */
	bool dry_run;	     /* --dry-run: edits touch no live state */
	bool committed;	     /* live_commit() wrote the change */
	struct live_keys *keys; /* QUIC keys this change wrote (cmd_quic_keys.c) */
	bool pair;	     /* old and new in one block (live_open) */
};

struct edit;
typedef int (*edit_apply_fn)(struct edit *e, struct live *lv);

struct edit {
	edit_apply_fn apply;
	char svc[RM_NAME_MAX];
	char node[RM_NAME_MAX];
	struct rm_svc_meta meta; /* service add */
	__u8 mac[6];		 /* node add */
	char dev[RM_IFNAME_MAX];
	__u32 weight;
	bool weight_set;
	int state; /* node set: RM_NODE_*, or -1 */
	struct rm_seed seed;
	struct rm_check check;	 /* service set: the fields check_mask */
	unsigned int check_mask; /* names (cmd_health.c) */
	__be32 addr[4];		 /* node add/set --addr */
	__u32 addr_family;
	bool addr_set;
	struct rm_via via;		 /* node add/set: how it is reached */
	__u8 sid[RM_QUIC_SID_MAX];	 /* node add --server-id */
	__u8 sid_len;
	bool via_set;			 /* node set */
	__u32 udp_timeout, insert_rate; /* config */
	bool udp_timeout_set, insert_rate_set;
	__be32 encap_src4, encap_src6[4];
	bool encap_src4_set, encap_src6_set;
	__u32 handover_s; /* config --handover-window */
	bool handover_set;
	char done[256]; /* what a commit of this edit did, for the user */
	int line;	/* restore: where it came from */
	/* service add --quic-key-file: an encrypted QUIC service's key */
	__u8 quic_key[RM_QUIC_KEY_LEN];
	char quic_key_file[RM_QUIC_KEY_FILE_MAX];
};
typedef int (*edit_parse_fn)(struct ctl_opts *o, struct edit *e);

int live_open(struct ctl_opts *o, struct live *lv, enum rm_lock lock);
void live_close(struct live *lv);
/* A snapshot, its pages populated at once (live_open uses these). */
struct rm_snap *live_snap_alloc(void);
void live_snap_free(struct rm_snap *s);
/* Commit lv->new, or with --dry-run print what would move. */
int live_commit(struct ctl_opts *o, struct live *lv, unsigned int flags,
		const char *done);
/* Log the change lv->old -> lv->new (committed) in the change log;
 * m: what it moved if the commit counted it (else NULL: counted here). */
void history_log(struct live *lv, const struct rm_moved *m);
/* parse, lock, read, apply, commit: a whole command */
int live_change(struct ctl_opts *o, edit_parse_fn parse);
/* the same for an edit already parsed */
int live_change_edit(struct ctl_opts *o, struct edit *e);

/* lookups on lv->new, with the message set on failure */
int live_svc(struct live *lv, const char *name);
int live_node(struct live *lv, __u32 svc, const char *name);
/* checks on a name given on the command line */
int live_name(const char *what, const char *name);
/* The one NAME argument of a `service` subcommand, checked; copied to out
 * (len bytes) unless out is NULL. */
int live_svc_arg(const struct ctl_opts *o, const char *cmd, char *out,
		 size_t len);
/* "198.18.0.1 port 80/tcp 5tuple" style text of a service */
void live_svc_text(const struct rm_svc_meta *m, char *out, size_t len);
/* The ring the kernel searches for svc, decoded (names from lv->old). */
int live_ring(struct live *lv, __u32 svc, struct rm_ring *r);

/* lookup --cid HEX: a --key quic service's CID (cmd_quic.c). */
int lookup_cid(struct ctl_opts *o, struct live *lv, int svc);
/* An encrypted QUIC service's encryption and key file (never the key):
 * a line of show's text, or fields of its JSON object j; nothing for
 * other services (cmd_quic.c). */
struct rm_json;
void quic_key_show(const struct live *lv, __u32 svc, struct rm_json *j);
/* save: " --quic-key-file FILE" for an encrypted QUIC service */
void quic_key_save(FILE *f, const struct live *lv, __u32 svc);
/* An encrypted service's key, written before the commit; the earlier
 * one is put back by live_close() unless the change commits. After the
 * commit, the keys of the encrypted services it removed are wiped.
 * live_quic_keys_open() opens the director's rm_quic_keys once for the
 * change, or says why it has none (a kernel without BPF crypto).
 * Each returns 0 or an exit code with its message (cmd_quic_keys.c). */
int live_quic_keys_open(struct live *lv);
int live_quic_key_write(struct live *lv, __u32 svc, const __u8 *key,
			const char *file);
int live_quic_keys_commit(struct live *lv);
void live_quic_keys_close(struct live *lv);
/* lookup: the connection table's entry for the flow (cmd_lookup_conn.c).
 * owner: the ring's owner slot, or -1 when the ring has none. */
struct lookup_conn {
	bool found, valid;
	struct rm_conn c;
	__u64 age_ns;
};
struct rm_json;
int lookup_conn_read(struct live *lv, const struct rm_flow *f,
		     struct lookup_conn *lc);
void lookup_conn_text(struct live *lv, const struct lookup_conn *lc,
		      int owner);
void lookup_conn_json(struct rm_json *j, struct live *lv,
		      const struct lookup_conn *lc, int owner);

/* lookup: the flow's second-chance hop list (cmd_hops.c), as a
 * non-SYN packet gets it now: computed by the data plane's rm_hops.h
 * from the remembered rings (g, read once per command). */
struct rm_gens;
void lookup_hops_text(struct live *lv, const struct rm_gens *g,
		      const struct lookup_conn *lc, __u32 h, int owner);
void lookup_hops_json(struct rm_json *j, struct live *lv,
		      const struct rm_gens *g, const struct lookup_conn *lc,
		      __u32 h, int owner);

/* show and doctor: whether service svc's flows can get hop lists
 * (cmd_hops.c). NULL when all can (*cover HOPS_ALL), else why not, and
 * in nodes the nodes that cannot carry one (*cover HOPS_PARTIAL when
 * some can). */
enum { HOPS_NONE, HOPS_PARTIAL, HOPS_ALL };
const char *hops_coverage(const struct rm_snap *s, __u32 svc, char *nodes,
			  size_t len, int *cover);
/* show's second-chance line / object: coverage, window, the remembered
 * generations and their ages. 0 or the exit code after the message. */
int hops_show_text(struct live *lv, __u32 svc);
int hops_show_json(struct rm_json *j, struct live *lv, __u32 svc);

/* edits, one parser per command; restore reuses them */
int svc_add_parse(struct ctl_opts *o, struct edit *e);
int svc_del_parse(struct ctl_opts *o, struct edit *e);
int node_add_parse(struct ctl_opts *o, struct edit *e);
int node_del_parse(struct ctl_opts *o, struct edit *e);
int node_set_parse(struct ctl_opts *o, struct edit *e);
int seed_parse(struct ctl_opts *o, struct edit *e);
int svc_set_parse(struct ctl_opts *o, struct edit *e);
/* --addr of node add/set into e */
/* "200ms", "2s", "1.5s" -> ms */
int rm_parse_duration_ms(const char *s, __u32 *ms);
/* --interval of top and doctor: def_s when not given, else a duration
 * within [min_ms, max_ms], in seconds; the usage error names cmd. */
int live_interval(const char *cmd, const char *val, __u32 min_ms,
		  __u32 max_ms, double def_s, double *out_s);

/* health checks as show, save and stats present them (cmd_health.c) */
struct rm_json;
void health_save_line(FILE *f, const struct rm_svc_meta *m);
void health_check_text(const struct rm_svc_meta *m);
void health_check_json(struct rm_json *j, const struct rm_svc_meta *m);
void health_text(const struct rm_svc_meta *m, const struct rm_node *n,
		 char *out, size_t len);
void health_json(struct rm_json *j, const struct rm_svc_meta *m,
		 const struct rm_node *n);
void health_counters(struct rm_json *j, const char *pin_dir);

int conf_parse(struct ctl_opts *o, struct edit *e);
/* The outer source of a family as text, "none" when unset. */
void encap_src_text(const struct rm_config *c, __u8 family, char *out,
		    size_t len);
/* A handover window as config --handover-window takes it: 15m, 0, ... */
void handover_text(__u32 s, char *out, size_t len);

/* A configuration document (save's format), for restore, apply and
 * publish: doc_parse() checks every line of f with the command tables and
 * turns it into edits without touching anything (exit 2 names the line);
 * doc_read() does it for the file o->argv[0] ("-": stdin); doc_replay()
 * turns lv->new into what the document describes (seed and settings kept
 * unless the document sets them; unchanged nodes keep their slot and
 * gen). They record their error (ctl_error_msg) and return the code. */
int doc_parse(const char *cmd, FILE *f, struct edit **edits, int *n);
int doc_read(struct ctl_opts *o, const char *cmd, struct edit **edits,
	     int *n);
int doc_replay(const char *cmd, struct live *lv, struct edit *edits, int n);
/* The line of the first edit that sets one of this director's own
 * settings (config --encap-src4/6, apply.h), 0 if none: what publish
 * refuses and apply --keep-local ignores. */
int doc_local_line(const struct edit *edits, int n);

/* ringctl's command table (commands.c): a command either runs a handler
 * or, with run NULL, applies its edit as one change (live_change). The
 * edit parser is what restore replays for a line of a saved file. */
struct ctl_cmd {
	struct cli_cmd cli; /* first: the table engine walks these */
	ctl_handler run;
	edit_parse_fn edit;
};
extern const struct cli_prog ctl_prog;
const struct ctl_cmd *ctl_cmd_at(int index);

#endif
