// SPDX-License-Identifier: GPL-2.0
/*
 * ringhealth: checks every node of every service that has a check and
 * takes failing nodes out of the ring and back, through the same locked
 * ring swap as ringctl. It changes only a node's health, never the
 * operator's state (health.h has the rules).
 *
 * One event loop: probes run on non-blocking sockets and pidfds in one
 * epoll set, each with its own deadline, so one slow node delays no
 * other. Every second the checker rereads the live state (services,
 * nodes, checks: it follows ringctl's changes and a re-attached
 * director); results are published in one commit at most every
 * PUBLISH_MS, as soon as something a reader sees has changed.
 *
 * On SIGTERM/SIGINT it stops probing and exits 0, leaving every node's
 * health as it was last published: a node out stays out until a checker
 * runs again (its first result decides at once) or the check is removed.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "history.h"
#include "ringhealth.h"
#include "state.h"
#include "util.h"

#define RECONCILE_MS 1000
#define PUBLISH_MS 50
#define MAX_EVENTS 256

__u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void hlog(const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%02d:%02d:%02d.%03ld ringhealth: ", tm.tm_hour,
		tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Jitter: +-10% of the interval, so checks that start together drift
 * apart instead of firing in bursts. */
static __u64 jitter(struct checker *c, __u32 interval_ms)
{
	__u64 span = interval_ms / 5 + 1;

	return rm_splitmix64(&c->seed) % span;
}

/* One line per transition: service, node, old -> new, why. */
static void log_transition(const struct target *t, __u32 before, bool ok)
{
	const char *damped = (t->hc.flags & RM_HEALTH_F_DAMPED)
				 ? "; damped: flapping, held out until it calms"
				 : "";

	if (ok)
		hlog("%s %s: %s -> %s (check passed%s%s)", t->svc_name, t->name,
		     rm_health_state_name(before),
		     rm_health_state_name(t->hc.state),
		     before == RM_HEALTH_UNHEALTHY ? ", rise reached" : "",
		     damped);
	else
		hlog("%s %s: %s -> %s (%s; %s%s)", t->svc_name, t->name,
		     rm_health_state_name(before),
		     rm_health_state_name(t->hc.state), t->err,
		     t->hc.state == RM_HEALTH_FAILING ? "counting to fall"
		     : before == RM_HEALTH_UNCHECKED  ? "first result"
						      : "fall reached",
		     damped);
}

void probe_done(struct checker *c, struct target *t, bool ok, __u64 now,
		const char *fmt, ...)
{
	__u32 before = t->hc.state;
	enum rm_hc_change ch;
	char err[RM_HEALTH_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, sizeof(err), fmt, ap);
	va_end(ap);
	c->cnt[RM_HC_CHECKS]++;
	if (!ok)
		c->cnt[RM_HC_CHECKS_FAILED]++;
	if (!ok && strcmp(err, t->err)) {
		snprintf(t->err, sizeof(t->err), "%s", err);
		t->dirty = true;
	}
	ch = rm_hc_result(&t->hc, &t->p, ok, now);
	if (ch != RM_HC_SAME || !t->checked)
		t->dirty = true;
	if (ch == RM_HC_STATE) {
		c->cnt[RM_HC_TRANSITIONS]++;
		log_transition(t, before, ok);
	}
	if (c->verbose)
		hlog("%s %s: %s%s%s (%s, count %u)", t->svc_name, t->name,
		     ok ? "ok" : "FAILED", ok ? "" : ": ", ok ? "" : err,
		     rm_health_state_name(t->hc.state), t->hc.count);
	t->checked = true;
	/* next from when it was due, not from now: no drift */
	t->next_ms = t->due_ms + t->p.interval_ms - t->p.interval_ms / 10 +
		     jitter(c, t->p.interval_ms);
	if (t->next_ms < now)
		t->next_ms = now;
}

/* ---- the targets: follow the live state ------------------------------ */

static struct target *find_target(struct checker *c, __u32 svc, __u32 slot,
				  const char *name)
{
	struct target *t = slot < RM_MAX_NODES ? c->by_slot[slot] : NULL;

	if (t && t->svc == svc && !strncmp(t->name, name, RM_NAME_MAX))
		return t;
	return NULL;
}

static void set_addr(struct target *t, const struct rm_node *n, __u16 port)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)&t->sa;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&t->sa;

	memset(&t->sa, 0, sizeof(t->sa));
	t->has_addr = n->addr_family == RM_FAMILY_V4 ||
		      n->addr_family == RM_FAMILY_V6;
	t->addr_text[0] = '\0';
	if (!t->has_addr)
		return;
	rm_format_addr(n->addr, (__u8)n->addr_family, t->addr_text,
		       sizeof(t->addr_text));
	if (n->addr_family == RM_FAMILY_V4) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		in4->sin_addr.s_addr = n->addr[0];
		t->salen = sizeof(*in4);
	} else {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		memcpy(&in6->sin6_addr, n->addr, 16);
		t->salen = sizeof(*in6);
	}
}

static struct target *target_new(struct checker *c)
{
	struct target *t, **grown;

	if (c->n == c->cap) {
		__u32 cap = c->cap ? 2 * c->cap : 64;

		grown = realloc(c->t, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		c->t = grown;
		c->cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->fd = t->pidfd = -1;
	c->t[c->n++] = t;
	return t;
}

/* Bring the targets in line with snapshot s. */
static void reconcile(struct checker *c, const struct rm_snap *s, __u64 now)
{
	__u32 i, kept = 0;

	for (i = 0; i < c->n; i++)
		c->t[i]->seen = false;
	for (__u32 slot = 0; slot < RM_MAX_NODES; slot++) {
		const struct rm_node *n = &s->node[slot];
		const struct rm_svc_meta *m;
		struct rm_hc_params p;
		struct target *t;
		__u16 port;

		if (n->state == RM_NODE_FREE || n->svc_id >= RM_MAX_SERVICES)
			continue;
		m = &s->svc[n->svc_id];
		if (!m->in_use || m->check.type == RM_CHECK_NONE)
			continue;
		rm_check_params(&m->check, &p);
		port = p.port ? p.port : ntohs(m->key.port);
		t = find_target(c, n->svc_id, slot, n->name);
		if (t && memcmp(&t->check, &m->check, sizeof(m->check))) {
			/* a new check: its first result decides again */
			probe_abort(c, t);
			memset(&t->hc, 0, sizeof(t->hc));
			t->err[0] = '\0'; /* the old check's failure */
			t->checked = false;
			t->next_ms = now;
		}
		if (!t) {
			t = target_new(c);
			if (!t) {
				hlog("out of memory: %s %s not checked",
				     m->name, n->name);
				continue;
			}
			t->svc = n->svc_id;
			t->slot = slot;
			c->by_slot[slot] = t;
			snprintf(t->name, sizeof(t->name), "%.*s", RM_NAME_MAX - 1,
				 n->name);
			/* first checks spread over one interval */
			t->next_ms = now + rm_splitmix64(&c->seed) %
						(p.interval_ms / 2 + 1);
		}
		snprintf(t->svc_name, sizeof(t->svc_name), "%.*s",
			 RM_NAME_MAX - 1, m->name);
		t->check = m->check;
		t->p = p;
		t->svc_port = ntohs(m->key.port);
		if (!n->addr_family && m->check.type != RM_CHECK_EXEC &&
		    !t->noaddr_logged)
			hlog("%s %s: no address to check (ringctl node set %s "
			     "%s --addr ADDR)",
			     m->name, n->name, m->name, n->name);
		t->noaddr_logged = !n->addr_family;
		set_addr(t, n, port);
		t->seen = true;
	}
	for (i = 0; i < c->n; i++) {
		struct target *t = c->t[i];

		if (t->seen) {
			c->t[kept++] = t;
			continue;
		}
		if (c->by_slot[t->slot] == t)
			c->by_slot[t->slot] = NULL;
		probe_abort(c, t);
		free(t);
	}
	c->n = kept;
	c->cnt[RM_HC_TARGETS] = kept;
}

/* ---- publishing: the verdicts, through the locked swap ---------------- */

static __u64 wall_s(__u64 mono_ms, __u64 now)
{
	time_t t = time(NULL);

	return (__u64)t - (now - mono_ms) / 1000;
}

/* What the verdicts of one publish moved in or out of a ring, for the
 * change log: "web a out (unhealthy), web b in (healthy)". */
static char ring_moves[RM_HISTORY_WHAT];

static void note_ring_move(const char *svc, const char *node, bool out,
			   const char *health)
{
	size_t len = strlen(ring_moves);

	snprintf(ring_moves + len, sizeof(ring_moves) - len, "%s%s %s %s (%s)",
		 len ? ", " : "", svc, node, out ? "out" : "in", health);
}

/* The health every node of s should have: targets' states, fail-open. */
static bool verdicts(struct checker *c, const struct rm_snap *old,
		     struct rm_snap *new, __u64 now)
{
	static struct rm_hc_member m[RM_MAX_NODES];
	static struct target *tt[RM_MAX_NODES];
	static __u32 slot[RM_MAX_NODES];
	bool changed = false;

	ring_moves[0] = '\0';
	for (__u32 svc = 0; svc < RM_MAX_SERVICES; svc++) {
		const struct rm_svc_meta *meta = &new->svc[svc];
		__u32 n = 0, good, total;
		struct rm_hc_params p;
		bool panic;

		if (!meta->in_use)
			continue;
		rm_check_params(&meta->check, &p);
		for (__u32 i = 0; i < RM_MAX_NODES; i++) {
			const struct rm_node *nd = &new->node[i];
			struct target *t;

			if (nd->state == RM_NODE_FREE || nd->svc_id != svc)
				continue;
			t = meta->check.type == RM_CHECK_NONE
				? NULL
				: find_target(c, svc, i, nd->name);
			tt[n] = t && t->checked ? t : NULL;
			slot[n] = i;
			/* not checked yet: as published (a restart changes
			 * nothing until the first result) */
			m[n].health = tt[n] ? tt[n]->hc.state
				      : t   ? nd->health.state
					    : RM_HEALTH_UNCHECKED;
			m[n].eligible = nd->state == RM_NODE_ACTIVE;
			n++;
		}
		panic = rm_hc_verdicts(m, n, p.panic_pct, &good, &total);
		if (panic != c->panic[svc]) {
			if (panic) {
				c->cnt[RM_HC_FAIL_OPEN]++;
				hlog("%s: FAIL-OPEN: only %u of %u active nodes "
				     "healthy, fewer than %u%%: every active "
				     "node stays in the ring, unhealthy ones "
				     "included",
				     meta->name, good, total, p.panic_pct);
			} else {
				hlog("%s: fail-open over: %u of %u active nodes "
				     "healthy (panic share %u%%)",
				     meta->name, good, total, p.panic_pct);
			}
			c->panic[svc] = panic;
		}
		for (__u32 k = 0; k < n; k++) {
			const struct rm_node *o = &old->node[slot[k]];
			struct rm_node_health h = {0};
			struct target *t = tt[k];

			if (meta->check.type != RM_CHECK_NONE && !t) {
				h = o->health; /* not checked yet */
				h.out = m[k].out;
			} else if (t) {
				h.state = t->hc.state;
				h.out = m[k].out;
				h.count = t->hc.count;
				h.flags = t->hc.flags & RM_HEALTH_F_DAMPED;
				if (panic && h.state == RM_HEALTH_UNHEALTHY &&
				    !h.out)
					h.flags |= RM_HEALTH_F_PANIC;
				h.since = wall_s(t->hc.since_ms, now);
				/* the same state as published keeps its time */
				if (o->health.state == h.state && o->health.since &&
				    h.since + 2 >= o->health.since &&
				    h.since <= o->health.since + 2)
					h.since = o->health.since;
				/* the last failure, healthy or not */
				snprintf(h.err, sizeof(h.err), "%s", t->err);
			}
			if (!memcmp(&h, &o->health, sizeof(h)))
				continue;
			if (h.out != o->health.out)
				c->cnt[h.out ? RM_HC_RING_OUT : RM_HC_RING_IN]++;
			if (h.out != o->health.out) {
				hlog("%s %s: %s the ring (health %s)", meta->name,
				     o->name, h.out ? "out of" : "back in",
				     rm_health_state_name(h.state));
				note_ring_move(meta->name, o->name, h.out,
					       rm_health_state_name(h.state));
			}
			rm_snap_node_health(new, slot[k], &h);
			changed = true;
		}
	}
	return changed;
}

static int publish(struct checker *c, __u64 now)
{
	static struct rm_snap old, new;
	struct rm_state st;
	int err;

	/* never wait for the lock: probes would wait with it (a `ringctl
	 * show` of a thousand nodes holds it shared for a while); the
	 * results stay dirty and the next loop tries again */
	err = rm_state_open(&st, c->pin_dir, RM_LOCK_EX_TRY);
	if (err == -EWOULDBLOCK)
		return err;
	if (err) {
		hlog("cannot open the state: %s", rm_errmsg());
		return err;
	}
	err = rm_state_read(&st, &old);
	if (!err) {
		new = old;
		if (verdicts(c, &old, &new, now)) {
			err = rm_state_commit(&st, &old, &new, 0);
			c->cnt[err ? RM_HC_COMMIT_ERRORS : RM_HC_COMMITS]++;
			/* the log holds changes of a ring, not every count */
			if (!err && ring_moves[0] &&
			    rm_history_append(&st, "ringhealth", ring_moves,
					      &old, &new))
				hlog("change made but not in the history: %s",
				     rm_errmsg());
		}
	}
	if (err)
		hlog("cannot publish health: %s", rm_errmsg());
	rm_state_close(&st);
	if (!err)
		for (__u32 i = 0; i < c->n; i++)
			c->t[i]->dirty = false;
	return err;
}

static void refresh(struct checker *c, __u64 now)
{
	static struct rm_snap s;
	struct rm_state st;

	/* no lock: a torn read is corrected by the next second's */
	if (rm_state_open(&st, c->pin_dir, RM_LOCK_NONE)) {
		hlog("cannot open the state (retrying): %s", rm_errmsg());
		return;
	}
	if (!rm_state_read(&st, &s))
		reconcile(c, &s, now);
	else
		hlog("cannot read the state (retrying): %s", rm_errmsg());
	rm_state_close(&st);
}

static void counters_flush(struct checker *c, int *fd)
{
	if (*fd < 0)
		*fd = rm_hc_counters_open(c->pin_dir, true);
	if (*fd >= 0 && rm_hc_counters_write(*fd, c->cnt)) {
		close(*fd);
		*fd = -1; /* the pin dir was purged: make them again */
	}
}

/* Wait up to timeout ms for events and handle them all. */
static void events(struct checker *c, int sfd, int timeout, bool *stop,
		   __u64 *next_refresh)
{
	struct epoll_event ev[MAX_EVENTS];
	__u64 now;
	int n;

	do {
		n = epoll_wait(c->epfd, ev, MAX_EVENTS, timeout);
		now = now_ms();
		for (int i = 0; i < n; i++) {
			struct signalfd_siginfo si;

			if (ev[i].data.ptr) {
				probe_event(c, ev[i].data.ptr, ev[i].events,
					    now);
				continue;
			}
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					*next_refresh = 0;
					continue;
				}
				hlog("%s: stopping; node health stays as "
				     "published",
				     strsignal((int)si.ssi_signo));
				*stop = true;
			}
		}
		timeout = 0;
	} while (n == MAX_EVENTS);
}

/* The command line (main() copies it into the checker). */
struct health_cli {
	const char *pin_dir;
	bool verbose, help, version;
};

#define F(fld) offsetof(struct health_cli, fld)
static const struct cli_opt health_opts[] = {
    {.name = "pin-dir", .type = CLI_STRING, .off = F(pin_dir),
     .max = RM_PATH_MAX - RM_NAME_MAX - 1, .arg = "DIR",
     .def = RM_DEFAULT_PIN_DIR, .help = "the director's pinned state"},
    {0}};

static const struct cli_opt common_opts[] = {
    {.name = "verbose", .short_name = 'v', .type = CLI_FLAG, .off = F(verbose),
     .help = "log every check result (and libbpf's messages)"},
    CLI_OPT_HELP(F(help), "program"),
    CLI_OPT_VERSION(F(version)),
    {0}};

static const struct cli_cmd health_cmd[] = {
    {"", NULL,
     "check the nodes of services with a check, take failing ones out of "
     "the ring until they pass; runs until SIGTERM",
     health_opts, 0}};

static const struct cli_prog health_prog = {
    .name = "ringhealth",
    .global = common_opts,
    .cmds = CLI_CMDS(health_cmd),
};

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

int main(int argc, char **argv)
{
	struct epoll_event ev0 = {.events = EPOLLIN};
	static struct checker c = {.pin_dir = RM_DEFAULT_PIN_DIR};
	__u64 now, next_refresh = 0, last_publish = 0, next_flush = 0;
	int sfd, cfd = -1, o;
	struct timespec ts;
	sigset_t mask;
	bool stop = false, resync = true;
	struct health_cli cl = {0};

	o = cli_daemon(&health_prog, argc, argv, &cl);
	if (o >= 0)
		return o;
	c.pin_dir = cl.pin_dir;
	c.verbose = cl.verbose;
	if (!c.verbose)
		libbpf_set_print(libbpf_quiet);
	clock_gettime(CLOCK_REALTIME, &ts);
	c.seed = (__u64)ts.tv_nsec ^ ((__u64)getpid() << 32);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	c.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || c.epfd < 0) {
		fprintf(stderr, "ringhealth: %s\n", strerror(errno));
		return RM_EXIT_RUNTIME;
	}
	o = probe_init(&c);
	if (o) {
		fprintf(stderr, "ringhealth: %s\n", strerror(-o));
		return RM_EXIT_RUNTIME;
	}
	ev0.data.ptr = NULL; /* the signalfd */
	epoll_ctl(c.epfd, EPOLL_CTL_ADD, sfd, &ev0);
	{
		struct rm_state st;

		if (rm_state_open(&st, c.pin_dir, RM_LOCK_NONE)) {
			fprintf(stderr, "ringhealth: %s\n", rm_errmsg());
			return RM_EXIT_RUNTIME;
		}
		rm_state_close(&st);
	}
	hlog("started (pin dir %s, pid %d)", c.pin_dir, getpid());
	while (!stop) {
		__u64 wake;
		int timeout;
		bool dirty = resync;

		/* what completed while this loop was busy (a commit, say)
		 * is a result, not a timeout: take it in first */
		events(&c, sfd, 0, &stop, &next_refresh);
		now = now_ms();
		if (now >= next_refresh) {
			refresh(&c, now);
			next_refresh = now + RECONCILE_MS;
			/* the operator may have changed what the verdicts
			 * depend on: states, checks, nodes */
			resync = true;
		}
		/* start what is due, time out what is overdue */
		wake = next_refresh;
		for (__u32 i = 0; i < c.n; i++) {
			struct target *t = c.t[i];

			if (t->phase == PH_IDLE && now >= t->next_ms) {
				__u64 lag = now - t->next_ms;

				if (lag > RM_HC_LATE_MS && t->checked)
					c.cnt[RM_HC_CHECKS_LATE]++;
				if (t->checked && lag > c.cnt[RM_HC_LAG_MAX_MS])
					c.cnt[RM_HC_LAG_MAX_MS] = lag;
				t->due_ms = t->next_ms;
				probe_start(&c, t, now);
			} else if (t->phase != PH_IDLE &&
				   now >= t->deadline_ms) {
				probe_timeout(&c, t, now);
			}
			dirty |= t->dirty;
			if (t->phase == PH_IDLE && t->next_ms < wake)
				wake = t->next_ms;
			else if (t->phase != PH_IDLE && t->deadline_ms < wake)
				wake = t->deadline_ms;
		}
		if (dirty && now >= last_publish + PUBLISH_MS) {
			resync = false;
			publish(&c, now);
			last_publish = now;
			counters_flush(&c, &cfd);
			next_flush = now + RECONCILE_MS;
		} else if (dirty && last_publish + PUBLISH_MS < wake) {
			wake = last_publish + PUBLISH_MS;
		}
		if (now >= next_flush) {
			counters_flush(&c, &cfd);
			next_flush = now + RECONCILE_MS;
		}
		timeout = wake > now ? (int)(wake - now) : 0;
		events(&c, sfd, timeout, &stop, &next_refresh);
	}
	for (__u32 i = 0; i < c.n; i++) {
		probe_abort(&c, c.t[i]);
		free(c.t[i]);
	}
	free(c.t);
	posix_spawnattr_destroy(&c.spawn);
	counters_flush(&c, &cfd);
	if (cfd >= 0)
		close(cfd);
	close(c.epfd);
	close(sfd);
	return RM_EXIT_OK;
}
