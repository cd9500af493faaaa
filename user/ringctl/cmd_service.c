// SPDX-License-Identifier: GPL-2.0
/* service add / del / list on the live state. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cmd_live.h"
#include "json.h"
#include "key.h"
#include "quic.h"

static int svc_add_apply(struct edit *e, struct live *lv)
{
	bool enc = e->meta.keyspec.kind == RM_KEY_QUIC &&
		   e->meta.keyspec.quic.enc;
	int id, ret;

	/* an encrypted service's key goes in before its packets can come:
	 * refused at once where the kernel cannot decrypt (the map opened
	 * here is the one the key is written to) */
	if (enc) {
		ret = live_quic_keys_open(lv);
		if (ret) {
			ctl_error_context(ret, "service add");
			goto out;
		}
	}
	id = rm_snap_svc_add(lv->new, lv->old, &e->meta);
	if (id < 0) {
		ret = ctl_runtime_error("%s", rm_errmsg());
		goto out;
	}
	if (enc && !lv->dry_run) {
		ret = live_quic_key_write(lv, (__u32)id, e->quic_key,
					  e->quic_key_file);
		if (ret) {
			ctl_error_context(ret, "service add");
			goto out;
		}
	}
	snprintf(e->done, sizeof(e->done), "service %s added (id %d)", e->svc,
		 id);
	ret = 0;
out:
	explicit_bzero(e->quic_key, sizeof(e->quic_key));
	return ret;
}

/* --quic-key-file FILE: the key of an encrypted --key quic service */
static int svc_quic_key(const struct ctl_opts *o, struct edit *e)
{
	const char *f = o->quic_key_file, *why;
	char path[PATH_MAX];
	struct stat st;
	int err;

	if (e->meta.keyspec.kind != RM_KEY_QUIC)
		return ctl_usage_error("service add: --quic-key-file is for "
				       "--key quic services");
	if (!realpath(f, path) || stat(path, &st))
		return ctl_usage_error("service add: --quic-key-file %s: %s",
				       f, strerror(errno));
	if (strlen(path) >= sizeof(e->quic_key_file))
		return ctl_usage_error("service add: --quic-key-file %s: a "
				       "path of at most %d bytes",
				       f, RM_QUIC_KEY_FILE_MAX - 1);
	/* a secret: like ssh's keys, refused when others may read it */
	if (st.st_mode & (S_IRWXG | S_IRWXO))
		return ctl_usage_error("service add: --quic-key-file %s: "
				       "group or others may use it (mode "
				       "%03o): chmod 600 %s",
				       f, (unsigned)(st.st_mode & 0777), f);
	err = rm_quic_key_read(path, e->quic_key, &why);
	if (err)
		return ctl_usage_error("service add: --quic-key-file %s: %s",
				       f, err == -EINVAL ? why : strerror(-err));
	snprintf(e->quic_key_file, sizeof(e->quic_key_file), "%s", path);
	e->meta.keyspec.quic.enc = RM_QUIC_ENC_AES;
	return 0;
}

/* --key SPEC: a UDP service keyed by its requests' key, on the ring
 * --ring SCHEME builds. */
static int svc_key_parse(const struct ctl_opts *o, struct rm_svc_meta *m)
{
	/* NULL when the table's default was not applied (a line holding
	 * -h, say): not given means flow */
	const char *spec = o->keyspec ? o->keyspec : "flow";
	const char *why, *ring;

	if (rm_parse_keyspec(spec, &m->keyspec, &why))
		return ctl_usage_error("service add: --key '%s': %s", spec,
				       why);
	ring = o->ringspec ? o->ringspec : "ringmaster";
	if (rm_parse_ringspec(ring, &m->ring, &why))
		return ctl_usage_error("service add: --ring '%s': %s", ring,
				       why);
	if (m->ring.scheme != RM_RING_RINGMASTER &&
	    m->keyspec.kind == RM_KEY_FLOW)
		return ctl_usage_error("service add: --ring %s places keys: "
				       "give the service a --key too (flows "
				       "always go by the keyed ring)",
				       ring);
	if (m->keyspec.kind == RM_KEY_FLOW)
		return 0;
	if (m->key.proto != IPPROTO_UDP)
		return ctl_usage_error("service add: --key %s needs --proto "
				       "udp (a key is read from one request "
				       "per datagram)",
				       spec);
	m->flags |= RM_SVC_F_KEYED;
	if (m->keyspec.kind == RM_KEY_QUIC)
		m->flags |= RM_SVC_F_QUIC;
	return 0;
}

int svc_add_parse(struct ctl_opts *o, struct edit *e)
{
	struct rm_svc_meta *m = &e->meta;
	int ret;

	ret = live_svc_arg(o, "service add", NULL, 0);
	if (ret)
		return ret;
	memcpy(m->key.vip, o->vip.addr, sizeof(m->key.vip));
	m->key.proto = (__u8)o->proto.val;
	m->flags = (__u32)o->hash.val;
	m->key.port = htons((__u16)o->port.val);
	m->key.flags = o->vip.family == RM_FAMILY_V6 ? RM_SVCK_V6 : 0;
	m->vnodes = o->vnodes.val;
	ret = svc_key_parse(o, m);
	if (!ret && o->quic_key_file)
		ret = svc_quic_key(o, e);
	if (ret)
		return ret;
	snprintf(m->name, sizeof(m->name), "%s", o->argv[0]);
	snprintf(e->svc, sizeof(e->svc), "%s", o->argv[0]);
	e->apply = svc_add_apply;
	return 0;
}

static int svc_del_apply(struct edit *e, struct live *lv)
{
	int id = live_svc(lv, e->svc);

	if (id < 0)
		return RM_EXIT_RUNTIME;
	/* an encrypted service's key goes once the commit has removed it
	 * (live_quic_keys_commit): a secret kept nowhere it is not needed */
	rm_snap_svc_del(lv->new, id);
	snprintf(e->done, sizeof(e->done), "service %s deleted", e->svc);
	return 0;
}

int svc_del_parse(struct ctl_opts *o, struct edit *e)
{
	int ret;

	ret = live_svc_arg(o, "service del", e->svc, sizeof(e->svc));
	if (ret)
		return ret;
	e->apply = svc_del_apply;
	return 0;
}

int cmd_service_add(struct ctl_opts *o)
{
	return live_change(o, svc_add_parse);
}

int cmd_service_del(struct ctl_opts *o)
{
	return live_change(o, svc_del_parse);
}

static __u32 count_nodes(const struct rm_snap *s, __u32 svc, bool active)
{
	__u32 n = 0;

	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		if (s->node[i].state != RM_NODE_FREE &&
		    s->node[i].svc_id == svc &&
		    (!active || rm_node_in_ring(&s->node[i])))
			n++;
	return n;
}

int cmd_service_list(struct ctl_opts *o)
{
	struct rm_json j;
	struct live lv;
	char text[200], addr[64];
	int ret;

	if (o->argc)
		return ctl_usage_error("service list: unexpected argument '%s'",
				       o->argv[0]);
	ret = live_open(o, &lv, RM_LOCK_SH);
	if (ret)
		return ret;
	if (o->json) {
		rm_json_init(&j, stdout);
		rm_json_arr_open(&j, NULL);
	} else {
		printf("%-20s %4s  %-40s %6s %6s\n", "SERVICE", "ID", "MATCH",
		       "VNODES", "NODES");
	}
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		const struct rm_svc_meta *m = &lv.old->svc[i];

		if (!m->in_use)
			continue;
		if (!o->json) {
			live_svc_text(m, text, sizeof(text));
			printf("%-20s %4u  %-40s %6u %6u\n", m->name, i, text,
			       m->vnodes, count_nodes(lv.old, i, false));
			continue;
		}
		rm_format_svc_addr(&m->key, addr, sizeof(addr));
		rm_json_obj_open(&j, NULL);
		rm_json_str(&j, "name", m->name);
		rm_json_u64(&j, "id", i);
		rm_json_str(&j, "vip", addr);
		rm_json_u64(&j, "port", ntohs(m->key.port));
		rm_json_str(&j, "proto", rm_proto_name(m->key.proto));
		rm_json_str(&j, "hash",
			    m->flags & RM_SVC_F_3TUPLE ? "3tuple" : "5tuple");
		rm_format_keyspec(&m->keyspec, text, sizeof(text));
		rm_json_str(&j, "key", text);
		rm_format_ringspec(&m->ring, text, sizeof(text));
		rm_json_str(&j, "ring", text);
		rm_json_u64(&j, "vnodes", m->vnodes);
		rm_json_u64(&j, "nodes", count_nodes(lv.old, i, false));
		rm_json_u64(&j, "active", count_nodes(lv.old, i, true));
		health_check_json(&j, m);
		rm_json_obj_close(&j);
	}
	if (o->json) {
		rm_json_arr_close(&j);
		rm_json_end(&j);
	}
	live_close(&lv);
	return RM_EXIT_OK;
}
