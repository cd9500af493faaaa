// SPDX-License-Identifier: GPL-2.0
/* ringctl: plan rings offline and change a live director's services and
 * nodes. Exit 0 ok, 1 runtime failure, 2 usage. */
#include <getopt.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd_live.h"
#include "ringctl.h"

/* ringctl config's options, beside struct ctl_opts (cmd_live.h). */
static struct conf_opts conf;

static int run_config(struct ctl_opts *o)
{
	return cmd_config(o, &conf);
}

struct command {
	const char *word1, *word2; /* e.g. "node" "add"; word2 NULL if none */
	ctl_handler fn;
	const char *usage;
};

static const struct command commands[] = {
	{"ring", NULL, cmd_ring,
	 "ring --nodes a,b:2,c [--vnodes V] [--seed HEX] [--json]"},
	{"diff", NULL, cmd_diff,
	 "diff --from a,b,c --to a,b,c,d [--vnodes V] [--seed HEX] [--json]"},
	{"service", "add", cmd_service_add,
	 "service add NAME --vip ADDR --port P --proto tcp|udp "
	 "[--hash 5tuple|3tuple] [--vnodes V] [--dry-run]"},
	{"service", "del", cmd_service_del, "service del NAME [--dry-run]"},
	{"service", "list", cmd_service_list, "service list [--json]"},
	{"node", "add", cmd_node_add,
	 "node add SERVICE NODE --mac MAC --dev IFACE [--weight W] [--dry-run]"},
	{"node", "del", cmd_node_del, "node del SERVICE NODE [--dry-run]"},
	{"node", "set", cmd_node_set,
	 "node set SERVICE NODE [--weight W] [--drain|--active|--down] "
	 "[--dry-run]\n"
	 "      --drain: out of the ring, keeps the flows it has; --down: "
	 "out of the ring\n"
	 "      and its flows go to the ring (reset by their new node); "
	 "--active: back in"},
	{"show", NULL, cmd_show, "show [SERVICE] [--json]"},
	{"lookup", NULL, cmd_lookup,
	 "lookup SERVICE --src ADDR --sport P [--dst ADDR --dport P] [--json]"},
	{"stats", NULL, cmd_stats, "stats [--json]"},
	{"save", NULL, cmd_save, "save"},
	{"restore", NULL, cmd_restore, "restore FILE|- [--dry-run]"},
	{"seed", NULL, cmd_seed, "seed [--set HEX [--dry-run]] [--json]"},
	{"config", NULL, run_config,
	 "config [--udp-timeout S] [--conn-insert-rate R] [--dry-run] "
	 "[--json]\n"
	 "      connection table: UDP idle timeout (1-86400 s), entries "
	 "written per\n"
	 "      second per CPU (0: no limit); no option: show them and the "
	 "table's size"},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: ringctl [--pin-dir DIR] [-v] COMMAND ...\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  ringctl %s\n", commands[i].usage);
	fprintf(f, "Every live command takes --pin-dir DIR (default %s).\n",
		RM_DEFAULT_PIN_DIR);
}

static int report(int code, const char *fmt, va_list ap)
{
	fprintf(stderr, "ringctl: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	return code;
}

int ctl_usage_error(const char *fmt, ...)
{
	va_list ap;
	int code;

	va_start(ap, fmt);
	code = report(RM_EXIT_USAGE, fmt, ap);
	va_end(ap);
	return code;
}

int ctl_runtime_error(const char *fmt, ...)
{
	va_list ap;
	int code;

	va_start(ap, fmt);
	code = report(RM_EXIT_RUNTIME, fmt, ap);
	va_end(ap);
	return code;
}

enum {
	OPT_PIN_DIR = 256,
	OPT_NODES,
	OPT_FROM,
	OPT_TO,
	OPT_VNODES,
	OPT_SEED,
	OPT_VIP,
	OPT_PORT,
	OPT_PROTO,
	OPT_HASH,
	OPT_MAC,
	OPT_DEV,
	OPT_WEIGHT,
	OPT_SRC,
	OPT_SPORT,
	OPT_DST,
	OPT_DPORT,
	OPT_DRAIN,
	OPT_ACTIVE,
	OPT_DOWN,
	OPT_SET,
	OPT_DRY_RUN,
	OPT_JSON,
	OPT_UDP_TIMEOUT,
	OPT_INSERT_RATE,
};

static const struct option long_opts[] = {
	{"pin-dir", required_argument, NULL, OPT_PIN_DIR},
	{"nodes", required_argument, NULL, OPT_NODES},
	{"from", required_argument, NULL, OPT_FROM},
	{"to", required_argument, NULL, OPT_TO},
	{"vnodes", required_argument, NULL, OPT_VNODES},
	{"seed", required_argument, NULL, OPT_SEED},
	{"vip", required_argument, NULL, OPT_VIP},
	{"port", required_argument, NULL, OPT_PORT},
	{"proto", required_argument, NULL, OPT_PROTO},
	{"hash", required_argument, NULL, OPT_HASH},
	{"mac", required_argument, NULL, OPT_MAC},
	{"dev", required_argument, NULL, OPT_DEV},
	{"weight", required_argument, NULL, OPT_WEIGHT},
	{"src", required_argument, NULL, OPT_SRC},
	{"sport", required_argument, NULL, OPT_SPORT},
	{"dst", required_argument, NULL, OPT_DST},
	{"dport", required_argument, NULL, OPT_DPORT},
	{"drain", no_argument, NULL, OPT_DRAIN},
	{"active", no_argument, NULL, OPT_ACTIVE},
	{"down", no_argument, NULL, OPT_DOWN},
	{"set", required_argument, NULL, OPT_SET},
	{"dry-run", no_argument, NULL, OPT_DRY_RUN},
	{"json", no_argument, NULL, OPT_JSON},
	{"udp-timeout", required_argument, NULL, OPT_UDP_TIMEOUT},
	{"conn-insert-rate", required_argument, NULL, OPT_INSERT_RATE},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static int parse_port(const char *name, const char *arg, __u32 *out)
{
	if (rm_parse_u32(arg, 0, 65535, out))
		return ctl_usage_error("--%s '%s': expected a port 0-65535",
				       name, arg);
	return 0;
}

static int parse_opts(int argc, char **argv, struct ctl_opts *o)
{
	int c, err = 0;

	/* "+": stop at nothing; options may follow the command words */
	while ((c = getopt_long(argc, argv, "vh", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_PIN_DIR: o->pin_dir = optarg; break;
		case OPT_NODES: o->nodes = optarg; break;
		case OPT_FROM: o->from = optarg; break;
		case OPT_TO: o->to = optarg; break;
		case OPT_VNODES:
			if (rm_parse_u32(optarg, 1, RM_MAX_VNODES, &o->vnodes))
				return ctl_usage_error(
					"--vnodes '%s': expected 1-%u", optarg,
					RM_MAX_VNODES);
			o->vnodes_set = true;
			break;
		case OPT_SEED:
			if (rm_parse_seed(optarg, &o->seed))
				return ctl_usage_error(
					"--seed '%s': expected 32 hex digits",
					optarg);
			o->seed_set = true;
			break;
		case OPT_VIP: o->vip = optarg; break;
		case OPT_PORT:
			err = parse_port("port", optarg, &o->port);
			o->port_set = true;
			break;
		case OPT_PROTO: o->proto = optarg; break;
		case OPT_HASH: o->hash = optarg; break;
		case OPT_MAC: o->mac = optarg; break;
		case OPT_DEV: o->dev = optarg; break;
		case OPT_WEIGHT:
			if (rm_parse_u32(optarg, 1, RM_MAX_WEIGHT, &o->weight))
				return ctl_usage_error(
					"--weight '%s': expected 1-%u (use "
					"--drain to stop new flows)",
					optarg, RM_MAX_WEIGHT);
			o->weight_set = true;
			break;
		case OPT_SRC: o->src = optarg; break;
		case OPT_DST: o->dst = optarg; break;
		case OPT_SPORT:
			err = parse_port("sport", optarg, &o->sport);
			o->sport_set = true;
			break;
		case OPT_DPORT:
			err = parse_port("dport", optarg, &o->dport);
			o->dport_set = true;
			break;
		case OPT_DRAIN: o->drain = true; break;
		case OPT_ACTIVE: o->active = true; break;
		case OPT_DOWN: o->down = true; break;
		case OPT_SET: o->set = optarg; break;
		case OPT_DRY_RUN: o->dry_run = true; break;
		case OPT_JSON: o->json = true; break;
		case OPT_UDP_TIMEOUT:
			if (rm_parse_u32(optarg, 1, RM_UDP_TIMEOUT_MAX,
					 &conf.udp_timeout))
				return ctl_usage_error(
					"--udp-timeout '%s': expected 1-%u "
					"seconds",
					optarg, RM_UDP_TIMEOUT_MAX);
			conf.udp_timeout_set = true;
			break;
		case OPT_INSERT_RATE:
			if (rm_parse_u32(optarg, 0, UINT32_MAX,
					 &conf.insert_rate))
				return ctl_usage_error(
					"--conn-insert-rate '%s': expected 0 "
					"(no limit) to %u",
					optarg, UINT32_MAX);
			conf.insert_rate_set = true;
			break;
		case 'v': o->verbose = true; break;
		case 'h': usage(stdout); exit(RM_EXIT_OK);
		default: return RM_EXIT_USAGE; /* getopt said why */
		}
		if (err)
			return err;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ctl_opts o = {.pin_dir = RM_DEFAULT_PIN_DIR,
			     .vnodes = RM_DEFAULT_VNODES};
	const struct command *cmd = NULL;
	int err, used;

	err = parse_opts(argc, argv, &o);
	if (err)
		return err;
	/* getopt_long permuted the words to the end: argv[optind..] */
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	for (size_t i = 0; i < N_COMMANDS && !cmd; i++) {
		if (strcmp(commands[i].word1, argv[0]))
			continue;
		if (!commands[i].word2 ||
		    (argc > 1 && !strcmp(commands[i].word2, argv[1])))
			cmd = &commands[i];
	}
	if (!cmd)
		return ctl_usage_error("unknown command '%s%s%s' (ringctl --help "
				       "lists them)",
				       argv[0], argc > 1 ? " " : "",
				       argc > 1 ? argv[1] : "");
	used = cmd->word2 ? 2 : 1;
	o.argc = argc - used;
	o.argv = argv + used;
	return cmd->fn(&o);
}
