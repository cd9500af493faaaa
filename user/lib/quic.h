/* SPDX-License-Identifier: GPL-2.0 */
/*
 * QUIC services in userspace: where a connection ID goes on a live
 * director, decided by the data plane's own code (include/ringmaster/
 * rm_quic.h) and the same server-ID map, and routable CIDs for a node.
 */
#ifndef RM_QUIC_LIB_H
#define RM_QUIC_LIB_H

#include <stdbool.h>
#include <nettle/aes.h>
#include <ringmaster/rm_common.h>
#include <ringmaster/rm_quic.h>

/* An encrypted service's key, as rm_quic_crypt.h uses it: nettle's
 * AES-128 (the kernel uses its own, bpf/quic_crypt.h). */
struct rm_quic_aes_user {
	struct aes128_ctx enc, dec;
};
#define RM_QUIC_AES_T struct rm_quic_aes_user

static inline int rm_quic_aes(struct rm_quic_aes_user *a, __u8 *blk,
			      int decrypt)
{
	if (decrypt)
		aes128_decrypt(&a->dec, 16, blk, blk);
	else
		aes128_encrypt(&a->enc, 16, blk, blk);
	return 0;
}

static inline void rm_quic_aes_init(struct rm_quic_aes_user *a,
				    const __u8 *key)
{
	aes128_set_encrypt_key(&a->enc, key);
	aes128_set_decrypt_key(&a->dec, key);
}

#include <ringmaster/rm_quic_crypt.h>

struct rm_state;
struct rm_snap;

/* Where a DCID goes and why. */
struct rm_quic_route {
	int res;		    /* enum rm_quic_res: RM_QUIC_OK by server ID */
	__u32 counter;		    /* the RM_CNT_QUIC_* the packet bumps */
	__u32 hash;		    /* the DCID's ring position (res != OK) */
	__u32 node;		    /* rm_nodes slot */
	struct rm_quic_sid_key sid; /* the server ID decoded (res OK,
				     * UNKNOWN) */
};

/* The node a packet of --key quic service svc with DCID cid (len bytes)
 * reaches, as the data plane decides it (an encrypted service's CID
 * decrypted under its key from st's rm_quic_keys): initial says the packet is a
 * client's Initial or 0-RTT (its fallback counts as quic-initial-hashed).
 * 0; -EINVAL svc is no --key quic service; -ENOENT the DCID goes to
 * the ring and the ring has no node; other -errno. */
int rm_quic_owner(struct rm_state *st, const struct rm_snap *s, __u32 svc,
		  const __u8 *cid, __u32 len, bool initial,
		  struct rm_quic_route *out);
/* "server-id", "config", "cid-length", "unknown-server", ... */
const char *rm_quic_res_name(int res);
/* count CIDs of node slot node (a node of a --key quic service with a
 * server ID) into out, count * RM_QUIC_CID_MAX bytes, each of *len
 * bytes: fresh random nonces (getrandom), encrypted under the service's
 * key (st's rm_quic_keys) for an encrypted service. 0, -ENOKEY (an
 * encrypted service without its key), or -errno. */
int rm_quic_cids(const struct rm_state *st, const struct rm_snap *s,
		 __u32 node, __u32 count, __u8 *out, __u32 *len);

/* ---- encrypted services (rm_quic_crypt.h) ---------------------------- */
/* The pinned rm_quic_keys of pin_dir, opened: its fd, or -ENOENT when the
 * director there has no BPF crypto (a kernel before 6.10, or the
 * plaintext object), other -errno. */
int rm_quic_keys_open(const char *pin_dir);
/* Give service svc the AES-128 key (RM_QUIC_KEY_LEN octets; NULL: none)
 * read from file, in rm_quic_keys (keys_fd), and the kernel a crypto
 * context of it (bpf/quic_key.bpf.c). 0 or -errno (rm_errmsg()). */
int rm_quic_key_set(int keys_fd, __u32 svc, const __u8 *key,
		    const char *file);
/* Service svc's key record (key->set 0: none). 0 or -errno. */
int rm_quic_key_get(int keys_fd, __u32 svc, struct rm_quic_key *key);
/* A key file's key: 32 hex digits, whitespace around them allowed. 0,
 * or -errno with why (a static string) saying what is wrong. */
int rm_quic_key_read(const char *path, __u8 *key, const char **why);

#endif
