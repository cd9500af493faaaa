/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Request keys: read the application's key out of a UDP request and hash
 * it with the keyed hash, compiled unchanged into the BPF program and
 * userspace (ringctl lookup --key, tests, benchmarks), so the kernel and
 * every tool agree on each key's owner bit for bit.
 *
 * The data plane copies the first RM_KEY_WINDOW bytes of the UDP payload
 * (never more than the UDP and IP lengths allow) into a struct rm_key_buf
 * and calls rm_key_extract(); userspace fills the same struct from a
 * datagram or builds the key bytes from text (rm_key_from_text()). The
 * key's bytes then go through rm_key_hash(): SipHash-1-3 under the same
 * seed as flows, of exactly the key's bytes.
 *
 * Extractors (enum rm_key_kind):
 *   memcached  the 8-byte UDP frame header (request id, sequence number,
 *              datagram count, reserved), then
 *              - an ASCII command: get gets gat gats touch set add replace
 *                append prepend cas delete incr decr, or a meta command
 *                mg ms md ma; the key is the first key token (for gat and
 *                gats the one after the expiry), 1..250 bytes ending in a
 *                space, CR or LF. Multi-key gets route by their first key:
 *                clients that batch keys of different shards must split
 *                the batch. Meta commands' base64 keys (flag b) are hashed
 *                as sent.
 *              - a binary request (magic 0x80): the key at 24 + extras
 *                length, key length from the header, 1..250 bytes.
 *   dns        the first question's QNAME in wire format (length octets
 *              and the final zero included), ASCII letters lowercased,
 *              every label length checked, at most 255 bytes; a
 *              compression pointer or a reserved label type is malformed.
 *   bytes      spec.len bytes at payload offset spec.off.
 *   token      from payload offset spec.off up to the first of
 *              spec.delims, 1..spec.len bytes.
 * A key must end inside the datagram (a token or memcached key without
 * its delimiter is truncated) and inside the window.
 *
 * A request whose key cannot be read goes by the flow hash and is counted
 * with the reason (RM_KEY_* results, key-fallback-* counters): it is never
 * routed on part of a key, and never dropped for that alone.
 *
 * Loops are bounded by constants and every byte index is masked to the
 * buffer it reads, so the BPF verifier accepts each extractor as it is.
 */
#ifndef RM_KEY_H
#define RM_KEY_H

#include "rm_common.h"
#include "rm_hash.h"

/* Payload bytes an extractor sees: a memcached key fits with its frame
 * header, longest command and 255 bytes of binary extras; a DNS name
 * with its header. A power of two: byte indexes are masked with it. */
#define RM_KEY_WINDOW 512
#define RM_KEY_MAX 255	      /* longest key any extractor yields */
#define RM_KEY_MC_MAX 250     /* memcached's own key limit */
#define RM_KEY_DNS_HDR 12     /* DNS header before the question */
#define RM_KEY_MC_FRAME 8     /* memcached UDP frame header */
#define RM_KEY_MC_BIN_HDR 24  /* memcached binary request header */
#define RM_KEY_MC_BIN_MAGIC 0x80
#define RM_KEY_MC_SKIP_MAX 32 /* gat's expiry token, at most */

/* A key buffer of RM_KEY_BUF bytes: the key, zero bytes up to the next
 * 8-byte boundary past it (what rm_key_hash() reads), masked indexes. */
#define RM_KEY_BUF 512

enum rm_key_result {
	RM_KEY_OK = 0,
	RM_KEY_TRUNCATED, /* the datagram ends before the key does */
	RM_KEY_TOO_LONG,  /* longer than the limit, or past the window */
	RM_KEY_NO_KEY,	  /* unknown command, no key in the request */
	RM_KEY_MALFORMED, /* DNS name with a pointer or bad label */
	RM_KEY_MULTI,	  /* memcached: one datagram of several */
	RM_KEY_RESULT_NR,
};

/* Everything an extraction reads and writes: one per CPU in the data
 * plane (too big for the BPF stack), any memory in userspace. */
struct rm_key_buf {
	__u8 win[RM_KEY_WINDOW];	 /* payload bytes [0, wlen) */
	__u64 key[RM_KEY_BUF / 8];	 /* out: key bytes [0, klen), zero tail */
	struct rm_key_spec spec;	 /* in */
	__u32 wlen;			 /* in: bytes in win */
	__u32 plen;			 /* in: payload length (>= wlen) */
	__u32 klen;			 /* out */
	__u32 pad;
};

#ifdef __BPF__
/* BPF global functions: the verifier checks each extractor once, on its
 * own, whatever path reaches it (the same reason as in bpf/parse.h). */
#define RM_KEY_FN __noinline
#else
#define RM_KEY_FN static inline
#endif

#define RM_KEY_W(b, i) ((b)->win[(i) & (RM_KEY_WINDOW - 1)])
#define RM_KEY_K(b) ((__u8 *)(b)->key)
#define RM_KEY_PUT(b, j, c) (RM_KEY_K(b)[(j) & (RM_KEY_BUF - 1)] = (c))

RM_INLINE int rm_key_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c | 0x20 : c;
}

/* Zero the key buffer from klen to the end of its word and set klen. */
RM_INLINE void rm_key_done(struct rm_key_buf *b, __u32 klen)
{
	__u32 j;

	for (j = 0; j < 8; j++)
		if (((klen + j) & 7) || !j)
			RM_KEY_PUT(b, klen + j, 0);
		else
			break;
	b->klen = klen;
}

/* A key ended by the end of the data, not by its delimiter: cut by the
 * datagram, or by the window (then too long for us to read). */
RM_INLINE int rm_key_cut(const struct rm_key_buf *b)
{
	return b->wlen < b->plen ? RM_KEY_TOO_LONG : RM_KEY_TRUNCATED;
}

/* Delimiter set as a 256-bit map in four words. */
struct rm_key_delims {
	__u64 m[4];
};

RM_INLINE void rm_key_delim_add(struct rm_key_delims *d, __u8 c)
{
	d->m[c >> 6] |= 1ULL << (c & 63);
}

RM_INLINE int rm_key_is_delim(const struct rm_key_delims *d,
					   __u8 c)
{
	__u64 w = c < 64 ? d->m[0] : c < 128 ? d->m[1] : c < 192 ? d->m[2]
								 : d->m[3];

	return (w >> (c & 63)) & 1;
}

/* ---- memcached --------------------------------------------------------- */
#define RM_KEY_C2(a, b) (((__u64)(a) << 8) | (b))
#define RM_KEY_C3(a, b, c) ((RM_KEY_C2(a, b) << 8) | (c))
#define RM_KEY_C4(a, b, c, d) ((RM_KEY_C3(a, b, c) << 8) | (d))
#define RM_KEY_C5(a, b, c, d, e) ((RM_KEY_C4(a, b, c, d) << 8) | (e))
#define RM_KEY_C6(a, b, c, d, e, f) ((RM_KEY_C5(a, b, c, d, e) << 8) | (f))
#define RM_KEY_C7(a, b, c, d, e, f, g)                                     \
	((RM_KEY_C6(a, b, c, d, e, f) << 8) | (g))

/* Tokens a command has before its key: 0 or 1, or -1 for a command with
 * no key we know of. cmd holds the command's bytes, first one highest. */
RM_INLINE int rm_key_mc_skip(__u64 cmd)
{
	switch (cmd) {
	case RM_KEY_C3('g', 'e', 't'):
	case RM_KEY_C4('g', 'e', 't', 's'):
	case RM_KEY_C5('t', 'o', 'u', 'c', 'h'):
	case RM_KEY_C3('s', 'e', 't'):
	case RM_KEY_C3('a', 'd', 'd'):
	case RM_KEY_C7('r', 'e', 'p', 'l', 'a', 'c', 'e'):
	case RM_KEY_C6('a', 'p', 'p', 'e', 'n', 'd'):
	case RM_KEY_C7('p', 'r', 'e', 'p', 'e', 'n', 'd'):
	case RM_KEY_C3('c', 'a', 's'):
	case RM_KEY_C6('d', 'e', 'l', 'e', 't', 'e'):
	case RM_KEY_C4('i', 'n', 'c', 'r'):
	case RM_KEY_C4('d', 'e', 'c', 'r'):
	case RM_KEY_C2('m', 'g'):
	case RM_KEY_C2('m', 's'):
	case RM_KEY_C2('m', 'd'):
	case RM_KEY_C2('m', 'a'):
		return 0;
	case RM_KEY_C3('g', 'a', 't'):
	case RM_KEY_C4('g', 'a', 't', 's'):
		return 1; /* gat <exptime> <key>* */
	}
	return -1;
}

/* Copy len (1..RM_KEY_MAX) bytes at start as the key, if they are all
 * in the datagram and in the window. */
RM_INLINE int rm_key_copy_run(struct rm_key_buf *b, __u32 start, __u32 len)
{
	__u32 j;

	if (start + len > b->plen)
		return RM_KEY_TRUNCATED;
	if (start + len > b->wlen)
		return RM_KEY_TOO_LONG;
	for (j = 0; j < RM_KEY_MAX; j++) {
		if (j >= len)
			break;
		RM_KEY_PUT(b, j, RM_KEY_W(b, start + j));
	}
	rm_key_done(b, len);
	return RM_KEY_OK;
}

/* The delimiters of a token: memcached's (space, CR, LF) or spec's. */
RM_INLINE void rm_key_delims_of(const struct rm_key_buf *b,
					     int mc, struct rm_key_delims *d)
{
	__u32 i;

	d->m[0] = d->m[1] = d->m[2] = d->m[3] = 0;
	if (mc) {
		rm_key_delim_add(d, ' ');
		rm_key_delim_add(d, '\r');
		rm_key_delim_add(d, '\n');
		return;
	}
	for (i = 0; i < RM_KEY_DELIMS_MAX; i++)
		if (i < b->spec.ndelims)
			rm_key_delim_add(d, b->spec.delims[i]);
}

/* Copy the key at pos up to a delimiter (memcached's if mc, else the
 * spec's), 1..max bytes. Global in BPF, like the helper below, so the
 * verifier sees pos as any value once rather than each value it can have
 * after the command before it. */
RM_KEY_FN int rm_key_copy_token(struct rm_key_buf *b, __u32 pos, __u32 max,
				int mc)
{
	struct rm_key_delims d;
	__u32 j;

	if (!b)
		return RM_KEY_NO_KEY;
	rm_key_delims_of(b, mc, &d);
	for (j = 0; j < RM_KEY_MAX + 1; j++) {
		__u8 c;

		if (pos + j >= b->wlen)
			return rm_key_cut(b);
		c = RM_KEY_W(b, pos + j);
		if (rm_key_is_delim(&d, c)) {
			if (!j)
				return RM_KEY_NO_KEY;
			rm_key_done(b, j);
			return RM_KEY_OK;
		}
		if (j >= max)
			return RM_KEY_TOO_LONG;
		RM_KEY_PUT(b, j, c);
	}
	return RM_KEY_TOO_LONG;
}

/* The first byte at or after pos that is no space (memcached's
 * tokenizer treats a run of spaces as one). */
RM_KEY_FN __u32 rm_key_skip_spaces(const struct rm_key_buf *b, __u32 pos)
{
	__u32 i;

	if (!b)
		return 0;
	for (i = 0; i < RM_KEY_WINDOW; i++) {
		if (pos >= b->wlen || RM_KEY_W(b, pos) != ' ')
			break;
		pos++;
	}
	return pos;
}

RM_KEY_FN int rm_key_mc_binary(struct rm_key_buf *b)
{
	__u32 h = RM_KEY_MC_FRAME, klen, start;

	if (!b)
		return RM_KEY_NO_KEY;
	if (b->wlen < h + RM_KEY_MC_BIN_HDR)
		return rm_key_cut(b);
	klen = ((__u32)RM_KEY_W(b, h + 2) << 8) | RM_KEY_W(b, h + 3);
	start = h + RM_KEY_MC_BIN_HDR + RM_KEY_W(b, h + 4);
	if (!klen)
		return RM_KEY_NO_KEY;
	if (klen > RM_KEY_MC_MAX)
		return RM_KEY_TOO_LONG;
	return rm_key_copy_run(b, start, klen);
}

/* A word of 1..max bytes at *pos ended by a space (the command, or
 * gat's expiry): RM_KEY_OK with *pos on that space and the word's bytes
 * in *word (first one highest; only the last 8 kept), else why not. */
RM_INLINE int rm_key_mc_word(const struct rm_key_buf *b, __u32 *pos,
			     __u32 max, __u64 *word)
{
	__u32 i;

	for (i = 0; i <= max; i++) {
		__u8 c;

		if (*pos >= b->wlen)
			return rm_key_cut(b);
		c = RM_KEY_W(b, *pos);
		if (c == ' ')
			return i ? RM_KEY_OK : RM_KEY_NO_KEY;
		if (c == '\r' || c == '\n' || i == max)
			return RM_KEY_NO_KEY;
		*word = (*word << 8) | c;
		(*pos)++;
	}
	return RM_KEY_NO_KEY;
}

RM_KEY_FN int rm_key_mc_ascii(struct rm_key_buf *b)
{
	__u32 pos = RM_KEY_MC_FRAME;
	__u64 cmd = 0, expiry = 0;
	int skip, res;

	if (!b)
		return RM_KEY_NO_KEY;
	/* the command: up to 7 letters, then a space */
	res = rm_key_mc_word(b, &pos, 7, &cmd);
	if (res != RM_KEY_OK)
		return res;
	skip = rm_key_mc_skip(cmd);
	if (skip < 0)
		return RM_KEY_NO_KEY;
	pos = rm_key_skip_spaces(b, pos);
	if (skip) {
		res = rm_key_mc_word(b, &pos, RM_KEY_MC_SKIP_MAX - 1, &expiry);
		if (res != RM_KEY_OK)
			return res;
		pos = rm_key_skip_spaces(b, pos);
	}
	return rm_key_copy_token(b, pos, RM_KEY_MC_MAX, 1);
}

RM_INLINE int rm_key_memcached(struct rm_key_buf *b)
{
	if (b->wlen < RM_KEY_MC_FRAME + 1)
		return rm_key_cut(b);
	/* sequence number 0 of 1 datagram (a count of 0 is taken as 1) */
	if (RM_KEY_W(b, 2) || RM_KEY_W(b, 3) || RM_KEY_W(b, 4) ||
	    RM_KEY_W(b, 5) > 1)
		return RM_KEY_MULTI;
	if (RM_KEY_W(b, RM_KEY_MC_FRAME) == RM_KEY_MC_BIN_MAGIC)
		return rm_key_mc_binary(b);
	return rm_key_mc_ascii(b);
}

/* ---- DNS --------------------------------------------------------------- */
RM_KEY_FN int rm_key_dns(struct rm_key_buf *b)
{
	__u32 next = RM_KEY_DNS_HDR, i;

	if (!b)
		return RM_KEY_NO_KEY;
	if (b->wlen < RM_KEY_DNS_HDR + 1)
		return rm_key_cut(b);
	/* QDCOUNT */
	if (!RM_KEY_W(b, 4) && !RM_KEY_W(b, 5))
		return RM_KEY_NO_KEY;
	for (i = 0; i < RM_KEY_MAX; i++) {
		__u32 p = RM_KEY_DNS_HDR + i;
		__u8 c;

		if (p >= b->wlen)
			return rm_key_cut(b);
		c = RM_KEY_W(b, p);
		if (p != next) {
			RM_KEY_PUT(b, i, rm_key_lower(c));
			continue;
		}
		/* a length octet: 0 ends the name; 0xc0 is a pointer,
		 * 0x40 and 0x80 reserved label types; 1..63 a label */
		if (c & 0xc0)
			return RM_KEY_MALFORMED;
		RM_KEY_PUT(b, i, c);
		if (!c) {
			rm_key_done(b, i + 1);
			return RM_KEY_OK;
		}
		next = p + 1 + c;
	}
	return RM_KEY_TOO_LONG; /* a name is at most 255 bytes */
}

/* ---- generic ----------------------------------------------------------- */
RM_KEY_FN int rm_key_bytes(struct rm_key_buf *b)
{
	if (!b)
		return RM_KEY_NO_KEY;
	if (!b->spec.len || b->spec.len > RM_KEY_MAX)
		return RM_KEY_NO_KEY;
	return rm_key_copy_run(b, b->spec.off, b->spec.len);
}

RM_INLINE int rm_key_token(struct rm_key_buf *b)
{
	return rm_key_copy_token(b, b->spec.off, b->spec.len, 0);
}

/* Read the key b->spec names from b->win; RM_KEY_OK with the key in
 * b->key[0..b->klen), or why not. */
RM_INLINE int rm_key_extract(struct rm_key_buf *b)
{
	b->klen = 0;
	switch (b->spec.kind) {
	case RM_KEY_MEMCACHED:
		return rm_key_memcached(b);
	case RM_KEY_DNS:
		return rm_key_dns(b);
	case RM_KEY_BYTES:
		return rm_key_bytes(b);
	case RM_KEY_TOKEN:
		return rm_key_token(b);
	}
	return RM_KEY_NO_KEY;
}

/* SipHash-1-3 of the len key bytes in w (zero from len to the end of its
 * word, as rm_key_done() leaves them); the low 32 bits, like flows. */
RM_INLINE __u32 rm_key_hash(const struct rm_seed *seed, const __u64 *w,
			    __u32 len)
{
	__u64 last = (__u64)len << 56;
	struct rm_sip s;
	__u32 i;

	rm_sip_init(&s, seed);
	for (i = 0; i < RM_KEY_BUF / 8; i++) {
		__u64 m = w[i & (RM_KEY_BUF / 8 - 1)];

		if ((i + 1) * 8 > len) {
			last |= m;
			break;
		}
		rm_sip_word(&s, m);
	}
	return (__u32)rm_sip_final(&s, last);
}

#ifndef __BPF__
/* The key bytes the data plane hashes for a key given as text:
 * memcached, bytes and token keys as they are (bytes: exactly spec.len
 * of them; token: no delimiter in it), a DNS name ("Example.com." or
 * without the final dot; "." is the root) in lowercased wire format.
 * 0, or RM_KEY_TOO_LONG / RM_KEY_NO_KEY (empty, or a delimiter or space
 * inside) / RM_KEY_MALFORMED (empty DNS label, label over 63 bytes). */
static inline int rm_key_from_text(const struct rm_key_spec *spec,
				   const char *text, __u32 len,
				   struct rm_key_buf *b)
{
	__u8 *k = RM_KEY_K(b);
	__u32 i, j, max;

	b->klen = 0;
	if (spec->kind == RM_KEY_DNS) {
		__u32 lab = 0; /* where the current label's length goes */

		if (len == 1 && text[0] == '.')
			len = 0;
		else if (len && text[len - 1] == '.')
			len--;
		if (len + 2 > RM_KEY_MAX)
			return RM_KEY_TOO_LONG;
		for (i = 0, j = 1; i <= len; i++, j++) {
			if (i == len || text[i] == '.') {
				__u32 n = j - lab - 1;

				if ((!n && len) || n > 63)
					return RM_KEY_MALFORMED;
				k[lab] = (__u8)n;
				lab = j;
			} else {
				k[j] = (__u8)rm_key_lower((__u8)text[i]);
			}
		}
		if (len)
			k[lab] = 0; /* the root label */
		rm_key_done(b, len ? len + 2 : 1);
		return RM_KEY_OK;
	}
	max = spec->kind == RM_KEY_MEMCACHED ? RM_KEY_MC_MAX
	      : spec->kind == RM_KEY_FLOW    ? 0
					     : spec->len;
	if (!len)
		return RM_KEY_NO_KEY;
	if (len > max ||
	    (spec->kind == RM_KEY_BYTES && len != spec->len))
		return len > max ? RM_KEY_TOO_LONG : RM_KEY_NO_KEY;
	for (i = 0; i < len; i++) {
		__u8 c = (__u8)text[i];

		if (spec->kind == RM_KEY_MEMCACHED &&
		    (c == ' ' || c == '\r' || c == '\n'))
			return RM_KEY_NO_KEY;
		if (spec->kind == RM_KEY_TOKEN)
			for (j = 0; j < spec->ndelims; j++)
				if (c == spec->delims[j])
					return RM_KEY_NO_KEY;
		k[i] = c;
	}
	rm_key_done(b, len);
	return RM_KEY_OK;
}
#endif

#endif /* RM_KEY_H */
