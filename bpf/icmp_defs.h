/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ICMPv4 message types and codes (RFC 792, RFC 1191) for the BPF objects.
 *
 * Why not <linux/icmp.h>: it includes <linux/if.h>, which includes glibc's
 * <sys/socket.h>; under -target bpf glibc then wants the 32-bit stubs that
 * only libc6-dev-i386 has, so a fresh machine cannot build. BPF objects
 * include no glibc header (tests/build/test_bpf_headers.sh enforces it).
 */
#ifndef RM_BPF_ICMP_DEFS_H
#define RM_BPF_ICMP_DEFS_H

#include <linux/types.h>

#define RM_ICMP_ECHOREPLY 0
#define RM_ICMP_DEST_UNREACH 3
#define RM_ICMP_TIME_EXCEEDED 11
#define RM_ICMP_FRAG_NEEDED 4 /* code of RM_ICMP_DEST_UNREACH */

/* The fixed part of every ICMPv4 message; un.frag.mtu for frag-needed. */
struct rm_icmphdr {
	__u8 type;
	__u8 code;
	__sum16 checksum;
	union {
		__be32 rest;
		struct {
			__be16 unused;
			__be16 mtu;
		} frag;
	} un;
};

#endif
