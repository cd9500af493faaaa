// SPDX-License-Identifier: GPL-2.0
/* Consistent-hash ring: deterministic build, exact arc analytics, and the
 * encoding the kernel searches. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <ringmaster/rm_hash.h>
/* the kernel's search and MD5, over an in-memory slot array */
#include <ringmaster/rm_owner.h>
#include "ring.h"
#include "util.h"

void rm_vnode_hasher_init(struct rm_vnode_hasher *h, const struct rm_seed *seed,
			  const char *name)
{
	/* name zero-padded to RM_NAME_MAX bytes: whole words, compressed
	 * once here; the index and the length make the last block */
	__u64 w[RM_NAME_MAX / 8];

	memset(w, 0, sizeof(w));
	strncpy((char *)w, name, RM_NAME_MAX - 1);
	rm_sip_init(&h->s, seed);
	for (int i = 0; i < RM_NAME_MAX / 8; i++)
		rm_sip_word(&h->s, w[i]);
}

__u32 rm_vnode_hasher_point(const struct rm_vnode_hasher *h, __u32 vnode)
{
	struct rm_sip s = h->s;

	return (__u32)rm_sip_final(&s, (__u64)(RM_NAME_MAX + 4) << 56 | vnode);
}

__u32 rm_vnode_point(const struct rm_seed *seed, const char *name, __u32 vnode)
{
	struct rm_vnode_hasher h;

	rm_vnode_hasher_init(&h, seed, name);
	return rm_vnode_hasher_point(&h, vnode);
}

/* count vnode points of the node named name, node index i, at
 * entries[*k] on: the ringmaster scheme's points, one hasher a node */
static void vnode_points(const struct rm_seed *seed, const char *name,
			 __u32 count, __u32 i, struct rm_ring_entry *entries,
			 __u32 *k)
{
	struct rm_vnode_hasher h;

	rm_vnode_hasher_init(&h, seed, name);
	for (__u32 v = 0; v < count; v++) {
		entries[*k].point = rm_vnode_hasher_point(&h, v);
		entries[(*k)++].node = i;
	}
}

/* MD5 of a short string, as the kernel's code computes it. */
static void md5_text(const char *text, struct rm_md5 *d)
{
	__u8 buf[RM_MD5_BUF] = {0};
	size_t len = strnlen(text, RM_MD5_MAX);

	memcpy(buf, text, len);
	rm_md5(buf, (__u32)len, d);
}

void rm_ketama_host(const char *host, __u16 port, char *out, size_t len)
{
	if (!port || port == RM_KETAMA_PORT)
		snprintf(out, len, "%s", host);
	else
		snprintf(out, len, "%s:%u", host, port);
}

__u32 rm_ketama_points(__u32 weight, __u64 total_weight, __u32 n_nodes)
{
	/* libmemcached's update_continuum() to the letter, in float: the
	 * rounding decides whether a node gets 156 or 160 points */
	float pct = (float)weight / (float)total_weight;

	return (__u32)(floor((float)(pct * RM_KETAMA_POINTS / 4 *
					     (float)n_nodes +
				     0.0000000001F)) *
		       4);
}

int rm_md5_vnode_name(const char *tmpl, const char *node, __u32 i, char *out,
		      size_t len)
{
	size_t n = 0;
	int w;

	for (const char *p = tmpl; *p;) {
		if (!strncmp(p, "{node}", 6)) {
			w = snprintf(out + n, len - n, "%s", node);
			p += 6;
		} else if (!strncmp(p, "{i}", 3)) {
			w = snprintf(out + n, len - n, "%u", i);
			p += 3;
		} else {
			w = snprintf(out + n, len - n, "%c", *p++);
		}
		if (w < 0 || (size_t)w >= len - n)
			return -ENAMETOOLONG;
		n += (size_t)w;
	}
	if (!n)
		out[0] = 0;
	return n > RM_MD5_MAX ? -ENAMETOOLONG : 0;
}

/* Points of node i of r (entries from *k on), by r's scheme. Entries go
 * in node order, each node's in its own order: the stable sort then
 * breaks ties of equal points by node name (libmemcached: by server
 * index, so clients list servers in name order). */
static int node_points(struct rm_ring *r, __u32 i, __u64 total_weight,
		       __u32 *k)
{
	const struct rm_node_spec *nd = &r->nodes[i];
	char text[RM_MD5_MAX + 1];
	struct rm_md5 d;
	__u32 v, x, n;

	switch (r->spec.scheme) {
	case RM_RING_KETAMA:
		n = rm_ketama_points(nd->weight, total_weight, r->n_nodes) / 4;
		for (v = 0; v < n; v++) {
			snprintf(text, sizeof(text), "%s-%u", nd->host, v);
			md5_text(text, &d);
			for (x = 0; x < 4; x++) {
				r->entries[*k].point = d.h[x];
				r->entries[(*k)++].node = i;
			}
		}
		return 0;
	case RM_RING_MD5_VNODES:
		for (v = 0; v < nd->weight * r->spec.count; v++) {
			if (rm_md5_vnode_name(r->spec.tmpl, nd->name, v, text,
					      sizeof(text)))
				return -EINVAL;
			md5_text(text, &d);
			r->entries[*k].point = rm_owner_bswap32(d.h[0]);
			r->entries[(*k)++].node = i;
		}
		return 0;
	}
	vnode_points(&r->seed, nd->name, nd->weight * r->vnodes, i,
		     r->entries, k);
	return 0;
}

/* Entries nodes[0, n_nodes) make under spec (each node's weight valid). */
static __u64 ring_entries(const struct rm_ring_spec *spec,
			  const struct rm_node_spec *nodes, __u32 n_nodes,
			  __u32 vnodes, __u64 total_weight)
{
	__u64 total = 0;

	for (__u32 i = 0; i < n_nodes; i++)
		total += spec->scheme == RM_RING_KETAMA
			     ? rm_ketama_points(nodes[i].weight, total_weight,
						n_nodes)
			 : spec->scheme == RM_RING_MD5_VNODES
			     ? (__u64)nodes[i].weight * spec->count
			     : (__u64)nodes[i].weight * vnodes;
	return total;
}

static int spec_by_name(const void *a, const void *b)
{
	return strcmp(((const struct rm_node_spec *)a)->name,
		      ((const struct rm_node_spec *)b)->name);
}

/* Stable LSD radix sort of entries by point, two 16-bit passes, from
 * src through tmp (n entries) back into src; count holds RM_SORT_COUNT.
 * Entries are generated in (node, vnode) order with nodes in name order,
 * so equal points stay ordered by name, then vnode: a total order that
 * does not depend on the order nodes were given in. O(n), which keeps a
 * 64-node ring's rebuild to a few ms. */
#define RM_SORT_COUNT (1u << 16)
static void radix_sort_points(struct rm_ring_entry *src, __u32 n,
			      struct rm_ring_entry *tmp, __u32 *count)
{
	struct rm_ring_entry *from = src, *to = tmp;

	for (int shift = 0; shift < 32; shift += 16) {
		__u32 sum = 0, i;

		memset(count, 0, RM_SORT_COUNT * sizeof(*count));
		for (i = 0; i < n; i++)
			count[(from[i].point >> shift) & 0xffff]++;
		for (i = 0; i < RM_SORT_COUNT; i++) {
			__u32 c = count[i];

			count[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			to[count[(from[i].point >> shift) & 0xffff]++] = from[i];
		from = to;
		to = from == tmp ? src : tmp;
	}
	/* two passes: the result is back in src */
}

/* By (point, node): equal points in node (name) order. Two entries
 * equal in both are equal whole, so this gives the radix sort's order. */
static int entry_cmp(const void *a, const void *b)
{
	const struct rm_ring_entry *x = a, *y = b;

	if (x->point != y->point)
		return x->point < y->point ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* Rings of fewer entries are sorted by qsort in malloc'd memory; larger
 * ones by the radix sort in one block of huge pages (its counts alone
 * are 256 kB; a huge page costs a zeroing, small pages a fault each). */
#define RM_RING_RADIX_MIN 16384u

/* r->entries for n entries and, for the radix sort, its scratch (n
 * entries and the counts) behind them: one block, in huge pages. */
static int ring_mem(struct rm_ring *r, __u32 n, struct rm_ring_entry **tmp,
		    __u32 **count)
{
	size_t len = 2 * (size_t)n * sizeof(*r->entries) +
		     RM_SORT_COUNT * sizeof(**count);

	*tmp = NULL;
	*count = NULL;
	if (n < RM_RING_RADIX_MIN) {
		r->entries = calloc(n ? n : 1, sizeof(*r->entries));
		return r->entries ? 0 : -ENOMEM;
	}
	r->entries = rm_huge_alloc(len);
	if (!r->entries)
		return -ENOMEM;
	r->mem_len = len;
	*tmp = r->entries + n;
	*count = (__u32 *)(*tmp + n);
	return 0;
}

static void ring_sort(struct rm_ring_entry *e, __u32 n,
		      struct rm_ring_entry *tmp, __u32 *count)
{
	if (tmp)
		radix_sort_points(e, n, tmp, count);
	else
		qsort(e, n, sizeof(*e), entry_cmp);
}

int rm_ring_build(const struct rm_seed *seed, const struct rm_node_spec *nodes,
		  __u32 n_nodes, __u32 vnodes, struct rm_ring *out)
{
	static const struct rm_ring_spec ringmaster = {0};

	return rm_ring_build_spec(seed, &ringmaster, nodes, n_nodes, vnodes,
				  out);
}

/* The checks and the node table every build starts with: r holds the
 * nodes sorted by name (names zero-padded) and r->n the entries they
 * make; no entries yet. */
static int ring_start(const struct rm_seed *seed,
		      const struct rm_ring_spec *spec,
		      const struct rm_node_spec *nodes, __u32 n_nodes,
		      __u32 vnodes, struct rm_ring *r, __u64 *weights)
{
	__u64 total;
	__u32 i;

	*weights = 0;
	if (vnodes == 0 || vnodes > RM_MAX_VNODES ||
	    spec->scheme >= RM_RING_SCHEME_NR ||
	    (spec->scheme == RM_RING_MD5_VNODES &&
	     (!spec->count || spec->count > RM_MAX_VNODES)))
		return -EINVAL;
	if (n_nodes > RM_MAX_NODES_PER_RING)
		return -E2BIG;
	for (i = 0; i < n_nodes; i++) {
		if (!rm_name_valid(nodes[i].name))
			return -EINVAL;
		if (spec->scheme == RM_RING_KETAMA &&
		    (!nodes[i].host[0] ||
		     !memchr(nodes[i].host, 0, sizeof(nodes[i].host))))
			return -EINVAL;
		if (nodes[i].weight == 0 || nodes[i].weight > RM_MAX_WEIGHT)
			return -ERANGE;
		*weights += nodes[i].weight;
	}
	total = ring_entries(spec, nodes, n_nodes, vnodes, *weights);
	if (total > RM_MAX_RING_ENTRIES)
		return -E2BIG;

	r->seed = *seed;
	r->spec = *spec;
	r->vnodes = vnodes;
	r->n_nodes = n_nodes;
	r->n = (__u32)total;
	r->nodes = calloc(n_nodes ? n_nodes : 1, sizeof(*r->nodes));
	if (!r->nodes)
		return -ENOMEM;
	if (n_nodes)
		memcpy(r->nodes, nodes, n_nodes * sizeof(*nodes));
	for (i = 0; i < n_nodes; i++) { /* no stray bytes past the NUL */
		/* rm_name_valid() above: shorter than RM_NAME_MAX */
		size_t len = strlen(nodes[i].name);

		memset(r->nodes[i].name, 0, RM_NAME_MAX);
		memcpy(r->nodes[i].name, nodes[i].name, len);
	}
	qsort(r->nodes, n_nodes, sizeof(*r->nodes), spec_by_name);
	for (i = 1; i < n_nodes; i++)
		if (!strcmp(r->nodes[i - 1].name, r->nodes[i].name))
			return -EEXIST;
	return 0;
}

int rm_ring_plan(const struct rm_seed *seed, const struct rm_ring_spec *spec,
		 const struct rm_node_spec *nodes, __u32 n_nodes, __u32 vnodes,
		 struct rm_ring *r)
{
	__u64 weights;
	int err;

	memset(r, 0, sizeof(*r));
	err = ring_start(seed, spec, nodes, n_nodes, vnodes, r, &weights);
	if (err)
		rm_ring_free(r);
	return err;
}

/* A field of the digest: its bytes up to the NUL, then its length, so no
 * two lists of fields read the same. */
static void digest_str(struct rm_sip *s, const char *str, size_t max)
{
	size_t len = strnlen(str, max);

	for (size_t i = 0; i < len; i += 8) {
		__u64 w = 0;

		memcpy(&w, str + i, len - i < 8 ? len - i : 8);
		rm_sip_word(s, w);
	}
	rm_sip_word(s, len);
}

__u64 rm_ring_digest(const struct rm_ring *r)
{
	struct rm_sip s;
	__u64 d;

	rm_sip_init(&s, &r->seed);
	rm_sip_word(&s, (__u64)r->spec.scheme << 32 | r->spec.count);
	digest_str(&s, r->spec.tmpl, sizeof(r->spec.tmpl));
	rm_sip_word(&s, (__u64)r->vnodes << 32 | r->n);
	rm_sip_word(&s, r->n_nodes);
	for (__u32 i = 0; i < r->n_nodes; i++) {
		const struct rm_node_spec *n = &r->nodes[i];

		digest_str(&s, n->name, sizeof(n->name));
		rm_sip_word(&s, (__u64)n->weight << 32 | n->id);
		digest_str(&s, n->host, sizeof(n->host));
	}
	d = rm_sip_final(&s, RM_RING_FORMAT);
	return d ? d : 1;
}

int rm_ring_build_spec(const struct rm_seed *seed,
		       const struct rm_ring_spec *spec,
		       const struct rm_node_spec *nodes, __u32 n_nodes,
		       __u32 vnodes, struct rm_ring *out)
{
	struct rm_ring r = {0};
	struct rm_ring_entry *tmp;
	__u32 i, k = 0, *count;
	__u64 weights;
	int err;

	memset(out, 0, sizeof(*out));
	err = ring_start(seed, spec, nodes, n_nodes, vnodes, &r, &weights);
	if (!err)
		err = ring_mem(&r, r.n, &tmp, &count);
	if (err)
		goto fail;
	err = -EINVAL;
	for (i = 0; i < n_nodes; i++)
		if (node_points(&r, i, weights, &k))
			goto fail;
	ring_sort(r.entries, r.n, tmp, count);
	*out = r;
	return 0;
fail:
	rm_ring_free(&r);
	return err;
}

/* Can out (started: nodes sorted) be made from near? Fills keep[i] with
 * near's index of out's node i when near's entries of it can be taken
 * (same name and weight), else -1; *fresh: the entries the others make. */
static bool near_usable(const struct rm_ring *out, const struct rm_ring *near,
			int *keep, __u32 *fresh)
{
	__u32 j = 0;

	if (!near || out->spec.scheme != RM_RING_RINGMASTER ||
	    near->spec.scheme != RM_RING_RINGMASTER ||
	    near->vnodes != out->vnodes ||
	    memcmp(&near->seed, &out->seed, sizeof(out->seed)))
		return false;
	*fresh = 0;
	/* both node tables are sorted by name: one walk */
	for (__u32 i = 0; i < out->n_nodes; i++) {
		int c = 1;

		while (j < near->n_nodes &&
		       (c = strcmp(near->nodes[j].name, out->nodes[i].name)) < 0)
			j++;
		keep[i] = j < near->n_nodes && !c &&
				  near->nodes[j].weight == out->nodes[i].weight
			      ? (int)j
			      : -1;
		if (keep[i] < 0)
			*fresh += out->nodes[i].weight * out->vnodes;
	}
	return true;
}

/* r->entries (r->n of them): near's entries of the nodes it keeps (to[]:
 * near's node index -> r's, -1 dropped), in their order, merged with
 * add's (sorted, r's node indexes). Equal points go in name order (node
 * index), as a build's stable sort leaves them; one node's entries come
 * from one side, in vnode order. False if the counts do not add up. */
static bool ring_merge(struct rm_ring *r, const struct rm_ring *near,
		       const int *to, const struct rm_ring *add)
{
	__u32 k = 0, a = 0;

	for (__u32 j = 0; j <= near->n; j++) {
		int nd = j < near->n ? to[near->entries[j].node] : 0;

		if (j < near->n && nd < 0)
			continue;
		while (a < add->n &&
		       (j == near->n ||
			add->entries[a].point < near->entries[j].point ||
			(add->entries[a].point == near->entries[j].point &&
			 add->entries[a].node < (__u32)nd))) {
			if (k == r->n)
				return false;
			r->entries[k++] = add->entries[a++];
		}
		if (j < near->n) {
			if (k == r->n)
				return false;
			r->entries[k].point = near->entries[j].point;
			r->entries[k++].node = (__u32)nd;
		}
	}
	return k == r->n;
}

int rm_ring_build_near(const struct rm_seed *seed,
		       const struct rm_ring_spec *spec,
		       const struct rm_node_spec *nodes, __u32 n_nodes,
		       __u32 vnodes, const struct rm_ring *near,
		       struct rm_ring *out)
{
	struct rm_ring r = {0}, add = {0};
	struct rm_ring_entry *tmp;
	int *keep = NULL, *to = NULL;
	__u32 i, k = 0, fresh = 0, *count;
	__u64 weights;
	int err;

	memset(out, 0, sizeof(*out));
	err = ring_start(seed, spec, nodes, n_nodes, vnodes, &r, &weights);
	if (err)
		goto out;
	keep = calloc(n_nodes ? n_nodes : 1, sizeof(*keep));
	to = near ? calloc(near->n_nodes ? near->n_nodes : 1, sizeof(*to))
		  : NULL;
	if (!keep || (near && !to)) {
		err = -ENOMEM;
		goto out;
	}
	/* !near said again here: the analyzer does not follow it into
	 * near_usable() */
	if (!near || !near_usable(&r, near, keep, &fresh)) {
		rm_ring_free(&r);
		err = rm_ring_build_spec(seed, spec, nodes, n_nodes, vnodes,
					 out);
		goto out;
	}
	/* the points of the nodes near does not hold as they are, sorted
	 * (node indexes are r's) */
	err = ring_mem(&add, fresh, &tmp, &count);
	if (err)
		goto out;
	add.n = fresh;
	for (i = 0; i < n_nodes; i++)
		if (keep[i] < 0)
			vnode_points(seed, r.nodes[i].name,
				     r.nodes[i].weight * vnodes, i, add.entries,
				     &k);
	ring_sort(add.entries, add.n, tmp, count);
	err = ring_mem(&r, r.n, &tmp, &count);
	if (err)
		goto out;
	for (i = 0; i < near->n_nodes; i++)
		to[i] = -1;
	for (i = 0; i < n_nodes; i++)
		if (keep[i] >= 0)
			to[keep[i]] = (int)i;
	if (!ring_merge(&r, near, to, &add)) {
		/* near was not the ring of its nodes: build instead */
		rm_ring_free(&r);
		err = rm_ring_build_spec(seed, spec, nodes, n_nodes, vnodes,
					 out);
		goto out;
	}
	*out = r;
	r = (struct rm_ring){0};
out:
	rm_ring_free(&r);
	rm_ring_free(&add);
	free(keep);
	free(to);
	return err;
}

static __u64 total_weight(const struct rm_node_spec *nodes, __u32 n_nodes)
{
	__u64 w = 0;

	for (__u32 i = 0; i < n_nodes; i++)
		w += nodes[i].weight;
	return w;
}

__u32 rm_ring_max_vnodes(const struct rm_node_spec *nodes, __u32 n_nodes)
{
	__u64 w = total_weight(nodes, n_nodes), v;

	if (!w)
		return RM_MAX_VNODES;
	v = RM_MAX_RING_ENTRIES / w;
	return v > RM_MAX_VNODES ? RM_MAX_VNODES : (__u32)v;
}

void rm_ring_too_big(const struct rm_node_spec *nodes, __u32 n_nodes,
		     __u32 vnodes, char *out, size_t len)
{
	__u64 w = total_weight(nodes, n_nodes);
	__u32 fit = rm_ring_max_vnodes(nodes, n_nodes);

	if (n_nodes > RM_MAX_NODES_PER_RING)
		snprintf(out, len,
			 "%u nodes, over the %u one ring holds (a build with "
			 "EXTRA_DEFS=-DRM_MAX_NODES_PER_RING=N raises it)",
			 n_nodes, (unsigned int)RM_MAX_NODES_PER_RING);
	else if (fit)
		snprintf(out, len,
			 "total weight %llu x %u vnodes = %llu ring entries, "
			 "over the limit of %u: use --vnodes %u or less (or "
			 "lower the weights)",
			 (unsigned long long)w, vnodes,
			 (unsigned long long)w * vnodes, RM_MAX_RING_ENTRIES,
			 fit);
	else
		snprintf(out, len,
			 "total weight %llu is over the %u ring entries even "
			 "at --vnodes 1: lower the weights",
			 (unsigned long long)w, RM_MAX_RING_ENTRIES);
}

void rm_ring_free(struct rm_ring *r)
{
	free(r->nodes);
	if (r->mem_len)
		rm_huge_free(r->entries, r->mem_len);
	else
		free(r->entries);
	memset(r, 0, sizeof(*r));
}

int rm_ring_find(const struct rm_ring *r, const char *name)
{
	for (__u32 i = 0; i < r->n_nodes; i++)
		if (!strcmp(r->nodes[i].name, name))
			return (int)i;
	return -1;
}

/* Entry i owns (point[i-1], point[i]]; entry 0 also owns everything after
 * the last point, wrapping around. */
void rm_ring_arcs(const struct rm_ring *r, __u64 *arcs)
{
	memset(arcs, 0, r->n_nodes * sizeof(*arcs));
	if (r->n == 0)
		return;
	arcs[r->entries[0].node] +=
		(__u64)r->entries[0].point + 1 +
		((1ULL << 32) - 1 - r->entries[r->n - 1].point);
	for (__u32 i = 1; i < r->n; i++)
		arcs[r->entries[i].node] +=
			r->entries[i].point - r->entries[i - 1].point;
}

/* Owner (node index, or -1 for an empty ring) of key, by a cursor the
 * sweep only moves forward. */
static int owner_at(const struct rm_ring *r, __u32 *cursor, __u64 key)
{
	if (r->n == 0)
		return -1;
	while (*cursor < r->n && r->entries[*cursor].point < key)
		(*cursor)++;
	return (int)r->entries[*cursor < r->n ? *cursor : 0].node;
}

struct move_rec {
	int from, to; /* node indexes, -1 = none */
	__u64 keys;
};

static int rec_cmp(const void *a, const void *b)
{
	const struct move_rec *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

static int move_cmp(const void *a, const void *b)
{
	const struct rm_move *x = a, *y = b;
	int c;

	if (x->keys != y->keys)
		return x->keys > y->keys ? -1 : 1;
	c = strcmp(x->from, y->from);
	return c ? c : strcmp(x->to, y->to);
}

static const char *node_name(const struct rm_ring *r, int idx)
{
	return idx < 0 ? "-" : r->nodes[idx].name;
}

/* Sweep the union of both rings' points: between consecutive boundaries
 * each ring has one owner, so comparing owners per elementary interval
 * gives the exact moved keyspace. Each interval whose owner changes goes
 * to rec (when given); the total is returned. Owners are compared by
 * name, through same[]: from's node index -> to's node of that name, or
 * -1 (from NULL when a table could not be had: strcmp per interval). */
static __u64 ring_sweep(const struct rm_ring *from, const struct rm_ring *to,
			void (*rec)(void *arg, int oa, int ob, __u64 keys),
			void *arg)
{
	__u32 ia = 0, ib = 0, ca = 0, cb = 0;
	__u64 start = 0, total = 0;
	int *same = calloc(from->n_nodes ? from->n_nodes : 1, sizeof(*same));

	/* both node tables are sorted by name: one walk */
	for (__u32 i = 0, j = 0; same && i < from->n_nodes; i++) {
		int c = 1;

		while (j < to->n_nodes &&
		       (c = strcmp(to->nodes[j].name, from->nodes[i].name)) < 0)
			j++;
		same[i] = j < to->n_nodes && !c ? (int)j : -1;
	}
	while (start < (1ULL << 32)) {
		/* the interval [start, end] ends at the next point of either
		 * ring, or at the top of the keyspace */
		__u64 end = (1ULL << 32) - 1;
		int oa, ob;
		bool moved;

		while (ia < from->n && from->entries[ia].point < start)
			ia++;
		while (ib < to->n && to->entries[ib].point < start)
			ib++;
		if (ia < from->n && from->entries[ia].point < end)
			end = from->entries[ia].point;
		if (ib < to->n && to->entries[ib].point < end)
			end = to->entries[ib].point;
		oa = owner_at(from, &ca, start);
		ob = owner_at(to, &cb, start);
		if (same)
			moved = oa < 0 || ob < 0 ? (oa < 0) != (ob < 0)
						 : same[oa] != ob;
		else
			moved = strcmp(node_name(from, oa), node_name(to, ob));
		if (moved) {
			if (rec)
				rec(arg, oa, ob, end - start + 1);
			total += end - start + 1;
		}
		start = end + 1;
	}
	free(same);
	return total;
}

__u64 rm_ring_moved(const struct rm_ring *from, const struct rm_ring *to)
{
	return ring_sweep(from, to, NULL, NULL);
}

struct recs {
	struct move_rec *rec;
	size_t n, cap;
};

static void add_rec(void *arg, int oa, int ob, __u64 keys)
{
	struct recs *r = arg;

	if (r->n < r->cap)
		r->rec[r->n++] = (struct move_rec){oa, ob, keys};
}

/* Records are merged by (from, to) index with one sort at the end, so a
 * diff costs O(n log n) in the entries. */
int rm_ring_diff(const struct rm_ring *from, const struct rm_ring *to,
		 struct rm_move **moves, size_t *n_moves, __u64 *moved)
{
	struct recs rs = {.cap = (size_t)from->n + to->n + 1};
	struct move_rec *recs;
	struct rm_move *out = NULL;
	size_t nrec, n = 0;
	__u64 total;

	*moves = NULL;
	*n_moves = 0;
	*moved = 0;
	rs.rec = calloc(rs.cap, sizeof(*rs.rec));
	if (!rs.rec)
		return -ENOMEM;
	total = ring_sweep(from, to, add_rec, &rs);
	recs = rs.rec;
	nrec = rs.n;
	qsort(recs, nrec, sizeof(*recs), rec_cmp);
	out = calloc(nrec ? nrec : 1, sizeof(*out));
	if (!out) {
		free(recs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nrec; i++) {
		if (n && recs[i].from == recs[i - 1].from &&
		    recs[i].to == recs[i - 1].to) {
			out[n - 1].keys += recs[i].keys;
			continue;
		}
		snprintf(out[n].from, RM_NAME_MAX, "%s",
			 node_name(from, recs[i].from));
		snprintf(out[n].to, RM_NAME_MAX, "%s", node_name(to, recs[i].to));
		out[n].keys = recs[i].keys;
		n++;
	}
	free(recs);
	if (n)
		qsort(out, n, sizeof(*out), move_cmp);
	*moves = out;
	*n_moves = n;
	*moved = total;
	return 0;
}

__u32 rm_ring_index_bits(__u32 n)
{
	__u32 bits = RM_INDEX_BITS_MIN;

	/* two buckets per entry: most buckets then hold at most one point,
	 * so the bucket's word alone names the owner */
	while (bits < RM_INDEX_BITS_MAX && (1ull << bits) < 2ull * n)
		bits++;
	return bits;
}

__u32 rm_ring_nslots(const struct rm_ring *r)
{
	return RM_RING_SLOTS(rm_ring_index_bits(r->n), r->n);
}

/* The word of the bucket whose points are entries [lo, hi) (rm_common.h,
 * rm_rings); shift = 32 - bits. */
static __u32 bucket_word(const struct rm_ring *r, __u32 lo, __u32 hi,
			 __u32 shift)
{
	__u32 first = r->nodes[r->entries[lo < r->n ? lo : 0].node].id;

	if (lo == hi)
		return RM_BKT_DIRECT << 30 | first;
	if (hi - lo == 1 && shift <= RM_BKT_SPLIT_OFF_BITS &&
	    first < 1u << RM_BKT_SPLIT_ID_BITS)
		return RM_BKT_SPLIT << 30 |
		       (r->entries[lo].point & ((1u << shift) - 1))
			   << RM_BKT_SPLIT_ID_BITS |
		       first;
	return RM_BKT_SEARCH << 30 |
	       (hi - lo < RM_BKT_CNT_MAX ? hi - lo : RM_BKT_CNT_MAX)
		   << RM_BKT_LO_BITS |
	       lo;
}

static void bucket_set(struct rm_slot *s, __u32 j, __u32 w)
{
	switch (j & 3) {
	case 0: s->a = w; break;
	case 1: s->b = w; break;
	case 2: s->c = w; break;
	default: s->d = w; break;
	}
}

int rm_ring_encode(const struct rm_ring *r, struct rm_slot *slots,
		   __u32 nslots)
{
	__u32 bits = rm_ring_index_bits(r->n);
	__u32 nb = 1u << bits, shift = 32 - bits;
	__u32 base = 1 + RM_RING_IDX_SLOTS(bits), i, b;

	__u32 need = rm_ring_nslots(r);

	if (nslots < need)
		return -ENOSPC;
	/* every slot below is written whole, but for the header's c and d,
	 * an odd ring's last half slot and what lies past the ring: zero
	 * those, not megabytes of index that are about to be written */
	if (r->n == 0) {
		memset(slots, 0, (size_t)nslots * sizeof(*slots));
	} else {
		memset(&slots[0], 0, sizeof(slots[0]));
		memset(&slots[need - 1], 0,
		       (size_t)(nslots - need + 1) * sizeof(*slots));
	}
	slots[0].a = r->n;
	slots[0].b = RM_RING_HDR_B(bits);
	rm_ring_hdr_set_cd(&slots[0], rm_ring_digest(r));
	if (r->n == 0)
		return 0;
	/* bucket b: entries [first >= b << shift, first >= (b+1) << shift) */
	i = 0;
	for (b = 0; b < nb; b++) {
		__u64 next = (__u64)(b + 1) << shift;
		__u32 lo = i;

		while (i < r->n && r->entries[i].point < next)
			i++;
		bucket_set(&slots[1 + (b >> 2)], b, bucket_word(r, lo, i, shift));
	}
	for (i = 0; i < r->n; i++) {
		struct rm_slot *s = &slots[base + (i >> 1)];
		__u32 id = r->nodes[r->entries[i].node].id;

		if (i & 1) {
			s->c = r->entries[i].point;
			s->d = id;
		} else {
			s->a = r->entries[i].point;
			s->b = id;
		}
	}
	return 0;
}

/* The first entry at or past key (r->n if none). */
static __u32 lower_bound(const struct rm_ring *r, __u64 key)
{
	__u32 lo = 0, hi = r->n;

	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (r->entries[mid].point < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool rm_ring_encoded_in(const struct rm_ring *r, const struct rm_slot *slots,
			__u32 nslots)
{
	__u32 bits = rm_ring_index_bits(r->n), nb = 1u << bits;
	__u32 shift = 32 - bits, base = 1 + RM_RING_IDX_SLOTS(bits);

	if (nslots != rm_ring_nslots(r) || slots[0].a != r->n ||
	    slots[0].b != RM_RING_HDR_B(bits))
		return false;
	if (r->n == 0)
		return true;
	/* every entry, as rm_ring_encode() pairs them (an odd ring's last
	 * half slot zero) */
	for (__u32 i = 0; i < r->n; i += 2) {
		const struct rm_slot *s = &slots[base + (i >> 1)];
		bool two = i + 1 < r->n;

		if (s->a != r->entries[i].point ||
		    s->b != r->nodes[r->entries[i].node].id ||
		    s->c != (two ? r->entries[i + 1].point : 0) ||
		    s->d != (two ? r->nodes[r->entries[i + 1].node].id : 0))
			return false;
	}
	/* index buckets, as rm_ring_encode() fills them: the first, the
	 * last, and evenly between */
	for (__u32 k = 0; k < RM_RING_CHECK_BUCKETS; k++) {
		__u32 b = (__u32)((__u64)k * (nb - 1) /
				  (RM_RING_CHECK_BUCKETS - 1));
		__u32 lo = lower_bound(r, (__u64)b << shift);
		__u32 hi = lower_bound(r, (__u64)(b + 1) << shift);

		if (RM_BKT_WORD(&slots[1 + (b >> 2)], b) !=
		    bucket_word(r, lo, hi, shift))
			return false;
	}
	return true;
}

int rm_ring_lookup(const struct rm_slot *slots, __u32 nslots, __u32 key,
		   __u32 *id)
{
	struct rm_ring_view v = {.slots = slots, .nslots = nslots};

	return rm_owner_find(&v, key, id);
}
