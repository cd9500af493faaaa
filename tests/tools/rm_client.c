// SPDX-License-Identifier: GPL-2.0
/*
 * rm_client: the traffic source of the e2e tests, run in the client
 * namespace against rm_server behind the VIP.
 *
 * Flow mode (default): open --count flows, flow i from source port
 * --sport-base + i (kernel's choice when the base is 0).
 *   tcp: connect, read the node's greeting line, reset-close.
 *   udp: send one datagram from the port, read "NODE <payload>".
 * One line per flow on stdout, in flow order:
 *   SRCADDR SPORT NODE            or   SRCADDR SPORT FAIL reason
 * Up to --parallel flows are in flight at once (non-blocking sockets and
 * poll), which is what makes a thousand connections take well under a
 * second rather than a thousand round trips.
 *
 * Hold mode (--hold N --duration S): open N TCP connections the same way,
 * then on each keep sending a chunk and checking that the identical bytes
 * come back, for S seconds. One line per connection at the end:
 *   SRCADDR SPORT NODE bytes=B chunks=C errors=E resets=R status=S max_gap_ms=G
 * G is the longest time between two echoes received (an interruption),
 * or from the last echo to the end while one was awaited.
 * status is ok (no error), degraded (stalled but alive), reset, eof,
 * mismatch or an errno text. A connection that the director moves to
 * another node is reset by that node, so resets are the number to watch.
 *
 * Every flow has a deadline (--timeout-ms) and hold mode a duration, so
 * the run always ends. TCP sockets are closed with SO_LINGER 0: the reset
 * leaves no TIME_WAIT, so the same source ports work again in the next
 * run. Exit status: 0 when every flow/connection succeeded, 1 otherwise,
 * 2 on usage errors.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "json.h"
#include "util.h"
#include "tool_args.h"

#define PROG_NAME "rm_client"

#define NODE_MAX 63
#define REASON_MAX 64
#define MAX_FLOWS 65536
#define MAX_PARALLEL 4096
#define MAX_CHUNK 65536
#define MAX_DURATION 3600
#define POLL_SLICE_MS 100 /* longest sleep: signals and deadlines */

enum state {
	S_IDLE,
	S_CONNECTING, /* tcp: waiting for the handshake */
	S_GREETING,   /* tcp: waiting for the node's name line */
	S_REPLY,      /* udp: waiting for the answer */
	S_OK,
	S_FAIL,
	S_HOLD, /* hold mode: exchanging data */
	S_DEAD, /* hold mode: connection lost */
};

struct flow {
	int fd;
	uint16_t sport;
	enum state state;
	unsigned int tries;
	int64_t deadline;
	int64_t next_resend;
	char src[INET6_ADDRSTRLEN];
	char node[NODE_MAX + 1];
	char reason[REASON_MAX];
	char line[NODE_MAX + 2];
	size_t line_len;

	/* hold mode */
	unsigned char *chunk; /* what is being echoed now */
	size_t sent, recvd;
	uint64_t seq;
	uint64_t bytes;
	unsigned int errors, resets;
	int64_t next_send, last_progress;
	int64_t last_echo, max_gap; /* hold: longest wait between echoes */
};

static struct {
	int family;
	struct sockaddr_storage vip;
	socklen_t vip_len;
	struct sockaddr_storage src;
	bool have_src;
	int port;
	bool udp;
	long count;
	long sport_base;
	long timeout_ms;
	long parallel;
	long retries;
	bool json;
	long hold;
	long duration;
	long chunk;
	long gap_ms;
	const char *ready_file;
} opt;

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_reason(struct flow *f, const char *what, int err)
{
	if (err)
		snprintf(f->reason, sizeof(f->reason), "%s: %s", what,
			 strerror(err));
	else
		snprintf(f->reason, sizeof(f->reason), "%s", what);
}

/* Reset-close: no FIN handshake, no TIME_WAIT, port reusable at once. */
static void close_rst(int fd)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

static void flow_close(struct flow *f)
{
	if (f->fd < 0)
		return;
	if (opt.udp)
		close(f->fd);
	else
		close_rst(f->fd);
	f->fd = -1;
}

static void flow_fail(struct flow *f, const char *what, int err)
{
	set_reason(f, what, err);
	f->state = S_FAIL;
	flow_close(f);
}

static void sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

static void record_src(struct flow *f)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	const void *a;

	if (getsockname(f->fd, (struct sockaddr *)&ss, &len))
		return;
	if (ss.ss_family == AF_INET6)
		a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
	else
		a = &((struct sockaddr_in *)&ss)->sin_addr;
	inet_ntop(ss.ss_family, a, f->src, sizeof(f->src));
	if (ss.ss_family == AF_INET6)
		f->sport = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	else
		f->sport = ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* The UDP payload of flow i: unique per flow, so a stray answer meant for
 * another flow cannot be mistaken for this one's. */
static int udp_payload(long idx, char *buf, size_t len)
{
	return snprintf(buf, len, "rm_client flow %ld", idx);
}

static void udp_send(struct flow *f, long idx)
{
	char p[64];
	int n = udp_payload(idx, p, sizeof(p));

	f->tries++;
	if (send(f->fd, p, n, MSG_NOSIGNAL) < 0 && errno != EAGAIN)
		flow_fail(f, "send", errno);
}

/* Open flow idx. Failures are recorded in the flow, never fatal. */
static void flow_start(struct flow *f, long idx, int64_t now)
{
	struct sockaddr_storage local = {0};
	socklen_t len;
	int one = 1;

	f->fd = socket(opt.family,
		       (opt.udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK |
			   SOCK_CLOEXEC,
		       0);
	if (f->fd < 0) {
		flow_fail(f, "socket", errno);
		return;
	}
	setsockopt(f->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!opt.udp)
		setsockopt(f->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (opt.have_src) {
		local = opt.src;
	} else {
		local.ss_family = opt.family;
		/* in6addr_any and INADDR_ANY are both all zeroes */
	}
	len = opt.family == AF_INET6 ? sizeof(struct sockaddr_in6)
				     : sizeof(struct sockaddr_in);
	if (opt.sport_base || opt.have_src) {
		sockaddr_set_port(&local,
				  opt.sport_base ? opt.sport_base + idx : 0);
		if (bind(f->fd, (struct sockaddr *)&local, len)) {
			flow_fail(f, "bind", errno);
			return;
		}
	}
	f->deadline = now + opt.timeout_ms;
	if (connect(f->fd, (struct sockaddr *)&opt.vip, opt.vip_len) &&
	    errno != EINPROGRESS) {
		record_src(f);
		flow_fail(f, "connect", errno);
		return;
	}
	/* The source address is chosen by connect(), even in progress. */
	record_src(f);
	if (opt.udp) {
		f->state = S_REPLY;
		f->next_resend = now + opt.timeout_ms / (opt.retries + 1);
		udp_send(f, idx);
	} else {
		f->state = S_CONNECTING;
	}
}

static void tcp_read_greeting(struct flow *f)
{
	size_t len;
	char *nl;
	ssize_t n;

	n = recv(f->fd, f->line + f->line_len,
		 sizeof(f->line) - 1 - f->line_len, 0);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		flow_fail(f, errno == ECONNRESET ? "reset" : "recv",
			  errno == ECONNRESET ? 0 : errno);
		return;
	}
	if (n == 0) {
		flow_fail(f, "eof", 0);
		return;
	}
	f->line_len += n;
	f->line[f->line_len] = '\0';
	nl = memchr(f->line, '\n', f->line_len);
	if (!nl) {
		if (f->line_len >= sizeof(f->line) - 1)
			flow_fail(f, "badreply", 0);
		return;
	}
	if (nl > f->line && nl[-1] == '\r')
		nl--;
	len = nl - f->line;
	if (!len || len > NODE_MAX || memchr(f->line, ' ', len)) {
		flow_fail(f, "badreply", 0);
		return;
	}
	memcpy(f->node, f->line, len);
	f->node[len] = '\0';
	f->state = S_OK;
}

static void udp_read_reply(struct flow *f, long idx)
{
	static char buf[65536];
	char p[64];
	int plen = udp_payload(idx, p, sizeof(p));
	ssize_t n;
	size_t nlen;

	n = recv(f->fd, buf, sizeof(buf), 0);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		/* ICMP port unreachable surfaces as ECONNREFUSED */
		flow_fail(f, errno == ECONNREFUSED ? "refused" : "recv",
			  errno == ECONNREFUSED ? 0 : errno);
		return;
	}
	/* "NODE <payload>": the payload must come back intact */
	if (n < plen + 2 || memcmp(buf + n - plen, p, plen) ||
	    buf[n - plen - 1] != ' ') {
		flow_fail(f, "badreply", 0);
		return;
	}
	nlen = n - plen - 1;
	if (nlen > NODE_MAX || memchr(buf, ' ', nlen)) {
		flow_fail(f, "badreply", 0);
		return;
	}
	memcpy(f->node, buf, nlen);
	f->node[nlen] = '\0';
	f->state = S_OK;
	flow_close(f);
}

static short flow_events(const struct flow *f)
{
	return f->state == S_CONNECTING ? POLLOUT : POLLIN;
}

static void flow_io(struct flow *f, long idx, short rev, bool keep_open)
{
	if (f->state == S_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (!(rev & (POLLOUT | POLLERR | POLLHUP)))
			return;
		getsockopt(f->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err) {
			flow_fail(f, "connect", err);
			return;
		}
		f->state = S_GREETING;
		/* The greeting may already be here: read without waiting. */
		rev |= POLLIN;
	}
	if (!(rev & (POLLIN | POLLERR | POLLHUP)))
		return;
	if (f->state == S_GREETING) {
		tcp_read_greeting(f);
		if (f->state == S_OK && !keep_open)
			flow_close(f);
	} else if (f->state == S_REPLY) {
		udp_read_reply(f, idx);
	}
}

static bool flow_active(const struct flow *f)
{
	return f->state == S_CONNECTING || f->state == S_GREETING ||
	       f->state == S_REPLY;
}

static void flow_tick(struct flow *f, long idx, int64_t now)
{
	if (!flow_active(f))
		return;
	if (now >= f->deadline) {
		flow_fail(f,
			  f->state == S_CONNECTING ? "timeout connect"
			  : f->state == S_GREETING ? "timeout greeting"
						   : "timeout reply",
			  0);
		return;
	}
	if (f->state == S_REPLY && f->tries <= (unsigned long)opt.retries &&
	    now >= f->next_resend) {
		f->next_resend = now + opt.timeout_ms / (opt.retries + 1);
		udp_send(f, idx);
	}
}

/*
 * Run every flow to completion with at most opt.parallel in flight. Each
 * flow ends by its deadline, so this ends too. keep_open leaves successful
 * TCP connections open (hold mode).
 */
static void run_flows(struct flow *flows, long n, bool keep_open)
{
	struct pollfd *pfd = calloc(opt.parallel, sizeof(*pfd));
	long *slot = calloc(opt.parallel, sizeof(*slot));
	long next = 0, active = 0;

	if (!pfd || !slot) {
		perror("rm_client: calloc");
		exit(1);
	}
	while ((next < n || active) && !stop_flag) {
		int64_t now = now_ms(), wake = now + POLL_SLICE_MS;

		while (active < opt.parallel && next < n) {
			struct flow *f = &flows[next];

			flow_start(f, next, now);
			if (flow_active(f)) {
				slot[active] = next;
				pfd[active].fd = f->fd;
				pfd[active].events = flow_events(f);
				pfd[active].revents = 0;
				active++;
			}
			next++;
		}
		for (long s = 0; s < active; s++) {
			struct flow *f = &flows[slot[s]];

			if (f->deadline < wake)
				wake = f->deadline;
			if (f->state == S_REPLY && opt.retries &&
			    f->next_resend < wake)
				wake = f->next_resend;
		}
		if (active &&
		    poll(pfd, active, wake > now ? wake - now : 0) < 0 &&
		    errno != EINTR) {
			perror("rm_client: poll");
			exit(1);
		}
		now = now_ms();
		for (long s = 0; s < active;) {
			struct flow *f = &flows[slot[s]];

			if (pfd[s].revents)
				flow_io(f, slot[s], pfd[s].revents, keep_open);
			flow_tick(f, slot[s], now);
			if (!flow_active(f)) {
				/* Swap in the last slot and look at it
				 * next: its revents are from this poll. */
				active--;
				slot[s] = slot[active];
				pfd[s] = pfd[active];
				continue;
			}
			pfd[s].events = flow_events(f);
			pfd[s].revents = 0;
			s++;
		}
	}
	if (stop_flag) {
		for (long i = 0; i < n; i++)
			if (flows[i].state == S_IDLE || flow_active(&flows[i]))
				flow_fail(&flows[i], "interrupted", 0);
	}
	free(pfd);
	free(slot);
}

/* ---- hold mode ----------------------------------------------------- */

/* Chunk seq of connection idx: a keyed pseudo-random pattern, so a chunk
 * echoed to the wrong connection or out of order never compares equal. */
static void fill_chunk(struct flow *f, long idx)
{
	__u64 x = ((__u64)idx << 32) ^ f->seq ^ 0x9e3779b97f4a7c15ull;

	for (long j = 0; j < opt.chunk; j += 8) {
		__u64 z = rm_splitmix64(&x);

		memcpy(f->chunk + j, &z,
		       opt.chunk - j < 8 ? (size_t)(opt.chunk - j) : 8);
	}
	f->sent = f->recvd = 0;
}

static void hold_lost(struct flow *f, const char *what, int err, bool reset)
{
	if (reset)
		f->resets++;
	else
		f->errors++;
	set_reason(f, what, err);
	f->state = S_DEAD;
	close_rst(f->fd);
	f->fd = -1;
}

static void hold_recv(struct flow *f, long idx, int64_t now)
{
	static unsigned char buf[MAX_CHUNK];
	ssize_t n;

	n = recv(f->fd, buf, sizeof(buf), 0);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		if (errno == ECONNRESET)
			hold_lost(f, "reset", 0, true);
		else
			hold_lost(f, "recv", errno, false);
		return;
	}
	if (n == 0) {
		hold_lost(f, "eof", 0, false);
		return;
	}
	/* The echo can never run ahead of what was sent. */
	if (f->recvd + n > f->sent || memcmp(buf, f->chunk + f->recvd, n)) {
		hold_lost(f, "mismatch", 0, false);
		return;
	}
	f->recvd += n;
	f->last_progress = now;
	if (now - f->last_echo > f->max_gap)
		f->max_gap = now - f->last_echo;
	f->last_echo = now;
	if (f->recvd == (size_t)opt.chunk) {
		f->bytes += opt.chunk;
		f->seq++;
		fill_chunk(f, idx);
		f->next_send = now + opt.gap_ms;
	}
}

static void hold_send(struct flow *f, int64_t now)
{
	ssize_t n;

	/* a chunk starts: a stall is counted from now, not from the last
	 * echo (with --gap-ms above --timeout-ms every chunk would count) */
	if (!f->sent)
		f->last_progress = now;
	n = send(f->fd, f->chunk + f->sent, opt.chunk - f->sent, MSG_NOSIGNAL);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		if (errno == ECONNRESET || errno == EPIPE)
			hold_lost(f, "reset", 0, true);
		else
			hold_lost(f, "send", errno, false);
		return;
	}
	f->sent += n;
}

static void run_hold(struct flow *flows, long n)
{
	struct pollfd *pfd = calloc(n, sizeof(*pfd));
	long *slot = calloc(n, sizeof(*slot));
	int64_t start = now_ms(), end = start + opt.duration * 1000;

	if (!pfd || !slot) {
		perror("rm_client: calloc");
		exit(1);
	}
	for (long i = 0; i < n; i++) {
		struct flow *f = &flows[i];

		if (f->state != S_OK)
			continue;
		f->chunk = malloc(opt.chunk);
		if (!f->chunk) {
			perror("rm_client: malloc");
			exit(1);
		}
		f->state = S_HOLD;
		fill_chunk(f, i);
		f->next_send = start;
		f->last_progress = start;
		f->last_echo = start;
	}
	while (!stop_flag) {
		int64_t now = now_ms(), wake = end;
		long m = 0;

		if (now >= end)
			break;
		for (long i = 0; i < n; i++) {
			struct flow *f = &flows[i];
			bool want_out;

			if (f->state != S_HOLD)
				continue;
			want_out = f->sent < (size_t)opt.chunk;
			if (want_out && f->next_send > now) {
				want_out = false;
				if (f->next_send < wake)
					wake = f->next_send;
			}
			/* Waiting for an echo: a stall is an error once
			 * per --timeout-ms, not a lost connection, since
			 * TCP may yet recover it. */
			if (f->sent > f->recvd) {
				int64_t stall = f->last_progress;

				if (now - stall >= opt.timeout_ms) {
					f->errors++;
					set_reason(f, "stalled", 0);
					f->last_progress = stall = now;
				}
				if (stall + opt.timeout_ms < wake)
					wake = stall + opt.timeout_ms;
			}
			slot[m] = i;
			pfd[m].fd = f->fd;
			pfd[m].events = POLLIN | (want_out ? POLLOUT : 0);
			pfd[m].revents = 0;
			m++;
		}
		if (!m)
			break;
		if (wake > now + POLL_SLICE_MS)
			wake = now + POLL_SLICE_MS;
		if (poll(pfd, m, wake > now ? wake - now : 0) < 0 &&
		    errno != EINTR) {
			perror("rm_client: poll");
			exit(1);
		}
		now = now_ms();
		for (long s = 0; s < m; s++) {
			struct flow *f = &flows[slot[s]];
			short rev = pfd[s].revents;

			if (rev & (POLLIN | POLLERR | POLLHUP))
				hold_recv(f, slot[s], now);
			if (f->state == S_HOLD && (rev & POLLOUT))
				hold_send(f, now);
		}
	}
	for (long i = 0; i < n; i++) {
		struct flow *f = &flows[i];

		/* still waiting for an echo at the end: that wait is a gap
		 * too (a connection stuck since its last echo shows it) */
		if (f->state == S_HOLD && f->sent > f->recvd &&
		    now_ms() - f->last_echo > f->max_gap)
			f->max_gap = now_ms() - f->last_echo;
		if (flows[i].state == S_HOLD) {
			close_rst(flows[i].fd);
			flows[i].fd = -1;
		}
		free(flows[i].chunk);
		flows[i].chunk = NULL;
	}
	free(pfd);
	free(slot);
}

/* ---- output -------------------------------------------------------- */

static bool flow_good(const struct flow *f)
{
	if (opt.hold)
		return f->state == S_HOLD && !f->errors && !f->resets;
	return f->state == S_OK;
}

static const char *hold_status(const struct flow *f)
{
	if (f->state == S_HOLD)
		return f->errors ? "degraded" : "ok";
	return f->reason;
}

/* Got as far as the node's greeting: the line names a node. */
static bool flow_connected(const struct flow *f)
{
	return f->state == S_OK || f->state == S_HOLD || f->state == S_DEAD;
}

static void print_flow(const struct flow *f)
{
	bool connected = flow_connected(f);
	const char *src = f->src[0] ? f->src : "-";

	if (opt.json) {
		struct rm_json j;

		rm_json_init(&j, stdout);
		rm_json_obj_open(&j, NULL);
		rm_json_str(&j, "src", src);
		rm_json_u64(&j, "sport", f->sport);
		if (!connected)
			rm_json_str(&j, "fail", f->reason);
		else
			rm_json_str(&j, "node", f->node);
		if (opt.hold && connected) {
			rm_json_u64(&j, "bytes", f->bytes);
			rm_json_u64(&j, "chunks", f->seq);
			rm_json_u64(&j, "errors", f->errors);
			rm_json_u64(&j, "resets", f->resets);
			rm_json_str(&j, "status", hold_status(f));
			rm_json_u64(&j, "max_gap_ms", f->max_gap);
		}
		rm_json_obj_close(&j);
		rm_json_end(&j);
		return;
	}
	if (!connected) {
		printf("%s %u FAIL %s\n", src, f->sport, f->reason);
		return;
	}
	if (!opt.hold) {
		printf("%s %u %s\n", src, f->sport, f->node);
		return;
	}
	printf("%s %u %s bytes=%llu chunks=%llu errors=%u resets=%u "
	       "status=%s max_gap_ms=%lld\n",
	       src, f->sport, f->node, (unsigned long long)f->bytes,
	       (unsigned long long)f->seq, f->errors, f->resets,
	       hold_status(f), (long long)f->max_gap);
}

/* One stderr line: totals and how flows spread over nodes. */
static void summary(const struct flow *flows, long n, int64_t ms)
{
	enum { MAX_SEEN = 64 };
	const char *names[MAX_SEEN];
	long counts[MAX_SEEN], seen = 0, good = 0, other = 0;

	for (long i = 0; i < n; i++) {
		const struct flow *f = &flows[i];
		long j;

		good += flow_good(f);
		if (!f->node[0])
			continue;
		for (j = 0; j < seen; j++)
			if (!strcmp(names[j], f->node))
				break;
		if (j == seen) {
			if (seen == MAX_SEEN) {
				other++;
				continue;
			}
			names[seen] = f->node;
			counts[seen++] = 0;
		}
		counts[j]++;
	}
	fprintf(stderr, "rm_client: %s%s %s %ld %s: ", opt.udp ? "udp" : "tcp",
		opt.family == AF_INET6 ? "6" : "4", opt.hold ? "hold" : "flows",
		n, opt.hold ? "connections" : "total");
	fprintf(stderr, "%ld ok, %ld failed in %.3f s", good, n - good,
		ms / 1000.0);
	if (!opt.hold && ms > 0)
		fprintf(stderr, " (%.0f/s)", n * 1000.0 / ms);
	fprintf(stderr, "; nodes:");
	for (long j = 0; j < seen; j++)
		fprintf(stderr, " %s=%ld", names[j], counts[j]);
	if (other)
		fprintf(stderr, " other=%ld", other);
	fprintf(stderr, "\n");
}

/* ---- arguments ----------------------------------------------------- */

static void usage(void)
{
	static const char text[] =
	    "usage: rm_client --vip ADDR [--port 8080] [--proto tcp|udp]\n"
	    "         [--count N] [--sport-base B] [--src ADDR]\n"
	    "         [--timeout-ms 2000] [--parallel 64] [--retries 0]\n"
	    "         [--json]\n"
	    "       rm_client --vip ADDR --hold N --duration S\n"
	    "         [--chunk 512] [--gap-ms 2] [--ready-file F]\n"
	    "         [--port, --sport-base, --src, --timeout-ms,\n"
	    "          --parallel, --json as above]\n";

	fputs(text, stderr);
	exit(2);
}

static bool parse_addr(const char *s, struct sockaddr_storage *ss,
		       socklen_t *len)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		*len = sizeof(*s4);
		return true;
	}
	if (inet_pton(AF_INET6, s, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		*len = sizeof(*s6);
		return true;
	}
	return false;
}

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"vip", required_argument, NULL, 'v'},
	    {"port", required_argument, NULL, 'p'},
	    {"proto", required_argument, NULL, 'P'},
	    {"count", required_argument, NULL, 'n'},
	    {"sport-base", required_argument, NULL, 'b'},
	    {"src", required_argument, NULL, 's'},
	    {"timeout-ms", required_argument, NULL, 't'},
	    {"parallel", required_argument, NULL, 'j'},
	    {"retries", required_argument, NULL, 'r'},
	    {"json", no_argument, NULL, 'J'},
	    {"hold", required_argument, NULL, 'H'},
	    {"duration", required_argument, NULL, 'd'},
	    {"chunk", required_argument, NULL, 'c'},
	    {"gap-ms", required_argument, NULL, 'g'},
	    {"ready-file", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char *vip = NULL, *src = NULL;
	socklen_t len;
	int o;

	opt.port = 8080;
	opt.count = 1;
	opt.timeout_ms = 2000;
	opt.parallel = 64;
	opt.chunk = 512;
	opt.gap_ms = 2;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'v':
			vip = optarg;
			break;
		case 'p':
			opt.port = tool_parse_long(PROG_NAME, optarg, 1, 65535,
						   "port");
			break;
		case 'P':
			if (!strcmp(optarg, "udp"))
				opt.udp = true;
			else if (strcmp(optarg, "tcp"))
				usage();
			break;
		case 'n':
			opt.count = tool_parse_long(PROG_NAME, optarg, 1,
						    MAX_FLOWS, "count");
			break;
		case 'b':
			opt.sport_base = tool_parse_long(PROG_NAME, optarg, 0,
							 65535, "sport-base");
			break;
		case 's':
			src = optarg;
			break;
		case 't':
			opt.timeout_ms = tool_parse_long(PROG_NAME, optarg, 10,
							 600000, "timeout-ms");
			break;
		case 'j':
			opt.parallel = tool_parse_long(
			    PROG_NAME, optarg, 1, MAX_PARALLEL, "parallel");
			break;
		case 'r':
			opt.retries = tool_parse_long(PROG_NAME, optarg, 0, 10,
						      "retries");
			break;
		case 'J':
			opt.json = true;
			break;
		case 'H':
			opt.hold = tool_parse_long(PROG_NAME, optarg, 1,
						   MAX_FLOWS, "hold");
			break;
		case 'd':
			opt.duration = tool_parse_long(
			    PROG_NAME, optarg, 1, MAX_DURATION, "duration");
			break;
		case 'c':
			opt.chunk = tool_parse_long(PROG_NAME, optarg, 1,
						    MAX_CHUNK, "chunk");
			break;
		case 'g':
			opt.gap_ms = tool_parse_long(PROG_NAME, optarg, 0,
						     60000, "gap-ms");
			break;
		case 'R':
			opt.ready_file = optarg;
			break;
		default:
			usage();
		}
	}
	if (!vip || optind != argc)
		usage();
	if (!parse_addr(vip, &opt.vip, &opt.vip_len)) {
		fprintf(stderr, "rm_client: bad --vip %s\n", vip);
		exit(2);
	}
	opt.family = opt.vip.ss_family;
	sockaddr_set_port(&opt.vip, opt.port);
	if (src) {
		if (!parse_addr(src, &opt.src, &len) ||
		    opt.src.ss_family != opt.family) {
			fprintf(stderr,
				"rm_client: --src %s is not an address of the "
				"VIP's family\n",
				src);
			exit(2);
		}
		opt.have_src = true;
	}
	if (opt.hold) {
		if (opt.udp || !opt.duration) {
			fprintf(stderr, "rm_client: --hold needs tcp and "
					"--duration\n");
			exit(2);
		}
		opt.count = opt.hold;
	}
	if (opt.sport_base && opt.sport_base + opt.count - 1 > 65535) {
		fprintf(stderr,
			"rm_client: --sport-base %ld + %ld flows runs "
			"past port 65535\n",
			opt.sport_base, opt.count);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct flow *flows;
	struct rlimit rl;
	int64_t start;
	long good = 0;

	parse_args(argc, argv);

	/* No SA_RESTART: poll returns EINTR and the loops see stop_flag. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Hold mode keeps one fd per connection open. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	flows = calloc(opt.count, sizeof(*flows));
	if (!flows) {
		perror("rm_client: calloc");
		return 1;
	}
	for (long i = 0; i < opt.count; i++) {
		flows[i].fd = -1;
		flows[i].sport = opt.sport_base ? opt.sport_base + i : 0;
	}

	start = now_ms();
	run_flows(flows, opt.count, opt.hold);
	if (opt.hold) {
		long up = 0;

		for (long i = 0; i < opt.count; i++)
			up += flows[i].state == S_OK;
		fprintf(stderr, "rm_client: holding %ld of %ld connections\n",
			up, opt.count);
		if (opt.ready_file) {
			FILE *f = fopen(opt.ready_file, "w");

			if (f) {
				fprintf(f, "connected %ld %ld\n", up,
					opt.count);
				fclose(f);
			}
		}
		run_hold(flows, opt.count);
	}

	for (long i = 0; i < opt.count; i++) {
		print_flow(&flows[i]);
		good += flow_good(&flows[i]);
	}
	fflush(stdout);
	summary(flows, opt.count, now_ms() - start);
	free(flows);
	return good == opt.count ? 0 : 1;
}
