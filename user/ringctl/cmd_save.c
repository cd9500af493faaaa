// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE /* asprintf */
/* save: the configuration as the ringctl commands that make it, one per
 * line; restore (cmd_restore.c) reads them back. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cmd_live.h"
#include "key.h"

/* Services by id, then nodes by slot: restoring into an empty state
 * hands out the same ids and slots when the original had no holes. */
static void write_config(FILE *f, const struct live *lv, bool fleet)
{
	char hex[33], addr[64], addr6[64], mac[18], key[80], ho[16];
	char sid[2 * RM_QUIC_SID_MAX + 1];

	rm_format_seed(&lv->old->cfg.seed, hex);
	fprintf(f, "# ringmaster configuration: ringctl restore FILE applies it\n");
	fprintf(f, "seed --set %s\n", hex);
	fprintf(f, "config --udp-timeout %u --conn-insert-rate %u\n",
	       rm_udp_timeout(&lv->old->cfg), lv->old->cfg.conn_insert_rate);
	/* this director's own settings (apply.h): a line of their own, only
	 * when set (files from before routed nodes read the same), never in
	 * a fleet's document (docs/fleet-local-settings.md) */
	encap_src_text(&lv->old->cfg, RM_FAMILY_V4, addr, sizeof(addr));
	encap_src_text(&lv->old->cfg, RM_FAMILY_V6, addr6, sizeof(addr6));
	if (!fleet && (strcmp(addr, "none") || strcmp(addr6, "none")))
		fprintf(f, "# local to this director: save --fleet leaves it "
			   "out, publish refuses it\n"
			   "config --encap-src4 %s --encap-src6 %s\n",
			addr, addr6);
	/* second chance: a fleet setting, a line of its own */
	handover_text(lv->old->cfg.handover_window_s, ho, sizeof(ho));
	fprintf(f, "config --handover-window %s\n", ho);
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		const struct rm_svc_meta *m = &lv->old->svc[i];

		if (!m->in_use)
			continue;
		rm_format_svc_addr(&m->key, addr, sizeof(addr));
		fprintf(f, "service add %s --vip %s --port %u --proto %s --hash %s "
		       "--vnodes %u",
		       m->name, addr, ntohs(m->key.port),
		       rm_proto_name(m->key.proto),
		       m->flags & RM_SVC_F_3TUPLE ? "3tuple" : "5tuple",
		       m->vnodes);
		if (m->flags & RM_SVC_F_KEYED) {
			rm_format_keyspec(&m->keyspec, key, sizeof(key));
			fprintf(f, " --key %s", key);
			quic_key_save(f, lv, i);
		}
		if (m->ring.scheme != RM_RING_RINGMASTER) {
			rm_format_ringspec(&m->ring, key, sizeof(key));
			fprintf(f, " --ring %s", key);
		}
		fprintf(f, "\n");
		health_save_line(f, m);
	}
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &lv->old->node[i];

		if (n->state == RM_NODE_FREE)
			continue;
		if (n->addr_family)
			rm_format_addr(n->addr, (__u8)n->addr_family, addr,
				       sizeof(addr));
		if (n->via != RM_VIA_L2) {
			fprintf(f, "node add %s %s --via %s --addr %s",
				lv->old->svc[n->svc_id].name, n->name,
				rm_via_name(n->via), addr);
			if (n->via == RM_VIA_GUE)
				fprintf(f, " --gue-port %u", ntohs(n->gue_port));
			fprintf(f, " --dev %s --weight %u", n->dev, n->weight);
		} else {
			/* the line L2 nodes had before routed nodes */
			rm_format_mac(n->mac, mac);
			fprintf(f, "node add %s %s --mac %s --dev %s --weight %u",
				lv->old->svc[n->svc_id].name, n->name, mac,
				n->dev, n->weight);
			if (n->addr_family)
				fprintf(f, " --addr %s", addr);
		}
		if (n->quic_sid_len && n->quic_sid_len <= RM_QUIC_SID_MAX) {
			rm_format_hex(n->quic_sid, n->quic_sid_len, sid);
			fprintf(f, " --server-id %s", sid);
		}
		fprintf(f, "\n");
	}
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &lv->old->node[i];

		if (n->state == RM_NODE_DRAINING || n->state == RM_NODE_DOWN)
			fprintf(f, "node set %s %s --%s\n",
			       lv->old->svc[n->svc_id].name, n->name,
			       n->state == RM_NODE_DOWN ? "down" : "drain");
	}
}

/* --output FILE: a temporary file beside it, flushed to disk, renamed over
 * it: FILE is always a whole configuration, the old one or the new one
 * (what the systemd unit restores at boot). */
static int save_atomic(const char *path, const struct live *lv, bool fleet)
{
	char *tmp = NULL;
	FILE *f = NULL;
	int fd, err = 0;

	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		return ctl_runtime_error("out of memory");
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = ctl_runtime_error("save: cannot create %s: %s", tmp,
					strerror(errno));
		free(tmp);
		return err;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		err = -1;
	} else {
		fchmod(fd, 0644);
		write_config(f, lv, fleet);
		err = fflush(f) || fsync(fd) ? -1 : 0;
		err = fclose(f) || err;
	}
	if (!err && rename(tmp, path))
		err = -1;
	if (err) {
		err = ctl_runtime_error("save: cannot write %s: %s", path,
					strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return err;
}

int cmd_save(struct ctl_opts *o)
{
	struct live lv;
	int ret;

	if (o->argc)
		return ctl_usage_error("save: unexpected argument '%s'",
				       o->argv[0]);
	ret = live_open(o, &lv, RM_LOCK_SH);
	if (ret)
		return ret;
	if (o->output)
		ret = save_atomic(o->output, &lv, o->fleet);
	else
		write_config(stdout, &lv, o->fleet);
	live_close(&lv);
	return ret;
}
