// SPDX-License-Identifier: GPL-2.0
/* apply: make the live state equal to a configuration document (save's
 * format). The document is parsed whole first (any error: nothing
 * changes), replayed on a copy of the live snapshot under the exclusive
 * lock, compared with it service by service (user/lib/apply.c), the moves
 * printed, and committed once: each changed ring swapped once, nothing
 * written when nothing differs. ringsync runs it with --revision. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apply.h"
#include "cmd_live.h"
#include "json.h"

static const char *change_name(enum rm_svc_change c)
{
	switch (c) {
	case RM_SVC_ADDED: return "added";
	case RM_SVC_REMOVED: return "removed";
	case RM_SVC_CHANGED: return "changed";
	default: return "unchanged";
	}
}

static void print_text(const struct rm_apply *a)
{
	if (a->seed_changed)
		printf("seed: changed (every ring rebuilt)\n");
	if (a->cfg_changed)
		printf("config: changed\n");
	if (a->local_changed)
		printf("local: this director's outer source changed\n");
	for (__u32 i = 0; i < a->n_svc; i++) {
		const struct rm_apply_svc *s = &a->svc[i];

		printf("service %s: %s", s->name, change_name(s->change));
		if (s->nodes_added || s->nodes_removed || s->nodes_changed)
			printf(" (nodes: %u added, %u removed, %u changed)",
			       s->nodes_added, s->nodes_removed,
			       s->nodes_changed);
		printf("%s\n", s->ring ? ", ring rebuilt" : "");
		if (!s->ring && s->change != RM_SVC_REMOVED)
			continue;
		printf("  moved: %.4f%% of the keyspace\n",
		       s->moved / RM_KEYSPACE * 100);
		for (size_t k = 0; k < s->n_moves; k++)
			printf("    %-20s -> %-20s %8.4f%%\n", s->moves[k].from,
			       s->moves[k].to,
			       s->moves[k].keys / RM_KEYSPACE * 100);
	}
}

static void print_json(const struct ctl_opts *o, const struct rm_apply *a,
		       const struct rm_applied *rec)
{
	struct rm_json j;

	rm_json_init(&j, stdout);
	rm_json_obj_open(&j, NULL);
	rm_json_bool(&j, "dry_run", o->dry_run);
	rm_json_bool(&j, "changed", a->changed);
	rm_json_bool(&j, "seed_changed", a->seed_changed);
	rm_json_bool(&j, "config_changed", a->cfg_changed);
	rm_json_bool(&j, "local_changed", a->local_changed);
	if (rec)
		rm_json_u64(&j, "revision", rec->revision);
	rm_json_arr_open(&j, "services");
	for (__u32 i = 0; i < a->n_svc; i++) {
		const struct rm_apply_svc *s = &a->svc[i];

		rm_json_obj_open(&j, NULL);
		rm_json_str(&j, "service", s->name);
		rm_json_str(&j, "change", change_name(s->change));
		rm_json_bool(&j, "ring_rebuilt", s->ring);
		rm_json_u64(&j, "nodes_added", s->nodes_added);
		rm_json_u64(&j, "nodes_removed", s->nodes_removed);
		rm_json_u64(&j, "nodes_changed", s->nodes_changed);
		rm_json_num(&j, "moved_share", s->moved / RM_KEYSPACE);
		rm_json_arr_open(&j, "moves");
		for (size_t k = 0; k < s->n_moves; k++) {
			rm_json_obj_open(&j, NULL);
			rm_json_str(&j, "from", s->moves[k].from);
			rm_json_str(&j, "to", s->moves[k].to);
			rm_json_num(&j, "share", s->moves[k].keys / RM_KEYSPACE);
			rm_json_obj_close(&j);
		}
		rm_json_arr_close(&j);
		rm_json_obj_close(&j);
	}
	rm_json_arr_close(&j);
	rm_json_obj_close(&j);
	rm_json_end(&j);
}

/* The record --revision leaves: counters of rejected documents carry
 * over from the one pinned now. */
static void make_record(const struct ctl_opts *o, struct rm_applied *rec)
{
	struct rm_applied cur;
	__u64 now = rm_realtime_ns();

	rm_applied_read(o->pin_dir, &cur);
	*rec = cur;
	rec->revision = o->revision.val;
	rec->applied_ns = now;
	rec->checked_ns = now;
	rec->source_down_ns = 0;
	if (o->source)
		snprintf(rec->source, sizeof(rec->source), "%s", o->source);
}

/* What the change moved, for the log: prepare compared each changed
 * ring (and each removed service's) with the live one already. */
static const struct rm_moved *apply_moved(const struct rm_apply *a,
					  struct rm_moved *m)
{
	memset(m, 0, sizeof(*m));
	for (__u32 i = 0; i < a->n_svc; i++)
		if (a->svc[i].ring || a->svc[i].change == RM_SVC_REMOVED) {
			m->keys += a->svc[i].moved;
			m->services++;
		}
	m->counted = true;
	return m;
}

int cmd_apply(struct ctl_opts *o)
{
	struct rm_apply *a = calloc(1, sizeof(*a));
	struct rm_moved m;
	struct rm_applied rec, *recp = NULL;
	struct edit *edits = NULL;
	struct live lv;
	int n, ret;

	if (!a)
		return ctl_runtime_error("out of memory");
	ret = doc_read(o, "apply", &edits, &n);
	if (ret)
		goto out_free;
	ret = live_open(o, &lv, RM_LOCK_EX);
	if (ret)
		goto out_free;
	ret = doc_replay("apply", &lv, edits, n);
	if (ret)
		goto out;
	if (o->keep_local) {
		int line = doc_local_line(edits, n);

		/* a fleet's document set them: one director's, not ours */
		if (line)
			fprintf(stderr, "apply: --keep-local: line %d sets "
					"--encap-src4/--encap-src6: ignored, this "
					"director keeps its own\n",
				line);
		rm_cfg_keep_local(&lv.new->cfg, &lv.old->cfg);
	}
	if (rm_apply_prepare(&lv.st, lv.old, lv.new, a)) {
		ret = ctl_runtime_error("apply: %s (nothing changed)",
					rm_errmsg());
		goto out;
	}
	if (o->revision.set && !o->dry_run) {
		make_record(o, &rec);
		recp = &rec;
	}
	/* what moves is printed before anything is written */
	if (!o->json)
		print_text(a);
	if (!o->dry_run &&
	    rm_apply_commit(&lv.st, lv.old, lv.new, a, recp)) {
		ret = ctl_runtime_error("apply: %s", rm_errmsg());
		goto out_report;
	}
	/* the keys the document wrote stay; those of dropped services go */
	if (!o->dry_run)
		ret = live_quic_keys_commit(&lv);
	if (!o->dry_run && a->changed)
		history_log(&lv, apply_moved(a, &m));
	if (o->json)
		print_json(o, a, recp);
	else if (o->dry_run)
		printf("dry run: nothing changed\n");
	else if (!a->changed)
		printf("no change: the live state already matches %s\n",
		       o->argv[0]);
	else
		printf("applied: %u service%s changed, each changed ring "
		       "swapped once\n",
		       a->n_svc, a->n_svc == 1 ? "" : "s");
out_report:
	rm_apply_free(a);
out:
	live_close(&lv);
out_free:
	free(edits);
	free(a);
	return ret;
}
