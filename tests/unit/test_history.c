// SPDX-License-Identifier: GPL-2.0
/*
 * The change log (user/lib/history.c) against a real pinned state: what a
 * record holds, the moved share it computes, and its bound.
 *
 * Runs in its own mount namespace with its own bpffs at /sys/fs/bpf.
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
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>
#include "history.h"
#include "ring.h"
#include "state.h"
#include "skip.h"

#define VNODES 64

struct fx {
	char pin[128];
	struct rm_state st;
	struct rm_snap *a, *b;
};

static int group_setup(void **state)
{
	(void)state;
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")) {
		fprintf(stderr, "test_history: no bpffs: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

static int setup(void **state)
{
	static int n;
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->pin, sizeof(f->pin), "/sys/fs/bpf/rm-history-%d-%d",
		 getpid(), n++);
	f->a = calloc(1, sizeof(*f->a));
	f->b = calloc(1, sizeof(*f->b));
	if (!f->a || !f->b || rm_state_create(f->pin, NULL) ||
	    rm_state_open(&f->st, f->pin, RM_LOCK_EX) ||
	    rm_state_read(&f->st, f->a)) {
		fprintf(stderr, "setup: %s\n", rm_errmsg());
		return -1;
	}
	memcpy(f->b, f->a, sizeof(*f->b));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	rm_state_close(&f->st);
	rm_state_purge(f->pin);
	free(f->a);
	free(f->b);
	free(f);
	return 0;
}

static int add_svc(struct rm_snap *s, const struct rm_snap *base)
{
	struct rm_svc_meta m = {.vnodes = VNODES};

	snprintf(m.name, sizeof(m.name), "web");
	m.key.vip[0] = inet_addr("198.18.0.10");
	m.key.port = htons(80);
	m.key.proto = IPPROTO_TCP;
	return rm_snap_svc_add(s, base, &m);
}

static int add_node(struct rm_snap *s, const struct rm_snap *base, int svc,
		    const char *name, __u8 last)
{
	__u8 mac[6] = {0x02, 0, 0, 0, 0, last};

	return rm_snap_node_add(s, base, svc, name, mac, "lo", 1);
}

/* No log yet reads as empty; a record keeps who and what (control
 * characters made spaces), and a change that touches no ring moves
 * nothing. */
static void test_empty_and_record(void **state)
{
	struct fx *f = *state;
	struct rm_history_head h;
	struct rm_history_rec *r;
	struct timespec ts;
	__u32 n;

	assert_int_equal(rm_history_read(f->pin, &h, &r, &n), 0);
	assert_int_equal(n, 0);
	assert_true(h.appended == 0 && h.swaps == 0 && h.last_ns == 0);
	free(r);

	f->b->cfg.udp_timeout_s = 30; /* no ring input */
	assert_int_equal(rm_history_append(&f->st, "ringctl:root",
					   "config\n--udp-timeout 30", f->a,
					   f->b),
			 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	assert_int_equal(rm_history_read(f->pin, &h, &r, &n), 0);
	assert_int_equal(n, 1);
	assert_true(r[0].seq == 1 && h.appended == 1);
	assert_string_equal(r[0].who, "ringctl:root");
	assert_string_equal(r[0].what, "config --udp-timeout 30");
	assert_true(r[0].services == 0 && r[0].moved_keys == 0);
	assert_true(h.swaps == 0 && h.last_ns == r[0].time_ns);
	assert_true(r[0].time_ns / 1000000000ull + 5 >= (__u64)ts.tv_sec &&
		    r[0].time_ns / 1000000000ull <= (__u64)ts.tv_sec);
	free(r);
}

/* A new service moves its whole keyspace; a node joining moves exactly
 * the keyspace it owns in the new ring (consistent hashing), counted
 * here from the new ring's arcs rather than by the diff the log uses. */
static void test_moved_share(void **state)
{
	struct fx *f = *state;
	struct rm_history_head h;
	struct rm_history_rec *r;
	struct rm_ring ring;
	__u64 *arcs, want = 0;
	int svc, k;
	__u32 n;

	svc = add_svc(f->b, f->a);
	assert_true(svc >= 0);
	assert_true(add_node(f->b, f->a, svc, "a", 1) >= 0);
	assert_true(add_node(f->b, f->a, svc, "b", 2) >= 0);
	assert_int_equal(
	    rm_history_append(&f->st, "test", "add web", f->a, f->b), 0);

	memcpy(f->a, f->b, sizeof(*f->a));
	assert_true(add_node(f->b, f->a, svc, "c", 3) >= 0);
	assert_int_equal(
	    rm_history_append(&f->st, "test", "add c", f->a, f->b), 0);
	assert_int_equal(rm_snap_ring(f->b, svc, &ring), 0);
	arcs = calloc(ring.n_nodes, sizeof(*arcs));
	assert_non_null(arcs);
	rm_ring_arcs(&ring, arcs);
	k = rm_ring_find(&ring, "c");
	assert_true(k >= 0);
	want = arcs[k];
	free(arcs);
	rm_ring_free(&ring);

	memcpy(f->a, f->b, sizeof(*f->a));
	rm_snap_svc_del(f->b, svc);
	assert_int_equal(
	    rm_history_append(&f->st, "test", "del web", f->a, f->b), 0);

	assert_int_equal(rm_history_read(f->pin, &h, &r, &n), 0);
	assert_int_equal(n, 3);
	assert_true(r[0].services == 1 && r[0].moved_keys == 1ull << 32);
	assert_true(r[1].services == 1 && r[1].moved_keys == want);
	assert_true(want > 0 && want < 1ull << 32);
	assert_true(r[2].services == 1 && r[2].moved_keys == 1ull << 32);
	assert_true(h.swaps == 3);
	free(r);
}

/* The newest RM_HISTORY_MAX records stay, oldest first. */
static void test_bounded(void **state)
{
	struct fx *f = *state;
	struct rm_history_head h;
	struct rm_history_rec *r;
	const __u32 extra = 7;
	char what[32];
	__u32 n;

	for (__u32 i = 1; i <= RM_HISTORY_MAX + extra; i++) {
		snprintf(what, sizeof(what), "change %u", i);
		assert_int_equal(
		    rm_history_append(&f->st, "test", what, f->a, f->b), 0);
	}
	assert_int_equal(rm_history_read(f->pin, &h, &r, &n), 0);
	assert_int_equal(n, RM_HISTORY_MAX);
	assert_true(h.appended == RM_HISTORY_MAX + extra);
	for (__u32 i = 0; i < n; i++) {
		assert_true(r[i].seq == extra + 1 + i);
		snprintf(what, sizeof(what), "change %u", extra + 1 + i);
		assert_string_equal(r[i].what, what);
	}
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_empty_and_record, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_moved_share, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bounded, setup, teardown),
	};

	if (geteuid()) {
		printf("SKIP: test_history needs root (bpffs, BPF maps)\n");
		return RM_TEST_SKIP;
	}
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
