// SPDX-License-Identifier: GPL-2.0
/* etcd v3 through its HTTP/JSON gateway: see etcd.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include "etcd.h"

static __thread char errbuf[512];

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

int rm_etcd_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) ? -ENOMEM : 0;
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

static CURL *handle(const struct rm_etcd_opts *o, const char *path,
		    struct curl_slist **hdrs, char *url, size_t url_len)
{
	CURL *c = curl_easy_init();

	if (!c)
		return NULL;
	snprintf(url, url_len, "%s%s", o->url, path);
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
	*hdrs = curl_slist_append(*hdrs, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
	return c;
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

static int post_raw(const struct rm_etcd_opts *o, const char *path,
		    const char *auth, const char *body, json_object **out);

/* An auth token for user/password (etcd's /v3/auth/authenticate). */
static int authenticate(const struct rm_etcd_opts *o, char *tok, size_t len)
{
	json_object *req = json_object_new_object(), *resp = NULL;
	int err;

	json_object_object_add(req, "name", json_object_new_string(o->user));
	json_object_object_add(req, "password",
			       json_object_new_string(o->password ? o->password
								  : ""));
	err = post_raw(o, "/v3/auth/authenticate", NULL,
		       json_object_to_json_string(req), &resp);
	json_object_put(req);
	if (!err && !get(resp, "token"))
		err = fail(-EPROTO, "etcd auth: no token in the answer");
	if (!err)
		snprintf(tok, len, "%s",
			 json_object_get_string(get(resp, "token")));
	json_object_put(resp);
	return err;
}

static int post_raw(const struct rm_etcd_opts *o, const char *path,
		    const char *auth, const char *body, json_object **out)
{
	struct curl_slist *hdrs = NULL;
	struct buf b = {0};
	char url[512], hdr[600];
	long code = 0;
	CURLcode rc;
	CURL *c;
	int err = 0;

	*out = NULL;
	if (auth) {
		snprintf(hdr, sizeof(hdr), "Authorization: %s", auth);
		hdrs = curl_slist_append(hdrs, hdr);
	}
	c = handle(o, path, &hdrs, url, sizeof(url));
	if (!c) {
		curl_slist_free_all(hdrs);
		return fail(-ENOMEM, "out of memory");
	}
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
			 o->timeout_ms ? o->timeout_ms : 2000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK)
		err = fail(-EHOSTUNREACH, "etcd %s: %s", url,
			   curl_easy_strerror(rc));
	else if (!(*out = json_tokener_parse(b.p ? b.p : "")))
		err = fail(-EPROTO, "etcd %s: HTTP %ld, not JSON", url, code);
	else if (code != 200)
		err = fail(-EHOSTUNREACH, "etcd %s: HTTP %ld: %s", url, code,
			   get(*out, "message")
			       ? json_object_get_string(get(*out, "message"))
			       : "no message");
	if (err) {
		json_object_put(*out);
		*out = NULL;
	}
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	free(b.p);
	return err;
}

static int post(const struct rm_etcd_opts *o, const char *path,
		json_object *req, json_object **out)
{
	char tok[512];
	int err = 0;

	if (o->user)
		err = authenticate(o, tok, sizeof(tok));
	if (!err)
		err = post_raw(o, path, o->user ? tok : NULL,
			       json_object_to_json_string(req), out);
	return err;
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

int rm_etcd_get(const struct rm_etcd_opts *o, const char *key,
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

int rm_etcd_cas(const struct rm_etcd_opts *o, const char *key,
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
	bool event;
	volatile sig_atomic_t *stop;
};

/* Each message of the stream is one JSON object; an event (or a
 * cancel/compaction, after which the caller must read again anyway) ends
 * the wait by refusing the data. */
static size_t watch_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct watch *w = arg;
	size_t n = size * nmemb;

	if (buf_write(data, size, nmemb, &w->b) != n)
		return 0;
	while (w->used < w->b.n) {
		json_object *msg, *res;

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
		res = get(msg, "result");
		if ((get(res, "events") &&
		     json_object_array_length(get(res, "events"))) ||
		    json_object_get_boolean(get(res, "canceled")) ||
		    num(res, "compact_revision") || get(msg, "error"))
			w->event = true;
		json_object_put(msg);
		if (w->event)
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

int rm_etcd_wait(const struct rm_etcd_opts *o, const char *key, __u64 start,
		 long wait_ms, volatile sig_atomic_t *stop)
{
	json_object *req = json_object_new_object();
	json_object *cr = json_object_new_object();
	struct curl_slist *hdrs = NULL;
	struct watch w = {.stop = stop};
	char url[512], tok[512], hdr[600];
	CURLcode rc;
	CURL *c;
	int err = 0;

	if (o->user) {
		err = authenticate(o, tok, sizeof(tok));
		if (err) {
			json_object_put(req);
			json_object_put(cr);
			return err;
		}
		snprintf(hdr, sizeof(hdr), "Authorization: %s", tok);
		hdrs = curl_slist_append(hdrs, hdr);
	}
	json_object_object_add(cr, "key", b64_string(key, strlen(key)));
	json_object_object_add(cr, "start_revision", rev_string(start));
	json_object_object_add(req, "create_request", cr);
	c = handle(o, "/v3/watch", &hdrs, url, sizeof(url));
	w.tok = json_tokener_new();
	if (!c || !w.tok) {
		err = fail(-ENOMEM, "out of memory");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, json_object_to_json_string(req));
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, wait_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, watch_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, &w);
	rc = curl_easy_perform(c);
	if (w.event)
		err = 0;
	else if (stop && *stop)
		err = fail(-EINTR, "stopped");
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		err = fail(-ETIMEDOUT, "no change within %ld ms", wait_ms);
	else
		err = fail(-EHOSTUNREACH, "etcd %s: %s", url,
			   rc == CURLE_OK ? "watch ended"
					  : curl_easy_strerror(rc));
out:
	if (c)
		curl_easy_cleanup(c);
	if (w.tok)
		json_tokener_free(w.tok);
	curl_slist_free_all(hdrs);
	json_object_put(req);
	free(w.b.p);
	return err;
}
