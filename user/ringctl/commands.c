// SPDX-License-Identifier: GPL-2.0
/*
 * ringctl's commands and their options: parsing, `ringctl CMD --help`, the
 * usage listing, restore's reading of saved files, the man-page check and
 * the shell completion all come from these tables.
 *
 * To add an option:
 *   1. a field in struct ctl_opts (ringctl.h) of the type's kind: bool for
 *      FLAG, struct cli_u32 for UINT, const char * for STR, struct
 *      cli_addr / cli_mac / cli_hex / cli_enum for ADDR / MAC / HEX / ENUM;
 *   2. an entry in the table of each command that takes it, with one of
 *      the macros below; an option several commands share gets an OPT_*
 *      macro here so that it is defined once. Trailing designated
 *      initializers set the rest: .flags = CLI_REQUIRED, .def = "1",
 *      .short_name = 'x', .flags = CLI_NOT_SAVED (never in a saved file);
 *   3. use o->field in the command. Range, type and "required" are checked
 *      before the command runs; the same long name must mean the same
 *      option everywhere (`ringctl __options` fails otherwise, and a test
 *      runs it).
 * To add a command: its options table, then a line in `commands` below
 * (words, positional synopsis, one-line summary); run, or edit for a
 * change of the live state (CLI_CMD_SAVED if `ringctl save` writes it and
 * restore replays it). The man page test then wants it in man/ringctl.8.
 */
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include "cmd_live.h"
#include "key.h"

#define F(fld) offsetof(struct ctl_opts, fld)
#define FLAG(n, fld, h, ...)                                                 \
	{.name = n, .type = CLI_FLAG, .off = F(fld), .help = h, __VA_ARGS__}
#define UINT(n, fld, lo, hi, a, h, ...)                                      \
	{.name = n, .type = CLI_UINT, .off = F(fld), .min = lo, .max = hi,   \
	 .arg = a, .help = h, __VA_ARGS__}
#define STR(n, fld, maxlen, a, h, ...)                                       \
	{.name = n, .type = CLI_STRING, .off = F(fld), .max = maxlen,        \
	 .arg = a, .help = h, __VA_ARGS__}
#define ADDR(n, fld, h, ...)                                                 \
	{.name = n, .type = CLI_ADDR, .off = F(fld), .arg = "ADDR",          \
	 .help = h, __VA_ARGS__}
#define MAC(n, fld, h, ...)                                                  \
	{.name = n, .type = CLI_MAC, .off = F(fld), .arg = "MAC", .help = h, \
	 __VA_ARGS__}
#define HEX(n, fld, bytes, a, h, ...)                                        \
	{.name = n, .type = CLI_HEX, .off = F(fld), .max = bytes, .arg = a,  \
	 .help = h, __VA_ARGS__}
#define ENUM(n, fld, w, h, ...)                                              \
	{.name = n, .type = CLI_ENUM, .off = F(fld), .words = w, .help = h,  \
	 __VA_ARGS__}
#define END {0}

#define STR_(x) #x
#define STR_OF(x) STR_(x)

/* options several commands share */
#define OPT_PIN_DIR                                                          \
	STR("pin-dir", pin_dir, RM_PATH_MAX - RM_NAME_MAX - 1, "DIR",            \
	    "the director's pinned state (ringload attach --pin-dir)",       \
	    .def = RM_DEFAULT_PIN_DIR,                                          \
	    .flags = CLI_NOT_SAVED | CLI_COMMON | CLI_GLOBAL)
#define OPT_JSON                                                             \
	FLAG("json", json, "print JSON, and nothing else, on stdout",        \
	     .short_name = 'j', .flags = CLI_NOT_SAVED)
#define OPT_DRY_RUN                                                          \
	FLAG("dry-run", dry_run,                                             \
	     "change nothing: print what the change would move",             \
	     .flags = CLI_NOT_SAVED)
#define OPT_VNODES                                                           \
	UINT("vnodes", vnodes, 1, RM_MAX_VNODES, "V",                        \
	     "virtual nodes per unit of weight",                             \
	     .def = STR_OF(RM_DEFAULT_VNODES))
#define OPT_SEED                                                             \
	HEX("seed", seed, 16, "HEX",                                         \
	    "the hash seed, 32 hex digits (ringctl seed prints the live one)")
#define OPT_ADDR                                                             \
	ADDR("addr", addr,                                                   \
	     "the node's own address: where health checks go and, with "    \
	     "--via ipip|gue, where its packets are sent")
/* how a node is reached; node add and node set take all four */
#define OPTS_REACH(...)                                                      \
	ENUM("via", via, vias,                                               \
	     "how packets reach the node: l2 rewrites the MAC on this "     \
	     "segment (--mac, --dev); ipip and gue encapsulate them to "    \
	     "--addr, routed (needs an outer source: ringctl config)",                \
	     __VA_ARGS__),                                                   \
	    MAC("mac", mac,                                                  \
		"--via l2: the node's MAC address (the director rewrites "   \
		"the destination MAC to it)"),                              \
	    STR("dev", dev, RM_IFNAME_MAX - 1, "IFACE",                      \
		"the interface the node is reached through (--via l2: "      \
		"required; ipip/gue: default the route's)"),               \
	    UINT("gue-port", gue_port, 1, 65535, "PORT",                     \
		 "--via gue: the node's GUE destination port",               \
		 .def = STR_OF(RM_GUE_PORT)),                                \
	    OPT_ADDR
#define OPT_WEIGHT(...)                                                      \
	UINT("weight", weight, 1, RM_MAX_WEIGHT, "W",                        \
	     "the node's share of the ring relative to the others' "         \
	     "(--drain stops new flows)",                                    \
	     __VA_ARGS__)
/* a change of the live state */
#define OPTS_CHANGE OPT_DRY_RUN, OPT_JSON, OPT_PIN_DIR

static const struct cli_word protos[] = {
    {"tcp", IPPROTO_TCP}, {"udp", IPPROTO_UDP}, {NULL, 0}};
static const struct cli_word hashes[] = {
    {"5tuple", 0}, {"3tuple", RM_SVC_F_3TUPLE}, {NULL, 0}};
/* --key SPEC: the words completion offers (bytes:... and token:... take
 * numbers) */
static const struct cli_word key_kinds[] = {
    {"flow", RM_KEY_FLOW}, {"memcached", RM_KEY_MEMCACHED},
    {"dns", RM_KEY_DNS}, {NULL, 0}};
/* --ring SCHEME: the words completion offers (md5-vnodes:... takes a
 * template) */
static const struct cli_word ring_schemes[] = {
    {"ringmaster", RM_RING_RINGMASTER}, {"ketama", RM_RING_KETAMA},
    {NULL, 0}};
static const struct cli_word checks[] = {
    {"tcp", RM_CHECK_TCP},   {"http", RM_CHECK_HTTP},
    {"udp", RM_CHECK_UDP},   {"exec", RM_CHECK_EXEC},
    {"none", RM_CHECK_NONE}, {NULL, 0}};
static const struct cli_word vias[] = {
    {"l2", RM_VIA_L2}, {"ipip", RM_VIA_IPIP}, {"gue", RM_VIA_GUE}, {NULL, 0}};

static const struct cli_opt global_opts[] = {
    FLAG("verbose", verbose, "libbpf's messages on stderr",
	 .short_name = 'v', .flags = CLI_NOT_SAVED),
    CLI_OPT_HELP(F(help), "command", .flags = CLI_NOT_SAVED),
    CLI_OPT_VERSION(F(version), .flags = CLI_NOT_SAVED),
    END};

static const struct cli_opt ring_opts[] = {
    STR("nodes", nodes, 0, "LIST",
	"the nodes, name[:weight],... (weight 1-" STR_OF(RM_MAX_WEIGHT) ")",
	.flags = CLI_REQUIRED),
    OPT_VNODES,
    OPT_SEED,
    OPT_JSON,
    END};

static const struct cli_opt diff_opts[] = {
    STR("from", from, 0, "LIST", "the nodes before, name[:weight],...",
	.flags = CLI_REQUIRED),
    STR("to", to, 0, "LIST", "the nodes after, name[:weight],...",
	.flags = CLI_REQUIRED),
    OPT_VNODES,
    OPT_SEED,
    OPT_JSON,
    END};

static const struct cli_opt service_add_opts[] = {
    ADDR("vip", vip, "the service's virtual IP, IPv4 or IPv6",
	 .flags = CLI_REQUIRED),
    UINT("port", port, 0, 65535, "PORT",
	 "the service's destination port (0: any port)",
	 .flags = CLI_REQUIRED),
    ENUM("proto", proto, protos, "the service's protocol",
	 .flags = CLI_REQUIRED),
    ENUM("hash", hash, hashes,
	 "what a flow's node depends on: addresses and ports, or addresses "
	 "and protocol only",
	 .def = "5tuple"),
    STR("key", keyspec, 63,
	"flow|memcached|dns|bytes:OFF:LEN|token:OFF:DELIMS:MAXLEN|"
	"quic:SIDLEN:NONCELEN[:CR[:CIDLEN|:self]]",
	"UDP: send each request to its key's owner: a memcached key, a DNS "
	"QNAME, LEN bytes at payload offset OFF, or from OFF up to one of "
	"DELIMS (escapes \\s \\r \\n \\t \\\\ \\xHH), at most MAXLEN bytes; "
	"quic: each QUIC packet by its destination connection ID, to the "
	"node whose --server-id it carries (QUIC-LB plaintext CIDs: "
	"SIDLEN-byte server ID, NONCELEN-byte nonce, config rotation CR "
	"0-6, CIDs of CIDLEN bytes or self-encoded length, the default), "
	"else to the ring by its hash; "
	"flow: by the flow",
	.def = "flow", .words = key_kinds),
    STR("quic-key-file", quic_key_file, RM_QUIC_KEY_FILE_MAX - 1, "FILE",
	"with --key quic: the servers' CIDs are encrypted (QUIC-LB AES-128-"
	"ECB: one pass when SIDLEN + NONCELEN is 16, else four) under the "
	"key in FILE, 32 hex digits, readable by no one but its owner. "
	"Needs a kernel whose BPF programs may call the crypto kfuncs "
	"(Linux 6.10+). show never prints the key; save writes this option "
	"with FILE's path, and restore reads the file again"),
    STR("ring", ringspec, 63, "ringmaster|ketama|md5-vnodes:TEMPLATE:COUNT",
	"with --key: where the ring puts each node and key: ringmaster, the "
	"keyed hash; ketama, libmemcached's weighted ketama (MD5 of each "
	"node's ADDR:PORT, or ADDR for port 11211; a node without --addr "
	"by its name); md5-vnodes, COUNT points a node (times its weight) "
	"at MD5 of TEMPLATE with {node} and {i} filled. The MD5 rings are "
	"unkeyed: they agree with existing clients, and anyone can aim keys "
	"at a node",
	.def = "ringmaster", .words = ring_schemes),
    OPT_VNODES,
    OPTS_CHANGE,
    END};

static const struct cli_opt change_opts[] = {OPTS_CHANGE, END};

static const struct cli_opt view_opts[] = {OPT_JSON, OPT_PIN_DIR, END};

static const struct cli_opt stats_opts[] = {
    FLAG("prometheus", prometheus,
	 "the Prometheus text exposition format instead of the table"),
    STR("textfile", textfile, RM_PATH_MAX - 32, "DIR",
	"write the Prometheus format to DIR/ringmaster.prom atomically, "
	"for node_exporter's textfile collector (implies --prometheus)"),
    OPT_JSON,
    OPT_PIN_DIR,
    END};

static const struct cli_opt top_opts[] = {
    STR("interval", interval, 15, "DURATION",
	"time between two frames, 100ms to 1h (default 1s)"),
    FLAG("once", once, "print one frame (rates over one interval) and exit"),
    OPT_JSON,
    OPT_PIN_DIR,
    END};

static const struct cli_opt doctor_opts[] = {
    STR("interval", interval, 15, "DURATION",
	"how long to watch the drop counters, 0 to 1m (default 1s)"),
    OPT_JSON,
    OPT_PIN_DIR,
    END};

static const struct cli_opt node_add_opts[] = {
    OPTS_REACH(.def = "l2"),
    OPT_WEIGHT(.def = "1"),
    STR("server-id", server_id, 2 * RM_QUIC_SID_MAX + 2, "HEX",
	"a --key quic service: the node's QUIC-LB server ID, the service's "
	"server ID length in bytes as hex, unique in the service; packets "
	"whose connection ID carries it go to this node whatever the ring "
	"says (the node's QUIC server must issue such CIDs: ringctl "
	"quic-cid)"),
    OPTS_CHANGE,
    END};

static const struct cli_opt node_set_opts[] = {
    OPT_WEIGHT(),
    FLAG("drain", drain,
	 "out of the ring; keeps the flows it has until they end"),
    FLAG("active", active, "back in the ring"),
    FLAG("down", down,
	 "out of the ring; its flows go to the ring from their next packet"),
    OPTS_REACH(),
    OPTS_CHANGE,
    END};

/* durations: "200ms", "2s", "1.5s" */
static const struct cli_opt service_set_opts[] = {
    ENUM("check", check, checks,
	 "the health check of every node (none: every node counts as "
	 "healthy; ringhealth runs them)"),
    UINT("check-port", check_port, 0, 65535, "PORT",
	 "the port checked (0: the service's)"),
    STR("check-path", check_path, RM_CHECK_STR_MAX - 1, "PATH",
	"http: the path to GET, starting with / (default /)"),
    UINT("check-status", check_status, 100, 599, "N",
	 "http: the status that means healthy (default 200)"),
    STR("check-host", check_host, RM_CHECK_STR_MAX - 1, "HOST",
	"http: the Host header (default the node's address)"),
    STR("check-payload", check_payload, RM_CHECK_STR_MAX - 1, "TEXT",
	"udp: what to send (escapes \\n \\r \\t \\s \\xHH)"),
    STR("check-expect", check_expect, RM_CHECK_STR_MAX - 1, "TEXT",
	"udp: the reply must start with this (default: any reply)"),
    STR("check-cmd", check_cmd, RM_CHECK_CMD_MAX - 1, "PATH",
	"exec: a program, by absolute path, required with --check exec; "
	"exit 0 is healthy (RM_NODE, RM_SERVICE, RM_ADDR, RM_PORT in its "
	"environment)"),
    STR("interval", interval, 15, "DURATION",
	"time between two checks of a node, 50ms to 1h (default 2s); not "
	"shorter than the timeout: below 1s give a --timeout too"),
    STR("timeout", timeout, 15, "DURATION",
	"a check not answered in this time failed, 10ms to 1h (default "
	"1s); at most the interval (a check ends before the next starts)"),
    UINT("fall", fall, 1, 100, "N",
	 "failures in a row that take a node out (default 3)"),
    UINT("rise", rise, 1, 100, "N",
	 "successes in a row that bring it back (default 2)"),
    UINT("panic-share", panic_share, 0, 100, "PCT",
	 "below this percent of nodes healthy, keep all in: fail-open "
	 "(default 50; 0: never)"),
    OPTS_CHANGE,
    END};

static const struct cli_opt lookup_opts[] = {
    ADDR("src", src, "the flow's source address (a flow: --src, or a key: "
		     "--key, --qname, --key-file)"),
    UINT("sport", sport, 0, 65535, "PORT",
	 "the flow's source port (required for a 5-tuple service)"),
    STR("sport-file", sport_file, 0, "FILE",
	"many flows from --src: a source port a line (- for stdin); prints "
	"SPORT NODE lines (--json: an array)"),
    ADDR("dst", dst, "the flow's destination address (default: the VIP)"),
    UINT("dport", dport, 0, 65535, "PORT",
	 "the flow's destination port (default: the service's)"),
    STR("key", lookup_key, RM_KEY_WINDOW, "KEY",
	"a keyed service: the key (as the client sends it; --key dns: a "
	"name)"),
    STR("qname", qname, RM_KEY_MAX, "NAME",
	"a --key dns service: the query name, any case, final dot optional"),
    STR("key-file", key_file, 0, "FILE",
	"a keyed service: a key a line (- for stdin); prints KEY NODE lines"),
    STR("cid", cid, 2 * RM_QUIC_CID_MAX + 2, "HEX",
	"a --key quic service: a packet's destination connection ID; says "
	"whether its QUIC-LB server ID or the ring by its hash decides"),
    OPT_JSON,
    OPT_PIN_DIR,
    END};

static const struct cli_opt quic_cid_opts[] = {
    UINT("count", count, 1, 100000, "N", "how many CIDs (default 1)"),
    OPT_JSON,
    OPT_PIN_DIR,
    END};

static const struct cli_opt save_opts[] = {
    STR("output", output, 0, "FILE",
	"write FILE instead of stdout, atomically (a temporary file renamed "
	"over it)",
	.short_name = 'o'),
    FLAG("fleet", fleet,
	 "leave out this director's own settings (its outer sources): the "
	 "document to publish to every director"),
    OPT_PIN_DIR,
    END};

static const struct cli_opt seed_opts[] = {
    HEX("set", set, 16, "HEX",
	"a new seed, 32 hex digits: every ring is rebuilt with it"),
    OPTS_CHANGE,
    END};

static const struct cli_opt config_opts[] = {
    UINT("udp-timeout", udp_timeout, 1, RM_UDP_TIMEOUT_MAX, "S",
	 "seconds an idle UDP flow keeps its node"),
    UINT("conn-insert-rate", insert_rate, 0, UINT32_MAX, "R",
	 "connection-table entries written per second per CPU (0: no "
	 "limit)"),
    STR("encap-src4", encap_src4, 63, "ADDR",
	"outer IPv4 source of encapsulated packets: an address of this "
	"director, or none"),
    STR("encap-src6", encap_src6, 63, "ADDR",
	"outer IPv6 source of encapsulated packets: an address of this "
	"director, or none"),
    STR("handover-window", handover, 15, "DURATION",
	"second chance: how long a replaced ring still names a flow's older "
	"owners to GUE nodes, e.g. 900s, 15m, 1h (0: off)"),
    OPTS_CHANGE,
    END};

static const struct cli_opt apply_opts[] = {
    UINT("revision", revision, 0, UINT32_MAX, "N",
	 "record N as the applied revision, with the time (ringsync does)"),
    STR("source", source, 120, "TEXT",
	"where the revision came from, recorded with it"),
    FLAG("keep-local", keep_local,
	 "keep this director's own settings (its outer sources): the "
	 "document's lines for them are ignored (ringsync does)"),
    OPTS_CHANGE,
    END};

static const struct cli_opt publish_opts[] = {
    STR("etcd", etcd, 200, "URL", "etcd's client URL, http(s)://host:port",
	.flags = CLI_REQUIRED),
    STR("key", key, 200, "KEY", "the fleet's key", .flags = CLI_REQUIRED),
    UINT("expect-revision", expect_revision, 0, UINT32_MAX, "N",
	 "write only if the key is still at revision N (the one you saw)"),
    STR("cacert", cacert, 0, "FILE", "TLS: CA bundle to verify etcd with"),
    STR("cert", cert, 0, "FILE", "TLS: client certificate (with --tls-key)"),
    STR("tls-key", tls_key, 0, "FILE", "TLS: client key (with --cert)"),
    STR("user", user, 0, "NAME", "etcd user (auth; with --password-file)"),
    STR("password-file", password_file, 0, "FILE",
	"file holding the etcd user's password (with --user)"),
    OPT_DRY_RUN,
    OPT_JSON,
    END};

/* CMD(words, positional synopsis, summary, options, CLI_CMD_* flags, then
 * .run = handler and/or .edit = parser of the change) */
#define CMD(w, a, s, o, fl, ...)                                             \
	{.cli = {.words = w, .args = a, .summary = s, .opts = o, .flags = fl}, \
	 __VA_ARGS__}

static const struct ctl_cmd commands[] = {
    CMD("ring", NULL, "the ring a node set makes and each node's share",
	ring_opts, 0, .run = cmd_ring),
    CMD("diff", NULL, "the share of the keyspace a node-set change moves",
	diff_opts, 0, .run = cmd_diff),
    CMD("service add", "NAME", "add a service: a VIP, port and protocol",
	service_add_opts, CLI_CMD_SAVED, .edit = svc_add_parse),
    CMD("service del", "NAME", "delete a service and its nodes",
	change_opts, 0, .edit = svc_del_parse),
    CMD("service list", NULL, "the services", view_opts, 0,
	.run = cmd_service_list),
    CMD("service set", "NAME",
	"set a service's health check (only the options given change)",
	service_set_opts, CLI_CMD_SAVED, .edit = svc_set_parse),
    CMD("node add", "SERVICE NODE",
	"add a node to a service's ring (it starts active)", node_add_opts,
	CLI_CMD_SAVED, .edit = node_add_parse),
    CMD("node del", "SERVICE NODE",
	"delete a node; its flows go to the ring", change_opts, 0,
	.edit = node_del_parse),
    CMD("node set", "SERVICE NODE",
	"change a node's weight, state (one of --drain, --active, --down), "
	"address, or how it is reached (--via and its options)",
	node_set_opts, CLI_CMD_SAVED, .edit = node_set_parse),
    CMD("show", "[SERVICE]",
	"services, nodes, live ring shares, connections", view_opts, 0,
	.run = cmd_show),
    CMD("lookup", "SERVICE",
	"the node the data plane picks for a flow, or for a keyed service's "
	"key",
	lookup_opts, 0, .run = cmd_lookup),
    CMD("stats", NULL,
	"the data plane's counters (--prometheus: every metric of the state)",
	stats_opts, 0, .run = cmd_stats),
    CMD("top", "[SERVICE]",
	"live view: per service and node packets/s, bytes/s, new flows/s, "
	"connections, share, state, health; outcomes/s; q quits",
	top_opts, 0, .run = cmd_top),
    CMD("doctor", "[IFACE]",
	"check what makes a director fail silently and say what to do; exit "
	"1 on findings",
	doctor_opts, 0, .run = cmd_doctor),
    CMD("history", NULL,
	"the change log: time, who, command, services whose ring changed, "
	"share of the keyspace moved",
	view_opts, 0, .run = cmd_history),
    CMD("save", NULL,
	"the configuration as ringctl commands, on stdout (restore reads it)",
	save_opts, 0, .run = cmd_save),
    CMD("restore", "FILE|-",
	"replace the configuration with a saved one, in one change",
	change_opts, 0, .run = cmd_restore),
    CMD("apply", "FILE|-",
	"make the live state equal to a saved file: prints what moves, swaps "
	"each changed ring once, changes nothing on any error",
	apply_opts, 0, .run = cmd_apply),
    CMD("publish", "FILE|-",
	"validate a saved file and write it to the fleet's etcd key "
	"(compare-and-swap)",
	publish_opts, 0, .run = cmd_publish),
    CMD("seed", NULL, "print the hash seed, or set it with --set",
	seed_opts, CLI_CMD_SAVED, .run = cmd_seed, .edit = seed_parse),
    CMD("config", NULL,
	"the connection table's settings: print them, or set them",
	config_opts, CLI_CMD_SAVED, .run = cmd_config, .edit = conf_parse),
    CMD("quic-cid", "SERVICE NODE",
	"QUIC connection IDs carrying a node's QUIC-LB server ID under its "
	"--key quic service's configuration, fresh random nonces, one a "
	"line: for the node's QUIC server to issue",
	quic_cid_opts, 0, .run = cmd_quic_cid),
};

const struct cli_prog ctl_prog = {
    .name = "ringctl",
    .global = global_opts,
    .cmds = CLI_CMDS(commands),
    .footer = "Live commands act on the director pinned at --pin-dir DIR\n"
	      "(default " RM_DEFAULT_PIN_DIR ").\n"
	      "Exit status: 0 ok, 1 runtime failure, 2 usage.\n",
};

const struct ctl_cmd *ctl_cmd_at(int index)
{
	return &commands[index];
}
