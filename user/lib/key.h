/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Keyed services in userspace: the --key option's text form, and the owner
 * of a key on a live director, computed with the data plane's own code
 * (include/ringmaster/rm_key.h): an application's getNode(key).
 */
#ifndef RM_KEY_LIB_H
#define RM_KEY_LIB_H

#include <stddef.h>
#include <ringmaster/rm_common.h>
#include <ringmaster/rm_key.h>

/* "flow", "memcached", "dns", "bytes:OFF:LEN", "token:OFF:DELIMS:MAXLEN"
 * -> spec. DELIMS are 1..8 characters; escapes \s (space) \r \n \t \\
 * and \xHH; a ':' may appear raw (MAXLEN is after the last ':').
 * OFF + LEN (bytes) and OFF (token) within RM_KEY_WINDOW, LEN and MAXLEN
 * 1..RM_KEY_MAX. 0, or -EINVAL with the reason in *why (static text). */
int rm_parse_keyspec(const char *s, struct rm_key_spec *spec,
		     const char **why);
/* The text rm_parse_keyspec() reads back into the same spec. */
void rm_format_keyspec(const struct rm_key_spec *spec, char *out, size_t len);
/* Is the spec one the data plane can be given (kind, bounds, zero pads)? */
int rm_keyspec_valid(const struct rm_key_spec *spec);
/* --ring text: "ringmaster", "ketama", "md5-vnodes:TEMPLATE:COUNT"
 * (TEMPLATE 1-47 printable characters without space holding {node} and
 * {i} once each, may hold ':'; COUNT 1..RM_MAX_VNODES) -> spec. 0, or
 * -EINVAL with the reason in *why (static text). */
int rm_parse_ringspec(const char *s, struct rm_ring_spec *spec,
		      const char **why);
/* The text rm_parse_ringspec() reads back into the same spec. */
void rm_format_ringspec(const struct rm_ring_spec *spec, char *out,
			size_t len);
/* Is the ring spec one rm_parse_ringspec() could have made? */
int rm_ringspec_valid(const struct rm_ring_spec *spec);
/* The key-fallback-* reason of an rm_key_extract() result. */
const char *rm_key_result_name(int res);

struct rm_state;
struct rm_snap;
/* The owner of key (len bytes, or a DNS name as text) in keyed service
 * svc of the live state st read into snapshot s: *node the rm_nodes slot
 * and *hash the key's hash. 0; -EINVAL the key is not one the service's
 * extractor can yield (reason from rm_key_result_name() via *res) or the
 * service is not keyed; -ENOENT no active node; other -errno. */
int rm_key_owner(struct rm_state *st, const struct rm_snap *s, __u32 svc,
		 const char *key, size_t len, __u32 *node, __u32 *hash,
		 int *res);

#endif
