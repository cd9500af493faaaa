// SPDX-License-Identifier: GPL-2.0
/*
 * ringload neighd: keeps routed (ipip/gue) nodes' next hops where the
 * data plane reads them.
 *
 * Records: for every active or draining encapsulated node, the next hop
 * as the kernel's bpf_fib_lookup answers it for a packet entering the
 * director's first attached interface (user/lib/nexthop.c: egress
 * interface, both MACs, the MTU, whether the route is ECMP) goes into
 * the node's rm_nexthops record, which the data plane uses instead of a
 * lookup per packet (rm_encap.h). A record is rewritten at once when a
 * route, neighbour, link or nexthop event of the kernel changes it, and
 * at least every round, as each expires after RM_NH_TTL_ROUNDS rounds
 * (5 s at least): if neighd stops, the data plane falls back to
 * bpf_fib_lookup.
 *
 * Neighbours: bpf_fib_lookup reads the neighbour table but cannot make
 * the kernel resolve an entry; while it is missing, the record is not
 * valid and the data plane's own lookup drops and counts (fib-no-neigh).
 * So every round (--interval, default 1 s), and at once after an event
 * that left a node unresolved, the next hop's entry is "used"
 * (RTM_NEWNEIGH with NTF_USE): the kernel resolves a missing, failed or
 * stale entry as if a packet were going out, and leaves a valid one
 * alone; its answer is an event, which fills the record. Every round
 * also puts the egress interface into rm_tx_ports (routes move without
 * ringctl).
 *
 * --fib-only writes no records (clears any): every packet then asks
 * bpf_fib_lookup, which sees its TOS, ports and ingress interface.
 *
 * One log line per change of a node's next hop or its error; exits 0 on
 * SIGTERM or SIGINT.
 */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "netlink.h"
#include "nexthop.h"
#include "ringload.h"

/* A record outlives this many rounds without a rewrite, and at least
 * RM_NH_TTL_MIN_MS: a neighd held up for a moment on a busy machine
 * must not send every packet to the fallback. */
#ifndef RM_NH_TTL_ROUNDS
#define RM_NH_TTL_ROUNDS 5
#endif
#ifndef RM_NH_TTL_MIN_MS
#define RM_NH_TTL_MIN_MS 5000
#endif
/* After an event, wait this long for the rest of its burst. */
#define NEIGHD_SETTLE_MS 10

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* What was last seen and written for a node slot. */
struct seen {
	__u32 gen; /* node generation it was for, + 1 (0: never seen) */
	int rc;	   /* BPF_FIB_LKUP_RET_*, or -errno */
	struct rm_nexthop gw;
	struct rm_nh rec; /* as written; flags 0: nothing valid written */
};

struct neighd {
	struct rm_state st;
	struct rm_snap *s;
	struct seen *seen;
	struct rm_nh_resolver *res;
	int ifaces_fd, nh_fd;
	__u64 ttl_ns;
	bool fib_only; /* --fib-only: records stay empty */
};

/* One line per change, naming the node as ringctl does (service, node):
 * a node name may recur across services, with the same address too. */
static void log_change(const struct rm_snap *s, const struct rm_node *n,
		       const struct seen *x)
{
	char a[64], g[64], dev[IF_NAMESIZE] = "?";
	const char *svc = n->svc_id < RM_MAX_SERVICES ? s->svc[n->svc_id].name
						      : "?";
	const __u8 *m = x->rec.dmac;

	rm_format_addr(n->addr, n->addr_family, a, sizeof(a));
	if (x->rc < 0 || !x->gw.ifindex) {
		printf("neighd: node %s %s (%s): no route: %s\n", svc, n->name, a,
		       x->rc < 0 ? strerror(-x->rc) : rm_fib_rc_name(x->rc));
	} else {
		rm_format_addr(x->gw.addr, x->gw.family, g, sizeof(g));
		if_indextoname(x->gw.ifindex, dev);
		if (!(x->rec.flags & RM_NH_F_VALID))
			printf("neighd: node %s %s (%s): next hop %s dev %s: %s\n",
			       svc, n->name, a, g, dev,
			       x->rc == BPF_FIB_LKUP_RET_SUCCESS
				   ? "no record (--fib-only)"
				   : rm_fib_rc_name(x->rc));
		else
			printf("neighd: node %s %s (%s): next hop %s dev %s "
			       "lladdr %02x:%02x:%02x:%02x:%02x:%02x mtu %u%s\n",
			       svc, n->name, a, g, dev, m[0], m[1], m[2], m[3], m[4],
			       m[5], x->rec.mtu,
			       x->rec.flags & RM_NH_F_ECMP
				   ? " (ecmp: bpf_fib_lookup per packet)"
				   : "");
	}
	fflush(stdout);
}

/* The director's first attached interface: what the data plane's
 * lookups give as the packet's ingress. 0 if none. */
static __u32 ingress_ifindex(struct neighd *d)
{
	struct rm_iface all[RM_MAX_IFACES];

	if (d->ifaces_fd < 0)
		d->ifaces_fd = ifaces_open(d->st.pin_dir, false);
	if (d->ifaces_fd < 0 || ifaces_read(d->ifaces_fd, all))
		return 0;
	for (int i = 0; i < RM_MAX_IFACES; i++)
		if (all[i].ifindex)
			return all[i].ifindex;
	return 0;
}

static bool routed(const struct rm_node *n)
{
	return n->via != RM_VIA_L2 &&
	       (n->state == RM_NODE_ACTIVE || n->state == RM_NODE_DRAINING);
}

/* One pass over the nodes. round: a periodic one (state re-read,
 * every neighbour used, every record refreshed); else after events.
 * 0, or -errno when the state cannot be read. */
static int pass(struct neighd *d, bool round)
{
	__u32 in_if;
	__u64 now = rm_nh_now();
	int err;

	if (round) {
		err = rm_state_read(&d->st, d->s);
		if (err)
			return err;
	}
	in_if = ingress_ifindex(d);
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &d->s->node[i];
		struct seen *x = &d->seen[i], was = *x;
		struct rm_nh rec = {0};
		int rc = -ENODEV;

		if (!routed(n)) {
			/* a record no node uses any more goes */
			if (x->rec.flags && rm_nh_write(d->nh_fd, i, &rec) == 0)
				x->rec = rec;
			x->gen = 0;
			continue;
		}
		err = in_if ? rm_nh_resolve(d->res, in_if, &d->s->cfg, n,
					    d->ttl_ns, &rec, &x->gw, &rc)
			    : -ENODEV;
		x->rc = err ? err : rc;
		if (d->fib_only)
			memset(&rec, 0, sizeof(rec));
		/* the port before the record that sends packets to it */
		if (!err && x->gw.ifindex &&
		    (round || x->gw.ifindex != was.gw.ifindex))
			rm_state_tx_port_add(&d->st, x->gw.ifindex);
		if (!err && x->gw.ifindex &&
		    (round || rc == BPF_FIB_LKUP_RET_NO_NEIGH))
			rm_neigh_use(&x->gw);
		/* write on a change, and before half the life is gone */
		if (!rm_nh_same(&rec, &x->rec) ||
		    (rec.flags && x->rec.expires_ns < now + d->ttl_ns / 2)) {
			if (rm_nh_write(d->nh_fd, i, &rec) == 0)
				x->rec = rec;
		}
		x->gen = n->gen + 1;
		if (was.gen != x->gen || was.rc != x->rc ||
		    memcmp(&was.gw, &x->gw, sizeof(x->gw)) ||
		    !rm_nh_same(&was.rec, &x->rec))
			log_change(d->s, n, x);
	}
	return 0;
}

static __u64 mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

static void neighd_close(struct neighd *d)
{
	rm_nh_resolver_close(d->res);
	if (d->ifaces_fd >= 0)
		close(d->ifaces_fd);
	rm_state_close(&d->st);
	free(d->seen);
	free(d->s);
}

int cmd_neighd(struct load_opts *o)
{
	__u32 ms = o->interval.val;
	struct sigaction sa = {.sa_handler = on_signal};
	__u64 ttl_ms = (__u64)ms * RM_NH_TTL_ROUNDS;
	struct neighd d = {.ifaces_fd = -1,
			   .ttl_ns = (ttl_ms > RM_NH_TTL_MIN_MS ? ttl_ms
							 : RM_NH_TTL_MIN_MS) *
				     1000000};
	struct pollfd pfd = {.fd = -1, .events = POLLIN};
	int err, ret = RM_EXIT_OK;
	__u64 next;

	d.seen = calloc(RM_MAX_NODES, sizeof(*d.seen));
	d.s = malloc(sizeof(*d.s));
	d.st.lock_fd = -1;
	for (int i = 0; i < RM_M_NR; i++)
		d.st.fd[i] = -1;
	if (!d.seen || !d.s) {
		neighd_close(&d);
		return load_error(RM_EXIT_RUNTIME, "out of memory");
	}
	/* unknown until written: the first pass rewrites every slot, so
	 * nothing a previous run left stays */
	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		d.seen[i].rec.flags = ~0u;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	err = rm_state_open(&d.st, o->pin_dir, RM_LOCK_NONE);
	if (err) {
		neighd_close(&d);
		return load_error(RM_EXIT_RUNTIME, "%s", rm_errmsg());
	}
	d.nh_fd = d.st.fd[RM_M_NEXTHOPS];
	d.fib_only = o->fib_only;
	err = rm_nh_resolver_open(&d.res);
	if (err) {
		neighd_close(&d);
		return load_error(RM_EXIT_RUNTIME,
				  "cannot load the next-hop resolver "
				  "(bpf/nhres.bpf.c): %s",
				  strerror(-err));
	}
	pfd.fd = rm_events_open();
	if (pfd.fd < 0) {
		neighd_close(&d);
		return load_error(RM_EXIT_RUNTIME,
				  "cannot listen to rtnetlink events: %s",
				  strerror(-pfd.fd));
	}
	printf("neighd: watching the routed nodes of %s: kernel events, and "
	       "a round every %u ms\n",
	       o->pin_dir, ms);
	fflush(stdout);
	next = 0;
	while (!stop) {
		__u64 now = mono_ms();
		bool round = now >= next;
		int r;

		if (round)
			next = now + ms;
		err = pass(&d, round);
		if (err) {
			ret = load_error(RM_EXIT_RUNTIME, "%s", rm_errmsg());
			break;
		}
		now = mono_ms();
		r = poll(&pfd, 1, next > now ? (int)(next - now) : 0);
		if (r > 0) {
			/* the rest of a burst (a flush, a route replace)
			 * comes within moments: one pass for all of it */
			usleep(NEIGHD_SETTLE_MS * 1000);
			rm_events_drain(pfd.fd);
		}
	}
	if (!err)
		printf("neighd: stopped\n");
	close(pfd.fd);
	neighd_close(&d);
	return ret;
}
