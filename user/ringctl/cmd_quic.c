// SPDX-License-Identifier: GPL-2.0
/* QUIC services (--key quic): lookup --cid, and quic-cid, the routable
 * CIDs a node's QUIC server may issue. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd_live.h"
#include "json.h"
#include "quic.h"

/* lookup SERVICE --cid HEX: the node a packet with that DCID reaches,
 * and why: the server ID it carries, or the ring by its hash. */
int lookup_cid(struct ctl_opts *o, struct live *lv, int svc)
{
	const struct rm_svc_meta *m = &lv->old->svc[svc];
	char sid[2 * RM_QUIC_SID_MAX + 1] = "", why[96];
	__u8 cid[RM_QUIC_CID_MAX + 1];
	struct rm_quic_route r;
	const struct rm_node *n;
	struct rm_json j;
	int len, err;

	if (m->keyspec.kind != RM_KEY_QUIC)
		return ctl_usage_error("lookup: --cid is for --key quic "
				       "services; %s is not one",
				       m->name);
	len = rm_parse_hex(o->cid, cid, sizeof(cid));
	if (len < 0)
		return ctl_usage_error("lookup: --cid '%s': expected a "
				       "connection ID of 1-%d bytes in hex",
				       o->cid, RM_QUIC_CID_MAX);
	err = rm_quic_owner(&lv->st, lv->old, (__u32)svc, cid, (__u32)len,
			    false, &r);
	if (err == -EINVAL && r.res == RM_QUIC_CID_TOO_LONG)
		return ctl_usage_error("lookup: --cid: %d bytes, over QUIC "
				       "v1's %d: such packets go by their flow",
				       len, RM_QUIC_CID_MAX);
	if (err == -ENOENT)
		return ctl_runtime_error("service '%s' has no active node: "
					 "packets of this CID are dropped",
					 m->name);
	if (err)
		return ctl_runtime_error("%s", rm_errmsg());
	n = &lv->old->node[r.node];
	if (r.res == RM_QUIC_OK || r.res == RM_QUIC_UNKNOWN)
		rm_format_hex(r.sid.sid, r.sid.len, sid);
	if (r.res == RM_QUIC_OK)
		snprintf(why, sizeof(why), "server ID %s", sid);
	else if (r.res == RM_QUIC_UNKNOWN)
		snprintf(why, sizeof(why),
			 "ring by the CID's hash 0x%08x: server ID %s is no "
			 "active node's",
			 r.hash, sid);
	else
		snprintf(why, sizeof(why), "ring by the CID's hash 0x%08x: %s",
			 r.hash, rm_quic_res_name(r.res));
	if (!o->json) {
		printf("%s: cid %s -> node %s (slot %u) by %s\n", m->name,
		       o->cid, n->name, r.node, why);
		return 0;
	}
	rm_json_init(&j, stdout);
	rm_json_obj_open(&j, NULL);
	rm_json_str(&j, "service", m->name);
	rm_json_str(&j, "cid", o->cid);
	rm_json_str(&j, "node", n->name);
	rm_json_u64(&j, "node_id", r.node);
	rm_json_str(&j, "by", r.res == RM_QUIC_OK ? "server-id" : "ring");
	rm_json_str(&j, "reason", rm_quic_res_name(r.res));
	if (sid[0])
		rm_json_str(&j, "server_id", sid);
	if (r.res != RM_QUIC_OK)
		rm_json_u64(&j, "hash", r.hash);
	rm_json_obj_close(&j);
	rm_json_end(&j);
	return 0;
}

/* quic-cid SERVICE NODE [--count N]: CIDs carrying the node's server
 * ID under the service's configuration, one a line. */
int cmd_quic_cid(struct ctl_opts *o)
{
	__u32 count = o->count.set ? o->count.val : 1, len = 0;
	char hex[2 * RM_QUIC_CID_MAX + 1];
	struct rm_json j;
	struct live lv;
	__u8 *cids;
	int ret, svc, node;

	if (o->argc != 2)
		return ctl_usage_error("quic-cid: expected SERVICE NODE, got %d "
				       "words",
				       o->argc);
	ret = live_open(o, &lv, RM_LOCK_SH);
	if (ret)
		return ret;
	svc = live_svc(&lv, o->argv[0]);
	node = svc < 0 ? -1 : live_node(&lv, (__u32)svc, o->argv[1]);
	if (node < 0) {
		live_close(&lv);
		return RM_EXIT_RUNTIME;
	}
	cids = calloc(count, RM_QUIC_CID_MAX);
	if (!cids) {
		live_close(&lv);
		return ctl_runtime_error("out of memory");
	}
	ret = rm_quic_cids(&lv.st, lv.old, (__u32)node, count, cids, &len);
	if (ret == -ENOKEY) {
		ret = ctl_runtime_error("quic-cid: service %s is encrypted and "
					"its key is not loaded: `ringctl "
					"service del` and add it again with "
					"--quic-key-file",
					o->argv[0]);
		goto out;
	}
	if (ret) {
		ret = ctl_runtime_error("quic-cid: node %s of %s has no QUIC-LB "
					"server ID: a --key quic service's "
					"node takes one with `node add ... "
					"--server-id HEX`",
					o->argv[1], o->argv[0]);
		goto out;
	}
	if (o->json) {
		rm_json_init(&j, stdout);
		rm_json_arr_open(&j, NULL);
	}
	for (__u32 i = 0; i < count; i++) {
		rm_format_hex(cids + (size_t)i * RM_QUIC_CID_MAX, len, hex);
		if (o->json)
			rm_json_str(&j, NULL, hex);
		else
			printf("%s\n", hex);
	}
	if (o->json) {
		rm_json_arr_close(&j);
		rm_json_end(&j);
	}
out:
	free(cids);
	live_close(&lv);
	return ret;
}

/* An encrypted QUIC service's key, as show and save tell it: never the
 * key itself (docs/quic.md), the file it came from. 0 and the record,
 * or -ENOKEY. */
static int key_record(const struct live *lv, __u32 svc, struct rm_quic_key *k)
{
	int fd = rm_quic_keys_open(lv->st.pin_dir), err;

	if (fd < 0)
		return -ENOKEY;
	err = rm_quic_key_get(fd, svc, k);
	close(fd);
	explicit_bzero(k->key, sizeof(k->key));
	return !err && k->set ? 0 : -ENOKEY;
}

void quic_key_show(const struct live *lv, __u32 svc, struct rm_json *j)
{
	const struct rm_svc_meta *m = &lv->old->svc[svc];
	const struct rm_quic_spec *q = &m->keyspec.quic;
	const char *alg = q->sid_len + q->nonce_len == RM_QUIC_SINGLE_PASS
				  ? "one pass"
				  : "four passes";
	struct rm_quic_key k;
	int err;

	if (m->keyspec.kind != RM_KEY_QUIC || !q->enc)
		return;
	err = key_record(lv, svc, &k);
	if (j) {
		rm_json_str(j, "quic_encryption", "aes-128-ecb");
		rm_json_bool(j, "quic_key_loaded", !err);
		if (!err)
			rm_json_str(j, "quic_key_file", k.file);
		return;
	}
	if (err)
		printf("  QUIC-LB: encrypted CIDs (AES-128-ECB, %s), NO KEY "
		       "LOADED: every CID goes to the ring by its hash\n",
		       alg);
	else
		printf("  QUIC-LB: encrypted CIDs (AES-128-ECB, %s), key from "
		       "%s\n",
		       alg, k.file);
}

void quic_key_save(FILE *f, const struct live *lv, __u32 svc)
{
	const struct rm_svc_meta *m = &lv->old->svc[svc];
	struct rm_quic_key k;

	if (m->keyspec.kind != RM_KEY_QUIC || !m->keyspec.quic.enc)
		return;
	/* without a record the option still goes out: restore then fails
	 * loudly instead of making the service a plaintext one */
	fprintf(f, " --quic-key-file %s",
		key_record(lv, svc, &k) || !k.file[0] ? "?" : k.file);
}
