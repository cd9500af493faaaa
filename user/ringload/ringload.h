/* SPDX-License-Identifier: GPL-2.0 */
/* ringload: attach the data plane to interfaces, sharing one pinned state. */
#ifndef RINGLOAD_H
#define RINGLOAD_H

#include <stdbool.h>
#include <stdio.h>
#include <xdp/libxdp.h>
#include "cli.h"
#include "state.h"
#include "util.h"

enum load_mode { LOAD_AUTO, LOAD_NATIVE, LOAD_GENERIC };

/* Filled by the option tables in main.c. */
struct load_opts {
	const char *pin_dir;
	const char *iface;
	struct cli_enum mode; /* enum load_mode */
	bool json, purge, verbose, help, version;
	bool reuse; /* attach: already attached from this pin dir is fine */
	bool migrate; /* attach: over another layout, move the state over */
	struct cli_u32 conn_table; /* 0: the default, or as pinned */
	/* decap attach: the senders' prefixes, "A[/LEN][,B...]", and the
	 * second-chance next hops' (NULL: allow_src's) */
	const char *allow_src;
	const char *allow_hop;
	struct cli_u32 gue_port;
	struct cli_u32 interval; /* neighd: ms between rounds */
	bool fib_only;		 /* neighd: no next-hop records */
	bool chain;		 /* attach: into the interface's chain */
	struct cli_u32 slot;	 /* attach --chain, chain add/del */
	const char *obj;	 /* chain add: OBJ[:PROG] */
};

int load_error(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* attach.c */
int cmd_attach(struct load_opts *o);
int cmd_detach(struct load_opts *o);
int cmd_purge(struct load_opts *o);

/* migrate.c: the pins' layout against ours (user/lib/layout.h). -1: the
 * same (or no state yet), attach goes on; else the exit code (refused,
 * or --migrate done: the state moved over and the interfaces attached). */
int layout_check(struct load_opts *o);
/* ringload migrate: that, for the interfaces attached only (postinst) */
int cmd_migrate(struct load_opts *o);

/* ifaces.c: the rm_ifaces registry and what is really attached */
int ifaces_open(const char *pin_dir, bool create);
int ifaces_read(int fd, struct rm_iface out[RM_MAX_IFACES]);
int ifaces_put(int fd, const struct rm_iface *e);
int ifaces_del(int fd, const char *name);
/* Our program on ifindex: its id and the mode, 0 if found. want_id 0
 * matches any program named rm_xdp. */
int ifaces_find_prog(int ifindex, __u32 want_id, __u32 *prog_id,
		     enum xdp_attach_mode *mode);
const char *ifaces_mode_name(enum xdp_attach_mode mode);
int cmd_status(struct load_opts *o);

/* chain.c: sharing the interface through a root and a program array */
struct rm_xdp_chain;
struct rm_json;
int chain_attach_director(struct load_opts *o, int ifindex,
			  enum xdp_attach_mode *mode, __u32 *prog_id);
/* Take the director out of slot; the root and the chain's pins go when
 * nothing is left in it. */
int chain_detach_director(struct load_opts *o, int ifindex,
			  struct rm_xdp_chain *c, int slot);
int cmd_chain_add(struct load_opts *o);
int cmd_chain_del(struct load_opts *o);
int cmd_chain_show(struct load_opts *o);
void chain_json(struct rm_json *j, const struct rm_xdp_chain *c);
void chain_text(FILE *f, const char *indent, const struct rm_xdp_chain *c);

/* decap.c: the node-side decapsulator (bpf/decap.bpf.c) */
int cmd_decap_attach(struct load_opts *o);
int cmd_decap_detach(struct load_opts *o);
int cmd_decap_status(struct load_opts *o);
/* neighd.c: keep encapsulated nodes' next hops resolved */
int cmd_neighd(struct load_opts *o);

#endif
