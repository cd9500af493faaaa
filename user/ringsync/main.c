// SPDX-License-Identifier: GPL-2.0
/*
 * ringsync: keep this director's live state equal to one etcd key.
 *
 * Loop: read the key (/v3/kv/range); a new mod_revision is applied by
 * `ringctl apply - --revision N --keep-local` (the same code as an
 * operator's apply, this director keeping its own outer sources:
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
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "apply.h"
#include "cli.h"
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
			"--source", source, "--keep-local", NULL};
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

/* The command line, as given (main() turns it into struct sync_opts). */
struct sync_cli {
	const char *etcd, *key, *pin_dir, *cacert, *cert, *tls_key, *user,
	    *password_file, *bird_socket, *bird_protocol, *ringctl, *ringload,
	    *birdc;
	struct cli_u32 fresh_s, interval_ms, backoff_max_ms, timeout_ms;
	bool help, version;
};

#define F(fld) offsetof(struct sync_cli, fld)
#define MS_OPT(fld, nm, dflt, what)                                          \
	{.name = nm, .type = CLI_UINT, .off = F(fld), .min = 10,              \
	 .max = 3600000, .arg = "MS", .def = dflt, .help = what}
#define PATH_OPT(fld, nm, what)                                              \
	{.name = nm, .type = CLI_STRING, .off = F(fld), .arg = "FILE",        \
	 .help = what}
static const struct cli_opt sync_opts_table[] = {
    {.name = "etcd", .type = CLI_STRING, .off = F(etcd), .arg = "URL",
     .flags = CLI_REQUIRED,
     .help = "etcd's client URL, http(s)://HOST:PORT"},
    {.name = "key", .type = CLI_STRING, .off = F(key), .arg = "KEY",
     .flags = CLI_REQUIRED,
     .help = "the etcd key holding this director's configuration document"},
    {.name = "pin-dir", .type = CLI_STRING, .off = F(pin_dir),
     .max = RM_PATH_MAX - RM_NAME_MAX - 1, .arg = "DIR",
     .def = RM_DEFAULT_PIN_DIR, .help = "the director's pinned state"},
    PATH_OPT(cacert, "cacert", "TLS: the CA bundle etcd's certificate is "
			       "verified with"),
    PATH_OPT(cert, "cert", "TLS: a client certificate (with --tls-key)"),
    PATH_OPT(tls_key, "tls-key",
	     "TLS: the client certificate's key (with --cert)"),
    {.name = "user", .type = CLI_STRING, .off = F(user), .arg = "NAME",
     .help = "etcd authentication: the user (with --password-file)"},
    PATH_OPT(password_file, "password-file",
	     "etcd authentication: a file whose first line is the password "
	     "(with --user)"),
    {.name = "bird-socket", .type = CLI_STRING, .off = F(bird_socket),
     .arg = "SOCK",
     .help = "announce the VIP through this BIRD only while this director "
	     "can forward"},
    {.name = "bird-protocol", .type = CLI_STRING, .off = F(bird_protocol),
     .arg = "NAME", .def = "vip",
     .help = "BIRD's static protocol holding the VIP (birdc enable/disable "
	     "NAME)"},
    {.name = "fresh-s", .type = CLI_UINT, .off = F(fresh_s), .min = 0,
     .max = 3600000, .arg = "S", .def = "0",
     .help = "withdraw the VIP when the applied revision was not confirmed "
	     "current for S seconds (0: never for an etcd outage)"},
    MS_OPT(interval_ms, "interval-ms", "1000",
	   "the longest wait between two reads of KEY"),
    MS_OPT(backoff_max_ms, "backoff-max-ms", "5000",
	   "the longest wait between two retries while etcd is unreachable"),
    MS_OPT(timeout_ms, "timeout-ms", "2000",
	   "one request to etcd, connecting included"),
    PATH_OPT(ringctl, "ringctl",
	     "the ringctl to apply with (default: the one beside ringsync, "
	     "else from PATH)"),
    PATH_OPT(ringload, "ringload",
	     "the ringload to check the director with (default: the one "
	     "beside ringsync, else from PATH)"),
    {.name = "birdc", .type = CLI_STRING, .off = F(birdc), .arg = "FILE",
     .def = "birdc", .help = "BIRD's client"},
    {0}};

static const struct cli_opt common_opts[] = {
    CLI_OPT_HELP(F(help), "program"),
    CLI_OPT_VERSION(F(version)),
    {0}};

static const struct cli_cmd sync_cmd[] = {
    {"", NULL,
     "apply every new revision of KEY with `ringctl apply`; announce the "
     "VIP through BIRD only while this director can forward",
     sync_opts_table, 0}};

static const struct cli_prog sync_prog = {
    .name = "ringsync",
    .global = common_opts,
    .cmds = CLI_CMDS(sync_cmd),
};

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
	static char ctl[PATH_MAX], load[PATH_MAX];
	struct sigaction sa = {.sa_handler = on_signal};
	struct sync_opts o = {0};
	struct sync_cli c = {0};
	int ret;

	ret = cli_daemon(&sync_prog, argc, argv, &c);
	if (ret >= 0)
		return ret;
	o.etcd = (struct rm_etcd_opts){.url = c.etcd,
				       .cacert = c.cacert,
				       .cert = c.cert,
				       .key = c.tls_key,
				       .user = c.user,
				       .timeout_ms = c.timeout_ms.val};
	o.key = c.key;
	o.pin_dir = c.pin_dir;
	o.bird_socket = c.bird_socket;
	o.bird_protocol = c.bird_protocol;
	o.birdc = c.birdc;
	o.fresh_s = c.fresh_s.val;
	o.interval_ms = c.interval_ms.val;
	o.backoff_max_ms = c.backoff_max_ms.val;
	o.ringctl =
	    c.ringctl ? c.ringctl : sibling("ringctl", ctl, sizeof(ctl));
	o.ringload =
	    c.ringload ? c.ringload : sibling("ringload", load, sizeof(load));
	if (!o.etcd.cert != !o.etcd.key || !o.etcd.user != !c.password_file) {
		fprintf(stderr, "ringsync: %s\n",
			!o.etcd.cert != !o.etcd.key
			    ? "--cert and --tls-key go together (a client "
			      "certificate and its key)"
			    : "--user and --password-file go together");
		return RM_EXIT_USAGE;
	}
	if (c.password_file)
		o.etcd.password = read_secret(c.password_file);
	if (rm_etcd_global_init(o.etcd.url, true)) {
		fprintf(stderr, "ringsync: %s\n", rm_etcd_errmsg());
		return RM_EXIT_RUNTIME;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return run(&o);
}
