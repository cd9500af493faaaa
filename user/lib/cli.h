/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Command lines from tables, in the manner of xdp-tools' params: a program
 * is a list of commands, each command a list of typed options. Parsing,
 * `PROG CMD --help`, the usage listing, the option dump the man-page test
 * reads and the shell completion all come from the same tables, so they
 * cannot disagree.
 *
 * An option's value goes into the program's options struct at .off, in the
 * type's own field (a flag is a bool, a uint a struct cli_u32, ...): the
 * struct says whether the option was given. The same long name means the
 * same option everywhere (same arity and short name; `PROG __options`
 * checks it), so options may come before the command words.
 */
#ifndef RM_CLI_H
#define RM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

enum cli_type {
	CLI_FLAG,   /* bool */
	CLI_UINT,   /* struct cli_u32, within [min, max] */
	CLI_STRING, /* const char *, non-empty, at most max chars if max */
	CLI_ADDR,   /* struct cli_addr: IPv4 or IPv6 */
	CLI_MAC,    /* struct cli_mac: xx:xx:xx:xx:xx:xx */
	CLI_HEX,    /* struct cli_hex: exactly max bytes as hex (0x allowed) */
	CLI_ENUM,   /* struct cli_enum: one of .words */
};

struct cli_u32 {
	__u32 val;
	bool set;
};

struct cli_addr {
	__be32 addr[4];
	__u8 family; /* RM_FAMILY_V4 / V6 */
	bool set;
	const char *text;
};

struct cli_mac {
	__u8 mac[6];
	bool set;
	const char *text;
};

#define CLI_HEX_MAX 32
struct cli_hex {
	__u8 bytes[CLI_HEX_MAX];
	bool set;
	const char *text;
};

struct cli_word {
	const char *word;
	int val;
};

struct cli_enum {
	int val; /* the matching word's .val */
	bool set;
	const char *text;
};

/* cli_opt.flags */
#define CLI_REQUIRED 0x1 /* the command fails without it */
#define CLI_NOT_SAVED 0x2 /* never in a saved file (restore refuses it) */
#define CLI_COMMON 0x4	  /* left out of the one-line synopsis */
/* Before the command words, every command accepts it and those without it
 * ignore it (a wrapper may always pass --pin-dir); after them it is
 * checked against the command's table like any option. */
#define CLI_GLOBAL 0x8

struct cli_opt {
	const char *name; /* long name without "--"; NULL ends a table */
	char short_name;  /* 0: none */
	enum cli_type type;
	size_t off;			/* where the value goes */
	__u32 min, max;			/* UINT range; STRING/HEX length */
	const struct cli_word *words;	/* ENUM: ends with {NULL}; STRING:
					 * words completion offers (any
					 * value is taken), or NULL */
	const char *def;		/* default, as text; NULL: none */
	const char *arg;		/* placeholder in help, e.g. "ADDR" */
	const char *help;		/* one line */
	unsigned int flags;		/* CLI_* above */
};

/* The --help entry of every program's table: the parser knows it by this
 * name (res->help), whatever the table. offset: where the flag goes; what:
 * "program" or "command"; more designated initialisers may follow. */
#define CLI_HELP_NAME "help"
#define CLI_OPT_HELP(offset, what, ...)                                       \
	{.name = CLI_HELP_NAME,                                               \
	 .short_name = 'h',                                                   \
	 .type = CLI_FLAG,                                                    \
	 .off = (offset),                                                     \
	 .help = "what the " what " does and its options",                    \
	 __VA_ARGS__}

/* --version, in every program's global table: the parser knows it by
 * this name (res->version) and the program prints cli_version(). */
#define CLI_VERSION_NAME "version"
#define CLI_OPT_VERSION(offset, ...)                                          \
	{.name = CLI_VERSION_NAME,                                            \
	 .type = CLI_FLAG,                                                    \
	 .off = (offset),                                                     \
	 .help = "print the version (the package's) and exit",               \
	 __VA_ARGS__}

/* cli_cmd.flags */
#define CLI_CMD_SAVED 0x1  /* a saved file may hold it (restore) */
#define CLI_CMD_HIDDEN 0x2 /* not listed (internal modes) */

/* A program's command struct embeds this as its first member. */
struct cli_cmd {
	const char *words;   /* "ring" or "node add" */
	const char *args;    /* positional synopsis, e.g. "SERVICE NODE" */
	const char *summary; /* one line: what it does */
	const struct cli_opt *opts;
	unsigned int flags;
};

/*
 * A daemon is a program of one command whose words are "": every
 * positional word is its argument, `PROG --help` is cli_help() of that
 * command, and messages name no command (res->cmd is always 0).
 */
struct cli_prog {
	const char *name;	    /* "ringctl" */
	const struct cli_opt *global; /* every command takes these */
	const void *cmds;	    /* first struct cli_cmd */
	size_t n_cmds, stride;	    /* count and size of the program's struct */
	const char *footer;	    /* after the usage listing, or NULL */
};
#define CLI_CMDS(arr) (arr), sizeof(arr) / sizeof((arr)[0]), sizeof((arr)[0])

const struct cli_cmd *cli_cmd_at(const struct cli_prog *p, size_t i);

/* cli_parse() modes */
#define CLI_PARSE_SAVED 0x1 /* a line of a saved file: CLI_CMD_SAVED only */

struct cli_result {
	int cmd;    /* index into the program's commands, -1 if none */
	bool help;  /* --help given: print cli_help() and stop */
	bool version; /* --version given: print cli_version() and stop */
	int argc;   /* words after the command words */
	char **argv;
	char err[320]; /* why it failed, one line, no program name */
};

/*
 * Parse argv[1..argc-1] into base (defaults first). Positional words are
 * moved to the front of argv[1..], in order; res->argv points past the
 * command words. Returns 0, or RM_EXIT_USAGE with res->err set. With no
 * command word, res->cmd is -1 and the return 0 unless something else is
 * wrong: the caller prints the listing.
 */
int cli_parse(const struct cli_prog *p, int argc, char **argv,
	      unsigned int mode, void *base, struct cli_result *res);

/*
 * A daemon's command line (a program of one command without words): the
 * internal modes, parsing into base, --help on stdout, a usage error or an
 * argument as one line on stderr. Returns the exit code if the program is
 * to exit now, -1 if it is to run with the options in base.
 */
int cli_daemon(const struct cli_prog *p, int argc, char **argv, void *base);

/* `PROG --version`: "PROG VERSION" (rm_version(), util.h) */
void cli_version(FILE *f, const struct cli_prog *p);
/* `PROG --help` (cmd NULL, or word1 to list one group) */
void cli_usage(FILE *f, const struct cli_prog *p, const char *word1);
/* `PROG CMD --help` */
void cli_help(FILE *f, const struct cli_prog *p, const struct cli_cmd *c);

/*
 * Internal modes for the man-page test and the shell completion:
 *   PROG __options            tab-separated lines, a command then its options:
 *     C  words  ARGS|-  S(aved)|-  summary
 *     O  words|*  --long  -s|--  type  ARG|-  [R][N][C]  enum,words|-
 *        required/range/default|-  help
 *   PROG __complete commands  the command words
 *   PROG __complete options WORDS...  the options of that command
 *   PROG __complete values WORDS... --opt  an option's words (ENUM, or
 *                                          a STRING's suggestions)
 * Returns the exit code; __options fails on an inconsistent table.
 */
int cli_internal(const struct cli_prog *p, int argc, char **argv);
bool cli_is_internal(int argc, char **argv);

/* libbpf's own messages on stderr only when verbose (-v): the tools' one
 * line says what failed and the fix. */
void cli_libbpf_messages(bool verbose);

#endif
