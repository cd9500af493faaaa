/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Data-plane test fixture: the program loaded from its skeleton (no
 * pinning), map helpers that do what the control plane will do, and
 * bpf_prog_test_run_opts around one frame.
 */
#ifndef DP_FIXTURE_H
#define DP_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <ringmaster/rm_common.h>
#include <ringmaster/rm_conn.h>
#include <ringmaster/rm_hash.h>
#include "ring.h"
#include "ring_map.h"
#include "state.h"
#include "vip_filter.h"
#include "ringmaster.skel.h"
#include "director_obj.h"
#include "dp_packet.h"

/* The SipHash reference key (00 01 .. 0f): fixed, so failures reproduce. */
static const struct rm_seed dp_seed = {
    .k0 = 0x0706050403020100ULL,
    .k1 = 0x0f0e0d0c0b0a0908ULL,
};

/* What the test remembers of each service it installed. */
struct dp_svc {
	int used;
	__u32 flags;	       /* RM_SVC_F_* */
	struct rm_slot *slots; /* the ring as pushed, for expected owners */
	__u32 nslots;
};

struct dp_fx {
	struct ringmaster_bpf *skel;
	int prog, services, rings, nodes, config, counters, svc_stats,
	    node_stats, tx_ports, conns, conns6, vip_slots, svc_meta,
	    conn_idx;
	int ncpus;
	struct dp_svc svc[RM_MAX_SERVICES];
};

/* Node id -> the MACs it is given: unique per id, so the output frame
 * says which node the program picked. */
static inline void dp_node_mac(__u32 id, __u8 *mac)
{
	mac[0] = 0x02;
	mac[1] = 0x4e;
	mac[2] = 0;
	mac[3] = (id >> 16) & 0xff;
	mac[4] = (id >> 8) & 0xff;
	mac[5] = id & 0xff;
}

static inline void dp_node_src_mac(__u32 id, __u8 *mac)
{
	dp_node_mac(id, mac);
	mac[1] = 0x5a;
}

/* Node id from a node MAC, or -1. */
static inline long dp_mac_node(const __u8 *mac)
{
	if (mac[0] != 0x02 || mac[1] != 0x4e || mac[2] != 0)
		return -1;
	return (mac[3] << 16) | (mac[4] << 8) | mac[5];
}

/* Load the program. NULL with *err the -errno and *why a reason if it
 * cannot be loaded; -EPERM means BPF is not open to this user. */
static inline struct dp_fx *dp_fx_open(int *err, char *why, size_t why_len);

/* The same, as a director in slot chain_slot of the program array
 * chain_fd (rm_chain.h); dp_fx_open is the unchained one. */
static inline struct dp_fx *dp_fx_open_chained(int *err, char *why,
					       size_t why_len,
					       __u32 chain_slot, int chain_fd)
{
	struct dp_fx *fx = calloc(1, sizeof(*fx));

	if (!fx) {
		*err = -ENOMEM;
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	fx->skel = rm_director_open();
	if (fx->skel) {
		fx->skel->rodata->rm_chain_slot = chain_slot;
		errno = chain_fd >= 0 ? -bpf_map__reuse_fd(
					    fx->skel->maps.rm_chain, chain_fd)
				      : 0;
		if (errno || ringmaster_bpf__load(fx->skel)) {
			int e = errno;

			ringmaster_bpf__destroy(fx->skel);
			fx->skel = NULL;
			errno = e;
		}
	}
	if (!fx->skel) {
		*err = -errno;
		snprintf(why, why_len, "cannot load the XDP program (%s)%s",
			 strerror(errno), geteuid() ? ", not root" : "");
		free(fx);
		return NULL;
	}
	fx->prog = bpf_program__fd(fx->skel->progs.rm_xdp);
	fx->services = bpf_map__fd(fx->skel->maps.rm_services);
	fx->rings = bpf_map__fd(fx->skel->maps.rm_rings);
	fx->nodes = bpf_map__fd(fx->skel->maps.rm_nodes);
	fx->config = bpf_map__fd(fx->skel->maps.rm_config);
	fx->counters = bpf_map__fd(fx->skel->maps.rm_counters);
	fx->svc_stats = bpf_map__fd(fx->skel->maps.rm_svc_stats);
	fx->node_stats = bpf_map__fd(fx->skel->maps.rm_node_stats);
	fx->tx_ports = bpf_map__fd(fx->skel->maps.rm_tx_ports);
	fx->conns = bpf_map__fd(fx->skel->maps.rm_conns);
	fx->conns6 = bpf_map__fd(fx->skel->maps.rm_conns6);
	fx->vip_slots = bpf_map__fd(fx->skel->maps.rm_vip_slots);
	fx->svc_meta = bpf_map__fd(fx->skel->maps.rm_svc_meta);
	fx->conn_idx = bpf_map__fd(fx->skel->maps.rm_conn_idx);
	fx->ncpus = libbpf_num_possible_cpus();
	return fx;
}

static inline struct dp_fx *dp_fx_open(int *err, char *why, size_t why_len)
{
	return dp_fx_open_chained(err, why, why_len, RM_CHAIN_NONE, -1);
}

/* A test group's fixture: 0 with *out set; 0 with *out NULL when BPF is
 * not open to this user (every test then skips, saying why); -1 on any
 * other failure (the verifier's, say). */
static inline int dp_fx_open_group(const char *who, struct dp_fx **out,
				   char *why, size_t why_len)
{
	int err = 0;

	*out = dp_fx_open(&err, why, why_len);
	if (*out)
		return 0;
	if (err == -EPERM || geteuid() != 0) {
		fprintf(stderr, "%s: SKIPPING: %s\n", who, why);
		return 0;
	}
	fprintf(stderr, "%s: %s\n", who, why);
	return -1;
}

static inline void dp_fx_close(struct dp_fx *fx)
{
	int i;

	if (!fx)
		return;
	for (i = 0; i < RM_MAX_SERVICES; i++)
		free(fx->svc[i].slots);
	ringmaster_bpf__destroy(fx->skel);
	free(fx);
}

/* In a cmocka test: skip it, loudly and counted, when the fixture could
 * not be opened (why says why; the runner fails a skip on this machine). */
#define DP_NEED_FX(fx, why, skipped)                                           \
	do {                                                                   \
		if (!(fx)) {                                                   \
			print_message("SKIP: %s\n", why);                      \
			(skipped)++;                                           \
			skip();                                                \
		}                                                              \
	} while (0)

/* A test file's group functions around its one fixture: group_setup
 * opens it (then setup() fills it), group_teardown closes it, and
 * NEED_BPF() starts each test. The file declares fx, skip_why[] and
 * skipped, and puts this after setup(). */
#define DP_FX_GROUP(who, setup)                                                \
	static int group_setup(void **state)                                   \
	{                                                                      \
		(void)state;                                                   \
		if (dp_fx_open_group(who, &fx, skip_why, sizeof(skip_why)))    \
			return -1;                                             \
		return fx ? setup() : 0;                                       \
	}                                                                      \
	static int group_teardown(void **state)                                \
	{                                                                      \
		(void)state;                                                   \
		dp_fx_close(fx);                                               \
		fx = NULL;                                                     \
		return 0;                                                      \
	}
#define NEED_BPF() DP_NEED_FX(fx, skip_why, skipped)

/* The whole config; udp_timeout_s and conn_insert_rate 0 mean what they
 * mean to the data plane (default timeout, no limit). */
static inline int dp_set_config_full(struct dp_fx *fx, __u32 flags,
				     __u32 udp_timeout_s,
				     __u32 conn_insert_rate)
{
	struct rm_config cfg = {
	    .seed = dp_seed,
	    .udp_timeout_s = udp_timeout_s,
	    .flags = flags,
	    .conn_insert_rate = conn_insert_rate,
	};
	__u32 zero = 0;

	return bpf_map_update_elem(fx->config, &zero, &cfg, BPF_ANY);
}

/* The config the control plane writes, with the given flags. */
static inline int dp_set_config(struct dp_fx *fx, __u32 flags)
{
	return dp_set_config_full(fx, flags, 60, RM_DEFAULT_CONN_INSERT_RATE);
}

/* A node slot as the control plane fills it, generation gen. */
static inline int dp_set_node_gen(struct dp_fx *fx, __u32 id, __u32 ifindex,
				  __u32 state, __u32 gen)
{
	struct rm_node n = {
	    .ifindex = ifindex,
	    .state = state,
	    .gen = gen,
	    .weight = 1,
	};

	dp_node_mac(id, n.mac);
	dp_node_src_mac(id, n.src_mac);
	snprintf(n.name, sizeof(n.name), "n%u", id);
	return bpf_map_update_elem(fx->nodes, &id, &n, BPF_ANY);
}

static inline int dp_set_node(struct dp_fx *fx, __u32 id, __u32 ifindex,
			      __u32 state)
{
	return dp_set_node_gen(fx, id, ifindex, state, 1);
}

/* ---- rm_conns, rm_conns6 ---------------------------------------------- */
/* The table of f's family and f's key in it (key: room for either). */
static inline int dp_conn_key(const struct dp_fx *fx, const struct rm_flow *f,
			      struct rm_flow *key)
{
	if (f->family == RM_FAMILY_V6) {
		*key = *f;
		return fx->conns6;
	}
	memset(key, 0, sizeof(*key));
	rm_conn_key4_of(f, (struct rm_conn_key4 *)key);
	return fx->conns;
}

/* Entry of a flow: 0, -ENOENT, or another -errno. */
static inline int dp_conn_get(const struct dp_fx *fx, const struct rm_flow *f,
			      struct rm_conn *c)
{
	struct rm_flow k;
	int fd = dp_conn_key(fx, f, &k);

	return bpf_map_lookup_elem(fd, &k, c) ? -errno : 0;
}

/* An entry as the data plane writes it: the tag, then the entry. */
static inline int dp_conn_put(const struct dp_fx *fx, const struct rm_flow *f,
			      const struct rm_conn *c)
{
	struct rm_flow k;
	int fd = dp_conn_key(fx, f, &k),
	    err = rm_conn_idx_put(fx->conn_idx, f, c->last_ns);

	if (err)
		return err;
	return bpf_map_update_elem(fd, &k, c, BPF_ANY) ? -errno : 0;
}

/* Entries in both tables, or -errno. */
static inline long dp_conns_count(const struct dp_fx *fx)
{
	const int fds[2] = {fx->conns, fx->conns6};
	struct rm_flow k, next; /* room for either key */
	long n = 0;
	int err;

	for (int i = 0; i < 2; i++) {
		err = bpf_map_get_next_key(fds[i], NULL, &next);
		while (!err) {
			n++;
			k = next;
			err = bpf_map_get_next_key(fds[i], &k, &next);
		}
		if (errno != ENOENT)
			return -errno;
	}
	return n;
}

/* Empty both tables: 0 or -errno. Deleting the first key over and over
 * cannot skip entries the way a walk that deletes behind itself can. */
static inline int dp_conns_clear(const struct dp_fx *fx)
{
	const int fds[2] = {fx->conns, fx->conns6};
	struct rm_flow k;

	for (int i = 0; i < 2; i++) {
		while (!bpf_map_get_next_key(fds[i], NULL, &k))
			if (bpf_map_delete_elem(fds[i], &k) && errno != ENOENT)
				return -errno;
		if (errno != ENOENT)
			return -errno;
	}
	return rm_conn_idx_clear(fx->conn_idx);
}

/* The rm_services key of a service. family 4/6; port host order. */
static inline void dp_svc_key(struct rm_svc_key *key, int family,
			      const char *vip, __u8 proto, __u16 port,
			      __u8 key_flags)
{
	memset(key, 0, sizeof(*key));
	dp_addr(family, vip, (__u8 *)key->vip);
	key->port = htons(port);
	key->proto = proto;
	key->flags = key_flags | (family == 6 ? RM_SVCK_V6 : 0);
}

/* One rm_services entry, the way the control plane writes one: for a
 * key other than a fragment key the meta of id first (the last such key
 * of an id is the one its meta holds), then the key's rm_vip_slots slot,
 * then the key. family 4/6; port host order, 0 = any. */
static inline int dp_add_service(struct dp_fx *fx, int family, const char *vip,
				 __u8 proto, __u16 port, __u8 key_flags,
				 __u32 id, __u32 svc_flags)
{
	struct rm_svc_key key;
	struct rm_svc val = {.id = id, .flags = svc_flags};
	int err;

	dp_svc_key(&key, family, vip, proto, port, key_flags);
	fx->svc[id].used = 1;
	fx->svc[id].flags = svc_flags;
	if (!(key_flags & RM_SVCK_FRAG)) {
		struct rm_svc_meta m = {
		    .key = key, .flags = svc_flags, .in_use = 1};

		if (bpf_map_update_elem(fx->svc_meta, &id, &m, BPF_ANY))
			return -errno;
	}
	err = rm_vip_slots_add(fx->vip_slots, &key, id);
	if (err)
		return err;
	return bpf_map_update_elem(fx->services, &key, &val, BPF_ANY);
}

/* A service the way ringctl installs it: the key, and the RM_SVCK_FRAG
 * key of its (VIP, proto) that non-first fragments match, unless one is
 * there already; a 3-tuple service takes it over from a 5-tuple one. */
static inline int dp_service(struct dp_fx *fx, int family, const char *vip,
			     __u8 proto, __u16 port, __u32 id, __u32 svc_flags)
{
	__u32 three = svc_flags & RM_SVC_F_3TUPLE;
	struct rm_svc_key fk;
	struct rm_svc cur;
	int err =
	    dp_add_service(fx, family, vip, proto, port, 0, id, svc_flags);

	dp_svc_key(&fk, family, vip, proto, 0, RM_SVCK_FRAG);
	if (!err && (bpf_map_lookup_elem(fx->services, &fk, &cur) ||
		     (three && !(cur.flags & RM_SVC_F_3TUPLE))))
		err = dp_add_service(fx, family, vip, proto, 0, RM_SVCK_FRAG,
				     id, three);
	return err;
}

/* Push encoded slots as service id's ring: a new inner array sized to the
 * ring, filled, then swapped into rm_rings. The test keeps a copy. */
static inline int dp_push_slots(struct dp_fx *fx, __u32 id,
				const struct rm_slot *slots, __u32 nslots)
{
	int fd, err;

	fd = rm_ring_map_create(slots, nslots, "rm_ring");
	if (fd < 0)
		return fd;
	err = bpf_map_update_elem(fx->rings, &id, &fd, BPF_ANY);
	close(fd);
	if (err)
		return err;
	free(fx->svc[id].slots);
	fx->svc[id].slots = malloc((size_t)nslots * sizeof(*slots));
	if (!fx->svc[id].slots)
		return -ENOMEM;
	memcpy(fx->svc[id].slots, slots, (size_t)nslots * sizeof(*slots));
	fx->svc[id].nslots = nslots;
	return 0;
}

/* Build a ring of nodes first_id.. (weight 1, names "n<id>", ketama
 * hosts "198.18.0.<id>" on port 11211) under ring scheme spec with the
 * fixture seed and push it for every service id in ids. */
static inline int dp_push_ring_spec(struct dp_fx *fx,
				    const struct rm_ring_spec *spec,
				    const __u32 *ids, int n_ids,
				    __u32 first_id, __u32 n_nodes,
				    __u32 vnodes)
{
	struct rm_node_spec *specs =
	    calloc(n_nodes ? n_nodes : 1, sizeof(*specs));
	struct rm_ring ring;
	struct rm_slot *slots = NULL;
	__u32 i, nslots;
	int err;

	if (!specs)
		return -ENOMEM;
	for (i = 0; i < n_nodes; i++) {
		snprintf(specs[i].name, sizeof(specs[i].name), "n%u",
			 first_id + i);
		specs[i].weight = 1;
		specs[i].id = first_id + i;
		snprintf(specs[i].host, sizeof(specs[i].host), "198.18.%u.%u",
			 (first_id + i) >> 8, (first_id + i) & 0xff);
	}
	err = rm_ring_build_spec(&dp_seed, spec, specs, n_nodes, vnodes,
				 &ring);
	free(specs);
	if (err)
		return err;
	nslots = rm_ring_nslots(&ring);
	slots = calloc(nslots, sizeof(*slots));
	err = slots ? rm_ring_encode(&ring, slots, nslots) : -ENOMEM;
	for (i = 0; !err && i < (__u32)n_ids; i++)
		err = dp_push_slots(fx, ids[i], slots, nslots);
	free(slots);
	rm_ring_free(&ring);
	return err;
}

/* dp_push_ring_spec() of a ringmaster ring (the keyed hash). */
static inline int dp_push_ring(struct dp_fx *fx, const __u32 *ids, int n_ids,
			       __u32 first_id, __u32 n_nodes, __u32 vnodes)
{
	static const struct rm_ring_spec ringmaster = {0};

	return dp_push_ring_spec(fx, &ringmaster, ids, n_ids, first_id,
				 n_nodes, vnodes);
}

/* Owner the userspace ring gives the flow, or -1 with no owner. */
static inline long dp_expected_owner(const struct dp_fx *fx, __u32 svc_id,
				     const struct rm_flow *f)
{
	const struct dp_svc *s = &fx->svc[svc_id];
	__u32 id;

	if (!s->slots ||
	    rm_ring_lookup(s->slots, s->nslots, rm_flow_hash(&dp_seed, f),
			   &id) != 0 /* RM_SEARCH_OK */)
		return -1;
	return id;
}

struct dp_run {
	int err; /* 0, or -errno from test_run */
	__u32 retval;
	__u8 out[DP_PKT_MAX];
	__u32 out_len;
};

/* Run one frame. ifindex != 0 sets xdp_md.ingress_ifindex through ctx_in;
 * without it test_run receives on loopback (ifindex 1) anyway. */
static inline void dp_run(const struct dp_fx *fx, const void *data, __u32 len,
			  __u32 ifindex, struct dp_run *r)
{
	struct xdp_md ctx = {.data_end = len, .ingress_ifindex = ifindex};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = data, .data_size_in = len,
		    .data_out = r->out, .data_size_out = sizeof(r->out),
		    .repeat = 1);

	if (ifindex) {
		o.ctx_in = &ctx;
		o.ctx_size_in = sizeof(ctx);
	}
	memset(r->out, 0, 64);
	r->err = bpf_prog_test_run_opts(fx->prog, &o);
	r->retval = o.retval;
	r->out_len = o.data_size_out;
}

static inline int dp_counters(const struct dp_fx *fx, __u64 *out)
{
	__u64 v[fx->ncpus];
	__u32 i;
	int c;

	for (i = 0; i < RM_CNT_MAX; i++) {
		if (bpf_map_lookup_elem(fx->counters, &i, v))
			return -errno;
		out[i] = 0;
		for (c = 0; c < fx->ncpus; c++)
			out[i] += v[c];
	}
	return 0;
}

static inline int dp_traffic(const struct dp_fx *fx, int map, __u32 id,
			     struct rm_traffic *out)
{
	struct rm_traffic v[fx->ncpus];
	int c;

	if (bpf_map_lookup_elem(map, &id, v))
		return -errno;
	memset(out, 0, sizeof(*out));
	for (c = 0; c < fx->ncpus; c++) {
		out->packets += v[c].packets;
		out->bytes += v[c].bytes;
	}
	return 0;
}

static const char *const dp_counter_names[] = {
#define DP_NAME(id, name) name,
    RM_COUNTERS(DP_NAME)
#undef DP_NAME
};

/* Every counter must have risen by its bit of mask (C(id) = 1 << id):
 * 0 if so, else 1 and a line on stderr per counter that did not. */
static inline int dp_counters_rose(const char *what, size_t len,
				   const __u64 *before, const __u64 *after,
				   __u64 mask)
{
	int bad = 0, i;

	for (i = 0; i < RM_CNT_MAX; i++) {
		__u64 want = (mask >> i) & 1;

		if (after[i] - before[i] != want) {
			fprintf(stderr,
				"%s (len %zu): counter %s rose by %llu, "
				"want %llu\n",
				what, len, dp_counter_names[i],
				(unsigned long long)(after[i] - before[i]),
				(unsigned long long)want);
			bad = 1;
		}
	}
	return bad;
}

static inline const char *dp_action_name(__u32 a)
{
	static const char *const n[] = {"ABORTED", "DROP", "PASS", "TX",
					"REDIRECT"};

	return a < 5 ? n[a] : "?";
}

#endif /* DP_FIXTURE_H */
