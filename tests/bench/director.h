/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The director as the benchmarks drive it: its skeleton loaded unpinned,
 * configured through the map fds (seed, one service, nodes, a ring built
 * by rm_ring_build and encoded into an inner array), and test packets.
 */
#ifndef RM_BENCH_DIRECTOR_H
#define RM_BENCH_DIRECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <ringmaster/rm_common.h>
#include "ring.h"

struct ringmaster_bpf;

struct director {
	struct ringmaster_bpf *skel;
	int prog_fd;
	int services_fd, rings_fd, nodes_fd, config_fd, counters_fd;
	int tx_ports_fd;
	int conns_fd; /* -1 until the data plane has a connection table */
	int ncpus;
};

/* Addresses of every benchmark, all in 198.18.0.0/15 (RFC 2544). */
#define BENCH_CLIENT_IP 0xc6120001u /* 198.18.0.1 */
#define BENCH_VIP 0xc6120101u	    /* 198.18.1.1 */
#define BENCH_NOT_VIP 0xc6120202u   /* 198.18.2.2 */
#define BENCH_PORT 80
#define BENCH_SVC_ID 0

int dir_open(struct director *d);
void dir_close(struct director *d);
/* Seed rm_config with the benchmark seed and RM_CFG_SEEDED. */
int dir_seed(struct director *d);
/* VIP:port/proto -> service id (vip host order). */
int dir_service(struct director *d, __u32 vip, __u16 port, __u8 proto,
		__u32 id);
/* The same, keyed by spec (rm_key.h) unless spec is NULL or flow. */
int dir_service_keyed(struct director *d, __u32 vip, __u16 port, __u8 proto,
		      __u32 id, const struct rm_key_spec *spec);
/* Node slot id: ACTIVE, weight 1, named bench_node_name(id). */
int dir_node(struct director *d, __u32 id, const __u8 mac[6],
	     const __u8 src_mac[6], __u32 ifindex, __u32 svc_id);
/* An inner ring array holding slots (rm_ring_map_create): fd or -errno. */
int dir_ring_map(const struct rm_slot *slots, __u32 nslots);
/* Make inner_fd service svc_id's ring. */
int dir_ring_install(struct director *d, __u32 svc_id, int inner_fd);
/* Counters summed over CPUs. */
int dir_counters(struct director *d, __u64 out[RM_CNT_MAX]);
const char *dir_counter_name(int id);
/* Is this counter an outcome (exactly one per packet)? */
bool dir_counter_is_outcome(int id);
/* Did runs packets move the counters from before to after as one path
 * does: outcome `want` by runs and every other outcome by 0, and conn-hit
 * by hits (unless hits < 0: not judged)? 0, or -1 with why. */
int dir_counters_moved(const __u64 *before, const __u64 *after, int want,
		       __u64 runs, long long hits, char *why, size_t wlen);

/* Load a data plane object (WHAT: "candidate", "reference": for the
 * messages) on the director's maps (a map the director does not have is
 * the object's own): its rm_xdp in *fd. `ringbench kernel|encap OBJ`
 * measure a changed data plane beside the built one this way. */
struct bpf_object;
int dir_obj_load(const struct director *d, const char *path, const char *what,
		 struct bpf_object **obj, int *fd);

/* Node MACs of the test_run benchmarks: 02:52:4d:01:hi:lo. */
void bench_node_mac(__u32 id, __u8 mac[6]);
extern const __u8 bench_dir_mac[6];
extern const __u8 bench_client_mac[6];

/* A 60-byte Ethernet/IPv4 frame (addresses host order) with a TCP header
 * (flags as in the header's flag byte) or an 8-byte UDP header and zero
 * payload, IPv4 checksum set. Returns the frame length. */
#define BENCH_TCP_SYN 0x02
#define BENCH_TCP_ACK 0x10
size_t bench_frame(__u8 *buf, const __u8 dst_mac[6], const __u8 src_mac[6],
		   __u32 saddr, __u32 daddr, __u16 sport, __u16 dport,
		   __u8 proto, __u8 tcp_flags);
/* Put n payload bytes after the UDP header of such a UDP frame (buf
 * holds them), lengths and IPv4 checksum updated: the new frame length
 * (at least 60). */
size_t bench_frame_payload(__u8 *buf, const void *pl, size_t n);
/* The flow of such a frame, as the data plane hashes it. */
void bench_frame_flow(const __u8 *frame, struct rm_flow *f);
/* Set the L4 source port (host order) of such a frame. */
void bench_frame_set_sport(__u8 *frame, __u16 sport);
/* Owner node id of a frame's flow in an encoded ring; -1 if none. */
int bench_frame_owner(const __u8 *frame, const struct rm_slot *slots,
		      __u32 nslots, __u32 *id);
/* Grow such a frame's IPv4 packet to fill its 60 bytes (the payload
 * bytes it gains are zero), the checksum updated: no Ethernet padding
 * for a program to trim or keep. */
void bench_frame_fill(__u8 *frame);
/* The IPv4 header checksum of hdr (len bytes, its check field zero), in
 * network order as it is stored. */
__u16 bench_ip_csum(const void *hdr, size_t len);
/* Does a 20-byte IPv4 header hold its right checksum? */
bool bench_ip_csum_ok(const __u8 *iph);
/* Enter a network namespace of the process's own (unshare: gone when it
 * exits) and run the n shell commands that set it up; part names the
 * bench part in the error. 0 or -errno. */
int bench_netns(const char *const *cmds, size_t n, const char *part);

/* One timed run of an encapsulating path: what test_run returned. */
struct bench_run {
	__u32 retval, out_len;
	double ns;
	__u8 out[128];
};
/* repeat runs of frame[0, len) through tg_unencap (unencap_fd: it takes
 * the last run's outer headers off, then tail-calls the program measured)
 * with ingress ifindex; 0 or -errno. */
int bench_unencap_run(int unencap_fd, const __u8 *frame, __u32 len,
		      __u32 ifindex, __u32 repeat, struct bench_run *r);

#endif
