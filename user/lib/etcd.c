// SPDX-License-Identifier: GPL-2.0
/* etcd v3 through its HTTP/JSON gateway: see etcd.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
/* the calls below go through pointers (rm_curl), which curl's
 * type-checking macros would not let through */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <json-c/json.h>
#include "etcd.h"
#include "http_plain.h"

/* libcurl is opened on first use, not linked: it pulls in some thirty
 * libraries (TLS, Kerberos, LDAP, ...) whose loading and relocation cost
 * every ringctl command about 20 ms, and only publish and ringsync talk
 * to etcd. rm_etcd_global_init() fills this before any other call here. */
#define RM_CURL_FNS(X)                                                     \
	X(global_init, CURLcode, (long))                                   \
	X(easy_init, CURL *, (void))                                       \
	X(easy_setopt, CURLcode, (CURL *, CURLoption, ...))                \
	X(easy_perform, CURLcode, (CURL *))                                \
	X(easy_getinfo, CURLcode, (CURL *, CURLINFO, ...))                 \
	X(easy_strerror, const char *, (CURLcode))                         \
	X(easy_cleanup, void, (CURL *))                                    \
	X(slist_append, struct curl_slist *, (struct curl_slist *, const char *)) \
	X(slist_free_all, void, (struct curl_slist *))
#define RM_CURL_PTR(name, ret, args) ret(*name) args;
static struct {
	RM_CURL_FNS(RM_CURL_PTR)
} rm_curl;
#undef RM_CURL_PTR
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init rm_curl.global_init
#define curl_easy_init rm_curl.easy_init
#define curl_easy_setopt rm_curl.easy_setopt
#define curl_easy_perform rm_curl.easy_perform
#define curl_easy_getinfo rm_curl.easy_getinfo
#define curl_easy_strerror rm_curl.easy_strerror
#define curl_easy_cleanup rm_curl.easy_cleanup
#define curl_slist_append rm_curl.slist_append
#define curl_slist_free_all rm_curl.slist_free_all
#define RM_LIBCURL "libcurl.so.4"

static __thread char errbuf[1024];

static int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return err;
}

const char *rm_etcd_errmsg(void)
{
	return errbuf;
}

static int curl_open(void)
{
	void *h;

	if (rm_curl.global_init)
		return 0;
	h = dlopen(RM_LIBCURL, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return fail(-ENOENT, "cannot load %s (%s): install libcurl4 "
			    "(Debian: apt-get install libcurl4)", RM_LIBCURL,
			    dlerror());
#define RM_CURL_SYM(name, ret, args)                                       \
	if (!(*(void **)&rm_curl.name = dlsym(h, "curl_" #name)))          \
		return fail(-ENOENT, "%s has no curl_" #name, RM_LIBCURL);
	RM_CURL_FNS(RM_CURL_SYM)
#undef RM_CURL_SYM
	return 0;
}

/* libcurl loaded and initialised, once: before the first https://
 * request or watch (rm_etcd_global_init() does it early for a caller
 * that will need it) */
static int curl_ready(void)
{
	static bool done;
	int err;

	if (done)
		return 0;
	err = curl_open();
	if (err)
		return err;
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return fail(-ENOMEM, "curl_global_init failed");
	done = true;
	return 0;
}

int rm_etcd_global_init(const char *url, bool watch)
{
	return watch || !rm_http_plain_url(url) ? curl_ready() : 0;
}

/* ---- base64 --------------------------------------------------------- */

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t rm_b64_encode(const void *in, size_t n, char *out)
{
	const unsigned char *p = in;
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = p[i] << 16;

		if (i + 1 < n)
			v |= p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = 0;
	return o;
}

int rm_b64_decode(const char *in, size_t len, void *out)
{
	unsigned char *q = out;
	unsigned v = 0;
	int bits = 0, o = 0;

	if (len % 4)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		const char *c = strchr(b64, in[i]);

		if (in[i] == '=') {
			/* padding only in the last two places */
			if (i + 2 < len || (i + 1 < len && in[i + 1] != '='))
				return -EINVAL;
			break;
		}
		if (!in[i] || !c)
			return -EINVAL;
		v = v << 6 | (unsigned)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			q[o++] = (unsigned char)(v >> bits);
		}
	}
	q[o] = 0;
	return o;
}

/* ---- HTTP ------------------------------------------------------------- */

struct buf {
	char *p;
	size_t n;
};

static size_t buf_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb;
	char *g = realloc(b->p, b->n + n + 1);

	if (!g)
		return 0;
	memcpy(g + b->n, data, n);
	b->p = g;
	b->n += n;
	b->p[b->n] = 0;
	return n;
}

static __u64 num(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return 0;
	/* the gateway writes 64-bit numbers as decimal strings */
	if (json_object_is_type(v, json_type_string))
		return strtoull(json_object_get_string(v), NULL, 10);
	return (__u64)json_object_get_int64(v);
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (o)
		json_object_object_get_ex(o, key, &v);
	return v;
}

/* One request's handle; curl's own words on a failure go to cerr. */
static CURL *handle(const struct rm_etcd_opts *o, const char *path,
		    struct curl_slist **hdrs, char *url, size_t url_len,
		    char *cerr)
{
	CURL *c = curl_easy_init();
	char auth[RM_ETCD_TOKEN_MAX + 32];

	if (!c)
		return NULL;
	snprintf(url, url_len, "%s%s", o->url, path);
	cerr[0] = 0;
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
			 o->timeout_ms ? o->timeout_ms : 2000L);
	if (o->cacert)
		curl_easy_setopt(c, CURLOPT_CAINFO, o->cacert);
	if (o->cert)
		curl_easy_setopt(c, CURLOPT_SSLCERT, o->cert);
	if (o->key)
		curl_easy_setopt(c, CURLOPT_SSLKEY, o->key);
	if (o->user && *o->token) {
		snprintf(auth, sizeof(auth), "Authorization: %s", o->token);
		*hdrs = curl_slist_append(*hdrs, auth);
	}
	*hdrs = curl_slist_append(*hdrs, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
	return c;
}

/* etcd closed the TLS session: it refused our client certificate, or
 * wants one. */
static const char *tls_ended_hint(const struct rm_etcd_opts *o)
{
	return o->cert ? ": etcd ended the TLS session: is the --cert "
			 "certificate signed by the CA etcd trusts (its "
			 "--trusted-ca-file)?"
		       : ": etcd ended the TLS session: it requires a client "
			 "certificate (etcd --client-cert-auth): give --cert "
			 "FILE --tls-key FILE";
}

/* A transfer that failed: curl's words, and which option fixes it when
 * the failure says (curl alone names no option). */
static int transport_error(const struct rm_etcd_opts *o, const char *url,
			   CURLcode rc, const char *cerr)
{
	bool tls = !strncmp(o->url, "https:", 6);
	const char *hint = "";

	switch (rc) {
	case CURLE_PEER_FAILED_VERIFICATION:
		hint = o->cacert
			   ? ": etcd's certificate is not signed by the --cacert "
			     "CA, or does not name the --etcd host in its "
			     "subjectAltName"
			   : ": etcd's certificate is not signed by a CA this "
			     "host trusts: give the CA that signed it with "
			     "--cacert FILE";
		break;
	case CURLE_SSL_CACERT_BADFILE:
		hint = ": the --cacert file is not a readable PEM CA "
		       "certificate";
		break;
	case CURLE_SSL_CERTPROBLEM:
		hint = ": --cert must be a readable PEM certificate and "
		       "--tls-key its key";
		break;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		if (strstr(cerr, "wrong version number"))
			hint = ": etcd does not speak TLS there: use an "
			       "http:// URL";
		else if (tls)
			hint = tls_ended_hint(o);
		break;
	case CURLE_GOT_NOTHING:
		/* under TLS 1.3 a refused client certificate ends the
		 * session after curl's handshake: an empty reply, a failed
		 * send or a failed read, as timing has it */
		hint = tls ? tls_ended_hint(o)
			   : ": if etcd serves TLS, use an https:// URL with "
			     "--cacert";
		break;
	default:
		break;
	}
	return fail(-EHOSTUNREACH, "etcd %s: %s%s", url,
		    *cerr ? cerr : curl_easy_strerror(rc), hint);
}

/* etcd's error strings (stable across 3.x) are all that tells an expired
 * token from a wrong password: the gateway maps both to HTTP 4xx. */
static int etcd_error(const struct rm_etcd_opts *o, const char *url,
		      long code, const char *msg)
{
	if (strstr(msg, "invalid auth token"))
		return fail(-EKEYEXPIRED, "etcd %s: %s", url, msg);
	if (strstr(msg, "authentication failed"))
		return fail(-EACCES, "etcd %s: %s: user '%s' and the password "
			    "in --password-file do not match an etcd user",
			    url, msg, o->user ? o->user : "");
	if (strstr(msg, "user name is empty"))
		return fail(-EACCES, "etcd %s: %s: etcd's auth is enabled: "
			    "give --user NAME --password-file FILE", url, msg);
	if (strstr(msg, "permission denied"))
		return fail(-EACCES, "etcd %s: %s: grant user '%s' a role "
			    "with access to the key (etcdctl role "
			    "grant-permission)",
			    url, msg, o->user ? o->user : "");
	if (strstr(msg, "CommonName of client"))
		return fail(-EACCES, "etcd %s: %s: with auth enabled, etcd's "
			    "gateway refuses client certificates that carry a "
			    "CN: issue the --cert certificate without one "
			    "(e.g. subject /O=NAME)", url, msg);
	if (strstr(msg, "authentication is not enabled"))
		return fail(-EACCES, "etcd %s: %s: drop --user", url, msg);
	/* The gateway's gRPC dial to etcd itself failed; the wording
	 * ("connection closed", "failed to write client preface: ...
	 * connection reset by peer") depends on who sees the TLS alert
	 * first. */
	if ((strstr(msg, "connection closed") ||
	     strstr(msg, "connection error")) &&
	    !strncmp(o->url, "https:", 6))
		return fail(-EHOSTUNREACH, "etcd %s: %s: etcd's gateway could "
			    "not reach etcd itself: under --client-cert-auth "
			    "etcd's --cert-file must allow clientAuth too "
			    "(extendedKeyUsage serverAuth,clientAuth)", url,
			    msg);
	if (strstr(msg, "HTTP request to an HTTPS server"))
		return fail(-EHOSTUNREACH, "etcd %s: %s: use an https:// URL",
			    url, msg);
	return fail(-EHOSTUNREACH, "etcd %s: HTTP %ld: %s", url, code, msg);
}

/* The first line of a text answer, for a message. */
static const char *first_line(char *text, size_t max)
{
	if (!text)
		return "empty answer";
	text[strcspn(text, "\r\n")] = 0;
	if (strlen(text) > max)
		text[max] = 0;
	return text;
}

/* An answer's body to JSON, or etcd's error from it. */
static int answer_json(const struct rm_etcd_opts *o, const char *url,
		       long code, const char *text, json_object **out)
{
	json_object *msg;
	char first[256];

	if (!(*out = json_tokener_parse(text ? text : ""))) {
		if (code == 200)
			return fail(-EPROTO, "etcd %s: not JSON", url);
		snprintf(first, sizeof(first), "%s", text ? text : "");
		return etcd_error(o, url, code, first_line(first, 200));
	}
	if (code != 200)
		return etcd_error(o, url, code,
				  (msg = get(*out, "message"))
				      ? json_object_get_string(msg)
				      : "no message");
	return 0;
}

/* http://: without libcurl (http_plain.h) */
static int post_plain(const struct rm_etcd_opts *o, const char *path,
		      const char *body, json_object **out)
{
	char url[512], why[256], *text = NULL;
	long code = 0;
	int err;

	snprintf(url, sizeof(url), "%s%s", o->url, path);
	err = rm_http_post(o->url, path, o->user && *o->token ? o->token : NULL,
			   body, o->timeout_ms ? o->timeout_ms : 2000L, &code,
			   &text, why, sizeof(why));
	if (err == -ECONNRESET)
		/* what curl calls an empty reply: TLS spoken to */
		err = fail(-EHOSTUNREACH, "etcd %s: %s: if etcd serves TLS, "
			   "use an https:// URL with --cacert", url, why);
	else if (err)
		err = fail(-EHOSTUNREACH, "etcd %s: %s", url, why);
	else
		err = answer_json(o, url, code, text, out);
	free(text);
	return err;
}

static int post_raw(const struct rm_etcd_opts *o, const char *path,
		    const char *body, json_object **out)
{
	struct curl_slist *hdrs = NULL;
	struct buf b = {0};
	char url[512], cerr[CURL_ERROR_SIZE];
	long code = 0;
	CURLcode rc;
	CURL *c;
	int err = 0;

	*out = NULL;
	if (rm_http_plain_url(o->url))
		return post_plain(o, path, body, out);
	err = curl_ready();
	if (err)
		return err;
	c = handle(o, path, &hdrs, url, sizeof(url), cerr);
	if (!c) {
		err = fail(-ENOMEM, "out of memory");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
			 o->timeout_ms ? o->timeout_ms : 2000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK)
		err = transport_error(o, url, rc, cerr);
	else
		err = answer_json(o, url, code, b.p, out);
out:
	if (err) {
		json_object_put(*out);
		*out = NULL;
	}
	if (c)
		curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	free(b.p);
	return err;
}

/* A new auth token for user/password (etcd's /v3/auth/authenticate). */
static int authenticate(struct rm_etcd_opts *o)
{
	json_object *req = json_object_new_object(), *resp = NULL, *tok;
	int err;

	o->token[0] = 0;
	json_object_object_add(req, "name", json_object_new_string(o->user));
	json_object_object_add(req, "password",
			       json_object_new_string(o->password ? o->password
								  : ""));
	err = post_raw(o, "/v3/auth/authenticate",
		       json_object_to_json_string(req), &resp);
	json_object_put(req);
	if (!err && !(tok = get(resp, "token")))
		err = fail(-EPROTO, "etcd auth: no token in the answer");
	else if (!err && snprintf(o->token, sizeof(o->token), "%s",
				  json_object_get_string(tok)) >=
			     (int)sizeof(o->token))
		err = fail(-EPROTO, "etcd auth: token longer than %d bytes "
			   "(RM_ETCD_TOKEN_MAX)", RM_ETCD_TOKEN_MAX - 1);
	if (err)
		o->token[0] = 0;
	json_object_put(resp);
	return err;
}

/* Before a try: a token, when we have a user and hold none. */
static int token(struct rm_etcd_opts *o)
{
	return o->user && !*o->token ? authenticate(o) : 0;
}

/* After a try: etcd said our token expired (simple tokens do after its
 * --auth-token-ttl unused): forget it; true when one more try is due. */
static bool renew(struct rm_etcd_opts *o, int *err, int tries)
{
	if (*err != -EKEYEXPIRED)
		return false;
	o->token[0] = 0;
	if (o->user && !tries) {
		o->renewals++;
		return true;
	}
	*err = -EACCES; /* a fresh token refused at once */
	return false;
}

static int post(struct rm_etcd_opts *o, const char *path, json_object *req,
		json_object **out)
{
	int err;

	for (int tries = 0;; tries++) {
		err = token(o);
		if (!err)
			err = post_raw(o, path, json_object_to_json_string(req),
				       out);
		if (!renew(o, &err, tries))
			return err;
	}
}

static json_object *b64_string(const char *s, size_t n)
{
	char *e = malloc(4 * ((n + 2) / 3) + 1);
	json_object *j;

	if (!e)
		return NULL;
	rm_b64_encode(s, n, e);
	j = json_object_new_string(e);
	free(e);
	return j;
}

static json_object *rev_string(__u64 rev)
{
	char s[24];

	snprintf(s, sizeof(s), "%llu", (unsigned long long)rev);
	return json_object_new_string(s);
}

/* kv.value, base64-decoded, into out. */
static int kv_value(json_object *kv, struct rm_etcd_kv *out)
{
	json_object *v = get(kv, "value");
	const char *s = v ? json_object_get_string(v) : "";
	size_t len = strlen(s);
	int n;

	out->value = malloc(3 * (len / 4) + 1);
	if (!out->value)
		return fail(-ENOMEM, "out of memory");
	n = rm_b64_decode(s, len, out->value);
	if (n < 0)
		return fail(-EPROTO, "etcd: value is not base64");
	out->len = n;
	out->mod_revision = num(kv, "mod_revision");
	return 0;
}

void rm_etcd_kv_free(struct rm_etcd_kv *kv)
{
	free(kv->value);
	kv->value = NULL;
}

int rm_etcd_get(struct rm_etcd_opts *o, const char *key,
		struct rm_etcd_kv *out)
{
	json_object *req = json_object_new_object(), *resp = NULL, *kvs;
	int err;

	memset(out, 0, sizeof(*out));
	json_object_object_add(req, "key", b64_string(key, strlen(key)));
	err = post(o, "/v3/kv/range", req, &resp);
	json_object_put(req);
	if (err)
		return err;
	out->revision = num(get(resp, "header"), "revision");
	kvs = get(resp, "kvs");
	if (!kvs || !json_object_array_length(kvs))
		err = fail(-ENOENT, "etcd: no key '%s' (revision %llu)", key,
			   (unsigned long long)out->revision);
	else
		err = kv_value(json_object_array_get_idx(kvs, 0), out);
	json_object_put(resp);
	if (err)
		rm_etcd_kv_free(out);
	return err;
}

int rm_etcd_cas(struct rm_etcd_opts *o, const char *key,
		const char *value, size_t len, __u64 expect, __u64 *new_rev)
{
	json_object *req = json_object_new_object(), *resp = NULL;
	json_object *cmp = json_object_new_object(), *put = json_object_new_object();
	json_object *rng = json_object_new_object(), *op, *arr, *r;
	size_t klen = strlen(key);
	int err;

	json_object_object_add(cmp, "key", b64_string(key, klen));
	json_object_object_add(cmp, "target", json_object_new_string("MOD"));
	json_object_object_add(cmp, "result", json_object_new_string("EQUAL"));
	json_object_object_add(cmp, "mod_revision", rev_string(expect));
	arr = json_object_new_array();
	json_object_array_add(arr, cmp);
	json_object_object_add(req, "compare", arr);
	json_object_object_add(put, "key", b64_string(key, klen));
	json_object_object_add(put, "value", b64_string(value, len));
	op = json_object_new_object();
	json_object_object_add(op, "request_put", put);
	arr = json_object_new_array();
	json_object_array_add(arr, op);
	json_object_object_add(req, "success", arr);
	/* on a failed compare, read the key: its revision for the message */
	json_object_object_add(rng, "key", b64_string(key, klen));
	op = json_object_new_object();
	json_object_object_add(op, "request_range", rng);
	arr = json_object_new_array();
	json_object_array_add(arr, op);
	json_object_object_add(req, "failure", arr);
	err = post(o, "/v3/kv/txn", req, &resp);
	json_object_put(req);
	if (err)
		return err;
	if (json_object_get_boolean(get(resp, "succeeded"))) {
		*new_rev = num(get(resp, "header"), "revision");
	} else {
		r = json_object_array_get_idx(get(resp, "responses"), 0);
		r = json_object_array_get_idx(
		    get(get(r, "response_range"), "kvs"), 0);
		*new_rev = num(r, "mod_revision");
		err = fail(-ESTALE,
			   "etcd: key '%s' is at revision %llu, not %llu",
			   key, (unsigned long long)*new_rev,
			   (unsigned long long)expect);
	}
	json_object_put(resp);
	return err;
}

/* ---- watch -------------------------------------------------------------- */

struct watch {
	struct buf b;
	size_t used;
	json_tokener *tok;
	bool event;    /* a change (or a compaction): read again */
	char why[256]; /* the watch was canceled or failed: etcd's words */
	volatile sig_atomic_t *stop;
};

/* One message of the stream: a change, a compaction (after which the
 * caller must read again anyway), or etcd refusing the watch (canceled
 * with a reason, or a gateway error). */
static void watch_message(struct watch *w, json_object *msg)
{
	json_object *res = get(msg, "result"), *why;

	if ((get(res, "events") && json_object_array_length(get(res, "events"))) ||
	    num(res, "compact_revision")) {
		w->event = true;
		return;
	}
	if (json_object_get_boolean(get(res, "canceled")))
		why = get(res, "cancel_reason");
	else if (get(msg, "error"))
		why = get(get(msg, "error"), "message");
	else
		return;
	snprintf(w->why, sizeof(w->why), "%s",
		 why ? json_object_get_string(why) : "watch canceled");
}

/* Each message of the stream is one JSON object; the first that ends the
 * wait makes us refuse the data (curl then stops). */
static size_t watch_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct watch *w = arg;
	size_t n = size * nmemb;

	if (buf_write(data, size, nmemb, &w->b) != n)
		return 0;
	while (w->used < w->b.n) {
		json_object *msg;

		msg = json_tokener_parse_ex(w->tok, w->b.p + w->used,
					    (int)(w->b.n - w->used));
		if (!msg) {
			if (json_tokener_get_error(w->tok) != json_tokener_continue) {
				/* skip what is not JSON (newlines) */
				json_tokener_reset(w->tok);
				w->used++;
				continue;
			}
			w->used = w->b.n;
			break;
		}
		w->used += json_tokener_get_parse_end(w->tok);
		json_tokener_reset(w->tok);
		watch_message(w, msg);
		json_object_put(msg);
		if (w->event || *w->why)
			return 0;
	}
	return n;
}

static int watch_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
			  curl_off_t d)
{
	struct watch *w = arg;

	(void)a, (void)b, (void)c, (void)d;
	return w->stop && *w->stop;
}

/* One watch request with the current token. */
static int watch_once(struct rm_etcd_opts *o, const char *body, long wait_ms,
		      struct watch *w)
{
	struct curl_slist *hdrs = NULL;
	char url[512], cerr[CURL_ERROR_SIZE];
	CURLcode rc;
	CURL *c;
	int err;

	c = handle(o, "/v3/watch", &hdrs, url, sizeof(url), cerr);
	w->tok = json_tokener_new();
	if (!c || !w->tok) {
		err = fail(-ENOMEM, "out of memory");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, wait_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, watch_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, w);
	rc = curl_easy_perform(c);
	if (w->event)
		err = 0;
	else if (*w->why)
		err = etcd_error(o, url, 200, w->why);
	else if (w->stop && *w->stop)
		err = fail(-EINTR, "stopped");
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		err = fail(-ETIMEDOUT, "no change within %ld ms", wait_ms);
	else if (rc == CURLE_OK)
		err = fail(-EHOSTUNREACH, "etcd %s: watch ended", url);
	else
		err = transport_error(o, url, rc, cerr);
out:
	if (c)
		curl_easy_cleanup(c);
	if (w->tok)
		json_tokener_free(w->tok);
	w->tok = NULL;
	curl_slist_free_all(hdrs);
	free(w->b.p);
	w->b = (struct buf){0};
	w->used = 0;
	return err;
}

int rm_etcd_wait(struct rm_etcd_opts *o, const char *key, __u64 start,
		 long wait_ms, volatile sig_atomic_t *stop)
{
	json_object *req = json_object_new_object();
	json_object *cr = json_object_new_object();
	int err = curl_ready(); /* the watch streams: libcurl's */

	if (err) {
		json_object_put(cr);
		json_object_put(req);
		return err;
	}
	json_object_object_add(cr, "key", b64_string(key, strlen(key)));
	json_object_object_add(cr, "start_revision", rev_string(start));
	json_object_object_add(req, "create_request", cr);
	/* an expired token cancels the watch at once: renew it, once */
	for (int tries = 0;; tries++) {
		struct watch w = {.stop = stop};

		err = token(o);
		if (!err)
			err = watch_once(o, json_object_to_json_string(req),
					 wait_ms, &w);
		if (!renew(o, &err, tries))
			break;
	}
	json_object_put(req);
	return err;
}
