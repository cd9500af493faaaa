// SPDX-License-Identifier: GPL-2.0
/*
 * rm_quic_server: a small HTTP/3 server on ngtcp2 + nghttp3 + GnuTLS for
 * the QUIC end-to-end test (tests/e2e/test_quic_ngtcp2.sh), and the worked
 * example of docs/quic.md: a QUIC-LB server issues only connection IDs
 * that carry its server ID.
 *
 *   rm_quic_server --name NODE --addr VIP --port 443 --cert F --key F
 *       --quic SIDLEN:NONCELEN[:CR[:CIDLEN|:self]] --server-id HEX
 *       [--reset-secret HEX] [--max-seconds 600]
 *
 * --quic is the service's --key quic:... text: every connection ID the
 * server issues, the Source Connection ID of its long headers and each
 * NEW_CONNECTION_ID, comes from rm_quic_cid_make() with the server ID
 * (the stock gtlsserver, random CIDs, is the test's control). --reset-secret,
 * shared by every node, derives the stateless reset tokens, so any node
 * can reset a connection whose packets it receives but does not hold:
 * a misrouted packet ends the connection at once, visibly. A request for
 * a path that starts with /hold waits for SIGUSR1 (connections held open
 * across a ring change). Each response body is "NODE CONN PATH", CONN
 * being the connection's first server CID in hex.
 *
 * stdout: one line per event, "EVENT key=value...":
 *   ready, accept (conn, client, dcid), cid (conn, cid: every CID issued),
 *   handshake, path (a packet of conn from a new client address, and
 *   the DCID it came with), request
 *   (held=0|1), response, close (why), stray (a short header of no
 *   connection here; reset=1 when a stateless reset went back), vn (a
 *   version negotiation sent), drop (a datagram that is no QUIC packet).
 * One thread, poll(); ends on SIGTERM/SIGINT or after --max-seconds.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <ringmaster/rm_quic.h>
#include "key.h"
#include "util.h"
#include "tool_args.h"

#define PROG_NAME "rm_quic_server"
#define SECRET_MAX 64
#define MAX_PKT 65536
#define BODY_MAX 256
#define TLS_PRIORITY                                                        \
	"%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:"         \
	"-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"         \
	"+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:"           \
	"+GROUP-SECP384R1:+GROUP-SECP521R1"

struct stream {
	int64_t id;
	char path[64];
	char body[BODY_MAX];
	size_t len;
	int held;
	struct stream *next;
};

struct conn {
	ngtcp2_crypto_conn_ref ref; /* GnuTLS finds the connection by it */
	ngtcp2_conn *q;
	nghttp3_conn *h3;
	gnutls_session_t tls;
	ngtcp2_cid scid;		/* its first CID: its name in the log */
	char name[2 * NGTCP2_MAX_CIDLEN + 1];
	struct sockaddr_storage peer; /* the last client address seen */
	socklen_t peerlen;
	struct stream *streams;
	ngtcp2_connection_close_error err;
	int dead; /* freed at the end of the loop's turn */
	struct conn *next;
};

/* Every CID a connection answers to (its own and the client's first
 * DCID) -> the connection: a list is plenty for a test's hundred. */
struct cidmap {
	ngtcp2_cid cid;
	struct conn *c;
	struct cidmap *next;
};

static struct {
	const char *name, *addr, *cert, *key;
	int port, released;
	long max_seconds;
	struct rm_quic_spec spec;
	__u8 sid[RM_QUIC_SID_MAX];
	__u8 secret[SECRET_MAX];
	size_t secretlen;
	int fd, sfd;
	struct sockaddr_storage local;
	socklen_t locallen;
	gnutls_certificate_credentials_t cred;
	struct conn *conns;
	struct cidmap *cids;
} g;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NGTCP2_SECONDS + (uint64_t)ts.tv_nsec;
}

static void event(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static const char *addr_str(const struct sockaddr *sa, char *out, size_t n)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;

		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
		port = ntohs(s->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)sa;

		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
		port = ntohs(s->sin6_port);
	}
	snprintf(out, n, "%s:%d", ip, port);
	return out;
}

static const char *cid_str(const uint8_t *b, size_t n, char *out)
{
	rm_format_hex(b, n, out);
	return out;
}

/* ---- connection IDs ------------------------------------------------------ */

/* A fresh CID of this server: its server ID, a fresh random nonce. */
static int cid_new(ngtcp2_cid *cid)
{
	__u8 rnd[RM_QUIC_CID_MAX];

	if (gnutls_rnd(GNUTLS_RND_RANDOM, rnd, sizeof(rnd)))
		return -1;
	cid->datalen = rm_quic_cid_make(&g.spec, g.sid, rnd, cid->data);
	return 0;
}

static int cid_add(const ngtcp2_cid *cid, struct conn *c)
{
	struct cidmap *m = calloc(1, sizeof(*m));

	if (!m)
		return -1;
	m->cid = *cid;
	m->c = c;
	m->next = g.cids;
	g.cids = m;
	return 0;
}

static struct conn *cid_find(const uint8_t *b, size_t n)
{
	struct cidmap *m;

	for (m = g.cids; m; m = m->next)
		if (m->cid.datalen == n && !memcmp(m->cid.data, b, n))
			return m->c;
	return NULL;
}

/* Forget one CID (cid) or every CID of c (cid NULL). */
static void cid_del(const ngtcp2_cid *cid, struct conn *c)
{
	struct cidmap **p = &g.cids, *m;

	while ((m = *p)) {
		if (cid ? ngtcp2_cid_eq(&m->cid, cid) : m->c == c) {
			*p = m->next;
			free(m);
		} else {
			p = &m->next;
		}
	}
}

static int reset_token(uint8_t *token, const ngtcp2_cid *cid)
{
	return ngtcp2_crypto_generate_stateless_reset_token(token, g.secret,
							    g.secretlen, cid);
}

/* ---- HTTP/3 --------------------------------------------------------------- */

static nghttp3_ssize body_read(nghttp3_conn *h3, int64_t id, nghttp3_vec *vec,
			       size_t veccnt, uint32_t *flags, void *user,
			       void *suser)
{
	struct stream *s = suser;

	(void)h3, (void)id, (void)veccnt, (void)user;
	vec[0].base = (uint8_t *)s->body;
	vec[0].len = s->len;
	*flags |= NGHTTP3_DATA_FLAG_EOF;
	return 1;
}

#define NV(n, v)                                                           \
	{                                                                  \
		(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v),  \
		    NGHTTP3_NV_FLAG_NONE                                   \
	}

static int respond(struct conn *c, struct stream *s)
{
	char clen[16], peer[64];
	nghttp3_data_reader dr = {.read_data = body_read};
	int rv;

	s->len = (size_t)snprintf(s->body, sizeof(s->body), "%s %s %s\n",
				  g.name, c->name, s->path);
	snprintf(clen, sizeof(clen), "%zu", s->len);
	nghttp3_nv nva[] = {NV(":status", "200"), NV("content-type", "text/plain"),
			    NV("content-length", clen)};
	rv = nghttp3_conn_submit_response(c->h3, s->id, nva, 3, &dr);
	if (rv)
		return -1;
	s->held = 0;
	event("response conn=%s stream=%lld client=%s", c->name,
	      (long long)s->id,
	      addr_str((struct sockaddr *)&c->peer, peer, sizeof(peer)));
	return 0;
}

static int h3_begin_headers(nghttp3_conn *h3, int64_t id, void *user,
			    void *suser)
{
	struct conn *c = user;
	struct stream *s = calloc(1, sizeof(*s));

	(void)suser;
	if (!s)
		return NGHTTP3_ERR_CALLBACK_FAILURE;
	s->id = id;
	s->next = c->streams;
	c->streams = s;
	nghttp3_conn_set_stream_user_data(h3, id, s);
	return 0;
}

static int h3_recv_header(nghttp3_conn *h3, int64_t id, int32_t token,
			  nghttp3_rcbuf *name, nghttp3_rcbuf *value,
			  uint8_t flags, void *user, void *suser)
{
	struct stream *s = suser;
	nghttp3_vec v = nghttp3_rcbuf_get_buf(value);

	(void)h3, (void)id, (void)name, (void)flags, (void)user;
	if (s && token == NGHTTP3_QPACK_TOKEN__PATH)
		snprintf(s->path, sizeof(s->path), "%.*s", (int)v.len,
			 (const char *)v.base);
	return 0;
}

static int h3_end_stream(nghttp3_conn *h3, int64_t id, void *user,
			 void *suser)
{
	struct conn *c = user;
	struct stream *s = suser;
	char peer[64];

	(void)h3;
	if (!s)
		return 0;
	s->held = !g.released && !strncmp(s->path, "/hold", 5);
	event("request conn=%s stream=%lld path=%s client=%s held=%d", c->name,
	      (long long)id, s->path[0] ? s->path : "-",
	      addr_str((struct sockaddr *)&c->peer, peer, sizeof(peer)),
	      s->held);
	if (!s->held && respond(c, s))
		return NGHTTP3_ERR_CALLBACK_FAILURE;
	return 0;
}

static int h3_stream_close(nghttp3_conn *h3, int64_t id, uint64_t code,
			   void *user, void *suser)
{
	struct conn *c = user;
	struct stream **p = &c->streams, *s;

	(void)h3, (void)code, (void)suser;
	while ((s = *p)) {
		if (s->id == id) {
			*p = s->next;
			free(s);
			break;
		}
		p = &s->next;
	}
	/* a client stream done: the client may open another */
	if (ngtcp2_is_bidi_stream(id))
		ngtcp2_conn_extend_max_streams_bidi(c->q, 1);
	return 0;
}

static int h3_consume(nghttp3_conn *h3, int64_t id, size_t n, void *user,
		      void *suser)
{
	struct conn *c = user;

	(void)h3, (void)suser;
	ngtcp2_conn_extend_max_stream_offset(c->q, id, n);
	ngtcp2_conn_extend_max_offset(c->q, n);
	return 0;
}

static int h3_recv_data(nghttp3_conn *h3, int64_t id, const uint8_t *data,
			size_t n, void *user, void *suser)
{
	(void)data;
	return h3_consume(h3, id, n, user, suser);
}

/* The HTTP/3 session and its three unidirectional streams, once 1-RTT
 * keys exist. */
static int h3_setup(struct conn *c)
{
	static const nghttp3_callbacks cb = {
	    .stream_close = h3_stream_close,
	    .recv_data = h3_recv_data,
	    .deferred_consume = h3_consume,
	    .begin_headers = h3_begin_headers,
	    .recv_header = h3_recv_header,
	    .end_stream = h3_end_stream,
	};
	nghttp3_settings settings;
	int64_t ctrl, enc, dec;

	if (c->h3)
		return 0;
	nghttp3_settings_default(&settings);
	if (nghttp3_conn_server_new(&c->h3, &cb, &settings,
				    nghttp3_mem_default(), c))
		return -1;
	nghttp3_conn_set_max_client_streams_bidi(
	    c->h3,
	    ngtcp2_conn_get_local_transport_params(c->q)->initial_max_streams_bidi);
	if (ngtcp2_conn_open_uni_stream(c->q, &ctrl, NULL) ||
	    nghttp3_conn_bind_control_stream(c->h3, ctrl) ||
	    ngtcp2_conn_open_uni_stream(c->q, &enc, NULL) ||
	    ngtcp2_conn_open_uni_stream(c->q, &dec, NULL) ||
	    nghttp3_conn_bind_qpack_streams(c->h3, enc, dec))
		return -1;
	return 0;
}

/* ---- QUIC callbacks ------------------------------------------------------ */

static int q_recv_stream_data(ngtcp2_conn *q, uint32_t flags, int64_t id,
			      uint64_t off, const uint8_t *data, size_t n,
			      void *user, void *suser)
{
	struct conn *c = user;
	nghttp3_ssize used;

	(void)q, (void)off, (void)suser;
	if (!c->h3)
		return 0;
	used = nghttp3_conn_read_stream(c->h3, id, data, n,
					flags & NGTCP2_STREAM_DATA_FLAG_FIN);
	if (used < 0) {
		ngtcp2_connection_close_error_set_application_error(
		    &c->err, nghttp3_err_infer_quic_app_error_code((int)used),
		    NULL, 0);
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	ngtcp2_conn_extend_max_stream_offset(c->q, id, (uint64_t)used);
	ngtcp2_conn_extend_max_offset(c->q, (uint64_t)used);
	return 0;
}

static int q_acked(ngtcp2_conn *q, int64_t id, uint64_t off, uint64_t n,
		   void *user, void *suser)
{
	struct conn *c = user;

	(void)q, (void)off, (void)suser;
	return c->h3 && nghttp3_conn_add_ack_offset(c->h3, id, n)
		   ? NGTCP2_ERR_CALLBACK_FAILURE
		   : 0;
}

static int q_stream_close(ngtcp2_conn *q, uint32_t flags, int64_t id,
			  uint64_t code, void *user, void *suser)
{
	struct conn *c = user;
	int rv;

	(void)q, (void)suser;
	if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
		code = NGHTTP3_H3_NO_ERROR;
	if (!c->h3)
		return 0;
	rv = nghttp3_conn_close_stream(c->h3, id, code);
	if (rv == NGHTTP3_ERR_STREAM_NOT_FOUND) {
		if (ngtcp2_is_bidi_stream(id))
			ngtcp2_conn_extend_max_streams_bidi(c->q, 1);
		return 0;
	}
	return rv ? NGTCP2_ERR_CALLBACK_FAILURE : 0;
}

static int q_extend_stream_data(ngtcp2_conn *q, int64_t id, uint64_t max,
				void *user, void *suser)
{
	struct conn *c = user;

	(void)q, (void)max, (void)suser;
	return c->h3 && nghttp3_conn_unblock_stream(c->h3, id)
		   ? NGTCP2_ERR_CALLBACK_FAILURE
		   : 0;
}

static int q_extend_remote_bidi(ngtcp2_conn *q, uint64_t max, void *user)
{
	struct conn *c = user;

	(void)q;
	if (c->h3)
		nghttp3_conn_set_max_client_streams_bidi(c->h3, max);
	return 0;
}

static void q_rand(uint8_t *dest, size_t n, const ngtcp2_rand_ctx *ctx)
{
	(void)ctx;
	(void)gnutls_rnd(GNUTLS_RND_RANDOM, dest, n);
}

/* The draft's rule: every CID the server hands the client carries its
 * server ID, so the client's next packets, from any address, reach it. */
static int q_new_cid(ngtcp2_conn *q, ngtcp2_cid *cid, uint8_t *token,
		     size_t len, void *user)
{
	struct conn *c = user;
	char hex[2 * NGTCP2_MAX_CIDLEN + 1];

	(void)q;
	if (cid_new(cid) || cid->datalen != len || reset_token(token, cid) ||
	    cid_add(cid, c))
		return NGTCP2_ERR_CALLBACK_FAILURE;
	event("cid conn=%s cid=%s", c->name,
	      cid_str(cid->data, cid->datalen, hex));
	return 0;
}

static int q_remove_cid(ngtcp2_conn *q, const ngtcp2_cid *cid, void *user)
{
	(void)q, (void)user;
	cid_del(cid, NULL);
	return 0;
}

static int q_handshake_done(ngtcp2_conn *q, void *user)
{
	struct conn *c = user;
	char peer[64];

	(void)q;
	event("handshake conn=%s client=%s", c->name,
	      addr_str((struct sockaddr *)&c->peer, peer, sizeof(peer)));
	return 0;
}

static int q_recv_tx_key(ngtcp2_conn *q, ngtcp2_crypto_level level,
			 void *user)
{
	(void)q;
	if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION)
		return 0;
	return h3_setup(user) ? NGTCP2_ERR_CALLBACK_FAILURE : 0;
}

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
	return ((struct conn *)ref->user_data)->q;
}

/* ---- connections --------------------------------------------------------- */

static void conn_free(struct conn *c)
{
	struct stream *s;

	cid_del(NULL, c);
	while ((s = c->streams)) {
		c->streams = s->next;
		free(s);
	}
	nghttp3_conn_del(c->h3);
	ngtcp2_conn_del(c->q);
	if (c->tls)
		gnutls_deinit(c->tls);
	free(c);
}

static int tls_new(struct conn *c)
{
	static const gnutls_datum_t alpn = {(unsigned char *)"h3", 2};

	if (gnutls_init(&c->tls, GNUTLS_SERVER | GNUTLS_NO_AUTO_SEND_TICKET |
				     GNUTLS_NO_END_OF_EARLY_DATA) ||
	    gnutls_priority_set_direct(c->tls, TLS_PRIORITY, NULL) ||
	    ngtcp2_crypto_gnutls_configure_server_session(c->tls) ||
	    gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, g.cred) ||
	    gnutls_alpn_set_protocols(c->tls, &alpn, 1, GNUTLS_ALPN_MANDATORY))
		return -1;
	gnutls_session_set_ptr(c->tls, &c->ref);
	return 0;
}

/* A connection for the client Initial hd from peer. */
static struct conn *conn_new(const ngtcp2_pkt_hd *hd,
			     const struct sockaddr *peer, socklen_t peerlen)
{
	static const ngtcp2_callbacks cb = {
	    .recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
	    .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
	    .handshake_completed = q_handshake_done,
	    .encrypt = ngtcp2_crypto_encrypt_cb,
	    .decrypt = ngtcp2_crypto_decrypt_cb,
	    .hp_mask = ngtcp2_crypto_hp_mask_cb,
	    .recv_stream_data = q_recv_stream_data,
	    .acked_stream_data_offset = q_acked,
	    .stream_close = q_stream_close,
	    .rand = q_rand,
	    .get_new_connection_id = q_new_cid,
	    .remove_connection_id = q_remove_cid,
	    .update_key = ngtcp2_crypto_update_key_cb,
	    .extend_max_remote_streams_bidi = q_extend_remote_bidi,
	    .extend_max_stream_data = q_extend_stream_data,
	    .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
	    .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
	    .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
	    .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
	    .recv_tx_key = q_recv_tx_key,
	};
	ngtcp2_path path = {
	    {(struct sockaddr *)&g.local, g.locallen},
	    {(struct sockaddr *)peer, peerlen},
	    NULL,
	};
	ngtcp2_settings settings;
	ngtcp2_transport_params params;
	struct conn *c = calloc(1, sizeof(*c));
	char hex[2 * NGTCP2_MAX_CIDLEN + 1], p[64];

	if (!c)
		return NULL;
	c->ref.get_conn = get_conn;
	c->ref.user_data = c;
	ngtcp2_connection_close_error_default(&c->err);
	memcpy(&c->peer, peer, peerlen);
	c->peerlen = peerlen;
	if (cid_new(&c->scid))
		goto fail;
	cid_str(c->scid.data, c->scid.datalen, c->name);

	ngtcp2_settings_default(&settings);
	settings.initial_ts = now_ns();
	settings.no_pmtud = 1;
	/* a hundred handshakes at once on a busy 2-CPU machine */
	settings.handshake_timeout = 60 * NGTCP2_SECONDS;
	ngtcp2_transport_params_default(&params);
	params.initial_max_stream_data_bidi_local = 256 * 1024;
	params.initial_max_stream_data_bidi_remote = 256 * 1024;
	params.initial_max_stream_data_uni = 256 * 1024;
	params.initial_max_data = 1024 * 1024;
	params.initial_max_streams_bidi = 100;
	params.initial_max_streams_uni = 3;
	params.max_idle_timeout = 300 * NGTCP2_SECONDS;
	params.active_connection_id_limit = 7;
	params.original_dcid = hd->dcid;
	params.stateless_reset_token_present = 1;
	if (reset_token(params.stateless_reset_token, &c->scid))
		goto fail;
	if (ngtcp2_conn_server_new(&c->q, &hd->scid, &c->scid, &path,
				   hd->version, &cb, &settings, &params, NULL,
				   c))
		goto fail;
	if (tls_new(c))
		goto fail;
	ngtcp2_conn_set_tls_native_handle(c->q, c->tls);
	/* the client's first DCID (its retransmitted Initials) and ours */
	if (cid_add(&hd->dcid, c) || cid_add(&c->scid, c))
		goto fail;
	c->next = g.conns;
	g.conns = c;
	event("accept conn=%s client=%s dcid=%s", c->name,
	      addr_str(peer, p, sizeof(p)),
	      cid_str(hd->dcid.data, hd->dcid.datalen, hex));
	return c;
fail:
	fprintf(stderr, "%s: cannot make a connection\n", PROG_NAME);
	conn_free(c);
	return NULL;
}

static void conn_close(struct conn *c, const char *why)
{
	if (c->dead)
		return;
	c->dead = 1;
	event("close conn=%s why=%s", c->name, why);
}

static void send_to(const uint8_t *buf, size_t n, const struct sockaddr *sa,
		    socklen_t salen)
{
	ssize_t w;

	do {
		w = sendto(g.fd, buf, n, 0, sa, salen);
	} while (w < 0 && errno == EINTR);
}

/* An error of ours: tell the client (CONNECTION_CLOSE), then forget. */
static void conn_fail(struct conn *c, int rv, const char *why)
{
	uint8_t buf[1500];
	ngtcp2_path_storage ps;
	ngtcp2_ssize n;

	if (!c->err.error_code)
		ngtcp2_connection_close_error_set_transport_error_liberr(
		    &c->err, rv, NULL, 0);
	ngtcp2_path_storage_zero(&ps);
	if (!ngtcp2_conn_is_in_closing_period(c->q) &&
	    !ngtcp2_conn_is_in_draining_period(c->q)) {
		n = ngtcp2_conn_write_connection_close(
		    c->q, &ps.path, NULL, buf, sizeof(buf), &c->err, now_ns());
		if (n > 0)
			send_to(buf, (size_t)n, ps.path.remote.addr,
				ps.path.remote.addrlen);
	}
	conn_close(c, why);
}

/* Send whatever the connection has: HTTP/3 stream data, ACKs, probes. */
static void conn_write(struct conn *c)
{
	uint8_t buf[1500];
	ngtcp2_path_storage ps;
	ngtcp2_pkt_info pi;
	uint64_t ts = now_ns();

	ngtcp2_path_storage_zero(&ps);
	for (int guard = 0; guard < 1000 && !c->dead; guard++) {
		nghttp3_vec vec[16];
		nghttp3_ssize nvec = 0;
		int64_t sid = -1;
		int fin = 0;
		ngtcp2_ssize n, ndata;
		uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;

		if (c->h3 && ngtcp2_conn_get_max_data_left(c->q)) {
			nvec = nghttp3_conn_writev_stream(c->h3, &sid, &fin,
							  vec, 16);
			if (nvec < 0) {
				conn_fail(c, NGTCP2_ERR_INTERNAL, "h3-error");
				return;
			}
		}
		if (fin)
			flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
		n = ngtcp2_conn_writev_stream(c->q, &ps.path, &pi, buf,
					      sizeof(buf), &ndata, flags, sid,
					      (const ngtcp2_vec *)vec,
					      (size_t)nvec, ts);
		if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
			nghttp3_conn_block_stream(c->h3, sid);
			continue;
		}
		if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
			nghttp3_conn_shutdown_stream_write(c->h3, sid);
			continue;
		}
		if (ndata >= 0 &&
		    nghttp3_conn_add_write_offset(c->h3, sid, (size_t)ndata)) {
			conn_fail(c, NGTCP2_ERR_INTERNAL, "h3-error");
			return;
		}
		if (n == NGTCP2_ERR_WRITE_MORE)
			continue;
		if (n < 0) {
			conn_fail(c, (int)n, "write-error");
			return;
		}
		if (n == 0)
			return;
		send_to(buf, (size_t)n, ps.path.remote.addr,
			ps.path.remote.addrlen);
	}
}

/* ---- packets --------------------------------------------------------------- */

/* A short header of no connection here: a stateless reset (when we have
 * the shared secret and the packet is long enough to answer smaller). */
static void stray(const uint8_t *dcid, size_t dlen, size_t pktlen,
		  const struct sockaddr *sa, socklen_t salen)
{
	uint8_t buf[64], token[NGTCP2_STATELESS_RESET_TOKENLEN], rnd[40];
	char hex[2 * NGTCP2_MAX_CIDLEN + 1], p[64];
	size_t rlen = pktlen > 22 ? pktlen - 22 : 0;
	ngtcp2_cid cid;
	ngtcp2_ssize n = -1;

	if (rlen > sizeof(rnd))
		rlen = sizeof(rnd);
	ngtcp2_cid_init(&cid, dcid, dlen);
	if (g.secretlen && rlen >= NGTCP2_MIN_STATELESS_RESET_RANDLEN &&
	    !reset_token(token, &cid) &&
	    !gnutls_rnd(GNUTLS_RND_NONCE, rnd, rlen)) {
		n = ngtcp2_pkt_write_stateless_reset(buf, sizeof(buf), token,
						     rnd, rlen);
		if (n > 0)
			send_to(buf, (size_t)n, sa, salen);
	}
	event("stray dcid=%s client=%s reset=%d", cid_str(dcid, dlen, hex),
	      addr_str(sa, p, sizeof(p)), n > 0);
}

static void on_packet(uint8_t *pkt, size_t len, struct sockaddr *sa,
		      socklen_t salen)
{
	ngtcp2_version_cid vc;
	ngtcp2_pkt_hd hd;
	ngtcp2_pkt_info pi = {0};
	struct conn *c;
	char p[64], hex[2 * NGTCP2_MAX_CIDLEN + 1];
	int rv;

	rv = ngtcp2_pkt_decode_version_cid(&vc, pkt, len,
					   rm_quic_cid_len(&g.spec));
	if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
		uint8_t buf[256];
		uint32_t sv[] = {NGTCP2_PROTO_VER_V1};
		ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(
		    buf, sizeof(buf), (uint8_t)(now_ns() & 0x7f), vc.scid,
		    vc.scidlen, vc.dcid, vc.dcidlen, sv, 1);

		if (n > 0)
			send_to(buf, (size_t)n, sa, salen);
		event("vn client=%s version=0x%08x", addr_str(sa, p, sizeof(p)),
		      vc.version);
		return;
	}
	if (rv) {
		event("drop client=%s len=%zu why=%s",
		      addr_str(sa, p, sizeof(p)), len, ngtcp2_strerror(rv));
		return;
	}
	c = cid_find(vc.dcid, vc.dcidlen);
	if (!c) {
		if (!(pkt[0] & 0x80)) {
			stray(vc.dcid, vc.dcidlen, len, sa, salen);
			return;
		}
		rv = ngtcp2_accept(&hd, pkt, len);
		if (rv) {
			event("drop client=%s len=%zu why=not-an-initial",
			      addr_str(sa, p, sizeof(p)), len);
			return;
		}
		c = conn_new(&hd, sa, salen);
		if (!c)
			return;
	} else if (c->dead) {
		return;
	}
	if (salen != c->peerlen || memcmp(sa, &c->peer, salen)) {
		memcpy(&c->peer, sa, salen);
		c->peerlen = salen;
		event("path conn=%s client=%s dcid=%s", c->name,
		      addr_str(sa, p, sizeof(p)),
		      cid_str(vc.dcid, vc.dcidlen, hex));
	}
	ngtcp2_path path = {
	    {(struct sockaddr *)&g.local, g.locallen},
	    {sa, salen},
	    NULL,
	};
	rv = ngtcp2_conn_read_pkt(c->q, &path, &pi, pkt, len, now_ns());
	if (rv == NGTCP2_ERR_DRAINING)
		conn_close(c, "client");
	else if (rv == NGTCP2_ERR_CRYPTO)
		conn_fail(c, rv, "tls");
	else if (rv)
		conn_fail(c, rv, "read-error");
}

static void on_readable(void)
{
	static uint8_t buf[MAX_PKT];

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		ssize_t n = recvfrom(g.fd, buf, sizeof(buf), MSG_DONTWAIT,
				     (struct sockaddr *)&ss, &sl);

		if (n < 0)
			return;
		if (n > 0)
			on_packet(buf, (size_t)n, (struct sockaddr *)&ss, sl);
	}
}

/* Timers, writes, and the dead swept out; the next wakeup in ms. */
static int service_conns(void)
{
	struct conn **p = &g.conns, *c;
	uint64_t now = now_ns(), next = UINT64_MAX, exp;

	for (c = g.conns; c; c = c->next) {
		if (c->dead)
			continue;
		if (ngtcp2_conn_get_expiry(c->q) <= now) {
			int rv = ngtcp2_conn_handle_expiry(c->q, now);

			if (rv == NGTCP2_ERR_IDLE_CLOSE) {
				conn_close(c, "idle");
				continue;
			}
			if (rv) {
				conn_fail(c, rv, "timer-error");
				continue;
			}
		}
		conn_write(c);
	}
	while ((c = *p)) {
		if (c->dead) {
			*p = c->next;
			conn_free(c);
			continue;
		}
		exp = ngtcp2_conn_get_expiry(c->q);
		if (exp < next)
			next = exp;
		p = &c->next;
	}
	now = now_ns();
	if (next == UINT64_MAX)
		return 1000;
	if (next <= now)
		return 0;
	exp = (next - now + 999999) / 1000000;
	return exp > 1000 ? 1000 : (int)exp;
}

/* SIGUSR1: answer every held request, and hold no more. */
static void release_held(void)
{
	struct conn *c;
	struct stream *s;
	int n = 0;

	for (c = g.conns; c; c = c->next)
		for (s = c->streams; s && !c->dead; s = s->next)
			if (s->held) {
				if (respond(c, s))
					conn_fail(c, NGTCP2_ERR_INTERNAL,
						  "h3-error");
				n++;
			}
	g.released = 1;
	event("release requests=%d", n);
}

/* ---- setup ----------------------------------------------------------------- */

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: %s --name NODE --addr IP --port PORT --cert PEM --key PEM\n"
		"       --quic SIDLEN:NONCELEN[:CR[:CIDLEN|:self]] --server-id HEX\n"
		"       [--reset-secret HEX] [--max-seconds N]\n",
		PROG_NAME);
	exit(rc);
}

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"name", required_argument, NULL, 'n'},
	    {"addr", required_argument, NULL, 'a'},
	    {"port", required_argument, NULL, 'p'},
	    {"cert", required_argument, NULL, 'c'},
	    {"key", required_argument, NULL, 'k'},
	    {"quic", required_argument, NULL, 'q'},
	    {"server-id", required_argument, NULL, 's'},
	    {"reset-secret", required_argument, NULL, 'r'},
	    {"max-seconds", required_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char *spec = NULL, *sid = NULL, *why = "";
	char text[64];
	struct rm_key_spec k;
	int o, n;

	g.addr = "0.0.0.0";
	g.max_seconds = 600;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'n': g.name = optarg; break;
		case 'a': g.addr = optarg; break;
		case 'p':
			g.port = (int)tool_parse_long(PROG_NAME, optarg, 1,
						      65535, "--port");
			break;
		case 'c': g.cert = optarg; break;
		case 'k': g.key = optarg; break;
		case 'q': spec = optarg; break;
		case 's': sid = optarg; break;
		case 'r':
			n = rm_parse_hex(optarg, g.secret, sizeof(g.secret));
			if (n < 16) {
				fprintf(stderr, "%s: --reset-secret: 16 to %d "
					"bytes of hex\n", PROG_NAME, SECRET_MAX);
				exit(2);
			}
			g.secretlen = (size_t)n;
			break;
		case 'm':
			g.max_seconds = tool_parse_long(PROG_NAME, optarg, 1,
							86400, "--max-seconds");
			break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc || !g.name || !g.port || !g.cert || !g.key ||
	    !spec || !sid)
		usage(2);
	/* the same text as the service's --key quic:... */
	snprintf(text, sizeof(text), "%s%s", strncmp(spec, "quic:", 5) ?
		 "quic:" : "", spec);
	if (rm_parse_keyspec(text, &k, &why) || k.kind != RM_KEY_QUIC) {
		fprintf(stderr, "%s: --quic %s: %s\n", PROG_NAME, spec, why);
		exit(2);
	}
	g.spec = k.quic;
	if (rm_parse_hex(sid, g.sid, sizeof(g.sid)) != g.spec.sid_len) {
		fprintf(stderr, "%s: --server-id: %u bytes of hex (the "
			"configuration's server ID length)\n", PROG_NAME,
			g.spec.sid_len);
		exit(2);
	}
}

static int sock_open(void)
{
	struct sockaddr_in *s4 = (void *)&g.local;
	struct sockaddr_in6 *s6 = (void *)&g.local;

	memset(&g.local, 0, sizeof(g.local));
	if (inet_pton(AF_INET, g.addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)g.port);
		g.locallen = sizeof(*s4);
	} else if (inet_pton(AF_INET6, g.addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)g.port);
		g.locallen = sizeof(*s6);
	} else {
		fprintf(stderr, "%s: --addr %s: no IP address\n", PROG_NAME,
			g.addr);
		return -1;
	}
	/* bound to the VIP: replies leave from the address the client
	 * sent to, as QUIC requires */
	g.fd = socket(g.local.ss_family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (g.fd < 0 ||
	    bind(g.fd, (struct sockaddr *)&g.local, g.locallen) < 0) {
		fprintf(stderr, "%s: bind %s:%d: %s\n", PROG_NAME, g.addr,
			g.port, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	sigset_t mask;
	uint64_t end;
	char hex[2 * RM_QUIC_SID_MAX + 1];
	int rv, timeout = 0;

	parse_args(argc, argv);
	if (gnutls_certificate_allocate_credentials(&g.cred) ||
	    (rv = gnutls_certificate_set_x509_key_file(
		 g.cred, g.cert, g.key, GNUTLS_X509_FMT_PEM)) < 0) {
		fprintf(stderr, "%s: certificate %s, key %s: cannot load\n",
			PROG_NAME, g.cert, g.key);
		return 1;
	}
	if (sock_open())
		return 1;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	g.sfd = signalfd(-1, &mask, SFD_NONBLOCK);
	if (g.sfd < 0) {
		perror(PROG_NAME ": signalfd");
		return 1;
	}
	event("ready name=%s port=%d server-id=%s", g.name, g.port,
	      cid_str(g.sid, g.spec.sid_len, hex));
	end = now_ns() + (uint64_t)g.max_seconds * NGTCP2_SECONDS;
	for (;;) {
		struct pollfd pfd[2] = {{g.fd, POLLIN, 0}, {g.sfd, POLLIN, 0}};
		struct signalfd_siginfo si;

		if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents &&
		    read(g.sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo != SIGUSR1)
				break;
			release_held();
		}
		if (pfd[0].revents)
			on_readable();
		timeout = service_conns();
		if (now_ns() > end) {
			event("exit why=max-seconds");
			break;
		}
	}
	while (g.conns) {
		struct conn *c = g.conns;

		g.conns = c->next;
		conn_free(c);
	}
	gnutls_certificate_free_credentials(g.cred);
	close(g.fd);
	close(g.sfd);
	return 0;
}
