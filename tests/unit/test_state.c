// SPDX-License-Identifier: GPL-2.0
/*
 * The state library against real pinned maps and the real XDP program
 * (BPF_PROG_TEST_RUN, attached nowhere).
 *
 * The suite runs in its own mount and network namespaces: its bpffs at
 * /sys/fs/bpf and its interfaces vanish with it, whatever happens, and
 * nothing is configured in the root namespace. Pin dirs are still removed
 * by every test's teardown.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <netinet/in.h>
#include <sched.h>
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ringmaster/rm_conn.h>
#include <ringmaster/rm_hash.h>
#include "ring_map.h"
#include "ringmaster.skel.h"
#include "layout.h"
#include "ring.h"
#include "state.h"
#include "util.h"
#include "vip_filter.h"
#include "skip.h"

#define VNODES 16 /* small rings: fast builds, many changes */

struct fx {
	char pin[128];
	struct ringmaster_bpf *skel;
};

static int n_fx;

/* ---- namespaces ------------------------------------------------------- */

static int group_setup(void **state)
{
	(void)state;
	if (unshare(CLONE_NEWNS | CLONE_NEWNET) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")) {
		fprintf(stderr, "test_state: no namespaces/bpffs: %s\n",
			strerror(errno));
		return -1;
	}
	/* a veth pair inside our own namespace: nodes reached by redirect */
	if (system("ip link add name rmt0 type veth peer name rmt1 && "
		   "ip link set rmt0 up && ip link set rmt1 up && "
		   "ip link set lo up"))
		return -1;
	return 0;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->pin, sizeof(f->pin), "/sys/fs/bpf/ringmaster-test-%d-%d",
		 getpid(), n_fx++);
	if (rm_state_create(f->pin, &f->skel)) {
		fprintf(stderr, "create: %s\n", rm_errmsg());
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	char other[160];

	ringmaster_bpf__destroy(f->skel);
	rm_state_purge(f->pin);
	/* what a failed round trip test may have left */
	snprintf(other, sizeof(other), "%s-copy", f->pin);
	rm_state_purge(other);
	snprintf(other, sizeof(other), "/tmp/rm-test-save-%d", getpid());
	unlink(other);
	free(f);
	return 0;
}

/* ---- changes through the library, as ringctl makes them -------------- */

enum op_kind {
	SVC_ADD,
	SVC_DEL,
	NODE_ADD,
	NODE_DEL,
	NODE_WEIGHT,
	NODE_STATE,
	SEED,
	CONFIG,
	WINDOW, /* config --handover-window */
};

struct op {
	enum op_kind kind;
	const char *svc, *node, *vip, *dev;
	__u8 proto;
	__u16 port;
	bool three;
	__u32 vnodes, weight, state;
	__u8 mac[6];
	struct rm_seed seed;
	__u32 udp_timeout, insert_rate; /* CONFIG */
	__u32 window;			/* WINDOW: seconds */
};

static int edit(struct rm_snap *s, const struct rm_snap *base,
		const struct op *o)
{
	struct rm_svc_meta m;
	__u8 fam;
	int svc = o->svc ? rm_snap_find_svc(s, o->svc) : -1, slot = -1;

	if (o->kind != SVC_ADD && o->kind != SEED && o->kind != CONFIG &&
	    o->kind != WINDOW && svc < 0)
		return -ENOENT;
	if (svc >= 0 && o->node)
		slot = rm_snap_find_node(s, svc, o->node);
	switch (o->kind) {
	case SVC_ADD:
		memset(&m, 0, sizeof(m));
		snprintf(m.name, sizeof(m.name), "%s", o->svc);
		if (rm_parse_addr(o->vip, m.key.vip, &fam))
			return -EINVAL;
		m.key.port = htons(o->port);
		m.key.proto = o->proto;
		m.key.flags = fam == RM_FAMILY_V6 ? RM_SVCK_V6 : 0;
		m.flags = o->three ? RM_SVC_F_3TUPLE : 0;
		m.vnodes = o->vnodes ? o->vnodes : VNODES;
		return rm_snap_svc_add(s, base, &m) < 0 ? -EINVAL : 0;
	case SVC_DEL:
		rm_snap_svc_del(s, svc);
		return 0;
	case NODE_ADD:
		return rm_snap_node_add(s, base, svc, o->node, o->mac,
					o->dev ? o->dev : "lo",
					o->weight ? o->weight : 1) < 0
			   ? -EINVAL
			   : 0;
	case SEED:
		s->cfg.seed = o->seed;
		return 0;
	case CONFIG:
		s->cfg.udp_timeout_s = o->udp_timeout;
		s->cfg.conn_insert_rate = o->insert_rate;
		return 0;
	case WINDOW:
		s->cfg.handover_window_s = o->window;
		return 0;
	default:
		break;
	}
	if (slot < 0)
		return -ENOENT;
	if (o->kind == NODE_DEL)
		rm_snap_node_del(s, slot);
	else if (o->kind == NODE_WEIGHT)
		s->node[slot].weight = o->weight;
	else
		rm_snap_node_state(s, slot, o->state);
	return 0;
}

/* Lock, read, edit, commit (or with dry, only plan): like ringctl. */
static int change_ex(const char *pin, const struct op *o, bool dry)
{
	struct rm_snap *old = malloc(sizeof(*old)), *new = malloc(sizeof(*new));
	struct rm_plan *p = calloc(1, sizeof(*p));
	struct rm_state st;
	int err;

	err = rm_state_open(&st, pin, RM_LOCK_EX);
	if (err)
		goto out_free;
	err = rm_state_read(&st, old);
	if (err)
		goto out;
	memcpy(new, old, sizeof(*new));
	err = edit(new, old, o);
	if (err)
		goto out;
	if (dry) {
		err = rm_plan_build(&st, old, new, RM_APPLY_DRY_RUN, p);
		rm_plan_free(p);
	} else {
		err = rm_state_commit(&st, old, new, 0);
	}
out:
	rm_state_close(&st);
out_free:
	free(old);
	free(new);
	free(p);
	return err;
}

static int change(const char *pin, const struct op *o)
{
	return change_ex(pin, o, false);
}

static void mac_of(__u8 mac[6], int i)
{
	static const __u8 base[6] = {0x02, 0x52, 0x4d, 0, 0, 0};

	memcpy(mac, base, 6);
	mac[4] = (__u8)(i >> 8);
	mac[5] = (__u8)i;
}

static void add_svc(const char *pin, const char *name, const char *vip,
		    __u16 port, __u8 proto, bool three)
{
	struct op o = {.kind = SVC_ADD,
		       .svc = name,
		       .vip = vip,
		       .port = port,
		       .proto = proto,
		       .three = three};

	assert_int_equal(change(pin, &o), 0);
}

static void add_node(const char *pin, const char *svc, const char *node,
		     int mac, __u32 weight, const char *dev)
{
	struct op o = {.kind = NODE_ADD,
		       .svc = svc,
		       .node = node,
		       .weight = weight,
		       .dev = dev};

	mac_of(o.mac, mac);
	assert_int_equal(change(pin, &o), 0);
}

static void read_snap(const char *pin, struct rm_snap *s)
{
	struct rm_state st;

	assert_int_equal(rm_state_open(&st, pin, RM_LOCK_SH), 0);
	assert_int_equal(rm_state_read(&st, s), 0);
	rm_state_close(&st);
}

/* The map id at rm_rings_old[svc][g] (0: none). */
static __u32 gen_id(const char *pin, __u32 svc, __u32 g)
{
	struct rm_state st;
	__u32 key = svc * RM_RING_GENS + g, id = 0;

	assert_int_equal(rm_state_open(&st, pin, RM_LOCK_SH), 0);
	if (bpf_map_lookup_elem(st.fd[RM_M_RINGS_OLD], &key, &id))
		id = 0;
	rm_state_close(&st);
	return id;
}

/* ---- map digests: "nothing changed" means every byte ------------------ */

static __u64 fnv(__u64 h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const __u8 *)p)[i]) * 0x100000001b3ULL;
	return h;
}

static __u64 inner_digest(__u32 id)
{
	struct rm_slot *v = NULL;
	__u64 h = 0xcbf29ce484222325ULL;
	int fd = bpf_map_get_fd_by_id(id);
	__u32 n = 0;

	assert_true(fd >= 0);
	/* the slots in use: a reused array may be a page longer or shorter */
	assert_int_equal(rm_ring_map_copy(fd, &v, &n), 0);
	h = fnv(h, &n, sizeof(n));
	h = fnv(h, v, (size_t)n * sizeof(*v));
	free(v);
	close(fd);
	return h;
}

/* strict: ring ids and traffic counters too; otherwise what a restore
 * into another pin dir must reproduce */
static __u64 state_digest(const char *pin, bool strict)
{
	int ncpus = libbpf_num_possible_cpus();
	__u64 total = 0;

	for (int m = 0; m < RM_M_NR; m++) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info), vsize;
		char path[256];
		__u8 key[64], next[64], *val;
		void *prev = NULL;
		__u64 sum = 0;
		int fd;

		/* remembered rings are history, not configuration: a
		 * restore into another pin dir has none */
		if (!strict && (m == RM_M_COUNTERS || m == RM_M_SVC_STATS ||
				m == RM_M_NODE_STATS || m == RM_M_RINGS_OLD))
			continue;
		snprintf(path, sizeof(path), "%s/%s", pin, rm_map_names[m]);
		fd = bpf_obj_get(path);
		assert_true(fd >= 0);
		assert_int_equal(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
		vsize = info.value_size;
		if (info.type == BPF_MAP_TYPE_PERCPU_ARRAY)
			vsize = ((vsize + 7) & ~7u) * ncpus;
		val = calloc(1, vsize);
		/* hash maps iterate in any order: add up entry hashes */
		while (!bpf_map_get_next_key(fd, prev, next)) {
			__u64 h =
			    fnv(0xcbf29ce484222325ULL, next, info.key_size);

			memcpy(key, next, info.key_size);
			prev = key;
			/* array of maps: iterates empty slots too */
			if (bpf_map_lookup_elem(fd, key, val)) {
				assert_int_equal(errno, ENOENT);
				sum += h;
				continue;
			}
			if (m == RM_M_RINGS || m == RM_M_RINGS_OLD) {
				if (strict)
					h = fnv(h, val, 4);
				h ^= inner_digest(*(__u32 *)val);
			} else {
				h = fnv(h, val, info.value_size);
			}
			sum += h;
		}
		free(val);
		close(fd);
		total = fnv(total, &sum, sizeof(sum));
	}
	return total;
}

/* ---- packets ---------------------------------------------------------- */

struct flow_in {
	int family;
	__be32 src[4], dst[4];
	__u8 proto;
	__u16 sport, dport;
	bool ack; /* TCP: an ACK of an open connection, not a SYN */
};

/* Headers are filled in aligned locals and copied: the IP header sits
 * 14 bytes into the frame, where a struct iphdr pointer would be
 * misaligned (UBSan, make SANITIZE=1). */
static size_t build_pkt(__u8 *buf, const struct flow_in *f)
{
	struct ethhdr eth = {0};
	size_t l4 = f->proto == IPPROTO_TCP ? sizeof(struct tcphdr)
					    : sizeof(struct udphdr);
	size_t off = sizeof(eth), payload = 16;

	memset(buf, 0, 256);
	memset(eth.h_dest, 0xee, ETH_ALEN);
	memset(eth.h_source, 0x02, ETH_ALEN);
	if (f->family == 4) {
		struct iphdr ip = {0};

		eth.h_proto = htons(ETH_P_IP);
		ip.version = 4;
		ip.ihl = 5;
		ip.ttl = 64;
		ip.protocol = f->proto;
		ip.tot_len = htons(sizeof(ip) + l4 + payload);
		ip.saddr = f->src[0];
		ip.daddr = f->dst[0];
		memcpy(buf + off, &ip, sizeof(ip));
		off += sizeof(ip);
	} else {
		struct ipv6hdr ip6 = {0};

		eth.h_proto = htons(ETH_P_IPV6);
		ip6.version = 6;
		ip6.hop_limit = 64;
		ip6.nexthdr = f->proto;
		ip6.payload_len = htons(l4 + payload);
		memcpy(&ip6.saddr, f->src, 16);
		memcpy(&ip6.daddr, f->dst, 16);
		memcpy(buf + off, &ip6, sizeof(ip6));
		off += sizeof(ip6);
	}
	memcpy(buf, &eth, sizeof(eth));
	if (f->proto == IPPROTO_TCP) {
		struct tcphdr th = {0};

		th.source = htons(f->sport);
		th.dest = htons(f->dport);
		th.doff = 5;
		th.syn = !f->ack;
		th.ack = f->ack;
		memcpy(buf + off, &th, sizeof(th));
	} else {
		struct udphdr uh = {0};

		uh.source = htons(f->sport);
		uh.dest = htons(f->dport);
		uh.len = htons(l4 + payload);
		memcpy(buf + off, &uh, sizeof(uh));
	}
	return off + l4 + payload;
}

/* Run one packet; the verdict, and the destination MAC it left with. */
static int run_pkt(struct fx *fx, const struct flow_in *f, __u8 mac[6])
{
	__u8 in[256], out[256];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = 1);

	opts.data_size_in = build_pkt(in, f);
	assert_int_equal(bpf_prog_test_run_opts(
			     bpf_program__fd(fx->skel->progs.rm_xdp), &opts),
			 0);
	memcpy(mac, out, 6);
	return opts.retval;
}

/* The owner userspace predicts: live seed + live ring + rm_ring_lookup. */
static int predict(const char *pin, const char *svc, const struct flow_in *f,
		   bool three)
{
	struct rm_state st;
	struct rm_snap *s = malloc(sizeof(*s));
	struct rm_slot *slots;
	struct rm_flow fl = {0};
	__u32 n, id;
	int sid;

	read_snap(pin, s);
	sid = rm_snap_find_svc(s, svc);
	assert_true(sid >= 0);
	memcpy(fl.src, f->src, 16);
	memcpy(fl.dst, f->dst, 16);
	fl.proto = f->proto;
	fl.family = f->family == 4 ? RM_FAMILY_V4 : RM_FAMILY_V6;
	if (!three) {
		fl.sport = htons(f->sport);
		fl.dport = htons(f->dport);
	}
	assert_int_equal(rm_state_open(&st, pin, RM_LOCK_NONE), 0);
	assert_int_equal(rm_state_ring_slots(&st, sid, &slots, &n), 0);
	rm_state_close(&st);
	assert_int_equal(
	    rm_ring_lookup(slots, n, rm_flow_hash(&s->cfg.seed, &fl), &id), 0);
	free(slots);
	free(s);
	return (int)id;
}

static void random_flow(struct flow_in *f, int family, const char *vip,
			__u8 proto, __u16 port)
{
	__u8 fam;

	memset(f, 0, sizeof(*f));
	f->family = family;
	f->proto = proto;
	rm_parse_addr(vip, f->dst, &fam);
	if (family == 4) {
		f->src[0] = htonl(0xc6120000u | (random() & 0xffff));
	} else {
		f->src[0] = htonl(0x20010db8);
		f->src[3] = (__be32)random();
	}
	f->sport = 1024 + random() % 60000;
	f->dport = port;
}

/* ---- tests ------------------------------------------------------------ */

/* The inner map is byte for byte what rm_ring_encode makes of the ring
 * built independently from the same nodes. */
static void test_ring_content(void **state)
{
	struct fx *fx = *state;
	struct rm_snap *s = malloc(sizeof(*s));
	struct rm_node_spec specs[3];
	struct rm_slot *live, *want;
	struct rm_state st;
	struct rm_ring r, p;
	__u32 n, m;

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	add_node(fx->pin, "web", "b", 2, 3, NULL);
	add_node(fx->pin, "web", "c", 3, 2, "rmt0");
	read_snap(fx->pin, s);
	for (int i = 0; i < 3; i++) {
		int slot = rm_snap_find_node(s, 0, (char[]){'a' + i, 0});

		assert_true(slot >= 0);
		snprintf(specs[i].name, RM_NAME_MAX, "%c", 'a' + i);
		specs[i].weight = s->node[slot].weight;
		specs[i].id = slot;
	}
	assert_int_equal(rm_ring_build(&s->cfg.seed, specs, 3, VNODES, &r), 0);
	m = rm_ring_nslots(&r);
	want = calloc(m, sizeof(*want));
	assert_int_equal(rm_ring_encode(&r, want, m), 0);
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_NONE), 0);
	assert_int_equal(rm_state_ring_slots(&st, 0, &live, &n), 0);
	rm_state_close(&st);
	assert_int_equal(n, m);
	/* the header carries the digest of the snapshot's input (its
	 * nodes' ketama hosts too, which specs[] lacks) */
	assert_int_equal(rm_snap_ring_plan(s, 0, &p), 0);
	assert_true(RM_RING_HDR_CD(&live[0]) == rm_ring_digest(&p));
	rm_ring_hdr_set_cd(&want[0], rm_ring_digest(&p));
	rm_ring_free(&p);
	assert_memory_equal(live, want, m * sizeof(*want));
	assert_int_equal(s->node[2].ifindex, if_nametoindex("rmt0"));
	{
		/* read by the digest, and without it (a ring written before
		 * it): the same ring, matching the records either way */
		struct rm_ring d;
		bool same = false;

		for (int pass = 0; pass < 2; pass++) {
			if (pass)
				rm_ring_hdr_set_cd(&live[0], 0);
			assert_int_equal(rm_ring_decode_check(live, n, s, 0,
							      &d, &same), 0);
			assert_true(same);
			assert_int_equal(d.n, r.n);
			assert_int_equal(d.n_nodes, r.n_nodes);
			for (__u32 i = 0; i < r.n; i++) {
				assert_int_equal(d.entries[i].point,
						 r.entries[i].point);
				assert_string_equal(
				    d.nodes[d.entries[i].node].name,
				    r.nodes[r.entries[i].node].name);
			}
			rm_ring_free(&d);
		}
	}
	{
		/* a ring that differs from the configuration (an interrupted
		 * change) is read back entry by entry */
		struct rm_ring d;
		int slot = rm_snap_find_node(s, 0, "b");

		s->node[slot].weight = 1;
		assert_int_equal(rm_ring_decode(live, n, s, 0, &d), 0);
		assert_int_equal(d.n, r.n);
		for (__u32 i = 0; i < r.n; i++) {
			assert_int_equal(d.entries[i].point,
					 r.entries[i].point);
			assert_string_equal(d.nodes[d.entries[i].node].name,
					    r.nodes[r.entries[i].node].name);
		}
		rm_ring_free(&d);
		live[0].a += 1; /* a header that lies: corrupt */
		assert_int_not_equal(rm_ring_decode(live, n, s, 0, &d), 0);
	}
	free(live);
	free(want);
	rm_ring_free(&r);
	free(s);
}

/* Each node's share of the live ring as the reads show it
 * (rm_state_ring_owned): by the digest, from the entries the kernel
 * copies, over several of the ring's pages; the same sums when the
 * records no longer match the ring (read the long way, flagged); none
 * for a service without a ring. */
static void test_ring_owned(void **state)
{
	struct fx *fx = *state;
	struct rm_snap *s = malloc(sizeof(*s));
	struct op o = {.kind = SVC_ADD,
		       .svc = "big",
		       .vip = "198.18.0.11",
		       .port = 80,
		       .proto = IPPROTO_TCP,
		       .vnodes = 500};
	struct rm_ring_owned own;
	struct rm_state st;
	struct rm_ring r, d;
	struct rm_slot *live;
	bool same;
	__u32 n;

	assert_non_null(s);
	assert_int_equal(change(fx->pin, &o), 0);
	add_node(fx->pin, "big", "a", 1, 1, NULL);
	add_node(fx->pin, "big", "b", 2, 3, NULL);
	add_node(fx->pin, "big", "c", 3, 2, NULL);
	read_snap(fx->pin, s);
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_NONE), 0);
	assert_int_equal(rm_state_ring_slots(&st, 0, &live, &n), 0);
	assert_int_equal(rm_ring_decode(live, n, s, 0, &d), 0);
	assert_int_equal(d.n, 3000);
	/* entries on more than one page of the array, not from its start */
	assert_true((n - (d.n + 1) / 2) % RM_RING_PAGE_SLOTS != 0);
	assert_true((d.n + 1) / 2 > 2 * RM_RING_PAGE_SLOTS);
	{
		__u64 *arcs = calloc(d.n_nodes, sizeof(*arcs));
		__u64 total = 0;
		int slot = rm_snap_find_node(s, 0, "b");

		assert_non_null(arcs);
		rm_ring_arcs(&d, arcs);
		for (int pass = 0; pass < 2; pass++) {
			/* pass 1: records changed since the ring was built */
			if (pass)
				s->node[slot].weight = 1;
			same = pass; /* the wrong answer, to be overwritten */
			assert_int_equal(rm_state_ring_owned(&st, s, 0, &r,
							     &own, &same),
					 0);
			assert_true(same == !pass);
			assert_int_equal(r.n, d.n);
			assert_int_equal(r.n_nodes, d.n_nodes);
			total = 0;
			for (__u32 k = 0; k < r.n_nodes; k++) {
				__u32 e = 0;

				assert_string_equal(r.nodes[k].name,
						    d.nodes[k].name);
				assert_true(own.keys[k] == arcs[k]);
				for (__u32 i = 0; i < d.n; i++)
					e += d.entries[i].node == k;
				assert_int_equal(own.entries[k], e);
				total += own.keys[k];
			}
			assert_true(total == 1ULL << 32);
			rm_ring_owned_free(&own);
			rm_ring_free(&r);
		}
		free(arcs);
	}
	/* no ring at that id: -ENOENT, nothing to free */
	assert_int_equal(rm_state_ring_owned(&st, s, 7, &r, &own, NULL),
			 -ENOENT);
	assert_null(own.keys);
	assert_int_equal(r.n_nodes, 0);
	rm_state_close(&st);
	rm_ring_free(&d);
	free(live);
	free(s);
}

/* Rings of another format (RM_RING_FORMAT, rm_common.h): the program
 * never reads one (a packet to it is dropped as no-node); a reader still
 * reads the format before this one's entries (`ringctl save` ahead of
 * ringload attach --migrate) and refuses any other, naming the way over;
 * a writer refuses pins whose layout record says older rings. */
static void test_ring_format(void **state)
{
	struct fx *fx = *state;
	struct rm_snap *s = malloc(sizeof(*s));
	struct rm_slot *live, *old, *hdr;
	struct rm_ring_page page;
	struct rm_layout l;
	struct rm_state st;
	struct rm_ring r, d;
	struct flow_in f;
	__u32 n, m, bits, key = 0, id = 0;
	__u8 mac[6];
	int fd;

	assert_non_null(s);
	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	add_node(fx->pin, "web", "b", 2, 2, NULL);
	read_snap(fx->pin, s);
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_NONE), 0);
	assert_int_equal(rm_state_ring_slots(&st, 0, &live, &n), 0);
	rm_state_close(&st);
	assert_int_equal(rm_ring_decode(live, n, s, 0, &r), 0);

	/* the format before: b = bits (two 16-byte buckets per entry) */
	for (bits = 1; bits < 20 && (1u << bits) < 2 * r.n; bits++)
		;
	m = 1 + (1u << bits) + (r.n + 1) / 2;
	old = calloc(m, sizeof(*old));
	assert_non_null(old);
	old[0].a = r.n;
	old[0].b = bits;
	memcpy(&old[1 + (1u << bits)], &live[n - (r.n + 1) / 2],
	       (r.n + 1) / 2 * sizeof(*old));
	assert_int_equal(rm_ring_decode(old, m, s, 0, &d), 0);
	assert_int_equal(d.n, r.n);
	for (__u32 i = 0; i < r.n; i++) {
		assert_int_equal(d.entries[i].point, r.entries[i].point);
		assert_string_equal(d.nodes[d.entries[i].node].name,
				    r.nodes[r.entries[i].node].name);
	}
	rm_ring_free(&d);
	/* ... which the search does not read (RM_SEARCH_CORRUPT) */
	assert_int_not_equal(rm_ring_lookup(old, m, 1, &id), 0);
	/* a later format: refused, naming it */
	live[0].b = RM_RING_HDR_BITS(live[0].b) | (RM_RING_FORMAT + 1) << 8;
	assert_int_equal(rm_ring_decode(live, n, s, 0, &d), -EPROTO);
	assert_non_null(strstr(rm_errmsg(), "ring format 3"));
	assert_non_null(strstr(rm_errmsg(), "--migrate"));

	/* the program: the live ring's header says the format before */
	{
		__u32 inner_id = 0, svc = 0;

		assert_int_equal(bpf_map_lookup_elem(
				     bpf_map__fd(fx->skel->maps.rm_rings), &svc,
				     &inner_id),
				 0);
		fd = bpf_map_get_fd_by_id(inner_id);
	}
	assert_true(fd >= 0);
	assert_int_equal(bpf_map_lookup_elem(fd, &key, &page), 0);
	hdr = &page.slot[0];
	random_flow(&f, 4, "198.18.0.10", IPPROTO_TCP, 80);
	assert_int_equal(run_pkt(fx, &f, mac), XDP_TX);
	hdr->b = RM_RING_HDR_BITS(hdr->b);
	assert_int_equal(bpf_map_update_elem(fd, &key, &page, BPF_ANY), 0);
	assert_int_equal(run_pkt(fx, &f, mac), XDP_DROP);
	hdr->b = RM_RING_HDR_B(hdr->b);
	assert_int_equal(bpf_map_update_elem(fd, &key, &page, BPF_ANY), 0);
	assert_int_equal(run_pkt(fx, &f, mac), XDP_TX);
	close(fd);

	/* a writer over pins recorded with older rings */
	assert_int_equal(rm_layout_pinned(fx->pin, &l), 0);
	assert_int_equal(l.ring_format, RM_RING_FORMAT);
	l.ring_format = 0;
	assert_int_equal(rm_layout_record(fx->pin, &l), 0);
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_EX), -EPROTO);
	assert_non_null(strstr(rm_errmsg(), "--migrate"));
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_SH), 0);
	rm_state_close(&st);
	l.ring_format = RM_RING_FORMAT;
	assert_int_equal(rm_layout_record(fx->pin, &l), 0);
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_EX), 0);
	rm_state_close(&st);

	rm_ring_free(&r);
	free(old);
	free(live);
	free(s);
}

/* The program sends every flow to the owner userspace predicts. */
static void check_flows(struct fx *fx, const char *svc, int family,
			const char *vip, __u8 proto, __u16 port, bool three)
{
	struct rm_snap *s = malloc(sizeof(*s));

	read_snap(fx->pin, s);
	for (int i = 0; i < 300; i++) {
		struct flow_in f;
		__u8 mac[6];
		int id, act;

		random_flow(&f, family, vip, proto, port);
		id = predict(fx->pin, svc, &f, three);
		act = run_pkt(fx, &f, mac);
		assert_true(act == XDP_TX || act == XDP_REDIRECT);
		assert_memory_equal(mac, s->node[id].mac, 6);
	}
	free(s);
}

static void test_dataplane_follows_lookup(void **state)
{
	struct fx *fx = *state;

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_svc(fx->pin, "web6", "2001:db8::10", 443, IPPROTO_TCP, false);
	add_svc(fx->pin, "dns", "198.18.0.53", 53, IPPROTO_UDP, true);
	for (int i = 0; i < 5; i++) {
		char name[8];

		snprintf(name, sizeof(name), "n%d", i);
		add_node(fx->pin, "web", name, i, 1 + i % 3, NULL);
		add_node(fx->pin, "web6", name, 10 + i, 1, NULL);
		add_node(fx->pin, "dns", name, 20 + i, 2, "rmt0");
	}
	check_flows(fx, "web", 4, "198.18.0.10", IPPROTO_TCP, 80, false);
	check_flows(fx, "web6", 6, "2001:db8::10", IPPROTO_TCP, 443, false);
	check_flows(fx, "dns", 4, "198.18.0.53", IPPROTO_UDP, 53, true);
}

/* Every rejected change leaves every byte of every map as it was. */
static void test_bad_input_unchanged(void **state)
{
	struct fx *fx = *state;
	struct op bad[] = {
	    {.kind = SVC_ADD,
	     .svc = "web",
	     .vip = "198.18.0.11",
	     .port = 80,
	     .proto = IPPROTO_TCP}, /* duplicate name */
	    {.kind = SVC_ADD,
	     .svc = "web2",
	     .vip = "198.18.0.10",
	     .port = 80,
	     .proto = IPPROTO_TCP}, /* duplicate key */
	    {.kind = SVC_ADD,
	     .svc = "bad name",
	     .vip = "198.18.0.12",
	     .port = 80,
	     .proto = IPPROTO_TCP},
	    {.kind = SVC_ADD,
	     .svc = "big",
	     .vip = "198.18.0.13",
	     .port = 80,
	     .proto = IPPROTO_TCP,
	     .vnodes = 99999},
	    {.kind = NODE_ADD, .svc = "nosuch", .node = "x"},
	    {.kind = NODE_ADD, .svc = "web", .node = "a"}, /* duplicate */
	    {.kind = NODE_ADD, .svc = "web", .node = "x", .weight = 101},
	    {.kind = NODE_ADD, .svc = "web", .node = "x", .dev = "nosuchdev0"},
	    {.kind = NODE_ADD, .svc = "web", .node = "-x/"},
	    {.kind = NODE_DEL, .svc = "web", .node = "nosuch"},
	};
	/* one more node of 100 x 4096 vnodes: over the ring limit */
	struct op fat_x = {.kind = NODE_ADD,
			   .svc = "fat",
			   .node = "x",
			   .weight = RM_MAX_WEIGHT};
	__u64 before;

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	before = state_digest(fx->pin, true);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (bad[i].kind == NODE_ADD)
			mac_of(bad[i].mac, 77);
		if (!change(fx->pin, &bad[i]))
			fail_msg("bad change %zu was accepted", i);
		assert_true(state_digest(fx->pin, true) == before);
	}
	{
		struct op mc = {.kind = NODE_ADD,
				.svc = "web",
				.node = "m",
				.mac = {0x01, 0, 0x5e, 0, 0, 1}};
		struct op zero = {.kind = NODE_ADD, .svc = "web", .node = "z"};

		assert_int_not_equal(change(fx->pin, &mc), 0);
		assert_int_not_equal(change(fx->pin, &zero), 0);
		assert_true(state_digest(fx->pin, true) == before);
	}
	{
		struct op fat = {.kind = SVC_ADD,
				 .svc = "fat",
				 .vip = "198.18.0.14",
				 .port = 80,
				 .proto = IPPROTO_TCP,
				 .vnodes = RM_MAX_VNODES};

		assert_int_equal(change(fx->pin, &fat), 0);
		/* fill the ring as far as whole nodes of the most vnodes go */
		for (__u32 i = 0;
		     i < RM_MAX_RING_ENTRIES / (RM_MAX_WEIGHT * RM_MAX_VNODES);
		     i++) {
			char name[8];

			snprintf(name, sizeof(name), "f%u", i);
			add_node(fx->pin, "fat", name, 100 + i, RM_MAX_WEIGHT,
				 NULL);
		}
	}
	before = state_digest(fx->pin, true);
	mac_of(fat_x.mac, 99);
	assert_int_not_equal(change(fx->pin, &fat_x), 0);
	assert_true(state_digest(fx->pin, true) == before);
}

/* A dry run plans and builds in memory, and writes nothing. */
static void test_dry_run(void **state)
{
	struct fx *fx = *state;
	struct op o = {.kind = NODE_ADD, .svc = "web", .node = "b"};
	__u64 before;

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	mac_of(o.mac, 2);
	before = state_digest(fx->pin, true);
	assert_int_equal(change_ex(fx->pin, &o, true), 0);
	assert_true(state_digest(fx->pin, true) == before);
	o.kind = NODE_DEL;
	o.node = "a";
	assert_int_equal(change_ex(fx->pin, &o, true), 0);
	assert_true(state_digest(fx->pin, true) == before);
}

/* The fragment entry of a (VIP, proto) follows its 3-tuple services
 * and falls back to a 5-tuple one (flags 0: its fragments are dropped);
 * states take nodes out of and back into the ring; down moves gen on. */
static void test_frag_and_states(void **state)
{
	struct fx *fx = *state;
	struct rm_svc_key fk = {.proto = IPPROTO_UDP, .flags = RM_SVCK_FRAG};
	struct op o = {.kind = SVC_DEL, .svc = "a"};
	struct rm_snap *s = malloc(sizeof(*s));
	struct rm_svc v;
	int fd, slot;
	__u32 gen;

	fk.vip[0] = inet_addr("198.18.0.20");
	fd = bpf_map__fd(fx->skel->maps.rm_services);
	add_svc(fx->pin, "c", "198.18.0.20", 3000, IPPROTO_UDP, false);
	assert_int_equal(bpf_map_lookup_elem(fd, &fk, &v), 0);
	assert_int_equal(v.id, 0);
	assert_int_equal(v.flags, 0);
	add_svc(fx->pin, "a", "198.18.0.20", 1000, IPPROTO_UDP, true);
	add_svc(fx->pin, "b", "198.18.0.20", 2000, IPPROTO_UDP, true);
	assert_int_equal(bpf_map_lookup_elem(fd, &fk, &v), 0);
	assert_int_equal(v.id, 1); /* a 3-tuple service takes it over */
	assert_int_equal(v.flags, RM_SVC_F_3TUPLE);
	assert_int_equal(change(fx->pin, &o), 0);
	assert_int_equal(bpf_map_lookup_elem(fd, &fk, &v), 0);
	assert_int_equal(v.id, 2); /* moved to the 3-tuple service left */
	assert_int_equal(v.flags, RM_SVC_F_3TUPLE);
	o.svc = "b";
	assert_int_equal(change(fx->pin, &o), 0);
	assert_int_equal(bpf_map_lookup_elem(fd, &fk, &v), 0);
	assert_int_equal(v.id, 0); /* back to the 5-tuple one: drop */
	assert_int_equal(v.flags, 0);
	o.svc = "c";
	assert_int_equal(change(fx->pin, &o), 0);
	assert_int_not_equal(bpf_map_lookup_elem(fd, &fk, &v), 0);

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_node(fx->pin, "web", "x", 1, 1, NULL);
	add_node(fx->pin, "web", "y", 2, 1, NULL);
	read_snap(fx->pin, s);
	slot = rm_snap_find_node(s, rm_snap_find_svc(s, "web"), "y");
	gen = s->node[slot].gen;
	o = (struct op){.kind = NODE_STATE,
			.svc = "web",
			.node = "y",
			.state = RM_NODE_DOWN};
	assert_int_equal(change(fx->pin, &o), 0);
	read_snap(fx->pin, s);
	assert_int_equal(s->node[slot].state, RM_NODE_DOWN);
	assert_int_equal(s->node[slot].gen, gen + 1);
	for (int i = 0; i < 50; i++) { /* only x is left in the ring */
		struct flow_in f;
		__u8 mac[6], want[6];

		random_flow(&f, 4, "198.18.0.10", IPPROTO_TCP, 80);
		assert_int_equal(run_pkt(fx, &f, mac), XDP_TX);
		mac_of(want, 1);
		assert_memory_equal(mac, want, 6);
	}
	o.state = RM_NODE_ACTIVE;
	assert_int_equal(change(fx->pin, &o), 0);
	check_flows(fx, "web", 4, "198.18.0.10", IPPROTO_TCP, 80, false);
	free(s);
}

/* rm_vip_slots holds exactly the slots of rm_services' keys after every
 * commit, including the fragment keys of 3-tuple services: a slot names
 * the id of the one key hashing there, and the meta of that id holds
 * the key unless it is a fragment key; returns how many keys there are. */
static int filter_matches_keys(struct fx *fx)
{
	static struct rm_vip_slots have, want;
	int sfd = bpf_map__fd(fx->skel->maps.rm_services);
	int ffd = bpf_map__fd(fx->skel->maps.rm_vip_slots);
	int mfd = bpf_map__fd(fx->skel->maps.rm_svc_meta);
	struct rm_svc_key k, next;
	struct rm_svc_meta m;
	struct rm_svc v;
	void *prev = NULL;
	__u32 zero = 0;
	int keys = 0;
	__u16 s;

	memset(&want, 0, sizeof(want));
	assert_int_equal(bpf_map_lookup_elem(ffd, &zero, &have), 0);
	while (!bpf_map_get_next_key(sfd, prev, &next)) {
		assert_int_equal(bpf_map_lookup_elem(sfd, &next, &v), 0);
		s = rm_vip_slot_get(&have, rm_vip_key_slot(&next));
		assert_true(s == v.id + 1 || s == RM_VIP_SLOT_MANY);
		if (!(next.flags & RM_SVCK_FRAG)) {
			assert_int_equal(bpf_map_lookup_elem(mfd, &v.id, &m),
					 0);
			assert_true(m.in_use);
			assert_int_equal(m.flags, v.flags);
			assert_memory_equal(&m.key, &next, sizeof(next));
		}
		rm_vip_slots_set(&want, &next, v.id);
		keys++;
		k = next;
		prev = &k;
	}
	assert_memory_equal(&have, &want, sizeof(have));
	return keys;
}

static void test_vip_filter_tracks_keys(void **state)
{
	static const struct {
		const char *name, *vip;
		__u16 port;
		__u8 proto;
		bool three;
	} svcs[] = {
	    {"w4", "198.18.0.30", 80, IPPROTO_TCP, false},
	    {"d4", "198.18.0.30", 53, IPPROTO_UDP, true},
	    {"e4", "198.18.0.30", 54, IPPROTO_UDP, true}, /* shares frag */
	    {"any4", "198.18.0.31", 0, IPPROTO_TCP, false},
	    {"w6", "2001:db8:30::1", 443, IPPROTO_TCP, false},
	    {"d6", "2001:db8:30::1", 0, IPPROTO_UDP, true},
	};
	/* keys: one each, plus one fragment key per (VIP, proto) */
	static const int keys_after_add[] = {2, 4, 5, 7, 9, 11};
	struct fx *fx = *state;
	struct op o = {.kind = SVC_DEL};
	int n = sizeof(svcs) / sizeof(svcs[0]), i, ffd;
	struct rm_vip_slots *zeroed = calloc(1, sizeof(*zeroed));
	struct ringmaster_bpf *again = NULL;
	__u32 zero = 0;

	assert_non_null(zeroed);
	assert_int_equal(filter_matches_keys(fx), 0);
	for (i = 0; i < n; i++) {
		add_svc(fx->pin, svcs[i].name, svcs[i].vip, svcs[i].port,
			svcs[i].proto, svcs[i].three);
		assert_int_equal(filter_matches_keys(fx), keys_after_add[i]);
	}
	add_node(fx->pin, "w4", "a", 1, 1, NULL);
	add_node(fx->pin, "d6", "b", 2, 1, NULL);
	check_flows(fx, "w4", 4, "198.18.0.30", IPPROTO_TCP, 80, false);
	check_flows(fx, "d6", 6, "2001:db8:30::1", IPPROTO_UDP, 5353, true);

	/* a pin dir from before the slot table: its keys' slots come back
	 * when the program is loaded over it */
	ffd = bpf_map__fd(fx->skel->maps.rm_vip_slots);
	assert_int_equal(bpf_map_update_elem(ffd, &zero, zeroed, BPF_ANY), 0);
	assert_int_equal(rm_state_create(fx->pin, &again), 0);
	ringmaster_bpf__destroy(again);
	assert_int_equal(filter_matches_keys(fx), 11);
	check_flows(fx, "w4", 4, "198.18.0.30", IPPROTO_TCP, 80, false);

	/* deletes clear the slots of the keys that go, only those */
	o.svc = "d4"; /* the fragment key stays, with e4 */
	assert_int_equal(change(fx->pin, &o), 0);
	assert_int_equal(filter_matches_keys(fx), 10);
	o.svc = "e4";
	assert_int_equal(change(fx->pin, &o), 0);
	assert_int_equal(filter_matches_keys(fx), 8);
	add_svc(fx->pin, "d4", "198.18.0.30", 53, IPPROTO_UDP, true);
	assert_int_equal(filter_matches_keys(fx), 10);
	check_flows(fx, "w4", 4, "198.18.0.30", IPPROTO_TCP, 80, false);
	check_flows(fx, "d6", 6, "2001:db8:30::1", IPPROTO_UDP, 53, true);
	for (i = 0; i < n; i++) {
		if (!strcmp(svcs[i].name, "e4")) /* gone already */
			continue;
		o.svc = svcs[i].name;
		assert_int_equal(change(fx->pin, &o), 0);
		filter_matches_keys(fx);
	}
	/* nothing left: every slot NONE */
	assert_int_equal(filter_matches_keys(fx), 0);
	assert_int_equal(bpf_map_lookup_elem(ffd, &zero, zeroed), 0);
	for (i = 0; i < (int)RM_VIP_SLOTS; i++)
		assert_int_equal(zeroed->s[i], RM_VIP_SLOT_NONE);
	free(zeroed);
}

static const char *ringctl_path(void)
{
	static char path[512];
	char exe[400];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0)
		return "build/ringctl";
	exe[n] = '\0';
	/* build/tests/test_state -> build/ringctl */
	snprintf(path, sizeof(path), "%s/../ringctl", dirname(exe));
	return path;
}

static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* ringctl save, then restore into a fresh pin dir: the same maps. */
static void test_save_restore_roundtrip(void **state)
{
	struct fx *fx = *state;
	const char *ctl = ringctl_path();
	char pin2[160], file[64];
	struct op seed = {.kind = SEED, .seed = {0x1122334455667788ULL, 42}};
	struct op cfg = {.kind = CONFIG, .udp_timeout = 17, .insert_rate = 0};

	snprintf(pin2, sizeof(pin2), "%s-copy", fx->pin);
	snprintf(file, sizeof(file), "/tmp/rm-test-save-%d", getpid());
	assert_int_equal(change(fx->pin, &seed), 0);
	/* the connection table's settings travel too */
	assert_int_equal(change(fx->pin, &cfg), 0);
	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_svc(fx->pin, "dns", "2001:db8::53", 53, IPPROTO_UDP, true);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	add_node(fx->pin, "web", "b", 2, 3, "rmt0");
	add_node(fx->pin, "dns", "a", 3, 2, "rmt1");
	add_node(fx->pin, "dns", "c", 4, 1, NULL);
	{
		struct op d = {.kind = NODE_STATE,
			       .svc = "web",
			       .node = "a",
			       .state = RM_NODE_DRAINING};
		struct op w = {.kind = NODE_STATE,
			       .svc = "dns",
			       .node = "c",
			       .state = RM_NODE_DOWN};

		assert_int_equal(change(fx->pin, &d), 0);
		assert_int_equal(change(fx->pin, &w), 0);
	}
	assert_int_equal(rm_state_create(pin2, NULL), 0);
	assert_int_equal(sh("%s --pin-dir %s save > %s", ctl, fx->pin, file),
			 0);
	assert_int_equal(
	    sh("%s --pin-dir %s restore %s >/dev/null", ctl, pin2, file), 0);
	assert_true(state_digest(fx->pin, false) == state_digest(pin2, false));
	/* restoring what is already there changes nothing either */
	assert_int_equal(
	    sh("%s --pin-dir %s restore %s >/dev/null", ctl, fx->pin, file), 0);
	assert_true(state_digest(fx->pin, false) == state_digest(pin2, false));
	unlink(file);
	rm_state_purge(pin2);
}

/* A write failing half way (here: rm_services swapped for a copy with no
 * room for one more key, after the rings went in) is rolled back. */
static void test_rollback(void **state)
{
	struct fx *fx = *state;
	struct rm_snap *old = malloc(sizeof(*old)), *new = malloc(sizeof(*new));
	struct rm_svc_meta m = {
	    .name = "late",
	    .vnodes = VNODES,
	    .key = {.port = htons(9), .proto = IPPROTO_TCP}};
	struct rm_svc_key k, next;
	struct rm_state st;
	struct rm_svc v;
	int real, small, n = 0, id;
	__u32 gen0, gen1;
	__u8 mac[6];
	__u64 before;

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	add_node(fx->pin, "web", "b", 2, 1, NULL);
	before = state_digest(fx->pin, false);
	/* second chance's history too: the rollback puts it back */
	gen0 = gen_id(fx->pin, 0, 0);
	gen1 = gen_id(fx->pin, 0, 1);
	assert_int_not_equal(gen0, 0);
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_EX), 0);
	assert_int_equal(rm_state_read(&st, old), 0);
	memcpy(new, old, sizeof(*new));
	m.key.vip[0] = inet_addr("198.18.0.50");
	id = rm_snap_svc_add(new, old, &m);
	assert_true(id >= 0);
	mac_of(mac, 3);
	assert_true(rm_snap_node_add(new, old, id, "c", mac, "lo", 1) >= 0);
	/* web loses b too, so the rollback has a ring to put back */
	rm_snap_node_del(new, rm_snap_find_node(new, 0, "b"));

	real = st.fd[RM_M_SERVICES];
	for (void *prev = NULL; !bpf_map_get_next_key(real, prev, &next);
	     prev = &k, n++)
		k = next;
	small = bpf_map_create(BPF_MAP_TYPE_HASH, "rm_small", sizeof(k),
			       sizeof(v), n, NULL);
	assert_true(small >= 0);
	for (void *prev = NULL; !bpf_map_get_next_key(real, prev, &next);
	     prev = &k) {
		k = next;
		assert_int_equal(bpf_map_lookup_elem(real, &k, &v), 0);
		assert_int_equal(bpf_map_update_elem(small, &k, &v, BPF_ANY),
				 0);
	}
	st.fd[RM_M_SERVICES] = small;
	assert_int_not_equal(rm_state_commit(&st, old, new, 0), 0);
	assert_non_null(strstr(rm_errmsg(), "rolled back"));
	st.fd[RM_M_SERVICES] = real;
	close(small);
	rm_state_close(&st);
	assert_true(state_digest(fx->pin, false) == before);
	assert_int_equal(gen_id(fx->pin, 0, 0), gen0);
	assert_int_equal(gen_id(fx->pin, 0, 1), gen1);
	check_flows(fx, "web", 4, "198.18.0.10", IPPROTO_TCP, 80, false);
	free(old);
	free(new);
}

/* ---- atomicity under pressure ---------------------------------------- */

#define ATOM_CHANGES 1000
#define ATOM_POOL 12

struct version {
	__u32 n;
	char name[ATOM_POOL][8];
	__u32 weight[ATOM_POOL];
};

struct shared {
	volatile __u32 published; /* version the writer is installing */
	volatile __u32 installed; /* last version whose commit returned */
	volatile __u32 done, failed;
	struct version v[ATOM_CHANGES + 2];
};

/* The writer: random add / remove / weight changes, never leaving the
 * service empty, each version published before it is committed. */
static void atom_writer(const char *pin, struct shared *sh)
{
	bool in[ATOM_POOL] = {false};
	__u32 weight[ATOM_POOL] = {0};

	srandom(4242);
	in[0] = true; /* n0 was added by the parent as version 0 */
	weight[0] = 1;
	for (__u32 ver = 1; ver <= ATOM_CHANGES; ver++) {
		int k = random() % ATOM_POOL, count = 0;
		struct op o = {.svc = "atom"};
		char name[8];
		struct version *v = &sh->v[ver];

		for (int i = 0; i < ATOM_POOL; i++)
			count += in[i];
		snprintf(name, sizeof(name), "n%d", k);
		o.node = name;
		if (!in[k]) {
			o.kind = NODE_ADD;
			o.weight = 1 + random() % 3;
			mac_of(o.mac, k);
			in[k] = true;
			weight[k] = o.weight;
		} else if (count > 1 && random() % 2) {
			o.kind = NODE_DEL;
			in[k] = false;
		} else {
			o.kind = NODE_WEIGHT;
			o.weight = 1 + (weight[k] % 3);
			weight[k] = o.weight;
		}
		v->n = 0;
		for (int i = 0; i < ATOM_POOL; i++)
			if (in[i]) {
				snprintf(v->name[v->n], 8, "n%d", i);
				v->weight[v->n++] = weight[i];
			}
		__atomic_store_n(&sh->published, ver, __ATOMIC_SEQ_CST);
		if (change(pin, &o)) {
			sh->failed = ver;
			break;
		}
		__atomic_store_n(&sh->installed, ver, __ATOMIC_SEQ_CST);
	}
	sh->done = 1;
}

/* Owner MAC index (the node's pool number) under version ver. */
static int owner_under(struct shared *sh, struct rm_slot **cache, __u32 *nslots,
		       const struct rm_seed *seed, __u32 ver, __u32 key)
{
	__u32 id;

	if (!cache[ver]) {
		struct version *v = &sh->v[ver];
		struct rm_node_spec specs[ATOM_POOL];
		struct rm_ring r;

		for (__u32 i = 0; i < v->n; i++) {
			snprintf(specs[i].name, RM_NAME_MAX, "%s", v->name[i]);
			specs[i].weight = v->weight[i];
			specs[i].id = atoi(v->name[i] + 1); /* pool number */
		}
		assert_int_equal(rm_ring_build(seed, specs, v->n, VNODES, &r),
				 0);
		nslots[ver] = rm_ring_nslots(&r);
		cache[ver] = calloc(nslots[ver], sizeof(struct rm_slot));
		rm_ring_encode(&r, cache[ver], nslots[ver]);
		rm_ring_free(&r);
	}
	assert_int_equal(rm_ring_lookup(cache[ver], nslots[ver], key, &id), 0);
	return (int)id;
}

/* A writer killed between its first and last write (simulated: the
 * marker set, a node record and a new service's meta written, no ring):
 * the maps disagree until the next writer, which rewrites everything
 * from the records; the data plane then follows them again. */
static void test_interrupted_change(void **state)
{
	struct fx *fx = *state;
	struct rm_snap *old = malloc(sizeof(*old)), *s = malloc(sizeof(*s));
	struct rm_svc_meta m = {
	    .name = "late",
	    .in_use = 1,
	    .vnodes = VNODES,
	    .key = {.port = htons(9), .proto = IPPROTO_TCP}};
	struct rm_slot *slots;
	struct rm_config cfg;
	struct rm_state st;
	struct rm_node b;
	__u32 zero = 0, late = 5, n;
	int slot;

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	add_node(fx->pin, "web", "b", 2, 1, NULL);
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_EX), 0);
	assert_int_equal(rm_state_read(&st, old), 0);
	assert_false(old->cfg.flags & RM_CFG_COMMITTING);
	/* the dead writer's first writes */
	cfg = old->cfg;
	cfg.flags |= RM_CFG_COMMITTING;
	assert_int_equal(
	    bpf_map_update_elem(st.fd[RM_M_CONFIG], &zero, &cfg, BPF_ANY), 0);
	slot = rm_snap_find_node(old, 0, "b");
	assert_true(slot >= 0);
	b = old->node[slot];
	b.weight = 3;
	assert_int_equal(bpf_map_update_elem(st.fd[RM_M_NODES], &(__u32){slot},
					     &b, BPF_ANY),
			 0);
	m.key.vip[0] = inet_addr("198.18.0.50");
	assert_int_equal(
	    bpf_map_update_elem(st.fd[RM_M_SVC_META], &late, &m, BPF_ANY), 0);
	rm_state_close(&st);

	/* what it left: web's ring is for weight 1, late has none */
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_EX), 0);
	assert_int_equal(rm_state_read(&st, s), 0);
	assert_true(s->cfg.flags & RM_CFG_COMMITTING);
	assert_int_equal(rm_state_ring_slots(&st, 0, &slots, &n), 0);
	assert_false(rm_ring_matches(s, 0, slots, n));
	free(slots);
	assert_int_not_equal(rm_state_ring_slots(&st, late, &slots, &n), 0);

	/* the next writer finishes the job */
	assert_int_equal(rm_state_repair(&st, s), 1);
	assert_false(s->cfg.flags & RM_CFG_COMMITTING);
	for (__u32 svc = 0; svc <= late; svc += late) {
		assert_int_equal(rm_state_ring_slots(&st, svc, &slots, &n), 0);
		assert_true(rm_ring_matches(s, svc, slots, n));
		free(slots);
	}
	assert_int_equal(rm_state_repair(&st, s), 0); /* nothing left to do */
	rm_state_close(&st);
	check_flows(fx, "web", 4, "198.18.0.10", IPPROTO_TCP, 80, false);
	free(old);
	free(s);
}

/* AddressSanitizer keeps freed memory in quarantine, so the process
 * grows without leaking: under it, LeakSanitizer checks leaks at exit and
 * the resident-size bound is not asserted. */
#if defined(__SANITIZE_ADDRESS__)
#define RM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RM_ASAN 1
#endif
#endif

static long fd_count(void)
{
	long n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static long rss_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static __u32 ring_id(const char *pin, __u32 svc)
{
	struct rm_state st;
	__u32 id = 0;

	assert_int_equal(rm_state_open(&st, pin, RM_LOCK_SH), 0);
	assert_int_equal(bpf_map_lookup_elem(st.fd[RM_M_RINGS], &svc, &id), 0);
	rm_state_close(&st);
	return id;
}

/* The id of service svc's spare array (state_spare.c), 0: none. */
static __u32 spare_id(const char *pin, __u32 svc)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	char path[RM_PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s%u", pin, RM_RING_SPARE_PIN, svc);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	assert_int_equal(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
	close(fd);
	return info.id;
}

/* The ring arrays service svc holds in the kernel, ids into keep[]: the
 * live one first, its generations, its spare (state_spare.c). */
static int held_rings(const char *pin, __u32 svc, __u32 *keep)
{
	struct rm_state st;
	int n = 0;

	keep[n++] = ring_id(pin, svc);
	assert_int_equal(rm_state_open(&st, pin, RM_LOCK_SH), 0);
	for (__u32 g = 0; g < RM_RING_GENS; g++) {
		__u32 key = svc * RM_RING_GENS + g;

		if (!bpf_map_lookup_elem(st.fd[RM_M_RINGS_OLD], &key, &keep[n]))
			n++;
	}
	rm_state_close(&st);
	keep[n] = spare_id(pin, svc);
	return keep[n] ? n + 1 : n;
}

/* One whole change, as ringctl makes it: node n0 of service 0 to weight w. */
static void weight_change(const char *pin, struct rm_snap *old,
			  struct rm_snap *new, __u32 w)
{
	struct rm_state st;
	int slot;

	assert_int_equal(rm_state_open(&st, pin, RM_LOCK_EX), 0);
	assert_int_equal(rm_state_read(&st, old), 0);
	memcpy(new, old, sizeof(*new));
	slot = rm_snap_find_node(new, 0, "n0");
	assert_true(slot >= 0);
	new->node[slot].weight = w;
	assert_int_equal(rm_state_commit(&st, old, new, 0), 0);
	rm_state_close(&st);
}

/* RM_STATE_CHANGES (10,000) changes, each a whole ringctl-style change
 * (open, lock, read, one node's weight, commit, close): the process holds
 * the same descriptors and about the same memory after as before, and
 * every ring a change replaced is gone from the kernel (its id no longer
 * opens), but the live one, its generations and the spare. */
static void test_many_changes(void **state)
{
	struct fx *fx = *state;
	const char *env = getenv("RM_STATE_CHANGES");
	long changes = env ? atol(env) : 10000, fds, rss;
	struct rm_snap *old = malloc(sizeof(*old)), *new = malloc(sizeof(*new));
	__u32 sampled[100], n_sampled = 0, live, keep[2 + RM_RING_GENS];
	int gone = 0, held;

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	for (int i = 0; i < 8; i++) {
		char name[8];

		snprintf(name, sizeof(name), "n%d", i);
		add_node(fx->pin, "web", name, i, 1, NULL);
	}
	/* warm: the allocator's and libbpf's first-use memory */
	for (long i = 0; i < 50; i++)
		weight_change(fx->pin, old, new, 1 + (__u32)(i % 2));
	fds = fd_count();
	rss = rss_kb();
	for (long i = 0; i < changes; i++) {
		weight_change(fx->pin, old, new, 1 + (__u32)(i % 3));
		if (i % (changes / 100 + 1) == 0 && n_sampled < 100)
			sampled[n_sampled++] = ring_id(fx->pin, 0);
	}
	live = ring_id(fx->pin, 0);
	print_message("%ld changes: %ld -> %ld descriptors, VmRSS %ld -> %ld "
		      "kB\n",
		      changes, fds, fd_count(), rss, rss_kb());
	assert_int_equal(fd_count(), fds);
#ifndef RM_ASAN
	assert_true(rss_kb() - rss < 4096);
#endif
	/* an array a change let go of is the service's spare (reused by
	 * the next change) or freed, after an RCU grace period: wait a
	 * little; what the kernel still holds is the live ring, its
	 * generations and the spare */
	held = held_rings(fx->pin, 0, keep);
	assert_true(held >= 2 && held <= 2 + RM_RING_GENS);
	for (int tries = 0; tries < 50 && gone < (int)n_sampled; tries++) {
		gone = 0;
		for (__u32 i = 0; i < n_sampled; i++) {
			bool kept = false;
			int fd;

			for (int k = 0; k < held; k++)
				kept = kept || sampled[i] == keep[k];
			fd = kept ? -1 : bpf_map_get_fd_by_id(sampled[i]);
			gone += fd < 0;
			if (fd >= 0)
				close(fd);
		}
		if (gone < (int)n_sampled)
			usleep(100000);
	}
	assert_int_equal(gone, n_sampled);
	assert_int_equal(live, keep[0]);
	free(old);
	free(new);
}

static void test_atomic_under_pressure(void **state)
{
	struct fx *fx = *state;
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct rm_slot **cache = calloc(ATOM_CHANGES + 2, sizeof(*cache));
	__u32 *nslots = calloc(ATOM_CHANGES + 2, sizeof(*nslots));
	struct rm_snap *s = malloc(sizeof(*s));
	unsigned long packets = 0, spread = 0;
	__u64 counters[RM_CNT_MAX];
	struct rm_state st;
	int status;
	pid_t pid;

	assert_true(sh != MAP_FAILED);
	add_svc(fx->pin, "atom", "198.18.0.30", 80, IPPROTO_TCP, false);
	add_node(fx->pin, "atom", "n0", 0, 1, NULL);
	sh->v[0].n = 1;
	snprintf(sh->v[0].name[0], 8, "n0");
	sh->v[0].weight[0] = 1;
	read_snap(fx->pin, s);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		atom_writer(fx->pin, sh);
		_exit(0);
	}
	while (!sh->done) {
		struct flow_in f;
		struct rm_flow fl = {0};
		__u32 lo, hi, key;
		__u8 mac[6];
		bool ok = false;
		int act;

		random_flow(&f, 4, "198.18.0.30", IPPROTO_TCP, 80);
		fl.src[0] = f.src[0];
		fl.dst[0] = f.dst[0];
		fl.sport = htons(f.sport);
		fl.dport = htons(f.dport);
		fl.proto = f.proto;
		fl.family = RM_FAMILY_V4;
		key = rm_flow_hash(&s->cfg.seed, &fl);
		/* the kernel ran on a version in [lo, hi] */
		lo = __atomic_load_n(&sh->installed, __ATOMIC_SEQ_CST);
		act = run_pkt(fx, &f, mac);
		hi = __atomic_load_n(&sh->published, __ATOMIC_SEQ_CST);
		assert_int_equal(act, XDP_TX); /* never dropped */
		for (__u32 v = lo; v <= hi && !ok; v++) {
			__u8 want[6];

			mac_of(want, owner_under(sh, cache, nslots,
						 &s->cfg.seed, v, key));
			ok = !memcmp(want, mac, 6);
		}
		if (!ok)
			fail_msg("packet %lu went to %02x, owner under none of "
				 "versions %u..%u",
				 packets, mac[5], lo, hi);
		spread += hi - lo;
		packets++;
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(sh->failed, 0);
	assert_int_equal(sh->installed, ATOM_CHANGES);
	assert_true(packets > 1000);
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_NONE), 0);
	assert_int_equal(rm_state_counters(&st, counters), 0);
	rm_state_close(&st);
	assert_int_equal(counters[RM_CNT_DROP_NO_NODE], 0);
	print_message("atomicity: %lu packets during %d changes, mean "
		      "version window %.2f\n",
		      packets, ATOM_CHANGES, (double)spread / packets);
	for (int i = 0; i < ATOM_CHANGES + 2; i++)
		free(cache[i]);
	free(cache);
	free(nslots);
	free(s);
	munmap(sh, sizeof(*sh));
}

/* Two writers at once: the lock serializes them, no change is lost. */
static void test_concurrent_writers(void **state)
{
	struct fx *fx = *state;
	struct rm_snap *s = malloc(sizeof(*s));
	pid_t pids[2];
	int status, svc;

	add_svc(fx->pin, "conc", "198.18.0.40", 80, IPPROTO_TCP, false);
	for (int w = 0; w < 2; w++) {
		pids[w] = fork();
		assert_true(pids[w] >= 0);
		if (pids[w])
			continue;
		for (int i = 0; i < 200; i++) {
			struct op o = {
			    .kind = NODE_ADD, .svc = "conc", .weight = 1};
			char name[16];

			snprintf(name, sizeof(name), "w%d-%d", w, i);
			o.node = name;
			mac_of(o.mac, 1000 * (w + 1) + i);
			if (change(fx->pin, &o))
				_exit(1);
		}
		_exit(0);
	}
	for (int w = 0; w < 2; w++) {
		assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	read_snap(fx->pin, s);
	svc = rm_snap_find_svc(s, "conc");
	for (int w = 0; w < 2; w++)
		for (int i = 0; i < 200; i++) {
			char name[16];

			snprintf(name, sizeof(name), "w%d-%d", w, i);
			assert_true(rm_snap_find_node(s, svc, name) >= 0);
		}
	free(s);
}

/* A new seed rebuilds every ring and the program follows it. */
static void test_seed_change(void **state)
{
	struct fx *fx = *state;
	struct op seed = {.kind = SEED, .seed = {1, 2}};

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	for (int i = 0; i < 4; i++) {
		char name[8];

		snprintf(name, sizeof(name), "s%d", i);
		add_node(fx->pin, "web", name, i, 1, NULL);
	}
	assert_int_equal(change(fx->pin, &seed), 0);
	check_flows(fx, "web", 4, "198.18.0.10", IPPROTO_TCP, 80, false);
}

/* ---- second chance: remembered ring generations (state_gens.c) ------- */

/* The live ring of svc, or generation g of it (g >= 0): slots, count. */
static struct rm_slot *ring_of(const char *pin, __u32 svc, int g, __u32 *n)
{
	struct rm_slot *slots = NULL;
	struct rm_state st;

	assert_int_equal(rm_state_open(&st, pin, RM_LOCK_SH), 0);
	if (g < 0)
		assert_int_equal(rm_state_ring_slots(&st, svc, &slots, n), 0);
	else if (rm_state_gen_slots(&st, svc, (__u32)g, &slots, n))
		slots = NULL;
	rm_state_close(&st);
	return slots;
}

/* a (the live ring before) and b (a generation) hold the same ring, b
 * stamped within [t0, t1]. */
static void same_ring_stamped(const struct rm_slot *a, __u32 na,
			      const struct rm_slot *b, __u32 nb, __u64 t0,
			      __u64 t1)
{
	__u64 stamp;

	assert_non_null(b);
	assert_int_equal(na, nb);
	assert_int_equal(a[0].a, b[0].a);
	assert_int_equal(a[0].b, b[0].b);
	assert_memory_equal(a + 1, b + 1, (size_t)(na - 1) * sizeof(*a));
	stamp = RM_RING_RETIRED_NS(&b[0]);
	assert_true(stamp >= t0 && stamp <= t1);
}

/* Each ring change retires the ring it replaces into generation 0,
 * stamped, older ones one down, the oldest out; a rewrite of the same
 * ring (restore) retires nothing. */
static void test_gens_rotation(void **state)
{
	struct fx *fx = *state;
	struct rm_slot *r[4] = {0}, *g;
	__u32 n[4], ng, id0, id1;
	__u64 t[4];
	struct rm_snap *s = malloc(sizeof(*s));
	struct rm_state st;

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	/* a new service replaced no ring */
	assert_int_equal(gen_id(fx->pin, 0, 0), 0);
	for (int i = 0; i < 3; i++) {
		char name[8];

		r[i] = ring_of(fx->pin, 0, -1, &n[i]);
		snprintf(name, sizeof(name), "n%d", i);
		t[i] = rm_mono_ns();
		add_node(fx->pin, "web", name, 10 + i, 1, NULL);
		t[i + 1] = rm_mono_ns();
		/* generation 0: the ring just replaced */
		g = ring_of(fx->pin, 0, 0, &ng);
		same_ring_stamped(r[i], n[i], g, ng, t[i], t[i + 1]);
		free(g);
		/* generation 1: the one before, moved down whole */
		g = ring_of(fx->pin, 0, 1, &ng);
		if (i == 0) {
			assert_null(g);
		} else {
			same_ring_stamped(r[i - 1], n[i - 1], g, ng, t[i - 1],
					  t[i]);
		}
		free(g);
	}
	/* the same ring written again (a restore: RM_APPLY_ALL) retires
	 * nothing: the generations keep their maps */
	id0 = gen_id(fx->pin, 0, 0);
	id1 = gen_id(fx->pin, 0, 1);
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_EX), 0);
	assert_int_equal(rm_state_read(&st, s), 0);
	assert_int_equal(rm_state_commit(&st, s, s, RM_APPLY_ALL), 0);
	rm_state_close(&st);
	assert_int_equal(gen_id(fx->pin, 0, 0), id0);
	assert_int_equal(gen_id(fx->pin, 0, 1), id1);
	for (int i = 0; i < 4; i++)
		free(r[i]);
	free(s);
}

/* Spare arrays (state_spare.c): the array the oldest generation let go of
 * is pinned as the service's spare, and the next ring is written into it;
 * the flows then go where userspace says. A spare some outer map holds
 * (pinned there by hand: what a crash could leave) or of another shape
 * is never written, and goes; a deleted service's goes. */
static void test_spares(void **state)
{
	struct fx *fx = *state;
	struct op del = {.kind = SVC_DEL, .svc = "web"};
	__u32 spare, live, g0, g1;
	char path[RM_PATH_MAX + 64];
	int fd;

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	/* a ring replaced, then the generations full: no array let go yet */
	add_node(fx->pin, "web", "b", 2, 1, NULL);
	add_node(fx->pin, "web", "c", 3, 1, NULL);
	assert_int_equal(spare_id(fx->pin, 0), 0);
	g1 = gen_id(fx->pin, 0, 1);
	assert_int_not_equal(g1, 0);
	/* this change lets generation 1's array go: it is the spare */
	add_node(fx->pin, "web", "d", 4, 1, NULL);
	spare = spare_id(fx->pin, 0);
	assert_int_equal(spare, g1);
	/* ... and the next ring is written into it */
	g1 = gen_id(fx->pin, 0, 1);
	add_node(fx->pin, "web", "e", 5, 1, NULL);
	assert_int_equal(ring_id(fx->pin, 0), spare);
	assert_int_equal(spare_id(fx->pin, 0), g1);
	check_flows(fx, "web", 4, "198.18.0.10", IPPROTO_TCP, 80, false);

	/* a spare the live ring is: left alone, unpinned */
	live = ring_id(fx->pin, 0);
	g0 = gen_id(fx->pin, 0, 0);
	snprintf(path, sizeof(path), "%s/%s0", fx->pin, RM_RING_SPARE_PIN);
	unlink(path);
	fd = bpf_map_get_fd_by_id(live);
	assert_true(fd >= 0);
	assert_int_equal(bpf_obj_pin(fd, path), 0);
	close(fd);
	add_node(fx->pin, "web", "f", 6, 1, NULL);
	assert_int_not_equal(ring_id(fx->pin, 0), live);
	assert_int_equal(gen_id(fx->pin, 0, 0), live);
	assert_int_equal(gen_id(fx->pin, 0, 1), g0);
	check_flows(fx, "web", 4, "198.18.0.10", IPPROTO_TCP, 80, false);
	/* the one this change let go of is pinned instead */
	assert_int_not_equal(spare_id(fx->pin, 0), live);
	assert_int_not_equal(spare_id(fx->pin, 0), 0);

	/* a spare of another shape: not written, gone */
	unlink(path);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rm_not_ring", 4, 16, 1024,
			    NULL);
	assert_true(fd >= 0);
	assert_int_equal(bpf_obj_pin(fd, path), 0);
	add_node(fx->pin, "web", "g", 7, 1, NULL);
	check_flows(fx, "web", 4, "198.18.0.10", IPPROTO_TCP, 80, false);
	{
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);

		assert_int_equal(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
		assert_int_not_equal(spare_id(fx->pin, 0), info.id);
		assert_int_not_equal(ring_id(fx->pin, 0), info.id);
	}
	close(fd);

	/* a deleted service's spare goes with it */
	assert_int_not_equal(spare_id(fx->pin, 0), 0);
	assert_int_equal(change(fx->pin, &del), 0);
	assert_int_equal(spare_id(fx->pin, 0), 0);
}

/* Generations go where they would name the wrong thing: window 0 on a
 * change (the service's), a deleted service (its), a seed change
 * (every one); a rolled-back change leaves them as they were. */
static void test_gens_dropped(void **state)
{
	struct fx *fx = *state;
	struct op off = {.kind = WINDOW, .window = 0};
	struct op on = {.kind = WINDOW, .window = 600};
	struct op seed = {.kind = SEED, .seed = {7, 8}};
	struct op del = {.kind = SVC_DEL, .svc = "dns"};

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_svc(fx->pin, "dns", "198.18.0.53", 53, IPPROTO_UDP, false);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	add_node(fx->pin, "web", "b", 2, 1, NULL);
	add_node(fx->pin, "dns", "a", 3, 1, NULL);
	add_node(fx->pin, "dns", "b", 4, 1, NULL);
	assert_int_not_equal(gen_id(fx->pin, 0, 0), 0);
	assert_int_not_equal(gen_id(fx->pin, 1, 0), 0);
	/* window 0: a change drops the changed service's generations */
	assert_int_equal(change(fx->pin, &off), 0);
	assert_int_not_equal(gen_id(fx->pin, 0, 0), 0);
	add_node(fx->pin, "web", "c", 5, 1, NULL);
	assert_int_equal(gen_id(fx->pin, 0, 0), 0);
	assert_int_not_equal(gen_id(fx->pin, 1, 0), 0);
	/* on again: remembered from the next change */
	assert_int_equal(change(fx->pin, &on), 0);
	add_node(fx->pin, "web", "d", 6, 1, NULL);
	assert_int_not_equal(gen_id(fx->pin, 0, 0), 0);
	/* a deleted service: its own */
	assert_int_equal(change(fx->pin, &del), 0);
	assert_int_equal(gen_id(fx->pin, 1, 0), 0);
	assert_int_equal(gen_id(fx->pin, 1, 1), 0);
	assert_int_not_equal(gen_id(fx->pin, 0, 0), 0);
	/* a new seed: every one (placed under the old seed) */
	assert_int_equal(change(fx->pin, &seed), 0);
	for (__u32 g = 0; g < RM_RING_GENS; g++)
		assert_int_equal(gen_id(fx->pin, 0, g), 0);
}

/* ---- node states and the connection table ----------------------------- */

/* The table's key of a flow of a 5-tuple service. */
static struct rm_flow flow_key(const struct flow_in *f)
{
	struct rm_flow k = {0};

	memcpy(k.src, f->src, sizeof(k.src));
	memcpy(k.dst, f->dst, sizeof(k.dst));
	k.sport = htons(f->sport);
	k.dport = htons(f->dport);
	k.proto = f->proto;
	k.family = f->family == 4 ? RM_FAMILY_V4 : RM_FAMILY_V6;
	return k;
}

/* The table of f's family; *k its key there (room for either key). */
static int conn_key(struct fx *fx, const struct flow_in *f, struct rm_flow *k)
{
	struct rm_flow flow = flow_key(f);

	if (flow.family == RM_FAMILY_V6) {
		*k = flow;
		return bpf_map__fd(fx->skel->maps.rm_conns6);
	}
	memset(k, 0, sizeof(*k));
	rm_conn_key4_of(&flow, (struct rm_conn_key4 *)k);
	return bpf_map__fd(fx->skel->maps.rm_conns);
}

static void get_conn(struct fx *fx, const struct flow_in *f, struct rm_conn *c)
{
	struct rm_flow k;
	int fd = conn_key(fx, f, &k);

	assert_int_equal(bpf_map_lookup_elem(fd, &k, c), 0);
}

static void put_conn(struct fx *fx, const struct flow_in *f, __u32 node,
		     __u32 gen, __u64 last_ns)
{
	struct rm_flow k;
	struct rm_conn c = {.node = node, .gen = gen, .last_ns = last_ns};
	int fd = conn_key(fx, f, &k);
	struct rm_flow flow = flow_key(f);

	/* the tag first, as the data plane writes (conntrack.h) */
	assert_int_equal(
	    rm_conn_idx_put(bpf_map__fd(fx->skel->maps.rm_conn_idx), &flow,
			    last_ns),
	    0);
	assert_int_equal(bpf_map_update_elem(fd, &k, &c, BPF_ANY), 0);
}

static void counters(struct fx *fx, __u64 out[RM_CNT_MAX])
{
	struct rm_state st;

	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_NONE), 0);
	assert_int_equal(rm_state_counters(&st, out), 0);
	rm_state_close(&st);
}

static void conn_count(struct fx *fx, struct rm_conn_count *c)
{
	struct rm_snap *s = malloc(sizeof(*s));
	struct rm_state st;

	read_snap(fx->pin, s);
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_NONE), 0);
	assert_int_equal(rm_state_conn_count(&st, s, c), 0);
	rm_state_close(&st);
	free(s);
}

static __u64 mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void set_state(struct fx *fx, const char *node, __u32 state)
{
	struct op o = {
	    .kind = NODE_STATE, .svc = "web", .node = node, .state = state};

	assert_int_equal(change(fx->pin, &o), 0);
}

/* The slots of service web's live ring: which nodes it names. */
static bool ring_names(struct fx *fx, __u32 slot)
{
	struct rm_snap *s = malloc(sizeof(*s));
	struct rm_slot *slots;
	struct rm_state st;
	struct rm_ring r;
	bool found = false;
	__u32 n;

	read_snap(fx->pin, s);
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_NONE), 0);
	assert_int_equal(
	    rm_state_ring_slots(&st, rm_snap_find_svc(s, "web"), &slots, &n),
	    0);
	rm_state_close(&st);
	assert_int_equal(
	    rm_ring_decode(slots, n, s, rm_snap_find_svc(s, "web"), &r), 0);
	for (__u32 i = 0; i < r.n_nodes; i++)
		found |= r.nodes[i].id == slot;
	rm_ring_free(&r);
	free(slots);
	free(s);
	return found;
}

/* web with nodes a (MAC 1) and b (MAC 2), and an open connection f that
 * the ring gave to b: its ACK went through and wrote the entry. */
struct two {
	int sa, sb;
	__u32 ga, gb;
	struct flow_in f;
};

static void two_nodes(struct fx *fx, struct two *t)
{
	struct rm_snap *s = malloc(sizeof(*s));
	struct rm_conn c;
	__u8 mac[6], want[6];
	int tries = 0;

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	add_node(fx->pin, "web", "b", 2, 1, NULL);
	read_snap(fx->pin, s);
	t->sa = rm_snap_find_node(s, 0, "a");
	t->sb = rm_snap_find_node(s, 0, "b");
	t->ga = s->node[t->sa].gen;
	t->gb = s->node[t->sb].gen;
	do {
		random_flow(&t->f, 4, "198.18.0.10", IPPROTO_TCP, 80);
		assert_true(++tries < 1000);
	} while (predict(fx->pin, "web", &t->f, false) != t->sb);
	t->f.ack = true;
	assert_int_equal(run_pkt(fx, &t->f, mac), XDP_TX);
	mac_of(want, 2);
	assert_memory_equal(mac, want, 6);
	get_conn(fx, &t->f, &c);
	assert_int_equal(c.node, t->sb);
	assert_int_equal(c.gen, t->gb);
	free(s);
}

/* Where the flow's next packet goes: the index of the MAC (mac_of). */
static int goes_to(struct fx *fx, const struct flow_in *f)
{
	__u8 mac[6], want[6];

	assert_int_equal(run_pkt(fx, f, mac), XDP_TX);
	for (int i = 0; i < 16; i++) {
		mac_of(want, i);
		if (!memcmp(mac, want, 6))
			return i;
	}
	fail_msg("packet left with an unknown MAC");
	return -1;
}

/* DRAINING: out of the ring, gen unchanged, its flows stay with it;
 * ACTIVE again: back in the ring, same gen. */
static void test_drain_keeps_flows(void **state)
{
	struct fx *fx = *state;
	struct rm_snap *s = malloc(sizeof(*s));
	struct rm_conn_count *cc = malloc(sizeof(*cc));
	__u64 c0[RM_CNT_MAX], c1[RM_CNT_MAX];
	struct two t;

	two_nodes(fx, &t);
	conn_count(fx, cc);
	assert_int_equal(cc->node[t.sb], 1);
	assert_int_equal(cc->recent[t.sb], 1);
	set_state(fx, "b", RM_NODE_DRAINING);
	read_snap(fx->pin, s);
	assert_int_equal(s->node[t.sb].state, RM_NODE_DRAINING);
	assert_int_equal(s->node[t.sb].gen, t.gb);
	assert_false(ring_names(fx, t.sb));
	assert_true(ring_names(fx, t.sa));
	/* the open connection stays on b, through the table */
	counters(fx, c0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(goes_to(fx, &t.f), 2);
	counters(fx, c1);
	assert_int_equal(c1[RM_CNT_CONN_HIT] - c0[RM_CNT_CONN_HIT], 5);
	assert_int_equal(c1[RM_CNT_CONN_STALE], c0[RM_CNT_CONN_STALE]);
	/* new connections never go to b */
	for (int i = 0; i < 200; i++) {
		struct flow_in g;

		random_flow(&g, 4, "198.18.0.10", IPPROTO_TCP, 80);
		assert_int_equal(goes_to(fx, &g), 1);
	}
	/* show counts the entry on b, still */
	conn_count(fx, cc);
	assert_int_equal(cc->node[t.sb], 1);
	assert_int_equal(cc->node[t.sa], 0);
	assert_int_equal(cc->stale, 0);
	/* back to active: the same gen, in the ring again */
	set_state(fx, "b", RM_NODE_ACTIVE);
	read_snap(fx->pin, s);
	assert_int_equal(s->node[t.sb].state, RM_NODE_ACTIVE);
	assert_int_equal(s->node[t.sb].gen, t.gb);
	assert_true(ring_names(fx, t.sb));
	assert_int_equal(goes_to(fx, &t.f), 2);
	check_flows(fx, "web", 4, "198.18.0.10", IPPROTO_TCP, 80, false);
	free(cc);
	free(s);
}

/* DOWN: out of the ring and gen + 1, so its flows' entries are stale at
 * their next packet, which goes to the ring owner and is remembered
 * there; back to ACTIVE keeps the new gen, and the flows stay moved. */
static void test_down_bumps_gen(void **state)
{
	struct fx *fx = *state;
	struct rm_snap *s = malloc(sizeof(*s));
	struct rm_conn_count *cc = malloc(sizeof(*cc));
	__u64 c0[RM_CNT_MAX], c1[RM_CNT_MAX];
	struct rm_conn c;
	struct two t;

	two_nodes(fx, &t);
	set_state(fx, "b", RM_NODE_DOWN);
	read_snap(fx->pin, s);
	assert_int_equal(s->node[t.sb].state, RM_NODE_DOWN);
	assert_int_equal(s->node[t.sb].gen, t.gb + 1);
	assert_int_equal(s->node[t.sa].gen, t.ga);
	assert_false(ring_names(fx, t.sb));
	conn_count(fx, cc);
	assert_int_equal(cc->node[t.sb], 0);
	assert_int_equal(cc->stale, 1);
	counters(fx, c0);
	assert_int_equal(goes_to(fx, &t.f), 1);
	counters(fx, c1);
	assert_int_equal(c1[RM_CNT_CONN_STALE] - c0[RM_CNT_CONN_STALE], 1);
	assert_int_equal(c1[RM_CNT_CONN_INSERT] - c0[RM_CNT_CONN_INSERT], 1);
	get_conn(fx, &t.f, &c);
	assert_int_equal(c.node, t.sa);
	assert_int_equal(c.gen, t.ga);
	conn_count(fx, cc);
	assert_int_equal(cc->node[t.sa], 1);
	assert_int_equal(cc->stale, 0);
	/* down again: nothing moves on */
	set_state(fx, "b", RM_NODE_DOWN);
	read_snap(fx->pin, s);
	assert_int_equal(s->node[t.sb].gen, t.gb + 1);
	/* draining from down: still cut off from what it had */
	put_conn(fx, &t.f, t.sb, t.gb, mono_now());
	set_state(fx, "b", RM_NODE_DRAINING);
	read_snap(fx->pin, s);
	assert_int_equal(s->node[t.sb].gen, t.gb + 1);
	assert_int_equal(goes_to(fx, &t.f), 1);
	set_state(fx, "b", RM_NODE_ACTIVE);
	read_snap(fx->pin, s);
	assert_int_equal(s->node[t.sb].state, RM_NODE_ACTIVE);
	assert_int_equal(s->node[t.sb].gen, t.gb + 1);
	assert_true(ring_names(fx, t.sb));
	assert_int_equal(goes_to(fx, &t.f), 1); /* its entry says a */
	check_flows(fx, "web", 4, "198.18.0.10", IPPROTO_TCP, 80, false);
	free(cc);
	free(s);
}

/* node del frees the slot (gen kept); the next owner of the slot gets
 * gen + 1, so an entry left for the deleted node never reaches the new
 * node's MAC. */
static void test_del_reuse_new_gen(void **state)
{
	struct fx *fx = *state;
	struct rm_snap *s = malloc(sizeof(*s)), *n = malloc(sizeof(*n));
	struct op del = {.kind = NODE_DEL, .svc = "web", .node = "b"};
	__u64 c0[RM_CNT_MAX], c1[RM_CNT_MAX];
	struct flow_in g, h;
	struct two t;
	__u8 mac[6];
	struct op off = {.kind = WINDOW, .window = 0};
	int tries = 0, slot;

	/* second chance off: a freed slot is taken again at once (with it
	 * on, not within the window: test_gens_slot_reuse) */
	assert_int_equal(change(fx->pin, &off), 0);
	two_nodes(fx, &t);
	set_state(fx, "b", RM_NODE_DRAINING); /* the graceful way out */
	assert_int_equal(change(fx->pin, &del), 0);
	read_snap(fx->pin, s);
	assert_int_equal(s->node[t.sb].state, RM_NODE_FREE);
	assert_int_equal(s->node[t.sb].gen, t.gb);
	assert_false(ring_names(fx, t.sb));
	/* the entry of the deleted node is stale: to the ring (a) */
	assert_int_equal(goes_to(fx, &t.f), 1);
	add_node(fx->pin, "web", "c", 3, 1, NULL);
	read_snap(fx->pin, s);
	slot = rm_snap_find_node(s, 0, "c");
	assert_int_equal(slot, t.sb); /* the slot is reused */
	assert_int_equal(s->node[slot].gen, t.gb + 1);
	/* g: owned by a now, with an entry left from the deleted b: goes
	 * to a, never to c. h: an entry of c's own gen: goes to c. */
	do {
		random_flow(&g, 4, "198.18.0.10", IPPROTO_TCP, 80);
		assert_true(++tries < 1000);
	} while (predict(fx->pin, "web", &g, false) != t.sa);
	h = g;
	h.sport ^= 1;
	g.ack = h.ack = true;
	put_conn(fx, &g, t.sb, t.gb, mono_now());
	put_conn(fx, &h, t.sb, t.gb + 1, mono_now());
	counters(fx, c0);
	assert_int_equal(goes_to(fx, &g), 1);
	assert_int_equal(goes_to(fx, &h), 3);
	counters(fx, c1);
	assert_int_equal(c1[RM_CNT_CONN_STALE] - c0[RM_CNT_CONN_STALE], 1);
	assert_int_equal(c1[RM_CNT_CONN_HIT] - c0[RM_CNT_CONN_HIT], 1);

	/* in a snapshot: the same node again keeps its slot and gen (a
	 * restore); the same name with another MAC is another node */
	read_snap(fx->pin, s);
	memcpy(n, s, sizeof(*n));
	rm_snap_node_del(n, slot);
	mac_of(mac, 3);
	assert_int_equal(rm_snap_node_add(n, s, 0, "c", mac, "lo", 1), slot);
	assert_int_equal(n->node[slot].gen, t.gb + 1);
	memcpy(n, s, sizeof(*n));
	rm_snap_node_del(n, slot);
	mac_of(mac, 9);
	assert_int_equal(rm_snap_node_add(n, s, 0, "c", mac, "lo", 1), slot);
	assert_int_equal(n->node[slot].gen, t.gb + 2);
	/* a slot freed by a change is not taken by the same change */
	memcpy(n, s, sizeof(*n));
	rm_snap_node_del(n, slot);
	assert_true(rm_snap_node_add(n, s, 0, "d", mac, "lo", 1) != slot);
	free(s);
	free(n);
}

/* The per-node counts of show, against entries put in the table by hand,
 * and the data plane judging each entry as rm_conn_valid() does. */
static void test_conn_count(void **state)
{
	struct fx *fx = *state;
	struct rm_conn_count *cc = malloc(sizeof(*cc));
	struct rm_snap *s = malloc(sizeof(*s));
	/* UDP ages 30 s clear of the timeout either way: the checks below
	 * run a ringctl process, which on a busy machine takes seconds */
	struct op cfg = {.kind = CONFIG, .udp_timeout = 60, .insert_rate = 0};
	struct {
		int node; /* 0 a, 1 b, 2 c (down), 3 d (dns); -1 bogus */
		int gen_off, count;
		__s64 age_s;
		bool udp, valid, recent;
	} plan[] = {
	    {0, 0, 5, 0, false, true, true},
	    {1, 0, 3, 3600, false, true, false}, /* TCP never ages out */
	    {2, -1, 2, 0, false, false, false},	 /* before the down */
	    {2, 0, 1, 0, false, false, false},	 /* DOWN whatever the gen */
	    {1, 7, 1, 0, false, false, false},	 /* a gen b never had */
	    {3, 0, 2, 5, true, true, true},
	    {3, 0, 1, 90, true, false, false}, /* UDP idle past 60 s */
	    {3, 0, 1, 30, true, true, false},
	    {-1, 0, 1, 0, false, false, false},
	};
	struct flow_in flows[32];
	__u32 put_node[32], put_gen[32];
	__u64 put_age[32];
	bool valid[32];
	int slot[4], nf = 0, stale = 0;
	__u32 want[4] = {0}, want_recent[4] = {0};
	const char *ctl = ringctl_path();
	__u64 now;

	add_svc(fx->pin, "web", "198.18.0.10", 80, IPPROTO_TCP, false);
	add_svc(fx->pin, "dns", "198.18.0.53", 53, IPPROTO_UDP, false);
	add_node(fx->pin, "web", "a", 1, 1, NULL);
	add_node(fx->pin, "web", "b", 2, 1, NULL);
	add_node(fx->pin, "web", "c", 3, 1, NULL);
	add_node(fx->pin, "dns", "d", 4, 1, NULL);
	set_state(fx, "c", RM_NODE_DOWN);
	assert_int_equal(change(fx->pin, &cfg), 0);
	read_snap(fx->pin, s);
	assert_int_equal(s->cfg.udp_timeout_s, 60);
	for (int i = 0; i < 4; i++)
		slot[i] =
		    rm_snap_find_node(s, i < 3 ? 0 : 1, (char[]){'a' + i, 0});
	now = mono_now();
	for (size_t p = 0; p < sizeof(plan) / sizeof(plan[0]); p++)
		for (int k = 0; k < plan[p].count; k++) {
			struct flow_in *f = &flows[nf];
			__u32 node = plan[p].node < 0 ? RM_MAX_NODES + 5
						      : slot[plan[p].node];
			__u32 gen = plan[p].node < 0 ? 0 : s->node[node].gen;

			if (plan[p].udp)
				random_flow(f, 4, "198.18.0.53", IPPROTO_UDP,
					    53);
			else
				random_flow(f, 4, "198.18.0.10", IPPROTO_TCP,
					    80);
			f->sport = 1000 + nf; /* distinct flows */
			f->ack = true;
			put_node[nf] = node;
			put_gen[nf] = gen + plan[p].gen_off;
			put_age[nf] = plan[p].age_s * 1000000000LL;
			put_conn(fx, f, node, put_gen[nf], now - put_age[nf]);
			valid[nf++] = plan[p].valid;
			if (!plan[p].valid) {
				stale++;
				continue;
			}
			want[plan[p].node]++;
			want_recent[plan[p].node] += plan[p].recent;
		}
	conn_count(fx, cc);
	assert_int_equal(cc->entries, nf);
	assert_int_equal(cc->stale, stale);
	assert_int_equal(cc->max_entries, rm_conn_entries(0));
	for (int i = 0; i < 4; i++) {
		assert_int_equal(cc->node[slot[i]], want[i]);
		assert_int_equal(cc->recent[slot[i]], want_recent[i]);
	}
	/* ringctl show --json reports the same */
	assert_int_equal(
	    sh("%s --pin-dir %s show --json | python3 -c '"
	       "import json,sys; d=json.load(sys.stdin); "
	       "n={x[\"name\"]+\"/\"+s[\"name\"]: (x[\"conns\"], "
	       "x[\"conns_recent\"]) for s in d[\"services\"] for x in "
	       "s[\"nodes\"]}; t=d[\"conn_table\"]; "
	       "sys.exit(0 if n==%s and t[\"entries\"]==%d and "
	       "t[\"stale\"]==%d and t[\"udp_timeout_s\"]==60 else 1)'",
	       ctl, fx->pin,
	       "{\"a/web\":(5,5),\"b/web\":(3,0),\"c/web\":(0,0),"
	       "\"d/dns\":(3,2)}",
	       nf, stale),
	    0);
	/* the data plane takes exactly the entries counted as valid; the
	 * entries again with their ages from now, as the checks above can
	 * take many seconds on a loaded machine (python's start alone) */
	read_snap(fx->pin, s);
	now = mono_now();
	for (int i = 0; i < nf; i++)
		put_conn(fx, &flows[i], put_node[i], put_gen[i],
			 now - put_age[i]);
	for (int i = 0; i < nf; i++) {
		__u64 c0[RM_CNT_MAX], c1[RM_CNT_MAX];
		__u8 mac[6];

		counters(fx, c0);
		run_pkt(fx, &flows[i], mac);
		counters(fx, c1);
		if (c1[RM_CNT_CONN_HIT] - c0[RM_CNT_CONN_HIT] !=
		    (__u64)valid[i])
			fail_msg("entry %d: data plane %s, rm_conn_valid %s", i,
				 valid[i] ? "stale" : "hit",
				 valid[i] ? "valid" : "stale");
		assert_int_equal(c1[RM_CNT_CONN_STALE] - c0[RM_CNT_CONN_STALE],
				 !valid[i]);
	}
	free(cc);
	free(s);
}

/* The table's size: asked for at creation, rounded to whole CPUs as the
 * kernel does, adopted by later loads that ask nothing, refused with the
 * way to resize when another size is asked for. */
static void test_conn_table_size(void **state)
{
	struct fx *fx = *state;
	struct ringmaster_bpf *skel;
	char pin[160];
	struct rm_state st;
	int ncpus = libbpf_num_possible_cpus();
	__u32 max, want = rm_conn_entries(1001);

	snprintf(pin, sizeof(pin), "%s-copy", fx->pin);
	assert_true(want >= 1001 && want < 1001 + (__u32)ncpus);
	assert_int_equal(want % ncpus, 0);
	assert_int_equal(rm_conn_entries(0),
			 rm_conn_entries(RM_DEFAULT_CONN_ENTRIES));
	assert_int_equal(rm_state_create_sized(pin, 1001, NULL), 0);
	assert_int_equal(rm_state_open(&st, pin, RM_LOCK_NONE), 0);
	assert_int_equal(rm_state_conn_max(&st, &max), 0);
	rm_state_close(&st);
	assert_int_equal(max, want);
	/* again: with no size, or the same one */
	assert_int_equal(rm_state_create_sized(pin, 0, NULL), 0);
	assert_int_equal(rm_state_create_sized(pin, 1001, NULL), 0);
	assert_int_equal(rm_state_create(pin, NULL), 0);
	/* another size: refused, saying how to resize */
	assert_int_equal(rm_state_create_sized(pin, 5000, NULL), -EEXIST);
	assert_non_null(strstr(rm_errmsg(), "ringload purge"));
	assert_non_null(strstr(rm_errmsg(), "--conn-table 5000"));
	/* what attach does for each interface: a new instance on the pins */
	skel = ringmaster_bpf__open();
	assert_non_null(skel);
	assert_int_equal(rm_obj_pin_maps(skel->obj, pin), 0);
	assert_int_equal(bpf_map__max_entries(skel->maps.rm_conns), want);
	/* the presence index follows the table's size */
	assert_int_equal(bpf_map__max_entries(skel->maps.rm_conn_idx),
			 RM_CONN_IDX_ENTRIES(want));
	assert_int_equal(ringmaster_bpf__load(skel), 0);
	ringmaster_bpf__destroy(skel);
	assert_int_equal(rm_state_purge(pin), 0);
	assert_int_equal(
	    rm_state_create_sized(pin, RM_CONN_ENTRIES_MAX + 1, NULL), -ERANGE);
	rm_state_purge(pin);
	/* the default table of the fixture */
	assert_int_equal(rm_state_open(&st, fx->pin, RM_LOCK_NONE), 0);
	assert_int_equal(rm_state_conn_max(&st, &max), 0);
	rm_state_close(&st);
	assert_int_equal(max, rm_conn_entries(0));
}

/* The UDP timeout set through the configuration is the one the data
 * plane applies. */
static void test_udp_timeout(void **state)
{
	struct fx *fx = *state;
	struct op cfg = {.kind = CONFIG, .udp_timeout = 30, .insert_rate = 777};
	struct rm_snap *s = malloc(sizeof(*s));
	struct flow_in f;
	__u64 c0[RM_CNT_MAX], c1[RM_CNT_MAX];
	struct rm_conn c;
	int a, b;

	add_svc(fx->pin, "dns", "198.18.0.53", 53, IPPROTO_UDP, false);
	add_node(fx->pin, "dns", "a", 1, 1, NULL);
	add_node(fx->pin, "dns", "b", 2, 1, NULL);
	read_snap(fx->pin, s);
	assert_int_equal(s->cfg.udp_timeout_s, RM_DEFAULT_UDP_TIMEOUT_S);
	assert_int_equal(s->cfg.conn_insert_rate, RM_DEFAULT_CONN_INSERT_RATE);
	a = rm_snap_find_node(s, 0, "a");
	b = rm_snap_find_node(s, 0, "b");
	random_flow(&f, 4, "198.18.0.53", IPPROTO_UDP, 53);
	/* an entry pointing away from the ring owner, 40 s idle: valid
	 * under 60 s, stale under 30 s */
	{
		int own = predict(fx->pin, "dns", &f, false);
		int other = own == a ? b : a;

		put_conn(fx, &f, other, s->node[other].gen,
			 mono_now() - 40 * 1000000000ULL);
		assert_int_equal(goes_to(fx, &f), other == a ? 1 : 2);
		put_conn(fx, &f, other, s->node[other].gen,
			 mono_now() - 40 * 1000000000ULL);
		assert_int_equal(change(fx->pin, &cfg), 0);
		read_snap(fx->pin, s);
		assert_int_equal(s->cfg.udp_timeout_s, 30);
		assert_int_equal(s->cfg.conn_insert_rate, 777);
		counters(fx, c0);
		assert_int_equal(goes_to(fx, &f), own == a ? 1 : 2);
		counters(fx, c1);
		assert_int_equal(c1[RM_CNT_CONN_STALE] - c0[RM_CNT_CONN_STALE],
				 1);
		get_conn(fx, &f, &c);
		assert_int_equal(c.node, own);
	}
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_ring_content, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ring_format, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ring_owned, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dataplane_follows_lookup,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_input_unchanged, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_dry_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vip_filter_tracks_keys, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_frag_and_states, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_save_restore_roundtrip, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_seed_change, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gens_rotation, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gens_dropped, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_spares, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rollback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_interrupted_change, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_many_changes, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_concurrent_writers, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_atomic_under_pressure, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_drain_keeps_flows, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_down_bumps_gen, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_del_reuse_new_gen, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_conn_count, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_conn_table_size, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_udp_timeout, setup, teardown),
	};

	libbpf_set_print(NULL);
	if (geteuid()) {
		fprintf(stderr, "test_state: SKIPPING: needs root (BPF maps, "
				"namespaces): run as root\n");
		return RM_TEST_SKIP;
	}
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
