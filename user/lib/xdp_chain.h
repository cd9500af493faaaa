/* SPDX-License-Identifier: GPL-2.0 */
/* What an interface's XDP chain holds (rm_common.h, "the chain"), read
 * from the kernel: the attached program and, if it is the chain's root,
 * the program in each slot of its rm_chain. ringload and ringctl doctor
 * both read it here. */
#ifndef RM_XDP_CHAIN_H
#define RM_XDP_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/bpf.h>
#include <ringmaster/rm_common.h>

struct rm_xdp_chain {
	__u32 attached_id;  /* the program attached to the interface, 0: none */
	char attached_name[BPF_OBJ_NAME_LEN];
	__u32 attach_mode;  /* XDP_ATTACHED_* */
	__u32 root_id;      /* attached_id if it is the chain's root, else 0 */
	int map_fd;	    /* the root's rm_chain, -1 without a root */
	__u32 ids[RM_CHAIN_SLOTS]; /* program in each slot, 0: empty */
	char names[RM_CHAIN_SLOTS][BPF_OBJ_NAME_LEN];
};

/* Fill c for ifindex; 0 also when nothing or no root is attached. Close
 * with rm_xdp_chain_close(). */
int rm_xdp_chain_read(int ifindex, struct rm_xdp_chain *c);
void rm_xdp_chain_close(struct rm_xdp_chain *c);
/* The slot holding a program named name (and id want_id unless 0), -1. */
int rm_xdp_chain_find(const struct rm_xdp_chain *c, const char *name,
		      __u32 want_id);
/* Occupied slots. */
int rm_xdp_chain_used(const struct rm_xdp_chain *c);
/* Does program id use an rm_chain (rm_chain.h), so that it can hand
 * packets on? A program that does not ends the chain. */
bool rm_prog_uses_chain(__u32 id);
/* A program's name by id, "?" if it is gone. */
void rm_prog_name(__u32 id, char *out, size_t len);

#endif
