// SPDX-License-Identifier: GPL-2.0
/* ringload: attach, detach and inspect the Ringmaster data plane.
 * Exit 0 ok, 1 runtime failure, 2 usage. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "ringload.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringload [-v] COMMAND ...\n"
		"  ringload attach IFACE [--mode native|generic|auto (default)] "
		"[--pin-dir DIR]\n"
		"                 [--conn-table N]\n"
		"  ringload detach IFACE [--purge] [--pin-dir DIR]\n"
		"  ringload status [--json] [--pin-dir DIR]\n"
		"  ringload purge [--pin-dir DIR]\n"
		"Maps are pinned under DIR (default %s) and survive detach;\n"
		"interfaces attached with the same DIR share them.\n"
		"--conn-table N: connection-table entries (default %u), fixed "
		"when DIR is\n"
		"first attached; to resize: ringctl save, detach all, purge, "
		"attach, restore.\n",
		RM_DEFAULT_PIN_DIR, (unsigned int)RM_DEFAULT_CONN_ENTRIES);
}

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

static int print_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	/* warnings too: our own one-line message says what failed */
	(void)level;
	return verbose ? vfprintf(stderr, fmt, ap) : 0;
}

static int print_libxdp(enum libxdp_print_level level, const char *fmt,
			va_list ap)
{
	(void)level;
	return verbose ? vfprintf(stderr, fmt, ap) : 0;
}

enum { OPT_MODE = 256, OPT_PIN_DIR, OPT_JSON, OPT_PURGE, OPT_CONN_TABLE };

static const struct option long_opts[] = {
    {"mode", required_argument, NULL, OPT_MODE},
    {"pin-dir", required_argument, NULL, OPT_PIN_DIR},
    {"json", no_argument, NULL, OPT_JSON},
    {"purge", no_argument, NULL, OPT_PURGE},
    {"conn-table", required_argument, NULL, OPT_CONN_TABLE},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_opts(int argc, char **argv, struct load_opts *o)
{
	int c;

	while ((c = getopt_long(argc, argv, "vh", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_MODE:
			if (!strcmp(optarg, "native"))
				o->mode = LOAD_NATIVE;
			else if (!strcmp(optarg, "generic") ||
				 !strcmp(optarg, "skb"))
				o->mode = LOAD_GENERIC;
			else if (!strcmp(optarg, "auto"))
				o->mode = LOAD_AUTO;
			else
				return load_error(
				    RM_EXIT_USAGE,
				    "--mode '%s': expected native, "
				    "generic or auto",
				    optarg);
			break;
		case OPT_PIN_DIR:
			o->pin_dir = optarg;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_PURGE:
			o->purge = true;
			break;
		case OPT_CONN_TABLE:
			if (rm_parse_u32(optarg, 1, RM_CONN_ENTRIES_MAX,
					 &o->conn_entries))
				return load_error(RM_EXIT_USAGE,
						  "--conn-table '%s': expected "
						  "1-%u entries",
						  optarg, RM_CONN_ENTRIES_MAX);
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(RM_EXIT_OK);
		default:
			return RM_EXIT_USAGE; /* getopt said why */
		}
	}
	if (!*o->pin_dir || o->pin_dir[0] != '/' ||
	    strlen(o->pin_dir) >= RM_PATH_MAX - RM_NAME_MAX)
		return load_error(RM_EXIT_USAGE,
				  "--pin-dir '%s': expected an "
				  "absolute path under /sys/fs/bpf",
				  o->pin_dir);
	return 0;
}

int main(int argc, char **argv)
{
	struct load_opts o = {.pin_dir = RM_DEFAULT_PIN_DIR};
	const char *cmd;
	int err, words;

	err = parse_opts(argc, argv, &o);
	if (err)
		return err;
	verbose = o.verbose;
	libbpf_set_print(print_libbpf);
	libxdp_set_print(print_libxdp);
	words = argc - optind;
	if (words < 1) {
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	cmd = argv[optind];
	if (o.conn_entries && strcmp(cmd, "attach"))
		return load_error(RM_EXIT_USAGE,
				  "--conn-table only goes with attach");
	if (!strcmp(cmd, "attach") || !strcmp(cmd, "detach")) {
		if (words != 2)
			return load_error(RM_EXIT_USAGE,
					  "%s: expected one "
					  "IFACE",
					  cmd);
		o.iface = argv[optind + 1];
		return cmd[0] == 'a' ? cmd_attach(&o) : cmd_detach(&o);
	}
	if (words != 1)
		return load_error(RM_EXIT_USAGE, "%s: unexpected argument '%s'",
				  cmd, argv[optind + 1]);
	if (!strcmp(cmd, "status"))
		return cmd_status(&o);
	if (!strcmp(cmd, "purge"))
		return cmd_purge(&o);
	return load_error(RM_EXIT_USAGE,
			  "unknown command '%s' (ringload "
			  "--help lists them)",
			  cmd);
}
