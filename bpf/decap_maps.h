/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The decapsulator's maps (pinned by ringload decap under
 * RM_DECAP_PIN_DIR; rm_encap.h describes each) and its one-line exits.
 */
#ifndef RM_BPF_DECAP_MAPS_H
#define RM_BPF_DECAP_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include <ringmaster/rm_encap.h>

/* The prefix sets (rm_decap_allow, rm_decap_hops): one shape, one
 * definition; rm_dprefix_has() asks either. */
#define RM_DECAP_PREFIX_MAP(name)                                          \
	struct {                                                           \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);                       \
		__uint(map_flags, BPF_F_NO_PREALLOC);                      \
		__uint(max_entries, RM_DECAP_MAX_PREFIXES);                \
		__type(key, struct rm_decap_prefix);                       \
		__type(value, __u8);                                       \
	} name SEC(".maps")

RM_DECAP_PREFIX_MAP(rm_decap_allow);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RM_DECAP_MAX_LOCAL);
	__type(key, struct rm_decap_addr);
	__type(value, __u8);
} rm_decap_local SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_decap_config);
} rm_decap_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RM_DCNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} rm_decap_counters SEC(".maps");

RM_DECAP_PREFIX_MAP(rm_decap_hops);

/* A step that has not decided returns RM_DGO; one that has returns the
 * XDP action, its outcome counted (rm_dverdict). */
#define RM_DGO (-1)

static __always_inline int rm_dverdict(int action, __u32 id)
{
	__u64 *v = bpf_map_lookup_elem(&rm_decap_counters, &id);

	if (v)
		*v += 1;
	return action;
}

/* Is a in the LPM trie map (rm_decap_allow, rm_decap_hops)? */
static __always_inline int rm_dprefix_has(void *map,
					  const struct rm_decap_addr *a)
{
	struct rm_decap_prefix k = {};

	k.prefixlen = 32 + 128;
	k.family = a->family;
	__builtin_memcpy(k.addr, a->addr, 16);
	return bpf_map_lookup_elem(map, &k) != 0;
}

static __always_inline int rm_daddr_eq(const struct rm_decap_addr *a,
				       const struct rm_decap_addr *b)
{
	return a->family == b->family && a->addr[0] == b->addr[0] &&
	       a->addr[1] == b->addr[1] && a->addr[2] == b->addr[2] &&
	       a->addr[3] == b->addr[3];
}

#endif /* RM_BPF_DECAP_MAPS_H */
