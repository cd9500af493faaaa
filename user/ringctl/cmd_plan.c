// SPDX-License-Identifier: GPL-2.0
/* Offline planning: the ring a node set makes and what a change moves.
 * No root, no BPF: the same ring code the live commands push. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "ringctl.h"
#include "plan.h"

static int build_from_list(struct ctl_opts *o, const char *opt,
			   const char *list, struct rm_ring *r)
{
	struct rm_seed seed = {0};
	struct rm_node_spec *specs;
	__u32 n;
	int err;

	err = rm_parse_nodes(list, &specs, &n);
	if (err == -ERANGE)
		return ctl_usage_error("--%s '%s': weight out of range 1-%u",
				       opt, list, RM_MAX_WEIGHT);
	if (err)
		return ctl_usage_error(
			"--%s '%s': expected name[:weight],... with names of "
			"1-%d characters [A-Za-z0-9._-]",
			opt, list, RM_NAME_MAX - 1);
	if (o->seed.set)
		rm_parse_seed(o->seed.text, &seed); /* checked by the table */
	err = rm_ring_build(&seed, specs, n, o->vnodes.val, r);
	if (err == -E2BIG) {
		char why[256];

		rm_ring_too_big(specs, n, o->vnodes.val, why, sizeof(why));
		free(specs);
		return ctl_usage_error("--%s: %s", opt, why);
	}
	free(specs);
	if (err)
		return ctl_usage_error("--%s '%s': %s", opt, list,
				       rm_ring_strerror(err));
	return 0;
}

const char *rm_ring_strerror(int err)
{
	switch (err) {
	case -EEXIST: return "duplicate node name";
	case -ERANGE: return "weight out of range";
	case -E2BIG:
		return "ring too large (nodes x weight x vnodes over the "
		       "limit): lower --vnodes";
	case -EINVAL: return "bad node name or vnode count";
	case -ENOMEM: return "out of memory";
	default: return strerror(-err);
	}
}

void plan_print_ring(const struct rm_ring *r, const char *indent)
{
	__u64 *arcs = calloc(r->n_nodes ? r->n_nodes : 1, sizeof(*arcs));
	double max = 0;
	char bar[64];

	if (!arcs)
		return;
	rm_ring_arcs(r, arcs);
	for (__u32 i = 0; i < r->n_nodes; i++)
		if (arcs[i] / RM_KEYSPACE > max)
			max = arcs[i] / RM_KEYSPACE;
	printf("%s%-20s %6s %7s %8s  %s\n", indent, "NODE", "WEIGHT", "VNODES",
	       "SHARE", "");
	for (__u32 i = 0; i < r->n_nodes; i++) {
		double share = arcs[i] / RM_KEYSPACE;

		rm_bar(bar, sizeof(bar), share, max, 40);
		printf("%s%-20s %6u %7u %7.3f%%  %s\n", indent, r->nodes[i].name,
		       r->nodes[i].weight, r->nodes[i].weight * r->vnodes,
		       share * 100, bar);
	}
	free(arcs);
}

double plan_peak_to_mean(const struct rm_ring *r)
{
	__u64 *arcs, wsum = 0;
	double peak = 0;

	if (!r->n_nodes)
		return 0;
	arcs = calloc(r->n_nodes, sizeof(*arcs));
	if (!arcs)
		return 0;
	rm_ring_arcs(r, arcs);
	for (__u32 i = 0; i < r->n_nodes; i++)
		wsum += r->nodes[i].weight;
	/* a weighted node's fair share is weight / total weight */
	for (__u32 i = 0; i < r->n_nodes; i++) {
		double fair = (double)r->nodes[i].weight / wsum;
		double ratio = arcs[i] / RM_KEYSPACE / fair;

		if (ratio > peak)
			peak = ratio;
	}
	free(arcs);
	return peak;
}

int cmd_ring(struct ctl_opts *o)
{
	struct rm_ring r = {0};
	__u64 *arcs;
	int err;

	if (o->argc)
		return ctl_usage_error("ring: unexpected argument '%s'",
				       o->argv[0]);
	err = build_from_list(o, "nodes", o->nodes, &r);
	if (err)
		return err;
	if (!o->json) {
		printf("ring: %u entries, %u nodes, %u vnodes per weight, "
		       "peak-to-mean %.4f\n",
		       r.n, r.n_nodes, r.vnodes, plan_peak_to_mean(&r));
		plan_print_ring(&r, "");
		rm_ring_free(&r);
		return RM_EXIT_OK;
	}
	arcs = calloc(r.n_nodes, sizeof(*arcs));
	if (!arcs) {
		rm_ring_free(&r);
		return ctl_runtime_error("out of memory");
	}
	rm_ring_arcs(&r, arcs);
	struct rm_json j;

	rm_json_init(&j, stdout);
	rm_json_obj_open(&j, NULL);
	rm_json_u64(&j, "entries", r.n);
	rm_json_u64(&j, "vnodes", r.vnodes);
	rm_json_num(&j, "peak_to_mean", plan_peak_to_mean(&r));
	rm_json_arr_open(&j, "nodes");
	for (__u32 i = 0; i < r.n_nodes; i++) {
		rm_json_obj_open(&j, NULL);
		rm_json_str(&j, "name", r.nodes[i].name);
		rm_json_u64(&j, "weight", r.nodes[i].weight);
		rm_json_u64(&j, "vnodes", r.nodes[i].weight * r.vnodes);
		rm_json_num(&j, "share", arcs[i] / RM_KEYSPACE);
		rm_json_u64(&j, "keys", arcs[i]);
		rm_json_obj_close(&j);
	}
	rm_json_arr_close(&j);
	rm_json_obj_close(&j);
	rm_json_end(&j);
	free(arcs);
	rm_ring_free(&r);
	return RM_EXIT_OK;
}

/* What a perfect scheme must move from a to b: the keys of nodes that
 * leave, or the share (by weight in b) that nodes joining or gaining
 * weight must receive, whichever is larger: both must move, and a perfect
 * scheme moves the leaving keys straight to the gaining nodes. */
double plan_ideal_share(const struct rm_ring *a, const struct rm_ring *b)
{
	__u64 *arcs = calloc(a->n_nodes ? a->n_nodes : 1, sizeof(*arcs));
	double removed = 0, gained = 0;
	__u64 wb = 0;

	if (!arcs)
		return 0;
	if (!a->n_nodes || !b->n_nodes) {
		free(arcs);
		return a->n_nodes || b->n_nodes ? 1 : 0;
	}
	rm_ring_arcs(a, arcs);
	for (__u32 i = 0; i < a->n_nodes; i++) {
		if (rm_ring_find(b, a->nodes[i].name) < 0)
			removed += arcs[i] / RM_KEYSPACE;
	}
	for (__u32 i = 0; i < b->n_nodes; i++)
		wb += b->nodes[i].weight;
	for (__u32 i = 0; i < b->n_nodes; i++) {
		int k = rm_ring_find(a, b->nodes[i].name);
		double fair = (double)b->nodes[i].weight / wb;

		/* a joining node must receive its fair share; a node gaining
		 * weight the part of it that it does not own yet */
		if (k < 0)
			gained += fair;
		else if (b->nodes[i].weight > a->nodes[k].weight &&
			 fair > arcs[k] / RM_KEYSPACE)
			gained += fair - arcs[k] / RM_KEYSPACE;
	}
	free(arcs);
	return removed > gained ? removed : gained;
}

int plan_print_diff(const struct rm_ring *a, const struct rm_ring *b,
		    bool json)
{
	struct rm_move *moves;
	size_t n;
	__u64 moved;
	int err;

	err = rm_ring_diff(a, b, &moves, &n, &moved);
	if (err)
		return ctl_runtime_error("diff: %s", strerror(-err));
	if (json) {
		struct rm_json j;

		rm_json_init(&j, stdout);
		rm_json_obj_open(&j, NULL);
		rm_json_num(&j, "moved_share", moved / RM_KEYSPACE);
		rm_json_num(&j, "ideal_share", plan_ideal_share(a, b));
		rm_json_u64(&j, "moved_keys", moved);
		rm_json_arr_open(&j, "moves");
		for (size_t i = 0; i < n; i++) {
			rm_json_obj_open(&j, NULL);
			rm_json_str(&j, "from", moves[i].from);
			rm_json_str(&j, "to", moves[i].to);
			rm_json_num(&j, "share", moves[i].keys / RM_KEYSPACE);
			rm_json_obj_close(&j);
		}
		rm_json_arr_close(&j);
		rm_json_obj_close(&j);
		rm_json_end(&j);
	} else {
		printf("moved: %.4f%% of the keyspace (ideal %.4f%%)\n",
		       moved / RM_KEYSPACE * 100, plan_ideal_share(a, b) * 100);
		for (size_t i = 0; i < n; i++)
			printf("  %-20s -> %-20s %8.4f%%\n", moves[i].from,
			       moves[i].to, moves[i].keys / RM_KEYSPACE * 100);
	}
	free(moves);
	return RM_EXIT_OK;
}

int cmd_diff(struct ctl_opts *o)
{
	struct rm_ring a = {0}, b = {0};
	int err;

	if (o->argc)
		return ctl_usage_error("diff: unexpected argument '%s'",
				       o->argv[0]);
	err = build_from_list(o, "from", o->from, &a);
	if (err)
		return err;
	err = build_from_list(o, "to", o->to, &b);
	if (err) {
		rm_ring_free(&a);
		return err;
	}
	err = plan_print_diff(&a, &b, o->json);
	rm_ring_free(&a);
	rm_ring_free(&b);
	return err;
}
