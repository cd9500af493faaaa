// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "util.h"

int rm_parse_u64(const char *s, __u64 min, __u64 max, __u64 *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9') /* strtoull skips spaces, takes signs */
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int rm_parse_u32(const char *s, __u32 min, __u32 max, __u32 *out)
{
	__u64 v;
	int err = rm_parse_u64(s, min, max, &v);

	if (!err)
		*out = (__u32)v;
	return err;
}

bool rm_name_valid(const char *name)
{
	size_t len = strnlen(name, RM_NAME_MAX);

	if (len == 0 || len >= RM_NAME_MAX)
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == len;
}

int rm_parse_nodes(const char *s, struct rm_node_spec **specs, __u32 *n)
{
	struct rm_node_spec *out = NULL;
	char *dup = NULL, *tok, *save = NULL;
	__u32 count = 1, i = 0;
	int err = -EINVAL;

	*specs = NULL;
	*n = 0;
	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++)
		count += *p == ',';
	dup = strdup(s);
	out = calloc(count, sizeof(*out));
	if (!dup || !out) {
		err = -ENOMEM;
		goto fail;
	}
	/* strtok would merge empty fields; "a,,b" must be an error */
	for (tok = dup; tok; tok = save) {
		char *colon;

		save = strchr(tok, ',');
		if (save)
			*save++ = '\0';
		colon = strchr(tok, ':');
		out[i].weight = 1;
		if (colon) {
			*colon = '\0';
			err = rm_parse_u32(colon + 1, 1, RM_MAX_WEIGHT,
					   &out[i].weight);
			if (err)
				goto fail;
		}
		err = -EINVAL;
		if (!rm_name_valid(tok))
			goto fail;
		snprintf(out[i].name, RM_NAME_MAX, "%s", tok);
		out[i].id = i;
		i++;
	}
	free(dup);
	*specs = out;
	*n = i;
	return 0;
fail:
	free(dup);
	free(out);
	return err;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int rm_parse_hex(const char *s, __u8 *out, size_t max)
{
	size_t n;

	if (!s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	n = strlen(s);
	if (!n || n % 2 || n / 2 > max)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (__u8)(hi << 4 | lo);
	}
	return (int)(n / 2);
}

void rm_format_hex(const __u8 *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = 0;
}

/* The seed text is the 16 key bytes in order (SipHash's k as bytes),
 * k0 = bytes 0..7 little-endian, k1 = bytes 8..15. */
int rm_parse_seed(const char *s, struct rm_seed *seed)
{
	__u8 b[16];

	if (rm_parse_hex(s, b, sizeof(b)) != (int)sizeof(b))
		return -EINVAL;
	seed->k0 = seed->k1 = 0;
	for (int i = 7; i >= 0; i--) {
		seed->k0 = seed->k0 << 8 | b[i];
		seed->k1 = seed->k1 << 8 | b[8 + i];
	}
	return 0;
}

void rm_format_seed(const struct rm_seed *seed, char out[33])
{
	/* in order: each sprintf's NUL is overwritten by the next one */
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x",
			(unsigned)((i < 8 ? seed->k0 : seed->k1) >> (8 * (i % 8))) &
				0xff);
	out[32] = '\0';
}

int rm_parse_addr(const char *s, __be32 addr[4], __u8 *family)
{
	memset(addr, 0, 16);
	if (!s)
		return -EINVAL;
	if (inet_pton(AF_INET, s, addr) == 1) {
		*family = RM_FAMILY_V4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, addr) == 1) {
		*family = RM_FAMILY_V6;
		return 0;
	}
	return -EINVAL;
}

void rm_format_addr(const __be32 addr[4], __u8 family, char *out, size_t len)
{
	if (!inet_ntop(family == RM_FAMILY_V4 ? AF_INET : AF_INET6, addr, out,
		       (socklen_t)len))
		snprintf(out, len, "?");
}

void rm_format_svc_addr(const struct rm_svc_key *k, char *out, size_t len)
{
	rm_format_addr(k->vip,
		       k->flags & RM_SVCK_V6 ? RM_FAMILY_V6 : RM_FAMILY_V4, out,
		       len);
}

int rm_parse_mac(const char *s, __u8 mac[6])
{
	unsigned int v[6];
	char tail;

	if (!s || strspn(s, "0123456789abcdefABCDEF:") != 17 ||
	    sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2],
			 &v[3], &v[4], &v[5], &tail) != 6 ||
	    strlen(s) != 17)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (__u8)v[i];
	return 0;
}

void rm_format_mac(const __u8 mac[6], char out[18])
{
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1],
		 mac[2], mac[3], mac[4], mac[5]);
}

int rm_parse_proto(const char *s, __u8 *proto)
{
	if (s && !strcmp(s, "tcp"))
		*proto = IPPROTO_TCP;
	else if (s && !strcmp(s, "udp"))
		*proto = IPPROTO_UDP;
	else
		return -EINVAL;
	return 0;
}

const char *rm_proto_name(__u8 proto)
{
	return proto == IPPROTO_TCP ? "tcp" : proto == IPPROTO_UDP ? "udp" : "?";
}

void rm_bar(char *out, size_t len, double frac, double max_frac, int width)
{
	int cells = max_frac > 0 ? (int)(frac / max_frac * width + 0.5) : 0;
	size_t i;

	if (cells > width)
		cells = width;
	for (i = 0; i + 1 < len && (int)i < cells; i++)
		out[i] = '#';
	out[i] = '\0';
}

#define RM_HUGE (2UL << 20)

static size_t huge_len(size_t len)
{
	return (len + RM_HUGE - 1) & ~(RM_HUGE - 1);
}

/* The rest of the last huge page of an rm_huge_alloc_filled() block,
 * faulted in already: the command's scratch memory, handed out from the
 * front and taken back whole when no loan is out. The commands are
 * single-threaded. */
static struct {
	char *p; /* NULL: none */
	size_t len;
	size_t used;   /* handed out since none was out */
	size_t dirty;  /* written by earlier borrowers: zeroed again on loan */
	unsigned out;  /* loans not yet returned */
	bool orphan;   /* its block was freed while loans were out */
} spare;

/* A loan: its size, then the memory (kept 64-byte aligned). */
#define SPARE_HDR 64

static void *spare_take(size_t len)
{
	size_t n = SPARE_HDR + ((len + 63) & ~(size_t)63);
	char *q;

	if (!spare.p || spare.orphan || n > spare.len - spare.used)
		return NULL;
	q = spare.p + spare.used;
	if (spare.used < spare.dirty)
		memset(q, 0, n < spare.dirty - spare.used ? n
						 : spare.dirty - spare.used);
	*(size_t *)q = n;
	spare.used += n;
	spare.out++;
	return q + SPARE_HDR;
}

/* p was lent: take it back. The latest loan returned gives its room
 * back at once (loans are mostly freed in the reverse order); the rest
 * comes back when no loan is out. */
static bool spare_give(void *p)
{
	char *q = (char *)p - SPARE_HDR;

	if (!spare.p || (char *)p < spare.p || (char *)p >= spare.p + spare.len)
		return false;
	if (spare.used > spare.dirty)
		spare.dirty = spare.used;
	if (q + *(size_t *)q == spare.p + spare.used)
		spare.used -= *(size_t *)q;
	if (--spare.out)
		return true;
	spare.used = 0;
	if (spare.orphan) {
		munmap(spare.p, spare.len);
		spare.p = NULL;
	}
	return true;
}

static void *huge_map(size_t len)
{
	size_t n = huge_len(len ? len : 1);
	char *p = mmap(NULL, n + RM_HUGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *a;

	if (p == MAP_FAILED)
		return NULL;
	/* aligned, so the kernel can back it with whole huge pages */
	a = (char *)(((unsigned long)p + RM_HUGE - 1) & ~(RM_HUGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + n < p + n + RM_HUGE)
		munmap(a + n, (size_t)(p + n + RM_HUGE - (a + n)));
	madvise(a, n, MADV_HUGEPAGE);
	return a;
}

void *rm_huge_alloc(size_t len)
{
	void *q = spare_take(len);

	return q ? q : huge_map(len);
}

void *rm_huge_alloc_filled(size_t len)
{
	/* the block's own pages, at least one: a loan never overlaps it */
	size_t page = 4096, own = len ? len : 1, n = huge_len(own);
	size_t used = (own + page - 1) & ~(page - 1);
	char *a = huge_map(len);

	if (!a)
		return NULL;
	madvise(a, n, MADV_POPULATE_WRITE);
	if (!spare.p && n > used) {
		memset(&spare, 0, sizeof(spare));
		spare.p = a + used;
		spare.len = n - used;
	}
	return a;
}

void rm_huge_free(void *p, size_t len)
{
	size_t n = huge_len(len ? len : 1);

	if (!p || spare_give(p))
		return;
	if (spare.p >= (char *)p && spare.p < (char *)p + n) {
		if (spare.out) { /* the last loan's return unmaps the rest */
			munmap(p, (size_t)(spare.p - (char *)p));
			spare.orphan = true;
			return;
		}
		spare.p = NULL;
	}
	munmap(p, n);
}

void *rm_scratch_alloc(size_t len)
{
	void *q = spare_take(len);

	return q ? q : calloc(1, len ? len : 1);
}

void rm_scratch_free(void *p)
{
	if (p && !spare_give(p))
		free(p);
}
