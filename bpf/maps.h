/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Map definitions. Names are the RM_MAP_* names of rm_common.h; no map is
 * pinned here, the loader sets pin paths at run time.
 */
#ifndef RM_BPF_MAPS_H
#define RM_BPF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include <ringmaster/rm_common.h>
#include <ringmaster/rm_vip_filter.h>
#include <ringmaster/rm_encap.h>

/* Each service has its own key, and each (VIP, proto) with a service one
 * RM_SVCK_FRAG key for its non-first fragments. */
#define RM_MAX_SVC_KEYS (2 * RM_MAX_SERVICES)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RM_MAX_SVC_KEYS);
	__type(key, struct rm_svc_key);
	__type(value, struct rm_svc);
} rm_services SEC(".maps");

/* The slots of rm_services' keys (rm_vip_filter.h): one plain ARRAY
 * element, so the verifier inlines its lookup. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_vip_slots);
} rm_vip_slots SEC(".maps");

/* One ring per service id. BPF_F_INNER_MAP lets every inner array have
 * its own size, so a ring costs what it holds; the template only fixes
 * the type, key, value and flags a replacement must match. */
struct rm_ring_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, RM_RING_MAP_FLAGS);
	__uint(max_entries, 1);
	/* sizes, not types: clang 14 emits a struct reached through a
	 * nested map definition as a BTF forward, which libbpf cannot size,
	 * and the kernel takes BTF for both key and value or neither */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct rm_ring_page));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, RM_MAX_SERVICES);
	__type(key, __u32);
	__array(values, struct rm_ring_inner);
} rm_rings SEC(".maps");

/* Second chance: each service's previous rings, newest first
 * (rm_common.h; bpf/hops.h reads them). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, RM_RINGS_OLD_MAX);
	__type(key, __u32);
	__array(values, struct rm_ring_inner);
} rm_rings_old SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RM_MAX_NODES);
	__type(key, __u32);
	__type(value, struct rm_node);
} rm_nodes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_config);
} rm_config SEC(".maps");

/* The control plane's record of each service. The data plane reads it
 * only where rm_vip_slots names a service (rm_vip_filter.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RM_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct rm_svc_meta);
} rm_svc_meta SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RM_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} rm_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RM_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct rm_traffic);
} rm_svc_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RM_MAX_NODES);
	__type(key, __u32);
	__type(value, struct rm_traffic);
} rm_node_stats SEC(".maps");

/* Egress ports for nodes behind another interface, keyed by the node's
 * ifindex. The value is a struct bpf_devmap_val so a per-port program
 * can be attached later without changing the map. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, RM_MAX_NODES);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} rm_tx_ports SEC(".maps");

/* Connection tables (conntrack.h has the rules): IPv4 flows in rm_conns
 * under a 16-byte key, IPv6 flows in rm_conns6. LRU, so a full table
 * makes room by dropping the least recently used entry instead of
 * refusing new flows. BPF_F_NO_COMMON_LRU gives each CPU its own LRU list
 * and free pool over the one shared hash table: an insert takes no global
 * LRU lock, and each CPU evicts only from its own list; a lookup still
 * finds an entry whichever CPU wrote it, so a flow whose packets move to
 * another CPU (an RSS change, veth in the tests) keeps its node. The
 * cost: each CPU can hold only max_entries / ncpus entries of its own,
 * so a CPU that sees more flows than that evicts early even if the table
 * has room elsewhere; size it with that in mind. The loader sets
 * max_entries of both at attach time (bpf_map__set_max_entries). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__uint(max_entries, RM_DEFAULT_CONN_ENTRIES);
	__type(key, struct rm_conn_key4);
	__type(value, struct rm_conn);
} rm_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__uint(max_entries, RM_DEFAULT_CONN_ENTRIES);
	__type(key, struct rm_flow);
	__type(value, struct rm_conn);
} rm_conns6 SEC(".maps");

/* The tables' presence index (rm_common.h, conntrack.h): element 0 the
 * hash key, then sets. The loader sizes it with the tables
 * (RM_CONN_IDX_ENTRIES); the data plane reads max_entries itself. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RM_CONN_IDX_ENTRIES(RM_DEFAULT_CONN_ENTRIES));
	__type(key, __u32);
	__type(value, struct rm_conn_set);
} rm_conn_idx SEC(".maps");

/* Per-CPU token bucket bounding rm_conns writes (conntrack.h). Private to
 * the data plane: userspace only sets the rate, in rm_config. */
struct rm_conn_bucket {
	__u64 tokens;  /* in 1/1e9 of a write: one write costs 1e9 */
	__u64 last_ns; /* rm_conn_now() of the last refill */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_conn_bucket);
} rm_conn_limit SEC(".maps");

/* Routed nodes' next hops, by node id (rm_encap.h): written by ringload
 * neighd, read by encap.h instead of a bpf_fib_lookup per packet. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RM_MAX_NODES);
	__type(key, __u32);
	__type(value, struct rm_nh);
} rm_nexthops SEC(".maps");
/* The QUIC-LB server IDs of --key quic services' nodes (bpf/quic.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RM_MAX_NODES);
	__type(key, struct rm_quic_sid_key);
	__type(value, struct rm_quic_sid_node);
} rm_quic_sids SEC(".maps");

/* Every map rm_common.h's RM_MAPS names is defined above, under that
 * name: userspace opens the pins by those names. */
#define RM_MAP_DEFINED(id, name)                                           \
	_Static_assert(sizeof(name) > 0, #name " is in RM_MAPS");
RM_MAPS(RM_MAP_DEFINED)
#undef RM_MAP_DEFINED

#endif /* RM_BPF_MAPS_H */
