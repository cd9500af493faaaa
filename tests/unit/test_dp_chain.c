// SPDX-License-Identifier: GPL-2.0
/*
 * The chain (rm_common.h, "the chain") in the kernel, through
 * bpf_prog_test_run_opts on the root (bpf/root.bpf.c): a program array, the
 * director loaded for slot 0 with the table's topology (dp_cases.h), and
 * xc_count (tests/bpf/xdp_count.bpf.c), an independent program that counts
 * by IP protocol and passes.
 *
 *   empty        no slot used: the root passes the frame unchanged
 *   director     director alone: a VIP frame is forwarded (XDP_TX, to the
 *                ring's owner), a non-VIP one passed and counted
 *   behind       xc_count in slot 1: it sees exactly the frames the
 *                director passes, never the VIP's
 *   left alone   director out: xc_count sees every frame, the director's
 *                counters stand still
 *   in front     xc_count in slot 0, director in 1: xc_count ends the
 *                chain, the director sees nothing (why an independent
 *                program can only be last)
 *   unchained    the director loaded as for a plain attach passes to the
 *                stack even when its slot's successors are set
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <libgen.h>

#include "util.h"
#include "dp_fixture.h"
#include "dp_cases.h"
#include "root.skel.h"
#include "skip.h"

#define XC_NOT_IP 256

static struct dp_fx *fx;	/* the director, for slot 0 */
static struct root_bpf *root;
static struct bpf_object *xc;	/* xc_count */
static int chain = -1, xc_prog = -1, xc_map = -1;
static char skip_why[256];
static int skipped;

/* xc_count sits beside the test binary: BUILD/tests/ */
static int open_xc(char *why, size_t len)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int err;

	if (n < 0)
		return -errno;
	self[n] = '\0';
	snprintf(path, sizeof(path), "%s/xdp_count.bpf.o", dirname(self));
	xc = bpf_object__open_file(path, NULL);
	err = libbpf_get_error(xc);
	if (!err)
		err = bpf_object__load(xc);
	if (err) {
		snprintf(why, len, "cannot load xdp_count.bpf.o beside the "
			 "test binary: %s", strerror(-err));
		return err;
	}
	xc_prog = bpf_program__fd(
	    bpf_object__find_program_by_name(xc, "xc_count"));
	xc_map = bpf_map__fd(bpf_object__find_map_by_name(xc, "xc_counts"));
	return xc_prog < 0 || xc_map < 0 ? -ENOENT : 0;
}

static int group_setup(void **state)
{
	int err = 0;

	(void)state;
	chain = bpf_map_create(BPF_MAP_TYPE_PROG_ARRAY, RM_CHAIN_MAP,
			       sizeof(__u32), sizeof(__u32), RM_CHAIN_SLOTS,
			       NULL);
	if (chain < 0) {
		snprintf(skip_why, sizeof(skip_why),
			 "cannot create a program array: %s%s",
			 strerror(errno), geteuid() ? ", not root" : "");
		return geteuid() ? 0 : -1;
	}
	fx = dp_fx_open_chained(&err, skip_why, sizeof(skip_why), 0, chain);
	if (!fx)
		return err == -EPERM || geteuid() ? 0 : -1;
	if (build_topology(fx)) {
		fprintf(stderr, "test_dp_chain: cannot fill the maps\n");
		return -1;
	}
	root = root_bpf__open();
	if (!root || bpf_map__reuse_fd(root->maps.rm_chain, chain) ||
	    root_bpf__load(root)) {
		fprintf(stderr, "test_dp_chain: cannot load the root: %s\n",
			strerror(errno));
		return -1;
	}
	if (open_xc(skip_why, sizeof(skip_why))) {
		fprintf(stderr, "test_dp_chain: %s\n", skip_why);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	root_bpf__destroy(root);
	bpf_object__close(xc);
	dp_fx_close(fx);
	if (chain >= 0)
		close(chain);
	return 0;
}


/* slots: program fd per slot, -1 empty */
static void set_chain(int s0, int s1)
{
	int fds[2] = {s0, s1};

	for (__u32 i = 0; i < RM_CHAIN_SLOTS; i++) {
		if (i < 2 && fds[i] >= 0)
			assert_int_equal(
			    bpf_map_update_elem(chain, &i, &fds[i], BPF_ANY), 0);
		else if (bpf_map_delete_elem(chain, &i))
			assert_int_equal(errno, ENOENT);
	}
}

static __u64 xc_count(__u32 proto)
{
	__u64 v = 0;

	assert_int_equal(bpf_map_lookup_elem(xc_map, &proto, &v), 0);
	return v;
}

static __u64 dir_count(__u32 id)
{
	__u64 c[RM_CNT_MAX];

	assert_int_equal(dp_counters(fx, c), 0);
	return c[id];
}

/* a TCP SYN from the table's client to dst:80 */
static void frame(const char *dst, struct dp_pkt *p)
{
	struct dp_spec s = {.family = 4, .proto = IPPROTO_TCP,
			    .src = CLIENT4, .dst = dst, .sport = 40000,
			    .dport = 80};

	dp_build(&s, p);
}

/* run the root on p: its verdict; out gets the output frame */
static __u32 run_root(const struct dp_pkt *p, struct dp_run *r)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = p->b,
		    .data_size_in = p->len, .data_out = r->out,
		    .data_size_out = sizeof(r->out), .repeat = 1);

	assert_int_equal(
	    bpf_prog_test_run_opts(bpf_program__fd(root->progs.rm_root), &o),
	    0);
	r->out_len = o.data_size_out;
	return o.retval;
}

static struct dp_pkt vip, other;
static struct dp_run r;

static void test_empty(void **state)
{
	(void)state;
	NEED_BPF();
	frame("10.0.0.99", &other);
	set_chain(-1, -1);
	assert_int_equal(run_root(&other, &r), XDP_PASS);
	assert_int_equal(r.out_len, other.len);
	assert_memory_equal(r.out, other.b, other.len);
}

/* the VIP's frame goes to the node the ring names */
static void check_forwarded(void)
{
	long owner;

	assert_int_equal(run_root(&vip, &r), XDP_TX);
	owner = dp_mac_node(r.out);
	assert_true(owner >= 1 && owner <= 3); /* SVC_V4_TCP80's nodes */
}

static void test_director(void **state)
{
	__u64 fwd, pass;

	(void)state;
	NEED_BPF();
	frame("10.0.0.1", &vip);
	frame("10.0.0.99", &other);
	set_chain(fx->prog, -1);
	fwd = dir_count(RM_CNT_FWD_TX);
	pass = dir_count(RM_CNT_PASS_NOT_SERVICE);
	check_forwarded();
	assert_int_equal(run_root(&other, &r), XDP_PASS);
	assert_memory_equal(r.out, other.b, other.len);
	assert_int_equal(dir_count(RM_CNT_FWD_TX), fwd + 1);
	assert_int_equal(dir_count(RM_CNT_PASS_NOT_SERVICE), pass + 1);
}

static void test_behind(void **state)
{
	__u64 tcp, pass, fwd;

	(void)state;
	NEED_BPF();
	set_chain(fx->prog, xc_prog);
	tcp = xc_count(IPPROTO_TCP);
	pass = dir_count(RM_CNT_PASS_NOT_SERVICE);
	fwd = dir_count(RM_CNT_FWD_TX);
	for (int i = 0; i < 10; i++) {
		check_forwarded();
		assert_int_equal(run_root(&other, &r), XDP_PASS);
	}
	assert_int_equal(xc_count(IPPROTO_TCP), tcp + 10);
	assert_int_equal(dir_count(RM_CNT_PASS_NOT_SERVICE), pass + 10);
	assert_int_equal(dir_count(RM_CNT_FWD_TX), fwd + 10);
}

static void test_left_alone(void **state)
{
	__u64 tcp, pass, fwd;

	(void)state;
	NEED_BPF();
	set_chain(-1, xc_prog);
	tcp = xc_count(IPPROTO_TCP);
	pass = dir_count(RM_CNT_PASS_NOT_SERVICE);
	fwd = dir_count(RM_CNT_FWD_TX);
	assert_int_equal(run_root(&vip, &r), XDP_PASS);
	assert_memory_equal(r.out, vip.b, vip.len);
	assert_int_equal(run_root(&other, &r), XDP_PASS);
	assert_int_equal(xc_count(IPPROTO_TCP), tcp + 2);
	assert_int_equal(dir_count(RM_CNT_PASS_NOT_SERVICE), pass);
	assert_int_equal(dir_count(RM_CNT_FWD_TX), fwd);
}

static void test_in_front(void **state)
{
	__u64 tcp, pass, fwd;

	(void)state;
	NEED_BPF();
	set_chain(xc_prog, fx->prog);
	tcp = xc_count(IPPROTO_TCP);
	pass = dir_count(RM_CNT_PASS_NOT_SERVICE);
	fwd = dir_count(RM_CNT_FWD_TX);
	assert_int_equal(run_root(&vip, &r), XDP_PASS);
	assert_int_equal(run_root(&other, &r), XDP_PASS);
	assert_int_equal(xc_count(IPPROTO_TCP), tcp + 2);
	assert_int_equal(dir_count(RM_CNT_FWD_TX), fwd);
	assert_int_equal(dir_count(RM_CNT_PASS_NOT_SERVICE), pass);
}

static void test_unchained(void **state)
{
	struct dp_fx *plain;
	__u64 tcp;
	int err = 0;

	(void)state;
	NEED_BPF();
	plain = dp_fx_open(&err, skip_why, sizeof(skip_why));
	assert_non_null(plain);
	/* its own rm_chain is not the root's: set its slot 1 all the same */
	{
		__u32 one = 1;
		int c = bpf_map__fd(plain->skel->maps.rm_chain);

		assert_int_equal(
		    bpf_map_update_elem(c, &one, &xc_prog, BPF_ANY), 0);
	}
	tcp = xc_count(IPPROTO_TCP);
	dp_run(plain, other.b, other.len, 0, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.retval, XDP_PASS);
	assert_int_equal(xc_count(IPPROTO_TCP), tcp);
	dp_fx_close(plain);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),     cmocka_unit_test(test_director),
	    cmocka_unit_test(test_behind),    cmocka_unit_test(test_left_alone),
	    cmocka_unit_test(test_in_front),  cmocka_unit_test(test_unchained),
	};
	int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);

	return rm_test_result(failed, skipped);
}
