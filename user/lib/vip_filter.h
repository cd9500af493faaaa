/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rm_vip_slots from userspace: the slots of rm_services keys, and the
 * writes that keep the map true to the keys (rm_vip_filter.h).
 *
 * The rules for whoever writes rm_services and rm_svc_meta:
 *  - rm_vip_slots_add() a key's slot before inserting the key;
 *  - before rewriting the meta of a service in use, or deleting its keys,
 *    rm_vip_slots_forget() its id;
 *  - clear or reclaim slots only after the deletes and once meta and
 *    rm_services agree, by writing a table recomputed from what remains
 *    (rm_vip_slots_sync()).
 *
 * A map element update is a plain copy, not atomic against a packet
 * reading it: a packet may see some slots (even bytes of one) old and
 * some new. Each write above is safe anyway: a slot a key of rm_services
 * hashes to is non-NONE in both the old and the new table, and a torn
 * slot naming a wrong id only costs a lookup (the data plane compares
 * the meta's key with the packet's), as does MANY.
 */
#ifndef RM_VIP_FILTER_LIB_H
#define RM_VIP_FILTER_LIB_H

#include <ringmaster/rm_common.h>
#include <ringmaster/rm_vip_filter.h>

/* Enter key k of service id into t (memory only): a free slot takes
 * id + 1, one naming another id becomes MANY. */
void rm_vip_slots_set(struct rm_vip_slots *t, const struct rm_svc_key *k,
		      __u32 id);
/* t = the slots of every key in the rm_services map services_fd. */
int rm_vip_slots_compute(int services_fd, struct rm_vip_slots *t);
/* Enter every slot of add into the rm_vip_slots map slots_fd, as
 * rm_vip_slots_set() does (written only if a slot changes). */
int rm_vip_slots_merge(int slots_fd, const struct rm_vip_slots *add);
/* Enter k of service id into the map: before inserting k. */
int rm_vip_slots_add(int slots_fd, const struct rm_svc_key *k, __u32 id);
/* Turn MANY every slot naming an id i with ids[i] set (RM_MAX_SERVICES
 * entries): before the meta of i changes or its keys go. */
int rm_vip_slots_forget(int slots_fd, const __u8 *ids);
/* Write the table of exactly the keys in services_fd: after deletes,
 * with no insert of a new key or meta change running. */
int rm_vip_slots_sync(int slots_fd, int services_fd);

#endif /* RM_VIP_FILTER_LIB_H */
