// SPDX-License-Identifier: GPL-2.0
/*
 * Scale limits say what to do: a ring over RM_MAX_RING_ENTRIES is refused
 * with the largest --vnodes that fits (and that value does fit, one more
 * does not), a ring over RM_MAX_NODES_PER_RING names that limit, and the
 * live path (rm_snap_ring on a snapshot, what every change and restore
 * builds) says the same about the service by name.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "ring.h"
#include "state.h"
#include "util.h"

static const struct rm_seed seed = {.k0 = 1, .k1 = 2};

static struct rm_node_spec *make_nodes(__u32 n, __u32 weight)
{
	struct rm_node_spec *s = calloc(n, sizeof(*s));

	assert_non_null(s);
	for (__u32 i = 0; i < n; i++) {
		snprintf(s[i].name, RM_NAME_MAX, "n%u", i);
		s[i].weight = weight;
		s[i].id = i;
	}
	return s;
}

/* 11 nodes of weight 100 at the default 1000 vnodes: 1,100,000 entries */
static void test_entries_name_vnodes(void **state)
{
	struct rm_node_spec *s = make_nodes(11, 100);
	__u32 fit = RM_MAX_RING_ENTRIES / 1100;
	char why[256], want[32];
	struct rm_ring r;

	(void)state;
	assert_int_equal(rm_ring_build(&seed, s, 11, RM_DEFAULT_VNODES, &r),
			 -E2BIG);
	assert_int_equal(rm_ring_max_vnodes(s, 11), fit);
	rm_ring_too_big(s, 11, RM_DEFAULT_VNODES, why, sizeof(why));
	snprintf(want, sizeof(want), "--vnodes %u or less", fit);
	assert_non_null(strstr(why, want));
	assert_non_null(strstr(why, "1100000 ring entries"));
	/* the value named fits; one more does not */
	assert_int_equal(rm_ring_build(&seed, s, 11, fit + 1, &r), -E2BIG);
	assert_int_equal(rm_ring_build(&seed, s, 11, fit, &r), 0);
	assert_int_equal(r.n, 1100 * fit);
	rm_ring_free(&r);
	/* small rings: the vnode limit itself is the answer */
	assert_int_equal(rm_ring_max_vnodes(s, 1), RM_MAX_VNODES);
	free(s);
}

/* 2,000 weight-1 nodes: over the nodes one ring holds before vnodes
 * matter; the message names that limit, not --vnodes */
static void test_nodes_name_limit(void **state)
{
	struct rm_node_spec *s = make_nodes(2000, 1);
	char why[256];
	struct rm_ring r;

	(void)state;
	assert_int_equal(rm_ring_build(&seed, s, 2000, 1, &r), -E2BIG);
	rm_ring_too_big(s, 2000, RM_DEFAULT_VNODES, why, sizeof(why));
	assert_non_null(strstr(why, "2000 nodes"));
	assert_non_null(strstr(why, "RM_MAX_NODES_PER_RING"));
	free(s);
}

/* The live path: a snapshot whose service is over the limit is refused
 * by name with the same advice. */
static void test_snapshot_message(void **state)
{
	struct rm_snap *s = calloc(1, sizeof(*s));
	char want[64];
	struct rm_ring r;

	(void)state;
	assert_non_null(s);
	s->cfg.seed = seed;
	s->cfg.flags = RM_CFG_SEEDED;
	s->svc[3].in_use = 1;
	snprintf(s->svc[3].name, RM_NAME_MAX, "web");
	s->svc[3].vnodes = RM_DEFAULT_VNODES;
	for (__u32 i = 0; i < 11; i++) {
		s->node[i].state = RM_NODE_ACTIVE;
		s->node[i].svc_id = 3;
		s->node[i].weight = 100;
		snprintf(s->node[i].name, RM_NAME_MAX, "n%u", i);
	}
	assert_int_equal(rm_snap_ring(s, 3, &r), -E2BIG);
	assert_non_null(strstr(rm_errmsg(), "service 'web'"));
	snprintf(want, sizeof(want), "--vnodes %u or less",
		 RM_MAX_RING_ENTRIES / 1100);
	assert_non_null(strstr(rm_errmsg(), want));
	s->svc[3].vnodes = RM_MAX_RING_ENTRIES / 1100;
	assert_int_equal(rm_snap_ring(s, 3, &r), 0);
	rm_ring_free(&r);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_entries_name_vnodes),
	    cmocka_unit_test(test_nodes_name_limit),
	    cmocka_unit_test(test_snapshot_message),
	};

	return cmocka_run_group_tests_name("limits", tests, NULL, NULL);
}
