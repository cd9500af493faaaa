// SPDX-License-Identifier: GPL-2.0
/*
 * Planning a change of the live state: validate old -> new as a whole
 * before anything is written, and build every changed ring off to the
 * side (state_apply.c applies the plan).
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "key.h"
#include "ring_map.h"
#include "state.h"
#include "state_int.h"
#include "util.h"

static bool key_ok(const struct rm_svc_key *k)
{
	if (k->flags & ~RM_SVCK_V6)
		return false;
	if (k->proto != 6 && k->proto != 17)
		return false;
	return (k->flags & RM_SVCK_V6) ||
	       (!k->vip[1] && !k->vip[2] && !k->vip[3]);
}

/* Node i's QUIC-LB server ID, if it has one: of a --key quic service,
 * of the service's length, zero past it, held by no other node of the
 * service. (A node without one gets its packets by the ring alone: its
 * connections break when the ring moves their DCIDs.) */
static int quic_sid_check(const struct rm_snap *s, __u32 i)
{
	const struct rm_node *n = &s->node[i];
	const struct rm_svc_meta *m = &s->svc[n->svc_id];
	__u32 len = n->quic_sid_len;

	if (m->keyspec.kind != RM_KEY_QUIC) {
		if (!len)
			return 0;
		return rm_state_fail(-EINVAL,
				     "node '%s': --server-id goes with a "
				     "service of --key quic; '%s' is not one",
				     n->name, m->name);
	}
	if (!len)
		return 0;
	if (len != m->keyspec.quic.sid_len)
		return rm_state_fail(-EINVAL,
				     "node '%s': service '%s' takes server IDs "
				     "of %u bytes, not %u: give --server-id as "
				     "%u bytes in hex",
				     n->name, m->name, m->keyspec.quic.sid_len,
				     len, m->keyspec.quic.sid_len);
	for (__u32 j = len; j < RM_QUIC_SID_MAX; j++)
		if (n->quic_sid[j])
			return rm_state_fail(-EINVAL,
					     "node slot %u is invalid", i);
	for (__u32 j = 0; j < i; j++) {
		const struct rm_node *o = &s->node[j];

		if (o->state != RM_NODE_FREE && o->svc_id == n->svc_id &&
		    o->quic_sid_len == len &&
		    !memcmp(o->quic_sid, n->quic_sid, sizeof(o->quic_sid)))
			return rm_state_fail(-EEXIST,
					     "nodes '%s' and '%s' of '%s' have "
					     "the same server ID: each node "
					     "needs its own",
					     o->name, n->name, m->name);
	}
	return 0;
}

/* The whole new snapshot must be sound before anything is written. */
static int validate(const struct rm_snap *old, const struct rm_snap *new,
		    unsigned int flags)
{
	char ifname[IF_NAMESIZE];

	if (!(new->cfg.flags &RM_CFG_SEEDED))
		return rm_state_fail(-EINVAL, "the state is not seeded: set one with "
				     "`ringctl seed --set HEX`");
	for (int i = 0; i < RM_MAX_SERVICES; i++) {
		const struct rm_svc_meta *m = &new->svc[i];

		if (!m->in_use)
			continue;
		if (!rm_name_valid(m->name) || !key_ok(&m->key) ||
		    m->vnodes < 1 || m->vnodes > RM_MAX_VNODES ||
		    (m->flags &
		     ~(RM_SVC_F_3TUPLE | RM_SVC_F_KEYED | RM_SVC_F_QUIC)) ||
		    !(m->flags & RM_SVC_F_QUIC) !=
			(m->keyspec.kind != RM_KEY_QUIC))
			return rm_state_fail(-EINVAL, "service slot %d is invalid", i);
		/* a key is read from one UDP datagram: TCP has no such unit */
		if (!rm_keyspec_valid(&m->keyspec) ||
		    !(m->flags & RM_SVC_F_KEYED) !=
			(m->keyspec.kind == RM_KEY_FLOW) ||
		    ((m->flags & RM_SVC_F_KEYED) && m->key.proto != 17))
			return rm_state_fail(-EINVAL,
					     "service '%s': a --key other than "
					     "flow needs --proto udp",
					     m->name);
		/* the ring scheme places keys: flows keep the keyed ring */
		if (!rm_ringspec_valid(&m->ring) ||
		    (m->ring.scheme != RM_RING_RINGMASTER &&
		     !(m->flags & RM_SVC_F_KEYED)))
			return rm_state_fail(-EINVAL,
					     "service '%s': a --ring other "
					     "than ringmaster needs a --key "
					     "other than flow",
					     m->name);
		for (int j = 0; j < i; j++)
			if (new->svc[j].in_use &&
			    (!strncmp(new->svc[j].name, m->name, RM_NAME_MAX) ||
			     !memcmp(&new->svc[j].key, &m->key,
				     sizeof(m->key))))
				return rm_state_fail(-EEXIST,
					    "services '%s' and '%s' "
					    "collide",
					    new->svc[j].name, m->name);
	}
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &new->node[i];

		if (n->state == RM_NODE_FREE)
			continue;
		if (n->state > RM_NODE_DOWN || n->svc_id >= RM_MAX_SERVICES ||
		    !new->svc[n->svc_id].in_use || !rm_name_valid(n->name) ||
		    n->weight < 1 || n->weight > RM_MAX_WEIGHT ||
		    n->health.state > RM_HEALTH_UNHEALTHY || n->health.out > 1)
			return rm_state_fail(-EINVAL, "node slot %u is invalid", i);
		if (quic_sid_check(new, i))
			return -EINVAL;
		/* unchanged nodes may sit on a vanished interface: only
		 * what this change writes must be reachable */
		if (!(flags & RM_APPLY_ALL) &&
		    !memcmp(n, &old->node[i], sizeof(*n)))
			continue;
		if (!if_indextoname(n->ifindex, ifname))
			return rm_state_fail(-ENODEV,
				    "node '%s': interface %s "
				    "(ifindex %u) is gone",
				    n->name, n->dev, n->ifindex);
	}
	return 0;
}

void rm_snap_rings_changed(const struct rm_snap *old, const struct rm_snap *new,
			   unsigned int flags, bool *dirty)
{
	bool all =
	    (flags & RM_APPLY_ALL) ||
	    memcmp(&old->cfg.seed, &new->cfg.seed, sizeof(new->cfg.seed));

	for (int i = 0; i < RM_MAX_SERVICES; i++)
		dirty[i] = all || !old->svc[i].in_use ||
			   old->svc[i].vnodes != new->svc[i].vnodes ||
			   memcmp(&old->svc[i].ring, &new->svc[i].ring,
				  sizeof(new->svc[i].ring));
	for (int i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *o = &old->node[i], *n = &new->node[i];
		bool oa = rm_node_in_ring(o);
		bool na = rm_node_in_ring(n);
		/* a ketama ring names its nodes by address */
		bool ketama = na && n->svc_id < RM_MAX_SERVICES &&
			      new->svc[n->svc_id].ring.scheme == RM_RING_KETAMA;

		if (oa == na &&
		    (!oa || (o->svc_id == n->svc_id && o->weight == n->weight &&
			     !strncmp(o->name, n->name, RM_NAME_MAX) &&
			     (!ketama || (o->addr_family == n->addr_family &&
					  !memcmp(o->addr, n->addr,
						  sizeof(o->addr)))))))
			continue;
		if (oa && o->svc_id < RM_MAX_SERVICES)
			dirty[o->svc_id] = true;
		if (na && n->svc_id < RM_MAX_SERVICES)
			dirty[n->svc_id] = true;
	}
	for (int i = 0; i < RM_MAX_SERVICES; i++)
		dirty[i] = dirty[i] && new->svc[i].in_use;
}

/* An inner array holding r, filled before anyone can see it: the
 * service's spare if it fits (state_spare.c), else a new one. */
static int ring_map_create(struct rm_state *st, const struct rm_ring *r,
			   __u32 svc)
{
	__u32 n = rm_ring_nslots(r);
	int spare = rm_spare_take(st, svc);
	char name[16];
	int fd;

	snprintf(name, sizeof(name), "rm_ring_%u", svc);
	fd = rm_ring_map_encode(r, name, spare);
	if (spare >= 0 && fd != spare)
		close(spare);
	if (fd < 0)
		return rm_state_fail(fd, "cannot create a ring map of %u slots: %s", n,
			    strerror(-fd));
	return fd;
}

void rm_plan_free(struct rm_plan *p)
{
	for (int i = 0; i < RM_MAX_SERVICES; i++) {
		if (p->fd[i] >= 0)
			close(p->fd[i]);
		if (p->spare[i] >= 0)
			close(p->spare[i]);
		p->fd[i] = -1;
		p->spare[i] = -1;
		rm_ring_free(&p->ring[i]);
		p->changed[i] = false;
	}
}

int rm_plan_maps(struct rm_state *st, struct rm_plan *p)
{
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		if (!p->changed[i] || p->fd[i] >= 0)
			continue;
		p->fd[i] = ring_map_create(st, &p->ring[i], i);
		if (p->fd[i] < 0) {
			int err = p->fd[i];

			rm_plan_free(p);
			return err;
		}
	}
	p->flags &= ~RM_APPLY_DRY_RUN;
	return 0;
}

int rm_plan_build(struct rm_state *st, const struct rm_snap *old,
		  const struct rm_snap *new, unsigned int flags,
		  struct rm_plan *p)
{
	int err;

	memset(p, 0, sizeof(*p));
	p->flags = flags;
	for (int i = 0; i < RM_MAX_SERVICES; i++)
		p->fd[i] = p->spare[i] = -1;
	err = validate(old, new, flags);
	if (err)
		return err;
	rm_snap_rings_changed(old, new, flags, p->changed);
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		if (!p->changed[i])
			continue;
		err = rm_snap_ring(new, i, &p->ring[i]);
		if (!err && !(flags & RM_APPLY_DRY_RUN)) {
			p->fd[i] = ring_map_create(st, &p->ring[i], i);
			err = p->fd[i] < 0 ? p->fd[i] : 0;
		}
		if (err) {
			rm_plan_free(p);
			return err;
		}
	}
	return 0;
}
