// SPDX-License-Identifier: GPL-2.0
/* The pinned state's layout record: see layout.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "ringmaster.skel.h"
#include "layout.h"
#include "state.h"
#include "state_int.h"
#include "util.h"

/* FNV-1a, 64 bits: an identity, not a defence */
static void mix(__u64 *h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		*h = (*h ^ b[i]) * 0x100000001b3ULL;
}

static void mix_u32(__u64 *h, __u32 v)
{
	mix(h, &v, sizeof(v));
}

static void mix_str(__u64 *h, const char *s)
{
	mix(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* The shape of a type: what its bytes mean, not what it is called. */
static void mix_type(__u64 *h, const struct btf *btf, __u32 id, int depth)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	/* qualifiers and typedefs change no byte */
	while (t && (btf_is_typedef(t) || btf_is_const(t) ||
		     btf_is_volatile(t) || btf_is_restrict(t)))
		t = btf__type_by_id(btf, t->type);
	if (!t || depth > 8) {
		mix_u32(h, 0xffffffffu);
		return;
	}
	mix_u32(h, btf_kind(t));
	if (btf_is_int(t)) {
		mix_u32(h, t->size);
		mix_u32(h, btf_int_encoding(t));
		mix_u32(h, btf_int_bits(t));
	} else if (btf_is_composite(t)) {
		mix_u32(h, t->size);
		mix_u32(h, btf_vlen(t));
		for (__u16 i = 0; i < btf_vlen(t); i++) {
			const struct btf_member *m = btf_members(t) + i;

			mix_str(h, btf__name_by_offset(btf, m->name_off));
			mix_u32(h, btf_member_bit_offset(t, i));
			mix_u32(h, btf_member_bitfield_size(t, i));
			mix_type(h, btf, m->type, depth + 1);
		}
	} else if (btf_is_array(t)) {
		mix_u32(h, btf_array(t)->nelems);
		mix_type(h, btf, btf_array(t)->type, depth + 1);
	} else if (btf_is_enum(t) || btf_is_enum64(t)) {
		mix_u32(h, t->size);
	}
}

static void mix_map(__u64 *h, const struct bpf_map *map, const struct btf *btf)
{
	const char *name = bpf_map__name(map);
	bool conns = !strcmp(name, RM_MAP_NAME(CONNS)) ||
		     !strcmp(name, RM_MAP_NAME(CONNS6));

	mix_str(h, name);
	mix_u32(h, bpf_map__type(map));
	mix_u32(h, bpf_map__key_size(map));
	mix_u32(h, bpf_map__value_size(map));
	/* the connection tables are sized at attach (--conn-table) */
	mix_u32(h, conns ? 0 : bpf_map__max_entries(map));
	mix_u32(h, bpf_map__map_flags(map));
	if (btf && bpf_map__btf_key_type_id(map))
		mix_type(h, btf, bpf_map__btf_key_type_id(map), 0);
	if (btf && bpf_map__btf_value_type_id(map))
		mix_type(h, btf, bpf_map__btf_value_type_id(map), 0);
}

struct named {
	const char *name;
	__u64 h;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct named *)a)->name,
		      ((const struct named *)b)->name);
}

int rm_layout_ours(struct rm_layout *out)
{
	struct ringmaster_bpf *skel = ringmaster_bpf__open();
	struct named maps[64];
	struct bpf_map *map;
	const struct btf *btf;
	size_t n = 0;
	__u64 h = 0xcbf29ce484222325ULL;

	if (!skel)
		return rm_state_fail(-errno, "cannot open the BPF object: %s",
				     strerror(errno));
	btf = bpf_object__btf(skel->obj);
	/* the maps rm_obj_pin_maps() pins, in name order (a definition
	 * moved in bpf/maps.h moves no pin) */
	bpf_object__for_each_map(map, skel->obj)
	{
		struct bpf_map *inner;

		if (bpf_map__is_internal(map) ||
		    !strcmp(bpf_map__name(map), RM_CHAIN_MAP) ||
		    n == sizeof(maps) / sizeof(maps[0]))
			continue;
		maps[n].name = bpf_map__name(map);
		maps[n].h = 0xcbf29ce484222325ULL;
		mix_map(&maps[n].h, map, btf);
		inner = bpf_map__inner_map(map);
		if (inner)
			mix_map(&maps[n].h, inner, NULL);
		/* what a ring's slots mean is no map's shape: its format */
		if (!strcmp(maps[n].name, RM_MAP_NAME(RINGS)) ||
		    !strcmp(maps[n].name, RM_MAP_NAME(RINGS_OLD)))
			mix_u32(&maps[n].h, RM_RING_FORMAT);
		n++;
	}
	qsort(maps, n, sizeof(maps[0]), by_name);
	for (size_t i = 0; i < n; i++) {
		mix_str(&h, maps[i].name);
		mix(&h, &maps[i].h, sizeof(maps[i].h));
	}
	memset(out, 0, sizeof(*out));
	out->number = RM_LAYOUT_NUMBER;
	out->ring_format = RM_RING_FORMAT;
	out->fingerprint = h;
	snprintf(out->version, sizeof(out->version), "%s", rm_version());
	ringmaster_bpf__destroy(skel);
	return 0;
}

int rm_layout_pinned(const char *pin_dir, struct rm_layout *out)
{
	char path[RM_PATH_MAX + RM_NAME_MAX];
	__u32 zero = 0;
	int fd, err;

	memset(out, 0, sizeof(*out));
	/* rm_config is in every layout: without it, there is no state */
	snprintf(path, sizeof(path), "%s/%s", pin_dir, RM_MAP_NAME(CONFIG));
	if (access(path, F_OK))
		return -ENOENT;
	fd = rm_pinned_array_open(pin_dir, RM_LAYOUT_MAP, sizeof(*out), 1,
				  false);
	if (fd == -ENOENT)
		return 0; /* layout 0: from before records */
	if (fd < 0)
		return rm_state_fail(fd, "cannot open %s/%s: %s", pin_dir,
				     RM_LAYOUT_MAP, strerror(-fd));
	/* a record of a later build may be longer: its head is ours */
	{
		char buf[256] = {0};
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);

		err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
		if (!err && info.value_size > sizeof(buf))
			err = -EPROTO;
		if (!err && bpf_map_lookup_elem(fd, &zero, buf))
			err = -errno;
		if (!err)
			memcpy(out, buf, sizeof(*out));
	}
	close(fd);
	if (err)
		return rm_state_fail(err, "cannot read %s/%s: %s", pin_dir,
				     RM_LAYOUT_MAP, strerror(-err));
	out->version[sizeof(out->version) - 1] = '\0';
	return 0;
}

int rm_layout_writable(const char *pin_dir)
{
	struct rm_layout l;
	char text[96];
	int err = rm_layout_pinned(pin_dir, &l);

	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	if (l.ring_format == RM_RING_FORMAT)
		return 0;
	rm_layout_text(&l, text, sizeof(text));
	return rm_state_fail(-EPROTO,
			     "%s holds %s, whose rings are in format %u; this "
			     "build writes format %u, which the program attached "
			     "there cannot read: `ringload attach IFACE --migrate` "
			     "moves the state over first",
			     pin_dir, text, l.ring_format, RM_RING_FORMAT);
}

int rm_layout_record(const char *pin_dir, const struct rm_layout *l)
{
	__u32 zero = 0;
	int fd = rm_pinned_array_open(pin_dir, RM_LAYOUT_MAP, sizeof(*l), 1,
				      true),
	    err;

	if (fd < 0)
		return rm_state_fail(fd, "cannot create %s/%s: %s", pin_dir,
				     RM_LAYOUT_MAP, strerror(-fd));
	err = bpf_map_update_elem(fd, &zero, l, BPF_ANY) ? -errno : 0;
	close(fd);
	if (err)
		return rm_state_fail(err, "cannot write %s/%s: %s", pin_dir,
				     RM_LAYOUT_MAP, strerror(-err));
	return 0;
}

void rm_layout_text(const struct rm_layout *l, char *out, size_t len)
{
	if (!l->fingerprint)
		snprintf(out, len, "layout 0 (from before layout records)");
	else
		snprintf(out, len, "layout %u (%016llx, ringmaster %s)",
			 l->number, (unsigned long long)l->fingerprint,
			 l->version[0] ? l->version : "?");
}
