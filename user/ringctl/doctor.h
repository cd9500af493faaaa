/* SPDX-License-Identifier: GPL-2.0 */
/* ringctl doctor: the checks (cmd_doctor.c) and what they ask of the
 * system (doctor_net.c). */
#ifndef RINGCTL_DOCTOR_H
#define RINGCTL_DOCTOR_H

#include <stdbool.h>
#include <linux/types.h>

/* Bytes a forwarding mode adds to each frame the director sends; L2
 * direct server return adds none. An encapsulating mode raises this and
 * the MTU check follows. */
#ifndef RM_DOCTOR_ENCAP_OVERHEAD
#define RM_DOCTOR_ENCAP_OVERHEAD 0
#endif

struct net_link {
	bool exists, up, running;
	unsigned int mtu;
	char name[16];
};
/* Flags and MTU of ifindex in this namespace. */
void net_link(__u32 ifindex, struct net_link *l);

/* The other end of a veth, wherever it lives: this namespace or one
 * named under /var/run/netns. */
struct veth_peer {
	bool is_veth;	 /* ifindex is a veth */
	bool found;	 /* and its peer was found */
	char ns[256];	 /* "" = this namespace */
	char name[16];
	bool tx_csum;	 /* the peer leaves checksums to offload */
	bool gro;	 /* GRO on at the peer */
	bool xdp;	 /* an XDP program on the peer */
};
void net_veth_peer(__u32 ifindex, struct veth_peer *p);

/* rp_filter as the kernel applies it to dev: max(all, dev). -1 unknown. */
int net_rp_filter(const char *dev);

/* IPv4 neighbours on dev: how many are complete, and whether one has
 * mac. */
void net_neigh_mac(const char *dev, const __u8 mac[6], int *complete,
		   bool *has_mac);

#endif
