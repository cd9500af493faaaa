/* SPDX-License-Identifier: GPL-2.0 */
/* A plain-HTTP (http://, no TLS) POST of one JSON body, for etcd's JSON
 * gateway: one connection, Connection: close, the answer read to the end.
 * It spares a short-lived command (ringctl publish) libcurl, which pulls
 * in some thirty libraries whose loading costs more than the whole
 * exchange; https:// and the streaming watch stay with libcurl (etcd.c). */
#ifndef RM_HTTP_PLAIN_H
#define RM_HTTP_PLAIN_H

#include <stdbool.h>
#include <stddef.h>

/* Answers above this are refused (a configuration document is far
 * smaller). */
#ifndef RM_HTTP_MAX_ANSWER
#define RM_HTTP_MAX_ANSWER (64u << 20)
#endif

/* True for a URL this client takes: http://HOST[:PORT], HOST a name, an
 * IPv4 address or [IPv6]. */
bool rm_http_plain_url(const char *url);

/* POST body to url (no path) + path, with "Authorization: auth" when auth
 * is not NULL, within timeout_ms (connect, send and the whole answer).
 * 0: *code is the HTTP status and *answer the body (malloc'd, NUL-ended,
 * de-chunked). Else a negative errno and why (curl's kind of words:
 * "Failed to connect to HOST port PORT: Connection refused"). */
int rm_http_post(const char *url, const char *path, const char *auth,
		 const char *body, long timeout_ms, long *code, char **answer,
		 char *why, size_t why_len);

/* The answer's status and body from the raw bytes of an HTTP/1.x answer
 * (Content-Length, chunked or to the end): 0, or -EPROTO (malformed) or
 * -ENOMEM. *body is malloc'd and NUL-ended. */
int rm_http_parse_answer(const char *raw, size_t len, long *code,
			 char **body, size_t *body_len);

#endif /* RM_HTTP_PLAIN_H */
