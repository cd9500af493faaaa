// SPDX-License-Identifier: GPL-2.0
/* ringload: attach, detach and inspect the Ringmaster data plane.
 * Exit 0 ok, 1 runtime failure, 2 usage. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <ringmaster/rm_encap.h>
#include "ringload.h"

/*
 * Commands and options, in the manner of ringctl's (user/ringctl/commands.c
 * says how to add one): parsing, --help, the man-page check and the
 * completion come from these tables.
 */
#define F(fld) offsetof(struct load_opts, fld)
#define STR_(x) #x
#define STR_OF(x) STR_(x)
#define OPT_PIN_DIR                                                          \
	{.name = "pin-dir", .type = CLI_STRING, .off = F(pin_dir),           \
	 .max = RM_PATH_MAX - RM_NAME_MAX - 1, .arg = "DIR",                 \
	 .def = RM_DEFAULT_PIN_DIR, .flags = CLI_COMMON | CLI_GLOBAL,        \
	 .help = "where the maps are pinned; interfaces attached with the "  \
		 "same DIR share them"}

static const struct cli_word modes[] = {{"auto", LOAD_AUTO},
					{"native", LOAD_NATIVE},
					{"generic", LOAD_GENERIC},
					{"skb", LOAD_GENERIC},
					{NULL, 0}};

/* the decapsulator's maps have a directory of their own */
#define OPT_DECAP_PIN_DIR                                                    \
	{.name = "pin-dir", .type = CLI_STRING, .off = F(pin_dir),           \
	 .max = RM_PATH_MAX - RM_NAME_MAX - 1, .arg = "DIR",                 \
	 .def = RM_DECAP_PIN_DIR, .flags = CLI_COMMON | CLI_GLOBAL,          \
	 .help = "where the decapsulator's maps are pinned"}
#define OPT_JSON                                                             \
	{.name = "json", .short_name = 'j', .type = CLI_FLAG, .off = F(json), \
	 .help = "print JSON, and nothing else, on stdout"}
#define OPT_MODE                                                             \
	{.name = "mode", .type = CLI_ENUM, .off = F(mode), .words = modes,   \
	 .def = "auto",                                                      \
	 .help = "XDP mode: native (driver), generic (skb), or auto: "       \
		 "native, else generic"}

static const struct cli_opt global_opts[] = {
    {.name = "verbose", .short_name = 'v', .type = CLI_FLAG, .off = F(verbose),
     .help = "libbpf's and libxdp's messages on stderr"},
    CLI_OPT_HELP(F(help), "command"),
    CLI_OPT_VERSION(F(version)),
    {0}};

#define OPT_SLOT(what, req, dflt)                                            \
	{.name = "slot", .type = CLI_UINT, .off = F(slot), .min = 0,         \
	 .max = RM_CHAIN_SLOTS - 1, .arg = "N", .def = dflt, .flags = req,   \
	 .help = what}

static const struct cli_opt attach_opts[] = {
    OPT_MODE,
    {.name = "chain", .type = CLI_FLAG, .off = F(chain),
     .help = "share IFACE with other XDP programs: attach the chain's root "
	     "(made if IFACE has none) and put the director in slot --slot"},
    OPT_SLOT("with --chain: the director's slot (default 0); the programs "
	     "in later slots get the packets it passes",
	     0, NULL),
    {.name = "conn-table", .type = CLI_UINT, .off = F(conn_table), .min = 1,
     .max = RM_CONN_ENTRIES_MAX, .arg = "N",
     .help = "connection-table entries, fixed when DIR is first attached "
	     "(default " STR_OF(RM_DEFAULT_CONN_ENTRIES) ")"},
    {.name = "reuse", .type = CLI_FLAG, .off = F(reuse),
     .help = "if IFACE already runs the director of this DIR, leave it and "
	     "succeed (a service restart keeps the traffic flowing)"},
    {.name = "migrate", .type = CLI_FLAG, .off = F(migrate),
     .help = "if DIR holds another layout of the pinned maps (an older "
	     "release's), move its state over: ringctl save, detach every "
	     "interface, purge, restore, the connection table where it "
	     "fits, attach them again (traffic stops meanwhile); without "
	     "it such an attach is refused"},
    OPT_PIN_DIR,
    {0}};

static const struct cli_opt detach_opts[] = {
    {.name = "purge", .type = CLI_FLAG, .off = F(purge),
     .help = "also remove the pinned state once no interface is attached"},
    OPT_PIN_DIR,
    {0}};

static const struct cli_opt status_opts[] = {
    OPT_JSON,
    OPT_PIN_DIR,
    {0}};

static const struct cli_opt purge_opts[] = {OPT_PIN_DIR, {0}};

static const struct cli_opt migrate_opts[] = {OPT_PIN_DIR, {0}};

static const struct cli_opt chain_add_opts[] = {
    OPT_SLOT("the slot to put the program in (empty; run in slot order)",
	     CLI_REQUIRED, NULL),
    OPT_PIN_DIR,
    {0}};

static const struct cli_opt chain_del_opts[] = {
    OPT_SLOT("the slot to empty", CLI_REQUIRED, NULL),
    OPT_PIN_DIR,
    {0}};

static const struct cli_opt chain_show_opts[] = {OPT_JSON, OPT_PIN_DIR, {0}};

static const struct cli_opt decap_attach_opts[] = {
    {.name = "allow-src", .type = CLI_STRING, .off = F(allow_src),
     .max = 4095, .arg = "PREFIX[,PREFIX...]", .flags = CLI_REQUIRED,
     .help = "the outer source addresses or prefixes packets are "
	     "decapsulated from: the directors', and with second chance the "
	     "other nodes' that may forward to this one"},
    {.name = "allow-hop", .type = CLI_STRING, .off = F(allow_hop),
     .max = 4095, .arg = "PREFIX[,PREFIX...]",
     .help = "second chance: the nodes a packet with a hop list may be "
	     "sent on to; a next hop outside them is dropped, counted "
	     "(default: the --allow-src prefixes)"},
    {.name = "gue-port", .type = CLI_UINT, .off = F(gue_port), .min = 1,
     .max = 65535, .arg = "PORT", .def = STR_OF(RM_GUE_PORT),
     .help = "the UDP port GUE packets arrive on"},
    OPT_MODE,
    OPT_DECAP_PIN_DIR,
    {0}};

static const struct cli_opt decap_detach_opts[] = {OPT_DECAP_PIN_DIR, {0}};

static const struct cli_opt decap_status_opts[] = {
    OPT_JSON,
    OPT_DECAP_PIN_DIR,
    {0}};

static const struct cli_opt neighd_opts[] = {
    {.name = "interval", .type = CLI_UINT, .off = F(interval), .min = 10,
     .max = 3600000, .arg = "MS", .def = "1000",
     .help = "milliseconds between two rounds over the routed nodes (each "
	     "uses every next hop's neighbour entry and refreshes every "
	     "record; a record expires after 5 rounds, 5 s at least, without one)"},
    {.name = "fib-only", .type = CLI_FLAG, .off = F(fib_only),
     .help = "write no next-hop records (and clear any): every routed "
	     "packet asks bpf_fib_lookup, which sees its TOS, ports and "
	     "ingress interface (for policy routing by those)"},
    OPT_PIN_DIR,
    {0}};

struct load_cmd {
	struct cli_cmd cli;
	int (*run)(struct load_opts *o);
	int nargs; /* positional: 1 IFACE, 2 IFACE OBJ (true: IFACE) */
};

static const struct load_cmd commands[] = {
    {{"attach", "IFACE",
      "attach the director to IFACE (creating the pinned state if needed)",
      attach_opts, 0},
     cmd_attach, true},
    {{"detach", "IFACE",
      "detach it from IFACE; the pinned state and its configuration stay",
      detach_opts, 0},
     cmd_detach, true},
    {{"status", NULL, "the interfaces attached and the pinned state",
      status_opts, 0},
     cmd_status, false},
    {{"purge", NULL,
      "remove the pinned state (ringctl save first to keep the "
      "configuration)",
      purge_opts, 0},
     cmd_purge, false},
    {{"migrate", NULL,
      "if DIR holds another layout of the pinned maps (an older "
      "release's), move its state over as attach --migrate does and attach "
      "again the interfaces that ran it; else do nothing (the package's "
      "upgrade runs it)",
      migrate_opts, 0},
     cmd_migrate, false},
    {{"chain add", "IFACE OBJ[:PROG]",
      "load XDP program PROG (default: the first) of the ELF object OBJ "
      "into a slot of IFACE's chain; its maps are pinned under DIR",
      chain_add_opts, 0},
     cmd_chain_add, 2},
    {{"chain del", "IFACE",
      "empty a slot of IFACE's chain (the root goes with the last program)",
      chain_del_opts, 0},
     cmd_chain_del, true},
    {{"chain show", "IFACE", "the root on IFACE and its chain, in order",
      chain_show_opts, 0},
     cmd_chain_show, true},
    {{"decap attach", "IFACE",
      "on a node: strip the outer IPIP/GUE header of packets to this host "
      "from the allowed directors",
      decap_attach_opts, 0},
     cmd_decap_attach, true},
    {{"decap detach", "IFACE", "detach the decapsulator from IFACE",
      decap_detach_opts, 0},
     cmd_decap_detach, true},
    {{"decap status", NULL,
      "where the decapsulator runs, and its counters", decap_status_opts, 0},
     cmd_decap_status, false},
    {{"neighd", NULL,
      "keep the next hops of routed (ipip/gue) nodes resolved, in the "
      "data plane's next-hop records (following the kernel's route, "
      "neighbour and link events) and their egress interfaces in the "
      "devmap; runs until SIGTERM",
      neighd_opts, 0},
     cmd_neighd, false},
};

static const struct cli_prog load_prog = {
    .name = "ringload",
    .global = global_opts,
    .cmds = CLI_CMDS(commands),
    .footer = "Maps are pinned under --pin-dir DIR (default " RM_DEFAULT_PIN_DIR
	      ") and survive\n"
	      "detach. To resize the connection table: ringctl save, detach "
	      "all, purge,\n"
	      "attach --conn-table N, ringctl restore.\n"
	      "Over pins of another layout (an older release's), attach "
	      "refuses;\n"
	      "attach --migrate moves the state over.\n"
	      "Exit status: 0 ok, 1 runtime failure, 2 usage.\n",
};

int load_error(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ringload: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return code;
}

static bool verbose;

/* libxdp's own messages only with -v, like libbpf's (cli.c) */
static int print_libxdp(enum libxdp_print_level level, const char *fmt,
			va_list ap)
{
	(void)level;
	return verbose ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char **argv)
{
	struct load_opts o = {0};
	const struct load_cmd *cmd;
	struct cli_result res;
	int ret, nargs;

	if (cli_is_internal(argc, argv))
		return cli_internal(&load_prog, argc, argv);
	ret = cli_parse(&load_prog, argc, argv, 0, &o, &res);
	if (ret)
		return load_error(ret, "%s", res.err);
	if (res.version) {
		cli_version(stdout, &load_prog);
		return RM_EXIT_OK;
	}
	if (res.cmd < 0) {
		cli_usage(res.help ? stdout : stderr, &load_prog, NULL);
		return res.help ? RM_EXIT_OK : RM_EXIT_USAGE;
	}
	cmd = &commands[res.cmd];
	if (res.help) {
		cli_help(stdout, &load_prog, &cmd->cli);
		return RM_EXIT_OK;
	}
	if (o.pin_dir[0] != '/')
		return load_error(RM_EXIT_USAGE,
				  "--pin-dir '%s': expected an absolute path "
				  "under /sys/fs/bpf",
				  o.pin_dir);
	nargs = cmd->nargs;
	if (res.argc != nargs)
		return res.argc > nargs
			   ? load_error(RM_EXIT_USAGE,
					"%s: unexpected argument '%s'",
					cmd->cli.words, res.argv[nargs])
			   : load_error(RM_EXIT_USAGE, "%s: expected %s",
					cmd->cli.words, cmd->cli.args);
	o.iface = nargs >= 1 ? res.argv[0] : NULL;
	o.obj = nargs >= 2 ? res.argv[1] : NULL;
	if (o.slot.set && !o.chain && !strcmp(cmd->cli.words, "attach"))
		return load_error(RM_EXIT_USAGE,
				  "attach: --slot goes with --chain");
	verbose = o.verbose;
	cli_libbpf_messages(verbose);
	libxdp_set_print(print_libxdp);
	return cmd->run(&o);
}
