// SPDX-License-Identifier: GPL-2.0
/*
 * Part "keys": per-packet cost of each key extractor (include/ringmaster/
 * rm_key.h) in the kernel, bpf_prog_test_run_opts, keys of 8, 32 and 250
 * bytes, next to the flow-hash paths of the same program and ring:
 *   udp flow, table hit   a UDP flow service's packet after its first:
 *                         connection-table hit, no hash (what flows pay)
 *   tcp SYN, flow hash    a 5-tuple SYN: the flow hash and the ring search
 *                         (what a keyed request pays besides its key)
 * A keyed request skips the table, copies up to 512 payload bytes, reads
 * its key, hashes it and searches the ring. The memcached rows are run
 * again on services with --ring ketama and md5-vnodes (their own rings of
 * the same nodes): the key hashed with MD5 instead of SipHash. QUIC
 * (--key quic:3:4, rm_quic.h) adds two rows, 8-byte CIDs:
 *   quic short header, CID-routed   the DCID's server ID looked up in
 *                                   rm_quic_sids: no hash, no ring
 *   quic Initial, DCID hash + ring  an unroutable DCID: hashed, searched
 * and, where the kernel has the BPF crypto kfuncs (the director object
 * that decodes encrypted CIDs: bpf/quic_crypt.h), three encrypted rows,
 * the draft's encrypted vectors routed by their decrypted server ID:
 *   quic encrypted, single pass    8+8-byte block: one AES decryption
 *   quic encrypted, 3 passes       3+4: three AES rounds of the Feistel
 *   quic encrypted, 4 passes       10+5: a server ID past left_0
 *
 * Each figure is the median (min-max) over interleaved rounds, the order
 * reversed every other round, of the kernel's own duration per run. The
 * path is verified before timing (verdict XDP_TX, the node userspace
 * computes for the key or flow, a fixed point) and in every timed run (the
 * outcome counter and key-routed or conn-hit moved by exactly `repeat`).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ringmaster/rm_key.h>
#include <ringmaster/rm_owner.h>
#include <ringmaster/rm_quic.h>
#include "ringmaster.skel.h"
#include "bench.h"
#include "director.h"
#include "director_obj.h"
#include "key.h"
#include "quic.h"
#include "ring_map.h"
#include "state.h"
#include "vip_filter.h"

#define KY_REPEAT 200000u
#define KY_NODES 16
#define KY_FRAME_MAX 600

struct ky_row {
	const char *path;
	int key_len; /* 0: not keyed */
	__u8 frame[KY_FRAME_MAX];
	size_t len;
	int svc;
	__u32 want_node, check_cnt;
	double ns[101];
	struct bench_stat st;
	char status[128];
};

struct ky_svc {
	__u16 port;
	__u8 proto;
	const char *spec; /* NULL: flow */
	const char *ring; /* NULL: ringmaster */
};

enum { S_UDP, S_TCP, S_MC, S_DNS, S_TOKEN, S_BYTES8, S_BYTES32, S_BYTES250,
       S_KETAMA, S_MD5, S_QUIC, S_QUIC_E1, S_QUIC_E3, S_QUIC_E4, S_NR };
static const struct ky_svc svcs[S_NR] = {
    [S_UDP] = {80, IPPROTO_UDP, NULL},
    [S_TCP] = {80, IPPROTO_TCP, NULL},
    [S_MC] = {11211, IPPROTO_UDP, "memcached"},
    [S_DNS] = {53, IPPROTO_UDP, "dns"},
    [S_TOKEN] = {7000, IPPROTO_UDP, "token:0:\\n:255"},
    [S_BYTES8] = {7008, IPPROTO_UDP, "bytes:0:8"},
    [S_BYTES32] = {7032, IPPROTO_UDP, "bytes:0:32"},
    [S_BYTES250] = {7250, IPPROTO_UDP, "bytes:0:250"},
    [S_KETAMA] = {11212, IPPROTO_UDP, "memcached", "ketama"},
    [S_MD5] = {11213, IPPROTO_UDP, "memcached",
	       "md5-vnodes:{node}-vnode-{i}:160"},
    [S_QUIC] = {443, IPPROTO_UDP, "quic:3:4:0:self"},
    [S_QUIC_E1] = {444, IPPROTO_UDP, "quic:8:8:2:self"},
    [S_QUIC_E3] = {445, IPPROTO_UDP, "quic:3:4:0:self"},
    [S_QUIC_E4] = {446, IPPROTO_UDP, "quic:10:5:1:self"},
};
/* the draft's encrypted vectors (docs/quic.md), by service */
static const struct {
	const char *path, *sid, *cid;
} ky_enc[3] = {
    {"quic encrypted, single pass", "ed793a51d49b8f5f",
     "504dd2d05a7b0de9b2b9907afb5ecf8cc3"},
    {"quic encrypted, 3 passes", "ed793a", "0720b1d07b359d3c"},
    {"quic encrypted, 4 passes", "ed793a51d49b8f5fab65",
     "2fcc381bc74cb4fbad2823a3d1f8fed2"},
};
#define KY_ENC_KEY "8f95f09245765f80256934e50c66207f"
/* the QUIC service's node holding server ID c4605e, the draft's first
 * test vector's; in no ring */
#define KY_QUIC_NODE 100

/* Each service's ring scheme, and the ring of the bench's nodes built
 * with it (encoded into slots). */
struct ky_ring {
	struct rm_ring_spec spec;
	struct rm_ring ring;
	struct rm_slot *slots;
	__u32 nslots;
};

static int ky_ring_build(const struct rm_seed *seed, const char *text,
			 const struct rm_node_spec *nodes, __u32 n,
			 struct ky_ring *r)
{
	const char *why;

	memset(r, 0, sizeof(*r));
	if (rm_parse_ringspec(text ? text : "ringmaster", &r->spec, &why) ||
	    rm_ring_build_spec(seed, &r->spec, nodes, n, 100, &r->ring))
		return -EINVAL;
	r->nslots = rm_ring_nslots(&r->ring);
	r->slots = calloc(r->nslots, sizeof(*r->slots));
	if (!r->slots || rm_ring_encode(&r->ring, r->slots, r->nslots))
		return -ENOMEM;
	return 0;
}

static int ky_service(struct director *d, int id, struct rm_key_spec *spec,
		      const struct rm_ring_spec *ring)
{
	const struct ky_svc *s = &svcs[id];
	int meta = bpf_map__fd(d->skel->maps.rm_svc_meta);
	struct rm_svc_meta m;
	const char *why;
	__u32 key = (__u32)id;

	memset(spec, 0, sizeof(*spec));
	if (s->spec && rm_parse_keyspec(s->spec, spec, &why))
		return -EINVAL;
	if (dir_service_keyed(d, BENCH_VIP, s->port, s->proto, key, spec) ||
	    bpf_map_lookup_elem(meta, &key, &m))
		return -EIO;
	m.ring = *ring;
	return bpf_map_update_elem(meta, &key, &m, BPF_ANY) ? -errno : 0;
}

/* Ethernet/IPv4/UDP frame carrying pl; returns its length. */
static size_t ky_frame(__u8 *buf, __u16 dport, const void *pl, size_t n)
{
	bench_frame(buf, bench_dir_mac, bench_client_mac, BENCH_CLIENT_IP,
		    BENCH_VIP, 40000, dport, IPPROTO_UDP, 0);
	return bench_frame_payload(buf, pl, n);
}

/* The request of svc whose key is len bytes: payload into pl, the key as
 * rm_key_from_text takes it into key. */
static size_t ky_request(int svc, int len, char *pl, char *key, __u32 *klen)
{
	size_t n = 0;
	int i;

	for (i = 0; i < len; i++)
		key[i] = (char)('a' + i % 26);
	*klen = (__u32)len;
	switch (svc) {
	case S_MC:
		memcpy(pl, "\0\1\0\0\0\1\0\0", 8);
		n = 8 + (size_t)sprintf(pl + 8, "get %.*s\r\n", len, key);
		break;
	case S_DNS: {
		/* a name whose wire form is len bytes: labels of up to 63 */
		int left = len - 1, t = 0;

		memcpy(pl, "\x12\x34\x01\x00\x00\x01\0\0\0\0\0\0", 12);
		n = 12;
		while (left > 0) {
			int lab = left - 1 < 63 ? left - 1 : 63;

			if (left - (lab + 1) == 1)
				lab--;
			pl[n++] = (char)lab;
			memcpy(pl + n, key + t, lab);
			n += lab;
			t += lab;
			key[t++] = '.';
			left -= lab + 1;
		}
		pl[n++] = 0;
		memcpy(pl + n, "\0\1\0\1", 4);
		n += 4;
		*klen = (__u32)t;
		break;
	}
	case S_TOKEN:
		memcpy(pl, key, len);
		pl[len] = '\n';
		n = len + 1;
		break;
	default: /* bytes: the key and a tail */
		memcpy(pl, key, len);
		memset(pl + len, 'z', 16);
		n = len + 16;
		break;
	}
	return n;
}

static int ky_run(struct director *d, struct ky_row *r, __u32 repeat,
		  double *ns, char *why, size_t wl)
{
	__u64 before[RM_CNT_MAX], after[RM_CNT_MAX];
	__u8 out[KY_FRAME_MAX];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = r->frame,
		    .data_size_in = r->len, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = repeat);
	__u8 mac[6];

	if (dir_counters(d, before) || bpf_prog_test_run_opts(d->prog_fd, &o) ||
	    dir_counters(d, after)) {
		snprintf(why, wl, "test_run: %s", strerror(errno));
		return -1;
	}
	bench_node_mac(r->want_node, mac);
	if (o.retval != XDP_TX || memcmp(out, mac, 6)) {
		snprintf(why, wl, "verdict %u, not XDP_TX to node %u",
			 o.retval, r->want_node);
		return -1;
	}
	if (after[RM_CNT_FWD_TX] - before[RM_CNT_FWD_TX] != repeat ||
	    after[r->check_cnt] - before[r->check_cnt] != repeat) {
		snprintf(why, wl, "%s moved by %llu, not %u",
			 dir_counter_name(r->check_cnt),
			 (unsigned long long)(after[r->check_cnt] -
					      before[r->check_cnt]),
			 repeat);
		return -1;
	}
	*ns = o.duration;
	return 0;
}

/* service id's QUIC configuration, encrypted */
static int ky_enc_service(struct director *d, int id)
{
	int meta = bpf_map__fd(d->skel->maps.rm_svc_meta);
	struct rm_svc_meta m;
	__u32 key = (__u32)id;

	if (bpf_map_lookup_elem(meta, &key, &m))
		return -errno;
	m.keyspec.quic.enc = RM_QUIC_ENC_AES;
	return bpf_map_update_elem(meta, &key, &m, BPF_ANY) ? -errno : 0;
}

int cmd_keys(const struct bench_opts *o)
{
	static const int sizes[] = {8, 32, 250};
	static struct ky_row rows[2 + 6 * 3 + 2 + 3];
	static struct ky_ring rings[S_NR];
	struct rm_key_spec specs[S_NR];
	struct rm_node_spec nodes[KY_NODES];
	struct rm_slot *slots = NULL;
	struct rm_seed seed = {BENCH_SEED_K0, BENCH_SEED_K1};
	struct director d;
	struct rm_ring ring;
	struct rm_json j;
	__u32 nslots, repeat = o->quick ? KY_REPEAT / 10 : KY_REPEAT;
	int nrows = 0, err, i, bad = 0;
	FILE *jf;

	bench_pin_cpu();
	if (dir_open(&d) || dir_seed(&d))
		return 1;
	for (i = 0; i < KY_NODES; i++) {
		__u8 mac[6];

		snprintf(nodes[i].name, sizeof(nodes[i].name), "n%d", i + 1);
		nodes[i].weight = 1;
		nodes[i].id = i + 1;
		snprintf(nodes[i].host, sizeof(nodes[i].host), "198.18.0.%d",
			 i + 1);
		bench_node_mac(i + 1, mac);
		if (dir_node(&d, i + 1, mac, bench_dir_mac, 1, 0))
			return 1;
	}
	err = rm_ring_build(&seed, nodes, KY_NODES, 100, &ring);
	if (err)
		return 1;
	nslots = rm_ring_nslots(&ring);
	slots = calloc(nslots, sizeof(*slots));
	if (!slots || rm_ring_encode(&ring, slots, nslots))
		return 1;
	for (i = 0; i < S_NR; i++) {
		struct ky_ring *r = &rings[i];
		int fd;

		if (ky_ring_build(&seed, svcs[i].ring, nodes, KY_NODES, r))
			return 1;
		fd = dir_ring_map(r->slots, r->nslots);
		if (fd < 0 || ky_service(&d, i, &specs[i], &r->spec) ||
		    dir_ring_install(&d, i, fd))
			return 1;
		close(fd);
	}

	/* the flow-hash paths */
	for (i = 0; i < 2; i++) {
		struct ky_row *r = &rows[nrows++];
		struct rm_flow f;
		__u32 id;

		r->path = i ? "tcp SYN: flow hash + ring" :
			      "udp flow: table hit";
		r->svc = i ? S_TCP : S_UDP;
		r->len = bench_frame(r->frame, bench_dir_mac, bench_client_mac,
				     BENCH_CLIENT_IP, BENCH_VIP, 40000, 80,
				     i ? IPPROTO_TCP : IPPROTO_UDP,
				     i ? BENCH_TCP_SYN : 0);
		bench_frame_flow(r->frame, &f);
		rm_ring_lookup(slots, nslots, rm_flow_hash(&seed, &f), &id);
		r->want_node = id;
		r->check_cnt = i ? RM_CNT_FWD_TX : RM_CNT_CONN_HIT;
	}
	for (int e = 0; e < 6; e++)
		for (size_t s = 0; s < 3; s++) {
			static const char *const names[] = {
			    "memcached get", "dns qname", "token", "bytes",
			    "memcached get, --ring ketama",
			    "memcached get, --ring md5-vnodes"};
			static const int svc_of[] = {S_MC, S_DNS, S_TOKEN,
						     S_BYTES8, S_KETAMA, S_MD5};
			static char pl[600], key[600];
			static struct rm_key_buf b;
			struct ky_row *r = &rows[nrows++];
			int svc = svc_of[e] + (e == 3 ? (int)s : 0);
			const struct ky_ring *kr = &rings[svc];
			__u32 klen, id;
			size_t n;

			r->path = names[e];
			r->key_len = sizes[s];
			r->svc = svc;
			n = ky_request(svc_of[e] == S_MC || e >= 4 ? S_MC : svc,
				       sizes[s], pl, key, &klen);
			r->len = ky_frame(r->frame, svcs[svc].port, pl, n);
			if (rm_key_from_text(&specs[svc], key, klen, &b) !=
			    RM_KEY_OK)
				return 1;
			rm_ring_lookup(kr->slots, kr->nslots,
				       rm_owner_key_hash(&b, kr->spec.scheme,
							 &seed),
				       &id);
			r->want_node = id;
			r->check_cnt = RM_CNT_KEY_ROUTED;
		}

	/* QUIC: a server's CID (the vector), then a client's own DCID */
	for (i = 0; i < 2; i++) {
		static const __u8 vec[8] = {0x07, 0xc4, 0x60, 0x5e,
					    0x45, 0x04, 0xcc, 0x4f};
		static const __u8 rnd[8] = {0x27, 0x11, 0x22, 0x33,
					    0x44, 0x55, 0x66, 0x77};
		struct rm_quic_sid_key k = {.svc_id = S_QUIC, .len = 3,
					    .sid = {0xc4, 0x60, 0x5e}};
		struct rm_quic_sid_node v = {.node = KY_QUIC_NODE, .gen = 1};
		const struct ky_ring *kr = &rings[S_QUIC];
		struct ky_row *r = &rows[nrows++];
		struct rm_quic_cid c = {.len = 8};
		__u8 pl[64], mac[6];
		size_t n = 0;

		if (!i) {
			pl[n++] = 0x41;
			memcpy(pl + n, vec, 8);
			n += 8;
		} else {
			memcpy(pl, "\xc0\0\0\0\1\x08", 6);
			memcpy(pl + 6, rnd, 8);
			n = 14;
			pl[n++] = 0;
		}
		memset(pl + n, 0xab, 40);
		n += 40;
		r->path = i ? "quic Initial: DCID hash + ring"
			    : "quic short header: CID-routed";
		r->key_len = 8;
		r->svc = S_QUIC;
		r->len = ky_frame(r->frame, svcs[S_QUIC].port, pl, n);
		memcpy(c.w, rnd, 8);
		if (i)
			rm_ring_lookup(kr->slots, kr->nslots,
				       rm_quic_cid_hash(&seed, &c),
				       &r->want_node);
		else
			r->want_node = KY_QUIC_NODE;
		r->check_cnt = i ? RM_CNT_QUIC_INITIAL_HASHED
				 : RM_CNT_QUIC_CID_ROUTED;
		bench_node_mac(KY_QUIC_NODE, mac);
		if (!i && (dir_node(&d, KY_QUIC_NODE, mac, bench_dir_mac, 1,
				    S_QUIC) ||
			   bpf_map_update_elem(
			       bpf_map__fd(d.skel->maps.rm_quic_sids), &k, &v,
			       BPF_ANY)))
			return 1;
	}

	/* encrypted QUIC: each vector's CID in a short header, its server
	 * ID on a node of its own; only on the object with BPF crypto */
	for (i = 0; i < 3 && rm_director_crypt(); i++) {
		int svc = S_QUIC_E1 + i, keys;
		struct rm_quic_sid_key k = {.svc_id = (__u32)svc};
		struct rm_quic_sid_node v = {.node = KY_QUIC_NODE + 1 + (__u32)i,
					     .gen = 1};
		struct bpf_map *km = bpf_object__find_map_by_name(
		    d.skel->obj, RM_QUIC_KEYS_MAP);
		struct ky_row *r = &rows[nrows++];
		__u8 pl[64], mac[6], key[RM_QUIC_KEY_LEN];
		int n;

		k.len = (__u8)rm_parse_hex(ky_enc[i].sid, k.sid, sizeof(k.sid));
		pl[0] = 0x41;
		n = rm_parse_hex(ky_enc[i].cid, pl + 1, RM_QUIC_CID_MAX);
		rm_parse_hex(KY_ENC_KEY, key, sizeof(key));
		memset(pl + 1 + n, 0xab, 20);
		r->path = ky_enc[i].path;
		r->key_len = n;
		r->svc = svc;
		r->len = ky_frame(r->frame, svcs[svc].port, pl,
				  (size_t)(1 + n + 20));
		r->want_node = v.node;
		r->check_cnt = RM_CNT_QUIC_CID_ROUTED;
		bench_node_mac(v.node, mac);
		keys = km ? bpf_map__fd(km) : -1;
		if (keys < 0 ||
		    dir_node(&d, v.node, mac, bench_dir_mac, 1, (__u32)svc) ||
		    bpf_map_update_elem(bpf_map__fd(d.skel->maps.rm_quic_sids),
					&k, &v, BPF_ANY) ||
		    ky_enc_service(&d, svc) ||
		    rm_quic_key_set(keys, (__u32)svc, key, "bench")) {
			fprintf(stderr, "keys: encrypted QUIC row: %s\n",
				rm_errmsg());
			return 1;
		}
	}

	/* verify, warm up, then interleaved rounds */
	for (i = 0; i < nrows; i++) {
		__u32 cnt = rows[i].check_cnt;
		double ns;

		/* the flow's first packet writes its table entry */
		rows[i].check_cnt = RM_CNT_FWD_TX;
		if (cnt == RM_CNT_CONN_HIT &&
		    ky_run(&d, &rows[i], 1, &ns, rows[i].status,
			   sizeof(rows[i].status)))
			bad = 1;
		rows[i].check_cnt = cnt;
		if (ky_run(&d, &rows[i], 1, &ns, rows[i].status,
			   sizeof(rows[i].status)) ||
		    ky_run(&d, &rows[i], repeat / 10, &ns, rows[i].status,
			   sizeof(rows[i].status)))
			bad = 1;
	}
	for (int rd = 0; rd < o->rounds; rd++)
		for (int n = 0; n < nrows; n++) {
			struct ky_row *r = &rows[rd % 2 ? nrows - 1 - n : n];

			if (r->status[0])
				continue;
			if (ky_run(&d, r, repeat, &r->ns[rd], r->status,
				   sizeof(r->status)))
				bad = 1;
		}

	/* bench_json_open() opens the part's object, bench_json_close()
	 * closes it */
	jf = bench_json_open(o, &j);
	if (!jf)
		return 1;
	rm_json_u64(&j, "repeat", repeat);
	rm_json_u64(&j, "ring_entries", ring.n);
	rm_json_arr_open(&j, "rows");
	printf("per packet in the kernel (bpf_prog_test_run, repeat %u, %d "
	       "rounds, median [min-max] ns); ring of %u nodes x 100 vnodes\n\n",
	       repeat, o->rounds, KY_NODES);
	printf("| path | key bytes | ns/packet | vs tcp SYN (flow hash) |\n");
	printf("|---|---|---|---|\n");
	for (i = 0; i < nrows; i++) {
		struct ky_row *r = &rows[i];

		if (!r->status[0])
			bench_stat_of(r->ns, o->rounds, &r->st);
	}
	for (i = 0; i < nrows; i++) {
		struct ky_row *r = &rows[i];
		char kl[16] = "-";

		if (r->key_len)
			snprintf(kl, sizeof(kl), "%d", r->key_len);
		if (r->status[0])
			printf("| %s | %s | FAILED: %s | |\n", r->path, kl,
			       r->status);
		else
			printf("| %s | %s | %.0f [%.0f-%.0f] | %.2fx |\n",
			       r->path, kl, r->st.med, r->st.min, r->st.max,
			       rows[1].status[0] ? 0 : r->st.med / rows[1].st.med);
		rm_json_obj_open(&j, NULL);
		rm_json_str(&j, "path", r->path);
		rm_json_u64(&j, "key_bytes", r->key_len);
		rm_json_str(&j, "status", r->status[0] ? r->status : "ok");
		if (!r->status[0])
			bench_json_stat(&j, "ns", &r->st);
		rm_json_obj_close(&j);
	}
	rm_json_arr_close(&j);
	bench_json_close(jf, &j);
	free(slots);
	rm_ring_free(&ring);
	for (i = 0; i < S_NR; i++) {
		free(rings[i].slots);
		rm_ring_free(&rings[i].ring);
	}
	dir_close(&d);
	return bad ? 3 : 0;
}
