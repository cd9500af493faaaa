// SPDX-License-Identifier: GPL-2.0
/* Keyed services in userspace: --key text, and a key's owner. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ringmaster/rm_owner.h>
#include <ringmaster/rm_quic.h>
#include "key.h"
#include "ring.h"
#include "state.h"
#include "util.h"

static const char *const kind_names[RM_KEY_KIND_NR] = {
    [RM_KEY_FLOW] = "flow",   [RM_KEY_MEMCACHED] = "memcached",
    [RM_KEY_DNS] = "dns",     [RM_KEY_BYTES] = "bytes",
    [RM_KEY_TOKEN] = "token", [RM_KEY_QUIC] = "quic",
};

const char *rm_key_result_name(int res)
{
	static const char *const n[RM_KEY_RESULT_NR] = {
	    [RM_KEY_OK] = "ok",
	    [RM_KEY_TRUNCATED] = "truncated",
	    [RM_KEY_TOO_LONG] = "too-long",
	    [RM_KEY_NO_KEY] = "no-key",
	    [RM_KEY_MALFORMED] = "malformed",
	    [RM_KEY_MULTI] = "multi-datagram",
	};

	return res >= 0 && res < RM_KEY_RESULT_NR ? n[res] : "?";
}

/* Unescape DELIMS into spec; -EINVAL on a bad escape or count. */
static int parse_delims(const char *s, size_t n, struct rm_key_spec *spec)
{
	size_t i = 0;

	spec->ndelims = 0;
	while (i < n) {
		int c = (unsigned char)s[i++];

		if (c == '\\') {
			if (i >= n)
				return -EINVAL;
			c = s[i++];
			if (c == 's')
				c = ' ';
			else if (c == 'r')
				c = '\r';
			else if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'x') {
				char hex[3] = {0};
				char *end;

				if (i + 2 > n)
					return -EINVAL;
				memcpy(hex, s + i, 2);
				c = (int)strtoul(hex, &end, 16);
				if (*end)
					return -EINVAL;
				i += 2;
			} else if (c != '\\') {
				return -EINVAL;
			}
		}
		if (spec->ndelims >= RM_KEY_DELIMS_MAX)
			return -EINVAL;
		spec->delims[spec->ndelims++] = (__u8)c;
	}
	return spec->ndelims ? 0 : -EINVAL;
}

int rm_keyspec_valid(const struct rm_key_spec *k)
{
	if (k->kind >= RM_KEY_KIND_NR || k->pad[0] || k->pad[1])
		return 0;
	if (k->kind == RM_KEY_QUIC)
		return !k->ndelims && !k->off && !k->len &&
		       rm_quic_spec_valid(&k->quic);
	for (int i = k->kind == RM_KEY_TOKEN ? k->ndelims : 0;
	     i < RM_KEY_DELIMS_MAX; i++)
		if (k->delims[i])
			return 0;
	switch (k->kind) {
	case RM_KEY_BYTES:
		return !k->ndelims && k->len >= 1 && k->len <= RM_KEY_MAX &&
		       k->off + k->len <= RM_KEY_WINDOW;
	case RM_KEY_TOKEN:
		return k->ndelims >= 1 && k->ndelims <= RM_KEY_DELIMS_MAX &&
		       k->len >= 1 && k->len <= RM_KEY_MAX &&
		       k->off < RM_KEY_WINDOW;
	default:
		return !k->ndelims && !k->off && !k->len;
	}
}

/* The next ":N" field of a quic spec into *v (lo..hi); 0 or -EINVAL. */
static int quic_field(const char **p, unsigned long lo, unsigned long hi,
		      __u8 *v)
{
	unsigned long n;
	char *end;

	if (**p != ':' || (*p)[1] < '0' || (*p)[1] > '9')
		return -EINVAL;
	n = strtoul(*p + 1, &end, 10);
	if (n < lo || n > hi)
		return -EINVAL;
	*v = (__u8)n;
	*p = end;
	return 0;
}

/* quic:SIDLEN:NONCELEN[:CR[:CIDLEN|:self]] */
static int parse_quic(const char *p, struct rm_quic_spec *q, const char **why)
{
	*why = "expected quic:SIDLEN:NONCELEN[:CR[:CIDLEN|:self]]: server ID "
	       "1-15 bytes, nonce 4 bytes or more, together at most 19; "
	       "config rotation 0-6; CIDLEN 1 + SIDLEN + NONCELEN to 20, or "
	       "self (the first octet encodes the length, the default)";
	if (quic_field(&p, 1, RM_QUIC_SID_MAX, &q->sid_len) ||
	    quic_field(&p, RM_QUIC_NONCE_MIN, RM_QUIC_CID_MAX - 2,
		       &q->nonce_len))
		return -EINVAL;
	if (*p && quic_field(&p, 0, RM_QUIC_CR_UNROUTABLE - 1, &q->cr))
		return -EINVAL;
	if (!strcmp(p, ":self"))
		p += 5;
	else if (*p && quic_field(&p, 1, RM_QUIC_CID_MAX, &q->cid_len))
		return -EINVAL;
	if (*p || !rm_quic_spec_valid(q))
		return -EINVAL;
	return 0;
}

int rm_parse_keyspec(const char *s, struct rm_key_spec *spec,
		     const char **why)
{
	const char *p, *last;
	char *end;
	unsigned long off, len;

	memset(spec, 0, sizeof(*spec));
	if (!strncmp(s, "quic:", 5) || !strcmp(s, "quic")) {
		spec->kind = RM_KEY_QUIC;
		return parse_quic(s + 4, &spec->quic, why);
	}
	*why = "expected flow, memcached, dns, bytes:OFFSET:LEN, "
	       "token:OFFSET:DELIMS:MAXLEN or quic:SIDLEN:NONCELEN[:CR[:CIDLEN]]";
	for (int k = RM_KEY_FLOW; k <= RM_KEY_DNS; k++)
		if (!strcmp(s, kind_names[k])) {
			spec->kind = k;
			return 0;
		}
	if (!strncmp(s, "bytes:", 6)) {
		spec->kind = RM_KEY_BYTES;
		p = s + 6;
	} else if (!strncmp(s, "token:", 6)) {
		spec->kind = RM_KEY_TOKEN;
		p = s + 6;
	} else {
		return -EINVAL;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	off = strtoul(p, &end, 10);
	if (*end != ':' || off >= RM_KEY_WINDOW) {
		*why = "OFFSET: expected 0-511 (the payload bytes the director "
		       "reads)";
		return -EINVAL;
	}
	p = end + 1;
	last = strrchr(p, ':');
	if (spec->kind == RM_KEY_TOKEN) {
		if (!last || parse_delims(p, (size_t)(last - p), spec)) {
			*why = "DELIMS: expected 1-8 characters (escapes \\s "
			       "\\r \\n \\t \\\\ \\xHH)";
			return -EINVAL;
		}
		p = last + 1;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	len = strtoul(p, &end, 10);
	if (*end || len < 1 || len > RM_KEY_MAX) {
		*why = "LEN/MAXLEN: expected 1-255";
		return -EINVAL;
	}
	if (spec->kind == RM_KEY_BYTES && off + len > RM_KEY_WINDOW) {
		*why = "OFFSET + LEN: the key must end within the first 512 "
		       "payload bytes";
		return -EINVAL;
	}
	spec->off = (__u16)off;
	spec->len = (__u16)len;
	return 0;
}

void rm_format_keyspec(const struct rm_key_spec *spec, char *out, size_t len)
{
	char d[RM_KEY_DELIMS_MAX * 4 + 1];
	size_t n = 0;

	if (spec->kind >= RM_KEY_KIND_NR) {
		snprintf(out, len, "?");
		return;
	}
	if (spec->kind == RM_KEY_BYTES) {
		snprintf(out, len, "bytes:%u:%u", spec->off, spec->len);
		return;
	}
	if (spec->kind == RM_KEY_QUIC) {
		const struct rm_quic_spec *q = &spec->quic;

		if (q->cid_len)
			snprintf(out, len, "quic:%u:%u:%u:%u", q->sid_len,
				 q->nonce_len, q->cr, q->cid_len);
		else
			snprintf(out, len, "quic:%u:%u:%u:self", q->sid_len,
				 q->nonce_len, q->cr);
		return;
	}
	if (spec->kind != RM_KEY_TOKEN) {
		snprintf(out, len, "%s", kind_names[spec->kind]);
		return;
	}
	for (int i = 0; i < spec->ndelims && i < RM_KEY_DELIMS_MAX; i++) {
		__u8 c = spec->delims[i];

		if (c == ' ')
			n += sprintf(d + n, "\\s");
		else if (c == '\r')
			n += sprintf(d + n, "\\r");
		else if (c == '\n')
			n += sprintf(d + n, "\\n");
		else if (c == '\t')
			n += sprintf(d + n, "\\t");
		else if (c == '\\')
			n += sprintf(d + n, "\\\\");
		else if (c > ' ' && c < 0x7f)
			d[n++] = (char)c;
		else
			n += sprintf(d + n, "\\x%02x", c);
	}
	d[n] = 0;
	snprintf(out, len, "token:%u:%s:%u", spec->off, d, spec->len);
}

#define KEY_STR_(x) #x
#define KEY_STR(x) KEY_STR_(x)

static const char *const scheme_names[RM_RING_SCHEME_NR] = {
    [RM_RING_RINGMASTER] = "ringmaster",
    [RM_RING_KETAMA] = "ketama",
    [RM_RING_MD5_VNODES] = "md5-vnodes",
};

/* How often needle occurs in s. */
static int count_of(const char *s, const char *needle)
{
	int n = 0;

	for (s = strstr(s, needle); s; s = strstr(s + 1, needle))
		n++;
	return n;
}

int rm_ringspec_valid(const struct rm_ring_spec *r)
{
	size_t len = strnlen(r->tmpl, sizeof(r->tmpl));

	if (r->scheme >= RM_RING_SCHEME_NR || r->pad[0] || r->pad[1] ||
	    r->pad[2] || len == sizeof(r->tmpl))
		return 0;
	/* no stray bytes past the template's end */
	for (size_t i = len; i < sizeof(r->tmpl); i++)
		if (r->tmpl[i])
			return 0;
	if (r->scheme != RM_RING_MD5_VNODES)
		return !r->count && !len;
	for (size_t i = 0; i < len; i++)
		if (r->tmpl[i] <= ' ' || r->tmpl[i] > '~')
			return 0;
	return r->count >= 1 && r->count <= RM_MAX_VNODES &&
	       count_of(r->tmpl, "{node}") == 1 && count_of(r->tmpl, "{i}") == 1;
}

int rm_parse_ringspec(const char *s, struct rm_ring_spec *spec,
		      const char **why)
{
	const char *p, *last;
	unsigned long count;
	char *end;

	memset(spec, 0, sizeof(*spec));
	*why = "expected ringmaster, ketama or md5-vnodes:TEMPLATE:COUNT";
	for (int k = RM_RING_RINGMASTER; k <= RM_RING_KETAMA; k++)
		if (!strcmp(s, scheme_names[k])) {
			spec->scheme = (__u8)k;
			return 0;
		}
	if (strncmp(s, "md5-vnodes:", 11))
		return -EINVAL;
	spec->scheme = RM_RING_MD5_VNODES;
	p = s + 11;
	last = strrchr(p, ':');
	if (!last || last == p || (size_t)(last - p) >= sizeof(spec->tmpl)) {
		*why = "TEMPLATE: expected 1-47 characters, with {node} and "
		       "{i} once each, e.g. {node}-vnode-{i}";
		return -EINVAL;
	}
	memcpy(spec->tmpl, p, (size_t)(last - p));
	if (count_of(spec->tmpl, "{node}") != 1 ||
	    count_of(spec->tmpl, "{i}") != 1) {
		*why = "TEMPLATE: needs {node} (the node's name) and {i} (the "
		       "vnode's index, from 0) once each, e.g. {node}#vnode{i}";
		return -EINVAL;
	}
	for (p = spec->tmpl; *p; p++)
		if (*p <= ' ' || *p > '~') {
			*why = "TEMPLATE: printable characters only, no space";
			return -EINVAL;
		}
	p = last + 1;
	count = *p >= '0' && *p <= '9' ? strtoul(p, &end, 10) : 0;
	if (!count || *end || count > RM_MAX_VNODES) {
		*why = "COUNT: expected 1-" KEY_STR(RM_MAX_VNODES)
		       " vnodes per node (times its weight)";
		return -EINVAL;
	}
	spec->count = (__u32)count;
	return 0;
}

void rm_format_ringspec(const struct rm_ring_spec *spec, char *out,
			size_t len)
{
	if (spec->scheme >= RM_RING_SCHEME_NR)
		snprintf(out, len, "?");
	else if (spec->scheme == RM_RING_MD5_VNODES)
		snprintf(out, len, "md5-vnodes:%.*s:%u",
			 (int)sizeof(spec->tmpl), spec->tmpl, spec->count);
	else
		snprintf(out, len, "%s", scheme_names[spec->scheme]);
}

int rm_key_owner(struct rm_state *st, const struct rm_snap *s, __u32 svc,
		 const char *key, size_t len, __u32 *node, __u32 *hash,
		 int *res)
{
	const struct rm_svc_meta *m = &s->svc[svc];
	struct rm_slot *slots = NULL;
	struct rm_ring_view v;
	struct rm_key_buf *b;
	__u32 nslots, id;
	int err;

	*res = RM_KEY_NO_KEY;
	if (svc >= RM_MAX_SERVICES || !m->in_use ||
	    !(m->flags & RM_SVC_F_KEYED) || len > RM_KEY_WINDOW)
		return -EINVAL;
	err = rm_state_ring_slots(st, svc, &slots, &nslots);
	if (err)
		return err;
	b = calloc(1, sizeof(*b));
	if (!b) {
		free(slots);
		return -ENOMEM;
	}
	v.slots = slots;
	v.nslots = nslots;
	/* the data plane's own code: rm_owner.h */
	err = rm_owner_of_key(&v, &m->keyspec, m->ring.scheme, &s->cfg.seed,
			      key, (__u32)len, b, &id, hash);
	free(b);
	free(slots);
	if (err > 0) {
		*res = err;
		return -EINVAL;
	}
	*res = RM_KEY_OK;
	if (err || id >= RM_MAX_NODES)
		return -ENOENT;
	*node = id;
	return 0;
}
