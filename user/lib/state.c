// SPDX-License-Identifier: GPL-2.0
/*
 * Live state under the pin dir: creation, locking, snapshots, and the one
 * way to change it (old snapshot -> new snapshot, see state.h).
 *
 * This file: the map table, error reporting, bpffs, creation, removal,
 * open and lock. Reading is in state_snap.c, editing a snapshot in
 * state_edit.c, checking a change and building its rings in
 * state_plan.c, changing the live state in state_apply.c; what they share
 * is declared in state_int.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "ringmaster.skel.h"
#include "director_obj.h"
#include "state.h"
#include "layout.h"
#include "state_int.h"
#include "util.h"
#include "vip_filter.h"

#define RM_MAP_NAME_OF(id, name) [RM_M_##id] = #name,
const char *const rm_map_names[RM_M_NR] = {RM_MAPS(RM_MAP_NAME_OF)};
#undef RM_MAP_NAME_OF

__thread char rm_errbuf[512];

const char *rm_errmsg(void)
{
	return rm_errbuf;
}

/* Record why, return err: every failure path is `return rm_state_fail(...)`. */
int __attribute__((format(printf, 2, 3)))
rm_state_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rm_errbuf, sizeof(rm_errbuf), fmt, ap);
	va_end(ap);
	return err;
}

/* Zero-padded copy: names are compared and dumped as whole fields. */
void rm_name_copy(char *dst, const char *src, size_t size)
{
	size_t len = strnlen(src, size - 1);

	memset(dst, 0, size);
	memcpy(dst, src, len);
}

/* name: the pinned map, or NULL for the directory itself */
static int map_open_err(int err, const char *pin_dir, const char *name)
{
	const char *sep = name ? "/" : "";

	if (!name)
		name = "";
	if (err == -ENOENT)
		return rm_state_fail(err,
			    "no Ringmaster state at %s%s%s: run `ringload "
			    "attach IFACE` first, or pass --pin-dir",
			    pin_dir, sep, name);
	if (err == -EPERM || err == -EACCES)
		return rm_state_fail(err,
			    "permission denied opening %s%s%s: run as "
			    "root (needs CAP_BPF and CAP_NET_ADMIN)",
			    pin_dir, sep, name);
	return rm_state_fail(err, "cannot open %s%s%s: %s", pin_dir, sep, name,
		    strerror(-err));
}

/* Keys 0..n-1 of an array map: one batch call, or one call per key where
 * batching is unsupported. */
/* Values of an older layout are shorter (structs grow by appending): read
 * them at their size, each zero-extended to vsize. */
static int array_read_short(int fd, __u32 n, size_t vsize, __u32 pinned,
			    void *out)
{
	char *tmp = calloc(n, pinned);
	int err;

	if (!tmp)
		return -ENOMEM;
	err = rm_array_read(fd, n, pinned, tmp);
	for (__u32 i = 0; !err && i < n; i++) {
		memset((char *)out + i * vsize, 0, vsize);
		memcpy((char *)out + i * vsize, tmp + (size_t)i * pinned,
		       pinned);
	}
	free(tmp);
	return err;
}

int rm_array_read(int fd, __u32 n, size_t vsize, void *out)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), *keys, count = n, batch;
	int err;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.value_size > vsize)
		return -EPROTO;
	if (info.value_size < vsize)
		return array_read_short(fd, n, vsize, info.value_size, out);
	keys = rm_scratch_alloc((size_t)n * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	err = bpf_map_lookup_batch(fd, NULL, &batch, keys, out, &count, NULL);
	if ((!err || err == -ENOENT) && count == n && !keys[0] &&
	    keys[n - 1] == n - 1)
		goto out; /* an array comes back whole and in key order */
	for (__u32 i = 0; i < n; i++) {
		err = bpf_map_lookup_elem(fd, &i, (char *)out + i * vsize);
		if (err)
			goto out;
	}
	err = 0;
out:
	rm_scratch_free(keys);
	return err;
}

/* ---- bpffs, creation, removal ---------------------------------------- */

static int mkdir_p(const char *dir)
{
	char path[RM_PATH_MAX];

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

int rm_bpffs_prepare(const char *pin_dir)
{
	struct statfs sfs;
	int err;

	/* libxdp pins its dispatcher under /sys/fs/bpf too, so a missing
	 * bpffs there is mounted whatever the pin dir, as systemd would */
	if (!statfs("/sys/fs/bpf", &sfs) && sfs.f_type != BPF_FS_MAGIC &&
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		return rm_state_fail(-errno,
			    "cannot mount bpffs at /sys/fs/bpf: %s "
			    "(%s)",
			    strerror(errno),
			    errno == EPERM ? "run as root"
					   : "mount -t bpf bpf /sys/fs/bpf");
	err = mkdir_p(pin_dir);
	if (err)
		return rm_state_fail(err, "cannot create pin dir %s: %s%s", pin_dir,
			    strerror(-err),
			    err == -EACCES || err == -EPERM ? " (run as root)"
							    : "");
	if (statfs(pin_dir, &sfs) || sfs.f_type != BPF_FS_MAGIC)
		return rm_state_fail(-EINVAL,
			    "%s is not on a BPF filesystem: use a "
			    "--pin-dir under /sys/fs/bpf",
			    pin_dir);
	return 0;
}

__u32 rm_conn_entries(__u32 n)
{
	int ncpus = libbpf_num_possible_cpus();
	__u64 r;

	if (!n)
		n = RM_DEFAULT_CONN_ENTRIES;
	if (ncpus <= 1)
		return n;
	/* what htab_map_alloc() does for BPF_F_NO_COMMON_LRU */
	r = ((__u64)n + ncpus - 1) / ncpus * ncpus;
	return r > UINT32_MAX ? n / ncpus * ncpus : (__u32)r;
}

/* rm_conns as the pinned table is, else as asked. libbpf reuses a pin
 * only when max_entries matches to the entry, so a state created with
 * another size than the default could not be loaded again otherwise. */
static int size_conns(struct bpf_map *map, const char *path, __u32 want)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), n;
	int fd = bpf_obj_get(path), err;

	if (want > RM_CONN_ENTRIES_MAX)
		return rm_state_fail(-ERANGE,
			    "connection table of %u entries: the limit is %u",
			    want, RM_CONN_ENTRIES_MAX);
	if (fd < 0 && errno != ENOENT)
		return rm_state_fail(-errno, "cannot open %s: %s", path,
			    strerror(errno));
	if (fd < 0) {
		n = rm_conn_entries(want);
	} else {
		err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
		close(fd);
		if (err)
			return rm_state_fail(err, "cannot inspect %s: %s", path,
				    strerror(-err));
		n = info.max_entries;
		if (want && rm_conn_entries(want) != n)
			return rm_state_fail(-EEXIST,
				    "the connection table %s has %u entries, "
				    "not %u: its size is fixed when the state "
				    "is created. To resize: `ringctl save > "
				    "cfg`, `ringload detach` every interface, "
				    "`ringload purge`, `ringload attach IFACE "
				    "--conn-table %u`, `ringctl restore cfg`",
				    path, n, rm_conn_entries(want), want);
	}
	err = bpf_map__set_max_entries(map, n);
	if (err)
		return rm_state_fail(err, "cannot size %s: %s", path, strerror(-err));
	return 0;
}

int rm_obj_pin_maps(struct bpf_object *obj, const char *pin_dir)
{
	return rm_obj_pin_maps_sized(obj, pin_dir, 0);
}

int rm_obj_pin_maps_sized(struct bpf_object *obj, const char *pin_dir,
			  __u32 conn_entries)
{
	char path[RM_PATH_MAX + RM_NAME_MAX];
	struct bpf_map *map, *idx;
	int err;

	bpf_object__for_each_map(map, obj)
	{
		/* .rodata/.bss belong to one program instance, not state */
		if (bpf_map__is_internal(map))
			continue;
		/* the chain is the interface's, not the state's: ringload
		 * points it at the interface's pin (chain.c) */
		if (!strcmp(bpf_map__name(map), RM_CHAIN_MAP))
			continue;
		snprintf(path, sizeof(path), "%s/%s", pin_dir,
			 bpf_map__name(map));
		/* the kernel adds BPF_F_RDONLY_PROG to every devmap it
		 * creates (and refuses it at creation), and libbpf 1.1
		 * compares flags literally when reusing a pin: ask for what
		 * the pinned devmap has */
		if ((bpf_map__type(map) == BPF_MAP_TYPE_DEVMAP ||
		     bpf_map__type(map) == BPF_MAP_TYPE_DEVMAP_HASH) &&
		    !access(path, F_OK))
			bpf_map__set_map_flags(map, bpf_map__map_flags(map) |
							BPF_F_RDONLY_PROG);
		if (!strcmp(bpf_map__name(map), RM_MAP_NAME(CONNS)) ||
		    !strcmp(bpf_map__name(map), RM_MAP_NAME(CONNS6))) {
			err = size_conns(map, path, conn_entries);
			if (err)
				return err;
		}
		err = bpf_map__set_pin_path(map, path);
		if (err)
			return rm_state_fail(err, "cannot set pin path %s: %s", path,
				    strerror(-err));
	}
	/* the presence index follows rm_conns' size, as pinned or asked */
	map = bpf_object__find_map_by_name(obj, RM_MAP_NAME(CONNS));
	idx = bpf_object__find_map_by_name(obj, RM_MAP_NAME(CONN_IDX));
	if (map && idx) {
		err = bpf_map__set_max_entries(
		    idx, RM_CONN_IDX_ENTRIES(bpf_map__max_entries(map)));
		if (err)
			return rm_state_fail(err, "cannot size %s: %s",
				    RM_MAP_NAME(CONN_IDX), strerror(-err));
	}
	return 0;
}

/* First use: a random key, so nobody can aim flows at one node. */
static int seed_init(int fd)
{
	struct rm_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &cfg))
		return rm_state_fail(-errno, "cannot read rm_config: %s",
			    strerror(errno));
	if (cfg.flags & RM_CFG_SEEDED)
		return 0;
	if (getrandom(&cfg.seed, sizeof(cfg.seed), 0) != sizeof(cfg.seed))
		return rm_state_fail(-EIO, "getrandom failed: %s", strerror(errno));
	if (!cfg.udp_timeout_s)
		cfg.udp_timeout_s = RM_DEFAULT_UDP_TIMEOUT_S;
	/* 0 would mean unlimited: a new director gets the bounded default */
	if (!cfg.conn_insert_rate)
		cfg.conn_insert_rate = RM_DEFAULT_CONN_INSERT_RATE;
	cfg.handover_window_s = RM_DEFAULT_HANDOVER_S;
	cfg.flags |= RM_CFG_SEEDED;
	if (bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY))
		return rm_state_fail(-errno, "cannot seed rm_config: %s",
			    strerror(errno));
	return 0;
}

/* Enter the slot of every key in rm_services into rm_vip_slots. */
static int vip_slots_grow(int slots_fd, int services_fd)
{
	struct rm_vip_slots *f = malloc(sizeof(*f));
	int err = f ? rm_vip_slots_compute(services_fd, f) : -ENOMEM;

	if (!err)
		err = rm_vip_slots_merge(slots_fd, f);
	free(f);
	if (err)
		return rm_state_fail(err, "cannot fill %s: %s", RM_MAP_NAME(VIP_SLOTS),
			    strerror(-err));
	return 0;
}

int rm_state_create(const char *pin_dir, struct ringmaster_bpf **out)
{
	return rm_state_create_sized(pin_dir, 0, out);
}

int rm_state_create_sized(const char *pin_dir, __u32 conn_entries,
			  struct ringmaster_bpf **out)
{
	char path[RM_PATH_MAX + RM_NAME_MAX];
	struct ringmaster_bpf *skel = NULL;
	struct rm_layout layout;
	int lock_fd = -1, err;
	bool fresh;

	err = rm_bpffs_prepare(pin_dir);
	if (err)
		return err;
	lock_fd = rm_lock_pin_dir(pin_dir, RM_LOCK_EX);
	if (lock_fd < 0)
		return rm_state_fail(lock_fd, "cannot lock %s: %s", pin_dir,
			    strerror(-lock_fd));
	/* a new state records its layout (layout.h); pins already there
	 * keep the record they have, or lack */
	snprintf(path, sizeof(path), "%s/%s", pin_dir, RM_MAP_NAME(CONFIG));
	fresh = access(path, F_OK) != 0;
	/* pins made by the crypto object (encrypted QUIC services may be
	 * configured) are never taken over by the plaintext one, which
	 * would route their CIDs by nothing but the ring */
	snprintf(path, sizeof(path), "%s/%s", pin_dir, RM_QUIC_KEYS_MAP);
	if (!rm_director_crypt() && !access(path, F_OK)) {
		err = rm_state_fail(-EOPNOTSUPP,
			"%s was made by the director that decrypts QUIC CIDs "
			"(BPF crypto), which this kernel or RM_QUIC_CRYPT=0 "
			"rules out: `ringctl save > cfg`, `ringload purge`, "
			"attach, and restore cfg without --quic-key-file",
			pin_dir);
		goto out;
	}
	skel = rm_director_open();
	if (!skel) {
		err = rm_state_fail(-errno, "cannot open the BPF object: %s",
			   strerror(errno));
		goto out;
	}
	err = rm_obj_pin_maps_sized(skel->obj, pin_dir, conn_entries);
	if (err)
		goto out;
	err = ringmaster_bpf__load(skel);
	if (err == -EPERM || err == -EACCES) {
		rm_state_fail(err, "permission denied loading the XDP program: run as "
			  "root (needs CAP_BPF, CAP_NET_ADMIN)");
		goto out;
	}
	if (err == -ENOMEM || err == -E2BIG) {
		/* E2BIG is also the verifier's "program too large" */
		rm_state_fail(err,
		     "cannot create the maps in %s or load the program: %s "
		     "(the connection table's %u entries are allocated up "
		     "front: try a smaller --conn-table; or the verifier "
		     "found the program too complex for this kernel: -v "
		     "shows its log)",
		     pin_dir, strerror(-err),
		     bpf_map__max_entries(skel->maps.rm_conns));
		goto out;
	}
	if (err) {
		rm_state_fail(err,
		     "cannot load the XDP program with the maps pinned in "
		     "%s: %s (maps from another build? `ringctl save > cfg; "
		     "ringload purge`, attach again, `ringctl restore cfg`; "
		     "-v shows details)",
		     pin_dir, strerror(-err));
		goto out;
	}
	err = seed_init(bpf_map__fd(skel->maps.rm_config));
	if (!err && fresh)
		err = rm_layout_ours(&layout);
	if (!err && fresh)
		err = rm_layout_record(pin_dir, &layout);
	if (err)
		goto out;
	/* the slot table may be new next to keys pinned by an older build:
	 * it must hold their slots before any packet meets it */
	err = vip_slots_grow(bpf_map__fd(skel->maps.rm_vip_slots),
			     bpf_map__fd(skel->maps.rm_services));
	if (err)
		goto out;
	if (out) {
		*out = skel;
		skel = NULL;
	}
out:
	ringmaster_bpf__destroy(skel);
	close(lock_fd);
	return err;
}

int rm_pinned_array_open(const char *pin_dir, const char *name,
			 __u32 value_size, __u32 entries, bool create)
{
	char path[RM_PATH_MAX + RM_NAME_MAX];
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", pin_dir, name);
	fd = bpf_obj_get(path);
	if (fd >= 0 || errno != ENOENT || !create)
		return fd >= 0 ? fd : -errno;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, name, sizeof(__u32), value_size,
			    entries, NULL);
	if (fd < 0)
		return -errno;
	if (bpf_obj_pin(fd, path)) {
		err = -errno;
		close(fd);
		return err == -EEXIST ? rm_pinned_array_open(pin_dir, name,
							     value_size,
							     entries, false)
				      : err;
	}
	return fd;
}

int rm_state_purge(const char *pin_dir)
{
	char path[RM_PATH_MAX + 300];
	struct dirent *e;
	DIR *d = opendir(pin_dir);
	int err = 0;

	if (!d)
		return rm_state_fail(-errno, "cannot open %s: %s", pin_dir,
			    strerror(errno));
	/* only our pins: anything else someone put there stays, and then
	 * the directory does too */
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "rm_", 3)) {
			snprintf(path, sizeof(path), "%s/%s", pin_dir,
				 e->d_name);
			if (unlink(path) && !err)
				err = rm_state_fail(-errno, "cannot unpin %s: %s", path,
					   strerror(errno));
		}
	closedir(d);
	if (!err && rmdir(pin_dir))
		err = rm_state_fail(-errno, "cannot remove %s: %s", pin_dir,
			   strerror(errno));
	return err;
}

/* ---- open, lock ------------------------------------------------------ */

/* FNV-1a: names a fallback lock file after the pin dir's real path. */
static unsigned long long path_hash(const char *s)
{
	unsigned long long h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

int rm_lock_pin_dir(const char *pin_dir, enum rm_lock lock)
{
	int op = lock == RM_LOCK_EX	? LOCK_EX
		 : lock == RM_LOCK_EX_TRY ? LOCK_EX | LOCK_NB
					  : LOCK_SH,
	    fd, err;
	char real[PATH_MAX], path[64];

	fd = open(pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((err = flock(fd, op)) && errno == EINTR)
		;
	if (!err)
		return fd;
	err = -errno;
	close(fd);
	/* bpffs takes flock on its directories; a filesystem that does not
	 * gets a lock file named after the directory instead */
	if (err != -EINVAL && err != -EOPNOTSUPP && err != -ENOLCK)
		return err;
	if (!realpath(pin_dir, real))
		return -errno;
	snprintf(path, sizeof(path), "/run/ringmaster-%016llx.lock",
		 path_hash(real));
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while ((err = flock(fd, op)) && errno == EINTR)
		;
	if (err) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* The pinned maps must be the ones this build describes; a reader takes
 * values shorter than ours (an older layout: structs only grow by
 * appending, rm_array_read() zero-extends), so `ringctl save` of a state
 * from before an upgrade works (ringload attach --migrate). */
static int check_map(struct rm_state *st, enum rm_map_id id, __u32 key,
		     __u32 value, bool shorter_ok)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (st->fd[id] < 0)
		return 0; /* an older layout's reader: not pinned then */
	if (bpf_obj_get_info_by_fd(st->fd[id], &info, &len))
		return rm_state_fail(-errno, "cannot inspect %s: %s", rm_map_names[id],
			    strerror(errno));
	if (id == RM_M_TX_PORTS) {
		st->tx_vsize = info.value_size;
		value = info.value_size >= 4 ? info.value_size : 4;
	}
	if (shorter_ok && info.key_size == key && info.value_size < value)
		return 0;
	if (info.key_size != key || info.value_size != value)
		return rm_state_fail(-EPROTO,
			    "%s/%s does not match this build (key %u "
			    "value %u, expected %u/%u): an older layout; "
			    "`ringload attach IFACE --migrate` moves the "
			    "configuration over",
			    st->pin_dir, rm_map_names[id], info.key_size,
			    info.value_size, key, value);
	return 0;
}

int rm_state_open(struct rm_state *st, const char *pin_dir, enum rm_lock lock)
{
	char path[RM_PATH_MAX + RM_NAME_MAX];
	struct stat sb;
	bool ro;
	int i, err;

	memset(st, 0, sizeof(*st));
	st->lock_fd = -1;
	for (i = 0; i < RM_M_NR; i++)
		st->fd[i] = -1;
	if (snprintf(st->pin_dir, sizeof(st->pin_dir), "%s", pin_dir) >=
	    (int)sizeof(st->pin_dir))
		return rm_state_fail(-ENAMETOOLONG, "pin dir path too long: %s",
			    pin_dir);
	if (stat(pin_dir, &sb))
		return map_open_err(-errno, pin_dir, NULL);
	if (lock != RM_LOCK_NONE) {
		st->lock_fd = rm_lock_pin_dir(pin_dir, lock);
		if (st->lock_fd == -EWOULDBLOCK) {
			err = rm_state_fail(-EWOULDBLOCK, "%s is locked by "
					    "another change", pin_dir);
			goto fail;
		}
		if (st->lock_fd < 0) {
			err = map_open_err(st->lock_fd, pin_dir, NULL);
			goto fail;
		}
	}
	/* only a reader may meet an older layout: shorter values, and no
	 * pin of a map added since (its fd stays -1; the configuration's
	 * own maps must be there) */
	ro = lock == RM_LOCK_NONE || lock == RM_LOCK_SH;
	for (i = 0; i < RM_M_NR; i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, rm_map_names[i]);
		st->fd[i] = bpf_obj_get(path);
		if (st->fd[i] < 0 && errno == ENOENT && ro &&
		    i != RM_M_CONFIG && i != RM_M_SVC_META && i != RM_M_NODES &&
		    i != RM_M_SERVICES && i != RM_M_RINGS)
			continue;
		if (st->fd[i] < 0) {
			err = map_open_err(-errno, pin_dir, rm_map_names[i]);
			goto fail;
		}
	}
	st->ncpus = libbpf_num_possible_cpus();
	err = st->ncpus > 0 ? 0 : rm_state_fail(-EIO, "cannot count possible CPUs");
	if (!err)
		err = check_map(st, RM_M_NODES, 4, sizeof(struct rm_node), ro);
	if (!err)
		err = check_map(st, RM_M_SVC_META, 4,
				sizeof(struct rm_svc_meta), ro);
	if (!err)
		err = check_map(st, RM_M_CONFIG, 4, sizeof(struct rm_config),
				ro);
	if (!err)
		err = check_map(st, RM_M_SERVICES, sizeof(struct rm_svc_key),
				sizeof(struct rm_svc), false);
	if (!err)
		err = check_map(st, RM_M_TX_PORTS, 4, 0, false);
	if (!err)
		err = check_map(st, RM_M_CONNS, sizeof(struct rm_conn_key4),
				sizeof(struct rm_conn), ro);
	if (!err)
		err = check_map(st, RM_M_CONNS6, sizeof(struct rm_flow),
				sizeof(struct rm_conn), ro);
	if (!err)
		err = check_map(st, RM_M_VIP_SLOTS, 4,
				sizeof(struct rm_vip_slots), false);
	if (!err)
		err = check_map(st, RM_M_CONN_IDX, 4,
				sizeof(struct rm_conn_set), false);
	/* a writer's rings must be ones the attached program reads */
	if (!err && !ro)
		err = rm_layout_writable(pin_dir);
	if (err)
		goto fail;
	return 0;
fail:
	rm_state_close(st);
	return err;
}

void rm_state_close(struct rm_state *st)
{
	for (int i = 0; i < RM_M_NR; i++)
		if (st->fd[i] >= 0)
			close(st->fd[i]);
	if (st->lock_fd >= 0)
		close(st->lock_fd);
	for (int i = 0; i < RM_M_NR; i++)
		st->fd[i] = -1;
	st->lock_fd = -1;
}
