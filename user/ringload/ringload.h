/* SPDX-License-Identifier: GPL-2.0 */
/* ringload: attach the data plane to interfaces, sharing one pinned state. */
#ifndef RINGLOAD_H
#define RINGLOAD_H

#include <stdbool.h>
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
	bool json, purge, verbose, help;
	bool reuse; /* attach: already attached from this pin dir is fine */
	struct cli_u32 conn_table; /* 0: the default, or as pinned */
	/* decap attach: the directors' prefixes, "A[/LEN][,B...]" */
	const char *allow_src;
	struct cli_u32 gue_port;
	struct cli_u32 interval; /* neighd: ms between rounds */
};

int load_error(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* attach.c */
int cmd_attach(struct load_opts *o);
int cmd_detach(struct load_opts *o);
int cmd_purge(struct load_opts *o);

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

/* decap.c: the node-side decapsulator (bpf/decap.bpf.c) */
int cmd_decap_attach(struct load_opts *o);
int cmd_decap_detach(struct load_opts *o);
int cmd_decap_status(struct load_opts *o);
/* neighd.c: keep encapsulated nodes' next hops resolved */
int cmd_neighd(struct load_opts *o);

#endif
