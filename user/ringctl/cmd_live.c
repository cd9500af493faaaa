// SPDX-License-Identifier: GPL-2.0
/* The frame of every live command: open and lock the state, read it,
 * apply an edit, then commit or (--dry-run) report what would move. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd_live.h"
#include "json.h"
#include "key.h"
#include "plan.h"

int live_name(const char *what, const char *name)
{
	if (!name)
		return ctl_usage_error("%s name is required", what);
	if (!rm_name_valid(name))
		return ctl_usage_error(
		    "%s name '%s' is invalid: use 1-%d characters "
		    "[A-Za-z0-9._-]",
		    what, name, RM_NAME_MAX - 1);
	return 0;
}

int live_svc_arg(const struct ctl_opts *o, const char *cmd, char *out,
		 size_t len)
{
	int ret;

	if (o->argc != 1)
		return ctl_usage_error("%s: expected one NAME, got %d words",
				       cmd, o->argc);
	ret = live_name("service", o->argv[0]);
	if (!ret && out)
		snprintf(out, len, "%s", o->argv[0]);
	return ret;
}

/* A snapshot is ~1 MB: in a huge page (rm_huge_alloc_filled) it is one
 * fault instead of ~240 first touches of small pages, populated at once;
 * the rest of that page is the command's scratch memory. */
struct rm_snap *live_snap_alloc(void)
{
	return rm_huge_alloc_filled(sizeof(struct rm_snap));
}

void live_snap_free(struct rm_snap *s)
{
	rm_huge_free(s, sizeof(*s));
}

/* Under RM_LOCK_EX the command edits lv->new against lv->old; under a
 * shared lock or none it only reads, and lv->new is lv->old. */
int live_open(struct ctl_opts *o, struct live *lv, enum rm_lock lock)
{
	lv->dry_run = o->dry_run;
	lv->committed = false;
	lv->keys = NULL;
	lv->pair = lock == RM_LOCK_EX;
	if (lv->pair) {
		/* both in one block: 1.9 MB, one huge page to fault in
		 * instead of two (each a zeroing, and on this VM often a
		 * page the host must back again) */
		lv->old = rm_huge_alloc_filled(2 * sizeof(*lv->old));
		lv->new = lv->old ? lv->old + 1 : NULL;
	} else {
		lv->old = live_snap_alloc();
		lv->new = lv->old;
	}
	if (!lv->old || !lv->new) {
		live_close(lv);
		return ctl_runtime_error("out of memory");
	}
	if (rm_state_open(&lv->st, o->pin_dir, lock) ||
	    rm_state_read(&lv->st, lv->old))
		goto fail;
	if (lv->old->cfg.flags & RM_CFG_COMMITTING) {
		/* a writer died mid-change: finish the job under the
		 * exclusive lock (kept for the rest of this command) */
		int rc;

		if (lock != RM_LOCK_EX) {
			rm_state_close(&lv->st);
			lv->new = live_snap_alloc();
			if (!lv->new) {
				live_close(lv);
				return ctl_runtime_error("out of memory");
			}
			if (rm_state_open(&lv->st, o->pin_dir, RM_LOCK_EX) ||
			    rm_state_read(&lv->st, lv->old))
				goto fail;
		}
		rc = rm_state_repair(&lv->st, lv->old);
		if (rc < 0)
			goto fail;
		if (rc > 0)
			fprintf(stderr, "ringctl: the last change was interrupted "
					"(its writer died): every ring and record "
					"was rewritten from the records\n");
	}
	if (lv->new != lv->old)
		memcpy(lv->new, lv->old, sizeof(*lv->new));
	return 0;
fail:
	live_close(lv);
	return ctl_runtime_error("%s", rm_errmsg());
}

void live_close(struct live *lv)
{
	live_quic_keys_close(lv);
	rm_state_close(&lv->st);
	if (lv->pair) {
		rm_huge_free(lv->old, 2 * sizeof(*lv->old));
	} else {
		if (lv->new != lv->old)
			live_snap_free(lv->new);
		live_snap_free(lv->old);
	}
	lv->old = lv->new = NULL;
	lv->pair = false;
}

int live_svc(struct live *lv, const char *name)
{
	int id = rm_snap_find_svc(lv->new, name);

	if (id < 0)
		return -ctl_runtime_error("no service '%s' (ringctl service list "
				     "shows them)",
				     name);
	return id;
}

int live_node(struct live *lv, __u32 svc, const char *name)
{
	int slot = rm_snap_find_node(lv->new, svc, name);

	if (slot < 0)
		return -ctl_runtime_error("no node '%s' in service '%s' (ringctl "
				     "show %s lists them)",
				     name, lv->new->svc[svc].name,
				     lv->new->svc[svc].name);
	return slot;
}

void live_svc_text(const struct rm_svc_meta *m, char *out, size_t len)
{
	char addr[64], key[144] = "";
	size_t n;

	rm_format_svc_addr(&m->key, addr, sizeof(addr));
	if (m->flags & RM_SVC_F_KEYED) {
		strcpy(key, " key ");
		rm_format_keyspec(&m->keyspec, key + 5, sizeof(key) - 5);
		if (m->keyspec.kind == RM_KEY_QUIC && m->keyspec.quic.enc)
			strcat(key, " encrypted");
	}
	if (m->ring.scheme != RM_RING_RINGMASTER) {
		n = strlen(key);
		snprintf(key + n, sizeof(key) - n, " ring ");
		rm_format_ringspec(&m->ring, key + n + 6, sizeof(key) - n - 6);
	}
	snprintf(out, len, "%s port %u/%s %s%s", addr, ntohs(m->key.port),
		 rm_proto_name(m->key.proto),
		 m->flags & RM_SVC_F_3TUPLE ? "3tuple" : "5tuple", key);
}

int live_ring(struct live *lv, __u32 svc, struct rm_ring *r)
{
	const struct rm_slot *slots;
	__u32 n;
	int err;

	err = rm_state_ring_map(&lv->st, svc, &slots, &n);
	if (!err) {
		err = rm_ring_decode(slots, n, lv->old, svc, r);
		rm_state_ring_unmap(slots, n);
	}
	return err;
}

static void json_moves(struct rm_json *j, const char *name,
		       const struct rm_ring *a, const struct rm_ring *b)
{
	struct rm_move *moves = NULL;
	size_t n = 0;
	__u64 moved = 0;

	rm_ring_diff(a, b, &moves, &n, &moved);
	rm_json_obj_open(j, NULL);
	rm_json_str(j, "service", name);
	rm_json_num(j, "moved_share", moved / RM_KEYSPACE);
	rm_json_arr_open(j, "moves");
	for (size_t i = 0; i < n; i++) {
		rm_json_obj_open(j, NULL);
		rm_json_str(j, "from", moves[i].from);
		rm_json_str(j, "to", moves[i].to);
		rm_json_num(j, "share", moves[i].keys / RM_KEYSPACE);
		rm_json_obj_close(j);
	}
	rm_json_arr_close(j);
	rm_json_obj_close(j);
	free(moves);
}

/* Per service whose ring changes: the live ring against the would-be
 * one. Builds rings in memory only; no map is created or written. */
static int dry_run(struct ctl_opts *o, struct live *lv, unsigned int flags)
{
	struct rm_plan *p = calloc(1, sizeof(*p));
	struct rm_ring empty = {0}, before;
	struct rm_json j;
	int ret = 0;

	if (!p)
		return ctl_runtime_error("out of memory");
	if (rm_plan_build(&lv->st, lv->old, lv->new, flags | RM_APPLY_DRY_RUN,
			  p)) {
		free(p);
		return ctl_runtime_error("%s", rm_errmsg());
	}
	if (o->json) {
		rm_json_init(&j, stdout);
		rm_json_obj_open(&j, NULL);
		rm_json_bool(&j, "dry_run", true);
		rm_json_arr_open(&j, "services");
	}
	for (__u32 i = 0; i < RM_MAX_SERVICES && !ret; i++) {
		bool gone = lv->old->svc[i].in_use && !lv->new->svc[i].in_use;
		const char *name =
		    gone ? lv->old->svc[i].name : lv->new->svc[i].name;
		const struct rm_ring *after = gone ? &empty : &p->ring[i];

		if (!p->changed[i] && !gone)
			continue;
		memset(&before, 0, sizeof(before));
		if (lv->old->svc[i].in_use && live_ring(lv, i, &before)) {
			ret = ctl_runtime_error("%s", rm_errmsg());
			break;
		}
		if (o->json) {
			json_moves(&j, name, &before, after);
		} else {
			printf("service %s:\n", name);
			ret = plan_print_diff(&before, after, false);
		}
		rm_ring_free(&before);
	}
	if (o->json) {
		rm_json_arr_close(&j);
		rm_json_obj_close(&j);
		rm_json_end(&j);
	} else if (!ret) {
		printf("dry run: nothing changed\n");
	}
	rm_plan_free(p);
	free(p);
	return ret;
}

int live_commit(struct ctl_opts *o, struct live *lv, unsigned int flags,
		const char *done)
{
	struct rm_moved m;

	if (o->dry_run)
		return dry_run(o, lv, flags);
	int ret;

	if (rm_state_commit_moved(&lv->st, lv->old, lv->new, flags, &m))
		return ctl_runtime_error("%s", rm_errmsg());
	ret = live_quic_keys_commit(lv);
	history_log(lv, &m);
	if (done && *done && !o->json)
		printf("%s\n", done);
	return ret;
}

int live_change(struct ctl_opts *o, edit_parse_fn parse)
{
	struct edit e;
	int ret;

	memset(&e, 0, sizeof(e));
	e.state = -1;
	ret = parse(o, &e);
	if (ret)
		return ret;
	return live_change_edit(o, &e);
}

int live_change_edit(struct ctl_opts *o, struct edit *e)
{
	struct live lv;
	int ret;

	ret = live_open(o, &lv, RM_LOCK_EX);
	if (ret)
		return ret;
	ret = e->apply(e, &lv);
	if (!ret)
		ret = live_commit(o, &lv, 0, e->done);
	live_close(&lv);
	return ret;
}
