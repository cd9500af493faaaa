/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rm_vip_filter from userspace: the bits of rm_services keys, and the
 * writes that keep the map a superset of the keys (rm_vip_filter.h).
 *
 * The rule for whoever writes rm_services: rm_vip_filter_add() a key's
 * bit before inserting the key; clear bits only after deleting keys, by
 * writing a filter recomputed from what remains (rm_vip_filter_sync()).
 *
 * A map element update is a plain copy, not atomic against a packet
 * reading it: a packet may see some words (even bytes) old and some new.
 * Both writes above are safe anyway: each bit a packet reads is either
 * the old or the new value, and every key in rm_services while the write
 * runs has its bit set in both (an OR keeps the old bits, and a
 * recomputed filter is written after the deleted keys are gone and
 * before new ones go in). The worst a mixed read does is keep a deleted
 * key's bit a little longer: one wasted hash lookup.
 */
#ifndef RM_VIP_FILTER_LIB_H
#define RM_VIP_FILTER_LIB_H

#include <ringmaster/rm_common.h>
#include <ringmaster/rm_vip_filter.h>

/* Set k's bit in f (memory only). */
void rm_vip_filter_set(struct rm_vip_filter *f, const struct rm_svc_key *k);
/* f = the bits of every key in the rm_services map services_fd. */
int rm_vip_filter_compute(int services_fd, struct rm_vip_filter *f);
/* OR add into the rm_vip_filter map filter_fd (written only if it adds a
 * bit). */
int rm_vip_filter_or(int filter_fd, const struct rm_vip_filter *add);
/* OR k's bit into the map: before inserting k into rm_services. */
int rm_vip_filter_add(int filter_fd, const struct rm_svc_key *k);
/* Write the filter of exactly the keys in services_fd (clearing bits of
 * deleted keys): after deletes, with no insert of a new key running. */
int rm_vip_filter_sync(int filter_fd, int services_fd);

#endif /* RM_VIP_FILTER_LIB_H */
