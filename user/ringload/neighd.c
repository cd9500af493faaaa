// SPDX-License-Identifier: GPL-2.0
/*
 * ringload neighd: keeps what the data plane's bpf_fib_lookup needs for
 * routed (ipip/gue) nodes. bpf_fib_lookup reads the kernel's routing and
 * neighbour tables but cannot make the kernel resolve a neighbour: when
 * the next hop's entry is missing or failed, the packet is dropped and
 * counted (fib-no-neigh). So every --interval (default 1 s), for every
 * active or draining encapsulated node, this asks the kernel for the
 * route to the node (rtnetlink RTM_GETROUTE), makes sure the route's
 * egress interface is in rm_tx_ports (routes move without ringctl), and
 * "uses" the next hop's neighbour entry (RTM_NEWNEIGH with NTF_USE): the
 * kernel then resolves a missing, failed or stale entry as if a packet
 * were going out, and leaves a valid one alone. A flushed entry is back
 * within one interval plus the ARP/ND round trip.
 *
 * One log line per change of a node's next hop or its error; exits 0 on
 * SIGTERM or SIGINT.
 */
#include <errno.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "netlink.h"
#include "ringload.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* What was last seen for a node slot, to log changes only. */
struct seen {
	__u32 gen; /* node generation it was for */
	int err;
	struct rm_nexthop nh;
};

static void log_change(const struct rm_node *n, const struct rm_nexthop *nh,
		       int err)
{
	char a[64], g[64], dev[IF_NAMESIZE] = "?";

	rm_format_addr(n->addr, n->addr_family, a, sizeof(a));
	if (err) {
		printf("neighd: node %s (%s): no route: %s\n", n->name, a,
		       strerror(-err));
	} else {
		rm_format_addr(nh->addr, nh->family, g, sizeof(g));
		if_indextoname(nh->ifindex, dev);
		printf("neighd: node %s (%s): next hop %s dev %s\n", n->name, a,
		       g, dev);
	}
	fflush(stdout);
}

/* One round over the nodes; 0 or -errno if the state cannot be read. */
static int round_once(struct rm_state *st, struct rm_snap *s,
		      struct seen *seen)
{
	int err = rm_state_read(st, s);

	if (err)
		return err;
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &s->node[i];
		struct rm_nexthop nh = {0};

		if (n->via == RM_VIA_L2 || (n->state != RM_NODE_ACTIVE &&
					    n->state != RM_NODE_DRAINING))
			continue;
		err = rm_route_get(n->addr_family, n->addr, &nh);
		if (!err)
			err = rm_state_tx_port_add(st, nh.ifindex);
		if (!err)
			rm_neigh_use(&nh);
		if (seen[i].gen != n->gen + 1 || seen[i].err != err ||
		    memcmp(&seen[i].nh, &nh, sizeof(nh)))
			log_change(n, &nh, err);
		seen[i].gen = n->gen + 1; /* 0: never seen */
		seen[i].err = err;
		seen[i].nh = nh;
	}
	return 0;
}

int cmd_neighd(struct load_opts *o)
{
	__u32 ms = o->interval.val;
	struct timespec pause = {.tv_sec = ms / 1000,
				 .tv_nsec = (long)(ms % 1000) * 1000000};
	struct seen *seen = calloc(RM_MAX_NODES, sizeof(*seen));
	struct rm_snap *s = malloc(sizeof(*s));
	struct sigaction sa = {.sa_handler = on_signal};
	struct rm_state st;
	int err, ret = RM_EXIT_OK;

	if (!seen || !s) {
		free(seen);
		free(s);
		return load_error(RM_EXIT_RUNTIME, "out of memory");
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	err = rm_state_open(&st, o->pin_dir, RM_LOCK_NONE);
	if (err) {
		free(seen);
		free(s);
		return load_error(RM_EXIT_RUNTIME, "%s", rm_errmsg());
	}
	printf("neighd: watching the routed nodes of %s every %u ms\n",
	       o->pin_dir, ms);
	fflush(stdout);
	while (!stop) {
		err = round_once(&st, s, seen);
		if (err) {
			ret = load_error(RM_EXIT_RUNTIME, "%s", rm_errmsg());
			break;
		}
		nanosleep(&pause, NULL);
	}
	if (!err)
		printf("neighd: stopped\n");
	rm_state_close(&st);
	free(seen);
	free(s);
	return ret;
}
