// SPDX-License-Identifier: GPL-2.0
/*
 * The declarative apply core (user/lib/apply.c) against real pinned maps:
 * what it reports as changed and moved, that a commit swaps only the
 * rings that change (each once) and writes nothing when nothing differs,
 * that a document it refuses leaves every map as it was, and the
 * rm_applied record. Runs in its own mount and network namespaces.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>
#include <bpf/bpf.h>
#include "apply.h"
#include "state.h"
#include "util.h"

#define VNODES 16

static char pin[128];

static int group_setup(void **state)
{
	(void)state;
	if (geteuid()) {
		fprintf(stderr, "test_apply: needs root\n");
		return -1;
	}
	if (unshare(CLONE_NEWNS | CLONE_NEWNET) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") ||
	    system("ip link set lo up")) {
		fprintf(stderr, "test_apply: no namespaces/bpffs: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

static int setup(void **state)
{
	static int n;

	(void)state;
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/rm-apply-%d-%d", getpid(),
		 n++);
	if (rm_state_create(pin, NULL)) {
		fprintf(stderr, "create: %s\n", rm_errmsg());
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rm_state_purge(pin);
	return 0;
}

/* A live state and a desired copy, as ringctl apply holds them. */
struct doc {
	struct rm_state st;
	struct rm_snap old, new;
};

static struct doc *doc_open(void)
{
	struct doc *d = calloc(1, sizeof(*d));

	assert_non_null(d);
	assert_int_equal(rm_state_open(&d->st, pin, RM_LOCK_EX), 0);
	assert_int_equal(rm_state_read(&d->st, &d->old), 0);
	d->new = d->old;
	return d;
}

static void doc_close(struct doc *d)
{
	rm_state_close(&d->st);
	free(d);
}

static int svc_add(struct rm_snap *s, const struct rm_snap *base,
		   const char *name, const char *vip, __u16 port)
{
	struct rm_svc_meta m = {0};
	__u8 fam;

	snprintf(m.name, sizeof(m.name), "%s", name);
	assert_int_equal(rm_parse_addr(vip, m.key.vip, &fam), 0);
	m.key.port = htons(port);
	m.key.proto = IPPROTO_TCP;
	m.key.flags = fam == RM_FAMILY_V6 ? RM_SVCK_V6 : 0;
	m.vnodes = VNODES;
	return rm_snap_svc_add(s, base, &m);
}

static void node_add(struct rm_snap *s, const struct rm_snap *base, int svc,
		     const char *name, __u8 mac_lo, __u32 weight)
{
	__u8 mac[6] = {0x02, 0, 0, 0, 0, mac_lo};

	assert_true(rm_snap_node_add(s, base, svc, name, mac, "lo", weight) >=
		    0);
}

/* Two services, web (a, b, c) and dns (x, y), committed. */
static void populate(void)
{
	struct doc *d = doc_open();
	int web, dns;

	d->new.cfg.seed = (struct rm_seed){0x1234, 0x5678};
	d->new.cfg.flags |= RM_CFG_SEEDED;
	web = svc_add(&d->new, &d->old, "web", "198.18.0.10", 80);
	dns = svc_add(&d->new, &d->old, "dns", "2001:db8::53", 53);
	assert_true(web >= 0 && dns >= 0);
	node_add(&d->new, &d->old, web, "a", 1, 1);
	node_add(&d->new, &d->old, web, "b", 2, 1);
	node_add(&d->new, &d->old, web, "c", 3, 2);
	node_add(&d->new, &d->old, dns, "x", 4, 1);
	node_add(&d->new, &d->old, dns, "y", 5, 1);
	assert_int_equal(rm_state_commit(&d->st, &d->old, &d->new, 0), 0);
	doc_close(d);
}

/* The inner map the kernel searches for svc: its id changes on a swap. */
static __u32 ring_id(__u32 svc)
{
	char path[256];
	__u32 id = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", pin, RM_MAP_NAME(RINGS));
	fd = bpf_obj_get(path);
	assert_true(fd >= 0);
	assert_int_equal(bpf_map_lookup_elem(fd, &svc, &id), 0);
	close(fd);
	return id;
}

/* Replaying the live state reports and writes nothing. */
static void test_same_document_no_change(void **state)
{
	struct rm_apply *a = calloc(1, sizeof(*a));
	struct rm_applied rec = {.revision = 41, .applied_ns = 1}, got;
	struct doc *d;
	__u32 web_ring, dns_ring;

	(void)state;
	populate();
	web_ring = ring_id(0);
	dns_ring = ring_id(1);
	d = doc_open();
	assert_int_equal(rm_apply_prepare(&d->st, &d->old, &d->new, a), 0);
	assert_false(a->changed);
	assert_int_equal(a->n_svc, 0);
	assert_int_equal(rm_apply_commit(&d->st, &d->old, &d->new, a, &rec),
			 0);
	rm_apply_free(a); /* the plan prepare built */
	doc_close(d);
	assert_int_equal(ring_id(0), web_ring);
	assert_int_equal(ring_id(1), dns_ring);
	/* the revision is recorded even when nothing had to change */
	assert_int_equal(rm_applied_read(pin, &got), 0);
	assert_int_equal(got.revision, 41);
	free(a);
}

/* One node joins web: web reported changed with one node added, its ring
 * swapped once, every move goes to the new node and they sum to the
 * moved total; dns untouched (same inner map). */
static void test_node_join_moves(void **state)
{
	struct rm_apply *a = calloc(1, sizeof(*a));
	struct doc *d;
	__u32 web_ring, dns_ring;
	__u64 sum = 0;

	(void)state;
	populate();
	web_ring = ring_id(0);
	dns_ring = ring_id(1);
	d = doc_open();
	node_add(&d->new, &d->old, 0, "d", 6, 1);
	assert_int_equal(rm_apply_prepare(&d->st, &d->old, &d->new, a), 0);
	assert_true(a->changed);
	assert_false(a->seed_changed);
	assert_int_equal(a->n_svc, 1);
	assert_string_equal(a->svc[0].name, "web");
	assert_int_equal(a->svc[0].change, RM_SVC_CHANGED);
	assert_true(a->svc[0].ring);
	assert_int_equal(a->svc[0].nodes_added, 1);
	assert_int_equal(a->svc[0].nodes_removed, 0);
	assert_true(a->svc[0].n_moves >= 1 && a->svc[0].n_moves <= 3);
	for (size_t i = 0; i < a->svc[0].n_moves; i++) {
		assert_string_equal(a->svc[0].moves[i].to, "d");
		sum += a->svc[0].moves[i].keys;
	}
	assert_int_equal(sum, a->svc[0].moved);
	/* about 1/6 of the keyspace (weights 1,1,2 + 1); a 16-vnode ring
	 * is coarse, so only sanity bounds */
	assert_true(a->svc[0].moved > (1ull << 32) / 30 &&
		    a->svc[0].moved < (1ull << 32) / 2);
	assert_int_equal(rm_apply_commit(&d->st, &d->old, &d->new, a, NULL),
			 0);
	rm_apply_free(a);
	doc_close(d);
	assert_int_not_equal(ring_id(0), web_ring);
	assert_int_equal(ring_id(1), dns_ring);
	free(a);
}

/* A removed service is reported with everything moving to nothing. */
static void test_service_removed(void **state)
{
	struct rm_apply *a = calloc(1, sizeof(*a));
	struct doc *d;

	(void)state;
	populate();
	d = doc_open();
	rm_snap_svc_del(&d->new, 1);
	assert_int_equal(rm_apply_prepare(&d->st, &d->old, &d->new, a), 0);
	assert_int_equal(a->n_svc, 1);
	assert_string_equal(a->svc[0].name, "dns");
	assert_int_equal(a->svc[0].change, RM_SVC_REMOVED);
	assert_int_equal(a->svc[0].nodes_removed, 2);
	assert_int_equal(a->svc[0].moved, 1ull << 32);
	rm_apply_free(a);
	doc_close(d);
	free(a);
}

/* A desired state that cannot be committed (a weight out of range, as a
 * hand-edited snapshot could hold) fails in prepare; nothing changes. */
static void test_invalid_refused(void **state)
{
	struct rm_apply *a = calloc(1, sizeof(*a));
	struct rm_snap *before = malloc(sizeof(*before));
	struct doc *d;
	__u32 web_ring;
	int slot;

	(void)state;
	populate();
	web_ring = ring_id(0);
	d = doc_open();
	memcpy(before, &d->old, sizeof(*before));
	slot = rm_snap_find_node(&d->new, 0, "a");
	assert_true(slot >= 0);
	d->new.node[slot].weight = RM_MAX_WEIGHT + 1;
	assert_int_not_equal(rm_apply_prepare(&d->st, &d->old, &d->new, a), 0);
	assert_int_equal(a->n_svc, 0);
	doc_close(d);
	assert_int_equal(ring_id(0), web_ring);
	d = doc_open();
	assert_memory_equal(before, &d->old, sizeof(*before));
	doc_close(d);
	free(before);
	free(a);
}

/* A seed change rebuilds every ring: all services reported. */
static void test_seed_change_all(void **state)
{
	struct rm_apply *a = calloc(1, sizeof(*a));
	struct doc *d;

	(void)state;
	populate();
	d = doc_open();
	d->new.cfg.seed.k0 ^= 1;
	assert_int_equal(rm_apply_prepare(&d->st, &d->old, &d->new, a), 0);
	assert_true(a->seed_changed);
	assert_int_equal(a->n_svc, 2);
	assert_true(a->svc[0].ring && a->svc[1].ring);
	assert_int_equal(a->svc[0].change, RM_SVC_SAME);
	rm_apply_free(a);
	doc_close(d);
	free(a);
}

/* A document whose only change is this director's outer source (config
 * --encap-src4/6) is a change: reported as local, committed, read back;
 * no ring moves. It used to read as "no change" and keep the old one. */
static void test_local_only_change(void **state)
{
	struct rm_apply *a = calloc(1, sizeof(*a));
	__be32 src6[4] = {htonl(0x20010db8), 0, 0, htonl(7)};
	struct doc *d;
	__u32 web_ring;

	(void)state;
	populate();
	web_ring = ring_id(0);
	d = doc_open();
	d->new.cfg.encap_src4 = htonl(0xc6120001); /* 198.18.0.1 */
	assert_int_equal(rm_apply_prepare(&d->st, &d->old, &d->new, a), 0);
	assert_true(a->changed);
	assert_true(a->local_changed);
	assert_false(a->cfg_changed || a->seed_changed);
	assert_int_equal(a->n_svc, 0);
	assert_int_equal(rm_apply_commit(&d->st, &d->old, &d->new, a, NULL),
			 0);
	rm_apply_free(a); /* the plan prepare built */
	doc_close(d);
	d = doc_open();
	assert_int_equal(d->old.cfg.encap_src4, htonl(0xc6120001));
	/* IPv6 alone too */
	memcpy(d->new.cfg.encap_src6, src6, sizeof(src6));
	assert_int_equal(rm_apply_prepare(&d->st, &d->old, &d->new, a), 0);
	assert_true(a->changed && a->local_changed);
	assert_int_equal(rm_apply_commit(&d->st, &d->old, &d->new, a, NULL),
			 0);
	rm_apply_free(a); /* the plan prepare built */
	doc_close(d);
	d = doc_open();
	assert_memory_equal(d->old.cfg.encap_src6, src6, sizeof(src6));
	doc_close(d);
	assert_int_equal(ring_id(0), web_ring);
	free(a);
}

/* apply --keep-local (ringsync): a fleet's document with another
 * director's sources and a shared change: the shared change is reported
 * and committed, the local sources stay this director's. */
static void test_keep_local(void **state)
{
	struct rm_apply *a = calloc(1, sizeof(*a));
	struct doc *d;

	(void)state;
	populate();
	d = doc_open();
	d->new.cfg.encap_src4 = htonl(0xc6120001);
	assert_int_equal(rm_apply_prepare(&d->st, &d->old, &d->new, a), 0);
	assert_int_equal(rm_apply_commit(&d->st, &d->old, &d->new, a, NULL),
			 0);
	rm_apply_free(a); /* the plan prepare built */
	doc_close(d);
	d = doc_open();
	d->new.cfg.encap_src4 = htonl(0xc6120002); /* another director's */
	d->new.cfg.encap_src6[3] = htonl(9);
	d->new.cfg.udp_timeout_s = 77;
	assert_false(rm_cfg_local_same(&d->old.cfg, &d->new.cfg));
	rm_cfg_keep_local(&d->new.cfg, &d->old.cfg);
	assert_true(rm_cfg_local_same(&d->old.cfg, &d->new.cfg));
	assert_int_equal(d->new.cfg.udp_timeout_s, 77);
	assert_int_equal(rm_apply_prepare(&d->st, &d->old, &d->new, a), 0);
	assert_true(a->changed && a->cfg_changed);
	assert_false(a->local_changed);
	assert_int_equal(rm_apply_commit(&d->st, &d->old, &d->new, a, NULL),
			 0);
	rm_apply_free(a); /* the plan prepare built */
	doc_close(d);
	d = doc_open();
	assert_int_equal(d->old.cfg.encap_src4, htonl(0xc6120001));
	assert_int_equal(d->old.cfg.encap_src6[3], 0);
	assert_int_equal(d->old.cfg.udp_timeout_s, 77);
	doc_close(d);
	free(a);
}

/* The record round-trips; no record reads as -ENOENT and zeroes. */
static void test_applied_record(void **state)
{
	struct rm_applied rec = {.revision = 7,
				 .applied_ns = 100,
				 .rejected = 2,
				 .rejected_revision = 9},
			  got;

	(void)state;
	assert_int_equal(rm_applied_read(pin, &got), -ENOENT);
	assert_int_equal(got.revision, 0);
	snprintf(rec.source, sizeof(rec.source), "http://198.18.0.1:2379 /k");
	assert_int_equal(rm_applied_write(pin, &rec), 0);
	assert_int_equal(rm_applied_read(pin, &got), 0);
	assert_memory_equal(&rec, &got, sizeof(rec));
	/* purge takes it with the rest of the state */
	assert_int_equal(rm_state_purge(pin), 0);
	assert_int_equal(rm_applied_read(pin, &got), -ENOENT);
	assert_int_equal(rm_state_create(pin, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_same_document_no_change,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_node_join_moves, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_service_removed, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_invalid_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_seed_change_all, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_applied_record, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_local_only_change, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_keep_local, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
