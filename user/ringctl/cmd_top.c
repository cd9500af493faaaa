// SPDX-License-Identifier: GPL-2.0
/*
 * ringctl top [SERVICE] [--interval S] [--once] [--json]: the director
 * live. Every S seconds (default 1) the counters are read again and the
 * screen redrawn in place (ANSI; the alternate screen, restored on exit):
 * per service and per node packets/s and bytes/s, totals, connection-table
 * entries, ring share, state, health; new flows/s and every outcome per
 * second, drops highlighted; services and nodes sorted by packet rate.
 * q quits. --once prints one frame (rates over one interval) and exits;
 * --json prints that frame as JSON.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "cmd_live.h"
#include "counters.h"
#include "json.h"
#include "health.h"
#include "metrics.h"

#define RED "\033[1;31m"
#define BOLD "\033[1m"
#define RESET "\033[0m"

struct sample {
	double t; /* CLOCK_MONOTONIC seconds */
	__u64 cnt[RM_CNT_MAX];
	struct rm_traffic svc[RM_MAX_SERVICES];
	struct rm_traffic node[RM_MAX_NODES];
};

struct top {
	struct ctl_opts *o;
	struct live lv;
	int only; /* service id or -1 */
	double interval;
	struct sample a, b; /* previous, current */
	struct rm_conn_count conns;
	__u64 keys[RM_MAX_NODES];
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool shown_svc(const struct top *t, __u32 i)
{
	return rm_snap_svc_used(t->lv.old, i, t->only);
}

static bool shown_node(const struct top *t, __u32 i)
{
	return rm_snap_node_used(t->lv.old, i, t->only);
}

static int sample(struct top *t, struct sample *s)
{
	int err = rm_state_counters(&t->lv.st, s->cnt);

	s->t = now_s();
	if (!err)
		err = rm_state_traffic_rows(&t->lv.st, t->lv.old, t->only,
					    s->svc, s->node);
	return err;
}

/* The configuration, shares and table counts change slowly; they are
 * read once per frame anyway, so a change shows at the next refresh. */
static int refresh_state(struct top *t)
{
	int err = rm_state_read(&t->lv.st, t->lv.old);

	memset(t->keys, 0, sizeof(t->keys));
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++) {
		struct rm_ring_owned o;
		struct rm_ring r;

		if (!shown_svc(t, i) ||
		    rm_state_ring_owned(&t->lv.st, t->lv.old, i, &r, &o, NULL))
			continue;
		for (__u32 k = 0; k < r.n_nodes; k++)
			if (r.nodes[k].id < RM_MAX_NODES)
				t->keys[r.nodes[k].id] = o.keys[k];
		rm_ring_owned_free(&o);
		rm_ring_free(&r);
	}
	if (!err)
		err = rm_state_conn_count(&t->lv.st, t->lv.old, &t->conns);
	return err;
}

static double rate(__u64 b, __u64 a, double dt)
{
	return dt > 0 && b >= a ? (b - a) / dt : 0;
}

/* highlighted: packets lost, and new flows the table turned away */
static bool is_drop(int i)
{
	return rm_counter_is_drop(i) || i == RM_CNT_CONN_INSERT_LIMITED;
}

/* ---- ordering ---------------------------------------------------------- */

static const struct top *sort_top; /* qsort has no context argument */

static int by_svc_rate(const void *x, const void *y)
{
	__u32 i = *(const __u32 *)x, k = *(const __u32 *)y;
	__u64 ri = sort_top->b.svc[i].packets - sort_top->a.svc[i].packets;
	__u64 rk = sort_top->b.svc[k].packets - sort_top->a.svc[k].packets;

	return ri != rk ? (ri < rk ? 1 : -1) : (i > k) - (i < k);
}

static int by_node_rate(const void *x, const void *y)
{
	__u32 i = *(const __u32 *)x, k = *(const __u32 *)y;
	__u64 ri = sort_top->b.node[i].packets - sort_top->a.node[i].packets;
	__u64 rk = sort_top->b.node[k].packets - sort_top->a.node[k].packets;

	return ri != rk ? (ri < rk ? 1 : -1) : (i > k) - (i < k);
}

/* Shown ids sorted by packet rate, highest first. */
static __u32 order(const struct top *t, __u32 *ids, bool nodes, __u32 svc)
{
	__u32 n = 0;

	if (!nodes) {
		for (__u32 i = 0; i < RM_MAX_SERVICES; i++)
			if (shown_svc(t, i))
				ids[n++] = i;
	} else {
		for (__u32 i = 0; i < RM_MAX_NODES; i++)
			if (shown_node(t, i) && t->lv.old->node[i].svc_id == svc)
				ids[n++] = i;
	}
	sort_top = t;
	qsort(ids, n, sizeof(*ids), nodes ? by_node_rate : by_svc_rate);
	return n;
}

/* ---- output ------------------------------------------------------------- */

/* The checker's verdict in a word; "-" when nothing checks the node. */
static const char *top_health(const struct top *t, __u32 i)
{
	__u32 h = t->lv.old->node[i].health.state;

	return h == RM_HEALTH_UNCHECKED ? "-" : rm_health_state_name(h);
}

static void frame_text(struct top *t, bool color)
{
	double dt = t->b.t - t->a.t;
	__u32 svcs[RM_MAX_SERVICES], *nodes = calloc(RM_MAX_NODES, 4);
	__u32 ns = order(t, svcs, false, 0);
	char when[32];
	time_t wall = time(NULL);
	struct tm tm;

	if (!nodes)
		return;
	localtime_r(&wall, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	printf("%sringmaster top%s  %s  every %.1f s  pin dir %s%s\n",
	       color ? BOLD : "", color ? RESET : "", when, t->interval,
	       t->o->pin_dir, color ? "  (q quits)" : "");
	printf("new flows/s %.0f  conn table %llu/%u entries (%llu stale)\n",
	       rate(t->b.cnt[RM_CNT_CONN_INSERT] +
			t->b.cnt[RM_CNT_CONN_INSERT_LIMITED],
		    t->a.cnt[RM_CNT_CONN_INSERT] +
			t->a.cnt[RM_CNT_CONN_INSERT_LIMITED],
		    dt),
	       (unsigned long long)t->conns.entries, t->conns.max_entries,
	       (unsigned long long)t->conns.stale);
	printf("outcomes/s:");
	for (int i = 0; i < RM_CNT_MAX; i++) {
		double r = rate(t->b.cnt[i], t->a.cnt[i], dt);
		bool hot = is_drop(i) && r > 0;

		printf(" %s%s %.0f%s", hot && color ? RED : "", rm_counter_names[i],
		       r, hot && color ? RESET : "");
	}
	printf("\n\n%-16s %-16s %-8s %-9s %10s %12s %9s %12s %8s %8s\n",
	       "SERVICE", "NODE", "STATE", "HEALTH", "PKTS/S", "BYTES/S",
	       "FLOWS/S", "PACKETS", "CONNS", "SHARE");
	for (__u32 s = 0; s < ns; s++) {
		__u32 i = svcs[s], nn = order(t, nodes, true, i);

		printf("%s%-16s %-16s %-8s %-9s %10.0f %12.0f %9.0f %12llu %8s "
		       "%8s%s\n",
		       color ? BOLD : "", t->lv.old->svc[i].name, "*", "", "",
		       rate(t->b.svc[i].packets, t->a.svc[i].packets, dt),
		       rate(t->b.svc[i].bytes, t->a.svc[i].bytes, dt),
		       rate(t->b.svc[i].new_flows, t->a.svc[i].new_flows, dt),
		       (unsigned long long)t->b.svc[i].packets, "", "",
		       color ? RESET : "");
		for (__u32 k = 0; k < nn; k++) {
			__u32 id = nodes[k];
			const struct rm_node *n = &t->lv.old->node[id];

			printf("%-16s %-16s %-8s %-9s %10.0f %12.0f %9.0f "
			       "%12llu %8u %7.3f%%\n",
			       "", n->name, rm_node_state_name(n->state),
			       top_health(t, id),
			       rate(t->b.node[id].packets,
				    t->a.node[id].packets, dt),
			       rate(t->b.node[id].bytes, t->a.node[id].bytes,
				    dt),
			       rate(t->b.node[id].new_flows,
				    t->a.node[id].new_flows, dt),
			       (unsigned long long)t->b.node[id].packets,
			       t->conns.node[id], t->keys[id] / RM_KEYSPACE * 100);
		}
	}
	free(nodes);
}

static void frame_json(struct top *t)
{
	double dt = t->b.t - t->a.t;
	__u32 svcs[RM_MAX_SERVICES], *nodes = calloc(RM_MAX_NODES, 4);
	__u32 ns = order(t, svcs, false, 0);
	struct rm_json j;

	if (!nodes)
		return;
	rm_json_init(&j, stdout);
	rm_json_obj_open(&j, NULL);
	rm_json_num(&j, "interval_s", dt);
	rm_json_num(&j, "new_flows_per_s",
		    rate(t->b.cnt[RM_CNT_CONN_INSERT] +
			     t->b.cnt[RM_CNT_CONN_INSERT_LIMITED],
			 t->a.cnt[RM_CNT_CONN_INSERT] +
			     t->a.cnt[RM_CNT_CONN_INSERT_LIMITED],
			 dt));
	rm_json_u64(&j, "conn_entries", t->conns.entries);
	rm_json_obj_open(&j, "outcomes_per_s");
	for (int i = 0; i < RM_CNT_MAX; i++)
		rm_json_num(&j, rm_counter_names[i],
			    rate(t->b.cnt[i], t->a.cnt[i], dt));
	rm_json_obj_close(&j);
	rm_json_arr_open(&j, "services");
	for (__u32 s = 0; s < ns; s++) {
		__u32 i = svcs[s], nn = order(t, nodes, true, i);

		rm_json_obj_open(&j, NULL);
		rm_json_str(&j, "name", t->lv.old->svc[i].name);
		rm_json_num(&j, "packets_per_s",
			    rate(t->b.svc[i].packets, t->a.svc[i].packets, dt));
		rm_json_num(&j, "bytes_per_s",
			    rate(t->b.svc[i].bytes, t->a.svc[i].bytes, dt));
		rm_json_num(&j, "new_flows_per_s",
			    rate(t->b.svc[i].new_flows, t->a.svc[i].new_flows,
				 dt));
		rm_json_u64(&j, "packets", t->b.svc[i].packets);
		rm_json_arr_open(&j, "nodes");
		for (__u32 k = 0; k < nn; k++) {
			__u32 id = nodes[k];
			const struct rm_node *n = &t->lv.old->node[id];

			rm_json_obj_open(&j, NULL);
			rm_json_str(&j, "name", n->name);
			rm_json_str(&j, "state", rm_node_state_name(n->state));
			rm_json_str(&j, "health",
				    rm_health_state_name(n->health.state));
			rm_json_bool(&j, "in_ring", rm_node_in_ring(n));
			rm_json_num(&j, "packets_per_s",
				    rate(t->b.node[id].packets,
					 t->a.node[id].packets, dt));
			rm_json_num(&j, "bytes_per_s",
				    rate(t->b.node[id].bytes,
					 t->a.node[id].bytes, dt));
			rm_json_num(&j, "new_flows_per_s",
				    rate(t->b.node[id].new_flows,
					 t->a.node[id].new_flows, dt));
			rm_json_u64(&j, "packets", t->b.node[id].packets);
			rm_json_u64(&j, "conns", t->conns.node[id]);
			rm_json_num(&j, "share", t->keys[id] / RM_KEYSPACE);
			rm_json_obj_close(&j);
		}
		rm_json_arr_close(&j);
		rm_json_obj_close(&j);
	}
	rm_json_arr_close(&j);
	rm_json_obj_close(&j);
	rm_json_end(&j);
	free(nodes);
}

/* ---- the loop ----------------------------------------------------------- */

/* Wait up to the interval for a key; true when it was q. */
static bool wait_key(double secs, bool tty)
{
	struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
	double end = now_s() + secs;
	char c;

	while (!stop) {
		double left = end - now_s();

		if (left <= 0)
			return false;
		if (poll(tty ? &p : NULL, tty ? 1 : 0, (int)(left * 1000) + 1) >
			0 &&
		    read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
			return true;
	}
	return true;
}

static int run_live(struct top *t)
{
	bool tty = isatty(STDIN_FILENO);
	struct termios old, raw;
	struct sigaction sa = {.sa_handler = on_signal};
	int err = 0;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (tty && !tcgetattr(STDIN_FILENO, &old)) {
		raw = old;
		raw.c_lflag &= ~(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	} else {
		tty = false;
	}
	printf("\033[?1049h\033[?25l"); /* alternate screen, no cursor */
	while (!err && !stop) {
		if (wait_key(t->interval, tty))
			break;
		t->a = t->b;
		err = sample(t, &t->b);
		if (!err)
			err = refresh_state(t);
		if (err)
			break;
		printf("\033[H\033[2J");
		frame_text(t, true);
		fflush(stdout);
	}
	printf("\033[?25h\033[?1049l");
	fflush(stdout);
	if (tty)
		tcsetattr(STDIN_FILENO, TCSANOW, &old);
	return err ? ctl_runtime_error("%s", rm_errmsg()) : RM_EXIT_OK;
}

int cmd_top(struct ctl_opts *o)
{
	struct top *t = calloc(1, sizeof(*t));
	struct timespec ts;
	int ret;

	if (!t)
		return ctl_runtime_error("out of memory");
	t->o = o;
	t->only = -1;
	ret = RM_EXIT_USAGE;
	if (o->argc > 1) {
		ctl_usage_error("top: expected at most one SERVICE");
		goto out_free;
	}
	if (live_interval("top", o->interval, 100, 3600000, 1.0, &t->interval))
		goto out_free;
	if (o->argc && (ret = live_name("service", o->argv[0])))
		goto out_free;
	ret = live_open(o, &t->lv, RM_LOCK_NONE);
	if (ret)
		goto out_free;
	if (o->argc && (t->only = live_svc(&t->lv, o->argv[0])) < 0) {
		ret = RM_EXIT_RUNTIME;
		goto out;
	}
	if (sample(t, &t->b) || refresh_state(t)) {
		ret = ctl_runtime_error("%s", rm_errmsg());
		goto out;
	}
	if (!o->once && !o->json) {
		ret = run_live(t);
		goto out;
	}
	/* one frame: rates over one interval */
	t->a = t->b;
	ts.tv_sec = (time_t)t->interval;
	ts.tv_nsec = (long)((t->interval - floor(t->interval)) * 1e9);
	nanosleep(&ts, NULL);
	if (sample(t, &t->b) || refresh_state(t)) {
		ret = ctl_runtime_error("%s", rm_errmsg());
		goto out;
	}
	if (o->json)
		frame_json(t);
	else
		frame_text(t, false);
	ret = RM_EXIT_OK;
out:
	live_close(&t->lv);
out_free:
	free(t);
	return ret;
}
