// SPDX-License-Identifier: GPL-2.0
/*
 * Health checks' pure part (user/lib/health.c) on a fake clock: rise,
 * fall, the first result, flap damping, fail-open, the check defaults and
 * payload escapes; and what a verdict does to a snapshot (state_edit.c):
 * out of the ring, gen as on --down, the operator's state untouched.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "health.h"
#include "state.h"

#define U RM_HEALTH_UNCHECKED
#define H RM_HEALTH_HEALTHY
#define F RM_HEALTH_FAILING
#define X RM_HEALTH_UNHEALTHY

struct step {
	int ok;	       /* the result fed */
	__u32 state;   /* wanted after it */
	__u32 count;   /* wanted after it */
	int change;    /* wanted enum rm_hc_change */
	__u32 damped;  /* wanted RM_HEALTH_F_DAMPED */
	__u64 wait_ms; /* fake clock advance before the result (0: interval) */
};

struct seq_case {
	const char *name;
	__u32 fall, rise;
	struct step steps[24];
	int n;
};

#define S(ok, st, cnt, ch) {ok, st, cnt, ch, 0, 0}
#define SD(ok, st, cnt, ch, d, w) {ok, st, cnt, ch, d, w}
#define SAME RM_HC_SAME
#define CNT RM_HC_COUNT
#define STATE RM_HC_STATE

static const struct seq_case seq_cases[] = {
    {"first result ok decides at once", 3, 2, {S(1, H, 0, STATE), S(1, H, 0, SAME)}, 2},
    {"first result failed decides at once", 3, 2, {S(0, X, 0, STATE), S(0, X, 0, SAME)}, 2},
    {"fall 3: two failures keep it in, the third takes it out", 3, 2,
     {S(1, H, 0, STATE), S(0, F, 1, STATE), S(0, F, 2, CNT), S(0, X, 0, STATE),
      S(0, X, 0, SAME)}, 5},
    {"a success while failing resets the count", 3, 2,
     {S(1, H, 0, STATE), S(0, F, 1, STATE), S(0, F, 2, CNT), S(1, H, 0, STATE),
      S(0, F, 1, STATE), S(0, F, 2, CNT), S(0, X, 0, STATE)}, 7},
    {"rise 2: back after two successes in a row", 3, 2,
     {S(0, X, 0, STATE), S(1, X, 1, CNT), S(1, H, 0, STATE)}, 3},
    {"a failure while rising starts over", 3, 2,
     {S(0, X, 0, STATE), S(1, X, 1, CNT), S(0, X, 0, CNT), S(1, X, 1, CNT),
      S(1, H, 0, STATE)}, 5},
    {"fall 1 and rise 1: every result decides", 1, 1,
     {S(1, H, 0, STATE), S(0, X, 0, STATE), S(1, H, 0, STATE), S(0, X, 0, STATE)}, 4},
    {"rise 5", 2, 5,
     {S(1, H, 0, STATE), S(0, F, 1, STATE), S(0, X, 0, STATE), S(1, X, 1, CNT),
      S(1, X, 2, CNT), S(1, X, 3, CNT), S(1, X, 4, CNT), S(1, H, 0, STATE)}, 8},
    /* fall 1, rise 1 so each flap is two results: penalties 1000, ~2000,
     * ~3000 > suppress on the third fall; then it stays out, rise met,
     * until the penalty decays below reuse (half-life 30 intervals:
     * log2(3000/1000) = 1.6 half-lives, some 48 intervals) */
    {"flap damping: the third quick fall holds it out until it calms down", 1, 1,
     {S(1, H, 0, STATE), S(0, X, 0, STATE), S(1, H, 0, STATE), S(0, X, 0, STATE),
      S(1, H, 0, STATE), SD(0, X, 0, STATE, RM_HEALTH_F_DAMPED, 0),
      SD(1, X, 1, CNT, RM_HEALTH_F_DAMPED, 0),
      SD(1, X, 1, SAME, RM_HEALTH_F_DAMPED, 0),
      SD(1, X, 1, SAME, RM_HEALTH_F_DAMPED, 20 * 1000),
      /* 50 intervals later the penalty is below reuse */
      SD(1, H, 0, STATE, 0, 30 * 1000)}, 10},
    {"slow flaps are not damped", 1, 1,
     {S(1, H, 0, STATE), S(0, X, 0, STATE), SD(1, H, 0, STATE, 0, 60000),
      SD(0, X, 0, STATE, 0, 60000), SD(1, H, 0, STATE, 0, 60000),
      SD(0, X, 0, STATE, 0, 60000), SD(1, H, 0, STATE, 0, 60000)}, 7},
};

static void test_sequences(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(seq_cases) / sizeof(seq_cases[0]); c++) {
		const struct seq_case *k = &seq_cases[c];
		struct rm_check chk = {.interval_ms = 1000, .fall = (__u8)k->fall,
				       .rise = (__u8)k->rise};
		struct rm_hc_params p;
		struct rm_hc_node n = {0};
		__u64 now = 5000, since = 0;

		rm_check_params(&chk, &p);
		for (int i = 0; i < k->n; i++) {
			const struct step *s = &k->steps[i];
			enum rm_hc_change ch;
			__u32 before = n.state;

			now += s->wait_ms ? s->wait_ms : p.interval_ms;
			ch = rm_hc_result(&n, &p, s->ok, now);
			if (n.state != s->state || n.count != s->count ||
			    (int)ch != s->change ||
			    (n.flags & RM_HEALTH_F_DAMPED) != s->damped)
				fail_msg("%s, step %d: got %s count %u change %d "
					 "damped %u, want %s count %u change %d "
					 "damped %u",
					 k->name, i, rm_health_state_name(n.state),
					 n.count, ch, n.flags & RM_HEALTH_F_DAMPED,
					 rm_health_state_name(s->state), s->count,
					 s->change, s->damped);
			/* since moves with the state, and only then */
			if (n.state != before)
				since = now;
			assert_int_equal(n.since_ms, since);
		}
	}
}

struct verdict_case {
	const char *name;
	__u32 panic_pct;
	__u32 n;
	__u32 health[6];
	bool eligible[6];
	bool out[6];
	bool panic;
};

static const struct verdict_case verdict_cases[] = {
    {"1 of 4 down: out", 50, 4, {H, H, H, X}, {1, 1, 1, 1}, {0, 0, 0, 1}, false},
    {"2 of 4 down: exactly 50% healthy is not fewer: out", 50, 4,
     {H, X, H, X}, {1, 1, 1, 1}, {0, 1, 0, 1}, false},
    {"3 of 4 down: fail-open keeps all in", 50, 4, {X, X, H, X},
     {1, 1, 1, 1}, {0, 0, 0, 0}, true},
    {"all down: fail-open", 50, 3, {X, X, X}, {1, 1, 1}, {0, 0, 0}, true},
    {"unchecked and failing count as healthy", 50, 4, {U, F, X, X},
     {1, 1, 1, 1}, {0, 0, 1, 1}, false},
    {"draining nodes do not count; an unhealthy one is out even in panic", 50,
     5, {X, X, H, X, X}, {1, 1, 1, 0, 0}, {0, 0, 0, 1, 1}, true},
    {"panic share 0: never fail open", 0, 3, {X, X, X}, {1, 1, 1}, {1, 1, 1},
     false},
    {"panic share 100: any failure fails open", 100, 4, {H, H, H, X},
     {1, 1, 1, 1}, {0, 0, 0, 0}, true},
    {"panic share 75: 3 of 4 healthy is enough", 75, 4, {H, H, H, X},
     {1, 1, 1, 1}, {0, 0, 0, 1}, false},
    {"no active node: nothing to keep", 50, 2, {X, X}, {0, 0}, {1, 1}, false},
};

static void test_verdicts(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(verdict_cases) / sizeof(verdict_cases[0]);
	     c++) {
		const struct verdict_case *k = &verdict_cases[c];
		struct rm_hc_member m[6] = {0};
		bool panic;

		for (__u32 i = 0; i < k->n; i++) {
			m[i].health = k->health[i];
			m[i].eligible = k->eligible[i];
			m[i].out = !k->out[i]; /* must be overwritten */
		}
		panic = rm_hc_verdicts(m, k->n, k->panic_pct, NULL, NULL);
		if (panic != k->panic)
			fail_msg("%s: panic %d, want %d", k->name, panic, k->panic);
		for (__u32 i = 0; i < k->n; i++)
			if (m[i].out != k->out[i])
				fail_msg("%s: node %u out %d, want %d", k->name, i,
					 m[i].out, k->out[i]);
	}
}

static void test_params(void **state)
{
	struct rm_check c = {0};
	struct rm_hc_params p;

	(void)state;
	rm_check_params(&c, &p);
	assert_int_equal(p.interval_ms, 2000);
	assert_int_equal(p.timeout_ms, 1000);
	assert_int_equal(p.fall, 3);
	assert_int_equal(p.rise, 2);
	assert_int_equal(p.panic_pct, 50);
	assert_int_equal(p.status, 200);
	c.flags = RM_CHECK_F_NO_PANIC;
	c.interval_ms = 200;
	rm_check_params(&c, &p);
	assert_int_equal(p.panic_pct, 0);
	assert_int_equal(p.interval_ms, 200);
	assert_int_equal(rm_check_type_parse("http"), RM_CHECK_HTTP);
	assert_int_equal(rm_check_type_parse("exec"), RM_CHECK_EXEC);
	assert_int_equal(rm_check_type_parse("icmp"), -1);
	assert_string_equal(rm_check_type_name(RM_CHECK_UDP), "udp");
}

static void test_escapes(void **state)
{
	char out[16];

	(void)state;
	assert_int_equal(rm_check_unescape("PING\\n", out, sizeof(out)), 5);
	assert_memory_equal(out, "PING\n", 5);
	assert_int_equal(rm_check_unescape("a\\sb\\x00\\\\", out, sizeof(out)), 5);
	assert_memory_equal(out, "a b\0\\", 5);
	assert_int_equal(rm_check_unescape("\\q", out, sizeof(out)), -1);
	assert_int_equal(rm_check_unescape("\\x4", out, sizeof(out)), -1);
	assert_int_equal(rm_check_unescape("0123456789abcdefg", out, 16), -1);
	assert_true(rm_check_str_valid("/healthz?x=1"));
	assert_false(rm_check_str_valid("a b"));
	assert_false(rm_check_str_valid("a\tb"));
}

/* A snapshot with one service of three active nodes. */
static struct rm_snap *snap3(void)
{
	struct rm_snap *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->cfg.seed.k0 = 1;
	s->cfg.seed.k1 = 2;
	s->cfg.flags = RM_CFG_SEEDED;
	s->svc[0].in_use = 1;
	s->svc[0].vnodes = 10;
	strcpy(s->svc[0].name, "web");
	for (int i = 0; i < 3; i++) {
		s->node[i].state = RM_NODE_ACTIVE;
		s->node[i].weight = 1;
		s->node[i].gen = 7;
		snprintf(s->node[i].name, RM_NAME_MAX, "node%d", i + 1);
	}
	return s;
}

static bool ring_has(const struct rm_snap *s, __u32 id)
{
	struct rm_ring r;
	bool has = false;

	assert_int_equal(rm_snap_ring(s, 0, &r), 0);
	for (__u32 k = 0; k < r.n_nodes; k++)
		has |= r.nodes[k].id == id;
	rm_ring_free(&r);
	return has;
}

static void test_snap_health(void **state)
{
	struct rm_snap *s = snap3();
	struct rm_node_health out = {.state = X, .out = 1};
	struct rm_node_health back = {.state = H};

	(void)state;
	assert_true(ring_has(s, 1));
	/* out: leaves the ring, gen as on --down, operator state kept */
	rm_snap_node_health(s, 1, &out);
	assert_false(ring_has(s, 1));
	assert_true(ring_has(s, 0));
	assert_int_equal(s->node[1].gen, 8);
	assert_int_equal(s->node[1].state, RM_NODE_ACTIVE);
	assert_false(rm_node_in_ring(&s->node[1]));
	/* staying out bumps nothing more */
	rm_snap_node_health(s, 1, &out);
	assert_int_equal(s->node[1].gen, 8);
	/* back: in the ring, same gen */
	rm_snap_node_health(s, 1, &back);
	assert_true(ring_has(s, 1));
	assert_int_equal(s->node[1].gen, 8);
	/* a draining node that fails loses its flows: gen moves on */
	rm_snap_node_state(s, 2, RM_NODE_DRAINING);
	rm_snap_node_health(s, 2, &out);
	assert_int_equal(s->node[2].gen, 8);
	/* and an operator drain stays a drain after recovery */
	rm_snap_node_health(s, 2, &back);
	assert_int_equal(s->node[2].state, RM_NODE_DRAINING);
	assert_false(ring_has(s, 2));
	/* a down node failing: its gen already moved when it went down */
	rm_snap_node_state(s, 0, RM_NODE_DOWN);
	assert_int_equal(s->node[0].gen, 8);
	rm_snap_node_health(s, 0, &out);
	assert_int_equal(s->node[0].gen, 8);
	/* the operator's --active does not override health */
	rm_snap_node_state(s, 0, RM_NODE_ACTIVE);
	assert_false(ring_has(s, 0));
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sequences),
	    cmocka_unit_test(test_verdicts),
	    cmocka_unit_test(test_params),
	    cmocka_unit_test(test_escapes),
	    cmocka_unit_test(test_snap_health),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
