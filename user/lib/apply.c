// SPDX-License-Identifier: GPL-2.0
/*
 * Declarative apply (apply.h): what differs between the live snapshot and
 * a desired one, what each changed ring moves, one commit, and the
 * rm_applied record of the revision that made it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "apply.h"
#include "json.h"
#include "state_int.h"

static bool node_same(const struct rm_node *a, const struct rm_node *b)
{
	return a->state == b->state && a->weight == b->weight &&
	       rm_node_same_target(a, b) &&
	       a->addr_family == b->addr_family &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr)) &&
	       !strncmp(a->dev, b->dev, RM_IFNAME_MAX) &&
	       a->quic_sid_len == b->quic_sid_len &&
	       !memcmp(a->quic_sid, b->quic_sid, sizeof(a->quic_sid));
}

static bool node_of(const struct rm_node *n, __u32 svc)
{
	return n->state != RM_NODE_FREE && n->svc_id == svc;
}

/* Nodes of svc added, removed and changed between old and new. A node
 * keeps its slot across a document replay (rm_snap_node_add), so slots
 * compare one to one; a slot whose owner changed counts as both. */
static void count_nodes(const struct rm_snap *old, const struct rm_snap *new,
			struct rm_apply_svc *s)
{
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *o = &old->node[i], *n = &new->node[i];
		bool in_o = node_of(o, s->id), in_n = node_of(n, s->id);
		bool same_owner = in_o && in_n &&
				  !strncmp(o->name, n->name, RM_NAME_MAX);

		if (same_owner) {
			s->nodes_changed += !node_same(o, n);
			continue;
		}
		s->nodes_removed += in_o;
		s->nodes_added += in_n;
	}
}

int rm_apply_prepare(struct rm_state *st, const struct rm_snap *old,
		     const struct rm_snap *new, struct rm_apply *a)
{
	struct rm_plan *p = calloc(1, sizeof(*p));
	struct rm_ring empty = {0};
	int err;

	memset(a, 0, sizeof(*a));
	if (!p)
		return rm_state_fail(-ENOMEM, "out of memory");
	err = rm_plan_build(st, old, new, RM_APPLY_DRY_RUN, p);
	if (err) {
		free(p);
		return err;
	}
	a->seed_changed =
	    memcmp(&old->cfg.seed, &new->cfg.seed, sizeof(old->cfg.seed)) ||
	    (old->cfg.flags & RM_CFG_SEEDED) != (new->cfg.flags & RM_CFG_SEEDED);
	a->cfg_changed = rm_udp_timeout(&old->cfg) != rm_udp_timeout(&new->cfg) ||
			 old->cfg.conn_insert_rate != new->cfg.conn_insert_rate ||
			 old->cfg.handover_window_s !=
			     new->cfg.handover_window_s;
	a->local_changed = !rm_cfg_local_same(&old->cfg, &new->cfg);
	a->changed = a->seed_changed || a->cfg_changed || a->local_changed;
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++) {
		const struct rm_svc_meta *o = &old->svc[i], *n = &new->svc[i];
		struct rm_apply_svc *s = &a->svc[a->n_svc];
		struct rm_ring before = {0};

		if (!o->in_use && !n->in_use)
			continue;
		memset(s, 0, sizeof(*s));
		s->id = i;
		rm_name_copy(s->name, n->in_use ? n->name : o->name,
			     sizeof(s->name));
		count_nodes(old, new, s);
		if (!o->in_use)
			s->change = RM_SVC_ADDED;
		else if (!n->in_use)
			s->change = RM_SVC_REMOVED;
		else if (o->vnodes != n->vnodes || o->flags != n->flags ||
			 memcmp(&o->keyspec, &n->keyspec, sizeof(o->keyspec)) ||
			 memcmp(&o->ring, &n->ring, sizeof(o->ring)) ||
			 s->nodes_added || s->nodes_removed || s->nodes_changed)
			s->change = RM_SVC_CHANGED;
		s->ring = p->changed[i];
		if (s->change == RM_SVC_SAME && !s->ring)
			continue;
		/* the ring now is the one old's records give (a change cut
		 * short is repaired before anyone reads old): made from the
		 * new ring, a merge instead of a build */
		if (o->in_use)
			err = rm_snap_ring_near(old, i,
						s->ring ? &p->ring[i] : NULL,
						&before);
		if (!err)
			err = rm_ring_diff(&before, n->in_use ? &p->ring[i] : &empty,
					   &s->moves, &s->n_moves, &s->moved);
		rm_ring_free(&before);
		if (err) {
			err = rm_state_fail(err, "service '%s': cannot compare "
					    "its rings: %s", s->name,
					    strerror(-err));
			break;
		}
		a->n_svc++;
	}
	/* a replay that reproduces the live state writes nothing at all */
	for (__u32 i = 0; i < RM_MAX_NODES && !a->changed && !err; i++)
		a->changed = (old->node[i].state != RM_NODE_FREE ||
			      new->node[i].state != RM_NODE_FREE) &&
			     memcmp(&old->node[i], &new->node[i],
				    sizeof(old->node[i]));
	a->changed = a->changed || a->n_svc;
	a->plan = p;
	if (err)
		rm_apply_free(a);
	return err;
}

bool rm_cfg_local_same(const struct rm_config *a, const struct rm_config *b)
{
	return a->encap_src4 == b->encap_src4 &&
	       !memcmp(a->encap_src6, b->encap_src6, sizeof(a->encap_src6));
}

void rm_cfg_keep_local(struct rm_config *dst, const struct rm_config *live)
{
	dst->encap_src4 = live->encap_src4;
	memcpy(dst->encap_src6, live->encap_src6, sizeof(dst->encap_src6));
}

void rm_apply_free(struct rm_apply *a)
{
	if (a->plan) {
		rm_plan_free(a->plan);
		free(a->plan);
		a->plan = NULL;
	}
	for (__u32 i = 0; i < a->n_svc; i++) {
		free(a->svc[i].moves);
		a->svc[i].moves = NULL;
	}
	a->n_svc = 0;
}

int rm_apply_commit(struct rm_state *st, const struct rm_snap *old,
		    const struct rm_snap *new, struct rm_apply *a,
		    const struct rm_applied *rec)
{
	struct rm_applied r;
	int err = 0;

	if (a->changed && a->plan)
		err = rm_state_commit_plan(st, old, new, a->plan, NULL);
	else if (a->changed)
		err = rm_state_commit(st, old, new, 0);
	if (err || !rec)
		return err;
	/* stamped once the maps hold it: the time the fleet is measured by */
	r = *rec;
	r.applied_ns = r.checked_ns = rm_realtime_ns();
	return rm_applied_write(st->pin_dir, &r);
}

/* ---- rm_applied --------------------------------------------------------- */

__u64 rm_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int applied_open(const char *pin_dir, bool create)
{
	return rm_pinned_array_open(pin_dir, RM_MAP_APPLIED,
				    sizeof(struct rm_applied), 1, create);
}

int rm_applied_read(const char *pin_dir, struct rm_applied *out)
{
	__u32 key = 0;
	int fd, err = 0;

	memset(out, 0, sizeof(*out));
	fd = applied_open(pin_dir, false);
	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, &key, out))
		err = -errno;
	close(fd);
	return err;
}

int rm_applied_write(const char *pin_dir, const struct rm_applied *rec)
{
	__u32 key = 0;
	int fd, err = 0;

	fd = applied_open(pin_dir, true);
	if (fd < 0)
		return rm_state_fail(fd, "cannot create %s/%s: %s", pin_dir,
				     RM_MAP_APPLIED, strerror(-fd));
	if (bpf_map_update_elem(fd, &key, rec, BPF_ANY))
		err = rm_state_fail(-errno, "cannot write %s/%s: %s", pin_dir,
				    RM_MAP_APPLIED, strerror(errno));
	close(fd);
	return err;
}

static double age_s(__u64 now, __u64 t)
{
	return t && now > t ? (now - t) / 1e9 : 0;
}

void rm_applied_json(struct rm_json *j, const char *pin_dir)
{
	struct rm_applied a;
	__u64 now = rm_realtime_ns();

	rm_json_obj_open(j, "applied");
	if (rm_applied_read(pin_dir, &a) || !a.applied_ns) {
		rm_json_bool(j, "present", false);
		rm_json_obj_close(j);
		return;
	}
	rm_json_bool(j, "present", true);
	rm_json_u64(j, "revision", a.revision);
	rm_json_num(j, "applied_at", a.applied_ns / 1e9);
	rm_json_num(j, "age_s", age_s(now, a.applied_ns));
	rm_json_num(j, "checked_age_s", age_s(now, a.checked_ns));
	rm_json_bool(j, "source_reachable", !a.source_down_ns);
	rm_json_num(j, "source_down_s", age_s(now, a.source_down_ns));
	rm_json_u64(j, "rejected", a.rejected);
	rm_json_u64(j, "rejected_revision", a.rejected_revision);
	rm_json_str(j, "source", a.source);
	rm_json_obj_close(j);
}

void rm_applied_text(FILE *f, const char *pin_dir)
{
	struct rm_applied a;
	__u64 now = rm_realtime_ns();

	if (rm_applied_read(pin_dir, &a) || !a.applied_ns)
		return;
	fprintf(f,
		"applied:    revision %llu, %.1f s ago (checked %.1f s ago%s), "
		"%llu rejected, from %s\n",
		(unsigned long long)a.revision, age_s(now, a.applied_ns),
		age_s(now, a.checked_ns),
		a.source_down_ns ? ", source unreachable" : "",
		(unsigned long long)a.rejected, a.source);
}
