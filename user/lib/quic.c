// SPDX-License-Identifier: GPL-2.0
/* QUIC services in userspace: a CID's node, and routable CIDs. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "director_obj.h"
#include "quic.h"
#include "quic_key.skel.h"
#include "ring.h"
#include "state.h"
#include "state_int.h"
#include "util.h"

const char *rm_quic_res_name(int res)
{
	static const char *const n[RM_QUIC_RES_NR] = {
	    [RM_QUIC_OK] = "server-id",
	    [RM_QUIC_CONFIG] = "config",
	    [RM_QUIC_LENGTH] = "cid-length",
	    [RM_QUIC_UNKNOWN] = "unknown-server",
	    [RM_QUIC_TRUNCATED] = "truncated",
	    [RM_QUIC_CID_TOO_LONG] = "cid-too-long",
	    [RM_QUIC_NO_KEY] = "no-key",
	    [RM_QUIC_DECRYPT] = "decrypt-failed",
	};

	return res >= 0 && res < RM_QUIC_RES_NR ? n[res] : "?";
}

/* bpf/quic.h's rm_quic_sid_node() on the live map and s's records. */
static bool sid_node(struct rm_state *st, const struct rm_snap *s,
		     const struct rm_quic_sid_key *k, __u32 *node)
{
	struct rm_quic_sid_node v;
	const struct rm_node *n;

	if (bpf_map_lookup_elem(st->fd[RM_M_QUIC_SIDS], k, &v) ||
	    v.node >= RM_MAX_NODES)
		return false;
	n = &s->node[v.node];
	if (n->gen != v.gen || n->svc_id != k->svc_id ||
	    (n->state != RM_NODE_ACTIVE && n->state != RM_NODE_DRAINING))
		return false;
	*node = v.node;
	return true;
}

/* Service svc's key from the pinned rm_quic_keys, for nettle. 0, or
 * -ENOKEY when it has none (or the director no crypto). */
static int svc_aes(const char *pin_dir, __u32 svc, struct rm_quic_aes_user *a)
{
	struct rm_quic_key k;
	int fd = rm_quic_keys_open(pin_dir), err;

	if (fd < 0)
		return -ENOKEY;
	err = rm_quic_key_get(fd, svc, &k);
	close(fd);
	if (!err && !k.set)
		err = -ENOKEY;
	if (!err)
		rm_quic_aes_init(a, k.key);
	explicit_bzero(&k, sizeof(k));
	return err;
}

/* bpf/quic_crypt.h's rm_quic_decode_enc() with nettle's AES */
static int decode_enc(struct rm_state *st, __u32 svc,
		      const struct rm_quic_spec *q, const struct rm_quic_cid *c,
		      struct rm_quic_sid_key *k)
{
	struct rm_quic_aes_user a;
	struct rm_quic_ws w = {0};
	int res = rm_quic_check(q, c);

	if (res != RM_QUIC_OK)
		return res;
	if (svc_aes(st->pin_dir, svc, &a))
		return RM_QUIC_NO_KEY;
	res = rm_quic_decode_aes(q, c, k, &a, &w);
	explicit_bzero(&a, sizeof(a));
	return res;
}

int rm_quic_owner(struct rm_state *st, const struct rm_snap *s, __u32 svc,
		  const __u8 *cid, __u32 len, bool initial,
		  struct rm_quic_route *out)
{
	const struct rm_svc_meta *m = &s->svc[svc];
	struct rm_slot *slots = NULL;
	struct rm_quic_cid c = {0};
	__u32 nslots;
	int err;

	memset(out, 0, sizeof(*out));
	if (svc >= RM_MAX_SERVICES || !m->in_use ||
	    m->keyspec.kind != RM_KEY_QUIC)
		return -EINVAL;
	c.pkt = initial ? RM_QUIC_PKT_INITIAL : RM_QUIC_PKT_LONG;
	if (len > RM_QUIC_CID_MAX) {
		out->res = RM_QUIC_CID_TOO_LONG;
	} else {
		memcpy(c.w, cid, len);
		c.len = len;
		out->res = m->keyspec.quic.enc
			       ? decode_enc(st, svc, &m->keyspec.quic, &c,
					    &out->sid)
			       : rm_quic_decode(&m->keyspec.quic, &c,
						&out->sid);
		out->sid.svc_id = svc;
		if (out->res == RM_QUIC_OK &&
		    !sid_node(st, s, &out->sid, &out->node))
			out->res = RM_QUIC_UNKNOWN;
	}
	out->counter = rm_quic_counter(&c, out->res);
	if (out->res == RM_QUIC_OK)
		return 0;
	if (out->res == RM_QUIC_CID_TOO_LONG)
		return -EINVAL; /* the flow decides: no CID to look up */
	out->hash = rm_quic_cid_hash(&s->cfg.seed, &c);
	err = rm_state_ring_slots(st, svc, &slots, &nslots);
	if (err)
		return err;
	err = rm_ring_lookup(slots, nslots, out->hash, &out->node) ||
		      out->node >= RM_MAX_NODES
		  ? -ENOENT
		  : 0;
	free(slots);
	return err;
}

int rm_quic_cids(const struct rm_state *st, const struct rm_snap *s,
		 __u32 node, __u32 count, __u8 *out, __u32 *len)
{
	const struct rm_node *n = &s->node[node];
	const struct rm_quic_spec *q;
	struct rm_quic_aes_user a;
	__u8 rnd[RM_QUIC_CID_MAX];
	int made;

	if (node >= RM_MAX_NODES || n->state == RM_NODE_FREE ||
	    n->svc_id >= RM_MAX_SERVICES ||
	    s->svc[n->svc_id].keyspec.kind != RM_KEY_QUIC ||
	    !n->quic_sid_len)
		return -EINVAL;
	q = &s->svc[n->svc_id].keyspec.quic;
	if (q->enc && svc_aes(st->pin_dir, n->svc_id, &a))
		return -ENOKEY;
	for (__u32 i = 0; i < count; i++) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return -errno;
		made = q->enc ? rm_quic_cid_make_aes(
				    q, n->quic_sid, rnd,
				    out + (size_t)i * RM_QUIC_CID_MAX, &a)
			      : (int)rm_quic_cid_make(
				    q, n->quic_sid, rnd,
				    out + (size_t)i * RM_QUIC_CID_MAX);
		if (made < 0)
			return made;
		*len = (__u32)made;
	}
	if (q->enc)
		explicit_bzero(&a, sizeof(a));
	return 0;
}

int rm_quic_keys_open(const char *pin_dir)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", pin_dir, RM_QUIC_KEYS_MAP);
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

int rm_quic_key_get(int keys_fd, __u32 svc, struct rm_quic_key *key)
{
	memset(key, 0, sizeof(*key));
	return bpf_map_lookup_elem(keys_fd, &svc, key) ? -errno : 0;
}

/* Make service svc's context from its record (none if unset). */
static int key_load(int keys_fd, __u32 svc)
{
	struct rm_quic_key_args args = {.svc_id = svc};
	/* a syscall program's context comes back in ctx_in */
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &args,
		    .ctx_size_in = sizeof(args));
	struct quic_key_bpf *skel = quic_key_bpf__open();
	int err;

	if (!skel)
		return rm_state_fail(-errno, "cannot open the QUIC key "
				     "program: %s", strerror(errno));
	err = bpf_map__reuse_fd(skel->maps.rm_quic_keys, keys_fd);
	err = err ?: rm_quic_kptr_tag(skel->obj);
	err = err ?: quic_key_bpf__load(skel);
	if (err) {
		rm_state_fail(err, "cannot load the QUIC key program: %s "
			      "(a kernel with the BPF crypto kfuncs, Linux "
			      "6.10+, is needed)", strerror(-err));
		goto out;
	}
	err = bpf_prog_test_run_opts(
	    bpf_program__fd(skel->progs.rm_quic_key_load), &opts);
	if (err)
		err = rm_state_fail(-errno, "cannot run the QUIC key program: "
				    "%s", strerror(errno));
	else if (args.err)
		err = rm_state_fail(args.err, "the kernel refused the service's "
				    "AES-128-ECB key: %s (is ecb(aes) in "
				    "/proc/crypto?)", strerror(-args.err));
out:
	quic_key_bpf__destroy(skel);
	return err;
}

int rm_quic_key_set(int keys_fd, __u32 svc, const __u8 *key,
		    const char *file)
{
	struct rm_quic_key v = {0};
	int err;

	if (key) {
		memcpy(v.key, key, RM_QUIC_KEY_LEN);
		v.set = 1;
		snprintf(v.file, sizeof(v.file), "%s", file ? file : "");
	}
	/* the write releases the old context: the program makes the new */
	err = bpf_map_update_elem(keys_fd, &svc, &v, BPF_ANY) ? -errno : 0;
	explicit_bzero(&v, sizeof(v));
	if (err)
		return rm_state_fail(err, "cannot write the key of service "
				     "%u: %s", svc, strerror(-err));
	return key_load(keys_fd, svc);
}

int rm_quic_key_read(const char *path, __u8 *key, const char **why)
{
	char buf[128], *p, *e;
	ssize_t n;
	int fd;

	*why = "cannot be read";
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = 0;
	for (p = buf; isspace((unsigned char)*p); p++)
		;
	for (e = p; *e && !isspace((unsigned char)*e); e++)
		;
	*why = "expected 32 hex digits (a 16-byte AES-128 key), e.g. from "
	       "`openssl rand -hex 16`";
	for (char *t = e; *t; t++)
		if (!isspace((unsigned char)*t))
			return -EINVAL;
	*e = 0;
	n = e - p == 2 * RM_QUIC_KEY_LEN &&
	    rm_parse_hex(p, key, RM_QUIC_KEY_LEN) == RM_QUIC_KEY_LEN;
	explicit_bzero(buf, sizeof(buf)); /* a secret: no copy left behind */
	return n ? 0 : -EINVAL;
}
