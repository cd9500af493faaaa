// SPDX-License-Identifier: GPL-2.0
/* What ringctl doctor reads from the network side: link flags and MTU,
 * a veth's peer (found in its namespace by a forked child, so the doctor
 * itself never changes namespace), rp_filter, IPv4 neighbours. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <bpf/libbpf.h>
#include "doctor.h"

#define NETNS_DIR "/var/run/netns"

static int ethtool(int sock, const char *dev, void *cmd)
{
	struct ifreq ifr = {0};

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	ifr.ifr_data = cmd;
	return ioctl(sock, SIOCETHTOOL, &ifr);
}

void net_link(__u32 ifindex, struct net_link *l)
{
	struct ifreq ifr = {0};
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memset(l, 0, sizeof(*l));
	if (s < 0)
		return;
	if (if_indextoname(ifindex, l->name)) {
		l->exists = true;
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", l->name);
		if (!ioctl(s, SIOCGIFFLAGS, &ifr)) {
			l->up = ifr.ifr_flags & IFF_UP;
			l->running = ifr.ifr_flags & IFF_RUNNING;
		}
		if (!ioctl(s, SIOCGIFMTU, &ifr))
			l->mtu = ifr.ifr_mtu;
	}
	close(s);
}

static bool is_veth(int sock, const char *dev)
{
	struct ethtool_drvinfo di = {.cmd = ETHTOOL_GDRVINFO};

	return !ethtool(sock, dev, &di) && !strcmp(di.driver, "veth");
}

/* veth's "peer_ifindex" statistic; 0 if none. */
static __u32 peer_ifindex(int sock, const char *dev)
{
	struct ethtool_gstrings *names = NULL;
	struct ethtool_stats *vals = NULL;
	/* room for the one length the mask asks for (data[0]) */
	union {
		struct ethtool_sset_info hdr;
		__u8 buf[sizeof(struct ethtool_sset_info) + sizeof(__u32)];
	} sset = {.hdr = {.cmd = ETHTOOL_GSSET_INFO,
			  .sset_mask = 1ull << ETH_SS_STATS}};
	__u32 n, peer = 0;

	if (ethtool(sock, dev, &sset) || !sset.hdr.sset_mask)
		return 0;
	n = sset.hdr.data[0];
	names = calloc(1, sizeof(*names) + (size_t)n * ETH_GSTRING_LEN);
	vals = calloc(1, sizeof(*vals) + (size_t)n * sizeof(__u64));
	if (!names || !vals)
		goto out;
	names->cmd = ETHTOOL_GSTRINGS;
	names->string_set = ETH_SS_STATS;
	names->len = n;
	vals->cmd = ETHTOOL_GSTATS;
	vals->n_stats = n;
	if (ethtool(sock, dev, names) || ethtool(sock, dev, vals))
		goto out;
	for (__u32 i = 0; i < n; i++)
		if (!strncmp((char *)names->data + i * ETH_GSTRING_LEN,
			     "peer_ifindex", ETH_GSTRING_LEN))
			peer = (__u32)vals->data[i];
out:
	free(names);
	free(vals);
	return peer;
}

/* In the current namespace: is ifindex a veth whose peer is want_peer?
 * Fill p's peer fields if so. */
static bool probe_peer(__u32 ifindex, __u32 want_peer, struct veth_peer *p)
{
	struct ethtool_value v;
	struct bpf_xdp_query_opts q = {.sz = sizeof(q)};
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok = false;

	if (s < 0 || !if_indextoname(ifindex, p->name))
		goto out;
	if (!is_veth(s, p->name) || peer_ifindex(s, p->name) != want_peer)
		goto out;
	ok = true;
	v = (struct ethtool_value){.cmd = ETHTOOL_GTXCSUM};
	p->tx_csum = !ethtool(s, p->name, &v) && v.data;
	v = (struct ethtool_value){.cmd = ETHTOOL_GGRO};
	p->gro = !ethtool(s, p->name, &v) && v.data;
	p->xdp = !bpf_xdp_query(ifindex, 0, &q) && q.attach_mode;
out:
	if (s >= 0)
		close(s);
	return ok;
}

/* Look in namespace ns (a file under NETNS_DIR) from a child. */
static bool probe_in_ns(const char *ns, __u32 ifindex, __u32 want_peer,
			struct veth_peer *p)
{
	int pfd[2], status;
	struct veth_peer got;
	pid_t pid;
	bool ok = false;

	if (pipe2(pfd, O_CLOEXEC))
		return false;
	pid = fork();
	if (pid == 0) {
		char path[300];
		int fd;

		close(pfd[0]);
		snprintf(path, sizeof(path), "%s/%s", NETNS_DIR, ns);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		memset(&got, 0, sizeof(got));
		if (fd >= 0 && !setns(fd, CLONE_NEWNET) &&
		    probe_peer(ifindex, want_peer, &got) &&
		    write(pfd[1], &got, sizeof(got)) != sizeof(got))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	if (pid > 0 && read(pfd[0], &got, sizeof(got)) == sizeof(got)) {
		*p = got;
		ok = true;
	}
	close(pfd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return ok;
}

/* One rtnetlink request, one answer; the s32 attribute want of the
 * answer's attributes (starting hdrlen bytes into the payload), or
 * fallback when absent. */
static int nl_query(void *req, __u32 len, size_t hdrlen, unsigned short want,
		    int fallback)
{
	char buf[8192];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	int n, rem, val = fallback;

	if (s < 0)
		return fallback;
	if (send(s, req, len, 0) != (ssize_t)len ||
	    (n = recv(s, buf, sizeof(buf), 0)) < (int)sizeof(*h) ||
	    h->nlmsg_type == NLMSG_ERROR) {
		close(s);
		return fallback;
	}
	/* the attributes of the one message, within what was received */
	rem = ((int)h->nlmsg_len < n ? (int)h->nlmsg_len : n) -
	      (int)NLMSG_LENGTH(hdrlen);
	for (struct rtattr *a = (struct rtattr *)((char *)NLMSG_DATA(h) +
						  NLMSG_ALIGN(hdrlen));
	     RTA_OK(a, rem); a = RTA_NEXT(a, rem))
		if (a->rta_type == want)
			val = *(__s32 *)RTA_DATA(a);
	close(s);
	return val;
}

/* The id, in this namespace, of the namespace ifindex's peer lives in;
 * -1 when it is this namespace. */
static int link_netnsid(__u32 ifindex)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = {.h = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
		       .nlmsg_flags = NLM_F_REQUEST},
		 .i = {.ifi_family = AF_UNSPEC, .ifi_index = (int)ifindex}};

	return nl_query(&req, sizeof(req), sizeof(struct ifinfomsg),
			IFLA_LINK_NETNSID, -1);
}

/* The id this namespace gives the namespace open at fd; -1 if none. */
static int netnsid_of(int fd)
{
	struct {
		struct nlmsghdr h;
		struct rtgenmsg g;
		char pad[3];
		struct rtattr a;
		__u32 fd;
	} req = {.h = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETNSID,
		       .nlmsg_flags = NLM_F_REQUEST},
		 .g = {.rtgen_family = AF_UNSPEC},
		 .a = {.rta_len = RTA_LENGTH(sizeof(__u32)),
		       .rta_type = NETNSA_FD},
		 .fd = (__u32)fd};

	return nl_query(&req, sizeof(req), sizeof(struct rtgenmsg),
			NETNSA_NSID, -1);
}

void net_veth_peer(__u32 ifindex, struct veth_peer *p)
{
	char dev[IF_NAMESIZE];
	struct veth_peer cand;
	struct dirent *e;
	__u32 peer;
	int nsid;
	DIR *d;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memset(p, 0, sizeof(*p));
	if (s < 0)
		return;
	if (!if_indextoname(ifindex, dev) || !is_veth(s, dev)) {
		close(s);
		return;
	}
	p->is_veth = true;
	peer = peer_ifindex(s, dev);
	close(s);
	if (!peer)
		return;
	/* Ifindexes are per namespace: the peer's number may name anything
	 * elsewhere, so the namespace is found by its id first. */
	nsid = link_netnsid(ifindex);
	if (nsid < 0) {
		if (probe_peer(peer, ifindex, p))
			p->found = p->is_veth = true;
		return;
	}
	d = opendir(NETNS_DIR);
	while (d && (e = readdir(d)) && !p->found) {
		char path[300];
		int fd, id;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", NETNS_DIR, e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		id = netnsid_of(fd);
		close(fd);
		if (id != nsid)
			continue;
		memset(&cand, 0, sizeof(cand));
		if (probe_in_ns(e->d_name, peer, ifindex, &cand)) {
			*p = cand;
			p->found = p->is_veth = true;
			snprintf(p->ns, sizeof(p->ns), "%s", e->d_name);
		}
	}
	if (d)
		closedir(d);
}

static int read_int(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

int net_rp_filter(const char *dev)
{
	char path[128];
	int all, one;

	all = read_int("/proc/sys/net/ipv4/conf/all/rp_filter");
	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/rp_filter",
		 dev);
	one = read_int(path);
	if (all < 0 || one < 0)
		return -1;
	return all > one ? all : one;
}

void net_neigh_mac(const char *dev, const __u8 mac[6], int *complete,
		   bool *has_mac)
{
	char line[256], want[18], ip[64], hw[32], dv[32], mask[8];
	unsigned int type, flags;
	FILE *f = fopen("/proc/net/arp", "r");

	*complete = 0;
	*has_mac = false;
	snprintf(want, sizeof(want), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0],
		 mac[1], mac[2], mac[3], mac[4], mac[5]);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s 0x%x 0x%x %31s %7s %31s", ip, &type,
			   &flags, hw, mask, dv) == 6 &&
		    !strcmp(dv, dev) && (flags & 0x2) /* ATF_COM */) {
			(*complete)++;
			if (!strcasecmp(hw, want))
				*has_mac = true;
		}
	fclose(f);
}
