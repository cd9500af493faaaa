/* SPDX-License-Identifier: GPL-2.0 */
/* Parsing and formatting shared by ringctl, ringload and the tests. */
#ifndef RM_UTIL_H
#define RM_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <ringmaster/rm_common.h>
#include "ring.h"

/* Exit codes of every tool. */
#define RM_EXIT_OK 0
#define RM_EXIT_RUNTIME 1
#define RM_EXIT_USAGE 2

/* Strict unsigned parse of the whole string within [min, max]. */
int rm_parse_u32(const char *s, __u32 min, __u32 max, __u32 *out);
int rm_parse_u64(const char *s, __u64 min, __u64 max, __u64 *out);
/* "a,b:2,c" -> specs (weight after ':' defaults to 1; ids = position).
 * *specs is malloc'd. -EINVAL on syntax, -ERANGE on weight. */
int rm_parse_nodes(const char *s, struct rm_node_spec **specs, __u32 *n);
/* 1..max bytes as hex digits (a 0x prefix allowed) -> out: the byte
 * count, or -EINVAL. */
int rm_parse_hex(const char *s, __u8 *out, size_t max);
/* n bytes as 2n lowercase hex digits and a NUL. */
void rm_format_hex(const __u8 *b, size_t n, char *out);
/* 32 hex digits (128 bits) -> seed; also accepts a 0x prefix. */
int rm_parse_seed(const char *s, struct rm_seed *seed);
void rm_format_seed(const struct rm_seed *seed, char out[33]);
/* IPv4 or IPv6 text -> be words, family RM_FAMILY_V4/V6. */
int rm_parse_addr(const char *s, __be32 addr[4], __u8 *family);
void rm_format_addr(const __be32 addr[4], __u8 family, char *out, size_t len);
/* A service key's VIP as text, in its family. */
void rm_format_svc_addr(const struct rm_svc_key *k, char *out, size_t len);
int rm_parse_mac(const char *s, __u8 mac[6]);
void rm_format_mac(const __u8 mac[6], char out[18]);
/* "tcp" / "udp" -> IPPROTO_*. */
int rm_parse_proto(const char *s, __u8 *proto);
const char *rm_proto_name(__u8 proto);
/* A text bar of width cells for fraction/max_fraction. */
void rm_bar(char *out, size_t len, double frac, double max_frac, int width);
/* splitmix64: the deterministic pseudo-random sequence tests, benchmarks
 * and test tools draw from (a fixed start makes every failure
 * reproducible). Not for anything that must be unpredictable. */
static inline __u64 rm_splitmix64(__u64 *state)
{
	__u64 z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Memory a command fills at once (a ring being built, a snapshot): in
 * transparent huge pages, 2 MB aligned, zeroed. On a VM the first touch
 * of each 4 kB page of a fresh mapping is an exit to the hypervisor
 * (tens of microseconds: a megabyte of small pages cost a command 6-25
 * ms); a huge page is one. Where none is to be had the kernel falls back
 * to small pages. NULL when out of memory; free with rm_huge_free() and
 * the same len. */
void *rm_huge_alloc(size_t len);
void rm_huge_free(void *p, size_t len);
/* The same, faulted in whole at once (MADV_POPULATE_WRITE), for a block
 * read at once (a snapshot). The rest of its last huge page, zeroed and
 * faulted in for nothing otherwise, is the command's scratch memory
 * until this block is freed: rm_huge_alloc() and rm_scratch_alloc() take
 * from it first (a ring's entries, the connection counts), so the
 * command touches no fresh small page for them. */
void *rm_huge_alloc_filled(size_t len);
/* len zeroed bytes from that scratch memory when it has room, else from
 * calloc; free with rm_scratch_free(). NULL when out of memory. */
void *rm_scratch_alloc(size_t len);
void rm_scratch_free(void *p);

/* Does the name obey the ring's name rules (1..31 of [A-Za-z0-9._-])? */
bool rm_name_valid(const char *name);

/* "0.1.0": the package's version, from debian/changelog (version.c) */
const char *rm_version(void);

#endif
