// SPDX-License-Identifier: GPL-2.0
/*
 * Live state, read side: whole snapshots, a service's ring slots decoded
 * back into node specs, counters, and the connection table.
 */
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <ringmaster/rm_conn.h>
#include "state.h"
#include "ring_map.h"
#include "state_int.h"
#include "util.h"

/* ---- reading --------------------------------------------------------- */

int rm_state_read_cfg(struct rm_state *st, struct rm_config *cfg)
{
	__u32 zero = 0;

	memset(cfg, 0, sizeof(*cfg)); /* an older layout's is shorter */
	if (bpf_map_lookup_elem(st->fd[RM_M_CONFIG], &zero, cfg))
		return rm_state_fail(-errno, "cannot read rm_config: %s",
				     strerror(errno));
	return 0;
}

int rm_state_read(struct rm_state *st, struct rm_snap *s)
{
	int err;

	/* every byte is written below (rm_array_read() writes whole rows,
	 * zero-extending an older layout's): zeroing the megabyte first
	 * would touch every page twice */
	err = rm_state_read_cfg(st, &s->cfg);
	if (err)
		return err;
	err = rm_array_read(st->fd[RM_M_SVC_META], RM_MAX_SERVICES,
			 sizeof(s->svc[0]), s->svc);
	if (!err)
		err = rm_array_read(st->fd[RM_M_NODES], RM_MAX_NODES,
				 sizeof(s->node[0]), s->node);
	if (err)
		return rm_state_fail(err, "cannot read the pinned maps: %s",
			    strerror(-err));
	return 0;
}

int rm_state_inner_open(struct rm_state *st, enum rm_map_id map, __u32 key)
{
	__u32 id, pages;
	int fd = -1, tries;

	/* the ring may be replaced (and its map freed) between reading its
	 * id and opening it: try again, the new one is there then */
	for (tries = 0; tries < 5 && fd < 0; tries++) {
		if (bpf_map_lookup_elem(st->fd[map], &key, &id))
			return -ENOENT;
		fd = bpf_map_get_fd_by_id(id);
	}
	if (fd < 0)
		return rm_state_fail(-errno, "cannot open %s[%u]: %s",
				     rm_map_names[map], key, strerror(errno));
	if (rm_ring_map_pages(fd, &pages)) {
		close(fd);
		return rm_state_fail(-EPROTO, "%s[%u] is not a ring array",
				     rm_map_names[map], key);
	}
	return fd;
}

/* The same, its slots in use copied into *slots (malloc'd). */
static int inner_slots(struct rm_state *st, enum rm_map_id map, __u32 key,
		       struct rm_slot **slots, __u32 *nslots)
{
	int fd, err;

	*slots = NULL;
	fd = rm_state_inner_open(st, map, key);
	if (fd < 0)
		return fd;
	err = rm_ring_map_copy(fd, slots, nslots);
	close(fd);
	if (err)
		return rm_state_fail(err, "cannot read %s[%u]: %s",
				     rm_map_names[map], key, strerror(-err));
	return 0;
}

static int no_ring(__u32 svc)
{
	return rm_state_fail(-ENOENT, "service id %u has no ring installed",
			     svc);
}

int rm_state_ring_slots(struct rm_state *st, __u32 svc, struct rm_slot **slots,
			__u32 *nslots)
{
	int err = inner_slots(st, RM_M_RINGS, svc, slots, nslots);

	return err == -ENOENT ? no_ring(svc) : err;
}

int rm_state_gen_slots(struct rm_state *st, __u32 svc, __u32 g,
		       struct rm_slot **slots, __u32 *nslots)
{
	*slots = NULL;
	if (svc >= RM_MAX_SERVICES || g >= RM_RING_GENS)
		return -ENOENT;
	return inner_slots(st, RM_M_RINGS_OLD, svc * RM_RING_GENS + g, slots,
			   nslots);
}

int rm_state_gen_head(struct rm_state *st, __u32 svc, __u32 g,
		      struct rm_slot *hdr)
{
	__u32 key = svc * RM_RING_GENS + g, zero = 0;
	struct rm_ring_page page;
	int fd, err = 0;

	if (svc >= RM_MAX_SERVICES || g >= RM_RING_GENS)
		return -ENOENT;
	fd = rm_state_inner_open(st, RM_M_RINGS_OLD, key);
	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, &zero, &page))
		err = rm_state_fail(-errno, "cannot read %s[%u]: %s",
				    RM_MAP_NAME(RINGS_OLD), key,
				    strerror(errno));
	else
		*hdr = page.slot[0];
	close(fd);
	return err;
}

/* The inner array at key of outer map `map`, its slots in use mapped
 * read-only, or -ENOENT (no message) when the key holds none. */
static int inner_map(struct rm_state *st, enum rm_map_id map, __u32 key,
		     const struct rm_slot **slots, __u32 *nslots)
{
	struct rm_slot *mem;
	size_t len;
	int fd, err;

	*slots = NULL;
	fd = rm_state_inner_open(st, map, key);
	if (fd < 0)
		return fd;
	err = rm_ring_map_mmap(fd, false, &mem, nslots, &len);
	close(fd);
	if (err)
		return rm_state_fail(err, "cannot map %s[%u]: %s",
				     rm_map_names[map], key, strerror(-err));
	*slots = mem;
	return 0;
}

int rm_state_ring_map(struct rm_state *st, __u32 svc,
		      const struct rm_slot **slots, __u32 *nslots)
{
	int err = inner_map(st, RM_M_RINGS, svc, slots, nslots);

	return err == -ENOENT ? no_ring(svc) : err;
}

int rm_state_gen_map(struct rm_state *st, __u32 svc, __u32 g,
		     const struct rm_slot **slots, __u32 *nslots)
{
	*slots = NULL;
	if (svc >= RM_MAX_SERVICES || g >= RM_RING_GENS)
		return -ENOENT;
	return inner_map(st, RM_M_RINGS_OLD, svc * RM_RING_GENS + g, slots,
			 nslots);
}

void rm_state_ring_unmap(const struct rm_slot *slots, __u32 nslots)
{
	if (slots)
		munmap((void *)slots, rm_ring_map_len(nslots));
}

/* Per-CPU values of key: nfields u64s each, summed over CPUs. */
static int percpu_sum(struct rm_state *st, enum rm_map_id map, __u32 key,
		      __u32 nfields, __u64 *out)
{
	__u64 *vals = calloc((size_t)st->ncpus * nfields, sizeof(*vals));
	int err = 0;

	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(st->fd[map], &key, vals))
		err = rm_state_fail(-errno, "cannot read %s: %s", rm_map_names[map],
			   strerror(errno));
	for (__u32 f = 0; f < nfields; f++) {
		out[f] = 0;
		for (int c = 0; !err && c < st->ncpus; c++)
			out[f] += vals[(size_t)c * nfields + f];
	}
	free(vals);
	return err;
}

int rm_state_counters(struct rm_state *st, __u64 out[RM_CNT_MAX])
{
	int err = 0;

	for (__u32 i = 0; i < RM_CNT_MAX && !err; i++)
		err = percpu_sum(st, RM_M_COUNTERS, i, 1, &out[i]);
	return err;
}

int rm_state_traffic(struct rm_state *st, enum rm_map_id map, __u32 idx,
		     struct rm_traffic *out)
{
	/* the record's fields, in order, are all __u64 */
	__u64 v[sizeof(*out) / sizeof(__u64)] = {0};
	int err = percpu_sum(st, map, idx, sizeof(v) / sizeof(v[0]), v);

	_Static_assert(sizeof(*out) == 3 * sizeof(__u64),
		       "struct rm_traffic changed: read its new fields here");
	out->packets = v[0];
	out->bytes = v[1];
	out->new_flows = v[2];
	return err;
}

/* Reads the rows of the services chosen; *moved: whether one changed. */
static int traffic_svcs(struct rm_state *st, const struct rm_snap *s,
			int only, struct rm_traffic *svc, bool *moved)
{
	int err = 0;

	*moved = false;
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++) {
		struct rm_traffic now;

		if (!rm_snap_svc_used(s, i, only))
			continue;
		err = rm_state_traffic(st, RM_M_SVC_STATS, i, &now);
		*moved |= memcmp(&now, &svc[i], sizeof(now)) != 0;
		svc[i] = now;
	}
	return err;
}

int rm_state_traffic_rows(struct rm_state *st, const struct rm_snap *s,
			  int only, struct rm_traffic *svc,
			  struct rm_traffic *node)
{
	bool moved;
	int err = traffic_svcs(st, s, only, svc, &moved);

	for (int try = 0; try < RM_TRAFFIC_TRIES && !err; try++) {
		for (__u32 i = 0; i < RM_MAX_NODES && !err; i++)
			if (rm_snap_node_used(s, i, only))
				err = rm_state_traffic(st, RM_M_NODE_STATS, i,
						       &node[i]);
		if (!err)
			err = traffic_svcs(st, s, only, svc, &moved);
		if (!moved)
			break;
	}
	return err;
}

/* ---- the connection table -------------------------------------------- */

__u32 rm_udp_timeout(const struct rm_config *cfg)
{
	return cfg->udp_timeout_s ? cfg->udp_timeout_s
				  : RM_DEFAULT_UDP_TIMEOUT_S;
}

bool rm_conn_valid(const struct rm_snap *s, __u8 proto,
		   const struct rm_conn *c, __u64 now_ns)
{
	const struct rm_node *n =
	    c->node < RM_MAX_NODES ? &s->node[c->node] : NULL;

	return rm_conn_valid_at(n, c->gen, proto, c->last_ns, now_ns,
				s->cfg.udp_timeout_s);
}

long rm_conn_idx_read(int idx_fd, const struct rm_flow *f,
		      struct rm_conn_set *set, __u16 *tag, bool draw)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), i = 0;
	struct rm_conn_set k0;
	__u64 key, h;

	if (bpf_obj_get_info_by_fd(idx_fd, &info, &len) ||
	    bpf_map_lookup_elem(idx_fd, &i, &k0))
		return -errno;
	if (info.max_entries < 2)
		return -ENOENT;
	memcpy(&key, &k0, sizeof(key));
	if (!key && !draw)
		return -ENOENT;
	if (!key) {
		if (getrandom(&key, sizeof(key), 0) != sizeof(key))
			return -EIO;
		key |= 1;
		memcpy(&k0, &key, sizeof(key));
		if (bpf_map_update_elem(idx_fd, &i, &k0, BPF_ANY))
			return -errno;
	}
	h = rm_conn_idx_hash(f, key);
	*tag = rm_conn_idx_tag(h);
	i = rm_conn_idx_set(h, info.max_entries - 1);
	if (bpf_map_lookup_elem(idx_fd, &i, set))
		return -errno;
	return i;
}

int rm_conn_idx_put(int idx_fd, const struct rm_flow *f, __u64 last_ns)
{
	__u16 tag = 0, age = rm_conn_idx_age(last_ns);
	struct rm_conn_set set = {0}; /* filled by the read; zero for the analyzer */
	long i = rm_conn_idx_read(idx_fd, f, &set, &tag, true);
	__u32 key = (__u32)i;

	if (i < 0)
		return (int)i;
	set.way[rm_conn_idx_pick(&set, tag, age)] = tag | age << 8;
	return bpf_map_update_elem(idx_fd, &key, &set, BPF_ANY) ? -errno : 0;
}

int rm_conn_idx_clear(int idx_fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), n, *keys;
	struct rm_conn_set *zero;
	int err = 0;

	if (bpf_obj_get_info_by_fd(idx_fd, &info, &len))
		return -errno;
	if (info.max_entries < 2)
		return 0;
	n = info.max_entries - 1;
	keys = malloc((size_t)n * sizeof(*keys));
	zero = calloc(n, sizeof(*zero));
	if (!keys || !zero) {
		err = -ENOMEM;
		goto out;
	}
	for (__u32 i = 0; i < n; i++)
		keys[i] = i + 1;
	if (bpf_map_update_batch(idx_fd, keys, zero, &n, NULL))
		err = -errno;
out:
	free(keys);
	free(zero);
	return err;
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void conn_tally(const struct rm_snap *s, __u8 proto,
		       const struct rm_conn *c, __u64 now,
		       struct rm_conn_count *out)
{
	out->entries++;
	if (!rm_conn_valid(s, proto, c, now)) {
		out->stale++;
		return;
	}
	out->node[c->node]++;
	if ((__s64)(now - c->last_ns) <=
	    (__s64)(RM_CONN_RECENT_S * 1000000000ULL))
		out->recent[c->node]++;
}

/* One table: its fd, key size and where the key holds the protocol. */
struct conn_table {
	int fd;
	size_t key_size, proto_off;
};

#define CONN_CHUNK 4096

/* One batch walk; -EOPNOTSUPP/-EINVAL where batches are not supported. */
static int conn_walk_batch(const struct conn_table *t, const struct rm_snap *s,
			   __u64 now, struct rm_conn_count *out)
{
	__u8 *keys = calloc(CONN_CHUNK, t->key_size);
	struct rm_conn *vals = calloc(CONN_CHUNK, sizeof(*vals));
	struct rm_flow tok_in, tok_out; /* hash maps: a bucket index */
	void *in = NULL;
	int err = -ENOMEM;

	while (keys && vals) {
		__u32 count = CONN_CHUNK;

		err = bpf_map_lookup_batch(t->fd, in, &tok_out, keys, vals,
					   &count, NULL);
		if (err && err != -ENOENT)
			break;
		for (__u32 i = 0; i < count; i++)
			conn_tally(s, keys[i * t->key_size + t->proto_off],
				   &vals[i], now, out);
		if (err == -ENOENT) {
			err = 0;
			break;
		}
		tok_in = tok_out;
		in = &tok_in;
	}
	free(keys);
	free(vals);
	return err;
}

/* Key by key: kernels or maps without batch lookups. */
static int conn_walk_keys(const struct conn_table *t, const struct rm_snap *s,
			  __u64 now, struct rm_conn_count *out)
{
	struct rm_flow key, next; /* the larger key of the two */
	struct rm_conn c;

	for (void *prev = NULL; !bpf_map_get_next_key(t->fd, prev, &next);
	     prev = &key) {
		key = next;
		/* gone since: the LRU evicted it */
		if (!bpf_map_lookup_elem(t->fd, &key, &c))
			conn_tally(s, ((__u8 *)&key)[t->proto_off], &c, now,
				   out);
	}
	return errno == ENOENT ? 0 : -errno;
}

/* An empty table answers the first-key question with ENOENT in one
 * lockless pass over its buckets, where a batch walk locks each bucket
 * in turn (and its buffers are fresh pages): ~1 ms at the default size,
 * which every `show` paid on an idle director. */
static bool conn_table_empty(const struct conn_table *t)
{
	struct rm_flow first; /* the larger key of the two */

	return bpf_map_get_next_key(t->fd, NULL, &first) && errno == ENOENT;
}

int rm_state_conn_max(struct rm_state *st, __u32 *max_entries)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(st->fd[RM_M_CONNS], &info, &len))
		return rm_state_fail(-errno, "cannot inspect %s: %s", RM_MAP_NAME(CONNS),
			    strerror(errno));
	*max_entries = info.max_entries;
	return 0;
}

int rm_state_conn_count(struct rm_state *st, const struct rm_snap *s,
			struct rm_conn_count *out)
{
	const struct conn_table tables[] = {
	    {st->fd[RM_M_CONNS], sizeof(struct rm_conn_key4),
	     offsetof(struct rm_conn_key4, proto)},
	    {st->fd[RM_M_CONNS6], sizeof(struct rm_flow),
	     offsetof(struct rm_flow, proto)},
	};
	__u64 now = mono_ns();
	__u32 max = 0;
	int err;

	memset(out, 0, sizeof(*out));
	err = rm_state_conn_max(st, &max);
	if (err)
		return err;
	/* userspace lookups do not touch the LRU order (the _sys_only
	 * lookups of LRU maps): counting evicts nothing sooner */
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		struct rm_conn_count *one;

		if (conn_table_empty(&tables[i]))
			continue;
		/* counted apart: a failed batch walk starts again key by
		 * key */
		one = rm_scratch_alloc(sizeof(*one));
		if (!one)
			return rm_state_fail(-ENOMEM, "out of memory");
		err = conn_walk_batch(&tables[i], s, now, one);
		if (err) {
			memset(one, 0, sizeof(*one));
			err = conn_walk_keys(&tables[i], s, now, one);
		}
		out->entries += one->entries;
		out->stale += one->stale;
		for (__u32 n = 0; n < RM_MAX_NODES; n++) {
			out->node[n] += one->node[n];
			out->recent[n] += one->recent[n];
		}
		rm_scratch_free(one);
		if (err)
			return rm_state_fail(err, "cannot read %s: %s",
					     rm_map_names[i ? RM_M_CONNS6
							    : RM_M_CONNS],
					     strerror(-err));
	}
	out->max_entries = max;
	return 0;
}

bool rm_ring_matches(const struct rm_snap *s, __u32 svc,
		     const struct rm_slot *live, __u32 n)
{
	struct rm_ring r;
	bool same = false;

	if (!rm_snap_ring(s, svc, &r)) {
		same = rm_ring_encoded_in(&r, live, n);
		rm_ring_free(&r);
	}
	return same;
}

int rm_state_conn_lookup(struct rm_state *st, const struct rm_snap *s,
			 const struct rm_flow *f, struct rm_conn *c,
			 bool *valid, __u64 *age_ns)
{
	enum rm_map_id map = f->family == RM_FAMILY_V4 ? RM_M_CONNS : RM_M_CONNS6;
	struct rm_conn_key4 k4;
	const void *key = f;
	__u64 now;

	if (map == RM_M_CONNS) {
		rm_conn_key4_of(f, &k4);
		key = &k4;
	}
	if (bpf_map_lookup_elem(st->fd[map], key, c)) {
		if (errno == ENOENT)
			return -ENOENT;
		return rm_state_fail(-errno, "cannot read %s: %s",
				     rm_map_names[map], strerror(errno));
	}
	now = mono_ns();
	*valid = rm_conn_valid(s, f->proto, c, now);
	if (*valid) {
		struct rm_conn_set set = {0}; /* filled by the read */
		__u16 tag = 0;
		long i = rm_conn_idx_read(st->fd[RM_M_CONN_IDX], f, &set, &tag,
					  false);

		/* honoured only with its tag in the index (conntrack.h) */
		if (i == -ENOENT || (i > 0 && rm_conn_idx_find(&set, tag) < 0))
			*valid = false;
	}
	*age_ns = now > c->last_ns ? now - c->last_ns : 0;
	return 0;
}
