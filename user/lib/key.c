// SPDX-License-Identifier: GPL-2.0
/* Keyed services in userspace: --key text, and a key's owner. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "key.h"
#include "ring.h"
#include "state.h"
#include "util.h"

static const char *const kind_names[RM_KEY_KIND_NR] = {
    [RM_KEY_FLOW] = "flow",   [RM_KEY_MEMCACHED] = "memcached",
    [RM_KEY_DNS] = "dns",     [RM_KEY_BYTES] = "bytes",
    [RM_KEY_TOKEN] = "token",
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

int rm_parse_keyspec(const char *s, struct rm_key_spec *spec,
		     const char **why)
{
	const char *p, *last;
	char *end;
	unsigned long off, len;

	memset(spec, 0, sizeof(*spec));
	*why = "expected flow, memcached, dns, bytes:OFFSET:LEN or "
	       "token:OFFSET:DELIMS:MAXLEN";
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

int rm_key_owner(struct rm_state *st, const struct rm_snap *s, __u32 svc,
		 const char *key, size_t len, __u32 *node, __u32 *hash,
		 int *res)
{
	const struct rm_svc_meta *m = &s->svc[svc];
	struct rm_slot *slots = NULL;
	struct rm_key_buf *b;
	__u32 nslots, id;
	int err;

	*res = RM_KEY_NO_KEY;
	if (svc >= RM_MAX_SERVICES || !m->in_use ||
	    !(m->flags & RM_SVC_F_KEYED) || len > RM_KEY_WINDOW)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	*res = rm_key_from_text(&m->keyspec, key, (__u32)len, b);
	if (*res != RM_KEY_OK) {
		free(b);
		return -EINVAL;
	}
	*hash = rm_key_hash(&s->cfg.seed, b->key, b->klen);
	free(b);
	err = rm_state_ring_slots(st, svc, &slots, &nslots);
	if (err)
		return err;
	err = rm_ring_lookup(slots, nslots, *hash, &id) || id >= RM_MAX_NODES
		  ? -ENOENT
		  : 0;
	free(slots);
	if (!err)
		*node = id;
	return err;
}
