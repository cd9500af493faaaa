// SPDX-License-Identifier: GPL-2.0
/*
 * Editing a snapshot in memory: look services and nodes up, add and
 * remove them, and build a service's ring. Nothing here touches the maps.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include "state.h"
#include "netlink.h"
#include "state_int.h"
#include "util.h"

/* ---- editing a snapshot ---------------------------------------------- */

const char *rm_node_state_name(__u32 state)
{
	switch (state) {
	case RM_NODE_FREE:
		return "free";
	case RM_NODE_ACTIVE:
		return "active";
	case RM_NODE_DRAINING:
		return "draining";
	case RM_NODE_DOWN:
		return "down";
	default:
		return "?";
	}
}

int rm_snap_find_svc(const struct rm_snap *s, const char *name)
{
	for (int i = 0; i < RM_MAX_SERVICES; i++)
		if (s->svc[i].in_use &&
		    !strncmp(s->svc[i].name, name, RM_NAME_MAX))
			return i;
	return -1;
}

int rm_snap_find_node(const struct rm_snap *s, __u32 svc, const char *name)
{
	for (int i = 0; i < RM_MAX_NODES; i++)
		if (s->node[i].state != RM_NODE_FREE &&
		    s->node[i].svc_id == svc &&
		    !strncmp(s->node[i].name, name, RM_NAME_MAX))
			return i;
	return -1;
}

static void key_text(const struct rm_svc_key *k, char *out, size_t len)
{
	char addr[64];

	rm_format_svc_addr(k, addr, sizeof(addr));
	snprintf(out, len, "%s port %u/%s", addr, ntohs(k->port),
		 rm_proto_name(k->proto));
}

int rm_snap_svc_add(struct rm_snap *s, const struct rm_snap *base,
		    const struct rm_svc_meta *m)
{
	int id = -1, i;
	char kt[96];

	if (!rm_name_valid(m->name))
		return rm_state_fail(-EINVAL,
			    "service name '%.*s' is invalid: use "
			    "1-%d characters [A-Za-z0-9._-]",
			    RM_NAME_MAX, m->name, RM_NAME_MAX - 1);
	if (m->vnodes < 1 || m->vnodes > RM_MAX_VNODES)
		return rm_state_fail(-EINVAL, "--vnodes %u out of range 1-%u", m->vnodes,
			    RM_MAX_VNODES);
	if (rm_snap_find_svc(s, m->name) >= 0)
		return rm_state_fail(-EEXIST,
			    "service '%s' already exists (ringctl "
			    "service list shows it)",
			    m->name);
	for (i = 0; i < RM_MAX_SERVICES; i++)
		if (s->svc[i].in_use &&
		    !memcmp(&s->svc[i].key, &m->key, sizeof(m->key))) {
			key_text(&m->key, kt, sizeof(kt));
			return rm_state_fail(-EEXIST,
				    "service '%s' already serves %s: "
				    "delete it first",
				    s->svc[i].name, kt);
		}
	/* the same service as before keeps its id, so restoring an
	 * unchanged configuration changes nothing (a new --key of a keyed
	 * service is a change of its record, like its check) */
	i = rm_snap_find_svc(base, m->name);
	if (i >= 0 && !s->svc[i].in_use &&
	    !memcmp(&base->svc[i].key, &m->key, sizeof(m->key)) &&
	    base->svc[i].flags == m->flags)
		id = i;
	for (i = 0; i < RM_MAX_SERVICES && id < 0; i++)
		if (!s->svc[i].in_use && !base->svc[i].in_use)
			id = i;
	if (id < 0)
		return rm_state_fail(-ENOSPC,
			    "no free service slot (limit %d): delete "
			    "a service first",
			    RM_MAX_SERVICES);
	memset(&s->svc[id], 0, sizeof(s->svc[id]));
	rm_name_copy(s->svc[id].name, m->name, RM_NAME_MAX);
	s->svc[id].key = m->key;
	s->svc[id].flags = m->flags;
	s->svc[id].keyspec = m->keyspec;
	s->svc[id].ring = m->ring;
	s->svc[id].vnodes = m->vnodes;
	s->svc[id].in_use = 1;
	return id;
}

void rm_snap_node_del(struct rm_snap *s, __u32 slot)
{
	__u32 gen = s->node[slot].gen;

	/* gen survives, so the next owner of the slot gets a new one; the
	 * time, so it is not given away while a remembered ring may name
	 * it (node_slot) */
	memset(&s->node[slot], 0, sizeof(s->node[slot]));
	s->node[slot].gen = gen;
	s->node[slot].freed_ns = rm_mono_ns();
}

void rm_snap_svc_del(struct rm_snap *s, __u32 svc)
{
	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		if (s->node[i].state != RM_NODE_FREE &&
		    s->node[i].svc_id == svc)
			rm_snap_node_del(s, i);
	memset(&s->svc[svc], 0, sizeof(s->svc[svc]));
}

int rm_dev_info(const char *dev, __u32 *ifindex, __u8 mac[6])
{
	struct ifreq ifr;
	int fd, err = 0;

	if (!dev || !*dev || strlen(dev) >= IFNAMSIZ)
		return rm_state_fail(-EINVAL, "interface name '%s' is invalid",
			    dev ? dev : "");
	*ifindex = if_nametoindex(dev);
	if (!*ifindex)
		return rm_state_fail(-ENODEV,
			    "interface '%s' not found (`ip link` "
			    "lists them)",
			    dev);
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, dev, IFNAMSIZ - 1);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = rm_state_fail(-errno, "cannot read the MAC of '%s': %s", dev,
			   strerror(errno));
	else if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER &&
		 ifr.ifr_hwaddr.sa_family != ARPHRD_LOOPBACK)
		err = rm_state_fail(-EINVAL,
			   "interface '%s' is not Ethernet: nodes "
			   "are reached by MAC",
			   dev);
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (fd >= 0)
		close(fd);
	return err;
}

/* A free slot a remembered ring may still name: freed within the window
 * (rm_plan_apply() drops every generation when one is given away). */
static bool slot_remembered(const struct rm_node *n,
			    const struct rm_config *cfg, __u64 now)
{
	return n->freed_ns &&
	       now - n->freed_ns <= (__u64)cfg->handover_window_s * 1000000000ULL;
}

/* Checks every node shares, then a slot: the one base gave the same
 * node (restore), else one free before and after, never one this change
 * frees (the data plane may still be looking at it). */
static int node_slot(const struct rm_snap *s, const struct rm_snap *base,
		     __u32 svc, const char *name, __u32 weight)
{
	__u64 now = rm_mono_ns();
	int slot, i;

	if (svc >= RM_MAX_SERVICES || !s->svc[svc].in_use)
		return rm_state_fail(-ENOENT, "no such service id %u", svc);
	if (!rm_name_valid(name))
		return rm_state_fail(-EINVAL,
			    "node name '%s' is invalid: use 1-%d "
			    "characters [A-Za-z0-9._-]",
			    name, RM_NAME_MAX - 1);
	if (weight < 1 || weight > RM_MAX_WEIGHT)
		return rm_state_fail(-ERANGE, "weight %u out of range 1-%u", weight,
			    RM_MAX_WEIGHT);
	if (rm_snap_find_node(s, svc, name) >= 0)
		return rm_state_fail(-EEXIST,
			    "node '%s' already exists in service "
			    "'%s'",
			    name, s->svc[svc].name);
	slot = rm_snap_find_node(base, svc, name);
	if (slot >= 0 && s->node[slot].state != RM_NODE_FREE)
		slot = -1;
	/* second chance: not one a remembered ring may still name (freed
	 * within the handover window), while there are others */
	for (i = 0; i < RM_MAX_NODES && slot < 0; i++)
		if (s->node[i].state == RM_NODE_FREE &&
		    base->node[i].state == RM_NODE_FREE &&
		    !slot_remembered(&s->node[i], &s->cfg, now))
			slot = i;
	for (i = 0; i < RM_MAX_NODES && slot < 0; i++)
		if (s->node[i].state == RM_NODE_FREE &&
		    base->node[i].state == RM_NODE_FREE)
			slot = i;
	/* near the limit (a restore replacing thousands of nodes): the slot
	 * of a node this change deletes. A live ring may still name it, so
	 * rm_plan_apply() keeps the record parked until no ring does. */
	for (i = 0; i < RM_MAX_NODES && slot < 0; i++)
		if (s->node[i].state == RM_NODE_FREE)
			slot = i;
	if (slot < 0)
		return rm_state_fail(-ENOSPC,
			    "no free node slot (limit %d): delete a "
			    "node first",
			    RM_MAX_NODES);
	return slot;
}

bool rm_node_same_target(const struct rm_node *a, const struct rm_node *b)
{
	if (a->via != b->via || a->ifindex != b->ifindex)
		return false;
	if (a->via == RM_VIA_L2)
		return !memcmp(a->mac, b->mac, 6);
	return a->addr_family == b->addr_family &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr)) &&
	       a->gue_port == b->gue_port;
}

/* Fill slot with the node `how` describes: entries remembering (slot,
 * gen) keep reaching it only if base held the very same node there;
 * any other new owner gets a new gen. */
static void node_fill(struct rm_snap *s, const struct rm_snap *base,
		      int slot, __u32 svc, const char *name, __u32 weight,
		      const struct rm_node *how)
{
	struct rm_node *n = &s->node[slot];
	const struct rm_node *b = &base->node[slot];
	__u32 gen = n->gen > b->gen ? n->gen : b->gen;

	*n = *how;
	if (b->state != RM_NODE_FREE && rm_node_same_target(b, how)) {
		n->gen = b->gen;
		/* and its health: a restore does not put a failing node
		 * back in the ring behind the checker's back */
		if (b->svc_id == svc && !strncmp(b->name, name, RM_NAME_MAX)) {
			n->health = b->health;
			if (how->via == RM_VIA_L2) {
				memcpy(n->addr, b->addr, sizeof(n->addr));
				n->addr_family = b->addr_family;
			}
		}
	} else {
		n->gen = gen + 1;
	}
	n->state = RM_NODE_ACTIVE;
	n->svc_id = svc;
	n->weight = weight;
	rm_name_copy(n->name, name, sizeof(n->name));
}

int rm_snap_node_add(struct rm_snap *s, const struct rm_snap *base, __u32 svc,
		     const char *name, const __u8 mac[6], const char *dev,
		     __u32 weight)
{
	static const __u8 zero[6];
	struct rm_node how = {.via = RM_VIA_L2};
	int slot, err;

	slot = node_slot(s, base, svc, name, weight);
	if (slot < 0)
		return slot;
	if (!memcmp(mac, zero, 6) || (mac[0] & 1))
		return rm_state_fail(-EINVAL,
			    "MAC of node '%s' must be a unicast "
			    "address",
			    name);
	err = rm_dev_info(dev, &how.ifindex, how.src_mac);
	if (err)
		return err;
	memcpy(how.mac, mac, 6);
	rm_name_copy(how.dev, dev, sizeof(how.dev));
	node_fill(s, base, slot, svc, name, weight, &how);
	return slot;
}

/* The egress interface of an encapsulated node into how: dev if given,
 * else the interface of the kernel's route to the node now. */
static int encap_dev(const char *name, const char *dev, struct rm_node *how)
{
	char ifname[IF_NAMESIZE], a[64];
	struct rm_nexthop nh;
	int err;

	if (dev && *dev) {
		if (strlen(dev) >= RM_IFNAME_MAX)
			return rm_state_fail(-EINVAL, "interface name '%s' is invalid", dev);
		how->ifindex = if_nametoindex(dev);
		if (!how->ifindex)
			return rm_state_fail(-ENODEV,
				    "interface '%s' not found (`ip link` "
				    "lists them)",
				    dev);
		rm_name_copy(how->dev, dev, sizeof(how->dev));
		return 0;
	}
	err = rm_route_get((__u8)how->addr_family, how->addr, &nh);
	rm_format_addr(how->addr, (__u8)how->addr_family, a, sizeof(a));
	if (err)
		return rm_state_fail(err,
			    "node '%s': no route to %s (%s): add one, or "
			    "name the egress with --dev",
			    name, a, strerror(-err));
	if (!if_indextoname(nh.ifindex, ifname))
		return rm_state_fail(-errno, "node '%s': route to %s leaves "
			    "by ifindex %u, which has no name", name, a,
			    nh.ifindex);
	how->ifindex = nh.ifindex;
	rm_name_copy(how->dev, ifname, sizeof(how->dev));
	return 0;
}

int rm_snap_node_add_encap(struct rm_snap *s, const struct rm_snap *base,
			   __u32 svc, const char *name, const struct rm_via *v,
			   const char *dev, __u32 weight)
{
	struct rm_node how = {0};
	int slot, err;

	slot = node_slot(s, base, svc, name, weight);
	if (slot < 0)
		return slot;
	if (v->via != RM_VIA_IPIP && v->via != RM_VIA_GUE)
		return rm_state_fail(-EINVAL, "node '%s': unknown method %u", name,
			    v->via);
	if (v->family != RM_FAMILY_V4 && v->family != RM_FAMILY_V6)
		return rm_state_fail(-EINVAL, "node '%s': --via %s needs --addr",
			    name, rm_via_name(v->via));
	if (v->via == RM_VIA_GUE && !v->gue_port)
		return rm_state_fail(-EINVAL, "node '%s': GUE port 0", name);
	how.via = v->via;
	how.addr_family = v->family;
	how.gue_port = v->via == RM_VIA_GUE ? htons(v->gue_port) : 0;
	memcpy(how.addr, v->addr, sizeof(how.addr));
	err = encap_dev(name, dev, &how);
	if (err)
		return err;
	node_fill(s, base, slot, svc, name, weight, &how);
	return slot;
}

const char *rm_via_name(__u8 via)
{
	switch (via) {
	case RM_VIA_L2:
		return "l2";
	case RM_VIA_IPIP:
		return "ipip";
	case RM_VIA_GUE:
		return "gue";
	default:
		return "?";
	}
}

void rm_snap_node_health(struct rm_snap *s, __u32 slot,
			 const struct rm_node_health *h)
{
	struct rm_node *n = &s->node[slot];

	/* leaving for health is going down: entries remembering (slot, gen)
	 * go stale, even those of a draining node (its server is gone) */
	if (h->out && !n->health.out && n->state != RM_NODE_DOWN)
		n->gen++;
	n->health = *h;
}

void rm_snap_node_state(struct rm_snap *s, __u32 slot, __u32 state)
{
	/* anything remembering (slot, gen) must see the node went away */
	if (state == RM_NODE_DOWN && s->node[slot].state != RM_NODE_DOWN)
		s->node[slot].gen++;
	s->node[slot].state = state;
}

static const char *ring_err(int err)
{
	switch (err) {
	case -E2BIG:
		return "ring too large (nodes x weight x vnodes over the "
		       "limit): lower the weights or the service's --vnodes";
	case -EEXIST:
		return "duplicate node name";
	case -ERANGE:
		return "weight out of range";
	case -EINVAL:
		return "bad node name or vnode count";
	default:
		return strerror(-err);
	}
}

/* A node's name in a ketama ring: its --addr (else its name) and the
 * service's port, as a libmemcached client configured with that server
 * names it. */
static void ketama_host(const struct rm_snap *s, const struct rm_node *nd,
			struct rm_node_spec *spec)
{
	char addr[64];

	if (nd->addr_family)
		rm_format_addr(nd->addr, (__u8)nd->addr_family, addr,
			       sizeof(addr));
	else
		rm_name_copy(addr, nd->name, RM_NAME_MAX);
	rm_ketama_host(addr, ntohs(s->svc[nd->svc_id].key.port), spec->host,
		       sizeof(spec->host));
}

int rm_snap_ring(const struct rm_snap *s, __u32 svc, struct rm_ring *r)
{
	return rm_snap_ring_near(s, svc, NULL, r);
}

static bool in_svc_ring(const struct rm_node *nd, __u32 svc)
{
	return rm_node_in_ring(nd) && nd->svc_id == svc;
}

/* The ring's input: service svc's nodes in the ring (ids = slots). */
static __u32 snap_specs(const struct rm_snap *s, __u32 svc,
			struct rm_node_spec *specs)
{
	__u32 n = 0;

	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *nd = &s->node[i];

		if (!in_svc_ring(nd, svc))
			continue;
		rm_name_copy(specs[n].name, nd->name, RM_NAME_MAX);
		specs[n].weight = nd->weight;
		specs[n].id = i;
		ketama_host(s, nd, &specs[n]);
		n++;
	}
	return n;
}

/* Room for service svc's ring nodes: as many as it has (a read of a
 * 100-node ring needs 10 kB, not the 430 kB of RM_MAX_NODES, which malloc
 * would map and unmap afresh); free with rm_scratch_free(). */
static struct rm_node_spec *snap_specs_alloc(const struct rm_snap *s,
					     __u32 svc)
{
	__u32 n = 0;

	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		n += in_svc_ring(&s->node[i], svc);
	return rm_scratch_alloc((n ? n : 1) * sizeof(struct rm_node_spec));
}

int rm_snap_ring_plan(const struct rm_snap *s, __u32 svc, struct rm_ring *r)
{
	struct rm_node_spec *specs = snap_specs_alloc(s, svc);
	int err;

	memset(r, 0, sizeof(*r));
	if (!specs)
		return -ENOMEM;
	err = rm_ring_plan(&s->cfg.seed, &s->svc[svc].ring, specs,
			   snap_specs(s, svc, specs), s->svc[svc].vnodes, r);
	rm_scratch_free(specs);
	return err;
}

int rm_snap_ring_near(const struct rm_snap *s, __u32 svc,
		      const struct rm_ring *near, struct rm_ring *r)
{
	struct rm_node_spec *specs;
	__u32 n;
	int err;

	specs = snap_specs_alloc(s, svc);
	if (!specs)
		return rm_state_fail(-ENOMEM, "out of memory");
	n = snap_specs(s, svc, specs);
	err = rm_ring_build_near(&s->cfg.seed, &s->svc[svc].ring, specs, n,
				 s->svc[svc].vnodes, near, r);
	if (err == -E2BIG && s->svc[svc].ring.scheme != RM_RING_RINGMASTER) {
		rm_scratch_free(specs);
		return rm_state_fail(err,
				     "service '%s': %u nodes make more than "
				     "the %u points one ring holds with "
				     "--ring %s: fewer nodes%s",
				     s->svc[svc].name, n, RM_MAX_RING_ENTRIES,
				     s->svc[svc].ring.scheme == RM_RING_KETAMA
					 ? "ketama"
					 : "md5-vnodes",
				     s->svc[svc].ring.scheme == RM_RING_KETAMA
					 ? ""
					 : ", lower weights or a lower COUNT");
	}
	if (err == -E2BIG) {
		char why[256];

		rm_ring_too_big(specs, n, s->svc[svc].vnodes, why, sizeof(why));
		rm_scratch_free(specs);
		return rm_state_fail(err,
				     "service '%s': %s; a service's vnodes "
				     "are set by service add --vnodes",
				     s->svc[svc].name, why);
	}
	rm_scratch_free(specs);
	if (err)
		return rm_state_fail(err, "service '%s': %s", s->svc[svc].name,
			    ring_err(err));
	return 0;
}
