// SPDX-License-Identifier: GPL-2.0
/*
 * ringload decap attach|detach|status: the node-side decapsulator
 * (bpf/decap.bpf.c). Its maps are pinned under their own directory
 * (RM_DECAP_PIN_DIR unless --pin-dir says otherwise), shared by every
 * interface it is attached to. attach (re)fills them: the GUE port, the
 * allowed director prefixes, and the host's addresses as they are now
 * (attach again after adding an address).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <ringmaster/rm_encap.h>
#include "decap.skel.h"
#include "decap_stats.h"
#include "json.h"
#include "ringload.h"

static const char *decap_dir(const struct load_opts *o)
{
	return o->pin_dir;
}

#define MAX_ALLOW 64
/* --allow-src A[,B...] into words (in buf): their count, or -1. */
static int allow_split(const char *list, char *buf, size_t len,
		       char *words[MAX_ALLOW])
{
	char *save = NULL, *w;
	int n = 0;

	if (strlen(list) >= len)
		return -1;
	strcpy(buf, list);
	for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (n == MAX_ALLOW)
			return -1;
		words[n++] = w;
	}
	return n;
}

/* "198.18.2.0/24", "2001:db8::/32" or a bare address (a host prefix). */
static int parse_prefix(const char *s, struct rm_decap_prefix *k)
{
	char buf[64], *slash;
	__u32 len, max;
	__u8 fam;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	memset(k, 0, sizeof(*k));
	if (rm_parse_addr(buf, k->addr, &fam))
		return -EINVAL;
	max = fam == RM_FAMILY_V6 ? 128 : 32;
	len = max;
	if (slash && rm_parse_u32(slash + 1, 0, max, &len))
		return -EINVAL;
	k->family = fam;
	k->prefixlen = 32 + len;
	return 0;
}

/* Empty a hash or trie map. */
static int map_clear(int fd, size_t ksize)
{
	char key[64];

	if (ksize > sizeof(key))
		return -EINVAL;
	while (!bpf_map_get_next_key(fd, NULL, key))
		if (bpf_map_delete_elem(fd, key) && errno != ENOENT)
			return -errno;
	return 0;
}

/* The host's addresses, every interface, as the outer destinations the
 * program takes packets for. Returns how many, or -errno. */
static int fill_local(int fd)
{
	struct ifaddrs *ifa, *i;
	__u8 one = 1;
	int n = 0, err = 0;

	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i && !err; i = i->ifa_next) {
		struct rm_decap_addr k = {};

		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			k.family = RM_FAMILY_V4;
			memcpy(k.addr,
			       &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
			       4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			k.family = RM_FAMILY_V6;
			memcpy(k.addr,
			       &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
			       16);
		} else {
			continue;
		}
		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
			err = -errno;
		else
			n++;
	}
	freeifaddrs(ifa);
	return err ? err : n;
}

/* Is the map pinned at path of another layout than map (an older
 * ringload's: the counters grow with RM_DECAP_COUNTERS)? */
static bool pin_stale(const char *path, const struct bpf_map *map)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(path);
	bool stale;

	if (fd < 0)
		return false;
	stale = bpf_obj_get_info_by_fd(fd, &info, &len) ||
		info.type != bpf_map__type(map) ||
		info.key_size != bpf_map__key_size(map) ||
		info.value_size != bpf_map__value_size(map) ||
		info.max_entries != bpf_map__max_entries(map) ||
		info.map_flags != bpf_map__map_flags(map);
	close(fd);
	return stale;
}

/* Pin every map under dir. A pinned map of an older layout is replaced:
 * attach refills all the decapsulator's state but its counters, which
 * then start again from zero (said on stdout). */
static int pin_maps(struct decap_bpf *skel, const char *dir)
{
	char path[RM_PATH_MAX + RM_NAME_MAX];
	struct bpf_map *map;
	int err;

	bpf_object__for_each_map(map, skel->obj)
	{
		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
		if (pin_stale(path, map)) {
			if (unlink(path))
				return -errno;
			printf("replaced %s, pinned by an older ringload (its "
			       "layout changed); attach the decapsulator again "
			       "on its other interfaces\n",
			       path);
		}
		err = bpf_map__set_pin_path(map, path);
		if (err)
			return err;
	}
	return 0;
}

/* Is our decapsulator what is attached to ifindex? Its mode flags, or
 * -ENOENT. */
static int decap_attached(int ifindex, __u32 *flags)
{
	static const __u32 modes[] = {XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE};
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), id;
	int fd, ok;

	for (size_t m = 0; m < 2; m++) {
		LIBBPF_OPTS(bpf_xdp_query_opts, q);

		if (bpf_xdp_query(ifindex, modes[m], &q))
			continue;
		id = modes[m] == XDP_FLAGS_DRV_MODE ? q.drv_prog_id
						    : q.skb_prog_id;
		if (!id)
			continue;
		fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue;
		ok = !bpf_obj_get_info_by_fd(fd, &info, &len) &&
		     !strcmp(info.name, RM_DECAP_PROG_NAME);
		close(fd);
		if (ok) {
			*flags = modes[m];
			return 0;
		}
	}
	return -ENOENT;
}

/* A prefix list of --OPT (A[,B...]) checked into words (in buf): their
 * count, or a usage error's negative exit code. */
static int prefixes_parse(const char *opt, const char *list, char *buf,
			  size_t len, char *words[MAX_ALLOW])
{
	struct rm_decap_prefix k;
	int n = allow_split(list, buf, len, words);

	if (n <= 0)
		return -load_error(RM_EXIT_USAGE,
				   "decap attach: --%s: expected 1-%d "
				   "addresses or prefixes separated by commas",
				   opt, MAX_ALLOW);
	for (int i = 0; i < n; i++)
		if (parse_prefix(words[i], &k))
			return -load_error(RM_EXIT_USAGE,
					   "--%s '%s': expected ADDR[/LEN]",
					   opt, words[i]);
	return n;
}

/* Empty the trie map, then put the n prefixes (checked) in. */
static int prefixes_fill(struct bpf_map *map, char **words, int n)
{
	int err = map_clear(bpf_map__fd(map), sizeof(struct rm_decap_prefix));
	__u8 one = 1;

	for (int i = 0; !err && i < n; i++) {
		struct rm_decap_prefix k = {0};

		/* checked before (prefixes_check): cannot fail here, but a
		 * prefix that did would not go in */
		err = !words[i] || parse_prefix(words[i], &k) ? -EINVAL : 0;
		if (!err)
			err = bpf_map__update_elem(map, &k, sizeof(k), &one, 1,
						   BPF_ANY);
	}
	return err;
}

/* 1 when both families forward on iface (bpf_fib_lookup answers only
 * there), or it cannot be told. */
static int forwarding_on(const char *iface)
{
	static const char *const fmt[] = {"/proc/sys/net/ipv4/conf/%s/forwarding",
					  "/proc/sys/net/ipv6/conf/%s/forwarding"};
	char path[128];
	int on = 1, v;

	for (size_t i = 0; i < 2; i++) {
		FILE *f;

		snprintf(path, sizeof(path), fmt[i], iface);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%d", &v) == 1 && !v)
			on = 0;
		fclose(f);
	}
	return on;
}

int cmd_decap_attach(struct load_opts *o)
{
	const char *dir = decap_dir(o);
	struct rm_decap_config cfg = {.gue_port = htons((__u16)o->gue_port.val)};
	struct decap_bpf *skel = NULL;
	int ifindex, err, n_local, n_allow, n_hop;
	static char buf[4096], hbuf[4096];
	char *allow[MAX_ALLOW] = {0}, *hop[MAX_ALLOW] = {0};
	__u32 zero = 0, flags;

	ifindex = if_nametoindex(o->iface);
	if (!ifindex)
		return load_error(RM_EXIT_RUNTIME,
				  "interface '%s' not found (`ip link` "
				  "lists them)",
				  o->iface);
	n_allow = prefixes_parse("allow-src", o->allow_src, buf, sizeof(buf),
				 allow);
	if (n_allow < 0)
		return -n_allow;
	n_hop = prefixes_parse(o->allow_hop ? "allow-hop" : "allow-src",
			       o->allow_hop ? o->allow_hop : o->allow_src,
			       hbuf, sizeof(hbuf), hop);
	if (n_hop < 0)
		return -n_hop;
	err = rm_bpffs_prepare(dir);
	if (err)
		return load_error(RM_EXIT_RUNTIME, "%s", rm_errmsg());
	skel = decap_bpf__open();
	if (!skel)
		return load_error(RM_EXIT_RUNTIME, "cannot open the program: %s",
				  strerror(errno));
	err = pin_maps(skel, dir);
	if (!err)
		err = decap_bpf__load(skel);
	if (err) {
		decap_bpf__destroy(skel);
		return load_error(RM_EXIT_RUNTIME,
				  "cannot load the decapsulator: %s (-v shows "
				  "libbpf's log)",
				  strerror(-err));
	}
	/* the settings first, then the program: it never runs on old ones */
	err = bpf_map__update_elem(skel->maps.rm_decap_config, &zero,
				   sizeof(zero), &cfg, sizeof(cfg), BPF_ANY);
	if (!err)
		err = prefixes_fill(skel->maps.rm_decap_allow, allow, n_allow);
	if (!err)
		err = prefixes_fill(skel->maps.rm_decap_hops, hop, n_hop);
	if (!err)
		err = map_clear(bpf_map__fd(skel->maps.rm_decap_local),
				sizeof(struct rm_decap_addr));
	n_local = err ? err : fill_local(bpf_map__fd(skel->maps.rm_decap_local));
	if (n_local < 0) {
		decap_bpf__destroy(skel);
		return load_error(RM_EXIT_RUNTIME, "cannot fill the maps: %s",
				  strerror(-n_local));
	}
	flags = o->mode.val == LOAD_GENERIC ? XDP_FLAGS_SKB_MODE
					: XDP_FLAGS_DRV_MODE;
	err = bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.rm_decap),
			     flags, NULL);
	if (err && o->mode.val == LOAD_AUTO) {
		flags = XDP_FLAGS_SKB_MODE;
		err = bpf_xdp_attach(ifindex,
				     bpf_program__fd(skel->progs.rm_decap),
				     flags, NULL);
	}
	decap_bpf__destroy(skel);
	if (err)
		return load_error(RM_EXIT_RUNTIME,
				  "cannot attach to %s: %s (another XDP "
				  "program there? detach it first)",
				  o->iface, strerror(-err));
	if (!forwarding_on(o->iface))
		printf("note: forwarding is off on %s: second-chance forwards "
		       "are delivered here instead (sc-local-fwd-disabled); "
		       "sysctl -w net.ipv4.conf.%s.forwarding=1 "
		       "net.ipv6.conf.%s.forwarding=1\n",
		       o->iface, o->iface, o->iface);
	printf("decapsulating on %s (%s mode) for %d local addresses from %d "
	       "allowed prefixes, second-chance hops to %d prefixes, GUE port "
	       "%u; maps in %s\n",
	       o->iface, flags == XDP_FLAGS_SKB_MODE ? "generic" : "native",
	       n_local, n_allow, n_hop, ntohs(cfg.gue_port), dir);
	return RM_EXIT_OK;
}

int cmd_decap_detach(struct load_opts *o)
{
	int ifindex = if_nametoindex(o->iface), err;
	__u32 flags;

	if (!ifindex)
		return load_error(RM_EXIT_RUNTIME, "interface '%s' not found",
				  o->iface);
	if (decap_attached(ifindex, &flags))
		return load_error(RM_EXIT_RUNTIME,
				  "no decapsulator on %s (`ringload decap "
				  "status` lists them)",
				  o->iface);
	err = bpf_xdp_detach(ifindex, flags, NULL);
	if (err)
		return load_error(RM_EXIT_RUNTIME, "cannot detach from %s: %s",
				  o->iface, strerror(-err));
	printf("detached the decapsulator from %s\n", o->iface);
	return RM_EXIT_OK;
}

/* What a second-chance counter that should stay at zero asks for. */
static void sc_hints(const __u64 sum[RM_DCNT_MAX])
{
	static const struct {
		__u32 id;
		const char *fix;
	} hints[] = {
	    {RM_DCNT_SC_FWD_DISABLED,
	     "turn forwarding on on the interfaces the decapsulator runs on "
	     "(sysctl -w net.ipv4.conf.IFACE.forwarding=1 "
	     "net.ipv6.conf.IFACE.forwarding=1)"},
	    {RM_DCNT_SC_NO_NEIGH,
	     "the next node's neighbour entry is not resolved: traffic to it "
	     "or a permanent entry (ip neigh replace ... nud permanent)"},
	    {RM_DCNT_DROP_HOP_DENIED,
	     "a hop list names a node outside --allow-hop: attach again with "
	     "the nodes' prefixes"},
	};

	for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
		if (sum[hints[i].id])
			printf("hint: %s: %s\n",
			       rm_decap_counter_name(hints[i].id), hints[i].fix);
}

int cmd_decap_status(struct load_opts *o)
{
	char name[IF_NAMESIZE];
	__u64 sum[RM_DCNT_MAX];
	struct rm_json j;
	struct if_nameindex *ifs, *i;
	__u32 flags;
	int err = rm_decap_counters_read(decap_dir(o), sum);

	if (err == -ENOENT)
		return load_error(RM_EXIT_RUNTIME,
				  "no decapsulator state at %s (`ringload "
				  "decap attach IFACE --allow-src PREFIX` "
				  "first)",
				  decap_dir(o));
	if (err)
		return load_error(RM_EXIT_RUNTIME,
				  "cannot read the counters in %s: %s",
				  decap_dir(o), strerror(-err));
	ifs = if_nameindex();
	if (o->json) {
		rm_json_init(&j, stdout);
		rm_json_obj_open(&j, NULL);
		rm_json_arr_open(&j, "interfaces");
		for (i = ifs; i && i->if_index; i++)
			if (!decap_attached(i->if_index, &flags))
				rm_json_str(&j, NULL, i->if_name);
		rm_json_arr_close(&j);
		rm_json_obj_open(&j, "counters");
		for (int k = 0; k < RM_DCNT_MAX; k++)
			rm_json_u64(&j, rm_decap_counter_name(k), sum[k]);
		rm_json_obj_close(&j);
		rm_json_obj_close(&j);
		rm_json_end(&j);
	} else {
		printf("decapsulator state in %s; attached to:", decap_dir(o));
		for (i = ifs; i && i->if_index; i++)
			if (!decap_attached(i->if_index, &flags))
				printf(" %s", if_indextoname(i->if_index, name));
		printf("\n");
		for (int k = 0; k < RM_DCNT_MAX; k++)
			printf("%-24s %llu\n", rm_decap_counter_name(k),
			       (unsigned long long)sum[k]);
		sc_hints(sum);
	}
	if_freenameindex(ifs);
	return RM_EXIT_OK;
}
