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

/* Each service has its own key, and a 3-tuple service a second one with
 * RM_SVCK_FRAG for its non-first fragments. */
#define RM_MAX_SVC_KEYS (2 * RM_MAX_SERVICES)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RM_MAX_SVC_KEYS);
	__type(key, struct rm_svc_key);
	__type(value, struct rm_svc);
} rm_services SEC(".maps");

/* One ring per service id. BPF_F_INNER_MAP lets every inner array have
 * its own size, so a ring costs what it holds; the template only fixes
 * the type, key, value and flags a replacement must match. */
struct rm_ring_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	/* sizes, not types: clang 14 emits a struct reached through a
	 * nested map definition as a BTF forward, which libbpf cannot size,
	 * and the kernel takes BTF for both key and value or neither */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct rm_slot));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, RM_MAX_SERVICES);
	__type(key, __u32);
	__array(values, struct rm_ring_inner);
} rm_rings SEC(".maps");

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

/* Control-plane only: the data plane never reads it. */
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

#endif /* RM_BPF_MAPS_H */
