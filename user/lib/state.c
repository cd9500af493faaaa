// SPDX-License-Identifier: GPL-2.0
/*
 * Live state under the pin dir: creation, locking, snapshots, and the one
 * way to change it (old snapshot -> new snapshot, see state.h).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/membarrier.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "ringmaster.skel.h"
#include "ring_map.h"
#include "state.h"
#include "util.h"
#include "vip_filter.h"

const char *const rm_map_names[RM_M_NR] = {
	[RM_M_SERVICES] = RM_MAP_SERVICES,
	[RM_M_RINGS] = RM_MAP_RINGS,
	[RM_M_NODES] = RM_MAP_NODES,
	[RM_M_CONFIG] = RM_MAP_CONFIG,
	[RM_M_SVC_META] = RM_MAP_SVC_META,
	[RM_M_COUNTERS] = RM_MAP_COUNTERS,
	[RM_M_SVC_STATS] = RM_MAP_SVC_STATS,
	[RM_M_NODE_STATS] = RM_MAP_NODE_STATS,
	[RM_M_TX_PORTS] = RM_MAP_TX_PORTS,
	[RM_M_CONNS] = RM_MAP_CONNS,
	[RM_M_VIP_SLOTS] = RM_MAP_VIP_SLOTS,
};

static __thread char errbuf[512];

const char *rm_errmsg(void)
{
	return errbuf;
}

/* Record why, return err: every failure path is `return fail(...)`. */
static int __attribute__((format(printf, 2, 3)))
fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return err;
}

/* Zero-padded copy: names are compared and dumped as whole fields. */
static void name_copy(char *dst, const char *src, size_t size)
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
		return fail(err,
			    "no Ringmaster state at %s%s%s: run `ringload "
			    "attach IFACE` first, or pass --pin-dir",
			    pin_dir, sep, name);
	if (err == -EPERM || err == -EACCES)
		return fail(err,
			    "permission denied opening %s%s%s: run as "
			    "root (needs CAP_BPF and CAP_NET_ADMIN)",
			    pin_dir, sep, name);
	return fail(err, "cannot open %s%s%s: %s", pin_dir, sep, name,
		    strerror(-err));
}

/* Keys 0..n-1 of an array map: one batch call, or one call per key where
 * batching is unsupported. */
static int array_read(int fd, __u32 n, size_t vsize, void *out)
{
	__u32 *keys = malloc((size_t)n * sizeof(*keys)), count = n, batch;
	int err;

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
	free(keys);
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
		return fail(-errno,
			    "cannot mount bpffs at /sys/fs/bpf: %s "
			    "(%s)",
			    strerror(errno),
			    errno == EPERM ? "run as root"
					   : "mount -t bpf bpf /sys/fs/bpf");
	err = mkdir_p(pin_dir);
	if (err)
		return fail(err, "cannot create pin dir %s: %s%s", pin_dir,
			    strerror(-err),
			    err == -EACCES || err == -EPERM ? " (run as root)"
							    : "");
	if (statfs(pin_dir, &sfs) || sfs.f_type != BPF_FS_MAGIC)
		return fail(-EINVAL,
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
		return fail(-ERANGE,
			    "connection table of %u entries: the limit is %u",
			    want, RM_CONN_ENTRIES_MAX);
	if (fd < 0 && errno != ENOENT)
		return fail(-errno, "cannot open %s: %s", path,
			    strerror(errno));
	if (fd < 0) {
		n = rm_conn_entries(want);
	} else {
		err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
		close(fd);
		if (err)
			return fail(err, "cannot inspect %s: %s", path,
				    strerror(-err));
		n = info.max_entries;
		if (want && rm_conn_entries(want) != n)
			return fail(-EEXIST,
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
		return fail(err, "cannot size %s: %s", path, strerror(-err));
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
	struct bpf_map *map;
	int err;

	bpf_object__for_each_map(map, obj)
	{
		/* .rodata/.bss belong to one program instance, not state */
		if (bpf_map__is_internal(map))
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
		if (!strcmp(bpf_map__name(map), RM_MAP_CONNS)) {
			err = size_conns(map, path, conn_entries);
			if (err)
				return err;
		}
		err = bpf_map__set_pin_path(map, path);
		if (err)
			return fail(err, "cannot set pin path %s: %s", path,
				    strerror(-err));
	}
	return 0;
}

/* First use: a random key, so nobody can aim flows at one node. */
static int seed_init(int fd)
{
	struct rm_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &cfg))
		return fail(-errno, "cannot read rm_config: %s",
			    strerror(errno));
	if (cfg.flags & RM_CFG_SEEDED)
		return 0;
	if (getrandom(&cfg.seed, sizeof(cfg.seed), 0) != sizeof(cfg.seed))
		return fail(-EIO, "getrandom failed: %s", strerror(errno));
	if (!cfg.udp_timeout_s)
		cfg.udp_timeout_s = RM_DEFAULT_UDP_TIMEOUT_S;
	/* 0 would mean unlimited: a new director gets the bounded default */
	if (!cfg.conn_insert_rate)
		cfg.conn_insert_rate = RM_DEFAULT_CONN_INSERT_RATE;
	cfg.flags |= RM_CFG_SEEDED;
	if (bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY))
		return fail(-errno, "cannot seed rm_config: %s",
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
		return fail(err, "cannot fill %s: %s", RM_MAP_VIP_SLOTS,
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
	struct ringmaster_bpf *skel = NULL;
	int lock_fd = -1, err;

	err = rm_bpffs_prepare(pin_dir);
	if (err)
		return err;
	lock_fd = rm_lock_pin_dir(pin_dir, RM_LOCK_EX);
	if (lock_fd < 0)
		return fail(lock_fd, "cannot lock %s: %s", pin_dir,
			    strerror(-lock_fd));
	skel = ringmaster_bpf__open();
	if (!skel) {
		err = fail(-errno, "cannot open the BPF object: %s",
			   strerror(errno));
		goto out;
	}
	err = rm_obj_pin_maps_sized(skel->obj, pin_dir, conn_entries);
	if (err)
		goto out;
	err = ringmaster_bpf__load(skel);
	if (err == -EPERM || err == -EACCES) {
		fail(err, "permission denied loading the XDP program: run as "
			  "root (needs CAP_BPF, CAP_NET_ADMIN)");
		goto out;
	}
	if (err == -ENOMEM || err == -E2BIG) {
		fail(err,
		     "cannot create the maps in %s: %s (the connection "
		     "table's %u entries are allocated up front: try a "
		     "smaller --conn-table)",
		     pin_dir, strerror(-err),
		     bpf_map__max_entries(skel->maps.rm_conns));
		goto out;
	}
	if (err) {
		fail(err,
		     "cannot load the XDP program with the maps pinned in "
		     "%s: %s (maps from another build? `ringctl save > cfg; "
		     "ringload purge`, attach again, `ringctl restore cfg`; "
		     "-v shows details)",
		     pin_dir, strerror(-err));
		goto out;
	}
	err = seed_init(bpf_map__fd(skel->maps.rm_config));
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

int rm_state_purge(const char *pin_dir)
{
	char path[RM_PATH_MAX + 300];
	struct dirent *e;
	DIR *d = opendir(pin_dir);
	int err = 0;

	if (!d)
		return fail(-errno, "cannot open %s: %s", pin_dir,
			    strerror(errno));
	/* only our pins: anything else someone put there stays, and then
	 * the directory does too */
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "rm_", 3)) {
			snprintf(path, sizeof(path), "%s/%s", pin_dir,
				 e->d_name);
			if (unlink(path) && !err)
				err = fail(-errno, "cannot unpin %s: %s", path,
					   strerror(errno));
		}
	closedir(d);
	if (!err && rmdir(pin_dir))
		err = fail(-errno, "cannot remove %s: %s", pin_dir,
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
	int op = lock == RM_LOCK_EX ? LOCK_EX : LOCK_SH, fd, err;
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

/* The pinned maps must be the ones this build describes. */
static int check_map(struct rm_state *st, enum rm_map_id id, __u32 key,
		     __u32 value)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(st->fd[id], &info, &len))
		return fail(-errno, "cannot inspect %s: %s", rm_map_names[id],
			    strerror(errno));
	if (id == RM_M_TX_PORTS) {
		st->tx_vsize = info.value_size;
		value = info.value_size >= 4 ? info.value_size : 4;
	}
	if (info.key_size != key || info.value_size != value)
		return fail(-EPROTO,
			    "%s/%s does not match this build (key %u "
			    "value %u, expected %u/%u): `ringctl save`, "
			    "`ringload purge`, attach, `ringctl restore`",
			    st->pin_dir, rm_map_names[id], info.key_size,
			    info.value_size, key, value);
	return 0;
}

int rm_state_open(struct rm_state *st, const char *pin_dir, enum rm_lock lock)
{
	char path[RM_PATH_MAX + RM_NAME_MAX];
	struct stat sb;
	int i, err;

	memset(st, 0, sizeof(*st));
	st->lock_fd = -1;
	for (i = 0; i < RM_M_NR; i++)
		st->fd[i] = -1;
	if (snprintf(st->pin_dir, sizeof(st->pin_dir), "%s", pin_dir) >=
	    (int)sizeof(st->pin_dir))
		return fail(-ENAMETOOLONG, "pin dir path too long: %s",
			    pin_dir);
	if (stat(pin_dir, &sb))
		return map_open_err(-errno, pin_dir, NULL);
	if (lock != RM_LOCK_NONE) {
		st->lock_fd = rm_lock_pin_dir(pin_dir, lock);
		if (st->lock_fd < 0) {
			err = map_open_err(st->lock_fd, pin_dir, NULL);
			goto fail;
		}
	}
	for (i = 0; i < RM_M_NR; i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, rm_map_names[i]);
		st->fd[i] = bpf_obj_get(path);
		if (st->fd[i] < 0) {
			err = map_open_err(-errno, pin_dir, rm_map_names[i]);
			goto fail;
		}
	}
	st->ncpus = libbpf_num_possible_cpus();
	err = st->ncpus > 0 ? 0 : fail(-EIO, "cannot count possible CPUs");
	if (!err)
		err = check_map(st, RM_M_NODES, 4, sizeof(struct rm_node));
	if (!err)
		err =
		    check_map(st, RM_M_SVC_META, 4, sizeof(struct rm_svc_meta));
	if (!err)
		err = check_map(st, RM_M_CONFIG, 4, sizeof(struct rm_config));
	if (!err)
		err = check_map(st, RM_M_SERVICES, sizeof(struct rm_svc_key),
				sizeof(struct rm_svc));
	if (!err)
		err = check_map(st, RM_M_TX_PORTS, 4, 0);
	if (!err)
		err = check_map(st, RM_M_CONNS, sizeof(struct rm_flow),
				sizeof(struct rm_conn));
	if (!err)
		err = check_map(st, RM_M_VIP_SLOTS, 4,
				sizeof(struct rm_vip_slots));
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

/* ---- reading --------------------------------------------------------- */

int rm_state_read(struct rm_state *st, struct rm_snap *s)
{
	__u32 zero = 0;
	int err;

	memset(s, 0, sizeof(*s));
	if (bpf_map_lookup_elem(st->fd[RM_M_CONFIG], &zero, &s->cfg))
		return fail(-errno, "cannot read rm_config: %s",
			    strerror(errno));
	err = array_read(st->fd[RM_M_SVC_META], RM_MAX_SERVICES,
			 sizeof(s->svc[0]), s->svc);
	if (!err)
		err = array_read(st->fd[RM_M_NODES], RM_MAX_NODES,
				 sizeof(s->node[0]), s->node);
	if (err)
		return fail(err, "cannot read the pinned maps: %s",
			    strerror(-err));
	return 0;
}

int rm_state_ring_slots(struct rm_state *st, __u32 svc, struct rm_slot **slots,
			__u32 *nslots)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), id;
	int fd = -1, err, tries;

	*slots = NULL;
	/* the ring may be replaced (and its map freed) between reading its
	 * id and opening it: try again, the new one is there then */
	for (tries = 0; tries < 5 && fd < 0; tries++) {
		if (bpf_map_lookup_elem(st->fd[RM_M_RINGS], &svc, &id))
			return fail(-ENOENT,
				    "service id %u has no ring "
				    "installed",
				    svc);
		fd = bpf_map_get_fd_by_id(id);
	}
	if (fd < 0)
		return fail(-errno, "cannot open the ring of service id %u: %s",
			    svc, strerror(errno));
	err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	if (!err && info.value_size != sizeof(struct rm_slot))
		err = -EPROTO;
	if (!err) {
		*slots = calloc(info.max_entries, sizeof(**slots));
		err = *slots ? array_read(fd, info.max_entries, sizeof(**slots),
					  *slots)
			     : -ENOMEM;
	}
	close(fd);
	if (err) {
		free(*slots);
		*slots = NULL;
		return fail(err, "cannot read the ring of service id %u: %s",
			    svc, strerror(-err));
	}
	*nslots = info.max_entries;
	return 0;
}

static int spec_by_name(const void *a, const void *b)
{
	return strcmp(((const struct rm_node_spec *)a)->name,
		      ((const struct rm_node_spec *)b)->name);
}

/* Is slots exactly what r encodes to? */
static bool encodes_to(const struct rm_ring *r, const struct rm_slot *slots,
		       __u32 nslots)
{
	__u32 m = rm_ring_nslots(r);
	struct rm_slot *want;
	bool same;

	if (m != nslots)
		return false;
	want = calloc(m, sizeof(*want));
	same = want && !rm_ring_encode(r, want, m) &&
	       !memcmp(want, slots, (size_t)m * sizeof(*want));
	free(want);
	return same;
}

/* Entry i of an encoded ring: two per slot after the index (rm_common.h,
 * struct rm_slot). The only place that knows the entry layout. */
static void entry_at(const struct rm_slot *e, __u32 i, __u32 *point,
		     __u32 *id)
{
	const struct rm_slot *s = &e[i >> 1];

	*point = i & 1 ? s->c : s->a;
	*id = i & 1 ? s->d : s->b;
}

/* Read the entries back; node names and weights come from s. */
static int decode_entries(const struct rm_slot *slots, __u32 nslots,
			  const struct rm_snap *s, __u32 svc,
			  struct rm_ring *r)
{
	__u32 n = slots[0].a, bits = slots[0].b, k = 0, point, id;
	const struct rm_slot *e = slots + 1 + (1u << (bits & 31));
	int *idx = NULL, err = -EINVAL;

	if (bits < RM_INDEX_BITS_MIN || bits > RM_INDEX_BITS_MAX ||
	    n > RM_MAX_RING_ENTRIES || RM_RING_SLOTS(bits, n) > nslots)
		return -EINVAL;
	idx = malloc(RM_MAX_NODES * sizeof(*idx));
	r->nodes = calloc(RM_MAX_NODES_PER_RING, sizeof(*r->nodes));
	r->entries = calloc(n ? n : 1, sizeof(*r->entries));
	if (!idx || !r->nodes || !r->entries) {
		err = -ENOMEM;
		goto out;
	}
	memset(idx, 0xff, RM_MAX_NODES * sizeof(*idx));
	for (__u32 i = 0; i < n; i++) {
		struct rm_node_spec *ns = &r->nodes[k];

		entry_at(e, i, &point, &id);
		if (id >= RM_MAX_NODES)
			goto out;
		if (idx[id] >= 0)
			continue;
		if (k == RM_MAX_NODES_PER_RING)
			goto out;
		idx[id] = (int)k++;
		ns->id = id;
		ns->weight = s->node[id].weight;
		if (s->node[id].state != RM_NODE_FREE &&
		    s->node[id].svc_id == svc)
			name_copy(ns->name, s->node[id].name, RM_NAME_MAX);
		else /* a slot the ring should no longer name */
			snprintf(ns->name, RM_NAME_MAX, "#%u", id);
	}
	qsort(r->nodes, k, sizeof(*r->nodes), spec_by_name);
	for (__u32 i = 0; i < k; i++)
		idx[r->nodes[i].id] = (int)i;
	for (__u32 i = 0; i < n; i++) {
		entry_at(e, i, &point, &id);
		r->entries[i].point = point;
		r->entries[i].node = (__u32)idx[id];
	}
	r->seed = s->cfg.seed;
	r->vnodes = s->svc[svc].vnodes;
	r->n_nodes = k;
	r->n = n;
	err = 0;
out:
	free(idx);
	return err;
}

int rm_ring_decode(const struct rm_slot *slots, __u32 nslots,
		   const struct rm_snap *s, __u32 svc, struct rm_ring *r)
{
	int err = -EINVAL;

	/* the usual case: the kernel holds exactly the ring the snapshot
	 * builds, names and weights included */
	if (!rm_snap_ring(s, svc, r)) {
		if (encodes_to(r, slots, nslots))
			return 0;
		rm_ring_free(r);
	}
	memset(r, 0, sizeof(*r));
	if (nslots)
		err = decode_entries(slots, nslots, s, svc, r);
	/* read back right only if it encodes to the very same slots */
	if (!err && !encodes_to(r, slots, nslots))
		err = -EINVAL;
	if (!err)
		return 0;
	rm_ring_free(r);
	if (err == -ENOMEM)
		return fail(err, "out of memory");
	return fail(err,
		    "the ring of service '%s' is corrupt (%u slots): "
		    "`ringctl save | ringctl restore -` rebuilds it",
		    s->svc[svc].name, nslots);
}

/* Per-CPU values of key: nfields u64s each, summed over CPUs. */
static int percpu_sum(struct rm_state *st, enum rm_map_id map, __u32 key,
		      __u32 nfields, __u64 *out)
{
	__u64 *vals = calloc((size_t)st->ncpus * nfields, sizeof(*vals));
	int err = 0;

	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(st->fd[map], &key, vals))
		err = fail(-errno, "cannot read %s: %s", rm_map_names[map],
			   strerror(errno));
	for (__u32 f = 0; f < nfields; f++) {
		out[f] = 0;
		for (int c = 0; !err && c < st->ncpus; c++)
			out[f] += vals[(size_t)c * nfields + f];
	}
	free(vals);
	return err;
}

int rm_state_counters(struct rm_state *st, __u64 out[RM_CNT_MAX])
{
	int err = 0;

	for (__u32 i = 0; i < RM_CNT_MAX && !err; i++)
		err = percpu_sum(st, RM_M_COUNTERS, i, 1, &out[i]);
	return err;
}

int rm_state_traffic(struct rm_state *st, enum rm_map_id map, __u32 idx,
		     struct rm_traffic *out)
{
	__u64 v[2];
	int err = percpu_sum(st, map, idx, 2, v);

	out->packets = v[0];
	out->bytes = v[1];
	return err;
}

/* ---- the connection table -------------------------------------------- */

__u32 rm_udp_timeout(const struct rm_config *cfg)
{
	return cfg->udp_timeout_s ? cfg->udp_timeout_s
				  : RM_DEFAULT_UDP_TIMEOUT_S;
}

bool rm_conn_valid(const struct rm_snap *s, const struct rm_flow *k,
		   const struct rm_conn *c, __u64 now_ns)
{
	const struct rm_node *n;

	if (c->node >= RM_MAX_NODES)
		return false;
	n = &s->node[c->node];
	if (n->gen != c->gen ||
	    (n->state != RM_NODE_ACTIVE && n->state != RM_NODE_DRAINING))
		return false;
	/* signed, as in the data plane: a refresh may be newer than now */
	return k->proto != IPPROTO_UDP ||
	       (__s64)(now_ns - c->last_ns) <=
		   (__s64)((__u64)rm_udp_timeout(&s->cfg) * 1000000000ULL);
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void conn_tally(const struct rm_snap *s, const struct rm_flow *k,
		       const struct rm_conn *c, __u64 now,
		       struct rm_conn_count *out)
{
	out->entries++;
	if (!rm_conn_valid(s, k, c, now)) {
		out->stale++;
		return;
	}
	out->node[c->node]++;
	if ((__s64)(now - c->last_ns) <=
	    (__s64)(RM_CONN_RECENT_S * 1000000000ULL))
		out->recent[c->node]++;
}

#define CONN_CHUNK 4096

/* One batch walk; -EOPNOTSUPP/-EINVAL where batches are not supported. */
static int conn_walk_batch(int fd, const struct rm_snap *s, __u64 now,
			   struct rm_conn_count *out)
{
	struct rm_flow *keys = calloc(CONN_CHUNK, sizeof(*keys));
	struct rm_conn *vals = calloc(CONN_CHUNK, sizeof(*vals));
	struct rm_flow tok_in, tok_out; /* hash maps: a bucket index */
	void *in = NULL;
	int err = -ENOMEM;

	while (keys && vals) {
		__u32 count = CONN_CHUNK;

		err = bpf_map_lookup_batch(fd, in, &tok_out, keys, vals, &count,
					   NULL);
		if (err && err != -ENOENT)
			break;
		for (__u32 i = 0; i < count; i++)
			conn_tally(s, &keys[i], &vals[i], now, out);
		if (err == -ENOENT) {
			err = 0;
			break;
		}
		tok_in = tok_out;
		in = &tok_in;
	}
	free(keys);
	free(vals);
	return err;
}

/* Key by key: kernels or maps without batch lookups. */
static int conn_walk_keys(int fd, const struct rm_snap *s, __u64 now,
			  struct rm_conn_count *out)
{
	struct rm_flow key, next;
	struct rm_conn c;

	for (void *prev = NULL; !bpf_map_get_next_key(fd, prev, &next);
	     prev = &key) {
		key = next;
		/* gone since: the LRU evicted it */
		if (!bpf_map_lookup_elem(fd, &key, &c))
			conn_tally(s, &key, &c, now, out);
	}
	return errno == ENOENT ? 0 : -errno;
}

int rm_state_conn_max(struct rm_state *st, __u32 *max_entries)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(st->fd[RM_M_CONNS], &info, &len))
		return fail(-errno, "cannot inspect %s: %s", RM_MAP_CONNS,
			    strerror(errno));
	*max_entries = info.max_entries;
	return 0;
}

int rm_state_conn_count(struct rm_state *st, const struct rm_snap *s,
			struct rm_conn_count *out)
{
	int fd = st->fd[RM_M_CONNS], err;
	__u64 now = mono_ns();

	memset(out, 0, sizeof(*out));
	err = rm_state_conn_max(st, &out->max_entries);
	if (err)
		return err;
	/* userspace lookups do not touch the LRU order (the _sys_only
	 * lookups of LRU maps): counting evicts nothing sooner */
	err = conn_walk_batch(fd, s, now, out);
	if (err) {
		__u32 max = out->max_entries;

		memset(out, 0, sizeof(*out));
		out->max_entries = max;
		err = conn_walk_keys(fd, s, now, out);
	}
	if (err)
		return fail(err, "cannot read %s: %s", RM_MAP_CONNS,
			    strerror(-err));
	return 0;
}

static int percpu_zero(struct rm_state *st, enum rm_map_id map, __u32 key,
		       size_t vsize)
{
	void *zeros = calloc(st->ncpus, vsize);
	int err;

	if (!zeros)
		return -ENOMEM;
	err = bpf_map_update_elem(st->fd[map], &key, zeros, BPF_ANY);
	free(zeros);
	return err;
}

/* ---- editing a snapshot ---------------------------------------------- */

const char *rm_node_state_name(__u32 state)
{
	switch (state) {
	case RM_NODE_FREE:
		return "free";
	case RM_NODE_ACTIVE:
		return "active";
	case RM_NODE_DRAINING:
		return "draining";
	case RM_NODE_DOWN:
		return "down";
	default:
		return "?";
	}
}

int rm_snap_find_svc(const struct rm_snap *s, const char *name)
{
	for (int i = 0; i < RM_MAX_SERVICES; i++)
		if (s->svc[i].in_use &&
		    !strncmp(s->svc[i].name, name, RM_NAME_MAX))
			return i;
	return -1;
}

int rm_snap_find_node(const struct rm_snap *s, __u32 svc, const char *name)
{
	for (int i = 0; i < RM_MAX_NODES; i++)
		if (s->node[i].state != RM_NODE_FREE &&
		    s->node[i].svc_id == svc &&
		    !strncmp(s->node[i].name, name, RM_NAME_MAX))
			return i;
	return -1;
}

static void key_text(const struct rm_svc_key *k, char *out, size_t len)
{
	char addr[64];

	rm_format_addr(k->vip,
		       k->flags & RM_SVCK_V6 ? RM_FAMILY_V6 : RM_FAMILY_V4,
		       addr, sizeof(addr));
	snprintf(out, len, "%s port %u/%s", addr, ntohs(k->port),
		 rm_proto_name(k->proto));
}

int rm_snap_svc_add(struct rm_snap *s, const struct rm_snap *base,
		    const struct rm_svc_meta *m)
{
	int id = -1, i;
	char kt[96];

	if (!rm_name_valid(m->name))
		return fail(-EINVAL,
			    "service name '%.*s' is invalid: use "
			    "1-%d characters [A-Za-z0-9._-]",
			    RM_NAME_MAX, m->name, RM_NAME_MAX - 1);
	if (m->vnodes < 1 || m->vnodes > RM_MAX_VNODES)
		return fail(-EINVAL, "--vnodes %u out of range 1-%u", m->vnodes,
			    RM_MAX_VNODES);
	if (rm_snap_find_svc(s, m->name) >= 0)
		return fail(-EEXIST,
			    "service '%s' already exists (ringctl "
			    "service list shows it)",
			    m->name);
	for (i = 0; i < RM_MAX_SERVICES; i++)
		if (s->svc[i].in_use &&
		    !memcmp(&s->svc[i].key, &m->key, sizeof(m->key))) {
			key_text(&m->key, kt, sizeof(kt));
			return fail(-EEXIST,
				    "service '%s' already serves %s: "
				    "delete it first",
				    s->svc[i].name, kt);
		}
	/* the same service as before keeps its id, so restoring an
	 * unchanged configuration changes nothing */
	i = rm_snap_find_svc(base, m->name);
	if (i >= 0 && !s->svc[i].in_use &&
	    !memcmp(&base->svc[i].key, &m->key, sizeof(m->key)) &&
	    base->svc[i].flags == m->flags)
		id = i;
	for (i = 0; i < RM_MAX_SERVICES && id < 0; i++)
		if (!s->svc[i].in_use && !base->svc[i].in_use)
			id = i;
	if (id < 0)
		return fail(-ENOSPC,
			    "no free service slot (limit %d): delete "
			    "a service first",
			    RM_MAX_SERVICES);
	memset(&s->svc[id], 0, sizeof(s->svc[id]));
	name_copy(s->svc[id].name, m->name, RM_NAME_MAX);
	s->svc[id].key = m->key;
	s->svc[id].flags = m->flags;
	s->svc[id].vnodes = m->vnodes;
	s->svc[id].in_use = 1;
	return id;
}

void rm_snap_node_del(struct rm_snap *s, __u32 slot)
{
	__u32 gen = s->node[slot].gen;

	/* gen survives, so the next owner of the slot gets a new one */
	memset(&s->node[slot], 0, sizeof(s->node[slot]));
	s->node[slot].gen = gen;
}

void rm_snap_svc_del(struct rm_snap *s, __u32 svc)
{
	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		if (s->node[i].state != RM_NODE_FREE &&
		    s->node[i].svc_id == svc)
			rm_snap_node_del(s, i);
	memset(&s->svc[svc], 0, sizeof(s->svc[svc]));
}

int rm_dev_info(const char *dev, __u32 *ifindex, __u8 mac[6])
{
	struct ifreq ifr;
	int fd, err = 0;

	if (!dev || !*dev || strlen(dev) >= IFNAMSIZ)
		return fail(-EINVAL, "interface name '%s' is invalid",
			    dev ? dev : "");
	*ifindex = if_nametoindex(dev);
	if (!*ifindex)
		return fail(-ENODEV,
			    "interface '%s' not found (`ip link` "
			    "lists them)",
			    dev);
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, dev, IFNAMSIZ - 1);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = fail(-errno, "cannot read the MAC of '%s': %s", dev,
			   strerror(errno));
	else if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER &&
		 ifr.ifr_hwaddr.sa_family != ARPHRD_LOOPBACK)
		err = fail(-EINVAL,
			   "interface '%s' is not Ethernet: nodes "
			   "are reached by MAC",
			   dev);
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (fd >= 0)
		close(fd);
	return err;
}

int rm_snap_node_add(struct rm_snap *s, const struct rm_snap *base, __u32 svc,
		     const char *name, const __u8 mac[6], const char *dev,
		     __u32 weight)
{
	static const __u8 zero[6];
	const struct rm_node *b;
	struct rm_node *n;
	__u8 src[6];
	__u32 ifindex;
	int slot, i, err;

	if (svc >= RM_MAX_SERVICES || !s->svc[svc].in_use)
		return fail(-ENOENT, "no such service id %u", svc);
	if (!rm_name_valid(name))
		return fail(-EINVAL,
			    "node name '%s' is invalid: use 1-%d "
			    "characters [A-Za-z0-9._-]",
			    name, RM_NAME_MAX - 1);
	if (weight < 1 || weight > RM_MAX_WEIGHT)
		return fail(-ERANGE, "weight %u out of range 1-%u", weight,
			    RM_MAX_WEIGHT);
	if (!memcmp(mac, zero, 6) || (mac[0] & 1))
		return fail(-EINVAL,
			    "MAC of node '%s' must be a unicast "
			    "address",
			    name);
	if (rm_snap_find_node(s, svc, name) >= 0)
		return fail(-EEXIST,
			    "node '%s' already exists in service "
			    "'%s'",
			    name, s->svc[svc].name);
	err = rm_dev_info(dev, &ifindex, src);
	if (err)
		return err;
	/* the same node as before keeps its slot (restore) */
	slot = rm_snap_find_node(base, svc, name);
	if (slot >= 0 && s->node[slot].state != RM_NODE_FREE)
		slot = -1;
	/* otherwise a slot free before and after, never one this change
	 * frees: the data plane may still be looking at that one */
	for (i = 0; i < RM_MAX_NODES && slot < 0; i++)
		if (s->node[i].state == RM_NODE_FREE &&
		    base->node[i].state == RM_NODE_FREE)
			slot = i;
	if (slot < 0)
		return fail(-ENOSPC,
			    "no free node slot (limit %d): delete a "
			    "node first",
			    RM_MAX_NODES);
	n = &s->node[slot];
	b = &base->node[slot];
	/* entries remembering (slot, gen) keep reaching the slot only if it
	 * is still the very same node: same name, MAC and interface */
	if (b->state != RM_NODE_FREE && !memcmp(b->mac, mac, 6) &&
	    b->ifindex == ifindex)
		n->gen = b->gen;
	else
		n->gen = (n->gen > b->gen ? n->gen : b->gen) + 1;
	memcpy(n->mac, mac, 6);
	memcpy(n->src_mac, src, 6);
	n->ifindex = ifindex;
	n->state = RM_NODE_ACTIVE;
	n->svc_id = svc;
	n->weight = weight;
	name_copy(n->name, name, sizeof(n->name));
	name_copy(n->dev, dev, sizeof(n->dev));
	return slot;
}

void rm_snap_node_state(struct rm_snap *s, __u32 slot, __u32 state)
{
	/* anything remembering (slot, gen) must see the node went away */
	if (state == RM_NODE_DOWN && s->node[slot].state != RM_NODE_DOWN)
		s->node[slot].gen++;
	s->node[slot].state = state;
}

static const char *ring_err(int err)
{
	switch (err) {
	case -E2BIG:
		return "ring too large (nodes x weight x vnodes over the "
		       "limit): lower the weights or the service's --vnodes";
	case -EEXIST:
		return "duplicate node name";
	case -ERANGE:
		return "weight out of range";
	case -EINVAL:
		return "bad node name or vnode count";
	default:
		return strerror(-err);
	}
}

int rm_snap_ring(const struct rm_snap *s, __u32 svc, struct rm_ring *r)
{
	struct rm_node_spec *specs;
	__u32 n = 0;
	int err;

	specs = calloc(RM_MAX_NODES, sizeof(*specs));
	if (!specs)
		return fail(-ENOMEM, "out of memory");
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *nd = &s->node[i];

		if (nd->state != RM_NODE_ACTIVE || nd->svc_id != svc)
			continue;
		name_copy(specs[n].name, nd->name, RM_NAME_MAX);
		specs[n].weight = nd->weight;
		specs[n].id = i;
		n++;
	}
	err = rm_ring_build(&s->cfg.seed, specs, n, s->svc[svc].vnodes, r);
	free(specs);
	if (err)
		return fail(err, "service '%s': %s", s->svc[svc].name,
			    ring_err(err));
	return 0;
}

/* ---- changing the live state ----------------------------------------- */

static bool key_ok(const struct rm_svc_key *k)
{
	if (k->flags & ~RM_SVCK_V6)
		return false;
	if (k->proto != 6 && k->proto != 17)
		return false;
	return (k->flags & RM_SVCK_V6) ||
	       (!k->vip[1] && !k->vip[2] && !k->vip[3]);
}

/* The whole new snapshot must be sound before anything is written. */
static int validate(const struct rm_snap *old, const struct rm_snap *new,
		    unsigned int flags)
{
	char ifname[IF_NAMESIZE];

	if (!(new->cfg.flags &RM_CFG_SEEDED))
		return fail(-EINVAL, "the state is not seeded: set one with "
				     "`ringctl seed --set HEX`");
	for (int i = 0; i < RM_MAX_SERVICES; i++) {
		const struct rm_svc_meta *m = &new->svc[i];

		if (!m->in_use)
			continue;
		if (!rm_name_valid(m->name) || !key_ok(&m->key) ||
		    m->vnodes < 1 || m->vnodes > RM_MAX_VNODES ||
		    (m->flags & ~RM_SVC_F_3TUPLE))
			return fail(-EINVAL, "service slot %d is invalid", i);
		for (int j = 0; j < i; j++)
			if (new->svc[j].in_use &&
			    (!strncmp(new->svc[j].name, m->name, RM_NAME_MAX) ||
			     !memcmp(&new->svc[j].key, &m->key,
				     sizeof(m->key))))
				return fail(-EEXIST,
					    "services '%s' and '%s' "
					    "collide",
					    new->svc[j].name, m->name);
	}
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &new->node[i];

		if (n->state == RM_NODE_FREE)
			continue;
		if (n->state > RM_NODE_DOWN || n->svc_id >= RM_MAX_SERVICES ||
		    !new->svc[n->svc_id].in_use || !rm_name_valid(n->name) ||
		    n->weight < 1 || n->weight > RM_MAX_WEIGHT)
			return fail(-EINVAL, "node slot %u is invalid", i);
		/* unchanged nodes may sit on a vanished interface: only
		 * what this change writes must be reachable */
		if (!(flags & RM_APPLY_ALL) &&
		    !memcmp(n, &old->node[i], sizeof(*n)))
			continue;
		if (!if_indextoname(n->ifindex, ifname))
			return fail(-ENODEV,
				    "node '%s': interface %s "
				    "(ifindex %u) is gone",
				    n->name, n->dev, n->ifindex);
	}
	return 0;
}

/* Services whose ring input (seed, vnodes, active nodes) differs. */
static void mark_changed(const struct rm_snap *old, const struct rm_snap *new,
			 unsigned int flags, bool *dirty)
{
	bool all =
	    (flags & RM_APPLY_ALL) ||
	    memcmp(&old->cfg.seed, &new->cfg.seed, sizeof(new->cfg.seed));

	for (int i = 0; i < RM_MAX_SERVICES; i++)
		dirty[i] = all || !old->svc[i].in_use ||
			   old->svc[i].vnodes != new->svc[i].vnodes;
	for (int i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *o = &old->node[i], *n = &new->node[i];
		bool oa = o->state == RM_NODE_ACTIVE;
		bool na = n->state == RM_NODE_ACTIVE;

		if (oa == na &&
		    (!oa || (o->svc_id == n->svc_id && o->weight == n->weight &&
			     !strncmp(o->name, n->name, RM_NAME_MAX))))
			continue;
		if (oa && o->svc_id < RM_MAX_SERVICES)
			dirty[o->svc_id] = true;
		if (na && n->svc_id < RM_MAX_SERVICES)
			dirty[n->svc_id] = true;
	}
	for (int i = 0; i < RM_MAX_SERVICES; i++)
		dirty[i] = dirty[i] && new->svc[i].in_use;
}

/* A new inner array holding r, filled before anyone can see it. */
static int ring_map_create(const struct rm_ring *r, __u32 svc)
{
	__u32 n = rm_ring_nslots(r);
	struct rm_slot *slots = calloc(n, sizeof(*slots));
	char name[16];
	int fd;

	if (!slots)
		return fail(-ENOMEM, "out of memory");
	rm_ring_encode(r, slots, n);
	snprintf(name, sizeof(name), "rm_ring_%u", svc);
	fd = rm_ring_map_create(slots, n, name);
	free(slots);
	if (fd < 0)
		return fail(fd, "cannot create a ring map of %u slots: %s", n,
			    strerror(-fd));
	return fd;
}

void rm_plan_free(struct rm_plan *p)
{
	for (int i = 0; i < RM_MAX_SERVICES; i++) {
		if (p->fd[i] >= 0)
			close(p->fd[i]);
		p->fd[i] = -1;
		rm_ring_free(&p->ring[i]);
		p->changed[i] = false;
	}
}

int rm_plan_build(struct rm_state *st, const struct rm_snap *old,
		  const struct rm_snap *new, unsigned int flags,
		  struct rm_plan *p)
{
	int err;

	(void)st;
	memset(p, 0, sizeof(*p));
	p->flags = flags;
	for (int i = 0; i < RM_MAX_SERVICES; i++)
		p->fd[i] = -1;
	err = validate(old, new, flags);
	if (err)
		return err;
	mark_changed(old, new, flags, p->changed);
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		if (!p->changed[i])
			continue;
		err = rm_snap_ring(new, i, &p->ring[i]);
		if (!err && !(flags & RM_APPLY_DRY_RUN)) {
			p->fd[i] = ring_map_create(&p->ring[i], i);
			err = p->fd[i] < 0 ? p->fd[i] : 0;
		}
		if (err) {
			rm_plan_free(p);
			return err;
		}
	}
	return 0;
}

static int tx_port_add(struct rm_state *st, __u32 ifindex)
{
	struct bpf_devmap_val v = {.ifindex = ifindex, .bpf_prog.fd = -1};
	struct bpf_devmap_val cur;

	if (st->tx_vsize > sizeof(cur))
		return fail(-EPROTO, "rm_tx_ports has an unknown value size");
	if (!bpf_map_lookup_elem(st->fd[RM_M_TX_PORTS], &ifindex, &cur) &&
	    cur.ifindex == ifindex)
		return 0;
	if (bpf_map_update_elem(st->fd[RM_M_TX_PORTS], &ifindex, &v, BPF_ANY))
		return fail(-errno, "cannot add ifindex %u to rm_tx_ports: %s",
			    ifindex, strerror(errno));
	return 0;
}

static bool ifindex_used(const struct rm_snap *s, __u32 ifindex)
{
	for (int i = 0; i < RM_MAX_NODES; i++)
		if (s->node[i].state != RM_NODE_FREE &&
		    s->node[i].ifindex == ifindex)
			return true;
	return false;
}

/* Add v to the n distinct values of set (few: one per egress device). */
static void add_distinct(__u32 *set, __u32 *n, __u32 v)
{
	for (__u32 i = 0; i < *n; i++)
		if (set[i] == v)
			return;
	if (*n < RM_MAX_NODES)
		set[(*n)++] = v;
}

/* Ports no node of new uses: those old used, or with ALL every port. */
static int tx_ports_prune(struct rm_state *st, const struct rm_snap *old,
			  const struct rm_snap *new, bool all)
{
	int fd = st->fd[RM_M_TX_PORTS];
	__u32 key, next, *gone = calloc(RM_MAX_NODES, sizeof(*gone)), n = 0;
	int err = 0;

	if (!gone)
		return fail(-ENOMEM, "out of memory");
	for (int i = 0; i < RM_MAX_NODES; i++)
		if (old->node[i].state != RM_NODE_FREE)
			add_distinct(gone, &n, old->node[i].ifindex);
	for (void *prev = NULL; all && !bpf_map_get_next_key(fd, prev, &next);
	     prev = &key) {
		add_distinct(gone, &n, next);
		key = next;
	}
	for (__u32 i = 0; i < n && !err; i++)
		if (!ifindex_used(new, gone[i]) &&
		    bpf_map_delete_elem(fd, &gone[i]) && errno != ENOENT)
			err = fail(-errno,
				   "cannot remove ifindex %u from "
				   "rm_tx_ports: %s",
				   gone[i], strerror(errno));
	free(gone);
	return err;
}

struct svc_kv {
	struct rm_svc_key k;
	struct rm_svc v;
};

/* rm_services as new describes it. A fragment entry is shared by every
 * 3-tuple service of a (VIP, proto): it keeps pointing where it points
 * while that service stays, else to the lowest id. */
static int services_want(struct rm_state *st, const struct rm_snap *new,
			 struct svc_kv *want)
{
	int n = 0;

	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		const struct rm_svc_meta *m = &new->svc[i];
		struct rm_svc cur;
		struct rm_svc_key fk;
		bool have = false;

		if (!m->in_use)
			continue;
		want[n].k = m->key;
		want[n].v.id = i;
		want[n++].v.flags = m->flags;
		if (!(m->flags & RM_SVC_F_3TUPLE))
			continue;
		fk = m->key;
		fk.port = 0;
		fk.flags |= RM_SVCK_FRAG;
		for (int j = 0; j < n && !have; j++)
			have = !memcmp(&want[j].k, &fk, sizeof(fk));
		if (have)
			continue;
		want[n].k = fk;
		want[n].v.id = i;
		want[n].v.flags = RM_SVC_F_3TUPLE;
		if (!bpf_map_lookup_elem(st->fd[RM_M_SERVICES], &fk, &cur) &&
		    cur.id < RM_MAX_SERVICES && new->svc[cur.id].in_use &&
		    (new->svc[cur.id].flags &RM_SVC_F_3TUPLE) &&
		    new->svc[cur.id].key.proto == fk.proto &&
		    !memcmp(new->svc[cur.id].key.vip, fk.vip, sizeof(fk.vip)) &&
		    (new->svc[cur.id].key.flags &RM_SVCK_V6) ==
			(fk.flags & RM_SVCK_V6))
			want[n].v.id = cur.id;
		n++;
	}
	return n;
}

static int services_sync(struct rm_state *st, const struct rm_snap *new)
{
	int fd = st->fd[RM_M_SERVICES], n, m = 0, err = 0;
	struct svc_kv *want = calloc(2 * RM_MAX_SERVICES, sizeof(*want));
	struct rm_svc_key *have = calloc(4 * RM_MAX_SERVICES, sizeof(*have));
	struct rm_vip_slots *slots = malloc(sizeof(*slots));
	struct rm_svc_key key;
	struct rm_svc cur;

	if (!want || !have || !slots) {
		err = fail(-ENOMEM, "out of memory");
		goto out;
	}
	n = services_want(st, new, want);
	for (void *prev = NULL; m < 4 * RM_MAX_SERVICES &&
				!bpf_map_get_next_key(fd, prev, &have[m]);
	     prev = &key)
		key = have[m++];
	/* stale keys go first, so a key moving between services never
	 * finds its old owner half removed */
	for (int i = 0; i < m && !err; i++) {
		bool keep = false;

		for (int j = 0; j < n && !keep; j++)
			keep = !memcmp(&want[j].k, &have[i], sizeof(key));
		if (!keep && bpf_map_delete_elem(fd, &have[i]) &&
		    errno != ENOENT)
			err = fail(-errno, "cannot remove a service key: %s",
				   strerror(errno));
	}
	/* every key of rm_services keeps a slot (vip_filter.h): the slots
	 * of new keys go in before the keys do ... */
	if (!err) {
		memset(slots, 0, sizeof(*slots));
		for (int j = 0; j < n; j++)
			rm_vip_slots_set(slots, &want[j].k, want[j].v.id);
		err = rm_vip_slots_merge(st->fd[RM_M_VIP_SLOTS], slots);
		if (err)
			err = fail(err, "cannot write %s: %s",
				   RM_MAP_VIP_SLOTS, strerror(-err));
	}
	for (int j = 0; j < n && !err; j++) {
		if (!bpf_map_lookup_elem(fd, &want[j].k, &cur) &&
		    !memcmp(&cur, &want[j].v, sizeof(cur)))
			continue;
		if (bpf_map_update_elem(fd, &want[j].k, &want[j].v, BPF_ANY))
			err =
			    fail(-errno,
				 "cannot insert service '%s' into "
				 "rm_services: %s",
				 new->svc[want[j].v.id].name, strerror(errno));
	}
	/* ... and the slots of removed keys come out once they are gone,
	 * recomputed from what the map holds, which now agrees with every
	 * meta in use (rm_plan_apply() wrote them in step 1): only now may a
	 * slot name an id again. On a failure above the table keeps its
	 * extra and MANY slots, which the rollback's own sync trims. */
	if (!err) {
		err = rm_vip_slots_sync(st->fd[RM_M_VIP_SLOTS], fd);
		if (err)
			err = fail(err, "cannot write %s: %s",
				   RM_MAP_VIP_SLOTS, strerror(-err));
	}
out:
	free(want);
	free(have);
	free(slots);
	return err;
}

/* Wait until every XDP run that could have read the old rings is over:
 * programs run inside RCU read-side sections and MEMBARRIER_CMD_GLOBAL
 * is synchronize_rcu(). Where it is refused (nohz_full), sleep instead.
 * An update or delete of a map-in-map slot from userspace already waits
 * for running programs before it returns (maybe_wait_bpf_programs(), since
 * Linux 4.20), so this is only needed when no ring was written. */
static void rcu_grace(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		usleep(100 * 1000);
}

static int write_elem(struct rm_state *st, enum rm_map_id map, __u32 key,
		      const void *val)
{
	if (bpf_map_update_elem(st->fd[map], &key, val, BPF_ANY))
		return fail(-errno, "cannot write %s[%u]: %s",
			    rm_map_names[map], key, strerror(errno));
	return 0;
}

static bool same_node(const struct rm_node *a, const struct rm_node *b)
{
	return a->state != RM_NODE_FREE && b->state != RM_NODE_FREE &&
	       a->svc_id == b->svc_id &&
	       !strncmp(a->name, b->name, RM_NAME_MAX);
}

int rm_plan_apply(struct rm_state *st, const struct rm_snap *old,
		  const struct rm_snap *new, struct rm_plan *p)
{
	bool all = p->flags & RM_APPLY_ALL, grace = false, waited = false;
	__u32 zero = 0;
	int err = 0;

	if (p->flags & RM_APPLY_DRY_RUN)
		return 0;
	/* 1: egress ports and records a ring may point at after step 4 */
	for (__u32 i = 0; i < RM_MAX_NODES && !err; i++) {
		const struct rm_node *n = &new->node[i];

		if (n->state == RM_NODE_FREE ||
		    (!all && !memcmp(n, &old->node[i], sizeof(*n))))
			continue;
		err = tx_port_add(st, n->ifindex);
		if (err || n->state != RM_NODE_ACTIVE)
			continue;
		/* a new owner of the slot starts with clean traffic */
		if (!same_node(n, &old->node[i]) &&
		    percpu_zero(st, RM_M_NODE_STATS, i,
				sizeof(struct rm_traffic)))
			err = fail(-errno, "cannot reset rm_node_stats[%u]", i);
		/* a slot no ring names taking a new gen (a new owner): the
		 * old record made unusable (its state alone changes), the
		 * new one written parked (state FREE), then made ACTIVE. An
		 * update copies the record in place, so a packet reading it
		 * meanwhile could pair a usable state with the old gen and
		 * the new MAC, and send a flow the table remembers for the
		 * old node to the new one; this way every write changes the
		 * state alone or happens while every mix is FREE */
		if (!err && n->gen != old->node[i].gen &&
		    old->node[i].state != RM_NODE_ACTIVE) {
			struct rm_node parked = old->node[i];

			parked.state = RM_NODE_FREE;
			if (old->node[i].state != RM_NODE_FREE)
				err = write_elem(st, RM_M_NODES, i, &parked);
			parked = *n;
			parked.state = RM_NODE_FREE;
			if (!err)
				err = write_elem(st, RM_M_NODES, i, &parked);
		}
		if (!err)
			err = write_elem(st, RM_M_NODES, i, n);
	}
	/* slots naming a service whose meta changes turn MANY first, so
	 * the data plane never takes a meta rm_services does not agree
	 * with: it looks such keys up until services_sync() names the ids
	 * again (rm_vip_filter.h) */
	if (!err) {
		__u8 ids[RM_MAX_SERVICES];

		for (__u32 i = 0; i < RM_MAX_SERVICES; i++)
			ids[i] = all || memcmp(&new->svc[i], &old->svc[i],
					       sizeof(new->svc[i]));
		err = rm_vip_slots_forget(st->fd[RM_M_VIP_SLOTS], ids);
		if (err)
			err = fail(err, "cannot write %s: %s",
				   RM_MAP_VIP_SLOTS, strerror(-err));
	}
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++) {
		if (!new->svc[i].in_use ||
		    (!all &&
		     !memcmp(&new->svc[i], &old->svc[i], sizeof(new->svc[i]))))
			continue;
		if (!old->svc[i].in_use &&
		    percpu_zero(st, RM_M_SVC_STATS, i,
				sizeof(struct rm_traffic)))
			err = fail(-errno, "cannot reset rm_svc_stats[%u]", i);
		if (!err)
			err = write_elem(st, RM_M_SVC_META, i, &new->svc[i]);
	}
	/* 2: seed, after the rings for it are built and just before they
	 * are swapped in, to keep the mixed window short */
	if (!err && (all || memcmp(&old->cfg, &new->cfg, sizeof(new->cfg))))
		err = write_elem(st, RM_M_CONFIG, zero, &new->cfg);
	/* 3: each ring in one update: packets see the old or the new */
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++)
		if (p->changed[i]) {
			err = write_elem(st, RM_M_RINGS, i, &p->fd[i]);
			waited = !err;
		}
	/* 4: service keys, once their rings are in */
	if (!err)
		err = services_sync(st, new);
	/* 5: rings of deleted services, once no key leads to them */
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++)
		if (!new->svc[i].in_use && (all || old->svc[i].in_use)) {
			if (!bpf_map_delete_elem(st->fd[RM_M_RINGS], &i))
				waited = true;
			else if (errno != ENOENT)
				err = fail(-errno, "cannot remove ring %u: %s",
					   i, strerror(errno));
		}
	/* 6: records leaving the rings, once no packet can be on its way */
	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		if (old->node[i].state == RM_NODE_ACTIVE &&
		    new->node[i].state != RM_NODE_ACTIVE)
			grace = true;
	if (!err && grace && !waited)
		rcu_grace();
	for (__u32 i = 0; i < RM_MAX_NODES && !err; i++)
		if (new->node[i].state != RM_NODE_ACTIVE &&
		    (all || memcmp(&new->node[i], &old->node[i],
				   sizeof(new->node[i]))))
			err = write_elem(st, RM_M_NODES, i, &new->node[i]);
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++)
		if (!new->svc[i].in_use &&
		    (all ||
		     memcmp(&new->svc[i], &old->svc[i], sizeof(new->svc[i]))))
			err = write_elem(st, RM_M_SVC_META, i, &new->svc[i]);
	/* 7: egress ports nobody uses any more */
	if (!err)
		err = tx_ports_prune(st, old, new, all);
	return err;
}

int rm_state_commit(struct rm_state *st, const struct rm_snap *old,
		    const struct rm_snap *new, unsigned int flags)
{
	struct rm_plan *p = calloc(1, sizeof(*p));
	struct rm_snap *cur = NULL;
	char why[sizeof(errbuf)];
	int err, rerr;

	if (!p)
		return fail(-ENOMEM, "out of memory");
	err = rm_plan_build(st, old, new, flags & RM_APPLY_ALL, p);
	if (err)
		goto out;
	err = rm_plan_apply(st, old, new, p);
	rm_plan_free(p);
	if (!err)
		goto out;
	/* half applied: put every map back as old describes it */
	snprintf(why, sizeof(why), "%s", errbuf);
	cur = malloc(sizeof(*cur));
	rerr = cur ? rm_state_read(st, cur) : -ENOMEM;
	if (!rerr)
		rerr = rm_plan_build(st, cur, old, RM_APPLY_ALL, p);
	if (!rerr)
		rerr = rm_plan_apply(st, cur, old, p);
	if (rerr) {
		char rwhy[sizeof(errbuf)]; /* fail() writes errbuf */

		snprintf(rwhy, sizeof(rwhy), "%s", errbuf);
		fail(err,
		     "%s; rolling back failed too (%s): restore a saved "
		     "configuration",
		     why, rwhy);
	}
	else
		fail(err, "%s (rolled back, nothing changed)", why);
out:
	rm_plan_free(p);
	free(p);
	free(cur);
	return err;
}
