/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Real TCP sockets for the decapsulator's second-chance tests
 * (test_decap_sc), in the test's own network namespace: listeners and
 * connections over loopback between the addresses of dc_fixture.h, their
 * states as /proc/net/tcp shows them, and a SYN from a raw socket to read
 * the kernel's SYN-ACK (its SYN cookie).
 */
#ifndef DC_SOCKETS_H
#define DC_SOCKETS_H

#include <sys/socket.h>
#include <sys/time.h>
#include "dc_fixture.h"

#define VIP_PORT 80
#define COOKIE_PORT 40003 /* of the SYN-cookie handshakes */

static socklen_t sockaddr_of(int family, const char *addr, __u16 port,
			     struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == 6) {
		struct sockaddr_in6 *a = (void *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		dp_addr(6, addr, (__u8 *)&a->sin6_addr);
		return sizeof(*a);
	} else {
		struct sockaddr_in *a = (void *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		dp_addr(4, addr, (__u8 *)&a->sin_addr);
		return sizeof(*a);
	}
}

/* A TCP socket bound to addr:port. */
static int tcp_bound(int family, const char *addr, __u16 port)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(family, addr, port, &ss);
	int fd = socket(family == 6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0),
	    one = 1;

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (family == 6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    bind(fd, (struct sockaddr *)&ss, len)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A real connection client:cport -> listener lfd at VIP:VIP_PORT; the
 * server's side of it in *srv. */
static int tcp_connect(int family, int lfd, __u16 cport, int *srv)
{
	struct sockaddr_storage ss;
	socklen_t len =
	    sockaddr_of(family, family == 6 ? VIP6 : VIP4, VIP_PORT, &ss);
	int c = tcp_bound(family, family == 6 ? CLIENT6 : CLIENT4, cport);

	if (c < 0 || connect(c, (struct sockaddr *)&ss, len))
		return -1;
	*srv = accept(lfd, NULL, NULL);
	return *srv < 0 ? -1 : c;
}

/* 1 once /proc/net/tcp shows VIP4:VIP_PORT <- client:port in state st. */
static int tcp4_state_is(const char *client, __u16 port, unsigned st)
{
	char line[256], want[64];
	__u32 vip, cli;
	unsigned s;
	FILE *f = fopen("/proc/net/tcp", "r");
	int found = 0;

	if (!f)
		return 0;
	dp_addr(4, VIP4, (__u8 *)&vip);
	dp_addr(4, client, (__u8 *)&cli);
	snprintf(want, sizeof(want), "%08X:%04X %08X:%04X", vip, VIP_PORT, cli,
		 port);
	while (!found && fgets(line, sizeof(line), f)) {
		char *at = strstr(line, want);

		found =
		    at && sscanf(at + strlen(want), " %x", &s) == 1 && s == st;
	}
	fclose(f);
	return found;
}

#define TCP_SYN_RECV 3 /* as /proc/net/tcp shows a request socket */
#define TCP_TIME_WAIT 6

/* Sum of 16-bit words, unfolded. */
static __u32 sum16(const __u8 *d, size_t n, __u32 s)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (d[i] << 8) | d[i + 1];
	if (n & 1)
		s += d[n - 1] << 8;
	return s;
}

/* ---- a SYN from a raw socket: the kernel's SYN-ACK (its cookie) ----- */
struct tcp_raw {
	__be16 sport, dport;
	__be32 seq, ack;
	__u8 doff, flags;
	__be16 win, check, urg;
};

/* TCP checksum of th (20 bytes, no data) from src to dst (IPv4). */
static __u16 tcp4_csum(const struct tcp_raw *th, const char *src,
		       const char *dst)
{
	__u8 ph[12] = {0};
	__u32 s;

	dp_addr(4, src, ph);
	dp_addr(4, dst, ph + 4);
	ph[9] = IPPROTO_TCP;
	ph[11] = sizeof(*th);
	s = sum16((const __u8 *)th, sizeof(*th), sum16(ph, 12, 0));
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s & 0xffff;
}

/* Send a SYN client:COOKIE_PORT -> VIP:VIP_PORT (family fam) with
 * sequence isn from a raw socket while the namespace answers every SYN
 * with a cookie, and read the SYN-ACK's sequence (the cookie). 0, or -1. */
static int syn_cookie(int fam, __u32 isn, __u32 *cookie)
{
	struct tcp_raw th = {.sport = htons(COOKIE_PORT),
			     .dport = htons(VIP_PORT),
			     .seq = htonl(isn),
			     .doff = 5 << 4,
			     .flags = DP_TCP_SYN,
			     .win = htons(65535)};
	const char *cli = fam == 6 ? CLIENT6 : CLIENT4;
	const char *vip = fam == 6 ? VIP6 : VIP4;
	struct timeval tmo = {5, 0};
	struct sockaddr_storage ss;
	socklen_t len;
	__u8 buf[256];
	int fd, i, rc = -1, csum_off = 16;

	fd = socket(fam == 6 ? AF_INET6 : AF_INET, SOCK_RAW, IPPROTO_TCP);
	if (fd < 0)
		return -1;
	len = sockaddr_of(fam, cli, 0, &ss);
	if (bind(fd, (struct sockaddr *)&ss, len) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)))
		goto out;
	/* IPv6: the kernel fills the checksum in */
	if (fam == 4)
		th.check = htons(tcp4_csum(&th, cli, vip));
	else if (setsockopt(fd, IPPROTO_IPV6, IPV6_CHECKSUM, &csum_off,
			    sizeof(csum_off)))
		goto out;
	len = sockaddr_of(fam, vip, 0, &ss);
	if (sendto(fd, &th, sizeof(th), 0, (struct sockaddr *)&ss, len) !=
	    sizeof(th))
		goto out;
	/* the raw socket sees every TCP packet to the client: bounded */
	for (i = 0; i < 64; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		const struct tcp_raw *r;
		size_t ihl;

		if (n < 0)
			break;
		/* IPv4 raw sockets read the IP header too, IPv6 ones not */
		ihl = fam == 6 ? 0 : (buf[0] & 0xf) * 4u;
		if ((size_t)n < ihl + sizeof(*r))
			continue;
		r = (const void *)(buf + ihl);
		if (r->sport == htons(VIP_PORT) &&
		    r->dport == htons(COOKIE_PORT) &&
		    r->flags == (DP_TCP_SYN | DP_TCP_ACK) &&
		    r->ack == htonl(isn + 1)) {
			*cookie = ntohl(r->seq);
			rc = 0;
			break;
		}
	}
out:
	close(fd);
	return rc;
}

#endif /* DC_SOCKETS_H */
