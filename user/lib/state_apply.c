// SPDX-License-Identifier: GPL-2.0
/*
 * Changing the live state: apply a plan (state_plan.c validated it and
 * built its rings) in an order the data plane tolerates, and roll back to
 * the old snapshot if a write fails.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "ring.h"
#include "state.h"
#include "state_int.h"
#include "util.h"
#include "vip_filter.h"

/* ---- changing the live state ----------------------------------------- */

static int percpu_zero(struct rm_state *st, enum rm_map_id map, __u32 key,
		       size_t vsize)
{
	void *zeros = calloc(st->ncpus, vsize);
	int err;

	if (!zeros)
		return -ENOMEM;
	err = bpf_map_update_elem(st->fd[map], &key, zeros, BPF_ANY);
	free(zeros);
	return err;
}

static int tx_port_add(struct rm_state *st, __u32 ifindex)
{
	struct bpf_devmap_val v = {.ifindex = ifindex, .bpf_prog.fd = -1};
	struct bpf_devmap_val cur;

	if (st->tx_vsize > sizeof(cur))
		return rm_state_fail(-EPROTO, "rm_tx_ports has an unknown value size");
	if (!bpf_map_lookup_elem(st->fd[RM_M_TX_PORTS], &ifindex, &cur) &&
	    cur.ifindex == ifindex)
		return 0;
	if (bpf_map_update_elem(st->fd[RM_M_TX_PORTS], &ifindex, &v, BPF_ANY))
		return rm_state_fail(-errno, "cannot add ifindex %u to rm_tx_ports: %s",
			    ifindex, strerror(errno));
	return 0;
}

int rm_state_tx_port_add(struct rm_state *st, __u32 ifindex)
{
	return tx_port_add(st, ifindex);
}

static bool ifindex_used(const struct rm_snap *s, __u32 ifindex)
{
	for (int i = 0; i < RM_MAX_NODES; i++)
		if (s->node[i].state != RM_NODE_FREE &&
		    s->node[i].ifindex == ifindex)
			return true;
	return false;
}

/* Add v to the n distinct values of set (few: one per egress device). */
static void add_distinct(__u32 *set, __u32 *n, __u32 v)
{
	for (__u32 i = 0; i < *n; i++)
		if (set[i] == v)
			return;
	if (*n < RM_MAX_NODES)
		set[(*n)++] = v;
}

/* Ports no node of new uses: those old used, or with ALL every port. */
static int tx_ports_prune(struct rm_state *st, const struct rm_snap *old,
			  const struct rm_snap *new, bool all)
{
	int fd = st->fd[RM_M_TX_PORTS];
	__u32 key, next, *gone = calloc(RM_MAX_NODES, sizeof(*gone)), n = 0;
	int err = 0;

	if (!gone)
		return rm_state_fail(-ENOMEM, "out of memory");
	for (int i = 0; i < RM_MAX_NODES; i++)
		if (old->node[i].state != RM_NODE_FREE)
			add_distinct(gone, &n, old->node[i].ifindex);
	for (void *prev = NULL; all && !bpf_map_get_next_key(fd, prev, &next);
	     prev = &key) {
		add_distinct(gone, &n, next);
		key = next;
	}
	for (__u32 i = 0; i < n && !err; i++)
		if (!ifindex_used(new, gone[i]) &&
		    bpf_map_delete_elem(fd, &gone[i]) && errno != ENOENT)
			err = rm_state_fail(-errno,
				   "cannot remove ifindex %u from "
				   "rm_tx_ports: %s",
				   gone[i], strerror(errno));
	free(gone);
	return err;
}

struct svc_kv {
	struct rm_svc_key k;
	struct rm_svc v;
};

/* The key every non-first fragment to k's (VIP, proto) is looked up
 * with: such a fragment carries no port. */
static struct rm_svc_key frag_key(const struct rm_svc_key *k)
{
	struct rm_svc_key fk = *k;

	fk.port = 0;
	fk.flags |= RM_SVCK_FRAG;
	return fk;
}

static bool is_three(const struct rm_snap *s, __u32 id)
{
	return s->svc[id].flags & RM_SVC_F_3TUPLE;
}

/* rm_services as new describes it: each service's key, and one fragment
 * key per (VIP, proto) that has a service. The fragment key routes when
 * a 3-tuple service holds it (every fragment of a flow hashes alike);
 * held by a 5-tuple service (flags 0) it makes the data plane drop and
 * count the fragment instead of passing it to the kernel. A 3-tuple
 * service of the (VIP, proto) wins it; among equals it keeps pointing
 * where it points while that service stays, else to the lowest id. */
static int services_want(struct rm_state *st, const struct rm_snap *new,
			 struct svc_kv *want)
{
	int n = 0, keys;

	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		const struct rm_svc_meta *m = &new->svc[i];

		if (!m->in_use)
			continue;
		want[n].k = m->key;
		want[n].v.id = i;
		want[n++].v.flags = m->flags;
	}
	keys = n;
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		struct rm_svc_key fk;
		int j = keys;

		if (!new->svc[i].in_use)
			continue;
		fk = frag_key(&new->svc[i].key);
		while (j < n && memcmp(&want[j].k, &fk, sizeof(fk)))
			j++;
		if (j == n) {
			want[n].k = fk;
			want[n++].v.id = i;
		} else if (is_three(new, i) && !is_three(new, want[j].v.id)) {
			want[j].v.id = i;
		}
	}
	for (int j = keys; j < n; j++) {
		struct rm_svc cur;
		struct rm_svc_key ck;

		if (!bpf_map_lookup_elem(st->fd[RM_M_SERVICES], &want[j].k,
					 &cur) &&
		    cur.id < RM_MAX_SERVICES && new->svc[cur.id].in_use &&
		    is_three(new, cur.id) == is_three(new, want[j].v.id)) {
			ck = frag_key(&new->svc[cur.id].key);
			if (!memcmp(&ck, &want[j].k, sizeof(ck)))
				want[j].v.id = cur.id;
		}
		want[j].v.flags = is_three(new, want[j].v.id) ? RM_SVC_F_3TUPLE
							       : 0;
	}
	return n;
}

static int services_sync(struct rm_state *st, const struct rm_snap *new)
{
	int fd = st->fd[RM_M_SERVICES], n, m = 0, err = 0;
	struct svc_kv *want = calloc(2 * RM_MAX_SERVICES, sizeof(*want));
	struct rm_svc_key *have = calloc(4 * RM_MAX_SERVICES, sizeof(*have));
	struct rm_vip_slots *slots = malloc(sizeof(*slots));
	struct rm_svc_key key;
	struct rm_svc cur;

	if (!want || !have || !slots) {
		err = rm_state_fail(-ENOMEM, "out of memory");
		goto out;
	}
	n = services_want(st, new, want);
	for (void *prev = NULL; m < 4 * RM_MAX_SERVICES &&
				!bpf_map_get_next_key(fd, prev, &have[m]);
	     prev = &key)
		key = have[m++];
	/* stale keys go first, so a key moving between services never
	 * finds its old owner half removed */
	for (int i = 0; i < m && !err; i++) {
		bool keep = false;

		for (int j = 0; j < n && !keep; j++)
			keep = !memcmp(&want[j].k, &have[i], sizeof(key));
		if (!keep && bpf_map_delete_elem(fd, &have[i]) &&
		    errno != ENOENT)
			err = rm_state_fail(-errno, "cannot remove a service key: %s",
				   strerror(errno));
	}
	/* every key of rm_services keeps a slot (vip_filter.h): the slots
	 * of new keys go in before the keys do ... */
	if (!err) {
		memset(slots, 0, sizeof(*slots));
		for (int j = 0; j < n; j++)
			rm_vip_slots_set(slots, &want[j].k, want[j].v.id);
		err = rm_vip_slots_merge(st->fd[RM_M_VIP_SLOTS], slots);
		if (err)
			err = rm_state_fail(err, "cannot write %s: %s",
				   RM_MAP_NAME(VIP_SLOTS), strerror(-err));
	}
	for (int j = 0; j < n && !err; j++) {
		if (!bpf_map_lookup_elem(fd, &want[j].k, &cur) &&
		    !memcmp(&cur, &want[j].v, sizeof(cur)))
			continue;
		if (bpf_map_update_elem(fd, &want[j].k, &want[j].v, BPF_ANY))
			err =
			    rm_state_fail(-errno,
				 "cannot insert service '%s' into "
				 "rm_services: %s",
				 new->svc[want[j].v.id].name, strerror(errno));
	}
	/* ... and the slots of removed keys come out once they are gone,
	 * recomputed from what the map holds, which now agrees with every
	 * meta in use (rm_plan_apply() wrote them in step 1): only now may a
	 * slot name an id again. On a failure above the table keeps its
	 * extra and MANY slots, which the rollback's own sync trims. */
	if (!err) {
		err = rm_vip_slots_sync(st->fd[RM_M_VIP_SLOTS], fd);
		if (err)
			err = rm_state_fail(err, "cannot write %s: %s",
				   RM_MAP_NAME(VIP_SLOTS), strerror(-err));
	}
out:
	free(want);
	free(have);
	free(slots);
	return err;
}

/* rm_quic_sids as new's node records say: each server ID of a node of a
 * --key quic service -> (slot, gen). Stale entries go first; the data
 * plane checks each entry's gen, service and state against the node's
 * record, so an entry a step ahead of or behind the records sends a
 * packet nowhere wrong (to the ring, at worst). */
static int quic_sids_sync(struct rm_state *st, const struct rm_snap *new)
{
	int fd = st->fd[RM_M_QUIC_SIDS], err = 0;
	struct rm_quic_sid_key k, next, *gone;
	struct rm_quic_sid_node v, cur;
	__u32 n = 0;

	gone = calloc(RM_MAX_NODES, sizeof(*gone));
	if (!gone)
		return rm_state_fail(-ENOMEM, "out of memory");
	for (void *prev = NULL;
	     n < RM_MAX_NODES && !bpf_map_get_next_key(fd, prev, &next);
	     prev = &k) {
		k = next;
		if (!bpf_map_lookup_elem(fd, &k, &cur) &&
		    (cur.node >= RM_MAX_NODES ||
		     !rm_quic_sid_of(new, cur.node, &next) ||
		     memcmp(&next, &k, sizeof(k))))
			gone[n++] = k;
	}
	for (__u32 i = 0; i < n && !err; i++)
		if (bpf_map_delete_elem(fd, &gone[i]) && errno != ENOENT)
			err = rm_state_fail(-errno, "cannot remove a server ID "
					    "from %s: %s",
					    RM_MAP_NAME(QUIC_SIDS),
					    strerror(errno));
	for (__u32 i = 0; i < RM_MAX_NODES && !err; i++) {
		if (!rm_quic_sid_of(new, i, &k))
			continue;
		v.node = i;
		v.gen = new->node[i].gen;
		if (!bpf_map_lookup_elem(fd, &k, &cur) &&
		    !memcmp(&cur, &v, sizeof(v)))
			continue;
		if (bpf_map_update_elem(fd, &k, &v, BPF_ANY))
			err = rm_state_fail(-errno, "cannot write node '%s''s "
					    "server ID into %s: %s",
					    new->node[i].name,
					    RM_MAP_NAME(QUIC_SIDS),
					    strerror(errno));
	}
	free(gone);
	return err;
}

/* Wait until every XDP run that could have read the old rings is over:
 * programs run inside RCU read-side sections and MEMBARRIER_CMD_GLOBAL
 * is synchronize_rcu(). Where it is refused (nohz_full), sleep instead.
 * An update or delete of a map-in-map slot from userspace already waits
 * for running programs before it returns (maybe_wait_bpf_programs(), since
 * Linux 4.20), so this is only needed when no ring was written. */
static void rcu_grace(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		usleep(100 * 1000);
}

static int write_elem(struct rm_state *st, enum rm_map_id map, __u32 key,
		      const void *val)
{
	if (bpf_map_update_elem(st->fd[map], &key, val, BPF_ANY))
		return rm_state_fail(-errno, "cannot write %s[%u]: %s",
			    rm_map_names[map], key, strerror(errno));
	return 0;
}

/* rm_config with RM_CFG_COMMITTING set or cleared. */
static int cfg_write(struct rm_state *st, const struct rm_config *cfg,
		     bool committing)
{
	struct rm_config c = *cfg;

	c.flags = committing ? c.flags | RM_CFG_COMMITTING
			     : c.flags & ~RM_CFG_COMMITTING;
	return write_elem(st, RM_M_CONFIG, 0, &c);
}

static bool same_node(const struct rm_node *a, const struct rm_node *b)
{
	return a->state != RM_NODE_FREE && b->state != RM_NODE_FREE &&
	       a->svc_id == b->svc_id &&
	       !strncmp(a->name, b->name, RM_NAME_MAX);
}

/* Writes a node record whose slot may change owner. A slot no ring names
 * taking a new gen (a new owner): the old record made unusable (its state
 * alone changes), the new one written parked (state FREE), then made
 * ACTIVE. An update copies the record in place, so a packet reading it
 * meanwhile could pair a usable state with the old gen and the new MAC,
 * and send a flow the table remembers for the old node to the new one;
 * this way every write changes the state alone or happens while every mix
 * is FREE. */
static int node_record_write(struct rm_state *st, const struct rm_node *was,
			     const struct rm_node *n, __u32 i)
{
	int err = 0;

	if (n->gen != was->gen && !rm_node_in_ring(was)) {
		struct rm_node parked = *was;

		parked.state = RM_NODE_FREE;
		if (was->state != RM_NODE_FREE)
			err = write_elem(st, RM_M_NODES, i, &parked);
		parked = *n;
		parked.state = RM_NODE_FREE;
		if (!err)
			err = write_elem(st, RM_M_NODES, i, &parked);
	}
	return err ? err : write_elem(st, RM_M_NODES, i, n);
}

/* A slot a live ring names for one node and the new rings for another:
 * only a change near the node limit reuses such a slot (state_edit.c).
 * Its record stays parked (state FREE: the data plane drops what reaches
 * it) from step 1 until no old ring can be read (step 6), so no packet of
 * the old node reaches the new one, and the new node gets packets a few
 * milliseconds late. */
static bool slot_changes_owner_live(const struct rm_node *was,
				    const struct rm_node *n)
{
	return rm_node_in_ring(was) && rm_node_in_ring(n) &&
	       !same_node(n, was);
}

/* Step 1 (rule: a ring never names a record that is not there yet): the
 * egress ports and the records of every node a new ring may point at. */
static int records_before_rings(struct rm_state *st, const struct rm_snap *old,
				const struct rm_snap *new, bool all)
{
	int err = 0;

	for (__u32 i = 0; i < RM_MAX_NODES && !err; i++) {
		const struct rm_node *n = &new->node[i];

		if (n->state == RM_NODE_FREE ||
		    (!all && !memcmp(n, &old->node[i], sizeof(*n))))
			continue;
		err = tx_port_add(st, n->ifindex);
		if (err || !rm_node_in_ring(n))
			continue;
		/* a new owner of the slot starts with clean traffic */
		if (!same_node(n, &old->node[i]) &&
		    percpu_zero(st, RM_M_NODE_STATS, i,
				sizeof(struct rm_traffic)))
			err = rm_state_fail(-errno,
					    "cannot reset rm_node_stats[%u]", i);
		if (!err && slot_changes_owner_live(&old->node[i], n)) {
			struct rm_node parked = old->node[i];

			/* the old record unusable first (its state alone
			 * changes), then the new one parked */
			parked.state = RM_NODE_FREE;
			err = write_elem(st, RM_M_NODES, i, &parked);
			parked = *n;
			parked.state = RM_NODE_FREE;
			if (!err)
				err = write_elem(st, RM_M_NODES, i, &parked);
		} else if (!err) {
			err = node_record_write(st, &old->node[i], n, i);
		}
	}
	return err;
}

/* Step 1, services (rule: the data plane never takes a meta rm_services
 * does not agree with): slots naming a service whose meta changes turn
 * MANY first, so packets look such keys up until services_sync() names
 * the ids again (rm_vip_filter.h); then the metas of services in use. */
static int metas_before_keys(struct rm_state *st, const struct rm_snap *old,
			     const struct rm_snap *new, bool all)
{
	__u8 ids[RM_MAX_SERVICES];
	int err;

	for (__u32 i = 0; i < RM_MAX_SERVICES; i++)
		ids[i] = all || memcmp(&new->svc[i], &old->svc[i],
				       sizeof(new->svc[i]));
	err = rm_vip_slots_forget(st->fd[RM_M_VIP_SLOTS], ids);
	if (err)
		return rm_state_fail(err, "cannot write %s: %s",
				     RM_MAP_NAME(VIP_SLOTS), strerror(-err));
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++) {
		if (!new->svc[i].in_use ||
		    (!all &&
		     !memcmp(&new->svc[i], &old->svc[i], sizeof(new->svc[i]))))
			continue;
		if (!old->svc[i].in_use &&
		    percpu_zero(st, RM_M_SVC_STATS, i,
				sizeof(struct rm_traffic)))
			err = rm_state_fail(-errno,
					    "cannot reset rm_svc_stats[%u]", i);
		if (!err)
			err = write_elem(st, RM_M_SVC_META, i, &new->svc[i]);
	}
	return err;
}

/* A slot this change gives another node while a remembered ring may
 * still name it for the old one: taken from a node this change deletes,
 * or freed within the window (state_edit.c avoids both but near the
 * slot limit). */
static bool slot_reuse_remembered(const struct rm_node *was,
				  const struct rm_node *n, __u64 now,
				  __u64 window_ns)
{
	if (n->state == RM_NODE_FREE || same_node(n, was))
		return false;
	if (was->state != RM_NODE_FREE)
		return true;
	return was->freed_ns && now - was->freed_ns <= window_ns;
}

/* Step 1, second chance (rule: a remembered ring is searched only
 * under the seed, service and node slots it was built for;
 * state_gens.c): the generations a change makes meaningless go before
 * the seed and the rings do. */
static int gens_forget(struct rm_state *st, const struct rm_snap *old,
		       const struct rm_snap *new, const struct rm_plan *p)
{
	__u32 wo = old->cfg.handover_window_s, wn = new->cfg.handover_window_s;
	__u64 window_ns = (__u64)(wo > wn ? wo : wn) * 1000000000ULL;
	__u64 now = rm_mono_ns();
	int err = 0;

	if (memcmp(&old->cfg.seed, &new->cfg.seed, sizeof(new->cfg.seed)))
		return rm_gens_drop_all(st);
	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		if (slot_reuse_remembered(&old->node[i], &new->node[i], now,
					  window_ns))
			return rm_gens_drop_all(st);
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++)
		if ((old->svc[i].in_use && !new->svc[i].in_use) ||
		    (p->changed[i] && !wn))
			err = rm_gens_drop(st, i);
	return err;
}

/* Step 3 (rule: packets see the old ring or the new, never a mix): each
 * changed ring in one update, the ring it replaces remembered just
 * before (rule: a packet that sees a new ring sees the one it replaced:
 * state_gens.c). Sets *waited when a map-in-map slot was written (the
 * kernel then waited for running programs). */
static int rings_swap(struct rm_state *st, const struct rm_snap *old,
		      const struct rm_snap *new, struct rm_plan *p,
		      bool *waited)
{
	/* rings placed under another seed are not worth remembering */
	bool keep = new->cfg.handover_window_s &&
		    !memcmp(&old->cfg.seed, &new->cfg.seed,
			    sizeof(new->cfg.seed));
	__u64 now = rm_mono_ns();
	int err = 0;

	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++) {
		/* the array this write lets go of: the oldest generation,
		 * or the live ring when none is kept (a spare after) */
		int gone = -1;

		if (!p->changed[i])
			continue;
		if (keep)
			err = rm_gens_retire(st, i, p->fd[i], now, &gone);
		else
			gone = rm_state_inner_open(st, RM_M_RINGS, i);
		if (!err)
			err = write_elem(st, RM_M_RINGS, i, &p->fd[i]);
		*waited = *waited || !err;
		if (gone >= 0 && !err) {
			if (p->spare[i] >= 0)
				close(p->spare[i]);
			p->spare[i] = gone;
		} else if (gone >= 0) {
			close(gone);
		}
	}
	return err;
}

/* Step 8: the arrays the rings let go of, each its service's spare. */
static void spares_keep(struct rm_state *st, struct rm_plan *p)
{
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++)
		if (p->spare[i] >= 0) {
			rm_spare_put(st, i, p->spare[i]);
			close(p->spare[i]);
			p->spare[i] = -1;
		}
}

/* Step 5 (rule: a ring goes only once no key leads to it): the rings of
 * deleted services, after services_sync() removed their keys. */
static int rings_of_deleted_drop(struct rm_state *st,
				 const struct rm_snap *old,
				 const struct rm_snap *new, bool all,
				 bool *waited)
{
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		if (new->svc[i].in_use || (!all && !old->svc[i].in_use))
			continue;
		rm_spare_drop(st, i);
		if (!bpf_map_delete_elem(st->fd[RM_M_RINGS], &i))
			*waited = true;
		else if (errno != ENOENT)
			return rm_state_fail(-errno,
					     "cannot remove ring %u: %s", i,
					     strerror(errno));
	}
	return 0;
}

/* Step 6 (rule: a record leaves only once no packet can be on its way to
 * it): after a grace period if no ring write already waited, the records
 * of nodes out of every ring, of slots that changed owner (parked since
 * step 1) and the metas of deleted services. */
static int records_after_rings(struct rm_state *st, const struct rm_snap *old,
			       const struct rm_snap *new, bool all,
			       bool waited)
{
	bool grace = false;
	int err = 0;

	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		if (rm_node_in_ring(&old->node[i]) &&
		    (!rm_node_in_ring(&new->node[i]) ||
		     slot_changes_owner_live(&old->node[i], &new->node[i])))
			grace = true;
	if (grace && !waited)
		rcu_grace();
	for (__u32 i = 0; i < RM_MAX_NODES && !err; i++)
		if ((!rm_node_in_ring(&new->node[i]) &&
		     (all || memcmp(&new->node[i], &old->node[i],
				    sizeof(new->node[i])))) ||
		    slot_changes_owner_live(&old->node[i], &new->node[i]))
			err = write_elem(st, RM_M_NODES, i, &new->node[i]);
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++)
		if (!new->svc[i].in_use &&
		    (all ||
		     memcmp(&new->svc[i], &old->svc[i], sizeof(new->svc[i]))))
			err = write_elem(st, RM_M_SVC_META, i, &new->svc[i]);
	return err;
}

/* The steps of a change, in the order their rules need. */
int rm_plan_apply(struct rm_state *st, const struct rm_snap *old,
		  const struct rm_snap *new, struct rm_plan *p)
{
	bool all = p->flags & RM_APPLY_ALL, waited = false;
	int err;

	if (p->flags & RM_APPLY_DRY_RUN)
		return 0;
	/* 1: records and metas a ring or key may point at after step 4 */
	err = records_before_rings(st, old, new, all);
	if (!err)
		err = metas_before_keys(st, old, new, all);
	if (!err)
		err = gens_forget(st, old, new, p);
	/* 2: seed, after the rings for it are built and just before they
	 * are swapped in, to keep the mixed window short; still marked as
	 * a change in progress (rm_state_commit clears that last) */
	if (!err && (all || memcmp(&old->cfg, &new->cfg, sizeof(new->cfg))))
		err = cfg_write(st, &new->cfg, true);
	/* 3: rings */
	if (!err)
		err = rings_swap(st, old, new, p, &waited);
	/* 4: service keys, once their rings are in (a change of nodes
	 * alone leaves them as the last commit wrote them) */
	if (!err && (all || memcmp(old->svc, new->svc, sizeof(new->svc))))
		err = services_sync(st, new);
	/* 4b: QUIC server IDs, once their nodes' records are in */
	if (!err)
		err = quic_sids_sync(st, new);
	/* 5: rings of deleted services, once no key leads to them */
	if (!err)
		err = rings_of_deleted_drop(st, old, new, all, &waited);
	/* 6: records leaving the rings, once no packet can be on its way */
	if (!err)
		err = records_after_rings(st, old, new, all, waited);
	/* 7: egress ports nobody uses any more */
	if (!err)
		err = tx_ports_prune(st, old, new, all);
	/* 8: spares, once nothing can read them */
	if (!err)
		spares_keep(st, p);
	return err;
}

/* What the applied plan p moved: each service whose ring input changed
 * (as the change log counts them: rm_snap_rings_changed() without
 * RM_APPLY_ALL) or that went, its old ring (old's records, made from the
 * new ring by rm_snap_ring_near(): a merge, not a second build) against
 * the new ring p holds. */
static int plan_moved(const struct rm_snap *old, const struct rm_snap *new,
		      const struct rm_plan *p, struct rm_moved *m)
{
	bool dirty[RM_MAX_SERVICES];
	int err = 0;

	memset(m, 0, sizeof(*m));
	rm_snap_rings_changed(old, new, 0, dirty);
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++) {
		bool gone = old->svc[i].in_use && !new->svc[i].in_use;
		struct rm_ring a = {0}, empty = {0};

		if (!gone && !(dirty[i] && p->changed[i]))
			continue;
		if (old->svc[i].in_use)
			err = rm_snap_ring_near(old, i, gone ? NULL : &p->ring[i],
						&a);
		if (!err)
			m->keys += rm_ring_moved(&a, gone ? &empty : &p->ring[i]);
		m->services++;
		rm_ring_free(&a);
	}
	return err ? rm_state_fail(err, "cannot count what the change moved: "
				   "%s", strerror(-err))
		   : 0;
}

int rm_state_commit(struct rm_state *st, const struct rm_snap *old,
		    const struct rm_snap *new, unsigned int flags)
{
	return rm_state_commit_moved(st, old, new, flags, NULL);
}

/* The commit, with the plan built here or (built) one built already as a
 * dry run for the same old and new. */
static int commit(struct rm_state *st, const struct rm_snap *old,
		  const struct rm_snap *new, unsigned int flags,
		  struct rm_plan *built, struct rm_moved *moved)
{
	struct rm_plan *p = built ? built : calloc(1, sizeof(*p));
	int *gens = malloc(RM_RINGS_OLD_MAX * sizeof(*gens));
	struct rm_snap *cur = NULL;
	char why[sizeof(rm_errbuf)];
	int err, rerr;

	if (!p || !gens) {
		if (built)
			rm_plan_free(built);
		else
			free(p);
		free(gens);
		return rm_state_fail(-ENOMEM, "out of memory");
	}
	for (__u32 k = 0; k < RM_RINGS_OLD_MAX; k++)
		gens[k] = -1;
	/* a change someone died in: its maps may be half written, so this
	 * one rewrites everything from the records */
	if (old->cfg.flags & RM_CFG_COMMITTING)
		flags |= RM_APPLY_ALL;
	if (built && !(flags & RM_APPLY_ALL) &&
	    built->flags == RM_APPLY_DRY_RUN) {
		err = rm_plan_maps(st, p);
	} else {
		if (built) /* a fresh one is not initialised yet */
			rm_plan_free(built);
		err = rm_plan_build(st, old, new, flags & RM_APPLY_ALL, p);
	}
	/* the remembered rings as they are, for a rollback to put back */
	if (!err)
		err = rm_gens_save(st, gens);
	if (err)
		goto out;
	err = cfg_write(st, &old->cfg, true);
	if (!err)
		err = rm_plan_apply(st, old, new, p);
	if (!err)
		err = cfg_write(st, &new->cfg, false);
	/* the change stands: a failure to count it is the log's only */
	if (!err && moved)
		moved->counted = !plan_moved(old, new, p, moved);
	rm_plan_free(p);
	if (!err)
		goto out;
	/* half applied: put every map back as old describes it */
	snprintf(why, sizeof(why), "%s", rm_errbuf);
	cur = malloc(sizeof(*cur));
	rerr = cur ? rm_state_read(st, cur) : -ENOMEM;
	if (!rerr)
		rerr = rm_plan_build(st, cur, old, RM_APPLY_ALL, p);
	if (!rerr)
		rerr = rm_plan_apply(st, cur, old, p);
	if (!rerr)
		rerr = rm_gens_restore(st, gens);
	if (!rerr)
		rerr = cfg_write(st, &old->cfg, false);
	if (rerr) {
		char rwhy[sizeof(rm_errbuf)]; /* rm_state_fail() writes rm_errbuf */

		snprintf(rwhy, sizeof(rwhy), "%s", rm_errbuf);
		rm_state_fail(err,
		     "%s; rolling back failed too (%s): restore a saved "
		     "configuration",
		     why, rwhy);
	}
	else
		rm_state_fail(err, "%s (rolled back, nothing changed)", why);
out:
	rm_plan_free(p);
	rm_gens_close(gens);
	free(gens);
	if (!built)
		free(p);
	free(cur);
	return err;
}

int rm_state_commit_moved(struct rm_state *st, const struct rm_snap *old,
			  const struct rm_snap *new, unsigned int flags,
			  struct rm_moved *moved)
{
	return commit(st, old, new, flags, NULL, moved);
}

int rm_state_commit_plan(struct rm_state *st, const struct rm_snap *old,
			 const struct rm_snap *new, struct rm_plan *p,
			 struct rm_moved *moved)
{
	return commit(st, old, new, 0, p, moved);
}

int rm_state_repair(struct rm_state *st, struct rm_snap *s)
{
	int err;

	if (!(s->cfg.flags & RM_CFG_COMMITTING))
		return 0;
	err = rm_state_commit(st, s, s, 0);
	if (!err)
		err = rm_state_read(st, s);
	return err ? err : 1;
}
