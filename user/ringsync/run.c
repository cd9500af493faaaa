// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
/* Run a helper program (ringctl, ringload, birdc) with some input and
 * collect what it prints, bounded in size and time. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ringsync.h"

#define OUT_MAX (256 * 1024)
#define RUN_TIMEOUT_MS 30000

static void drain(int fd, struct sync_buf *b, bool *open)
{
	char tmp[4096];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n <= 0) {
		*open = false;
		return;
	}
	if (b->n + n >= OUT_MAX)
		return; /* keep the beginning: it says what happened */
	memcpy(b->p + b->n, tmp, n);
	b->n += n;
	b->p[b->n] = 0;
}

static long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sync_run(char *const argv[], const char *in, size_t in_len,
	     struct sync_buf *out, struct sync_buf *err)
{
	int pin[2], pout[2], perr[2], status = 0;
	bool o_open = true, e_open = true;
	size_t off = 0;
	long deadline = ms_now() + RUN_TIMEOUT_MS;
	pid_t pid;

	out->n = err->n = 0;
	out->p = out->p ? out->p : malloc(OUT_MAX + 1);
	err->p = err->p ? err->p : malloc(OUT_MAX + 1);
	if (!out->p || !err->p)
		return -ENOMEM;
	out->p[0] = err->p[0] = 0;
	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) ||
	    pipe2(perr, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	/* the helpers read all their input before they print */
	while (off < in_len) {
		ssize_t n = write(pin[1], in + off, in_len - off);

		if (n <= 0)
			break;
		off += n;
	}
	close(pin[1]);
	while ((o_open || e_open) && ms_now() < deadline) {
		struct pollfd p[2] = {{pout[0], POLLIN, 0}, {perr[0], POLLIN, 0}};

		if (poll(p, 2, 200) < 0 && errno != EINTR)
			break;
		if (o_open && p[0].revents)
			drain(pout[0], out, &o_open);
		if (e_open && p[1].revents)
			drain(perr[0], err, &e_open);
	}
	close(pout[0]);
	close(perr[0]);
	if (o_open || e_open)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* Last line of text without its newline, for one-line logs. */
const char *sync_last_line(struct sync_buf *b)
{
	char *p;

	if (!b->p || !b->n)
		return "";
	while (b->n && (b->p[b->n - 1] == '\n' || b->p[b->n - 1] == '\r'))
		b->p[--b->n] = 0;
	p = strrchr(b->p, '\n');
	return p ? p + 1 : b->p;
}
