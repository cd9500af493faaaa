// SPDX-License-Identifier: GPL-2.0
/* The probes: tcp connect, http GET, udp request/reply, exec. Each runs
 * on a non-blocking socket (or a pidfd) in the checker's epoll set. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ringhealth.h"

extern char **environ;

static void close_fds(struct checker *c, struct target *t)
{
	if (t->fd >= 0) {
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, t->fd, NULL);
		close(t->fd);
	}
	if (t->pidfd >= 0) {
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, t->pidfd, NULL);
		close(t->pidfd);
	}
	t->fd = t->pidfd = -1;
}

/* An exec check's command leads its own process group (start_exec): the
 * whole group is killed, or a script's children (a sleep, a curl) would
 * outlive it. Called before the leader is reaped, so the group id cannot
 * have been reused. */
static void kill_exec(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

void probe_abort(struct checker *c, struct target *t)
{
	if (t->pid > 0)
		kill_exec(t->pid);
	t->pid = 0;
	close_fds(c, t);
	t->phase = PH_IDLE;
}

static int watch(struct checker *c, struct target *t, int fd, __u32 events)
{
	struct epoll_event ev = {.events = events, .data.ptr = t};

	return epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static void rewatch(struct checker *c, struct target *t, __u32 events)
{
	struct epoll_event ev = {.events = events, .data.ptr = t};

	epoll_ctl(c->epfd, EPOLL_CTL_MOD, t->fd, &ev);
}

static void finish(struct checker *c, struct target *t, bool ok, __u64 now,
		   const char *what)
{
	int pid = t->pid;

	t->pid = 0;
	close_fds(c, t);
	if (pid > 0)
		kill_exec(pid);
	t->phase = PH_IDLE;
	probe_done(c, t, ok, now, "%s", what);
}

static void fail_errno(struct checker *c, struct target *t, __u64 now,
		       const char *op, int err)
{
	char why[RM_HEALTH_ERR_MAX];

	snprintf(why, sizeof(why), "%s: %s", op, strerror(err));
	finish(c, t, false, now, why);
}

static void start_socket(struct checker *c, struct target *t, __u64 now)
{
	bool udp = t->check.type == RM_CHECK_UDP;
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	char payload[RM_CHECK_STR_MAX];
	int len, err;

	t->fd = socket(t->sa.ss_family,
		       (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK |
			   SOCK_CLOEXEC,
		       0);
	if (t->fd < 0)
		return fail_errno(c, t, now, "socket", errno);
	/* closed by RST: a checker would otherwise leave a TIME_WAIT per
	 * check, thousands a minute */
	if (!udp)
		setsockopt(t->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	if (connect(t->fd, (struct sockaddr *)&t->sa, t->salen) &&
	    errno != EINPROGRESS)
		return fail_errno(c, t, now, "connect", errno);
	if (udp) {
		len = rm_check_unescape(t->check.payload, payload,
					sizeof(payload));
		if (len < 0)
			len = 0;
		if (send(t->fd, payload, len, 0) < 0)
			return fail_errno(c, t, now, "send", errno);
		t->phase = PH_RECV;
		err = watch(c, t, t->fd, EPOLLIN);
	} else {
		t->phase = PH_CONNECT;
		err = watch(c, t, t->fd, EPOLLOUT);
	}
	if (err)
		fail_errno(c, t, now, "epoll", -err);
}

int probe_init(struct checker *c)
{
	sigset_t none, dfl;
	int err;

	/* a command starts as under a service manager: nothing blocked (the
	 * checker blocks what its signalfd reads), every signal at its
	 * default (the checker ignores SIGPIPE; its own parent may have
	 * ignored more) */
	sigemptyset(&none);
	sigfillset(&dfl);
	err = posix_spawnattr_init(&c->spawn);
	if (!err)
		err = posix_spawnattr_setflags(&c->spawn,
					       POSIX_SPAWN_SETPGROUP |
						   POSIX_SPAWN_SETSIGMASK |
						   POSIX_SPAWN_SETSIGDEF);
	if (!err)
		err = posix_spawnattr_setpgroup(&c->spawn, 0);
	if (!err)
		err = posix_spawnattr_setsigmask(&c->spawn, &none);
	if (!err)
		err = posix_spawnattr_setsigdefault(&c->spawn, &dfl);
	return -err;
}

static void start_exec(struct checker *c, struct target *t, __u64 now)
{
	char e_node[64], e_svc[64], e_addr[96], e_port[32];
	char *argv[] = {t->check.cmd, NULL};
	char **env;
	size_t n = 0, i;
	pid_t pid;
	int err;

	while (environ[n])
		n++;
	env = calloc(n + 5, sizeof(*env));
	if (!env)
		return finish(c, t, false, now, "exec: out of memory");
	snprintf(e_node, sizeof(e_node), "RM_NODE=%s", t->name);
	snprintf(e_svc, sizeof(e_svc), "RM_SERVICE=%s", t->svc_name);
	snprintf(e_addr, sizeof(e_addr), "RM_ADDR=%s", t->addr_text);
	snprintf(e_port, sizeof(e_port), "RM_PORT=%u",
		 t->p.port ? t->p.port : t->svc_port);
	for (i = 0; i < n; i++)
		env[i] = environ[i];
	env[i++] = e_node;
	env[i++] = e_svc;
	env[i++] = e_addr;
	env[i++] = e_port;
	err = posix_spawn(&pid, t->check.cmd, NULL, &c->spawn, argv, env);
	free(env);
	if (err)
		return fail_errno(c, t, now, "exec", err);
	t->pid = pid;
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (t->pidfd < 0)
		return fail_errno(c, t, now, "pidfd_open", errno);
	t->phase = PH_EXEC;
	err = watch(c, t, t->pidfd, EPOLLIN);
	if (err)
		fail_errno(c, t, now, "epoll", -err);
}

void probe_start(struct checker *c, struct target *t, __u64 now)
{
	t->deadline_ms = now + t->p.timeout_ms;
	t->blen = 0;
	if (t->check.type == RM_CHECK_EXEC)
		return start_exec(c, t, now);
	if (!t->has_addr)
		return finish(c, t, false, now, "no address: node set --addr");
	start_socket(c, t, now);
}

static void http_send(struct checker *c, struct target *t, __u64 now)
{
	char req[RM_CHECK_STR_MAX * 2 + 160];
	int len;

	len = snprintf(req, sizeof(req),
		       "GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: ringhealth"
		       "\r\nConnection: close\r\n\r\n",
		       t->check.path[0] ? t->check.path : "/",
		       t->check.host[0] ? t->check.host : t->addr_text);
	/* a request this small fits any fresh socket's buffer */
	if (send(t->fd, req, len, MSG_NOSIGNAL) != len)
		return fail_errno(c, t, now, "send", errno ? errno : EIO);
	t->phase = PH_RECV;
	rewatch(c, t, EPOLLIN);
}

/* "HTTP/1.x NNN" at the start of buf: the status, or -1. */
static int http_status(const char *buf, int len)
{
	int st = 0;

	if (len < 12 || memcmp(buf, "HTTP/1.", 7) || buf[8] != ' ')
		return -1;
	for (int i = 9; i < 12; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return -1;
		st = st * 10 + buf[i] - '0';
	}
	return st;
}

static void http_recv(struct checker *c, struct target *t, __u64 now)
{
	char why[RM_HEALTH_ERR_MAX];
	ssize_t r;
	int st;

	r = recv(t->fd, t->buf + t->blen, sizeof(t->buf) - 1 - t->blen, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r < 0)
		return fail_errno(c, t, now, "recv", errno);
	t->blen += (int)r;
	if (t->blen < 12 && r > 0)
		return;
	st = http_status(t->buf, t->blen);
	if (st < 0)
		return finish(c, t, false, now,
			      r ? "http: not an HTTP reply"
				: "http: closed before a status");
	if (st == t->p.status)
		return finish(c, t, true, now, "");
	snprintf(why, sizeof(why), "http: status %d, want %u", st,
		 t->p.status);
	finish(c, t, false, now, why);
}

static void udp_recv(struct checker *c, struct target *t, __u64 now)
{
	char expect[RM_CHECK_STR_MAX];
	ssize_t r;
	int len;

	r = recv(t->fd, t->buf, sizeof(t->buf), 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r < 0) /* ECONNREFUSED: the node's port unreachable */
		return fail_errno(c, t, now, "udp", errno);
	len = rm_check_unescape(t->check.expect, expect, sizeof(expect));
	if (len > 0 && (r < len || memcmp(t->buf, expect, len)))
		return finish(c, t, false, now,
			      "udp: reply does not match --check-expect");
	finish(c, t, true, now, "");
}

static void exec_done(struct checker *c, struct target *t, __u64 now)
{
	char why[RM_HEALTH_ERR_MAX];
	siginfo_t si = {0};

	/* left unreaped (WNOWAIT): finish() kills what the command left
	 * behind in its group, then reaps it */
	if (waitid(P_PID, (id_t)t->pid, &si, WEXITED | WNOHANG | WNOWAIT) ||
	    !si.si_pid)
		return;
	if (si.si_code == CLD_EXITED && !si.si_status)
		return finish(c, t, true, now, "");
	if (si.si_code == CLD_EXITED)
		snprintf(why, sizeof(why), "exec: exit %d", si.si_status);
	else
		snprintf(why, sizeof(why), "exec: signal %d", si.si_status);
	finish(c, t, false, now, why);
}

void probe_event(struct checker *c, struct target *t, __u32 events,
		 __u64 now)
{
	int err = 0;
	socklen_t len = sizeof(err);

	switch (t->phase) {
	case PH_CONNECT:
		if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &err, &len))
			err = errno;
		if (err)
			return fail_errno(c, t, now, "connect", err);
		if (!(events & EPOLLOUT))
			return;
		if (t->check.type == RM_CHECK_TCP)
			return finish(c, t, true, now, "");
		return http_send(c, t, now);
	case PH_RECV:
		if (t->check.type == RM_CHECK_UDP)
			return udp_recv(c, t, now);
		return http_recv(c, t, now);
	case PH_EXEC:
		return exec_done(c, t, now);
	default:
		return;
	}
}

void probe_timeout(struct checker *c, struct target *t, __u64 now)
{
	char why[RM_HEALTH_ERR_MAX];
	static const char *const what[] = {
	    [PH_IDLE] = "?", [PH_CONNECT] = "connect", [PH_RECV] = "reply",
	    [PH_EXEC] = "exec"};

	snprintf(why, sizeof(why), "timeout: no %s in %u ms", what[t->phase],
		 t->p.timeout_ms);
	finish(c, t, false, now, why);
}
