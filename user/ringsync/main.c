// SPDX-License-Identifier: GPL-2.0
/*
 * ringsync: keep this director's live state equal to one etcd key.
 *
 * Loop: read the key (/v3/kv/range); a new mod_revision is applied by
 * `ringctl apply - --revision N` (the same code as an operator's apply:
 * parsed whole, compared, committed once, recorded in rm_applied), or
 * rejected, logged and counted if ringctl refuses it (the live state
 * stays as it was); then wait on a watch (/v3/watch) from the next
 * revision, at most --interval-ms, and read again. Every pass confirms
 * the applied revision is current (rm_applied.checked_ns) and, with
 * --bird-socket, announces or withdraws the VIP (announce.c).
 *
 * etcd unreachable: the live state is left alone (the director keeps
 * forwarding with the last good configuration), the outage is recorded
 * (rm_applied.source_down_ns) and the read retried with exponential
 * backoff up to --backoff-max-ms; the next successful read catches up to
 * the latest revision. SIGTERM/SIGINT: withdraw (with BIRD), exit 0.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "apply.h"
#include "ringsync.h"
#include "util.h"

volatile sig_atomic_t sync_stop;

static void on_signal(int sig)
{
	(void)sig;
	sync_stop = 1;
}

void sync_log(const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	printf("%02d:%02d:%02d.%03ld ringsync: ", tm.tm_hour, tm.tm_min,
	       tm.tm_sec, ts.tv_nsec / 1000000);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Read-modify-write of rm_applied (ringctl apply writes it too, but never
 * while we run: we wait for it). */
static void record(const struct sync_opts *o, bool reachable,
		   __u64 rejected_rev)
{
	static bool record_failed;
	struct rm_applied a;
	__u64 now = rm_realtime_ns();
	bool failed;

	rm_applied_read(o->pin_dir, &a);
	if (reachable) {
		a.checked_ns = now;
		a.source_down_ns = 0;
	} else if (!a.source_down_ns) {
		a.source_down_ns = now;
	}
	if (rejected_rev) {
		a.rejected++;
		a.rejected_revision = rejected_rev;
	}
	if (!*a.source)
		snprintf(a.source, sizeof(a.source), "%s %s", o->etcd.url,
			 o->key);
	failed = rm_applied_write(o->pin_dir, &a) != 0;
	if (failed && !record_failed) /* when it starts, not every pass */
		sync_log("cannot record in %s: %s", o->pin_dir, rm_errmsg());
	record_failed = failed;
}

/* One line about what `ringctl apply --json` did. */
static void log_applied(__u64 rev, const char *json, long ms)
{
	json_object *d = json_tokener_parse(json), *svcs, *v;
	char line[512];
	size_t off = 0;

	line[0] = 0;
	if (json_object_object_get_ex(d, "services", &svcs))
		for (size_t i = 0; i < json_object_array_length(svcs); i++) {
			json_object *s = json_object_array_get_idx(svcs, i);
			json_object *name, *ch, *share;

			json_object_object_get_ex(s, "service", &name);
			json_object_object_get_ex(s, "change", &ch);
			json_object_object_get_ex(s, "moved_share", &share);
			off += snprintf(line + off, off < sizeof(line)
						    ? sizeof(line) - off : 0,
					" %s %s (%.2f%% moved)",
					json_object_get_string(name),
					json_object_get_string(ch),
					json_object_get_double(share) * 100);
		}
	sync_log("revision %llu applied in %ld ms:%s",
		 (unsigned long long)rev, ms,
		 json_object_object_get_ex(d, "changed", &v) &&
			 json_object_get_boolean(v)
		     ? line
		     : " no change");
	json_object_put(d);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* 0 applied, 1 rejected (counted). */
static int apply(const struct sync_opts *o, const struct rm_etcd_kv *kv)
{
	char rev[24], source[RM_SOURCE_MAX];
	char *argv[] = {(char *)o->ringctl, "--pin-dir", (char *)o->pin_dir,
			"apply", "-", "--json", "--revision", rev,
			"--source", source, NULL};
	struct sync_buf out = {0}, err = {0};
	struct timespec t0;
	int rc;

	snprintf(rev, sizeof(rev), "%llu", (unsigned long long)kv->mod_revision);
	snprintf(source, sizeof(source), "%s %s", o->etcd.url, o->key);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = sync_run(argv, kv->value, kv->len, &out, &err);
	if (!rc) {
		log_applied(kv->mod_revision, out.p, ms_since(&t0));
	} else {
		sync_log("revision %llu rejected (ringctl apply exit %d), "
			 "keeping the last good configuration: %s",
			 (unsigned long long)kv->mod_revision, rc,
			 sync_last_line(&err));
		record(o, true, kv->mod_revision);
	}
	free(out.p);
	free(err.p);
	return !!rc;
}

static void nap(long ms)
{
	for (long t = 0; t < ms && !sync_stop; t += 50)
		usleep(50000);
}

static long grow(long backoff, long max)
{
	return backoff * 2 > max ? max : backoff * 2;
}

/* One line when etcd's condition changes (not one per retry): what
 * failed, in etcd.c's words (which name the fix when it is known). */
static void log_trouble(const char *what, int err, int *logged, __u64 last)
{
	if (err == *logged)
		return;
	*logged = err;
	sync_log("%s %s (%s): keeping revision %llu, retrying with backoff",
		 err == -EACCES ? "etcd refused" : "etcd unreachable at", what,
		 rm_etcd_errmsg(), (unsigned long long)last);
}

static int run(struct sync_opts *o)
{
	struct rm_applied a;
	__u64 last = 0;
	long backoff = 100;
	int read_err = 0, watch_err = 0;
	unsigned long renewals = 0;
	bool absent = false, announced = false, known = false;

	if (!rm_applied_read(o->pin_dir, &a))
		last = a.revision; /* applied before a restart: not again */
	sync_log("watching %s key %s for %s (last applied revision %llu)%s%s",
		 o->etcd.url, o->key, o->pin_dir, (unsigned long long)last,
		 o->etcd.user ? " as etcd user " : "",
		 o->etcd.user ? o->etcd.user : "");
	while (!sync_stop) {
		struct rm_etcd_kv kv;
		int err = rm_etcd_get(&o->etcd, o->key, &kv);

		if (o->etcd.renewals != renewals)
			sync_log("etcd auth token expired (etcd "
				 "--auth-token-ttl): renewed (%lu so far)",
				 o->etcd.renewals);
		renewals = o->etcd.renewals;
		if (err && err != -ENOENT) {
			log_trouble("the read", err, &read_err, last);
			record(o, false, 0);
			announce_update(o, &announced, &known);
			nap(backoff);
			backoff = grow(backoff, o->backoff_max_ms);
			continue;
		}
		if (read_err)
			sync_log("etcd reachable again (store revision %llu)",
				 (unsigned long long)kv.revision);
		read_err = 0;
		if (err == -ENOENT && !absent)
			sync_log("key %s absent: keeping revision %llu", o->key,
				 (unsigned long long)last);
		absent = err == -ENOENT;
		if (!err && kv.mod_revision != last) {
			apply(o, &kv);
			last = kv.mod_revision;
		}
		rm_etcd_kv_free(&kv);
		record(o, true, 0);
		announce_update(o, &announced, &known);
		err = rm_etcd_wait(&o->etcd, o->key, kv.revision + 1,
				   o->interval_ms, &sync_stop);
		if (!err || err == -ETIMEDOUT || err == -EINTR) {
			if (watch_err)
				sync_log("watch works again");
			watch_err = 0;
			backoff = 100;
			continue;
		}
		/* the read that follows tells whether etcd is still there */
		log_trouble("the watch", err, &watch_err, last);
		nap(backoff);
		backoff = grow(backoff, o->backoff_max_ms);
	}
	announce_withdraw(o);
	sync_log("stopped (SIGTERM)");
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringsync --etcd URL --key KEY [--pin-dir DIR]\n"
		"         [--cacert FILE] [--cert FILE] [--tls-key FILE]\n"
		"         [--user NAME --password-file FILE]\n"
		"         [--bird-socket SOCK --bird-protocol NAME] "
		"[--fresh-s S]\n"
		"         [--interval-ms 1000] [--backoff-max-ms 5000] "
		"[--timeout-ms 2000]\n"
		"         [--ringctl PATH] [--ringload PATH] [--birdc PATH]\n"
		"Applies every new revision of KEY with `ringctl apply`; "
		"announces the VIP\n"
		"through BIRD (birdc enable/disable NAME) only while this "
		"director can forward.\n");
}

/* ringctl and ringload beside our own binary, else from PATH. */
static const char *sibling(const char *name, char *buf, size_t len)
{
	char self[PATH_MAX - RM_NAME_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(buf, len, "%s/%s", self, name);
			if (!access(buf, X_OK))
				return buf;
		}
	}
	return name;
}

static char *read_secret(const char *path)
{
	static char pw[256];
	FILE *f = fopen(path, "r");

	if (!f || !fgets(pw, sizeof(pw), f)) {
		fprintf(stderr, "ringsync: cannot read --password-file %s\n",
			path);
		exit(RM_EXIT_USAGE);
	}
	fclose(f);
	pw[strcspn(pw, "\r\n")] = 0;
	return pw;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"etcd", required_argument, NULL, 'e'},
	    {"key", required_argument, NULL, 'k'},
	    {"pin-dir", required_argument, NULL, 'd'},
	    {"cacert", required_argument, NULL, 'C'},
	    {"cert", required_argument, NULL, 'c'},
	    {"tls-key", required_argument, NULL, 'K'},
	    {"user", required_argument, NULL, 'u'},
	    {"password-file", required_argument, NULL, 'p'},
	    {"bird-socket", required_argument, NULL, 's'},
	    {"bird-protocol", required_argument, NULL, 'P'},
	    {"fresh-s", required_argument, NULL, 'f'},
	    {"interval-ms", required_argument, NULL, 'i'},
	    {"backoff-max-ms", required_argument, NULL, 'b'},
	    {"timeout-ms", required_argument, NULL, 't'},
	    {"ringctl", required_argument, NULL, 'R'},
	    {"ringload", required_argument, NULL, 'L'},
	    {"birdc", required_argument, NULL, 'B'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	static char ctl[PATH_MAX], load[PATH_MAX];
	struct sync_opts o = {.pin_dir = RM_DEFAULT_PIN_DIR,
			      .birdc = "birdc",
			      .bird_protocol = "vip",
			      .interval_ms = 1000,
			      .backoff_max_ms = 5000,
			      .etcd.timeout_ms = 2000};
	struct sigaction sa = {.sa_handler = on_signal};
	__u32 v;
	int c;

	o.ringctl = sibling("ringctl", ctl, sizeof(ctl));
	o.ringload = sibling("ringload", load, sizeof(load));
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *name = c == 'f' ? "fresh-s" : c == 'i' ? "interval-ms"
				   : c == 'b' ? "backoff-max-ms" : "timeout-ms";

		switch (c) {
		case 'e': o.etcd.url = optarg; break;
		case 'k': o.key = optarg; break;
		case 'd': o.pin_dir = optarg; break;
		case 'C': o.etcd.cacert = optarg; break;
		case 'c': o.etcd.cert = optarg; break;
		case 'K': o.etcd.key = optarg; break;
		case 'u': o.etcd.user = optarg; break;
		case 'p': o.etcd.password = read_secret(optarg); break;
		case 's': o.bird_socket = optarg; break;
		case 'P': o.bird_protocol = optarg; break;
		case 'R': o.ringctl = optarg; break;
		case 'L': o.ringload = optarg; break;
		case 'B': o.birdc = optarg; break;
		case 'f':
		case 'i':
		case 'b':
		case 't':
			if (rm_parse_u32(optarg, c == 'f' ? 0 : 10, 3600000,
					 &v)) {
				fprintf(stderr, "ringsync: --%s '%s': expected "
						"a number\n",
					name, optarg);
				return RM_EXIT_USAGE;
			}
			if (c == 'f')
				o.fresh_s = v;
			else if (c == 'i')
				o.interval_ms = v;
			else if (c == 'b')
				o.backoff_max_ms = v;
			else
				o.etcd.timeout_ms = v;
			break;
		case 'h': usage(stdout); return RM_EXIT_OK;
		default: usage(stderr); return RM_EXIT_USAGE;
		}
	}
	if (optind != argc || !o.etcd.url || !o.key) {
		fprintf(stderr, "ringsync: --etcd URL and --key KEY are "
				"required (ringsync --help)\n");
		return RM_EXIT_USAGE;
	}
	if (!o.etcd.cert != !o.etcd.key || !o.etcd.user != !o.etcd.password) {
		fprintf(stderr, "ringsync: %s\n",
			!o.etcd.cert != !o.etcd.key
			    ? "--cert and --tls-key go together (a client "
			      "certificate and its key)"
			    : "--user and --password-file go together");
		return RM_EXIT_USAGE;
	}
	if (rm_etcd_global_init()) {
		fprintf(stderr, "ringsync: libcurl initialisation failed\n");
		return RM_EXIT_RUNTIME;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return run(&o);
}
