// SPDX-License-Identifier: GPL-2.0
/* save / restore / seed. save prints the configuration as ringctl
 * commands; restore reads such a file, parses and checks every line, then
 * replaces the whole configuration with it in one commit. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd_live.h"
#include "json.h"

static int seed_apply(struct edit *e, struct live *lv)
{
	lv->new->cfg.seed = e->seed;
	lv->new->cfg.flags |= RM_CFG_SEEDED;
	snprintf(e->done, sizeof(e->done), "seed set, every ring rebuilt");
	return 0;
}

int seed_parse(struct ctl_opts *o, struct edit *e)
{
	if (o->argc)
		return live_usage("seed: unexpected argument '%s'", o->argv[0]);
	if (rm_parse_seed(o->set, &e->seed))
		return live_usage("seed --set '%s': expected 32 hex digits",
				  o->set ? o->set : "");
	e->apply = seed_apply;
	return 0;
}

int cmd_seed(struct ctl_opts *o)
{
	struct rm_json j;
	struct live lv;
	char hex[33];
	int ret;

	if (o->set)
		return live_change(o, seed_parse);
	if (o->argc)
		return ctl_usage_error("seed: unexpected argument '%s'",
				       o->argv[0]);
	ret = live_open(o, &lv, RM_LOCK_SH);
	if (ret)
		return ret;
	rm_format_seed(&lv.old->cfg.seed, hex);
	if (o->json) {
		rm_json_init(&j, stdout);
		rm_json_obj_open(&j, NULL);
		rm_json_str(&j, "seed", hex);
		rm_json_bool(&j, "seeded", lv.old->cfg.flags & RM_CFG_SEEDED);
		rm_json_obj_close(&j);
		rm_json_end(&j);
	} else {
		printf("%s\n", hex);
	}
	live_close(&lv);
	return RM_EXIT_OK;
}

/* ---- config ----------------------------------------------------------- */

static int conf_apply(struct edit *e, struct live *lv)
{
	struct rm_config *c = &lv->new->cfg;

	if (e->udp_timeout_set)
		c->udp_timeout_s = e->udp_timeout;
	if (e->insert_rate_set)
		c->conn_insert_rate = e->insert_rate;
	snprintf(e->done, sizeof(e->done),
		 "UDP idle timeout %u s, connection-table inserts %u/s per "
		 "CPU%s",
		 rm_udp_timeout(c), c->conn_insert_rate,
		 c->conn_insert_rate ? "" : " (no limit)");
	return 0;
}

int conf_parse(struct ctl_opts *o, const struct conf_opts *c, struct edit *e)
{
	if (o->argc)
		return live_usage("config: unexpected argument '%s'",
				  o->argv[0]);
	if (!c->udp_timeout_set && !c->insert_rate_set)
		return live_usage("config: nothing to set: give --udp-timeout "
				  "S and/or --conn-insert-rate R");
	e->udp_timeout = c->udp_timeout;
	e->udp_timeout_set = c->udp_timeout_set;
	e->insert_rate = c->insert_rate;
	e->insert_rate_set = c->insert_rate_set;
	e->apply = conf_apply;
	return 0;
}

/* Without options: the settings, and the table they apply to. */
static int conf_show(struct ctl_opts *o)
{
	struct rm_conn_count *cnt = malloc(sizeof(*cnt));
	const struct rm_config *c;
	struct rm_json j;
	struct live lv;
	int ret;

	if (!cnt)
		return ctl_runtime_error("out of memory");
	ret = live_open(o, &lv, RM_LOCK_SH);
	if (ret) {
		free(cnt);
		return ret;
	}
	if (rm_state_conn_count(&lv.st, lv.old, cnt)) {
		ret = ctl_runtime_error("%s", rm_errmsg());
		goto out;
	}
	c = &lv.old->cfg;
	if (!o->json) {
		printf("udp-timeout       %u s (idle UDP flows forget their "
		       "node)\n"
		       "conn-insert-rate  %u%s\n"
		       "conn-table        %u entries, %llu in use, %llu "
		       "stale (size set at attach: ringload attach "
		       "--conn-table N)\n",
		       rm_udp_timeout(c), c->conn_insert_rate,
		       c->conn_insert_rate ? " entries/s per CPU"
					   : " (no limit)",
		       cnt->max_entries, (unsigned long long)cnt->entries,
		       (unsigned long long)cnt->stale);
		goto out;
	}
	rm_json_init(&j, stdout);
	rm_json_obj_open(&j, NULL);
	rm_json_u64(&j, "udp_timeout_s", rm_udp_timeout(c));
	rm_json_u64(&j, "conn_insert_rate", c->conn_insert_rate);
	rm_json_obj_open(&j, "conn_table");
	rm_json_u64(&j, "max_entries", cnt->max_entries);
	rm_json_u64(&j, "entries", cnt->entries);
	rm_json_u64(&j, "stale", cnt->stale);
	rm_json_obj_close(&j);
	rm_json_obj_close(&j);
	rm_json_end(&j);
out:
	live_close(&lv);
	free(cnt);
	return ret;
}

int cmd_config(struct ctl_opts *o, const struct conf_opts *c)
{
	struct edit e;
	int ret;

	if (!c->udp_timeout_set && !c->insert_rate_set) {
		if (o->argc)
			return ctl_usage_error("config: unexpected argument "
					       "'%s'",
					       o->argv[0]);
		return conf_show(o);
	}
	memset(&e, 0, sizeof(e));
	e.state = -1;
	ret = conf_parse(o, c, &e);
	if (ret)
		return live_report(ret);
	return live_change_edit(o, &e);
}

/* Services by id, then nodes by slot: restoring into an empty state
 * hands out the same ids and slots when the original had no holes. */
int cmd_save(struct ctl_opts *o)
{
	struct live lv;
	char hex[33], addr[64], mac[18];
	int ret;

	if (o->argc)
		return ctl_usage_error("save: unexpected argument '%s'",
				       o->argv[0]);
	ret = live_open(o, &lv, RM_LOCK_SH);
	if (ret)
		return ret;
	rm_format_seed(&lv.old->cfg.seed, hex);
	printf("# ringmaster configuration: ringctl restore FILE applies it\n");
	printf("seed --set %s\n", hex);
	printf("config --udp-timeout %u --conn-insert-rate %u\n",
	       rm_udp_timeout(&lv.old->cfg), lv.old->cfg.conn_insert_rate);
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		const struct rm_svc_meta *m = &lv.old->svc[i];

		if (!m->in_use)
			continue;
		rm_format_addr(m->key.vip,
			       m->key.flags & RM_SVCK_V6 ? RM_FAMILY_V6
							 : RM_FAMILY_V4,
			       addr, sizeof(addr));
		printf("service add %s --vip %s --port %u --proto %s --hash %s "
		       "--vnodes %u\n",
		       m->name, addr, ntohs(m->key.port),
		       rm_proto_name(m->key.proto),
		       m->flags & RM_SVC_F_3TUPLE ? "3tuple" : "5tuple",
		       m->vnodes);
	}
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &lv.old->node[i];

		if (n->state == RM_NODE_FREE)
			continue;
		rm_format_mac(n->mac, mac);
		printf("node add %s %s --mac %s --dev %s --weight %u\n",
		       lv.old->svc[n->svc_id].name, n->name, mac, n->dev,
		       n->weight);
	}
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &lv.old->node[i];

		if (n->state == RM_NODE_DRAINING || n->state == RM_NODE_DOWN)
			printf("node set %s %s --%s\n",
			       lv.old->svc[n->svc_id].name, n->name,
			       n->state == RM_NODE_DOWN ? "down" : "drain");
	}
	live_close(&lv);
	return RM_EXIT_OK;
}

/* ---- restore ---------------------------------------------------------- */

#define MAX_WORDS 32

static const struct option line_opts[] = {
    {"vip", required_argument, NULL, 'V'},
    {"port", required_argument, NULL, 'P'},
    {"proto", required_argument, NULL, 'p'},
    {"hash", required_argument, NULL, 'H'},
    {"vnodes", required_argument, NULL, 'n'},
    {"mac", required_argument, NULL, 'm'},
    {"dev", required_argument, NULL, 'd'},
    {"weight", required_argument, NULL, 'w'},
    {"drain", no_argument, NULL, 'D'},
    {"active", no_argument, NULL, 'A'},
    {"down", no_argument, NULL, 'X'},
    {"set", required_argument, NULL, 's'},
    {"udp-timeout", required_argument, NULL, 'U'},
    {"conn-insert-rate", required_argument, NULL, 'R'},
    {NULL, 0, NULL, 0},
};

/* Options of one line into lo and lc (the subset save writes). */
static int line_options(int argc, char **argv, struct ctl_opts *lo,
			struct conf_opts *lc)
{
	int c;

	opterr = 0;
	optind = 0; /* GNU: rescan from scratch */
	while ((c = getopt_long(argc, argv, "", line_opts, NULL)) != -1) {
		switch (c) {
		case 'V':
			lo->vip = optarg;
			break;
		case 'p':
			lo->proto = optarg;
			break;
		case 'H':
			lo->hash = optarg;
			break;
		case 'm':
			lo->mac = optarg;
			break;
		case 'd':
			lo->dev = optarg;
			break;
		case 's':
			lo->set = optarg;
			break;
		case 'D':
			lo->drain = true;
			break;
		case 'A':
			lo->active = true;
			break;
		case 'X':
			lo->down = true;
			break;
		case 'P':
			if (rm_parse_u32(optarg, 0, 65535, &lo->port))
				return live_usage("--port '%s': expected "
						  "0-65535",
						  optarg);
			lo->port_set = true;
			break;
		case 'n':
			if (rm_parse_u32(optarg, 1, RM_MAX_VNODES, &lo->vnodes))
				return live_usage("--vnodes '%s': expected "
						  "1-%u",
						  optarg, RM_MAX_VNODES);
			break;
		case 'w':
			if (rm_parse_u32(optarg, 1, RM_MAX_WEIGHT, &lo->weight))
				return live_usage("--weight '%s': expected "
						  "1-%u",
						  optarg, RM_MAX_WEIGHT);
			lo->weight_set = true;
			break;
		case 'U':
			if (rm_parse_u32(optarg, 1, RM_UDP_TIMEOUT_MAX,
					 &lc->udp_timeout))
				return live_usage("--udp-timeout '%s': "
						  "expected 1-%u seconds",
						  optarg, RM_UDP_TIMEOUT_MAX);
			lc->udp_timeout_set = true;
			break;
		case 'R':
			if (rm_parse_u32(optarg, 0, UINT32_MAX,
					 &lc->insert_rate))
				return live_usage("--conn-insert-rate '%s': "
						  "expected 0 (no limit) to "
						  "%u",
						  optarg, UINT32_MAX);
			lc->insert_rate_set = true;
			break;
		default:
			return live_usage("unknown or incomplete option '%s'",
					  argv[optind - 1]);
		}
	}
	lo->argc = argc - optind;
	lo->argv = argv + optind;
	return 0;
}

/* One line into an edit: "seed", "service add", "node add", "node set". */
static int line_edit(char *line, struct ctl_opts *o, struct edit *e)
{
	char *argv[MAX_WORDS + 1], *save = NULL, *w;
	struct ctl_opts lo = {.pin_dir = o->pin_dir,
			      .vnodes = RM_DEFAULT_VNODES};
	struct conf_opts lc = {0};
	edit_parse_fn parse = NULL;
	bool conf = false;
	int argc = 1, skip, ret;

	argv[0] = "restore";
	for (w = strtok_r(line, " \t\r\n", &save); w;
	     w = strtok_r(NULL, " \t\r\n", &save)) {
		if (argc == MAX_WORDS)
			return live_usage("too many words");
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	/* read_edits() passes no blank line, but this parser stands alone
	 * (the restore fuzzer, the analyzer) */
	if (argc < 2)
		return live_usage("empty line");
	skip = 2;
	if (!strcmp(argv[1], "seed")) {
		parse = seed_parse;
		skip = 1;
	} else if (!strcmp(argv[1], "config")) {
		conf = true;
		skip = 1;
	} else if (argc > 2 && !strcmp(argv[1], "service") &&
		   !strcmp(argv[2], "add")) {
		parse = svc_add_parse;
	} else if (argc > 2 && !strcmp(argv[1], "node")) {
		if (!strcmp(argv[2], "add"))
			parse = node_add_parse;
		else if (!strcmp(argv[2], "set"))
			parse = node_set_parse;
	}
	if (!parse && !conf)
		return live_usage(
		    "expected seed, config, service add, node add "
		    "or node set, not '%s'",
		    argv[1]);
	/* the command words go before the options getopt sees */
	argv[skip] = argv[0];
	ret = line_options(argc - skip, argv + skip, &lo, &lc);
	if (ret)
		return ret;
	memset(e, 0, sizeof(*e));
	e->state = -1;
	return conf ? conf_parse(&lo, &lc, e) : parse(&lo, e);
}

static int read_edits(struct ctl_opts *o, FILE *f, struct edit **out,
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
			ret = live_runtime("out of memory");
			break;
		}
		edits = grown;
		*bad_line = lineno;
		ret = line_edit(p, o, &edits[n]);
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
		    !memcmp(n->mac, b->mac, 6) && n->ifindex == b->ifindex)
			n->gen = b->gen;
	}
}

int cmd_restore(struct ctl_opts *o)
{
	struct edit *edits = NULL;
	struct live lv;
	FILE *f;
	int n = 0, line = 0, ret, i;

	if (o->argc != 1)
		return ctl_usage_error("restore: expected FILE or - (stdin)");
	f = strcmp(o->argv[0], "-") ? fopen(o->argv[0], "r") : stdin;
	if (!f)
		return ctl_runtime_error("restore: cannot open %s: %s",
					 o->argv[0], strerror(errno));
	ret = read_edits(o, f, &edits, &n, &line);
	if (f != stdin)
		fclose(f);
	if (ret) {
		free(edits);
		return ret == RM_EXIT_USAGE
			   ? ctl_usage_error("restore: line %d: %s", line,
					     live_msg())
			   : ctl_runtime_error("restore: %s", live_msg());
	}
	ret = live_open(o, &lv, RM_LOCK_EX);
	if (ret) {
		free(edits);
		return ret;
	}
	/* start from nothing but the seed and settings, then replay */
	for (i = 0; i < RM_MAX_SERVICES; i++)
		if (lv.new->svc[i].in_use)
			rm_snap_svc_del(lv.new, i);
	for (i = 0; i < n && !ret; i++)
		ret = edits[i].apply(&edits[i], &lv);
	if (ret) {
		ret =
		    ctl_runtime_error("restore: line %d: %s (nothing changed)",
				      edits[i - 1].line, live_msg());
	} else {
		keep_gens(lv.new, lv.old);
		ret = live_commit(o, &lv, RM_APPLY_ALL, "");
		if (!ret && !o->dry_run && !o->json)
			printf("restored %d commands\n", n);
	}
	live_close(&lv);
	free(edits);
	return ret;
}
