/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small etcd v3 client over etcd's HTTP/JSON gateway (libcurl for HTTP,
 * json-c for JSON): read one key, compare-and-swap it, and wait on a
 * watch. Keys and values travel base64-encoded, revisions as decimal
 * strings, as the gateway speaks them. TLS (CA, client certificate and
 * key) and user/password auth are handed to libcurl and etcd as given.
 *
 * With a user, one token from /v3/auth/authenticate is kept in the
 * options and sent with every request; when etcd says it is no longer
 * valid (simple tokens expire after etcd's --auth-token-ttl unused) a new
 * one is asked for and the request made once more.
 *
 * Functions return 0 or a negative errno: -ENOENT the key does not exist,
 * -ESTALE a compare-and-swap found another mod_revision, -EHOSTUNREACH
 * etcd could not be reached, its TLS session failed or it answered with
 * an error, -EACCES etcd refused us (wrong password, no user given while
 * its auth is on, no permission on the key), -EPROTO an answer that is
 * not what the gateway sends, -EINTR a wait ended by *stop. Then
 * rm_etcd_errmsg() says what happened and, when we know it, the fix.
 */
#ifndef RM_ETCD_H
#define RM_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <linux/types.h>

#ifndef RM_ETCD_TOKEN_MAX
#define RM_ETCD_TOKEN_MAX 1024 /* simple tokens: ~20 chars, JWT: ~300 */
#endif

struct rm_etcd_opts {
	const char *url;      /* http(s)://host:port, no trailing path */
	const char *cacert;   /* TLS: CA bundle to verify etcd with */
	const char *cert;     /* TLS: client certificate */
	const char *key;      /* TLS: client key */
	const char *user;     /* auth: etcd user (with password) */
	const char *password;
	long timeout_ms;      /* one request, connect included */
	char token[RM_ETCD_TOKEN_MAX]; /* auth: current token ("" none yet) */
	unsigned long renewals; /* auth: tokens renewed after etcd expired one */
};

struct rm_etcd_kv {
	char *value;	     /* malloc'd, NUL-terminated (len excludes it) */
	size_t len;
	__u64 mod_revision;  /* of the key */
	__u64 revision;	     /* of the store when read */
};

const char *rm_etcd_errmsg(void);
/* Once per process, before threads: loads libcurl when url is https://
 * or the caller will watch (rm_etcd_wait); plain http:// requests go
 * without it (http_plain.h). */
int rm_etcd_global_init(const char *url, bool watch);

int rm_etcd_get(struct rm_etcd_opts *o, const char *key,
		struct rm_etcd_kv *out);
/* Put value at key if the key's mod_revision is expect (0: the key must
 * not exist). On success *new_rev is the revision written; on -ESTALE
 * *new_rev is the key's current mod_revision (0: absent). */
int rm_etcd_cas(struct rm_etcd_opts *o, const char *key,
		const char *value, size_t len, __u64 expect, __u64 *new_rev);
/* Watch key from revision start on and return 0 at the first event (a
 * put or delete at or after start), -ETIMEDOUT after wait_ms without
 * one, -EINTR as soon as *stop is set. */
int rm_etcd_wait(struct rm_etcd_opts *o, const char *key, __u64 start,
		 long wait_ms, volatile sig_atomic_t *stop);
void rm_etcd_kv_free(struct rm_etcd_kv *kv);

/* base64 (RFC 4648, padded). Encode: out needs 4 * ((n + 2) / 3) + 1.
 * Decode: returns the length or -EINVAL; out needs 3 * (len / 4) + 1. */
size_t rm_b64_encode(const void *in, size_t n, char *out);
int rm_b64_decode(const char *in, size_t len, void *out);

#endif /* RM_ETCD_H */
