// SPDX-License-Identifier: GPL-2.0
/*
 * A live ring's slots read back: into a ring (nodes from the snapshot's
 * records, entries from the slots) for diffs, or, for the reads that only
 * show what each node owns, into per-node sums in one pass.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "ring.h"
#include "ring_map.h"
#include "state.h"
#include "state_int.h"
#include "util.h"

static int spec_by_name(const void *a, const void *b)
{
	return strcmp(((const struct rm_node_spec *)a)->name,
		      ((const struct rm_node_spec *)b)->name);
}

/* Entry i of an encoded ring, e pointing at the first entry slot: read
 * with the macros the ring search uses (rm_common.h, struct rm_slot). */
static void entry_at(const struct rm_slot *e, __u32 i, __u32 *point,
		     __u32 *id)
{
	const struct rm_slot *s = &e[i >> 1];

	*point = RM_ENTRY_POINT(s, i);
	*id = RM_ENTRY_NODE(s, i);
}

/* Read the entries back; node names and weights come from s. A ring of
 * the format before this one (header b = bits, 1 to 20, 16-byte buckets)
 * is read too, *older set: a reader of a state an upgrade has not
 * migrated yet (`ringctl save` for ringload attach --migrate). */
static int decode_entries(const struct rm_slot *slots, __u32 nslots,
			  const struct rm_snap *s, __u32 svc,
			  struct rm_ring *r, bool *older)
{
	__u32 n = slots[0].a, bits = RM_RING_HDR_BITS(slots[0].b), k = 0;
	const struct rm_slot *e;
	int *idx = NULL, err = -EINVAL;
	__u32 point, id, base;

	*older = slots[0].b >= 1 && slots[0].b <= RM_MAX_RING_ENTRIES_LOG2;
	if (*older)
		base = 1 + (1u << bits);
	else if (RM_RING_HDR_FORMAT(slots[0].b) == RM_RING_FORMAT &&
		 bits >= RM_INDEX_BITS_MIN && bits <= RM_INDEX_BITS_MAX)
		base = 1 + RM_RING_IDX_SLOTS(bits);
	else
		return RM_RING_HDR_FORMAT(slots[0].b) != RM_RING_FORMAT ? -EPROTO
									: -EINVAL;
	if (n > RM_MAX_RING_ENTRIES || base + (n + 1) / 2 > nslots)
		return -EINVAL;
	e = slots + base;
	idx = malloc(RM_MAX_NODES * sizeof(*idx));
	r->nodes = calloc(RM_MAX_NODES_PER_RING, sizeof(*r->nodes));
	r->entries = calloc(n ? n : 1, sizeof(*r->entries));
	if (!idx || !r->nodes || !r->entries) {
		err = -ENOMEM;
		goto out;
	}
	memset(idx, 0xff, RM_MAX_NODES * sizeof(*idx));
	for (__u32 i = 0; i < n; i++) {
		struct rm_node_spec *ns = &r->nodes[k];

		entry_at(e, i, &point, &id);
		if (id >= RM_MAX_NODES)
			goto out;
		if (idx[id] >= 0)
			continue;
		if (k == RM_MAX_NODES_PER_RING)
			goto out;
		idx[id] = (int)k++;
		ns->id = id;
		ns->weight = s->node[id].weight;
		if (s->node[id].state != RM_NODE_FREE &&
		    s->node[id].svc_id == svc)
			rm_name_copy(ns->name, s->node[id].name, RM_NAME_MAX);
		else /* a slot the ring should no longer name */
			snprintf(ns->name, RM_NAME_MAX, "#%u", id);
	}
	qsort(r->nodes, k, sizeof(*r->nodes), spec_by_name);
	for (__u32 i = 0; i < k; i++)
		idx[r->nodes[i].id] = (int)i;
	for (__u32 i = 0; i < n; i++) {
		entry_at(e, i, &point, &id);
		r->entries[i].point = point;
		r->entries[i].node = (__u32)idx[id];
	}
	r->seed = s->cfg.seed;
	r->vnodes = s->svc[svc].vnodes;
	r->spec = s->svc[svc].ring;
	r->n_nodes = k;
	r->n = n;
	err = 0;
out:
	free(idx);
	return err;
}

/* Is slots the ring the snapshot's input for svc builds, by the header's
 * digest (rm_ring_digest(), written by rm_ring_encode())? When it is, r
 * holds that input's plan (nodes and entry count, no entries) and *base
 * is the first entry slot; when not, r is left empty. */
static bool digest_plan(const struct rm_slot *slots, __u32 nslots,
			const struct rm_snap *s, __u32 svc, struct rm_ring *r,
			__u32 *base)
{
	__u32 bits;

	if (!nslots || RM_RING_HDR_FORMAT(slots[0].b) != RM_RING_FORMAT ||
	    rm_snap_ring_plan(s, svc, r))
		return false;
	bits = rm_ring_index_bits(r->n);
	*base = 1 + RM_RING_IDX_SLOTS(bits);
	if (slots[0].a == r->n && slots[0].b == RM_RING_HDR_B(bits) &&
	    RM_RING_HDR_CD(&slots[0]) == rm_ring_digest(r) &&
	    *base + (r->n + 1) / 2 <= nslots)
		return true;
	rm_ring_free(r);
	return false;
}

/* Node id to its index in r->nodes, -1 for ids the ring does not name. */
static int *node_index(const struct rm_ring *r)
{
	int *idx = rm_scratch_alloc(RM_MAX_NODES * sizeof(*idx));

	if (!idx)
		return NULL;
	memset(idx, 0xff, RM_MAX_NODES * sizeof(*idx));
	for (__u32 i = 0; i < r->n_nodes; i++)
		idx[r->nodes[i].id] = (int)i;
	return idx;
}

/* slots as the ring the snapshot's input for svc builds, when the
 * header's digest says they are: r gets the input's nodes and the slots'
 * entries, the very ring rm_snap_ring() would build, without hashing and
 * sorting 100k points. True when done; false leaves r empty, for the
 * proof by building. */
static bool decode_by_digest(const struct rm_slot *slots, __u32 nslots,
			     const struct rm_snap *s, __u32 svc,
			     struct rm_ring *r)
{
	__u32 base, point, id;
	int *idx;
	bool ok = false;

	if (!digest_plan(slots, nslots, s, svc, r, &base))
		return false;
	idx = node_index(r);
	/* in huge pages: small fresh pages cost a read more than the
	 * decode (a fault each, 200 of them at 100k entries) */
	r->mem_len = (size_t)(r->n ? r->n : 1) * sizeof(*r->entries);
	r->entries = rm_huge_alloc(r->mem_len);
	if (!idx || !r->entries)
		goto out;
	for (__u32 i = 0; i < r->n; i++) {
		entry_at(slots + base, i, &point, &id);
		if (id >= RM_MAX_NODES || idx[id] < 0)
			goto out;
		r->entries[i].point = point;
		r->entries[i].node = (__u32)idx[id];
	}
	ok = true;
out:
	rm_scratch_free(idx);
	if (!ok)
		rm_ring_free(r);
	return ok;
}

/* o's arrays, one element per node of r, zeroed; false (o freed) when
 * out of memory */
static bool owned_alloc(const struct rm_ring *r, struct rm_ring_owned *o)
{
	o->keys = calloc(r->n_nodes ? r->n_nodes : 1, sizeof(*o->keys));
	o->entries = calloc(r->n_nodes ? r->n_nodes : 1, sizeof(*o->entries));
	if (o->keys && o->entries)
		return true;
	rm_ring_owned_free(o);
	return false;
}

static inline bool owned_add(struct rm_ring_owned *o, const int *idx,
			     __u32 point, __u32 id, __u64 *prev)
{
	if (id >= RM_MAX_NODES || idx[id] < 0)
		return false;
	o->keys[idx[id]] += (__u64)point - *prev;
	o->entries[idx[id]]++;
	*prev = point;
	return true;
}

/* What each node owns, summed over the entries e of a ring whose plan r
 * holds (nodes and entry count): entry i owns (point[i-1], point[i]];
 * entry 0 also the wrap past the last point, as rm_ring_arcs(). True
 * when done; false (an id the plan does not name, no memory) leaves o
 * empty. */
static bool owned_sum(const struct rm_slot *e, const struct rm_ring *r,
		      struct rm_ring_owned *o)
{
	__u32 id, last = 0;
	__u64 prev;
	int *idx = node_index(r);
	bool ok = false;

	if (!idx || !owned_alloc(r, o))
		goto out;
	if (r->n)
		entry_at(e, r->n - 1, &last, &id);
	prev = (__u64)last - (1ULL << 32); /* the wrap, as unsigned */
	/* a slot's two entries at once: the macros' odd mask folds away */
	for (__u32 j = 0; j < (r->n + 1) / 2; j++) {
		const struct rm_slot *sl = &e[j];

		if (!owned_add(o, idx, RM_ENTRY_POINT(sl, 0),
			       RM_ENTRY_NODE(sl, 0), &prev) ||
		    (2 * j + 1 < r->n &&
		     !owned_add(o, idx, RM_ENTRY_POINT(sl, 1),
				RM_ENTRY_NODE(sl, 1), &prev)))
			goto out;
	}
	ok = true;
out:
	rm_scratch_free(idx);
	if (!ok)
		rm_ring_owned_free(o);
	return ok;
}

int rm_ring_decode(const struct rm_slot *slots, __u32 nslots,
		   const struct rm_snap *s, __u32 svc, struct rm_ring *r)
{
	return rm_ring_decode_check(slots, nslots, s, svc, r, NULL);
}

int rm_ring_decode_check(const struct rm_slot *slots, __u32 nslots,
			 const struct rm_snap *s, __u32 svc, struct rm_ring *r,
			 bool *matches)
{
	int err = -EINVAL;
	bool older = false;

	if (matches)
		*matches = false;
	/* the usual case, read without a build: the ring's header says it
	 * was built from the snapshot's very input */
	if (decode_by_digest(slots, nslots, s, svc, r)) {
		if (matches)
			*matches = true;
		return 0;
	}
	/* else the same, proved: the kernel holds exactly the ring the
	 * snapshot builds, names and weights included */
	if (!rm_snap_ring(s, svc, r)) {
		if (rm_ring_encoded_in(r, slots, nslots)) {
			if (matches)
				*matches = true;
			return 0;
		}
		rm_ring_free(r);
	}
	memset(r, 0, sizeof(*r));
	if (nslots)
		err = decode_entries(slots, nslots, s, svc, r, &older);
	/* read back right only if it encodes to the very same slots (an
	 * older format's entries as they are) */
	if (!err && !older && !rm_ring_encoded_in(r, slots, nslots))
		err = -EINVAL;
	if (!err)
		return 0;
	rm_ring_free(r);
	if (err == -ENOMEM)
		return rm_state_fail(err, "out of memory");
	if (err == -EPROTO)
		return rm_state_fail(err,
		    "the ring of service '%s' is in ring format %u, this "
		    "build's is %u: the pins are another release's (`ringload "
		    "attach IFACE --migrate` moves them over)",
		    s->svc[svc].name, RM_RING_HDR_FORMAT(slots[0].b),
		    RM_RING_FORMAT);
	return rm_state_fail(err,
		    "the ring of service '%s' is corrupt (%u slots): "
		    "`ringctl save | ringctl restore -` rebuilds it",
		    s->svc[svc].name, nslots);
}

void rm_ring_owned_free(struct rm_ring_owned *o)
{
	free(o->keys);
	free(o->entries);
	o->keys = NULL;
	o->entries = NULL;
}

/* The same from slots as mapped, as every reader of a ring takes it (an
 * interrupted change, an older format): decoded, then summed. The fast
 * way (rm_state_ring_owned) has found the digest wanting already. */
static int owned_from_slots(const struct rm_slot *slots, __u32 nslots,
			    const struct rm_snap *s, __u32 svc,
			    struct rm_ring *r, struct rm_ring_owned *o,
			    bool *matches)
{
	int err;

	err = rm_ring_decode_check(slots, nslots, s, svc, r, matches);
	if (err)
		return err;
	if (!owned_alloc(r, o)) {
		rm_ring_free(r);
		return rm_state_fail(-ENOMEM, "out of memory");
	}
	rm_ring_arcs(r, o->keys);
	for (__u32 i = 0; i < r->n; i++)
		o->entries[r->entries[i].node]++;
	return 0;
}

/* The usual case reads two things: the header's page, and the entries
 * (not the index, which is more than half of the ring) copied by the
 * kernel; anything the digest does not vouch for goes the long way. */
int rm_state_ring_owned(struct rm_state *st, const struct rm_snap *s,
			__u32 svc, struct rm_ring *r, struct rm_ring_owned *o,
			bool *matches)
{
	struct rm_ring_page *head = rm_scratch_alloc(sizeof(*head));
	const __u32 zero = 0;
	struct rm_slot_read rd;
	struct rm_slot *slots;
	__u32 pages, base, nslots;
	bool dummy;
	size_t len;
	int fd, err;

	memset(r, 0, sizeof(*r));
	memset(o, 0, sizeof(*o));
	if (!matches)
		matches = &dummy;
	*matches = false;
	fd = rm_state_inner_open(st, RM_M_RINGS, svc);
	if (fd < 0 || !head) {
		rm_scratch_free(head);
		if (fd >= 0)
			close(fd);
		if (fd == -ENOENT)
			return rm_state_fail(fd, "service id %u has no ring "
					     "installed", svc);
		/* one it cannot open, or an array of another shape (an
		 * older layout's): none this build reads */
		return fd < 0 ? -ENOENT
			      : rm_state_fail(-ENOMEM, "out of memory");
	}
	err = rm_ring_map_pages(fd, &pages);
	if (!err && !bpf_map_lookup_elem(fd, &zero, head) &&
	    digest_plan(head->slot, pages * RM_RING_PAGE_SLOTS, s, svc, r,
			&base)) {
		if (!r->n) {
			*matches = owned_sum(NULL, r, o);
		} else if (!rm_ring_map_read(fd, pages, base, (r->n + 1) / 2,
					     &rd)) {
			*matches = owned_sum(rd.slots, r, o);
			rm_ring_map_read_free(&rd);
		}
		if (!*matches)
			rm_ring_free(r);
	}
	rm_scratch_free(head);
	if (!err && !*matches) {
		err = rm_ring_map_mmap(fd, false, &slots, &nslots, &len);
		if (!err) {
			err = owned_from_slots(slots, nslots, s, svc, r, o,
					       matches);
			munmap(slots, len);
		} else {
			rm_state_fail(err, "cannot map %s[%u]: %s",
				      rm_map_names[RM_M_RINGS], svc,
				      strerror(-err));
			err = -ENOENT;
		}
	} else if (err) {
		rm_state_fail(err, "%s[%u] is not a ring array",
			      rm_map_names[RM_M_RINGS], svc);
		err = -ENOENT;
	}
	close(fd);
	return err;
}
