// SPDX-License-Identifier: GPL-2.0
/*
 * ringctl doctor [IFACE] [--interval S] [--json]: what makes a director
 * fail silently, checked one by one; each finding says what is wrong and
 * what to do. Exit 0 when nothing was found, 1 when something was.
 */
#include <errno.h>
#include <math.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include "cmd_live.h"
#include "counters.h"
#include "doctor.h"
#include "json.h"
#include "xdp_chain.h"

#define MAX_FINDINGS 256
#define CONN_FULL 0.9 /* a table this full evicts live flows soon */
#define DEFAULT_INTERVAL_S 1.0

struct finding {
	const char *check;
	char subject[80];
	char problem[300];
	char fix[320];
};

struct doctor {
	struct ctl_opts *o;
	struct live lv;
	bool have_state;
	double interval;
	struct rm_iface ifaces[RM_MAX_IFACES]; /* the ones checked */
	int n_ifaces;
	struct finding f[MAX_FINDINGS];
	int n;
	const char *check; /* the one running */
	int check_findings;
	char note[512]; /* what an ok check saw, shown beside "ok" */
	struct rm_json j;
};

static void __attribute__((format(printf, 4, 5)))
find(struct doctor *d, const char *subject, const char *fix, const char *fmt,
     ...)
{
	struct finding *f;
	va_list ap;

	d->check_findings++;
	if (d->n >= MAX_FINDINGS)
		return;
	f = &d->f[d->n++];
	f->check = d->check;
	snprintf(f->subject, sizeof(f->subject), "%s", subject);
	snprintf(f->fix, sizeof(f->fix), "%s", fix);
	va_start(ap, fmt);
	vsnprintf(f->problem, sizeof(f->problem), fmt, ap);
	va_end(ap);
}

/* ---- the program and its state --------------------------------------- */

static void check_state(struct doctor *d)
{
	struct ctl_opts *o = d->o;

	d->lv.old = live_snap_alloc();
	d->lv.new = NULL;
	if (!d->lv.old || rm_state_open(&d->lv.st, o->pin_dir, RM_LOCK_NONE) ||
	    rm_state_read(&d->lv.st, d->lv.old)) {
		find(d, o->pin_dir,
		     "ringload attach IFACE creates it (or pass --pin-dir)",
		     "no usable state: %s",
		     d->lv.old ? rm_errmsg() : "out of memory");
		return;
	}
	d->have_state = true;
}

static int ifaces_registry(struct doctor *d, struct rm_iface *all)
{
	char path[RM_PATH_MAX + RM_NAME_MAX];
	int fd, err = 0;

	memset(all, 0, sizeof(*all) * RM_MAX_IFACES);
	snprintf(path, sizeof(path), "%s/%s", d->o->pin_dir, RM_MAP_IFACES);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	for (__u32 i = 0; i < RM_MAX_IFACES && !err; i++)
		if (bpf_map_lookup_elem(fd, &i, &all[i]))
			err = -errno;
	close(fd);
	return err;
}

/* The interfaces to look at: IFACE, or every one ringload recorded. */
static void check_attached(struct doctor *d)
{
	struct rm_iface all[RM_MAX_IFACES];
	const char *want = d->o->argc ? d->o->argv[0] : NULL;
	int err = ifaces_registry(d, all);

	for (int i = 0; !err && i < RM_MAX_IFACES; i++)
		if (all[i].ifindex &&
		    (!want || !strncmp(all[i].name, want, RM_IFNAME_MAX)))
			d->ifaces[d->n_ifaces++] = all[i];
	if (want && !d->n_ifaces) {
		/* not recorded: still look at what it runs */
		snprintf(d->ifaces[0].name, RM_IFNAME_MAX, "%s", want);
		d->ifaces[0].ifindex = if_nametoindex(want);
		d->n_ifaces = 1;
	}
	if (!d->n_ifaces) {
		find(d, d->o->pin_dir, "ringload attach IFACE",
		     "the director is attached to no interface");
		return;
	}
	for (int i = 0; i < d->n_ifaces; i++) {
		struct rm_iface *f = &d->ifaces[i];
		struct bpf_xdp_query_opts q = {.sz = sizeof(q)};
		char name[BPF_OBJ_NAME_LEN];
		__u32 id;

		if (!f->ifindex || if_nametoindex(f->name) != f->ifindex) {
			find(d, f->name, "ringload attach IFACE again",
			     "interface gone (or replaced) since it was "
			     "attached");
			f->ifindex = 0;
			continue;
		}
		if (bpf_xdp_query(f->ifindex, 0, &q) || !q.attach_mode) {
			find(d, f->name, "ringload attach IFACE",
			     "no XDP program attached: packets go to the "
			     "kernel's stack unbalanced");
			f->mode = XDP_ATTACHED_NONE;
			continue;
		}
		f->mode = q.attach_mode;
		id = q.attach_mode == XDP_ATTACHED_SKB ? q.skb_prog_id
		     : q.attach_mode == XDP_ATTACHED_MULTI ? q.drv_prog_id
							 : q.prog_id;
		rm_prog_name(id, name, sizeof(name));
		if (strcmp(name, RM_PROG_NAME) && strcmp(name, "xdp_dispatcher") &&
		    strcmp(name, RM_ROOT_PROG_NAME))
			find(d, f->name,
			     "ringload detach IFACE; detach the other program; "
			     "ringload attach IFACE",
			     "runs XDP program '%s' (id %u), not %s", name, id,
			     RM_PROG_NAME);
	}
}

/* An interface shared through the chain (ringload attach --chain): the
 * director is in it, and every program before it hands packets on. */
static void check_chain(struct doctor *d)
{
	size_t len = 0;

	for (int i = 0; i < d->n_ifaces; i++) {
		struct rm_iface *f = &d->ifaces[i];
		struct rm_xdp_chain c;
		int slot;

		if (!f->ifindex || rm_xdp_chain_read(f->ifindex, &c) ||
		    !c.root_id) {
			rm_xdp_chain_close(&c);
			continue;
		}
		len += snprintf(d->note + len, sizeof(d->note) - len,
				"%s%s:", len ? "; " : "", f->name);
		for (int s = 0; s < RM_CHAIN_SLOTS && len < sizeof(d->note);
		     s++)
			if (c.ids[s])
				len += snprintf(d->note + len,
						sizeof(d->note) - len,
						" slot %d %s (id %u)", s,
						c.names[s], c.ids[s]);
		slot = rm_xdp_chain_find(&c, RM_PROG_NAME, 0);
		if (slot < 0)
			find(d, f->name,
			     "ringload attach IFACE --chain --slot N",
			     "the chain's root runs, but the director is in "
			     "none of its slots: every packet goes to the "
			     "other programs");
		for (int s = 0; s < slot; s++)
			if (c.ids[s] && !rm_prog_uses_chain(c.ids[s]))
				find(d, f->name,
				     "ringload chain del IFACE --slot N; add it "
				     "back after the director's slot",
				     "'%s' in slot %d is before the director "
				     "(slot %d) and does not hand packets on "
				     "(no rm_chain, see rm_chain.h): the "
				     "director sees none it passes",
				     c.names[s], s, slot);
		rm_xdp_chain_close(&c);
		if (len >= sizeof(d->note))
			len = sizeof(d->note) - 1;
	}
}

static void check_mode(struct doctor *d)
{
	for (int i = 0; i < d->n_ifaces; i++)
		if (d->ifaces[i].ifindex &&
		    d->ifaces[i].mode == XDP_ATTACHED_SKB)
			find(d, d->ifaces[i].name,
			     "ringload detach IFACE; ringload attach IFACE "
			     "--mode native (needs a driver with XDP)",
			     "generic (skb) XDP mode: every packet gets an skb "
			     "allocated before the program runs, several times "
			     "the cost of native mode");
}

/* A veth sender leaves TCP/UDP checksums to offload; once the frame is
 * redirected nobody completes them and the node drops it silently. */
static void check_checksum(struct doctor *d)
{
	for (int i = 0; i < d->n_ifaces; i++) {
		struct veth_peer p;
		char fix[320];

		if (!d->ifaces[i].ifindex)
			continue;
		net_veth_peer(d->ifaces[i].ifindex, &p);
		if (!p.found || !p.tx_csum)
			continue;
		snprintf(fix, sizeof(fix), "%s%s%sethtool -K %s tx off",
			 p.ns[0] ? "ip netns exec " : "", p.ns,
			 p.ns[0] ? " " : "", p.name);
		find(d, d->ifaces[i].name, fix,
		     "veth peer %s%s%s sends with TX checksum offload: "
		     "redirected TCP/UDP arrives with partial checksums and "
		     "the nodes drop it silently",
		     p.name, p.ns[0] ? " in netns " : "", p.ns);
	}
}

/* ---- nodes ------------------------------------------------------------ */

static bool attached_on(struct doctor *d, __u32 ifindex)
{
	for (int i = 0; i < d->n_ifaces; i++)
		if (d->ifaces[i].ifindex == ifindex)
			return true;
	return false;
}

static void node_subject(struct doctor *d, __u32 slot, char *out, size_t len)
{
	const struct rm_node *n = &d->lv.old->node[slot];

	snprintf(out, len, "%s/%s", d->lv.old->svc[n->svc_id].name, n->name);
}

static unsigned int ingress_mtu(struct doctor *d)
{
	unsigned int mtu = 0;

	for (int i = 0; i < d->n_ifaces; i++) {
		struct net_link l;

		net_link(d->ifaces[i].ifindex, &l);
		if (l.exists && l.mtu > mtu)
			mtu = l.mtu;
	}
	return mtu;
}

static void check_node(struct doctor *d, __u32 slot, unsigned int in_mtu)
{
	const struct rm_node *n = &d->lv.old->node[slot];
	struct bpf_devmap_val v;
	struct veth_peer p;
	struct net_link l;
	char subj[80], fix[320];
	bool has_mac;
	int complete;

	node_subject(d, slot, subj, sizeof(subj));
	net_link(n->ifindex, &l);
	if (!l.exists) {
		find(d, subj, "ringctl node del and add it again with --dev",
		     "egress interface %s (ifindex %u) no longer exists",
		     n->dev, n->ifindex);
		return;
	}
	if (!l.up || !l.running) {
		snprintf(fix, sizeof(fix), "ip link set %s up (and its peer)",
			 l.name);
		find(d, subj, fix, "egress interface %s is %s", l.name,
		     !l.up ? "down" : "up but has no carrier");
	}
	if (!attached_on(d, n->ifindex) &&
	    (d->lv.st.tx_vsize > sizeof(v) ||
	     bpf_map_lookup_elem(d->lv.st.fd[RM_M_TX_PORTS], &n->ifindex,
				 &v)))
		find(d, subj,
		     "ringctl save | ringctl restore - (rewrites the devmap)",
		     "egress interface %s is missing from %s: every packet "
		     "for the node is dropped (redirect-failed)",
		     l.name, RM_MAP_NAME(TX_PORTS));
	if (in_mtu && l.mtu &&
	    l.mtu + 0u < in_mtu + RM_DOCTOR_ENCAP_OVERHEAD) {
		snprintf(fix, sizeof(fix), "ip link set %s mtu %u", l.name,
			 in_mtu + RM_DOCTOR_ENCAP_OVERHEAD);
		find(d, subj, fix,
		     "egress MTU %u is below the ingress MTU %u plus %u bytes "
		     "of encapsulation: full-size frames are dropped",
		     l.mtu, in_mtu, RM_DOCTOR_ENCAP_OVERHEAD);
	}
	net_veth_peer(n->ifindex, &p);
	if (p.found && !p.gro && !p.xdp) {
		snprintf(fix, sizeof(fix), "%s%s%sethtool -K %s gro on",
			 p.ns[0] ? "ip netns exec " : "", p.ns,
			 p.ns[0] ? " " : "", p.name);
		find(d, subj, fix,
		     "veth peer %s has neither GRO nor an XDP program: frames "
		     "redirected into %s are dropped",
		     p.name, l.name);
	}
	net_neigh_mac(l.name, n->mac, &complete, &has_mac);
	if (complete && !has_mac) {
		char mac[18];

		rm_format_mac(n->mac, mac);
		find(d, subj,
		     "check the node's MAC (`ip neigh show dev DEV`), then "
		     "ringctl node del/add with --mac",
		     "MAC %s is not among the %d neighbour(s) on %s: a wrong "
		     "MAC sends every packet into the void",
		     mac, complete, l.name);
	}
}

static void check_nodes(struct doctor *d)
{
	unsigned int mtu = ingress_mtu(d);

	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		if (d->lv.old->node[i].state != RM_NODE_FREE &&
		    d->lv.old->node[i].state != RM_NODE_DOWN)
			check_node(d, i, mtu);
}

/* With direct server return, replies and other traffic of the nodes
 * enter the director on the nodes' interfaces with sources routed out of
 * another one: strict rp_filter drops them. */
static void check_rp_filter(struct doctor *d)
{
	char seen[RM_MAX_NODES / 8] = {0}, fix[160];

	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &d->lv.old->node[i];
		int rp;

		if (n->state == RM_NODE_FREE || n->ifindex >= sizeof(seen) * 8 ||
		    seen[n->ifindex / 8] & (1 << n->ifindex % 8))
			continue;
		seen[n->ifindex / 8] |= 1 << n->ifindex % 8;
		rp = net_rp_filter(n->dev);
		if (rp != 1)
			continue;
		snprintf(fix, sizeof(fix),
			 "sysctl -w net.ipv4.conf.all.rp_filter=0 "
			 "net.ipv4.conf.%s.rp_filter=0 (or 2, loose)",
			 n->dev);
		find(d, n->dev, fix,
		     "strict rp_filter: replies routed back through the "
		     "director from the nodes are dropped");
	}
}

/* ---- counters, seed, table, rings -------------------------------------- */

/* Counters that mean packets lost or turned away, and what usually
 * causes them. Any other drop (rm_counter_is_drop) counts too. */
static const struct {
	int id;
	const char *cause;
} hints[] = {
    {RM_CNT_DROP_NO_NODE, "a service has no active node, or the seed is "
			  "not set: ringctl show, ringctl seed"},
    {RM_CNT_REDIRECT_FAILED, "a node's egress interface is down or missing "
			     "from rm_tx_ports: see the node findings"},
    {RM_CNT_DROP_MALFORMED, "malformed or truncated packets to a VIP"},
    {RM_CNT_DROP_FRAGMENT, "IP fragments to a 5-tuple service: use "
			   "--hash 3tuple for services that see fragments"},
    {RM_CNT_CONN_INSERT_LIMITED,
     "new flows above ringctl config --conn-insert-rate"},
    {RM_CNT_FIB_NO_NEIGH, "a routed node's next hop has no neighbour entry: "
			  "is ringload neighd running?"},
    {RM_CNT_ENCAP_NO_SRC, "no outer source address for the family: "
			  "ringctl config --encap-src4/--encap-src6"},
};

static const char *drop_cause(int id)
{
	for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
		if (hints[i].id == id)
			return hints[i].cause;
	if (rm_counter_is_drop(id))
		return "see the counter's description in rm_common.h";
	return NULL;
}

static void check_counters(struct doctor *d)
{
	__u64 a[RM_CNT_MAX], b[RM_CNT_MAX];
	struct timespec ts = {
	    .tv_sec = (time_t)d->interval,
	    .tv_nsec = (long)((d->interval - floor(d->interval)) * 1e9)};
	char subj[48];

	if (rm_state_counters(&d->lv.st, a)) {
		find(d, "rm_counters", "ringload status", "cannot read: %s",
		     rm_errmsg());
		return;
	}
	nanosleep(&ts, NULL);
	if (rm_state_counters(&d->lv.st, b))
		return;
	for (int i = 0; i < RM_CNT_MAX; i++) {
		const char *cause = drop_cause(i);

		if (!cause || b[i] <= a[i])
			continue;
		snprintf(subj, sizeof(subj), "%s", rm_counter_names[i]);
		find(d, subj, cause, "%llu in the last %.1f s",
		     (unsigned long long)(b[i] - a[i]), d->interval);
	}
}

static void check_seed(struct doctor *d)
{
	if (!(d->lv.old->cfg.flags & RM_CFG_SEEDED))
		find(d, RM_MAP_NAME(CONFIG), "ringctl seed --set HEX (the same on "
				       "every director of a fleet)",
		     "no hash seed: every VIP packet is dropped");
}

static void check_conn_table(struct doctor *d)
{
	struct rm_conn_count *c = malloc(sizeof(*c));
	__u32 per_cpu;

	if (!c || rm_state_conn_count(&d->lv.st, d->lv.old, c)) {
		find(d, RM_MAP_NAME(CONNS), "ringload status", "cannot read: %s",
		     c ? rm_errmsg() : "out of memory");
		free(c);
		return;
	}
	/* per-CPU LRU lists: each CPU evicts once its own max / ncpus
	 * entries are used, whatever the others hold (bpf/maps.h) */
	per_cpu = c->max_entries / (d->lv.st.ncpus > 0 ? d->lv.st.ncpus : 1);
	if (per_cpu && c->entries >= CONN_FULL * per_cpu)
		find(d, RM_MAP_NAME(CONNS),
		     "a bigger table: ringctl save; ringload detach --purge; "
		     "ringload attach --conn-table N; ringctl restore -",
		     "%llu of %u entries in use, one CPU's share (%u of %d "
		     "CPUs) or more: a CPU whose share is full evicts live "
		     "flows for new ones",
		     (unsigned long long)c->entries, c->max_entries, per_cpu,
		     d->lv.st.ncpus);
	free(c);
}

static void check_rings(struct doctor *d)
{
	char fix[120];

	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		const struct rm_svc_meta *m = &d->lv.old->svc[i];
		struct rm_slot *slots = NULL;
		__u32 n = 0;

		if (!m->in_use)
			continue;
		if (!rm_state_ring_slots(&d->lv.st, i, &slots, &n) && n &&
		    slots[0].a)
			n = slots[0].a; /* header: entries */
		else
			n = 0;
		free(slots);
		if (n)
			continue;
		snprintf(fix, sizeof(fix),
			 "ringctl node add %s NODE ... or node set %s NODE "
			 "--active",
			 m->name, m->name);
		find(d, m->name, fix,
		     "empty ring (no node active and healthy: ringctl show %s "
		     "says which are out and why): its new flows are dropped",
		     m->name);
	}
}

/* Second chance is a property of the setup, not a fault: the services
 * it does not cover are named in the check's note (exit status unmoved),
 * so an operator moving to GUE nodes sees what is left. */
static void check_second_chance(struct doctor *d)
{
	char nodes[256], one[400];
	size_t at = 0;
	int cover, n = 0;

	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		const char *why;
		int w;

		if (!d->lv.old->svc[i].in_use)
			continue;
		why = hops_coverage(d->lv.old, i, nodes, sizeof(nodes), &cover);
		if (!why)
			continue;
		snprintf(one, sizeof(one), "%s %s (%s%s%s)",
			 d->lv.old->svc[i].name,
			 cover == HOPS_PARTIAL ? "partly" : "not covered", why,
			 nodes[0] ? ": " : "", nodes);
		w = snprintf(d->note + at, sizeof(d->note) - at, "%s%s",
			     n++ ? "; " : "", one);
		if (w > 0 && (size_t)w < sizeof(d->note) - at)
			at += w;
	}
	if (!n)
		snprintf(d->note, sizeof(d->note),
			 "every service's flows can carry hop lists");
}

/* ---- the run ---------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(struct doctor *d);
	bool needs_state;
} checks[] = {
    {"state", check_state, false},
    {"attached", check_attached, true},
    {"chain", check_chain, true},
    {"xdp-mode", check_mode, true},
    {"checksum", check_checksum, true},
    {"nodes", check_nodes, true},
    {"rp-filter", check_rp_filter, true},
    {"counters", check_counters, true},
    {"seed", check_seed, true},
    {"conn-table", check_conn_table, true},
    {"rings", check_rings, true},
    {"second-chance", check_second_chance, true},
};
#define N_CHECKS (sizeof(checks) / sizeof(checks[0]))

static void report_check(struct doctor *d, int first, bool skipped)
{
	const char *name = d->check;

	if (!d->o->json) {
		if (skipped)
			printf("  skip %-11s (no state)\n", name);
		else if (!d->check_findings)
			printf("  ok   %s%s%s\n", name, d->note[0] ? ": " : "",
			       d->note);
		for (int i = first; i < d->n; i++)
			printf("  FAIL %-11s %s: %s\n       fix: %s\n", name,
			       d->f[i].subject, d->f[i].problem, d->f[i].fix);
		return;
	}
	rm_json_obj_open(&d->j, NULL);
	rm_json_str(&d->j, "check", name);
	rm_json_str(&d->j, "result",
		    skipped ? "skipped" : d->check_findings ? "findings" : "ok");
	if (d->note[0])
		rm_json_str(&d->j, "note", d->note);
	rm_json_arr_open(&d->j, "findings");
	for (int i = first; i < d->n; i++) {
		rm_json_obj_open(&d->j, NULL);
		rm_json_str(&d->j, "subject", d->f[i].subject);
		rm_json_str(&d->j, "problem", d->f[i].problem);
		rm_json_str(&d->j, "fix", d->f[i].fix);
		rm_json_obj_close(&d->j);
	}
	rm_json_arr_close(&d->j);
	rm_json_obj_close(&d->j);
}

int cmd_doctor(struct ctl_opts *o)
{
	struct doctor *d = calloc(1, sizeof(*d));
	int total, ret;

	if (!d)
		return ctl_runtime_error("out of memory");
	if (o->argc > 1) {
		free(d);
		return ctl_usage_error("doctor: expected at most one IFACE");
	}
	d->o = o;
	ret = live_interval("doctor", o->interval, 0, 60000,
			    DEFAULT_INTERVAL_S, &d->interval);
	if (ret) {
		free(d);
		return ret;
	}
	d->lv.st.lock_fd = -1;
	for (int i = 0; i < RM_M_NR; i++)
		d->lv.st.fd[i] = -1;
	if (o->json) {
		rm_json_init(&d->j, stdout);
		rm_json_obj_open(&d->j, NULL);
		rm_json_str(&d->j, "pin_dir", o->pin_dir);
		rm_json_arr_open(&d->j, "checks");
	} else {
		printf("checking %s%s%s\n", o->pin_dir,
		       o->argc ? ", interface " : "", o->argc ? o->argv[0] : "");
	}
	for (size_t i = 0; i < N_CHECKS; i++) {
		int first = d->n;
		bool skip = checks[i].needs_state && !d->have_state;

		d->check = checks[i].name;
		d->check_findings = 0;
		d->note[0] = '\0';
		if (!skip)
			checks[i].fn(d);
		report_check(d, first, skip);
	}
	total = d->n;
	if (o->json) {
		rm_json_arr_close(&d->j);
		rm_json_u64(&d->j, "findings", total);
		rm_json_bool(&d->j, "healthy", !total);
		rm_json_obj_close(&d->j);
		rm_json_end(&d->j);
	} else {
		printf("%s: %d finding%s\n", total ? "UNHEALTHY" : "healthy",
		       total, total == 1 ? "" : "s");
	}
	/* the one line on stderr says why the exit status is 1 */
	ret = total ? ctl_runtime_error("doctor: %d finding%s",
					total, total == 1 ? "" : "s")
		    : RM_EXIT_OK;
	rm_state_close(&d->lv.st);
	live_snap_free(d->lv.old);
	free(d);
	return ret;
}
