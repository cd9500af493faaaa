// SPDX-License-Identifier: GPL-2.0
/* restore: read a saved file (ringctl save), parse and check every line
 * with the same tables as the command line, then replace the whole
 * configuration with it in one commit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd_live.h"

#define MAX_WORDS 64

/* One line into an edit, parsed by the command-line tables: a saved file
 * holds the commands marked CLI_CMD_SAVED, without command-line-only
 * options (--dry-run, --pin-dir, ...). */
static int line_edit(char *line, struct edit *e)
{
	char *argv[MAX_WORDS + 1], *save = NULL, *w;
	const struct ctl_cmd *cmd;
	struct cli_result res;
	struct ctl_opts lo = {0};
	int argc = 1, ret;

	argv[0] = "restore";
	for (w = strtok_r(line, " \t\r\n", &save); w;
	     w = strtok_r(NULL, " \t\r\n", &save)) {
		if (argc == MAX_WORDS)
			return ctl_usage_error("too many words");
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	ret = cli_parse(&ctl_prog, argc, argv, CLI_PARSE_SAVED, &lo, &res);
	if (ret)
		return ctl_usage_error("%s", res.err);
	if (res.cmd < 0)
		return ctl_usage_error("expected a command");
	cmd = ctl_cmd_at(res.cmd);
	lo.argc = res.argc;
	lo.argv = res.argv;
	memset(e, 0, sizeof(*e));
	e->state = -1;
	return cmd->edit(&lo, e);
}

static int read_edits(FILE *f, struct edit **out,
		      int *n_out, int *bad_line)
{
	struct edit *edits = NULL, *grown;
	size_t cap = 0;
	char *line = NULL, *p;
	int n = 0, lineno = 0, ret = 0;

	while (!ret && getline(&line, &cap, f) > 0) {
		lineno++;
		for (p = line; *p == ' ' || *p == '\t'; p++)
			;
		if (*p == '#' || *p == '\n' || *p == '\r' || !*p)
			continue;
		grown = realloc(edits, (n + 1) * sizeof(*edits));
		if (!grown) {
			ret = ctl_runtime_error("out of memory");
			break;
		}
		edits = grown;
		*bad_line = lineno;
		ret = line_edit(p, &edits[n]);
		edits[n].line = lineno;
		if (!ret)
			n++;
	}
	free(line);
	*out = edits;
	*n_out = n;
	return ret;
}

/* Nodes that are the same as before (service, name, MAC, interface) and
 * in the same state keep their gen: restoring an unchanged configuration
 * changes nothing, and a node that was down stays cut off from the flows
 * it lost. */
static void keep_gens(struct rm_snap *new, const struct rm_snap *old)
{
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		struct rm_node *n = &new->node[i];
		const struct rm_node *b = &old->node[i];

		if (n->state != RM_NODE_FREE && n->state == b->state &&
		    n->svc_id == b->svc_id &&
		    !strncmp(n->name, b->name, RM_NAME_MAX) &&
		    rm_node_same_target(n, b))
			n->gen = b->gen;
	}
}

int doc_parse(const char *cmd, FILE *f, struct edit **edits, int *n)
{
	int line = 0, ret;

	ret = read_edits(f, edits, n, &line);
	if (!ret)
		return 0;
	free(*edits);
	*edits = NULL;
	return ret == RM_EXIT_USAGE
		   ? ctl_error_context(ret, "%s: line %d", cmd, line)
		   : ctl_error_context(ret, "%s", cmd);
}

int doc_read(struct ctl_opts *o, const char *cmd, struct edit **edits,
	     int *n)
{
	FILE *f;
	int ret;

	*edits = NULL;
	*n = 0;
	if (o->argc != 1)
		return ctl_usage_error("%s: expected FILE or - (stdin)", cmd);
	f = strcmp(o->argv[0], "-") ? fopen(o->argv[0], "r") : stdin;
	if (!f)
		return ctl_runtime_error("%s: cannot open %s: %s", cmd,
					 o->argv[0], strerror(errno));
	ret = doc_parse(cmd, f, edits, n);
	if (f != stdin)
		fclose(f);
	return ret;
}

int doc_replay(const char *cmd, struct live *lv, struct edit *edits, int n)
{
	int i, ret = 0;

	/* start from nothing but the seed and settings, then replay */
	for (i = 0; i < RM_MAX_SERVICES; i++)
		if (lv->new->svc[i].in_use)
			rm_snap_svc_del(lv->new, i);
	for (i = 0; i < n && !ret; i++)
		ret = edits[i].apply(&edits[i], lv);
	if (ret) {
		char why[512];

		ctl_error_context(ret, "%s: line %d", cmd, edits[i - 1].line);
		/* the message is rewritten from a copy: formatting the
		 * buffer into itself loses it */
		snprintf(why, sizeof(why), "%s", ctl_error_msg());
		return ctl_runtime_error("%s (nothing changed)", why);
	}
	keep_gens(lv->new, lv->old);
	return 0;
}

int doc_local_line(const struct edit *edits, int n)
{
	for (int i = 0; i < n; i++)
		if (edits[i].encap_src4_set || edits[i].encap_src6_set)
			return edits[i].line;
	return 0;
}

int cmd_restore(struct ctl_opts *o)
{
	struct edit *edits;
	struct live lv;
	int n, ret;

	ret = doc_read(o, "restore", &edits, &n);
	if (ret)
		return ret;
	ret = live_open(o, &lv, RM_LOCK_EX);
	if (ret) {
		free(edits);
		return ret;
	}
	ret = doc_replay("restore", &lv, edits, n);
	if (!ret) {
		ret = live_commit(o, &lv, RM_APPLY_ALL, "");
		if (!ret && !o->dry_run && !o->json)
			printf("restored %d commands\n", n);
	}
	live_close(&lv);
	free(edits);
	return ret;
}
