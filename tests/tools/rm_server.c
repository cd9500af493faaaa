// SPDX-License-Identifier: GPL-2.0
/*
 * rm_server: the backend each e2e node namespace runs.
 *
 *   rm_server --name NODE [--port 8080] [--count-file F] [--max-seconds 600]
 *
 * Listens on TCP and UDP, IPv4 and IPv6, on the wildcard address, so it
 * accepts whatever the node owns, the VIP on lo included. TCP: greets each
 * connection with "NODE\n", then echoes everything back until the peer
 * closes (long-lived connection tests check the echo). UDP: answers each
 * datagram with "NODE <payload>", sent from the address the datagram was
 * addressed to (the VIP), not from the address routing would pick.
 *
 * One thread, level-triggered epoll, non-blocking sockets: thousands of
 * connections at once. Ends on SIGTERM/SIGINT or after --max-seconds, so a
 * forgotten server cannot outlive a test run by much. stdout carries only
 * the ready line; diagnostics go to stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "util.h"
#include "tool_args.h"

#define PROG_NAME "rm_server"

#define NAME_MAX_LEN 63
#define CONN_BUF 16384
#define UDP_MAX 65507	    /* largest UDP payload over IPv4 */
#define BATCH 64	    /* accepts/datagrams per wakeup: stay fair */
#define COUNT_PERIOD_MS 100 /* count file refresh while busy */

enum kind { K_TCP_LISTEN, K_UDP, K_SIGNAL, K_CONN };

/* Every epoll registration points at one of these (first member). */
struct item {
	enum kind kind;
	int fd;
};

struct conn {
	struct item it;
	struct conn *prev, *next; /* all open connections, freed at exit */
	size_t off, len;	  /* pending output: buf[off..len) */
	char buf[CONN_BUF];
};

struct counts {
	uint64_t tcp_accepted;
	uint64_t tcp_accepted6;
	uint64_t tcp_open;
	uint64_t udp_datagrams;
	uint64_t udp_datagrams6;
	uint64_t bytes_echoed;
};

static struct {
	const char *name;
	size_t name_len;
	int port;
	const char *count_file;
	long max_seconds;
	int epfd;
	struct item items[5]; /* signalfd, then TCP and UDP per family */
	int n_items;
	struct conn *conns;
	struct counts c;
	bool dirty;
	bool stop;
} srv;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
	fprintf(stderr, "rm_server %s: %s: %s\n", srv.name ? srv.name : "",
		what, strerror(errno));
	exit(1);
}

/* Written whole to a temporary file and renamed, so a test reading it
 * never sees half a file. */
static void write_counts(void)
{
	char tmp[4096];
	FILE *f;

	if (!srv.count_file)
		return;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", srv.count_file) >=
	    (int)sizeof(tmp))
		return;
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "rm_server: %s: %s\n", tmp, strerror(errno));
		return;
	}
	fprintf(f,
		"name %s\ntcp_accepted %llu\ntcp_accepted6 %llu\n"
		"tcp_open %llu\nudp_datagrams %llu\nudp_datagrams6 %llu\n"
		"bytes_echoed %llu\n",
		srv.name, (unsigned long long)srv.c.tcp_accepted,
		(unsigned long long)srv.c.tcp_accepted6,
		(unsigned long long)srv.c.tcp_open,
		(unsigned long long)srv.c.udp_datagrams,
		(unsigned long long)srv.c.udp_datagrams6,
		(unsigned long long)srv.c.bytes_echoed);
	if (fclose(f) == 0)
		rename(tmp, srv.count_file);
	srv.dirty = false;
}

static void ep_add(struct item *it, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = it};

	if (epoll_ctl(srv.epfd, EPOLL_CTL_ADD, it->fd, &ev))
		die("epoll_ctl add");
}

static void ep_mod(struct item *it, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = it};

	epoll_ctl(srv.epfd, EPOLL_CTL_MOD, it->fd, &ev);
}

static struct item *new_item(enum kind kind, int fd)
{
	struct item *it = &srv.items[srv.n_items++];

	it->kind = kind;
	it->fd = fd;
	return it;
}

static int open_socket(int family, int type)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int one = 1;
	int fd;

	fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		/* Separate v4 sockets exist: keep v6 from claiming v4. */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		s6->sin6_port = htons(srv.port);
		len = sizeof(*s6);
		if (type == SOCK_DGRAM)
			setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one,
				   sizeof(one));
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		s4->sin_port = htons(srv.port);
		len = sizeof(*s4);
		if (type == SOCK_DGRAM)
			setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one,
				   sizeof(one));
	}
	if (bind(fd, (struct sockaddr *)&ss, len))
		die("bind");
	if (type == SOCK_STREAM && listen(fd, 4096))
		die("listen");
	return fd;
}

static void conn_close(struct conn *c)
{
	/* Closing removes the fd from the epoll set. */
	close(c->it.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv.conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
	srv.c.tcp_open--;
	srv.dirty = true;
}

/* Send what is pending. Returns 1 when all is out, 0 when the socket is
 * full, -1 when the connection is gone. */
static int conn_flush(struct conn *c)
{
	while (c->off < c->len) {
		ssize_t n = send(c->it.fd, c->buf + c->off, c->len - c->off,
				 MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return -1;
		}
		c->off += n;
	}
	c->off = c->len = 0;
	return 1;
}

/* While output is pending the connection only waits for POLLOUT: not
 * reading is what pushes back on a peer that sends faster than it reads. */
static void conn_event(struct conn *c, uint32_t events)
{
	int r;

	if (c->len) {
		r = conn_flush(c);
		if (r < 0) {
			conn_close(c);
			return;
		}
		if (r == 0)
			return;
		ep_mod(&c->it, EPOLLIN | EPOLLRDHUP);
	}
	if (!(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return;
	for (int i = 0; i < 16; i++) {
		ssize_t n = recv(c->it.fd, c->buf, sizeof(c->buf), 0);

		if (n == 0) {
			conn_close(c);
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			conn_close(c);
			return;
		}
		srv.c.bytes_echoed += n;
		srv.dirty = true;
		c->off = 0;
		c->len = n;
		r = conn_flush(c);
		if (r < 0) {
			conn_close(c);
			return;
		}
		if (r == 0) {
			ep_mod(&c->it, EPOLLOUT);
			return;
		}
	}
}

static void accept_event(struct item *l)
{
	for (int i = 0; i < BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		struct conn *c;
		int one = 1;
		int fd;

		fd = accept4(l->fd, (struct sockaddr *)&ss, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				fprintf(stderr, "rm_server %s: accept: %s\n",
					srv.name, strerror(errno));
			return;
		}
		c = malloc(sizeof(*c));
		if (!c) {
			close(fd);
			return;
		}
		/* The echo is a ping-pong of small chunks: no Nagle delay. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->it.kind = K_CONN;
		c->it.fd = fd;
		memcpy(c->buf, srv.name, srv.name_len);
		c->buf[srv.name_len] = '\n';
		c->off = 0;
		c->len = srv.name_len + 1;
		srv.c.tcp_accepted++;
		if (ss.ss_family == AF_INET6)
			srv.c.tcp_accepted6++;
		srv.c.tcp_open++;
		srv.dirty = true;
		c->prev = NULL;
		c->next = srv.conns;
		if (srv.conns)
			srv.conns->prev = c;
		srv.conns = c;
		if (conn_flush(c) < 0) {
			conn_close(c);
			continue;
		}
		ep_add(&c->it, c->len ? EPOLLOUT : EPOLLIN | EPOLLRDHUP);
	}
}

/* Turn the destination a datagram arrived for into the control message
 * that makes the reply leave from that same address. Returns the control
 * length, 0 when the datagram carried no packet info. */
static size_t reply_pktinfo(struct msghdr *in, char *out)
{
	struct cmsghdr *o = (struct cmsghdr *)out;
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(in); cm; cm = CMSG_NXTHDR(in, cm)) {
		if (cm->cmsg_level == IPPROTO_IP &&
		    cm->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			pi.ipi_spec_dst = pi.ipi_addr;
			pi.ipi_ifindex = 0;
			o->cmsg_level = IPPROTO_IP;
			o->cmsg_type = IP_PKTINFO;
			o->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(o), &pi, sizeof(pi));
			return CMSG_SPACE(sizeof(pi));
		}
		if (cm->cmsg_level == IPPROTO_IPV6 &&
		    cm->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			pi.ipi6_ifindex = 0;
			o->cmsg_level = IPPROTO_IPV6;
			o->cmsg_type = IPV6_PKTINFO;
			o->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(o), &pi, sizeof(pi));
			return CMSG_SPACE(sizeof(pi));
		}
	}
	return 0;
}

/* Reply from the address the datagram was sent to: a wildcard socket would
 * otherwise answer from the node's own address and the client, connected
 * to the VIP, would never accept it. */
static void udp_event(struct item *u)
{
	static char out[NAME_MAX_LEN + 1 + UDP_MAX];

	for (int i = 0; i < BATCH; i++) {
		union {
			char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
			struct cmsghdr align;
		} cin, cout;
		struct sockaddr_storage peer;
		size_t head = srv.name_len + 1;
		struct msghdr msg;
		struct iovec iov;
		ssize_t n;

		/* Receive straight behind "NAME ": no copy. */
		iov.iov_base = out + head;
		iov.iov_len = UDP_MAX - head;
		memset(&msg, 0, sizeof(msg));
		msg.msg_name = &peer;
		msg.msg_namelen = sizeof(peer);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cin.buf;
		msg.msg_controllen = sizeof(cin.buf);
		n = recvmsg(u->fd, &msg, 0);
		if (n < 0)
			return;
		/* A payload too long to fit behind the name was truncated
		 * by recvmsg: the reply stays a legal datagram. */
		memcpy(out, srv.name, srv.name_len);
		out[srv.name_len] = ' ';
		iov.iov_base = out;
		iov.iov_len = head + n;
		memset(&cout, 0, sizeof(cout));
		msg.msg_controllen = reply_pktinfo(&msg, cout.buf);
		msg.msg_control = msg.msg_controllen ? cout.buf : NULL;
		msg.msg_flags = 0;
		if (sendmsg(u->fd, &msg, MSG_NOSIGNAL) < 0)
			fprintf(stderr, "rm_server %s: udp send: %s\n",
				srv.name, strerror(errno));
		srv.c.udp_datagrams++;
		if (peer.ss_family == AF_INET6)
			srv.c.udp_datagrams6++;
		srv.dirty = true;
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rm_server --name NODE [--port 8080] [--count-file F]\n"
		"                 [--max-seconds 600]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"name", required_argument, NULL, 'n'},
	    {"port", required_argument, NULL, 'p'},
	    {"count-file", required_argument, NULL, 'c'},
	    {"max-seconds", required_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	static const int families[] = {AF_INET, AF_INET6};
	struct epoll_event evs[256];
	int64_t deadline, last_count = 0;
	struct rlimit rl;
	sigset_t mask;
	int o;

	srv.port = 8080;
	srv.max_seconds = 600;
	while ((o = getopt_long(argc, argv, "n:p:c:m:h", opts, NULL)) != -1) {
		switch (o) {
		case 'n':
			srv.name = optarg;
			break;
		case 'p':
			srv.port = tool_parse_long(PROG_NAME, optarg, 1, 65535,
						   "port");
			break;
		case 'c':
			srv.count_file = optarg;
			break;
		case 'm':
			srv.max_seconds = tool_parse_long(PROG_NAME, optarg, 1,
							  86400, "max-seconds");
			break;
		default:
			usage();
		}
	}
	if (!srv.name || optind != argc)
		usage();
	srv.name_len = strlen(srv.name);
	if (!srv.name_len || srv.name_len > NAME_MAX_LEN ||
	    strpbrk(srv.name, " \n\r\t")) {
		fprintf(stderr,
			"rm_server: name must be 1..%d characters "
			"without blanks\n",
			NAME_MAX_LEN);
		return 2;
	}

	/* One fd per connection: take all the kernel allows. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	srv.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (srv.epfd < 0)
		die("epoll_create1");

	/* Signals arrive as events, so the loop never races a handler. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	o = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (o < 0)
		die("signalfd");
	ep_add(new_item(K_SIGNAL, o), EPOLLIN);
	signal(SIGPIPE, SIG_IGN);

	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		int f = families[i];

		ep_add(new_item(K_TCP_LISTEN, open_socket(f, SOCK_STREAM)),
		       EPOLLIN);
		ep_add(new_item(K_UDP, open_socket(f, SOCK_DGRAM)), EPOLLIN);
	}

	srv.dirty = true;
	write_counts();
	printf("rm_server %s ready port %d\n", srv.name, srv.port);
	fflush(stdout);

	deadline = now_ms() + srv.max_seconds * 1000;
	while (!srv.stop) {
		int64_t now = now_ms();
		int timeout = 1000;
		int n;

		if (now >= deadline) {
			fprintf(stderr, "rm_server %s: --max-seconds reached\n",
				srv.name);
			break;
		}
		if (srv.dirty) {
			if (now - last_count >= COUNT_PERIOD_MS) {
				write_counts();
				last_count = now;
			} else {
				timeout = COUNT_PERIOD_MS;
			}
		}
		if (deadline - now < timeout)
			timeout = deadline - now;

		n = epoll_wait(srv.epfd, evs, 256, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		for (int i = 0; i < n; i++) {
			struct item *it = evs[i].data.ptr;

			switch (it->kind) {
			case K_TCP_LISTEN:
				accept_event(it);
				break;
			case K_UDP:
				udp_event(it);
				break;
			case K_CONN:
				conn_event((struct conn *)it, evs[i].events);
				break;
			case K_SIGNAL:
				srv.stop = true;
				break;
			}
		}
	}
	while (srv.conns)
		conn_close(srv.conns);
	write_counts();
	return 0;
}
