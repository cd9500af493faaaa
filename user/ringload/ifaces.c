// SPDX-License-Identifier: GPL-2.0
/* Which interfaces run our program: rm_ifaces, an ARRAY ringload pins next
 * to the program's maps (bpffs holds only pins, so no plain file), checked
 * against what the interface really runs. And `ringload status`. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/if_link.h>
#include "apply.h"
#include "json.h"
#include "ringload.h"
#include "xdp_chain.h"

int ifaces_open(const char *pin_dir, bool create)
{
	char path[RM_PATH_MAX + RM_NAME_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", pin_dir, RM_MAP_IFACES);
	fd = bpf_obj_get(path);
	if (fd >= 0 || errno != ENOENT || !create)
		return fd >= 0 ? fd : -errno;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, RM_MAP_IFACES, sizeof(__u32),
			    sizeof(struct rm_iface), RM_MAX_IFACES, NULL);
	if (fd < 0)
		return -errno;
	if (bpf_obj_pin(fd, path)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int ifaces_read(int fd, struct rm_iface out[RM_MAX_IFACES])
{
	for (__u32 i = 0; i < RM_MAX_IFACES; i++)
		if (bpf_map_lookup_elem(fd, &i, &out[i]))
			return -errno;
	return 0;
}

/* Replace the entry of the same name, or take a free slot. */
int ifaces_put(int fd, const struct rm_iface *e)
{
	struct rm_iface all[RM_MAX_IFACES];
	int err = ifaces_read(fd, all), slot = -1;

	if (err)
		return err;
	for (int i = 0; i < RM_MAX_IFACES && slot < 0; i++)
		if (all[i].ifindex &&
		    !strncmp(all[i].name, e->name, RM_IFNAME_MAX))
			slot = i;
	for (int i = 0; i < RM_MAX_IFACES && slot < 0; i++)
		if (!all[i].ifindex)
			slot = i;
	if (slot < 0)
		return -ENOSPC;
	return bpf_map_update_elem(fd, &slot, e, BPF_ANY) ? -errno : 0;
}

int ifaces_del(int fd, const char *name)
{
	struct rm_iface all[RM_MAX_IFACES], zero = {0};
	int err = ifaces_read(fd, all);

	for (__u32 i = 0; i < RM_MAX_IFACES && !err; i++)
		if (all[i].ifindex &&
		    !strncmp(all[i].name, name, RM_IFNAME_MAX) &&
		    bpf_map_update_elem(fd, &i, &zero, BPF_ANY))
			err = -errno;
	return err;
}

static bool ours(struct xdp_program *p, __u32 want_id)
{
	return p && !strcmp(xdp_program__name(p), RM_PROG_NAME) &&
	       (!want_id || xdp_program__id(p) == want_id);
}

int ifaces_find_prog(int ifindex, __u32 want_id, __u32 *prog_id,
		     enum xdp_attach_mode *mode)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p = NULL;
	struct rm_xdp_chain c;
	int err = -ENOENT, slot = -1;

	/* attached with --chain: in a slot of the root's chain */
	if (!rm_xdp_chain_read(ifindex, &c) && c.root_id) {
		slot = rm_xdp_chain_find(&c, RM_PROG_NAME, want_id);
		if (slot >= 0) {
			*prog_id = c.ids[slot];
			*mode = c.attach_mode == XDP_ATTACHED_SKB
				    ? XDP_MODE_SKB
				    : XDP_MODE_NATIVE;
			err = 0;
		}
	}
	rm_xdp_chain_close(&c);
	if (c.root_id)
		return err;
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (libxdp_get_error(mp))
		return -ENOENT;
	/* without the dispatcher (XDP_SKIP_DISPATCHER, old kernels) the
	 * main program is ours or not; with it, look through its list */
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (!ours(p, want_id))
			p = NULL;
	} else {
		while ((p = xdp_multiprog__next_prog(p, mp)) &&
		       !ours(p, want_id))
			;
	}
	if (p) {
		*prog_id = xdp_program__id(p);
		*mode = xdp_multiprog__attach_mode(mp);
		err = 0;
	}
	xdp_multiprog__close(mp);
	return err;
}

const char *ifaces_mode_name(enum xdp_attach_mode mode)
{
	switch (mode) {
	case XDP_MODE_NATIVE:
		return "native";
	case XDP_MODE_SKB:
		return "generic";
	case XDP_MODE_HW:
		return "hw";
	default:
		return "unknown";
	}
}

/* Counts for the summary; the state may be absent (never attached). */
static int state_counts(const char *pin_dir, __u32 *svcs, __u32 *nodes,
			bool *seeded, __u32 *conn_max)
{
	static struct rm_snap s;
	struct rm_state st;
	int err;

	*svcs = *nodes = *conn_max = 0;
	*seeded = false;
	err = rm_state_open(&st, pin_dir, RM_LOCK_SH);
	if (!err)
		err = rm_state_read(&st, &s);
	if (!err)
		err = rm_state_conn_max(&st, conn_max);
	rm_state_close(&st);
	if (err)
		return err;
	for (int i = 0; i < RM_MAX_SERVICES; i++)
		*svcs += !!s.svc[i].in_use;
	for (int i = 0; i < RM_MAX_NODES; i++)
		*nodes += s.node[i].state != RM_NODE_FREE;
	*seeded = s.cfg.flags & RM_CFG_SEEDED;
	return 0;
}

/* An interface's chain, if it runs one: in text under its line, in JSON
 * as its "chain" (absent without a root). */
static void iface_chain(const struct rm_iface *f, bool json, struct rm_json *j)
{
	struct rm_xdp_chain c;

	if (!rm_xdp_chain_read(f->ifindex, &c) && c.root_id) {
		if (json) {
			chain_json(j, &c);
		} else {
			printf("    chain (%s, prog id %u), in slot order:\n",
			       RM_ROOT_PROG_NAME, c.root_id);
			chain_text(stdout, "      ", &c);
		}
	}
	rm_xdp_chain_close(&c);
}

int cmd_status(struct load_opts *o)
{
	struct rm_iface all[RM_MAX_IFACES];
	bool live[RM_MAX_IFACES] = {false};
	__u32 svcs, nodes, conn_max, first_id = 0;
	char name[IF_NAMESIZE];
	struct rm_json j;
	bool seeded;
	int fd, err;

	err = state_counts(o->pin_dir, &svcs, &nodes, &seeded, &conn_max);
	if (err)
		return load_error(RM_EXIT_RUNTIME, "%s", rm_errmsg());
	memset(all, 0, sizeof(all));
	fd = ifaces_open(o->pin_dir, false);
	if (fd >= 0) {
		err = ifaces_read(fd, all);
		close(fd);
		if (err)
			return load_error(RM_EXIT_RUNTIME,
					  "cannot read %s/%s: "
					  "%s",
					  o->pin_dir, RM_MAP_IFACES,
					  strerror(-err));
	}
	/* what the interfaces really run, not what we recorded */
	for (int i = 0; i < RM_MAX_IFACES; i++) {
		__u32 id;
		enum xdp_attach_mode mode;

		if (!all[i].ifindex)
			continue;
		live[i] = if_indextoname(all[i].ifindex, name) &&
			  !strncmp(name, all[i].name, RM_IFNAME_MAX) &&
			  !ifaces_find_prog(all[i].ifindex, all[i].prog_id, &id,
					    &mode);
		if (live[i] && !first_id)
			first_id = all[i].prog_id;
	}
	if (!o->json) {
		printf("pin dir:    %s\nseeded:     %s\nservices:   %u\n"
		       "nodes:      %u\nconn table: %u entries\n"
		       "interfaces:\n",
		       o->pin_dir, seeded ? "yes" : "no", svcs, nodes,
		       conn_max);
		for (int i = 0; i < RM_MAX_IFACES; i++) {
			if (!all[i].ifindex)
				continue;
			printf("  %-16s ifindex %-4u %-8s prog id %-6u%s\n",
			       all[i].name, all[i].ifindex,
			       ifaces_mode_name(all[i].mode), all[i].prog_id,
			       live[i] ? "" : "  (not attached any more)");
			iface_chain(&all[i], false, NULL);
		}
		rm_applied_text(stdout, o->pin_dir);
		return RM_EXIT_OK;
	}
	rm_json_init(&j, stdout);
	rm_json_obj_open(&j, NULL);
	rm_json_str(&j, "pin_dir", o->pin_dir);
	rm_json_u64(&j, "prog_id", first_id);
	rm_json_bool(&j, "seeded", seeded);
	rm_json_u64(&j, "services", svcs);
	rm_json_u64(&j, "nodes", nodes);
	rm_json_u64(&j, "conn_table", conn_max);
	rm_applied_json(&j, o->pin_dir);
	rm_json_arr_open(&j, "interfaces");
	for (int i = 0; i < RM_MAX_IFACES; i++) {
		if (!all[i].ifindex)
			continue;
		rm_json_obj_open(&j, NULL);
		rm_json_str(&j, "name", all[i].name);
		rm_json_u64(&j, "ifindex", all[i].ifindex);
		rm_json_str(&j, "mode", ifaces_mode_name(all[i].mode));
		rm_json_u64(&j, "prog_id", all[i].prog_id);
		rm_json_bool(&j, "attached", live[i]);
		iface_chain(&all[i], true, &j);
		rm_json_obj_close(&j);
	}
	rm_json_arr_close(&j);
	rm_json_obj_close(&j);
	rm_json_end(&j);
	return RM_EXIT_OK;
}
