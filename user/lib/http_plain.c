// SPDX-License-Identifier: GPL-2.0
/* A plain-HTTP POST for etcd's JSON gateway: see http_plain.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include "http_plain.h"

#define HOST_MAX 256

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* host and port of http://HOST[:PORT]; 0 or -EINVAL */
static int split_url(const char *url, char *host, char *port)
{
	const char *h, *end, *colon = NULL;
	size_t n;

	if (strncmp(url, "http://", 7))
		return -EINVAL;
	h = url + 7;
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end)
			return -EINVAL;
		n = (size_t)(end - h - 1);
		h++;
		colon = end[1] == ':' ? end + 1 : NULL;
		if (end[1] && !colon)
			return -EINVAL;
	} else {
		end = h + strcspn(h, ":/");
		n = (size_t)(end - h);
		colon = *end == ':' ? end : NULL;
		if (*end && !colon)
			return -EINVAL;
	}
	if (!n || n >= HOST_MAX)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = 0;
	if (!colon) {
		strcpy(port, "80");
		return 0;
	}
	n = strlen(colon + 1);
	if (!n || n > 5 || strspn(colon + 1, "0123456789") != n)
		return -EINVAL;
	memcpy(port, colon + 1, n + 1);
	return 0;
}

bool rm_http_plain_url(const char *url)
{
	char host[HOST_MAX], port[8];

	return url && !split_url(url, host, port);
}

/* Wait for ev on fd until the deadline: 0, or -ETIMEDOUT. */
static int wait_fd(int fd, short ev, long long deadline)
{
	struct pollfd p = {.fd = fd, .events = ev};
	long long left;
	int rc;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(&p, 1, (int)(left > 60000 ? 60000 : left));
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR)
			return -errno;
	}
}

static int connect_to(const char *host, const char *port, long long deadline,
		      char *why, size_t why_len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *a;
	int fd = -1, err = -EHOSTUNREACH, soerr, rc;
	socklen_t sl = sizeof(soerr);

	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		snprintf(why, why_len, "Could not resolve host: %s (%s)", host,
			 gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	for (a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK |
					      SOCK_CLOEXEC,
			    a->ai_protocol);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		if (!connect(fd, a->ai_addr, a->ai_addrlen) ||
		    errno == EINPROGRESS) {
			err = wait_fd(fd, POLLOUT, deadline);
			if (!err && !getsockopt(fd, SOL_SOCKET, SO_ERROR,
						&soerr, &sl))
				err = -soerr;
		} else {
			err = -errno;
		}
		if (!err)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(why, why_len, "Failed to connect to %s port %s: %s",
			 host, port,
			 err == -ETIMEDOUT ? "Connection timed out"
					   : strerror(-err));
		return err == -ETIMEDOUT ? err : -EHOSTUNREACH;
	}
	return fd;
}

static int send_all(int fd, const char *p, size_t n, long long deadline)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			w = wait_fd(fd, POLLOUT, deadline);
			if (w)
				return (int)w;
			continue;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Everything the server sends until it closes (Connection: close). */
static int recv_all(int fd, long long deadline, char **out, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap), *g;
	int err;

	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n + 1 == cap) {
			if (cap >= RM_HTTP_MAX_ANSWER) {
				free(b);
				return -EFBIG;
			}
			g = realloc(b, cap * 2);
			if (!g) {
				free(b);
				return -ENOMEM;
			}
			b = g;
			cap *= 2;
		}
		r = recv(fd, b + n, cap - n - 1, 0);
		if (r > 0) {
			n += (size_t)r;
			continue;
		}
		if (!r)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			err = -errno;
			free(b);
			return err;
		}
		err = wait_fd(fd, POLLIN, deadline);
		if (err) {
			free(b);
			return err;
		}
	}
	b[n] = 0;
	*out = b;
	*len = n;
	return 0;
}

/* The value of header name in head (lines ending CRLF), or NULL. */
static const char *header(const char *head, const char *name, size_t *vlen)
{
	size_t nl = strlen(name);

	for (const char *l = strstr(head, "\r\n"); l && l[2];
	     l = strstr(l + 2, "\r\n")) {
		const char *h = l + 2, *v, *e = strstr(h, "\r\n");

		if (!e)
			break;
		if ((size_t)(e - h) > nl && !strncasecmp(h, name, nl) &&
		    h[nl] == ':') {
			v = h + nl + 1;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			*vlen = (size_t)(e - v);
			return v;
		}
	}
	return NULL;
}

/* De-chunk p[0, n) into out (at most n bytes): 0 or -EPROTO. */
static int dechunk(const char *p, size_t n, char *out, size_t *out_len)
{
	size_t i = 0, o = 0;

	for (;;) {
		unsigned long long sz = 0;
		size_t d = 0;

		while (i + d < n && strchr("0123456789abcdefABCDEF", p[i + d]) &&
		       p[i + d]) {
			char c = p[i + d];

			if (sz > RM_HTTP_MAX_ANSWER)
				return -EPROTO;
			sz = sz * 16 + (unsigned)(c <= '9'   ? c - '0'
						  : c <= 'F' ? c - 'A' + 10
							     : c - 'a' + 10);
			d++;
		}
		if (!d)
			return -EPROTO;
		i += d;
		/* chunk extensions up to the line's end */
		while (i + 1 < n && !(p[i] == '\r' && p[i + 1] == '\n'))
			i++;
		if (i + 1 >= n)
			return -EPROTO;
		i += 2;
		if (!sz)
			break; /* trailers, if any, are not needed */
		if (sz > n - i || n - i - sz < 2 || p[i + sz] != '\r' ||
		    p[i + sz + 1] != '\n')
			return -EPROTO;
		memcpy(out + o, p + i, sz);
		o += sz;
		i += sz + 2;
	}
	*out_len = o;
	return 0;
}

int rm_http_parse_answer(const char *raw, size_t len, long *code,
			 char **body, size_t *body_len)
{
	const char *end, *v, *p;
	size_t hlen, vlen, n;
	char *head, *out;
	int major, minor, c, err = 0;

	*body = NULL;
	*body_len = 0;
	if (memchr(raw, 0, len))
		return -EPROTO;
	end = strstr(raw, "\r\n\r\n");
	if (!end || sscanf(raw, "HTTP/%d.%d %3d", &major, &minor, &c) != 3 ||
	    major != 1 || c < 100 || c > 599)
		return -EPROTO;
	hlen = (size_t)(end - raw) + 2; /* through the last header's CRLF */
	head = strndup(raw, hlen);
	if (!head)
		return -ENOMEM;
	p = end + 4;
	n = len - (size_t)(p - raw);
	out = malloc(n + 1);
	if (!out) {
		free(head);
		return -ENOMEM;
	}
	if ((v = header(head, "Transfer-Encoding", &vlen)) && vlen >= 7 &&
	    !strncasecmp(v + vlen - 7, "chunked", 7)) {
		err = dechunk(p, n, out, body_len);
	} else if ((v = header(head, "Content-Length", &vlen))) {
		char *e;
		unsigned long long cl = strtoull(v, &e, 10);

		if (e == v || cl > n)
			err = -EPROTO;
		else
			*body_len = (size_t)cl;
		if (!err)
			memcpy(out, p, *body_len);
	} else {
		memcpy(out, p, n);
		*body_len = n;
	}
	free(head);
	if (err) {
		free(out);
		*body_len = 0;
		return err;
	}
	out[*body_len] = 0;
	*code = c;
	*body = out;
	return 0;
}

int rm_http_post(const char *url, const char *path, const char *auth,
		 const char *body, long timeout_ms, long *code, char **answer,
		 char *why, size_t why_len)
{
	long long t0 = now_ms(), deadline = t0 + (timeout_ms > 0 ? timeout_ms
								 : 2000);
	char host[HOST_MAX], port[8], *req = NULL, *raw = NULL;
	size_t blen = strlen(body), rawlen = 0, alen;
	int fd, err, n;

	*answer = NULL;
	why[0] = 0;
	if (split_url(url, host, port)) {
		snprintf(why, why_len, "not an http://HOST[:PORT] URL");
		return -EINVAL;
	}
	fd = connect_to(host, port, deadline, why, why_len);
	if (fd < 0)
		return fd;
	n = asprintf(&req,
		     "POST %s HTTP/1.1\r\nHost: %s%s%s%s%s\r\n"
		     "Content-Type: application/json\r\n%s%s%s"
		     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		     path, strchr(host, ':') ? "[" : "", host,
		     strchr(host, ':') ? "]" : "", strcmp(port, "80") ? ":" : "",
		     strcmp(port, "80") ? port : "", auth ? "Authorization: " : "",
		     auth ? auth : "", auth ? "\r\n" : "", blen, body);
	if (n < 0) {
		close(fd);
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	err = send_all(fd, req, (size_t)n, deadline);
	if (!err)
		err = recv_all(fd, deadline, &raw, &rawlen);
	close(fd);
	free(req);
	if (err == -ETIMEDOUT)
		snprintf(why, why_len, "Operation timed out after %lld "
			 "milliseconds", now_ms() - t0);
	else if (err == -EFBIG)
		snprintf(why, why_len, "answer larger than %u bytes",
			 RM_HTTP_MAX_ANSWER);
	else if (err)
		snprintf(why, why_len, "%s", strerror(-err));
	if (!err && !rawlen) {
		err = -ECONNRESET;
		snprintf(why, why_len, "Empty reply from server");
	} else if (!err) {
		err = rm_http_parse_answer(raw, rawlen, code, answer, &alen);
		if (err)
			snprintf(why, why_len, "%s",
				 err == -ENOMEM ? "out of memory"
						: "malformed HTTP answer");
	}
	free(raw);
	return err;
}
