// SPDX-License-Identifier: GPL-2.0
/*
 * ringexport: serves the director's metrics (user/lib/metrics.c) over
 * HTTP for a Prometheus scrape: GET /metrics. libmicrohttpd does the
 * HTTP; every scrape reads the pinned state afresh, so the exporter holds
 * nothing and can be restarted at any time.
 *
 * Usage: ringexport --listen ADDR:PORT [--pin-dir DIR] [-v] (the table
 * below, user/lib/cli.h). Logs one line per event on stderr (start,
 * stop, a failed scrape); exits 0 on SIGTERM/SIGINT, 1 when it cannot listen, 2 on usage errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <microhttpd.h>
#include "cli.h"
#include "decap_stats.h"
#include "metrics.h"
#include "state.h"
#include "util.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct export_opts {
	const char *listen, *pin_dir, *decap_dir;
	bool verbose, help, version;
};

#define F(fld) offsetof(struct export_opts, fld)
static const struct cli_opt export_opts[] = {
    {.name = "listen", .type = CLI_STRING, .off = F(listen), .max = 63 + 6,
     .arg = "ADDR:PORT", .flags = CLI_REQUIRED,
     .help = "where to serve: IPv4:PORT, [IPv6]:PORT, or :PORT for all "
	     "addresses"},
    {.name = "pin-dir", .type = CLI_STRING, .off = F(pin_dir),
     .max = RM_PATH_MAX - RM_NAME_MAX - 1, .arg = "DIR",
     .def = RM_DEFAULT_PIN_DIR,
     .help = "the director's pinned state to read at every scrape"},
    {.name = "decap-pin-dir", .type = CLI_STRING, .off = F(decap_dir),
     .max = RM_PATH_MAX - RM_NAME_MAX - 1, .arg = "DIR",
     .help = "also serve the node-side decapsulator's counters pinned in "
	     "DIR (ringload decap's, e.g. " RM_DECAP_PIN_DIR "): "
	     "ringmaster_decap_packets_total by outcome"},
    {0}};

static const struct cli_opt common_opts[] = {
    {.name = "verbose", .short_name = 'v', .type = CLI_FLAG, .off = F(verbose),
     .help = "accepted for symmetry with the other tools (nothing more to "
	     "say yet)"},
    CLI_OPT_HELP(F(help), "program"),
    CLI_OPT_VERSION(F(version)),
    {0}};

static const struct cli_cmd export_cmd[] = {
    {"", NULL,
     "serve GET /metrics (Prometheus text format) for the director's "
     "pinned state; runs until SIGTERM",
     export_opts, 0}};

static const struct cli_prog export_prog = {
    .name = "ringexport",
    .global = common_opts,
    .cmds = CLI_CMDS(export_cmd),
};

static const char *pin_dir = RM_DEFAULT_PIN_DIR;
static const char *decap_dir; /* NULL: no decapsulator metrics */
static volatile sig_atomic_t stop;
static bool last_failed; /* log a failing scrape once, not every time */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int respond(struct MHD_Connection *c, unsigned int code,
		   const char *type, char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    len, body, MHD_RESPMEM_MUST_FREE);
	int ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* The metrics, or ringmaster_up 0 when the state cannot be read (no
 * state yet, detached and purged): the scrape itself still succeeds, so
 * Prometheus records the director as down rather than the exporter. */
static int serve_metrics(struct MHD_Connection *c)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);

	if (!f)
		return MHD_NO;
	if (rm_metrics_write(f, pin_dir)) {
		if (!last_failed)
			fprintf(stderr, "ringexport: cannot read the state: "
					"%s (serving ringmaster_up 0)\n",
				rm_errmsg());
		last_failed = true;
		rewind(f);
		rm_metrics_write_down(f);
	} else if (last_failed) {
		fprintf(stderr, "ringexport: state readable again\n");
		last_failed = false;
	}
	if (decap_dir)
		rm_metrics_decap_write(f, decap_dir);
	if (fclose(f)) {
		free(body);
		return MHD_NO;
	}
	return respond(c, MHD_HTTP_OK, CONTENT_TYPE, body, len);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_len, void **ctx)
{
	static const char index[] =
	    "<html><head><title>ringexport</title></head><body>"
	    "<a href=\"/metrics\">/metrics</a></body></html>\n";

	(void)cls, (void)version, (void)upload, (void)upload_len, (void)ctx;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return respond(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
			       strdup("GET only\n"), 9);
	if (!strcmp(url, "/metrics"))
		return serve_metrics(c);
	if (!strcmp(url, "/"))
		return respond(c, MHD_HTTP_OK, "text/html", strdup(index),
			       sizeof(index) - 1);
	return respond(c, MHD_HTTP_NOT_FOUND, "text/plain",
		       strdup("not found: try /metrics\n"), 24);
}

/* "ADDR:PORT", "[V6ADDR]:PORT" or ":PORT" (all addresses). */
static int parse_listen(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	const char *colon = strrchr(s, ':');
	char host[64];
	size_t hl;
	__u32 port;

	if (!colon || rm_parse_u32(colon + 1, 1, 65535, &port))
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	memset(ss, 0, sizeof(*ss));
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		host[hl - 1] = 0;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		return inet_pton(AF_INET6, host + 1, &a6->sin6_addr) == 1
			   ? 0
			   : -EINVAL;
	}
	a4->sin_family = AF_INET;
	a4->sin_port = htons(port);
	if (!hl)
		return 0; /* INADDR_ANY */
	return inet_pton(AF_INET, host, &a4->sin_addr) == 1 ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	struct export_opts o = {0};
	struct sockaddr_storage ss;
	const char *listen;
	struct MHD_Daemon *d;
	struct sigaction sa;
	unsigned int flags;
	sigset_t set, old;
	int ret;

	ret = cli_daemon(&export_prog, argc, argv, &o);
	if (ret >= 0)
		return ret;
	listen = o.listen;
	pin_dir = o.pin_dir;
	decap_dir = o.decap_dir;
	if (parse_listen(listen, &ss)) {
		fprintf(stderr,
			"ringexport: --listen '%s': expected ADDR:PORT, "
			"[V6ADDR]:PORT or :PORT\n",
			listen);
		return RM_EXIT_USAGE;
	}
	/* signals are taken by the main thread only, in sigsuspend */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, &old);

	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	d = MHD_start_daemon(flags, 0, NULL, NULL, handle, NULL,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
			     MHD_OPTION_CONNECTION_TIMEOUT, 10u,
			     MHD_OPTION_END);
	if (!d) {
		fprintf(stderr,
			"ringexport: cannot listen on %s: %s (address in use, "
			"or not one of this host's?)\n",
			listen, strerror(errno));
		return RM_EXIT_RUNTIME;
	}
	fprintf(stderr, "ringexport: serving /metrics on %s for %s%s%s\n",
		listen, pin_dir, decap_dir ? " and the decapsulator's " : "",
		decap_dir ? decap_dir : "");
	while (!stop)
		sigsuspend(&old);
	MHD_stop_daemon(d);
	fprintf(stderr, "ringexport: stopped\n");
	return RM_EXIT_OK;
}
