/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The live state under the pin dir: create it, open and lock it, read it
 * into a snapshot, and move it from one snapshot to another.
 *
 * Every change is "old snapshot -> new snapshot": a command copies the
 * snapshot it read, edits the copy with the rm_snap_* helpers, and
 * rm_state_commit() validates the result, builds every ring that changes
 * off to the side, then writes the maps in an order the data plane
 * tolerates (a node slot is filled before a ring points at it and freed
 * after no ring and no in-flight packet can). A failure before the first
 * write changes nothing; one after it is rolled back to the old snapshot.
 *
 * Functions return 0 (or an id) or a negative errno; on failure
 * rm_errmsg() says what went wrong and how to fix it, in one line.
 */
#ifndef RM_STATE_H
#define RM_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <ringmaster/rm_common.h>
#include "ring.h"

/* The BPF program's maps (RM_MAPS, rm_common.h), all pinned as
 * <pin dir>/<name>. */
#define RM_MAP_ENUM(id, name) RM_M_##id,
enum rm_map_id { RM_MAPS(RM_MAP_ENUM) RM_M_NR };
#undef RM_MAP_ENUM
extern const char *const rm_map_names[RM_M_NR];
#define RM_MAP_NAME(id) (rm_map_names[RM_M_##id])

/* Attached interfaces: an ARRAY that ringload creates and pins next to
 * the program's maps (bpffs holds only pins and directories, and the data
 * plane never needs it). Slot ifindex 0 = free. */
#define RM_MAP_IFACES "rm_ifaces"
#define RM_MAX_IFACES 64
struct rm_iface {
	__u32 ifindex;
	__u32 mode;    /* enum xdp_attach_mode */
	__u32 prog_id; /* our rm_xdp instance on this interface */
	__u32 pad;
	char name[RM_IFNAME_MAX];
};

#define RM_PATH_MAX 256

struct rm_state {
	char pin_dir[RM_PATH_MAX];
	int fd[RM_M_NR];
	int lock_fd;
	int ncpus;	/* possible CPUs: per-CPU values per key */
	__u32 tx_vsize; /* rm_tx_ports value size: ifindex or devmap_val */
};

/* The control-plane view: everything a change rewrites. */
struct rm_snap {
	struct rm_config cfg;
	struct rm_svc_meta svc[RM_MAX_SERVICES];
	struct rm_node node[RM_MAX_NODES];
};

/* Service i is in use, and is service only (-1: any service). */
static inline bool rm_snap_svc_used(const struct rm_snap *s, __u32 i,
				    int only)
{
	return s->svc[i].in_use && (only < 0 || (int)i == only);
}

/* Node slot i holds a node of a service rm_snap_svc_used() takes. */
static inline bool rm_snap_node_used(const struct rm_snap *s, __u32 i,
				     int only)
{
	const struct rm_node *n = &s->node[i];

	return n->state != RM_NODE_FREE && n->svc_id < RM_MAX_SERVICES &&
	       rm_snap_svc_used(s, n->svc_id, only);
}

/* Node slot i's QUIC-LB server ID as rm_quic_sids keys it, if it has
 * one in s (a node of a --key quic service given --server-id). */
static inline bool rm_quic_sid_of(const struct rm_snap *s, __u32 i,
				  struct rm_quic_sid_key *k)
{
	const struct rm_node *n = &s->node[i];

	if (n->state == RM_NODE_FREE || !n->quic_sid_len ||
	    n->quic_sid_len > RM_QUIC_SID_MAX ||
	    n->svc_id >= RM_MAX_SERVICES || !s->svc[n->svc_id].in_use ||
	    s->svc[n->svc_id].keyspec.kind != RM_KEY_QUIC)
		return false;
	memset(k, 0, sizeof(*k));
	k->svc_id = n->svc_id;
	k->len = n->quic_sid_len;
	memcpy(k->sid, n->quic_sid, n->quic_sid_len);
	return true;
}

const char *rm_errmsg(void);

/* ---- bpffs, creation, removal ---------------------------------------- */
struct bpf_object;
struct ringmaster_bpf;
/* Mount bpffs at /sys/fs/bpf if nothing is there, create pin_dir, and
 * check it is on bpffs. */
int rm_bpffs_prepare(const char *pin_dir);
/* Point every map of obj at <pin_dir>/<name>, so loading it reuses the
 * pinned maps or creates and pins them, and size rm_conns: as the pinned
 * table is, if there is one, else conn_entries (0: the default).
 * rm_obj_pin_maps() is the _sized() one with 0. */
int rm_obj_pin_maps(struct bpf_object *obj, const char *pin_dir);
int rm_obj_pin_maps_sized(struct bpf_object *obj, const char *pin_dir,
			  __u32 conn_entries);
/* Create the state at pin_dir (or reuse it) by loading the program with
 * pin paths, not attached anywhere, and seed rm_config if it never was
 * (random key, default UDP timeout and conn insert rate). Runs
 * rm_bpffs_prepare() first, so it may mount bpffs at /sys/fs/bpf in the
 * caller's mount namespace. With skel non-NULL the loaded skeleton is
 * handed over (tests run it with BPF_PROG_TEST_RUN); otherwise it is
 * closed and the pins remain. rm_state_create() is the _sized() one with
 * conn_entries 0. */
int rm_state_create(const char *pin_dir, struct ringmaster_bpf **skel);
int rm_state_create_sized(const char *pin_dir, __u32 conn_entries,
			  struct ringmaster_bpf **skel);

/* ---- the connection table's size ------------------------------------- */
/* rm_conns holds conn_entries flows. The size is fixed when the map is
 * created (the first attach of a pin dir): the kernel preallocates every
 * entry, about 120 bytes each (30 MB by default, 8 GB at the limit).
 * With per-CPU LRU lists the kernel rounds the size up to a multiple of
 * the possible CPUs, and so does rm_conn_entries(), so the size asked
 * for is the size the pinned map reports. A pin dir whose table has
 * another size than asked for is refused (-EEXIST, with the way to
 * resize in rm_errmsg()); asking for 0 takes it as it is. */
#define RM_CONN_ENTRIES_MAX (1u << 26)
/* n (0: RM_DEFAULT_CONN_ENTRIES) as the kernel will size it. */
__u32 rm_conn_entries(__u32 n);

/* An ARRAY of the control plane's own pinned as pin_dir/name (the change
 * log, the applied revision, the health checker's counters): opened, or
 * with create made and pinned when missing (if another writer pins one
 * first, theirs). An fd, or -errno (-ENOENT: none and !create). */
int rm_pinned_array_open(const char *pin_dir, const char *name,
			 __u32 value_size, __u32 entries, bool create);

/* Unpin every rm_* pin under pin_dir and remove the directory. */
int rm_state_purge(const char *pin_dir);

/* ---- open, lock ------------------------------------------------------ */
/* RM_LOCK_EX_TRY: exclusive, or -EWOULDBLOCK at once if someone holds
 * the lock (a daemon's event loop must not wait on a slow reader). */
enum rm_lock { RM_LOCK_NONE, RM_LOCK_SH, RM_LOCK_EX, RM_LOCK_EX_TRY };
int rm_state_open(struct rm_state *st, const char *pin_dir, enum rm_lock lock);
void rm_state_close(struct rm_state *st);
/* Take the pin dir's lock on an fd the caller closes: -EWOULDBLOCK never,
 * it waits. */
int rm_lock_pin_dir(const char *pin_dir, enum rm_lock lock);

/* ---- reading --------------------------------------------------------- */
int rm_state_read(struct rm_state *st, struct rm_snap *s);
/* rm_config alone: for a command that needs nothing else (seed). */
int rm_state_read_cfg(struct rm_state *st, struct rm_config *cfg);
/* The inner array the kernel searches for service svc (*slots malloc'd). */
int rm_state_ring_slots(struct rm_state *st, __u32 svc, struct rm_slot **slots,
			__u32 *nslots);
/* The same ring mapped read-only instead of copied (rings are mmapable):
 * no copy of its megabytes, and the pages come mapped. Once installed a
 * ring's points and index are never written again (a change installs a
 * new ring; retiring one writes only its header's retire time), so the
 * view stays what it was. Release with rm_state_ring_unmap(). */
int rm_state_ring_map(struct rm_state *st, __u32 svc,
		      const struct rm_slot **slots, __u32 *nslots);
void rm_state_ring_unmap(const struct rm_slot *slots, __u32 nslots);
/* Remembered generation g (0 newest) of service svc (second chance,
 * rm_rings_old): as rm_state_ring_slots, or -ENOENT (no message) when
 * there is none. Its retire time: RM_RING_RETIRED_NS(&(*slots)[0]). */
int rm_state_gen_slots(struct rm_state *st, __u32 svc, __u32 g,
		       struct rm_slot **slots, __u32 *nslots);
/* The same mapped read-only (a generation's entries are never written
 * again; only its header was stamped, before it was remembered): release
 * with rm_state_ring_unmap(). */
int rm_state_gen_map(struct rm_state *st, __u32 svc, __u32 g,
		     const struct rm_slot **slots, __u32 *nslots);
/* Its header slot alone (entries, index bits, retire stamp): one page
 * read, nothing mapped; -ENOENT (no message) as above. */
int rm_state_gen_head(struct rm_state *st, __u32 svc, __u32 g,
		      struct rm_slot *hdr);
/* Does a live ring (slots as read) hold exactly what s's records give
 * service svc? A change interrupted between its writes shows here. */
bool rm_ring_matches(const struct rm_snap *s, __u32 svc,
		     const struct rm_slot *live, __u32 n);
/* Turn kernel slots back into a ring (names from s) for arcs and diffs. */
int rm_ring_decode(const struct rm_slot *slots, __u32 nslots,
		   const struct rm_snap *s, __u32 svc, struct rm_ring *r);
/* The same, and *matches: whether the live ring is the one s's records
 * build (rm_ring_matches(), without building the ring a second time). */
int rm_ring_decode_check(const struct rm_slot *slots, __u32 nslots,
			 const struct rm_snap *s, __u32 svc, struct rm_ring *r,
			 bool *matches);
/* What each node of svc's live ring owns, per r->nodes[k]: keys[k] the
 * keyspace in points (rm_ring_arcs()), entries[k] its ring entries. For
 * the reads that show shares (show, top, the metrics): when the header's
 * digest vouches for the ring, one pass over a copy of its entries and no
 * entries built; else as rm_ring_decode_check(), *matches alike (may be
 * NULL). r gives the nodes and the entry count only (its entries are not
 * to be read); the caller frees both, rm_ring_owned_free() and
 * rm_ring_free(). 0; -ENOENT when svc has no ring this build can read
 * (none installed, one it cannot open or map, an array of another shape:
 * an older layout's), as readers have always shown it: empty; or -errno
 * for a ring that is there but unreadable (corrupt, another format);
 * reported. */
struct rm_ring_owned {
	__u64 *keys;
	__u32 *entries;
};
int rm_state_ring_owned(struct rm_state *st, const struct rm_snap *s,
			__u32 svc, struct rm_ring *r, struct rm_ring_owned *o,
			bool *matches);
void rm_ring_owned_free(struct rm_ring_owned *o);
/* Per-CPU sums. */
int rm_state_counters(struct rm_state *st, __u64 out[RM_CNT_MAX]);
int rm_state_traffic(struct rm_state *st, enum rm_map_id map, __u32 idx,
		     struct rm_traffic *out);
/* The rows of service only (-1: every service in use) and of its nodes
 * into svc[RM_MAX_SERVICES] and node[RM_MAX_NODES]; other rows stay as
 * they were. The node rows are read between two reads of the service
 * rows, and again while those moved, up to RM_TRAFFIC_TRIES times: the
 * data path counts a packet's service and at once its node, so a service's
 * row is then its nodes' sum though packets arrive during the read. */
#ifndef RM_TRAFFIC_TRIES
#define RM_TRAFFIC_TRIES 4
#endif
int rm_state_traffic_rows(struct rm_state *st, const struct rm_snap *s,
			  int only, struct rm_traffic *svc,
			  struct rm_traffic *node);

/* ---- the connection table -------------------------------------------- */
/* Is entry c of a flow of protocol proto one the data plane still
 * honours? The rule is rm_conn_valid_at() (rm_conn.h), which the data
 * plane applies too. now_ns: CLOCK_MONOTONIC (the data plane's clock,
 * bpf_ktime_get_coarse_ns()). */
bool rm_conn_valid(const struct rm_snap *s, __u8 proto,
		   const struct rm_conn *c, __u64 now_ns);
/* Entries with a packet this recently count as recent (the data plane
 * refreshes an entry's time at most once a second, conntrack.h). */
#define RM_CONN_RECENT_S 10
struct rm_conn_count {
	__u32 max_entries; /* the table's size */
	__u64 entries;	   /* entries in it */
	__u64 stale;	   /* entries no longer valid: left to the LRU */
	/* valid entries per node slot, and those of them seen recently */
	__u32 node[RM_MAX_NODES];
	__u32 recent[RM_MAX_NODES];
};
/* Walk rm_conns and rm_conns6 once and count their entries against
 * snapshot s (read
 * under no lock: the data plane adds and refreshes entries all along). */
int rm_state_conn_count(struct rm_state *st, const struct rm_snap *s,
			struct rm_conn_count *out);
/* The entry of flow f (as hashed: ports zero for 3-tuple services) in
 * rm_conns or rm_conns6, if the table holds one: *valid says whether the
 * data plane still honours it (rm_conn_valid), *age_ns how long since
 * its last refresh. -ENOENT when there is none (no message set). */
int rm_state_conn_lookup(struct rm_state *st, const struct rm_snap *s,
			 const struct rm_flow *f, struct rm_conn *c,
			 bool *valid, __u64 *age_ns);
/* Flow f's set in the presence index (rm_conn_idx, at idx_fd) read into
 * *set, and f's tag: the set's number, or -errno. An index without a key
 * yet gets one when draw (as the data plane's first write would), else
 * -ENOENT: it holds no tag. */
long rm_conn_idx_read(int idx_fd, const struct rm_flow *f,
		      struct rm_conn_set *set, __u16 *tag, bool draw);
/* Put f's tag into its set, aged last_ns: what the data plane does
 * before it writes f's entry, which it honours only with the tag. */
int rm_conn_idx_put(int idx_fd, const struct rm_flow *f, __u64 last_ns);
/* Empty every set of the presence index, keeping its key: what emptying
 * the tables must do too, or their old flows' tags stay (tests, bench). */
int rm_conn_idx_clear(int idx_fd);
/* The size of the pinned rm_conns (rm_conns6 has the same). */
int rm_state_conn_max(struct rm_state *st, __u32 *max_entries);
/* rm_config's UDP timeout as the data plane applies it (0: default). */
__u32 rm_udp_timeout(const struct rm_config *cfg);
#define RM_UDP_TIMEOUT_MAX 86400 /* seconds */

/* ---- editing a snapshot ---------------------------------------------- */
int rm_snap_find_svc(const struct rm_snap *s, const char *name);
int rm_snap_find_node(const struct rm_snap *s, __u32 svc, const char *name);
/* Adds m (name, key, flags, vnodes) and returns the service id. Ids and
 * slots are taken free in both s and base (the snapshot being replaced),
 * so nothing freed by this change is reused by it: the data plane may
 * still be looking at it. A name that base holds with the same key keeps
 * its id. -EEXIST duplicate name or key, -ENOSPC full, -EINVAL bad. */
int rm_snap_svc_add(struct rm_snap *s, const struct rm_snap *base,
		    const struct rm_svc_meta *m);
void rm_snap_svc_del(struct rm_snap *s, __u32 svc);
/* Adds an ACTIVE node, MAC and ifindex of dev looked up now. Returns the
 * slot. The node base holds under the same service and name keeps its
 * slot, and its gen too when the MAC and interface are the same (restore
 * of an unchanged node); any other new owner of a slot gets a new gen. */
int rm_snap_node_add(struct rm_snap *s, const struct rm_snap *base, __u32 svc,
		     const char *name, const __u8 mac[6], const char *dev,
		     __u32 weight);
/* A node reached by encapsulation (bpf/encap.h). */
struct rm_via {
	__u8 via;	/* RM_VIA_IPIP / RM_VIA_GUE */
	__u8 family;	/* RM_FAMILY_V4/V6 of addr */
	__u16 gue_port; /* host order; RM_VIA_GUE only */
	__be32 addr[4]; /* be; the node's address, the outer destination */
};
/* Adds an ACTIVE node reached by v. dev (NULL or "": none) names the
 * interface its packets leave by; without one it is the interface of the
 * kernel's route to the address now. Either goes into rm_tx_ports (the
 * data plane follows the route per packet; a route that moves to another
 * interface needs that one in rm_tx_ports too: ringload neighd adds it).
 * Slots and gens as rm_snap_node_add, the same address and method
 * keeping the gen. */
int rm_snap_node_add_encap(struct rm_snap *s, const struct rm_snap *base,
			   __u32 svc, const char *name, const struct rm_via *v,
			   const char *dev, __u32 weight);
/* Whether a and b send a flow's packets to the same place (method, MAC,
 * interface, and for the encapsulating methods address and port): an
 * entry remembering (slot, gen) may keep reaching such a node. */
bool rm_node_same_target(const struct rm_node *a, const struct rm_node *b);
/* "l2", "ipip", "gue" (and "?" for anything else). */
const char *rm_via_name(__u8 via);
/* Frees the slot but keeps its gen: whoever takes the slot next gets
 * gen + 1, so entries remembering the old node never reach the new one.
 * rm_state_commit() writes the freed record only after the rings no
 * longer name it and no packet can still be using them. */
void rm_snap_node_del(struct rm_snap *s, __u32 slot);
/* RM_NODE_ACTIVE / DRAINING / DOWN. DRAINING and DOWN leave the ring;
 * a DRAINING node keeps its flows (its connection-table entries stay
 * valid: same gen), entering DOWN bumps gen so every entry pointing at
 * the node is stale from its next packet on (which then goes to the ring
 * owner). Back to ACTIVE keeps the gen it has. */
void rm_snap_node_state(struct rm_snap *s, __u32 slot, __u32 state);
/* Set a node's health (the checker's verdict). Entering out = 1 bumps
 * the gen as entering DOWN does (unless the node is DOWN already), so
 * its flows go to the ring from their next packet; coming back keeps it. */
void rm_snap_node_health(struct rm_snap *s, __u32 slot,
			 const struct rm_node_health *h);
/* In its service's ring: the operator says ACTIVE and health lets it. */
static inline bool rm_node_in_ring(const struct rm_node *n)
{
	return n->state == RM_NODE_ACTIVE && !n->health.out;
}
/* Services whose ring input (seed, vnodes, nodes in the ring) differs
 * between old and new: dirty[svc] for each service in use in new (all of
 * them with RM_APPLY_ALL). A service only old holds is not marked. */
void rm_snap_rings_changed(const struct rm_snap *old, const struct rm_snap *new,
			   unsigned int flags, bool *dirty);
/* Build service svc's ring from its nodes in the ring (ids = slots). */
int rm_snap_ring(const struct rm_snap *s, __u32 svc, struct rm_ring *r);
/* The same ring, made from near (a ring a change away, e.g. the next ring
 * when the one it replaces is wanted) by rm_ring_build_near(). */
int rm_snap_ring_near(const struct rm_snap *s, __u32 svc,
		      const struct rm_ring *near, struct rm_ring *r);
/* The same ring's nodes and size without its points (rm_ring_plan()):
 * what rm_ring_digest() reads. 0 or -errno, nothing reported. */
int rm_snap_ring_plan(const struct rm_snap *s, __u32 svc, struct rm_ring *r);
/* ifindex and MAC of an interface. */
int rm_dev_info(const char *dev, __u32 *ifindex, __u8 mac[6]);
const char *rm_node_state_name(__u32 state);

/* ---- changing the live state ----------------------------------------- */
#define RM_APPLY_DRY_RUN 0x1 /* validate and build rings in memory only */
#define RM_APPLY_ALL 0x2     /* rewrite every ring and key (rollback) */

struct rm_plan {
	unsigned int flags;
	bool changed[RM_MAX_SERVICES];	      /* ring rebuilt */
	struct rm_ring ring[RM_MAX_SERVICES]; /* the new ring if changed */
	int fd[RM_MAX_SERVICES];	      /* its inner map, not installed */
	int spare[RM_MAX_SERVICES]; /* an array the apply let go, or -1 */
};
/* Validate new and build every ring that differs from old (as new inner
 * maps, unless RM_APPLY_DRY_RUN). Writes nothing. On failure p is freed;
 * on success rm_plan_free() it after use. */
int rm_plan_build(struct rm_state *st, const struct rm_snap *old,
		  const struct rm_snap *new, unsigned int flags,
		  struct rm_plan *p);
/* The inner maps of a plan built with RM_APPLY_DRY_RUN (its rings built,
 * validated against the same old and new), so it can be applied: what a
 * command that showed a change before making it saves a second build of
 * every ring with. On failure p is freed. */
int rm_plan_maps(struct rm_state *st, struct rm_plan *p);
/* Write the maps from old to new in the data-plane-safe order. */
int rm_plan_apply(struct rm_state *st, const struct rm_snap *old,
		  const struct rm_snap *new, struct rm_plan *p);
void rm_plan_free(struct rm_plan *p);
/* Put ifindex into rm_tx_ports (if it is not there): an interface an
 * encapsulated node's route leaves by (ringload neighd). A commit drops
 * ports no node record names; neighd puts them back on its next round. */
int rm_state_tx_port_add(struct rm_state *st, __u32 ifindex);
/* Second chance (state_gens.c): retire service svc's live ring into
 * its remembered generations, stamped now, unless new_fd holds the same
 * ring (*dropped: the array of the generation that fell out, opened, or
 * -1); drop the generations of one service or of all. */
int rm_gens_retire(struct rm_state *st, __u32 svc, int new_fd, __u64 now,
		   int *dropped);
int rm_gens_drop(struct rm_state *st, __u32 svc);
int rm_gens_drop_all(struct rm_state *st);
/* Every generation's map held open in fds[RM_RINGS_OLD_MAX] (-ENOENT:
 * none), put back as it was (a rolled-back change leaves no history),
 * and closed. */
int rm_gens_save(struct rm_state *st, int *fds);
int rm_gens_restore(struct rm_state *st, const int *fds);
void rm_gens_close(int *fds);
/* Spare ring arrays (state_spare.c), pinned as RM_RING_SPARE_PIN<id>
 * in the pin dir: service svc's spare, opened and unpinned, if no outer
 * map holds it (else -1); an array pinned as svc's spare (replacing
 * any); the spare unpinned. */
#define RM_RING_SPARE_PIN "rm_ring_spare_"
int rm_spare_take(struct rm_state *st, __u32 svc);
void rm_spare_put(struct rm_state *st, __u32 svc, int fd);
void rm_spare_drop(struct rm_state *st, __u32 svc);
/* CLOCK_MONOTONIC in ns: the data plane's clock (coarse there). */
__u64 rm_mono_ns(void);
/* Build, apply, and on a failure after the first write restore old.
 * Call with the exclusive lock held and old read under it. flags: 0, or
 * RM_APPLY_ALL to rewrite everything (restore: heals any drift). */
int rm_state_commit(struct rm_state *st, const struct rm_snap *old,
		    const struct rm_snap *new, unsigned int flags);
/* What a change moved, for the change log (history.h): keys that
 * changed owner, summed over the services whose ring changed or went (a
 * service added or removed moves its whole keyspace), and how many such
 * services there were. */
struct rm_moved {
	__u64 keys;
	__u32 services;
	bool counted; /* false: counting failed (the change stands) */
};
/* rm_state_commit() that also says what moved (when moved is not NULL),
 * from the rings the change built: no ring is built twice for the log. */
int rm_state_commit_moved(struct rm_state *st, const struct rm_snap *old,
			  const struct rm_snap *new, unsigned int flags,
			  struct rm_moved *moved);
/* rm_state_commit_moved() (flags 0) of the plan p that
 * rm_plan_build(st, old, new, RM_APPLY_DRY_RUN, p) made: its rings are
 * not built again. p is freed (rm_plan_free) either way. */
int rm_state_commit_plan(struct rm_state *st, const struct rm_snap *old,
			 const struct rm_snap *new, struct rm_plan *p,
			 struct rm_moved *moved);
/* s read under the exclusive lock: if a writer died in the middle of a
 * change (RM_CFG_COMMITTING), rewrite every map from s's records and read
 * s again. 1 when it did, 0 when nothing was to do, or -errno. */
int rm_state_repair(struct rm_state *st, struct rm_snap *s);

#endif /* RM_STATE_H */
