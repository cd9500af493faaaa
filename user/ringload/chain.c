// SPDX-License-Identifier: GPL-2.0
/* Sharing an interface with other XDP programs without freplace: the
 * chain's root (bpf/root.bpf.c) on the interface, the director and the
 * others in the slots of the interface's pinned rm_chain (rm_common.h,
 * "the chain"). `attach --chain`, `detach` of a chained director, and
 * `chain add | del | show`. Every change holds the pin dir's lock. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include "json.h"
#include "ringload.h"
#include "ringmaster.skel.h"
#include "director_obj.h"
#include "root.skel.h"
#include "xdp_chain.h"

#define CHAIN_PATH_MAX (RM_PATH_MAX + 2 * RM_NAME_MAX + 16)

/* <pin dir>/chain/<iface>, its rm_chain, and slot N's map directory */
static void chain_path(char *out, const struct load_opts *o, const char *leaf)
{
	snprintf(out, CHAIN_PATH_MAX, "%s/%s/%s%s%s", o->pin_dir, RM_CHAIN_DIR,
		 o->iface, leaf ? "/" : "", leaf ? leaf : "");
}

static int mkdir_chain(const struct load_opts *o)
{
	char path[CHAIN_PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", o->pin_dir, RM_CHAIN_DIR);
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	chain_path(path, o, NULL);
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Unpin what ringload pinned for slot N (the maps of a program it loaded). */
static void unpin_slot(const struct load_opts *o, __u32 slot)
{
	char dir[CHAIN_PATH_MAX], path[CHAIN_PATH_MAX + 300], leaf[16];
	struct dirent *e;
	DIR *d;

	snprintf(leaf, sizeof(leaf), "%u", slot);
	chain_path(dir, o, leaf);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	closedir(d);
	rmdir(dir);
}

/* The chain is empty: take the root off the interface and the chain's
 * pins away (what `attach --chain` added). */
static int remove_root(const struct load_opts *o, int ifindex,
		       const struct rm_xdp_chain *c)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, ao);
	char path[CHAIN_PATH_MAX];
	__u32 flags = XDP_FLAGS_REPLACE;
	int fd = bpf_prog_get_fd_by_id(c->root_id), err = 0;

	if (fd < 0)
		return -errno;
	flags |= c->attach_mode == XDP_ATTACHED_SKB ? XDP_FLAGS_SKB_MODE
						     : XDP_FLAGS_DRV_MODE;
	ao.old_prog_fd = fd;
	if (bpf_xdp_attach(ifindex, -1, flags, &ao))
		err = -errno;
	close(fd);
	if (err)
		return err;
	chain_path(path, o, RM_CHAIN_MAP);
	unlink(path);
	chain_path(path, o, NULL);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/%s", o->pin_dir, RM_CHAIN_DIR);
	rmdir(path); /* fails while another interface has a chain */
	return 0;
}

/* The interface's chain, made if there is none: *created says so. Refuses
 * an interface that runs any program but the root. */
static int open_chain(const struct load_opts *o, struct rm_xdp_chain *c,
		      int ifindex, bool *created)
{
	char path[CHAIN_PATH_MAX];
	int err = rm_xdp_chain_read(ifindex, c), fd;

	*created = false;
	if (err)
		return load_error(RM_EXIT_RUNTIME, "cannot read what %s runs: %s",
				  o->iface, strerror(-err)),
		       err;
	if (c->root_id)
		return 0;
	if (c->attached_id) {
		load_error(RM_EXIT_RUNTIME,
			   "%s runs XDP program '%s' (id %u), not the chain's "
			   "root: detach it, `ringload attach %s --chain`, "
			   "then add it with `ringload chain add`",
			   o->iface, c->attached_name, c->attached_id,
			   o->iface);
		return -EEXIST;
	}
	err = mkdir_chain(o);
	if (err)
		return load_error(RM_EXIT_RUNTIME, "cannot create %s/%s: %s",
				  o->pin_dir, RM_CHAIN_DIR, strerror(-err)),
		       err;
	chain_path(path, o, RM_CHAIN_MAP);
	/* a chain pinned by an attach that died before the root was up */
	fd = bpf_obj_get(path);
	if (fd < 0) {
		fd = bpf_map_create(BPF_MAP_TYPE_PROG_ARRAY, RM_CHAIN_MAP,
				    sizeof(__u32), sizeof(__u32),
				    RM_CHAIN_SLOTS, NULL);
		if (fd < 0 || bpf_obj_pin(fd, path)) {
			err = -errno;
			if (fd >= 0)
				close(fd);
			return load_error(RM_EXIT_RUNTIME,
					  "cannot create the chain %s: %s",
					  path, strerror(-err)),
			       err;
		}
	}
	c->map_fd = fd;
	*created = true;
	return 0;
}

/* Put the root on the interface, over the chain in c->map_fd. */
static int attach_root(struct load_opts *o, int ifindex,
		       enum xdp_attach_mode *mode)
{
	struct root_bpf *skel = root_bpf__open();
	__u32 base = XDP_FLAGS_UPDATE_IF_NOEXIST;
	int err;
	char path[CHAIN_PATH_MAX];

	if (!skel)
		return errno ? -errno : -ENOMEM;
	/* the chain open_chain() pinned */
	chain_path(path, o, RM_CHAIN_MAP);
	err = bpf_map__set_pin_path(skel->maps.rm_chain, path);
	if (!err)
		err = root_bpf__load(skel);
	if (err)
		goto out;
	err = bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.rm_root),
			     base | (*mode == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE
							   : XDP_FLAGS_DRV_MODE),
			     NULL);
	if (err && o->mode.val == LOAD_AUTO && *mode == XDP_MODE_NATIVE) {
		fprintf(stderr,
			"ringload: native XDP failed on %s (%s): "
			"falling back to generic mode\n",
			o->iface, strerror(-err));
		*mode = XDP_MODE_SKB;
		err = bpf_xdp_attach(ifindex,
				     bpf_program__fd(skel->progs.rm_root),
				     base | XDP_FLAGS_SKB_MODE, NULL);
	}
out:
	root_bpf__destroy(skel);
	return err;
}

/* A director instance that knows its slot, on the pinned state. */
static int load_director(struct load_opts *o, int chain_fd, __u32 slot,
			 struct ringmaster_bpf **out)
{
	struct ringmaster_bpf *skel = rm_director_open();
	int err;

	*out = NULL;
	if (!skel)
		return errno ? -errno : -ENOMEM; /* never 0 with no skeleton */
	skel->rodata->rm_chain_slot = slot;
	err = rm_obj_pin_maps(skel->obj, o->pin_dir);
	if (!err)
		err = bpf_map__reuse_fd(skel->maps.rm_chain, chain_fd);
	if (!err)
		err = ringmaster_bpf__load(skel);
	if (err) {
		ringmaster_bpf__destroy(skel);
		return err;
	}
	*out = skel;
	return 0;
}

static int slot_free(const struct load_opts *o, const struct rm_xdp_chain *c,
		     __u32 slot)
{
	if (!c->ids[slot])
		return 0;
	if (!strcmp(c->names[slot], RM_PROG_NAME))
		return load_error(RM_EXIT_RUNTIME,
				  "slot %u of %s's chain holds the director "
				  "(id %u): another --slot",
				  slot, o->iface, c->ids[slot]),
		       -EBUSY;
	return load_error(RM_EXIT_RUNTIME,
			  "slot %u of %s's chain holds '%s' (id %u): "
			  "`ringload chain del %s --slot %u` first, or another "
			  "--slot",
			  slot, o->iface, c->names[slot], c->ids[slot],
			  o->iface, slot),
	       -EBUSY;
}

int chain_attach_director(struct load_opts *o, int ifindex,
			  enum xdp_attach_mode *mode, __u32 *prog_id)
{
	struct ringmaster_bpf *skel = NULL;
	struct rm_xdp_chain c;
	__u32 slot = o->slot.val;
	bool created;
	int err, fd;

	err = open_chain(o, &c, ifindex, &created);
	if (err)
		goto out;
	err = slot_free(o, &c, slot);
	if (err)
		goto out;
	err = load_director(o, c.map_fd, slot, &skel);
	if (!err && !skel)
		err = -ENOMEM; /* load_director() sets it on success */
	if (err) {
		load_error(RM_EXIT_RUNTIME, "cannot load %s: %s (-v shows why)",
			   RM_PROG_NAME, strerror(-err));
		goto undo;
	}
	fd = bpf_program__fd(skel->progs.rm_xdp);
	/* into its slot before the root goes up: no packet sees a chain
	 * without it */
	if (bpf_map_update_elem(c.map_fd, &slot, &fd, BPF_ANY)) {
		err = -errno;
		load_error(RM_EXIT_RUNTIME, "cannot put %s in slot %u: %s",
			   RM_PROG_NAME, slot, strerror(-err));
		goto undo;
	}
	*prog_id = 0;
	{
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			*prog_id = info.id;
	}
	if (created) {
		err = attach_root(o, ifindex, mode);
		if (err) {
			load_error(RM_EXIT_RUNTIME,
				   "cannot attach the chain's root to %s in %s "
				   "mode: %s (-v shows details)",
				   o->iface, ifaces_mode_name(*mode),
				   strerror(-err));
			bpf_map_delete_elem(c.map_fd, &slot);
			goto undo;
		}
	} else {
		*mode = c.attach_mode == XDP_ATTACHED_SKB ? XDP_MODE_SKB
							  : XDP_MODE_NATIVE;
	}
	goto out;
undo:
	if (created) {
		char path[CHAIN_PATH_MAX];

		chain_path(path, o, RM_CHAIN_MAP);
		unlink(path);
		chain_path(path, o, NULL);
		rmdir(path);
	}
out:
	ringmaster_bpf__destroy(skel);
	rm_xdp_chain_close(&c);
	return err;
}

int chain_detach_director(struct load_opts *o, int ifindex,
			  struct rm_xdp_chain *c, int slot)
{
	__u32 s = slot;

	if (bpf_map_delete_elem(c->map_fd, &s) && errno != ENOENT)
		return -errno;
	c->ids[slot] = 0;
	return rm_xdp_chain_used(c) ? 0 : remove_root(o, ifindex, c);
}

/* ---- chain add | del | show ------------------------------------------ */

/* Set a `const volatile __u32` of obj's .rodata, if obj has it. */
static int set_rodata_u32(struct bpf_object *obj, const char *var, __u32 val)
{
	struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	struct bpf_map *map;
	const void *init;
	size_t size;
	__u8 *data;
	int id, err;

	if (!btf)
		return 0;
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	if (id < 0)
		return 0;
	sec = btf__type_by_id(btf, id);
	bpf_object__for_each_map(map, obj)
	{
		const char *n = bpf_map__name(map);
		size_t l = strlen(n);

		if (bpf_map__is_internal(map) && l >= 7 &&
		    !strcmp(n + l - 7, ".rodata"))
			break;
	}
	if (!map)
		return 0;
	init = bpf_map__initial_value(map, &size);
	vs = btf_var_secinfos(sec);
	for (int i = 0; init && i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *t = btf__type_by_id(btf, vs->type);

		if (strcmp(btf__name_by_offset(btf, t->name_off), var))
			continue;
		if (vs->size != sizeof(val) || vs->offset + vs->size > size)
			return -EINVAL;
		data = malloc(size);
		if (!data)
			return -ENOMEM;
		memcpy(data, init, size);
		memcpy(data + vs->offset, &val, sizeof(val));
		err = bpf_map__set_initial_value(map, data, size);
		free(data);
		return err ? err : 1;
	}
	return 0;
}

/* The root of IFACE: a chain must be there (`attach --chain` makes it). */
static int existing_chain(const struct load_opts *o, int *ifindex,
			  struct rm_xdp_chain *c)
{
	int err;

	*ifindex = if_nametoindex(o->iface);
	if (!*ifindex)
		return load_error(RM_EXIT_RUNTIME,
				  "interface '%s' not found (`ip link` lists "
				  "them)",
				  o->iface);
	err = rm_xdp_chain_read(*ifindex, c);
	if (err)
		return load_error(RM_EXIT_RUNTIME,
				  "cannot read what %s runs: %s", o->iface,
				  strerror(-err));
	if (!c->root_id)
		return load_error(RM_EXIT_RUNTIME,
				  "%s has no chain (it runs %s): `ringload "
				  "attach %s --chain` makes one",
				  o->iface,
				  c->attached_id ? c->attached_name
						 : "no XDP program",
				  o->iface);
	return 0;
}

/* OBJ[:PROG]: the part after the last ':' names a program when it holds
 * no '/' (a path may hold ':') */
static const char *split_prog(char *obj)
{
	char *colon = strrchr(obj, ':');

	if (!colon || strchr(colon, '/'))
		return NULL;
	*colon = '\0';
	return colon + 1;
}

static int load_into_slot(struct load_opts *o, struct rm_xdp_chain *c,
			  __u32 slot, char *objpath, __u32 *id)
{
	char dir[CHAIN_PATH_MAX], path[CHAIN_PATH_MAX + 300], leaf[16];
	const char *want = split_prog(objpath);
	struct bpf_program *prog, *p;
	struct bpf_object *obj;
	struct bpf_map *map;
	int err, fd;

	obj = bpf_object__open_file(objpath, NULL);
	err = libbpf_get_error(obj);
	if (err)
		return load_error(RM_EXIT_RUNTIME, "cannot open %s: %s",
				  objpath, strerror(-err)),
		       err;
	prog = NULL;
	bpf_object__for_each_program(p, obj)
	{
		bool mine = want ? !strcmp(bpf_program__name(p), want)
				 : !prog;

		if (mine)
			prog = p;
		bpf_program__set_autoload(p, mine);
	}
	if (!prog) {
		err = -ENOENT;
		load_error(RM_EXIT_RUNTIME, "%s has no program%s%s%s", objpath,
			   want ? " named '" : "", want ? want : "",
			   want ? "'" : "");
		goto out;
	}
	bpf_program__set_type(prog, BPF_PROG_TYPE_XDP);
	snprintf(leaf, sizeof(leaf), "%u", slot);
	chain_path(dir, o, leaf);
	/* its own maps pinned in <chain>/<N>/ so they can be read and
	 * outlive this command; a cooperating program's rm_chain is the
	 * interface's, and its slot is N (rm_chain.h) */
	bpf_object__for_each_map(map, obj)
	{
		if (bpf_map__is_internal(map))
			continue;
		if (!strcmp(bpf_map__name(map), RM_CHAIN_MAP)) {
			err = bpf_map__reuse_fd(map, c->map_fd);
		} else {
			if (mkdir(dir, 0700) && errno != EEXIST) {
				err = -errno;
				break;
			}
			snprintf(path, sizeof(path), "%s/%s", dir,
				 bpf_map__name(map));
			err = bpf_map__set_pin_path(map, path);
		}
		if (err)
			break;
	}
	if (!err)
		err = set_rodata_u32(obj, "rm_chain_slot", slot);
	if (err < 0) {
		load_error(RM_EXIT_RUNTIME, "cannot prepare %s: %s", objpath,
			   strerror(-err));
		goto out;
	}
	err = bpf_object__load(obj);
	if (err) {
		load_error(RM_EXIT_RUNTIME,
			   "cannot load %s from %s: %s (-v shows the verifier's "
			   "log)",
			   bpf_program__name(prog), objpath, strerror(-err));
		goto out;
	}
	fd = bpf_program__fd(prog);
	if (bpf_map_update_elem(c->map_fd, &slot, &fd, BPF_ANY)) {
		err = -errno;
		load_error(RM_EXIT_RUNTIME,
			   "cannot put %s in slot %u: %s (an XDP program of "
			   "another kind, e.g. with frags?)",
			   bpf_program__name(prog), slot, strerror(-err));
		goto out;
	}
	{
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		*id = bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
	}
out:
	bpf_object__close(obj);
	if (err)
		unpin_slot(o, slot);
	return err;
}

int cmd_chain_add(struct load_opts *o)
{
	struct rm_xdp_chain c;
	int ifindex, lock, ret = RM_EXIT_RUNTIME;
	__u32 slot = o->slot.val, id = 0;

	lock = rm_lock_pin_dir(o->pin_dir, RM_LOCK_EX);
	if (lock < 0)
		return load_error(RM_EXIT_RUNTIME,
				  "no Ringmaster state at %s (%s): `ringload "
				  "attach %s --chain` first",
				  o->pin_dir, strerror(-lock), o->iface);
	memset(&c, 0, sizeof(c));
	c.map_fd = -1;
	if (existing_chain(o, &ifindex, &c) || slot_free(o, &c, slot))
		goto out;
	if (load_into_slot(o, &c, slot, (char *)o->obj, &id))
		goto out;
	printf("added %s to slot %u of %s's chain (prog id %u)\n", o->obj,
	       slot, o->iface, id);
	ret = RM_EXIT_OK;
out:
	rm_xdp_chain_close(&c);
	close(lock);
	return ret;
}

int cmd_chain_del(struct load_opts *o)
{
	struct rm_xdp_chain c;
	int ifindex, lock, err, ret = RM_EXIT_RUNTIME;
	__u32 slot = o->slot.val;

	lock = rm_lock_pin_dir(o->pin_dir, RM_LOCK_EX);
	if (lock < 0)
		return load_error(RM_EXIT_RUNTIME,
				  "no Ringmaster state at %s: %s", o->pin_dir,
				  strerror(-lock));
	memset(&c, 0, sizeof(c));
	c.map_fd = -1;
	if (existing_chain(o, &ifindex, &c))
		goto out;
	if (!c.ids[slot]) {
		load_error(RM_EXIT_RUNTIME,
			   "slot %u of %s's chain is empty (`ringload chain "
			   "show %s`)",
			   slot, o->iface, o->iface);
		goto out;
	}
	if (!strcmp(c.names[slot], RM_PROG_NAME)) {
		load_error(RM_EXIT_RUNTIME,
			   "slot %u holds the director: `ringload detach %s`",
			   slot, o->iface);
		goto out;
	}
	if (bpf_map_delete_elem(c.map_fd, &slot) && errno != ENOENT) {
		load_error(RM_EXIT_RUNTIME, "cannot empty slot %u: %s", slot,
			   strerror(errno));
		goto out;
	}
	printf("removed '%s' (prog id %u) from slot %u of %s's chain\n",
	       c.names[slot], c.ids[slot], slot, o->iface);
	unpin_slot(o, slot);
	c.ids[slot] = 0;
	if (!rm_xdp_chain_used(&c)) {
		err = remove_root(o, ifindex, &c);
		if (err) {
			load_error(RM_EXIT_RUNTIME,
				   "the chain is empty, but its root stays on "
				   "%s: %s",
				   o->iface, strerror(-err));
			goto out;
		}
		printf("chain empty: root detached from %s\n", o->iface);
	}
	ret = RM_EXIT_OK;
out:
	rm_xdp_chain_close(&c);
	close(lock);
	return ret;
}

void chain_json(struct rm_json *j, const struct rm_xdp_chain *c)
{
	rm_json_u64(j, "root_prog_id", c->root_id);
	rm_json_arr_open(j, "chain");
	for (int i = 0; i < RM_CHAIN_SLOTS; i++) {
		if (!c->ids[i])
			continue;
		rm_json_obj_open(j, NULL);
		rm_json_u64(j, "slot", i);
		rm_json_u64(j, "prog_id", c->ids[i]);
		rm_json_str(j, "name", c->names[i]);
		rm_json_bool(j, "director", !strcmp(c->names[i], RM_PROG_NAME));
		rm_json_obj_close(j);
	}
	rm_json_arr_close(j);
}

void chain_text(FILE *f, const char *indent, const struct rm_xdp_chain *c)
{
	for (int i = 0; i < RM_CHAIN_SLOTS; i++)
		if (c->ids[i])
			fprintf(f, "%sslot %d  %-16s prog id %u%s\n", indent, i,
				c->names[i], c->ids[i],
				strcmp(c->names[i], RM_PROG_NAME)
				    ? ""
				    : "  (the director)");
}

int cmd_chain_show(struct load_opts *o)
{
	struct rm_xdp_chain c;
	struct rm_json j;
	int ifindex;

	memset(&c, 0, sizeof(c));
	c.map_fd = -1;
	if (existing_chain(o, &ifindex, &c)) {
		rm_xdp_chain_close(&c);
		return RM_EXIT_RUNTIME;
	}
	if (o->json) {
		rm_json_init(&j, stdout);
		rm_json_obj_open(&j, NULL);
		rm_json_str(&j, "interface", o->iface);
		rm_json_str(&j, "mode", c.attach_mode == XDP_ATTACHED_SKB
					    ? "generic"
					    : "native");
		rm_json_u64(&j, "slots", RM_CHAIN_SLOTS);
		chain_json(&j, &c);
		rm_json_obj_close(&j);
		rm_json_end(&j);
	} else {
		printf("%s: %s (prog id %u), %s mode, %d of %d slots used, "
		       "run in slot order:\n",
		       o->iface, RM_ROOT_PROG_NAME, c.root_id,
		       c.attach_mode == XDP_ATTACHED_SKB ? "generic" : "native",
		       rm_xdp_chain_used(&c), RM_CHAIN_SLOTS);
		chain_text(stdout, "  ", &c);
	}
	rm_xdp_chain_close(&c);
	return RM_EXIT_OK;
}
