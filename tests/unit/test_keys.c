// SPDX-License-Identifier: GPL-2.0
/*
 * Keyed services (include/ringmaster/rm_key.h, bpf/key.h), run in the
 * kernel through bpf_prog_test_run_opts and beside it in userspace.
 *
 * Every request is checked three ways: the kernel's verdict, node and
 * key-* counter; the userspace extractor's result on the same payload;
 * and both against the key the case names (text, as ringctl lookup --key
 * takes it), whose owner comes from rm_key_from_text + rm_key_hash + the
 * userspace ring. A request whose key cannot be read must go to its
 * flow's owner with the named key-fallback-* counter.
 *
 *   table       every memcached command form (ASCII, meta, binary), DNS
 *               names (case, root, 63-byte labels, 255-byte names,
 *               pointers, reserved labels), bytes and token keys; keys
 *               of 1, 250 and 251 bytes; multi-datagram requests
 *   truncation  each forwarded request cut at every length: never routed
 *               on part of a key; a UDP length longer than the packet too
 *   no table    keyed services leave the connection table alone; ICMP
 *               errors and fragments go by the flow
 *   parity      10,000 random keys per extractor: kernel owner ==
 *               userspace owner over a 64-node ring
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ringmaster/rm_key.h>
#include <ringmaster/rm_owner.h>
#include "key.h"
#include "util.h"
#include "dp_fixture.h"
#include "skip.h"

enum {
	SVC_MC = 0, /* 10.0.0.1 udp/11211 memcached */
	SVC_DNS,    /* 10.0.0.1 udp/53 dns */
	SVC_BYTES,  /* 10.0.0.1 udp/7000 bytes:4:8 */
	SVC_TOKEN,  /* 10.0.0.1 udp/7001 token:2:|\n:64 */
	SVC_MC6,    /* 2001:db8::1 udp/11211 memcached */
	SVC_MC3,    /* 10.0.0.2 udp/any memcached, 3-tuple */
	SVC_KETAMA, /* 10.0.0.3 udp/11211 memcached, --ring ketama */
	SVC_MD5MC,  /* 10.0.0.3 udp/11212 memcached, --ring md5-vnodes */
	SVC_MD5DNS, /* 10.0.0.3 udp/53 dns, --ring md5-vnodes */
	SVC_NR,
};

#define NODES 64
#define LO_IFINDEX 1
#define CLIENT4 "198.51.100.7"
#define CLIENT6 "2001:db8:c::7"

static struct dp_fx *fx;
static char skip_why[256];
static int skipped; /* tests that could not run */
static struct rm_key_spec specs[SVC_NR];
static __u64 rng = 0x6b657973;

static const struct {
	int family;
	const char *vip;
	__u16 port;
	__u32 flags;
} svcs[SVC_NR] = {
    [SVC_MC] = {4, "10.0.0.1", 11211, 0},
    [SVC_DNS] = {4, "10.0.0.1", 53, 0},
    [SVC_BYTES] = {4, "10.0.0.1", 7000, 0},
    [SVC_TOKEN] = {4, "10.0.0.1", 7001, 0},
    [SVC_MC6] = {6, "2001:db8::1", 11211, 0},
    [SVC_MC3] = {4, "10.0.0.2", 0, RM_SVC_F_3TUPLE},
    [SVC_KETAMA] = {4, "10.0.0.3", 11211, 0},
    [SVC_MD5MC] = {4, "10.0.0.3", 11212, 0},
    [SVC_MD5DNS] = {4, "10.0.0.3", 53, 0},
};
static const char *const spec_text[SVC_NR] = {
    "memcached", "dns", "bytes:4:8", "token:2:|\\n:64", "memcached",
    "memcached", "memcached", "memcached", "dns",
};
/* each service's --ring: its ring and key hash (rm_owner.h) */
static const char *const ring_text[SVC_NR] = {
    [SVC_KETAMA] = "ketama",
    [SVC_MD5MC] = "md5-vnodes:{node}#vnode{i}:128",
    [SVC_MD5DNS] = "md5-vnodes:{node}-vnode-{i}:150",
};
static struct rm_ring_spec rings[SVC_NR];

static int setup_services(void)
{
	__u32 ids[SVC_NR], i;
	const char *why;
	int err = dp_set_config(fx, RM_CFG_SEEDED);

	for (i = 1; i <= NODES; i++)
		err |= dp_set_node(fx, i, LO_IFINDEX, RM_NODE_ACTIVE);
	for (i = 0; i < SVC_NR; i++) {
		struct rm_svc_meta m;

		ids[i] = i;
		if (rm_parse_keyspec(spec_text[i], &specs[i], &why) ||
		    rm_parse_ringspec(ring_text[i] ? ring_text[i]
						   : "ringmaster",
				      &rings[i], &why)) {
			fprintf(stderr, "test_keys: %s: %s\n", spec_text[i],
				why);
			return -1;
		}
		err |= dp_service(fx, svcs[i].family, svcs[i].vip,
				  IPPROTO_UDP, svcs[i].port, i,
				  svcs[i].flags | RM_SVC_F_KEYED);
		/* the record as ringctl writes it: the spec in the meta */
		err |= bpf_map_lookup_elem(fx->svc_meta, &i, &m);
		m.keyspec = specs[i];
		m.ring = rings[i];
		err |= bpf_map_update_elem(fx->svc_meta, &i, &m, BPF_ANY);
		/* rings of their own for the other schemes */
		if (rings[i].scheme != RM_RING_RINGMASTER)
			err |= dp_push_ring_spec(fx, &rings[i], &ids[i], 1, 1,
						 NODES, 100);
	}
	err |= dp_push_ring(fx, ids, SVC_KETAMA, 1, NODES, 100);
	return err ? -1 : 0;
}

DP_FX_GROUP("test_keys", setup_services)

/* ---- frames ---------------------------------------------------------- */
/* A UDP request of svc from sport carrying pl[0..n); the UDP length
 * claims udp_extra bytes more than the packet holds. */
static void key_frame(struct dp_pkt *p, int svc, __u16 sport, const void *pl,
		      size_t n, int udp_extra, enum dp_frag frag)
{
	int v6 = svcs[svc].family == 6;
	__u16 dport = svcs[svc].port ? svcs[svc].port : 4242;
	size_t uoff;

	memset(p, 0, sizeof(*p));
	dp_eth(p, 0, v6 ? ETH_P_IPV6 : ETH_P_IP);
	if (v6) {
		dp_ipv6(p, CLIENT6, svcs[svc].vip);
		if (frag)
			dp_frag6(p, frag);
	} else {
		dp_ipv4(p, CLIENT4, svcs[svc].vip, 0, frag);
	}
	uoff = p->len;
	dp_l4(p, IPPROTO_UDP, sport, dport, 0);
	memcpy(dp_put(p, n), pl, n);
	dp_put16(p->b + uoff + 4, 8 + n + udp_extra);
	dp_lengths(p);
}

static void key_flow(int svc, __u16 sport, struct rm_flow *f)
{
	struct dp_spec s = {
	    .family = svcs[svc].family,
	    .proto = IPPROTO_UDP,
	    .src = svcs[svc].family == 6 ? CLIENT6 : CLIENT4,
	    .dst = svcs[svc].vip,
	    .sport = sport,
	    .dport = svcs[svc].port ? svcs[svc].port : 4242,
	};

	dp_flow(&s, !!(svcs[svc].flags & RM_SVC_F_3TUPLE), f);
}

static __u32 result_counter(int res)
{
	static const __u32 c[RM_KEY_RESULT_NR] = {
	    [RM_KEY_OK] = RM_CNT_KEY_ROUTED,
	    [RM_KEY_TRUNCATED] = RM_CNT_KEY_FB_TRUNCATED,
	    [RM_KEY_TOO_LONG] = RM_CNT_KEY_FB_TOO_LONG,
	    [RM_KEY_NO_KEY] = RM_CNT_KEY_FB_NO_KEY,
	    [RM_KEY_MALFORMED] = RM_CNT_KEY_FB_MALFORMED,
	    [RM_KEY_MULTI] = RM_CNT_KEY_FB_MULTI,
	};

	return c[res];
}

static long owner_of_hash(int svc, __u32 h)
{
	__u32 id;

	if (rm_ring_lookup(fx->svc[svc].slots, fx->svc[svc].nslots, h, &id))
		return -1;
	return id;
}

/* Owner of a key given as text, the way ringctl lookup --key finds it. */
static long owner_of_key(int svc, const char *key, size_t len)
{
	static struct rm_key_buf b;

	if (rm_key_from_text(&specs[svc], key, (__u32)len, &b) != RM_KEY_OK)
		return -2;
	return owner_of_hash(svc, rm_owner_key_hash(&b, rings[svc].scheme,
						    &dp_seed));
}

/* The userspace extractor on a payload: result, key in *b. */
static int user_extract(int svc, const void *pl, size_t n,
			struct rm_key_buf *b)
{
	memset(b, 0, sizeof(*b));
	b->spec = specs[svc];
	b->plen = (__u32)n;
	b->wlen = n < RM_KEY_WINDOW ? (__u32)n : RM_KEY_WINDOW;
	memcpy(b->win, pl, b->wlen);
	return rm_key_extract(b);
}

/* Run a frame; the node it went to (-1 not forwarded) and the counters'
 * rise in d. */
static long run_frame(const struct dp_pkt *p, __u64 *d, __u32 *verdict)
{
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	static struct dp_run r;
	int i;

	assert_int_equal(dp_counters(fx, before), 0);
	dp_run(fx, p->b, p->len, 0, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(dp_counters(fx, after), 0);
	for (i = 0; i < RM_CNT_MAX; i++)
		d[i] = after[i] - before[i];
	*verdict = r.retval;
	if (r.retval != XDP_TX)
		return -1;
	return dp_mac_node(r.out);
}

/* ---- the table --------------------------------------------------------- */
struct key_case {
	const char *desc;
	int svc;
	const char *pl; /* payload */
	size_t n;
	int res;	 /* RM_KEY_* */
	const char *key; /* text form, with res RM_KEY_OK */
	size_t keylen;
};

#define MCH "\x00\x01\x00\x00\x00\x01\x00\x00" /* request 1, 0 of 1 */
#define P(s) s, sizeof(s) - 1
#define K(s) s, sizeof(s) - 1
#define OK(s) RM_KEY_OK, K(s)
#define FB(r) RM_KEY_##r, NULL, 0
/* DNS header: id 0x1234, RD, QDCOUNT 1 */
#define DNSH "\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
#define QEND "\x00\x01\x00\x01" /* QTYPE A, QCLASS IN */

// clang-format off
static const struct key_case table[] = {
	/* memcached ASCII, every command */
	{"get", SVC_MC, P(MCH "get user:42\r\n"), OK("user:42")},
	{"gets, first of several keys", SVC_MC, P(MCH "gets k1 k2 k3\r\n"), OK("k1")},
	{"gat: the key after the expiry", SVC_MC, P(MCH "gat 300 sess:9\r\n"), OK("sess:9")},
	{"gats", SVC_MC, P(MCH "gats 0 a b\r\n"), OK("a")},
	{"touch", SVC_MC, P(MCH "touch t:1 60\r\n"), OK("t:1")},
	{"set", SVC_MC, P(MCH "set foo 0 0 5\r\nhello\r\n"), OK("foo")},
	{"set noreply", SVC_MC, P(MCH "set foo 1 2 3 noreply\r\nabc\r\n"), OK("foo")},
	{"add", SVC_MC, P(MCH "add a:b 0 0 1\r\nx\r\n"), OK("a:b")},
	{"replace", SVC_MC, P(MCH "replace r 0 0 1\r\nx\r\n"), OK("r")},
	{"append", SVC_MC, P(MCH "append ap 0 0 1\r\nx\r\n"), OK("ap")},
	{"prepend", SVC_MC, P(MCH "prepend pp 0 0 1\r\nx\r\n"), OK("pp")},
	{"cas", SVC_MC, P(MCH "cas c 0 0 1 77\r\nx\r\n"), OK("c")},
	{"delete", SVC_MC, P(MCH "delete gone\r\n"), OK("gone")},
	{"incr", SVC_MC, P(MCH "incr n 1\r\n"), OK("n")},
	{"decr", SVC_MC, P(MCH "decr n 1\r\n"), OK("n")},
	{"mg", SVC_MC, P(MCH "mg meta:1 v t\r\n"), OK("meta:1")},
	{"mg, no flags", SVC_MC, P(MCH "mg meta:1\r\n"), OK("meta:1")},
	{"ms", SVC_MC, P(MCH "ms m2 5 T0\r\nhello\r\n"), OK("m2")},
	{"md", SVC_MC, P(MCH "md m3 q\r\n"), OK("m3")},
	{"ma", SVC_MC, P(MCH "ma m4 N0\r\n"), OK("m4")},
	{"key ended by LF alone", SVC_MC, P(MCH "get lf\n"), OK("lf")},
	{"spaces run together", SVC_MC, P(MCH "get   spaced  \r\n"), OK("spaced")},
	{"1-byte key", SVC_MC, P(MCH "get x\r\n"), OK("x")},
	{"binary-looking bytes in a key", SVC_MC, P(MCH "get \x01\x7f\xff\r\n"), OK("\x01\x7f\xff")},
	{"datagram count 0 taken as 1", SVC_MC, P("\x00\x01\x00\x00\x00\x00\x00\x00" "get z\r\n"), OK("z")},
	{"IPv6", SVC_MC6, P(MCH "get six\r\n"), OK("six")},
	/* memcached ASCII, no key */
	{"get without key", SVC_MC, P(MCH "get\r\n"), FB(NO_KEY)},
	{"get with empty key", SVC_MC, P(MCH "get \r\n"), FB(NO_KEY)},
	{"stats", SVC_MC, P(MCH "stats\r\n"), FB(NO_KEY)},
	{"version", SVC_MC, P(MCH "version\r\n"), FB(NO_KEY)},
	{"meta no-op", SVC_MC, P(MCH "mn\r\n"), FB(NO_KEY)},
	{"upper case command", SVC_MC, P(MCH "GET k\r\n"), FB(NO_KEY)},
	{"command of 8 letters", SVC_MC, P(MCH "getsgets k\r\n"), FB(NO_KEY)},
	{"leading space", SVC_MC, P(MCH " get k\r\n"), FB(NO_KEY)},
	{"gat without key", SVC_MC, P(MCH "gat 10\r\n"), FB(NO_KEY)},
	{"empty after the frame", SVC_MC, P(MCH), FB(TRUNCATED)},
	{"frame header cut", SVC_MC, P("\x00\x01\x00\x00\x00"), FB(TRUNCATED)},
	{"empty datagram", SVC_MC, "", 0, FB(TRUNCATED)},
	{"key without its end", SVC_MC, P(MCH "get abc"), FB(TRUNCATED)},
	{"command without its end", SVC_MC, P(MCH "get"), FB(TRUNCATED)},
	{"second datagram", SVC_MC, P("\x00\x01\x00\x01\x00\x02\x00\x00" "get k\r\n"), FB(MULTI)},
	{"first of two datagrams", SVC_MC, P("\x00\x01\x00\x00\x00\x02\x00\x00" "get k\r\n"), FB(MULTI)},
	{"sequence 256", SVC_MC, P("\x00\x01\x01\x00\x00\x01\x00\x00" "get k\r\n"), FB(MULTI)},
	/* memcached binary */
	{"binary get", SVC_MC, P(MCH "\x80\x00\x00\x03" "\x00\x00\x00\x00" "\x00\x00\x00\x03" "\x00\x00\x00\x00" "\x00\x00\x00\x00\x00\x00\x00\x00" "foo"), OK("foo")},
	{"binary set, 8 bytes extras", SVC_MC, P(MCH "\x80\x01\x00\x03" "\x08\x00\x00\x00" "\x00\x00\x00\x0e" "\x00\x00\x00\x00" "\x00\x00\x00\x00\x00\x00\x00\x00" "\x00\x00\x00\x00\x00\x00\x00\x00" "bar" "val"), OK("bar")},
	{"binary, no key", SVC_MC, P(MCH "\x80\x0a\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00" "\x00\x00\x00\x00\x00\x00\x00\x00"), FB(NO_KEY)},
	{"binary, key length 251", SVC_MC, P(MCH "\x80\x00\x00\xfb" "\x00\x00\x00\x00" "\x00\x00\x00\xfb" "\x00\x00\x00\x00" "\x00\x00\x00\x00\x00\x00\x00\x00" "k"), FB(TOO_LONG)},
	{"binary, key past the datagram", SVC_MC, P(MCH "\x80\x00\x00\x05" "\x00\x00\x00\x00" "\x00\x00\x00\x05" "\x00\x00\x00\x00" "\x00\x00\x00\x00\x00\x00\x00\x00" "abcd"), FB(TRUNCATED)},
	{"binary, header cut", SVC_MC, P(MCH "\x80\x00\x00\x05" "\x00\x00"), FB(TRUNCATED)},
	/* DNS */
	{"dns example.com", SVC_DNS, P(DNSH "\x07" "example" "\x03" "com" "\x00" QEND), OK("example.com.")},
	{"dns upper case: same key", SVC_DNS, P(DNSH "\x07" "ExAmPlE" "\x03" "COM" "\x00" QEND), OK("example.com")},
	{"dns digits and hyphens kept", SVC_DNS, P(DNSH "\x05" "A-1_z" "\x00" QEND), OK("a-1_z.")},
	{"dns root", SVC_DNS, P(DNSH "\x00" QEND), OK(".")},
	{"dns compression pointer", SVC_DNS, P(DNSH "\xc0\x0c" QEND), FB(MALFORMED)},
	{"dns pointer after a label", SVC_DNS, P(DNSH "\x03" "www" "\xc0\x0c" QEND), FB(MALFORMED)},
	{"dns label type 0x40", SVC_DNS, P(DNSH "\x41" "x" "\x00" QEND), FB(MALFORMED)},
	{"dns label type 0x80", SVC_DNS, P(DNSH "\x81" "x" "\x00" QEND), FB(MALFORMED)},
	{"dns no question", SVC_DNS, P("\x12\x34\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00" "\x01" "a" "\x00"), FB(NO_KEY)},
	{"dns label past the end", SVC_DNS, P(DNSH "\x07" "exam"), FB(TRUNCATED)},
	{"dns name without its end", SVC_DNS, P(DNSH "\x07" "example"), FB(TRUNCATED)},
	{"dns header only", SVC_DNS, P(DNSH), FB(TRUNCATED)},
	{"dns header cut", SVC_DNS, P("\x12\x34\x01"), FB(TRUNCATED)},
	/* bytes:4:8 */
	{"bytes", SVC_BYTES, P("hdr:KEY-0001:tail"), OK("KEY-0001")},
	{"bytes, exactly to the end", SVC_BYTES, P("hdr:KEY-0002"), OK("KEY-0002")},
	{"bytes, one short", SVC_BYTES, P("hdr:KEY-000"), FB(TRUNCATED)},
	/* token:2:|\n:64 */
	{"token up to |", SVC_TOKEN, P("v1abc|rest"), OK("abc")},
	{"token up to LF", SVC_TOKEN, P("v1abc def\n"), OK("abc def")},
	{"token, empty", SVC_TOKEN, P("v1|x"), FB(NO_KEY)},
	{"token without delimiter", SVC_TOKEN, P("v1abc"), FB(TRUNCATED)},
	{"token before its offset", SVC_TOKEN, P("v"), FB(TRUNCATED)},
};
// clang-format on
#define N_TABLE (sizeof(table) / sizeof(table[0]))

/* One request: the kernel's node and counters, the userspace result, and
 * both against the key the case names. Returns the kernel's result. */
static int check_request(const char *desc, int svc, const void *pl, size_t n,
			 int udp_extra, __u16 sport, int want_res,
			 const char *key, size_t keylen)
{
	static struct dp_pkt p;
	static struct rm_key_buf b;
	__u64 d[RM_CNT_MAX];
	struct rm_flow f;
	long got, want;
	__u32 verdict;
	int res, i, kres = -1;

	key_frame(&p, svc, sport, pl, n, udp_extra, DP_FRAG_NONE);
	key_flow(svc, sport, &f);
	got = run_frame(&p, d, &verdict);
	for (i = 0; i < RM_KEY_RESULT_NR; i++)
		if (d[result_counter(i)]) {
			if (d[result_counter(i)] != 1 || kres >= 0)
				fail_msg("%s: key counters rose twice", desc);
			kres = i;
		}
	if (verdict != XDP_TX || kres < 0 || d[RM_CNT_FWD_TX] != 1)
		fail_msg("%s: verdict %s, forwarded-tx +%llu, no key counter "
			 "(%d)",
			 desc, dp_action_name(verdict),
			 (unsigned long long)d[RM_CNT_FWD_TX], kres);
	/* the connection table is not consulted */
	assert_int_equal(d[RM_CNT_CONN_HIT] + d[RM_CNT_CONN_MISS] +
			     d[RM_CNT_CONN_INSERT] + d[RM_CNT_CONN_STALE],
			 0);

	/* the kernel reads no more than the packet holds, whatever the
	 * UDP length claims: n bytes */
	res = user_extract(svc, pl, n, &b);
	if (res != kres)
		fail_msg("%s: kernel %s, userspace %s", desc,
			 rm_key_result_name(kres), rm_key_result_name(res));
	if (want_res >= 0 && res != want_res)
		fail_msg("%s: result %s, expected %s", desc,
			 rm_key_result_name(res), rm_key_result_name(want_res));
	if (res == RM_KEY_OK) {
		static struct rm_key_buf t;

		want = owner_of_hash(svc, rm_owner_key_hash(&b,
							    rings[svc].scheme,
							    &dp_seed));
		if (key && (rm_key_from_text(&specs[svc], key, (__u32)keylen,
					     &t) != RM_KEY_OK ||
			    t.klen != b.klen || memcmp(t.key, b.key, b.klen)))
			fail_msg("%s: extracted key is not '%.*s'", desc,
				 (int)keylen, key);
	} else {
		want = dp_expected_owner(fx, svc, &f);
	}
	if (got != want)
		fail_msg("%s: kernel node %ld, expected %ld (%s)", desc, got,
			 want, rm_key_result_name(res));
	return kres;
}

static void test_table(void **state)
{
	size_t i;

	(void)state;
	NEED_BPF();
	for (i = 0; i < N_TABLE; i++) {
		const struct key_case *c = &table[i];

		check_request(c->desc, c->svc, c->pl, c->n, 0, 40000 + i,
			      c->res, c->key, c->keylen);
	}
}

/* Keys at and over the limits, built here. */
static void test_lengths(void **state)
{
	static char pl[1024], key[600];
	size_t n, k;

	(void)state;
	NEED_BPF();
	for (k = 0; k < sizeof(key); k++)
		key[k] = 'a' + k % 26;
	/* memcached ASCII: 250 is the limit */
	for (k = 249; k <= 252; k++) {
		memcpy(pl, MCH, 8);
		n = 8 + (size_t)sprintf(pl + 8, "get %.*s\r\n", (int)k, key);
		check_request("ascii key 249-252", SVC_MC, pl, n, 0, 41000 + k,
			      k <= 250 ? RM_KEY_OK : RM_KEY_TOO_LONG, key, k);
	}
	/* binary: 250 bytes after 255 bytes of extras ends past the window */
	for (k = 250; k <= 251; k++) {
		size_t ext = 0;
		__u8 *h = (__u8 *)pl + 8;

		memset(pl, 0, sizeof(pl));
		memcpy(pl, MCH, 8);
		h[0] = 0x80;
		h[2] = 0;
		h[3] = (__u8)k;
		h[4] = (__u8)ext;
		memcpy(h + 24 + ext, key, k);
		check_request("binary key 250/251", SVC_MC, pl, 8 + 24 + ext + k,
			      0, 41100 + k,
			      k <= 250 ? RM_KEY_OK : RM_KEY_TOO_LONG, key, k);
	}
	{
		__u8 *h = (__u8 *)pl + 8;

		h[3] = 250;
		h[4] = 255;
		memcpy(h + 24 + 255, key, 250);
		check_request("binary key past the window", SVC_MC, pl,
			      8 + 24 + 255 + 250, 0, 41300, RM_KEY_TOO_LONG,
			      NULL, 0);
	}
	/* DNS: 63-byte labels, names of 255 and 256 bytes */
	for (k = 0; k < 2; k++) {
		char name[300];
		size_t o = 12, t = 0;
		int lab;

		memcpy(pl, DNSH, 12);
		/* 4 labels of 63 = 256 bytes with their lengths; then the
		 * root: 257. Drop 2 bytes of the last for 255. */
		for (lab = 0; lab < 4; lab++) {
			int len = lab == 3 ? (k ? 63 : 61) : 63;

			pl[o++] = (char)len;
			memcpy(pl + o, key + lab, len);
			memcpy(name + t, key + lab, len);
			o += len;
			t += len;
			name[t++] = '.';
		}
		pl[o++] = 0;
		memcpy(pl + o, QEND, 4);
		o += 4;
		check_request(k ? "dns name of 257 bytes" : "dns name of 255",
			      SVC_DNS, pl, o, 0, 41400 + k,
			      k ? RM_KEY_TOO_LONG : RM_KEY_OK, name, t);
		if (!k) /* upper case: the same owner */
			for (size_t j = 13; j < o - 5; j++)
				if (pl[j] >= 'a' && pl[j] <= 'z')
					pl[j] -= 32;
		if (!k)
			check_request("dns name of 255, upper case", SVC_DNS,
				      pl, o, 0, 41402, RM_KEY_OK, name, t);
	}
	/* token: 64 is the configured limit */
	for (k = 63; k <= 65; k++) {
		n = (size_t)sprintf(pl, "v1%.*s|", (int)k, key);
		check_request("token 63-65", SVC_TOKEN, pl, n, 0, 41500 + k,
			      k <= 64 ? RM_KEY_OK : RM_KEY_TOO_LONG, key, k);
	}
	/* the key is not in the first 512 bytes of a long datagram */
	memset(pl, 'x', sizeof(pl));
	memcpy(pl, "v1", 2);
	pl[700] = '|';
	check_request("token past the window", SVC_TOKEN, pl, 701, 0, 41600,
		      RM_KEY_TOO_LONG, NULL, 0);
}

/* Every forwarded request cut at every length: the datagram shortened
 * (UDP and IP lengths agree), and the UDP length left claiming the whole
 * request. Either the key read is the whole key or the request falls
 * back; check_request compares the kernel with userspace each time. */
static void test_truncation(void **state)
{
	static struct rm_key_buf full, cut;
	size_t i, n;
	int routed = 0, fell = 0;

	(void)state;
	NEED_BPF();
	for (i = 0; i < N_TABLE; i++) {
		const struct key_case *c = &table[i];

		if (c->res != RM_KEY_OK)
			continue;
		assert_int_equal(user_extract(c->svc, c->pl, c->n, &full),
				 RM_KEY_OK);
		for (n = 0; n < c->n; n++) {
			int extra;

			for (extra = 0; extra <= 1; extra++) {
				int r = check_request(
				    c->desc, c->svc, c->pl, n,
				    extra ? (int)(c->n - n) : 0, 42000 + n, -1,
				    NULL, 0);

				if (r != RM_KEY_OK) {
					fell++;
					continue;
				}
				/* only a cut after the key's end may still
				 * be routed, and on the very same key */
				user_extract(c->svc, c->pl, n, &cut);
				if (cut.klen != full.klen ||
				    memcmp(cut.key, full.key, full.klen))
					fail_msg("%s cut at %zu: routed on "
						 "another key",
						 c->desc, n);
				routed++;
			}
		}
	}
	print_message("truncation: %d cut requests fell back, %d still held "
		      "their whole key\n",
		      fell, routed);
	assert_true(fell > 0 && routed > 0);
}

/* A frame cut inside its own IP packet is malformed, keyed or not. */
static void test_frame_cut(void **state)
{
	static struct dp_pkt p;
	__u64 d[RM_CNT_MAX];
	__u32 verdict;
	size_t len;

	(void)state;
	NEED_BPF();
	key_frame(&p, SVC_MC, 43000, MCH "get k\r\n", sizeof(MCH "get k\r\n") - 1, 0,
		  DP_FRAG_NONE);
	for (len = p.len - 1; len >= p.len - 9; len--) {
		struct dp_pkt q = p;

		q.len = len;
		assert_int_equal(run_frame(&q, d, &verdict), -1);
		assert_int_equal(verdict, XDP_DROP);
		assert_int_equal(d[RM_CNT_DROP_MALFORMED], 1);
		assert_int_equal(d[RM_CNT_KEY_ROUTED], 0);
	}
}

/* Keyed services never write the connection table; ICMP errors about
 * them and their fragments go by the flow. */
static void test_no_table(void **state)
{
	static struct dp_pkt p;
	struct dp_spec s = {
	    .kind = DP_ICMP_ERR, .family = 4, .proto = IPPROTO_UDP,
	    .src = CLIENT4, .dst = "10.0.0.1", .sport = 5555, .dport = 11211,
	    .icmp_type = 3, .icmp_code = 4,
	};
	__u64 d[RM_CNT_MAX];
	struct rm_flow f;
	__u32 verdict;
	long got;
	int i;

	(void)state;
	NEED_BPF();
	assert_int_equal(dp_conns_clear(fx), 0);
	for (i = 0; i < 50; i++)
		check_request("repeat", SVC_MC, MCH "get same\r\n",
			      sizeof(MCH "get same\r\n") - 1, 0, 44000 + i,
			      RM_KEY_OK, "same", 4);
	assert_int_equal(dp_conns_count(fx), 0);

	dp_build(&s, &p);
	dp_flow(&s, 0, &f);
	got = run_frame(&p, d, &verdict);
	assert_int_equal(verdict, XDP_TX);
	assert_int_equal(got, dp_expected_owner(fx, SVC_MC, &f));
	assert_int_equal(d[RM_CNT_ICMP_FORWARDED], 1);
	for (i = 0; i < RM_KEY_RESULT_NR; i++)
		assert_int_equal(d[result_counter(i)], 0);
	assert_int_equal(d[RM_CNT_CONN_MISS] + d[RM_CNT_CONN_HIT], 0);

	/* a first fragment of a 3-tuple keyed service: its later fragments
	 * carry no key, so all of them go by the 3-tuple */
	key_frame(&p, SVC_MC3, 44100, MCH "get frag\r\n",
		  sizeof(MCH "get frag\r\n") - 1, 0, DP_FRAG_FIRST);
	key_flow(SVC_MC3, 44100, &f);
	got = run_frame(&p, d, &verdict);
	assert_int_equal(verdict, XDP_TX);
	assert_int_equal(got, dp_expected_owner(fx, SVC_MC3, &f));
	assert_int_equal(d[RM_CNT_KEY_FB_FRAGMENT], 1);
	assert_int_equal(d[RM_CNT_KEY_ROUTED], 0);
	assert_int_equal(dp_conns_count(fx), 0);
}

/* ---- parity ------------------------------------------------------------ */
static __u32 rnd(__u32 n)
{
	return (__u32)(rm_splitmix64(&rng) % n);
}

static const char *const mc_cmds[] = {
    "get",     "gets",   "touch", "set",  "add",  "replace", "append",
    "prepend", "cas",    "delete", "incr", "decr", "mg",      "ms",
    "md",      "ma",     "gat",   "gats",
};

/* A random request of svc and its key as text; returns payload length. */
static size_t random_request(int svc, char *pl, char *key, size_t *klen)
{
	static const char dns_chars[] =
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
	size_t n = 0, k, i;

	switch (specs[svc].kind) {
	case RM_KEY_MEMCACHED: {
		const char *cmd = mc_cmds[rnd(sizeof(mc_cmds) / sizeof(*mc_cmds))];

		k = 1 + rnd(250);
		for (i = 0; i < k; i++)
			key[i] = (char)(0x21 + rnd(0x7f - 0x21));
		memcpy(pl, MCH, 8);
		n = 8 + (size_t)sprintf(pl + 8, "%s %s%.*s %s\r\n", cmd,
				    !strncmp(cmd, "gat", 3) ? "100 " : "",
				    (int)k, key, "0 0 1");
		break;
	}
	case RM_KEY_DNS: {
		size_t t = 0, o = 12;

		memcpy(pl, DNSH, 12);
		/* total wire length <= 255: sum(len + 1) + 1 */
		k = 1 + rnd(200);
		while (o - 12 + 2 < k) {
			size_t len = 1 + rnd(63);

			if (o - 12 + len + 2 > 255)
				break;
			pl[o++] = (char)len;
			for (i = 0; i < len; i++) {
				char c = dns_chars[rnd(sizeof(dns_chars) - 1)];

				pl[o++] = c;
				key[t++] = c;
			}
			key[t++] = '.';
		}
		pl[o++] = 0;
		memcpy(pl + o, QEND, 4);
		n = o + 4;
		k = t;
		break;
	}
	case RM_KEY_BYTES:
		n = 4 + 8 + rnd(20);
		for (i = 0; i < n; i++)
			pl[i] = (char)rnd(256);
		memcpy(key, pl + 4, 8);
		k = 8;
		break;
	default: /* token:2:|\n:64 */
		k = 1 + rnd(64);
		pl[0] = 'v';
		pl[1] = '1';
		for (i = 0; i < k; i++) {
			char c;

			do
				c = (char)rnd(256);
			while (c == '|' || c == '\n');
			pl[2 + i] = key[i] = c;
		}
		pl[2 + k] = rnd(2) ? '|' : '\n';
		n = 3 + k;
		break;
	}
	*klen = k;
	return n;
}

static void test_parity(void **state)
{
	static const int par[] = {SVC_MC,     SVC_MC6,   SVC_DNS,
				  SVC_BYTES,  SVC_TOKEN, SVC_KETAMA,
				  SVC_MD5MC, SVC_MD5DNS};
	static char pl[1024], key[512];
	static struct dp_pkt p;
	size_t s;

	(void)state;
	NEED_BPF();
	for (s = 0; s < sizeof(par) / sizeof(*par); s++) {
		int svc = par[s], i, bad = 0, nodes_hit = 0;
		int per_node[NODES + 1] = {0};
		__u64 d[RM_CNT_MAX];
		__u32 verdict;

		for (i = 0; i < 10000; i++) {
			size_t klen, n = random_request(svc, pl, key, &klen);
			__u16 sport = (__u16)(1024 + rnd(60000));
			long want = owner_of_key(svc, key, klen), got;

			key_frame(&p, svc, sport, pl, n, 0, DP_FRAG_NONE);
			got = run_frame(&p, d, &verdict);
			if (got != want || d[RM_CNT_KEY_ROUTED] != 1) {
				if (++bad <= 5)
					print_error("%s key %d (%zu bytes): "
						    "kernel node %ld, "
						    "userspace node %ld\n",
						    spec_text[svc], i, klen,
						    got, want);
				continue;
			}
			if (got >= 1 && got <= NODES && !per_node[got]++)
				nodes_hit++;
		}
		print_message("parity %-12s %-32s 10000 keys, %d mismatches, "
			      "%d of %d nodes used\n",
			      spec_text[svc],
			      ring_text[svc] ? ring_text[svc] : "ringmaster",
			      bad, nodes_hit, NODES);
		assert_int_equal(bad, 0);
		assert_true(nodes_hit > NODES / 2);
	}
}

/* --key text: every spec reads back as itself from what save writes
 * (escaped so a saved line holds no whitespace), and bad ones are
 * refused with a reason. */
static void test_spec_text(void **state)
{
	static const char *const good[][2] = {
	    {"flow", "flow"},
	    {"memcached", "memcached"},
	    {"dns", "dns"},
	    {"bytes:0:1", "bytes:0:1"},
	    {"bytes:257:255", "bytes:257:255"},
	    {"token:8:\\s\\r\\n:250", "token:8:\\s\\r\\n:250"},
	    {"token:0:\\x09\\x00\\\\::10", "token:0:\\t\\x00\\\\::10"},
	    {"token:511:abcdefgh:1", "token:511:abcdefgh:1"},
	};
	static const char *const bad[] = {
	    "", "flows", "bytes", "bytes:1", "bytes:1:0", "bytes:1:256",
	    "bytes:300:255", "bytes:-1:4", "bytes:x:4", "token:0::4",
	    "token:0:abcdefghi:4", "token:0:\\q:4", "token:0:\\x1:4",
	    "token:512:a:4", "token:0:a:0", "token:0:a", "memcached:1",
	};
	struct rm_key_spec spec, again;
	char text[64];
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(rm_parse_keyspec(good[i][0], &spec, &why), 0);
		assert_true(rm_keyspec_valid(&spec));
		rm_format_keyspec(&spec, text, sizeof(text));
		assert_string_equal(text, good[i][1]);
		assert_null(strpbrk(text, " \t\r\n"));
		assert_int_equal(rm_parse_keyspec(text, &again, &why), 0);
		assert_memory_equal(&spec, &again, sizeof(spec));
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		if (!rm_parse_keyspec(bad[i], &spec, &why))
			fail_msg("--key '%s' accepted", bad[i]);
		assert_non_null(why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_lengths),
	    cmocka_unit_test(test_truncation),
	    cmocka_unit_test(test_frame_cut),
	    cmocka_unit_test(test_no_table),
	    cmocka_unit_test(test_parity),
	    cmocka_unit_test(test_spec_text),
	};

	return rm_test_result(cmocka_run_group_tests_name("keys", tests,
							  group_setup,
							  group_teardown),
			      skipped);
}
