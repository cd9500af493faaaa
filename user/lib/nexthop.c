// SPDX-License-Identifier: GPL-2.0
/* Routed nodes' next-hop records (nexthop.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "nexthop.h"
#include "nhres.skel.h"

#define NH_AF_INET 2 /* AF_INET / AF_INET6, as bpf_fib_lookup wants */
#define NH_AF_INET6 10

struct rm_nh_resolver {
	struct nhres_bpf *skel;
	__u64 tick_ns; /* one jiffy: CLOCK_MONOTONIC_COARSE's resolution */
};

int rm_nh_resolver_open(struct rm_nh_resolver **r)
{
	struct rm_nh_resolver *x = calloc(1, sizeof(*x));
	struct timespec res;
	int err;

	*r = NULL;
	if (!x)
		return -ENOMEM;
	/* the coarse clock advances by one tick: its resolution is the
	 * kernel's TICK_NSEC, 1 s / HZ */
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) || res.tv_sec ||
	    !res.tv_nsec) {
		free(x);
		return -EINVAL;
	}
	x->tick_ns = (__u64)res.tv_nsec;
	x->skel = nhres_bpf__open_and_load();
	if (!x->skel) {
		err = -errno;
		free(x);
		return err ? err : -EINVAL;
	}
	*r = x;
	return 0;
}

void rm_nh_resolver_close(struct rm_nh_resolver *r)
{
	if (!r)
		return;
	nhres_bpf__destroy(r->skel);
	free(r);
}

__u64 rm_nh_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* One bpf_fib_lookup as the data plane makes it (bpf/encap.h rm_nh_fib)
 * but for no packet in particular: tot_len 0 always fits, so a success
 * carries the MTU; no TOS or ports (a record serves every flow). */
static int run_lookup(struct rm_nh_resolver *r, __u32 in_ifindex,
		      const struct rm_config *cfg, const struct rm_node *n,
		      struct bpf_fib_lookup *out, int *rc)
{
	struct bpf_fib_lookup *f = &r->skel->bss->nh_fib;
	__u8 frame[ETH_ZLEN] = {0};
	struct xdp_md ctx = {.data_end = sizeof(frame),
			     .ingress_ifindex = in_ifindex};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame,
		    .data_size_in = sizeof(frame), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	memset(f, 0, sizeof(*f));
	f->ifindex = in_ifindex;
	f->l4_protocol = n->via == RM_VIA_GUE ? 17 : RM_PROTO_IPIP;
	if (n->addr_family == RM_FAMILY_V6) {
		f->family = NH_AF_INET6;
		memcpy(f->ipv6_src, cfg->encap_src6, 16);
		memcpy(f->ipv6_dst, n->addr, 16);
	} else {
		f->family = NH_AF_INET;
		f->ipv4_src = cfg->encap_src4;
		f->ipv4_dst = n->addr[0];
	}
	if (bpf_prog_test_run_opts(
		bpf_program__fd(r->skel->progs.rm_nh_resolve), &opts))
		return -errno;
	*out = *f;
	*rc = r->skel->bss->nh_rc;
	return 0;
}

int rm_nh_resolve(struct rm_nh_resolver *r, __u32 in_ifindex,
		  const struct rm_config *cfg, const struct rm_node *n,
		  __u64 ttl_ns, struct rm_nh *rec, struct rm_nexthop *gw,
		  int *fib_rc)
{
	struct bpf_fib_lookup f = {0};
	int err, mp;

	memset(rec, 0, sizeof(*rec));
	memset(gw, 0, sizeof(*gw));
	memcpy(rec->addr, n->addr, sizeof(rec->addr));
	rec->family = n->addr_family;
	err = run_lookup(r, in_ifindex, cfg, n, &f, fib_rc);
	if (err)
		return err;
	/* the helper leaves the egress and the gateway (the destination
	 * when on-link) in the lookup also when the neighbour is missing */
	gw->family = (__u8)n->addr_family;
	if (*fib_rc == BPF_FIB_LKUP_RET_SUCCESS ||
	    *fib_rc == BPF_FIB_LKUP_RET_NO_NEIGH) {
		gw->ifindex = f.ifindex;
		if (n->addr_family == RM_FAMILY_V6)
			memcpy(gw->addr, f.ipv6_dst, 16);
		else
			gw->addr[0] = f.ipv4_dst;
	}
	if (*fib_rc != BPF_FIB_LKUP_RET_SUCCESS)
		return 0;
	rec->flags = RM_NH_F_VALID;
	rec->ifindex = f.ifindex;
	rec->mtu = f.mtu_result;
	memcpy(rec->dmac, f.dmac, ETH_ALEN);
	memcpy(rec->smac, f.smac, ETH_ALEN);
	rec->expires_ns = rm_nh_now() + ttl_ns;
	rec->expires_jiffies = r->skel->bss->nh_jiffies + ttl_ns / r->tick_ns;
	mp = rm_route_multipath((__u8)n->addr_family, n->addr);
	/* unknown: the per-packet lookup is right either way */
	if (mp != 0)
		rec->flags |= RM_NH_F_ECMP;
	return 0;
}

bool rm_nh_same(const struct rm_nh *a, const struct rm_nh *b)
{
	return a->flags == b->flags && a->family == b->family &&
	       a->ifindex == b->ifindex && a->mtu == b->mtu &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr)) &&
	       !memcmp(a->dmac, b->dmac, ETH_ALEN) &&
	       !memcmp(a->smac, b->smac, ETH_ALEN);
}

int rm_nh_write(int fd, __u32 id, struct rm_nh *rec)
{
	struct rm_nh cur;
	__u32 odd;

	if (bpf_map_lookup_elem(fd, &id, &cur))
		return -errno;
	/* each step a whole-value update: only seq differs in the first
	 * and the last, so a reader sees old fields with the old or an
	 * odd seq, then new fields with an odd or the new even seq */
	odd = cur.seq | 1;
	cur.seq = odd;
	if (bpf_map_update_elem(fd, &id, &cur, BPF_EXIST))
		return -errno;
	rec->seq = odd;
	if (bpf_map_update_elem(fd, &id, rec, BPF_EXIST))
		return -errno;
	rec->seq = odd + 1;
	return bpf_map_update_elem(fd, &id, rec, BPF_EXIST) ? -errno : 0;
}

const char *rm_fib_rc_name(int rc)
{
	static const char *const names[] = {
	    [BPF_FIB_LKUP_RET_SUCCESS] = "ok",
	    [BPF_FIB_LKUP_RET_BLACKHOLE] = "blackhole route",
	    [BPF_FIB_LKUP_RET_UNREACHABLE] = "unreachable route",
	    [BPF_FIB_LKUP_RET_PROHIBIT] = "prohibit route",
	    [BPF_FIB_LKUP_RET_NOT_FWDED] = "no route (not forwarded)",
	    [BPF_FIB_LKUP_RET_FWD_DISABLED] = "forwarding disabled",
	    [BPF_FIB_LKUP_RET_UNSUPP_LWT] = "unsupported lwt route",
	    [BPF_FIB_LKUP_RET_NO_NEIGH] = "neighbour unresolved",
	    [BPF_FIB_LKUP_RET_FRAG_NEEDED] = "fragmentation needed",
	};

	if (rc < 0)
		return "no such interface";
	if ((size_t)rc < sizeof(names) / sizeof(*names) && names[rc])
		return names[rc];
	return "unknown";
}
