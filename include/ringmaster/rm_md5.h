/* SPDX-License-Identifier: GPL-2.0 */
/*
 * MD5 (RFC 1321) of a short message, compiled unchanged into the BPF
 * program and userspace: the hash of the ring schemes that agree with
 * existing clients (ketama, md5-vnodes: rm_owner.h). MD5 is unkeyed and
 * broken as a cryptographic hash; it is here only because those clients
 * place keys with it, and the director must place them the same way.
 *
 * The message is len (0..RM_MD5_MAX) bytes at the start of a buffer of
 * RM_MD5_BUF bytes, read 4 at a time; every read is masked to the
 * buffer, and bytes at and past len are never used (the padding is
 * computed, not read), so the buffer needs no particular tail. Padding
 * and the length word are folded in without branches and the block loop
 * is bounded by a constant, so the verifier accepts it as it is.
 */
#ifndef RM_MD5_HDR
#define RM_MD5_HDR

#include "rm_common.h"

#define RM_MD5_BUF 512 /* bytes the buffer holds: a power of two */
#define RM_MD5_MAX 255 /* longest message: a key, a vnode's name */
/* blocks of the longest message: its bytes, 0x80, the 8-byte length */
#define RM_MD5_MAX_BLOCKS ((RM_MD5_MAX + 1 + 8 + 63) / 64)

/* The digest as four little-endian words: bytes 0-3 are h[0], and so on. */
struct rm_md5 {
	__u32 h[4];
};

#define RM_MD5_F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define RM_MD5_G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define RM_MD5_H(x, y, z) ((x) ^ (y) ^ (z))
#define RM_MD5_I(x, y, z) ((y) ^ ((x) | ~(z)))
#define RM_MD5_STEP(f, a, b, c, d, xk, t, s)                               \
	do {                                                               \
		(a) += f((b), (c), (d)) + (xk) + (__u32)(t);               \
		(a) = ((a) << (s)) | ((a) >> (32 - (s)));                  \
		(a) += (b);                                                \
	} while (0)

/* The compiler may not see through the value: it would turn the masks
 * below back into compares and branches, and a branch on the length at
 * every byte makes the verifier walk every length on its own. */
#define RM_MD5_OPAQUE(v) asm volatile("" : "+r"(v))

/* 1 if a == b, else 0, without a branch. */
RM_INLINE __u32 rm_md5_eq(__u32 a, __u32 b)
{
	__u64 d = (__u64)(a ^ b) - 1;

	RM_MD5_OPAQUE(d);
	return (__u32)(d >> 63);
}

/* The little-endian word at byte i (a multiple of 4) of the padded
 * message, the length word aside: the message's bytes before len, 0x80
 * at len, zeros after. One aligned load and masks, no branch. */
RM_INLINE __u32 rm_md5_word(const __u8 *buf, __u32 len, __u32 i)
{
	__s64 left = (__s64)len - (__s64)i; /* message bytes from i on */
	__u64 past, n, full, keep, pad;
	__u32 w;

	__builtin_memcpy(&w, buf + (i & (RM_MD5_BUF - 4)), 4);
	RM_MD5_OPAQUE(left);
	past = (__u64)left >> 63;	   /* 1: the message ended before i */
	n = (__u64)left & (past - 1);	   /* max(left, 0) */
	full = (__u64)(3 - (__s64)n) >> 63; /* 1: n >= 4 */
	RM_MD5_OPAQUE(full);
	n = (n & (full - 1)) | (4 & (0 - full)); /* min(n, 4) */
	keep = (1ULL << (n * 8)) - 1;
	/* n = 4 puts it past the word, where the cast drops it */
	pad = (0x80ULL << (n * 8)) & (past - 1);
	return (__u32)((w & keep) | pad);
}

/* Word k of the block. In BPF a fresh load at every use: clang would
 * otherwise keep the 16 words live across the four rounds and spill
 * them (200 bytes of stack on top of the block's own 64), which the
 * director's deepest call chain cannot spare (the verifier's 512). */
#ifdef __BPF__
#define RM_MD5_X(x, k) (*(volatile const __u32 *)&(x)[k])
#else
#define RM_MD5_X(x, k) ((x)[k])
#endif

RM_INLINE void rm_md5_block(__u32 *h, const __u32 *x)
{
	__u32 a = h[0], b = h[1], c = h[2], d = h[3];

	RM_MD5_STEP(RM_MD5_F, a, b, c, d, RM_MD5_X(x, 0), 0xd76aa478, 7);
	RM_MD5_STEP(RM_MD5_F, d, a, b, c, RM_MD5_X(x, 1), 0xe8c7b756, 12);
	RM_MD5_STEP(RM_MD5_F, c, d, a, b, RM_MD5_X(x, 2), 0x242070db, 17);
	RM_MD5_STEP(RM_MD5_F, b, c, d, a, RM_MD5_X(x, 3), 0xc1bdceee, 22);
	RM_MD5_STEP(RM_MD5_F, a, b, c, d, RM_MD5_X(x, 4), 0xf57c0faf, 7);
	RM_MD5_STEP(RM_MD5_F, d, a, b, c, RM_MD5_X(x, 5), 0x4787c62a, 12);
	RM_MD5_STEP(RM_MD5_F, c, d, a, b, RM_MD5_X(x, 6), 0xa8304613, 17);
	RM_MD5_STEP(RM_MD5_F, b, c, d, a, RM_MD5_X(x, 7), 0xfd469501, 22);
	RM_MD5_STEP(RM_MD5_F, a, b, c, d, RM_MD5_X(x, 8), 0x698098d8, 7);
	RM_MD5_STEP(RM_MD5_F, d, a, b, c, RM_MD5_X(x, 9), 0x8b44f7af, 12);
	RM_MD5_STEP(RM_MD5_F, c, d, a, b, RM_MD5_X(x, 10), 0xffff5bb1, 17);
	RM_MD5_STEP(RM_MD5_F, b, c, d, a, RM_MD5_X(x, 11), 0x895cd7be, 22);
	RM_MD5_STEP(RM_MD5_F, a, b, c, d, RM_MD5_X(x, 12), 0x6b901122, 7);
	RM_MD5_STEP(RM_MD5_F, d, a, b, c, RM_MD5_X(x, 13), 0xfd987193, 12);
	RM_MD5_STEP(RM_MD5_F, c, d, a, b, RM_MD5_X(x, 14), 0xa679438e, 17);
	RM_MD5_STEP(RM_MD5_F, b, c, d, a, RM_MD5_X(x, 15), 0x49b40821, 22);

	RM_MD5_STEP(RM_MD5_G, a, b, c, d, RM_MD5_X(x, 1), 0xf61e2562, 5);
	RM_MD5_STEP(RM_MD5_G, d, a, b, c, RM_MD5_X(x, 6), 0xc040b340, 9);
	RM_MD5_STEP(RM_MD5_G, c, d, a, b, RM_MD5_X(x, 11), 0x265e5a51, 14);
	RM_MD5_STEP(RM_MD5_G, b, c, d, a, RM_MD5_X(x, 0), 0xe9b6c7aa, 20);
	RM_MD5_STEP(RM_MD5_G, a, b, c, d, RM_MD5_X(x, 5), 0xd62f105d, 5);
	RM_MD5_STEP(RM_MD5_G, d, a, b, c, RM_MD5_X(x, 10), 0x02441453, 9);
	RM_MD5_STEP(RM_MD5_G, c, d, a, b, RM_MD5_X(x, 15), 0xd8a1e681, 14);
	RM_MD5_STEP(RM_MD5_G, b, c, d, a, RM_MD5_X(x, 4), 0xe7d3fbc8, 20);
	RM_MD5_STEP(RM_MD5_G, a, b, c, d, RM_MD5_X(x, 9), 0x21e1cde6, 5);
	RM_MD5_STEP(RM_MD5_G, d, a, b, c, RM_MD5_X(x, 14), 0xc33707d6, 9);
	RM_MD5_STEP(RM_MD5_G, c, d, a, b, RM_MD5_X(x, 3), 0xf4d50d87, 14);
	RM_MD5_STEP(RM_MD5_G, b, c, d, a, RM_MD5_X(x, 8), 0x455a14ed, 20);
	RM_MD5_STEP(RM_MD5_G, a, b, c, d, RM_MD5_X(x, 13), 0xa9e3e905, 5);
	RM_MD5_STEP(RM_MD5_G, d, a, b, c, RM_MD5_X(x, 2), 0xfcefa3f8, 9);
	RM_MD5_STEP(RM_MD5_G, c, d, a, b, RM_MD5_X(x, 7), 0x676f02d9, 14);
	RM_MD5_STEP(RM_MD5_G, b, c, d, a, RM_MD5_X(x, 12), 0x8d2a4c8a, 20);

	RM_MD5_STEP(RM_MD5_H, a, b, c, d, RM_MD5_X(x, 5), 0xfffa3942, 4);
	RM_MD5_STEP(RM_MD5_H, d, a, b, c, RM_MD5_X(x, 8), 0x8771f681, 11);
	RM_MD5_STEP(RM_MD5_H, c, d, a, b, RM_MD5_X(x, 11), 0x6d9d6122, 16);
	RM_MD5_STEP(RM_MD5_H, b, c, d, a, RM_MD5_X(x, 14), 0xfde5380c, 23);
	RM_MD5_STEP(RM_MD5_H, a, b, c, d, RM_MD5_X(x, 1), 0xa4beea44, 4);
	RM_MD5_STEP(RM_MD5_H, d, a, b, c, RM_MD5_X(x, 4), 0x4bdecfa9, 11);
	RM_MD5_STEP(RM_MD5_H, c, d, a, b, RM_MD5_X(x, 7), 0xf6bb4b60, 16);
	RM_MD5_STEP(RM_MD5_H, b, c, d, a, RM_MD5_X(x, 10), 0xbebfbc70, 23);
	RM_MD5_STEP(RM_MD5_H, a, b, c, d, RM_MD5_X(x, 13), 0x289b7ec6, 4);
	RM_MD5_STEP(RM_MD5_H, d, a, b, c, RM_MD5_X(x, 0), 0xeaa127fa, 11);
	RM_MD5_STEP(RM_MD5_H, c, d, a, b, RM_MD5_X(x, 3), 0xd4ef3085, 16);
	RM_MD5_STEP(RM_MD5_H, b, c, d, a, RM_MD5_X(x, 6), 0x04881d05, 23);
	RM_MD5_STEP(RM_MD5_H, a, b, c, d, RM_MD5_X(x, 9), 0xd9d4d039, 4);
	RM_MD5_STEP(RM_MD5_H, d, a, b, c, RM_MD5_X(x, 12), 0xe6db99e5, 11);
	RM_MD5_STEP(RM_MD5_H, c, d, a, b, RM_MD5_X(x, 15), 0x1fa27cf8, 16);
	RM_MD5_STEP(RM_MD5_H, b, c, d, a, RM_MD5_X(x, 2), 0xc4ac5665, 23);

	RM_MD5_STEP(RM_MD5_I, a, b, c, d, RM_MD5_X(x, 0), 0xf4292244, 6);
	RM_MD5_STEP(RM_MD5_I, d, a, b, c, RM_MD5_X(x, 7), 0x432aff97, 10);
	RM_MD5_STEP(RM_MD5_I, c, d, a, b, RM_MD5_X(x, 14), 0xab9423a7, 15);
	RM_MD5_STEP(RM_MD5_I, b, c, d, a, RM_MD5_X(x, 5), 0xfc93a039, 21);
	RM_MD5_STEP(RM_MD5_I, a, b, c, d, RM_MD5_X(x, 12), 0x655b59c3, 6);
	RM_MD5_STEP(RM_MD5_I, d, a, b, c, RM_MD5_X(x, 3), 0x8f0ccc92, 10);
	RM_MD5_STEP(RM_MD5_I, c, d, a, b, RM_MD5_X(x, 10), 0xffeff47d, 15);
	RM_MD5_STEP(RM_MD5_I, b, c, d, a, RM_MD5_X(x, 1), 0x85845dd1, 21);
	RM_MD5_STEP(RM_MD5_I, a, b, c, d, RM_MD5_X(x, 8), 0x6fa87e4f, 6);
	RM_MD5_STEP(RM_MD5_I, d, a, b, c, RM_MD5_X(x, 15), 0xfe2ce6e0, 10);
	RM_MD5_STEP(RM_MD5_I, c, d, a, b, RM_MD5_X(x, 6), 0xa3014314, 15);
	RM_MD5_STEP(RM_MD5_I, b, c, d, a, RM_MD5_X(x, 13), 0x4e0811a1, 21);
	RM_MD5_STEP(RM_MD5_I, a, b, c, d, RM_MD5_X(x, 4), 0xf7537e82, 6);
	RM_MD5_STEP(RM_MD5_I, d, a, b, c, RM_MD5_X(x, 11), 0xbd3af235, 10);
	RM_MD5_STEP(RM_MD5_I, c, d, a, b, RM_MD5_X(x, 2), 0x2ad7d2bb, 15);
	RM_MD5_STEP(RM_MD5_I, b, c, d, a, RM_MD5_X(x, 9), 0xeb86d391, 21);

	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
}

/* MD5 of buf[0, len) (len is clamped to RM_MD5_MAX: callers pass no
 * more) into *out. */
RM_INLINE void rm_md5(const __u8 *buf, __u32 len, struct rm_md5 *out)
{
	__u32 x[16], blk, j, nb, last;

	if (len > RM_MD5_MAX)
		len = RM_MD5_MAX;
	nb = (len + 8) / 64 + 1;
	out->h[0] = 0x67452301;
	out->h[1] = 0xefcdab89;
	out->h[2] = 0x98badcfe;
	out->h[3] = 0x10325476;
	for (blk = 0; blk < RM_MD5_MAX_BLOCKS; blk++) {
		if (blk >= nb)
			break;
		for (j = 0; j < 16; j++)
			x[j] = rm_md5_word(buf, len, blk * 64 + j * 4);
		/* the last block ends with the length in bits (< 2^32) */
		last = 0u - rm_md5_eq(blk, nb - 1);
		x[14] |= (len << 3) & last;
		rm_md5_block(out->h, x);
	}
}

#endif /* RM_MD5_HDR */
