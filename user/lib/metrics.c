// SPDX-License-Identifier: GPL-2.0
/* Prometheus text exposition of the live state (metrics.h). Everything is
 * read first, then written family by family: the format wants every
 * sample of a metric together, under one HELP and TYPE. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "counters.h"
#include "health.h"
#include "history.h"
#include "metrics.h"
#include "util.h"
#include "state.h"
#include "state_int.h"

struct scrape {
	struct rm_state st;
	struct rm_snap snap;
	__u64 cnt[RM_CNT_MAX];
	struct rm_conn_count conns;
	struct rm_traffic svc[RM_MAX_SERVICES];
	__u32 ring_entries[RM_MAX_SERVICES];
	struct rm_traffic node[RM_MAX_NODES];
	__u64 keys[RM_MAX_NODES];	 /* keyspace owned in the live ring */
	__u32 node_entries[RM_MAX_NODES]; /* ring entries of the node */
	struct rm_history_head hist;
	__u64 hc[RM_HC_CNT_MAX]; /* the health checker's counters */
	bool hc_ran;		 /* ... if one ever ran on this pin dir */
};

/* The ring the kernel searches, not one rebuilt from the configuration:
 * the metrics say what the data plane does. */
static int read_ring(struct scrape *s, __u32 svc)
{
	struct rm_ring_owned o;
	struct rm_ring r;
	int err;

	/* no ring (a change cut short): nothing owned */
	err = rm_state_ring_owned(&s->st, &s->snap, svc, &r, &o, NULL);
	if (err)
		return err == -ENOENT ? 0 : err;
	s->ring_entries[svc] = r.n;
	for (__u32 k = 0; k < r.n_nodes; k++) {
		if (r.nodes[k].id >= RM_MAX_NODES)
			continue;
		s->keys[r.nodes[k].id] = o.keys[k];
		s->node_entries[r.nodes[k].id] += o.entries[k];
	}
	rm_ring_owned_free(&o);
	rm_ring_free(&r);
	return 0;
}

static int scrape_read(struct scrape *s, const char *pin_dir)
{
	struct rm_history_rec *recs;
	__u32 nrec;
	int err;

	err = rm_state_read(&s->st, &s->snap);
	if (!err)
		err = rm_state_counters(&s->st, s->cnt);
	if (!err)
		err = rm_state_conn_count(&s->st, &s->snap, &s->conns);
	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++)
		if (s->snap.svc[i].in_use)
			err = read_ring(s, i);
	if (!err)
		err = rm_state_traffic_rows(&s->st, &s->snap, -1, s->svc,
					    s->node);
	if (!err)
		err = rm_history_read(pin_dir, &s->hist, &recs, &nrec);
	if (!err)
		free(recs);
	if (!err) {
		int fd = rm_hc_counters_open(pin_dir, false);

		s->hc_ran = fd >= 0 && !rm_hc_counters_read(fd, s->hc);
		if (fd >= 0)
			close(fd);
	}
	return err;
}

/* ---- writing ---------------------------------------------------------- */

static void family(FILE *f, const char *name, const char *type,
		   const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A metric of one unlabelled sample. */
static void scalar(FILE *f, const char *name, const char *type,
		   const char *help, unsigned long long v)
{
	family(f, name, type, help);
	fprintf(f, "%s %llu\n", name, v);
}

/* Label values are names ([A-Za-z0-9._-]) and fixed words, but escape as
 * the format says anyway. */
static void label(FILE *f, const char *key, const char *val, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", key);
	for (; *val; val++) {
		if (*val == '\\' || *val == '"')
			fprintf(f, "\\%c", *val);
		else if (*val == '\n')
			fputs("\\n", f);
		else
			fputc(*val, f);
	}
	fputc('"', f);
}

static void sample_u64(FILE *f, unsigned long long v)
{
	fprintf(f, "} %llu\n", v);
}

static const char *svc_name(const struct scrape *s, __u32 i)
{
	return s->snap.svc[i].name;
}

static void node_labels(FILE *f, const struct scrape *s, const char *name,
			__u32 i)
{
	const struct rm_node *n = &s->snap.node[i];

	fprintf(f, "%s{", name);
	label(f, "service", svc_name(s, n->svc_id), true);
	label(f, "node", n->name, false);
}

/* One family per counter kind (counters.h): every counter has a metric. */
static const struct {
	enum rm_counter_kind kind;
	const char *name, *label, *help;
} counter_families[] = {
    {RM_CNT_KIND_OUTCOME, "ringmaster_packets_total", "outcome",
     "Packets the XDP program handled, by outcome (each packet has one)."},
    {RM_CNT_KIND_CONN, "ringmaster_conn_table_events_total", "event",
     "Connection-table lookups and writes, by result (hit, miss, stale, "
     "insert, insert-limited)."},
    {RM_CNT_KIND_KEY, "ringmaster_key_events_total", "event",
     "Packets of keyed services: routed by their key, or by the flow hash "
     "and why (fallback-*)."},
    {RM_CNT_KIND_ENCAP, "ringmaster_encap_packets_total", "method",
     "Forwarded packets encapsulated to routed nodes, by method."},
    {RM_CNT_KIND_EVENT, "ringmaster_packet_events_total", "event",
     "Other events on top of a packet's outcome (icmp-forwarded: an ICMP "
     "error sent to the node of the flow it quotes; hop-list-sent: a "
     "packet sent to a GUE node with the second-chance hop list)."},
};

static void write_outcomes(FILE *f, const struct scrape *s)
{
	for (size_t k = 0;
	     k < sizeof(counter_families) / sizeof(counter_families[0]); k++) {
		family(f, counter_families[k].name, "counter",
		       counter_families[k].help);
		for (int i = 0; i < RM_CNT_MAX; i++) {
			if (rm_counter_kind(i) != counter_families[k].kind)
				continue;
			fprintf(f, "%s{", counter_families[k].name);
			label(f, counter_families[k].label,
			      rm_counter_short_name(i), true);
			sample_u64(f, s->cnt[i]);
		}
	}
}

static void write_conn_table(FILE *f, const struct scrape *s)
{
	scalar(f, "ringmaster_conn_table_entries", "gauge",
	       "Entries in the connection table.",
	       s->conns.entries);
	scalar(f, "ringmaster_conn_table_stale_entries", "gauge",
	       "Entries no longer valid (node gone, down or reused; UDP idle), "
	       "left to the LRU.",
	       s->conns.stale);
	scalar(f, "ringmaster_conn_table_max_entries", "gauge",
	       "Size of the connection table.",
	       s->conns.max_entries);
}

/* A per-service counter or gauge family; field picks the value. */
static void write_svc_family(FILE *f, const struct scrape *s,
			     const char *name, const char *type,
			     const char *help,
			     unsigned long long (*field)(const struct scrape *,
							 __u32))
{
	family(f, name, type, help);
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		if (!s->snap.svc[i].in_use)
			continue;
		fprintf(f, "%s{", name);
		label(f, "service", svc_name(s, i), true);
		sample_u64(f, field(s, i));
	}
}

static unsigned long long svc_packets(const struct scrape *s, __u32 i)
{
	return s->svc[i].packets;
}
static unsigned long long svc_new_flows(const struct scrape *s, __u32 i)
{
	return s->svc[i].new_flows;
}
static unsigned long long svc_bytes(const struct scrape *s, __u32 i)
{
	return s->svc[i].bytes;
}
static unsigned long long svc_entries(const struct scrape *s, __u32 i)
{
	return s->ring_entries[i];
}

static void write_node_family(FILE *f, const struct scrape *s,
			      const char *name, const char *type,
			      const char *help,
			      unsigned long long (*field)(const struct scrape *,
							  __u32))
{
	family(f, name, type, help);
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		if (!rm_snap_node_used(&s->snap, i, -1))
			continue;
		node_labels(f, s, name, i);
		sample_u64(f, field(s, i));
	}
}

static unsigned long long node_packets(const struct scrape *s, __u32 i)
{
	return s->node[i].packets;
}
static unsigned long long node_new_flows(const struct scrape *s, __u32 i)
{
	return s->node[i].new_flows;
}
static unsigned long long node_bytes(const struct scrape *s, __u32 i)
{
	return s->node[i].bytes;
}
static unsigned long long node_conns(const struct scrape *s, __u32 i)
{
	return s->conns.node[i];
}
static unsigned long long node_entries(const struct scrape *s, __u32 i)
{
	return s->node_entries[i];
}
static unsigned long long node_weight(const struct scrape *s, __u32 i)
{
	return s->snap.node[i].weight;
}

static __u32 node_state(const struct scrape *s, __u32 i)
{
	return s->snap.node[i].state;
}
static __u32 node_health(const struct scrape *s, __u32 i)
{
	return s->snap.node[i].health.state;
}

/* A state-set gauge (one sample per node and possible value, 1 for the
 * one it has): name{service,node,state}. */
static void write_node_enum(FILE *f, const struct scrape *s, const char *name,
			    const char *help, const __u32 *vals, size_t n,
			    const char *(*word)(__u32),
			    __u32 (*cur)(const struct scrape *, __u32))
{
	family(f, name, "gauge", help);
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		if (!rm_snap_node_used(&s->snap, i, -1))
			continue;
		for (size_t k = 0; k < n; k++) {
			node_labels(f, s, name, i);
			label(f, "state", word(vals[k]), false);
			sample_u64(f, cur(s, i) == vals[k]);
		}
	}
}

static unsigned long long node_in_ring(const struct scrape *s, __u32 i)
{
	return rm_node_in_ring(&s->snap.node[i]);
}
static unsigned long long node_fail_open(const struct scrape *s, __u32 i)
{
	return !!(s->snap.node[i].health.flags & RM_HEALTH_F_PANIC);
}

static void write_nodes(FILE *f, const struct scrape *s)
{
	static const __u32 states[] = {RM_NODE_ACTIVE, RM_NODE_DRAINING,
				       RM_NODE_DOWN};
	static const __u32 healths[] = {RM_HEALTH_UNCHECKED, RM_HEALTH_HEALTHY,
					RM_HEALTH_FAILING, RM_HEALTH_UNHEALTHY};

	write_node_family(f, s, "ringmaster_node_packets_total", "counter",
			  "Packets forwarded to the node.", node_packets);
	write_node_family(f, s, "ringmaster_node_bytes_total", "counter",
			  "Bytes forwarded to the node.", node_bytes);
	write_node_family(f, s, "ringmaster_node_new_flows_total", "counter",
			  "Flows the ring newly gave the node (entered in the "
			  "connection table).",
			  node_new_flows);
	write_node_family(f, s, "ringmaster_node_conn_entries", "gauge",
			  "Connection-table entries still sending flows to the "
			  "node.",
			  node_conns);
	write_node_family(f, s, "ringmaster_node_ring_entries", "gauge",
			  "Entries (virtual nodes) of the node in the live ring.",
			  node_entries);
	write_node_family(f, s, "ringmaster_node_weight", "gauge",
			  "Configured weight of the node.", node_weight);
	family(f, "ringmaster_node_ring_share", "gauge",
	       "Exact share of the service's hash space the node owns in the "
	       "live ring (0 to 1).");
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		if (!rm_snap_node_used(&s->snap, i, -1))
			continue;
		node_labels(f, s, "ringmaster_node_ring_share", i);
		/* %.17g: the exact keys / 2^32 survives the round trip */
		fprintf(f, "} %.17g\n", s->keys[i] / RM_KEYSPACE);
	}
	write_node_enum(f, s, "ringmaster_node_state",
			"Node state as the operator set it: 1 for the state the "
			"node is in, 0 for the others.",
			states, sizeof(states) / sizeof(states[0]),
			rm_node_state_name, node_state);
	write_node_family(f, s, "ringmaster_node_in_ring", "gauge",
			  "1 when the node is in its service's ring: active and "
			  "not out for health.",
			  node_in_ring);
	write_node_enum(f, s, "ringmaster_node_health",
			"Node health as the health checker last judged it: 1 for "
			"the state the node is in, 0 for the others (unchecked: "
			"no checker or no check).",
			healths, sizeof(healths) / sizeof(healths[0]),
			rm_health_state_name, node_health);
	write_node_family(f, s, "ringmaster_node_fail_open", "gauge",
			  "1 when the node is unhealthy but kept in the ring "
			  "because too few of its service's nodes are healthy "
			  "(fail-open).",
			  node_fail_open);
}

/* The checker's counters, when one ever ran on this pin dir: events as
 * one counter family, the two gauges on their own. */
static void write_health_checker(FILE *f, const struct scrape *s)
{
	if (!s->hc_ran)
		return;
	family(f, "ringmaster_health_checker_events_total", "counter",
	       "Health-checker events: checks run and failed, node "
	       "transitions, ring in/out, fail-open, commits and their errors, "
	       "late checks.");
	for (int i = 0; i < RM_HC_CNT_MAX; i++) {
		if (i == RM_HC_LAG_MAX_MS || i == RM_HC_TARGETS)
			continue;
		fprintf(f, "ringmaster_health_checker_events_total{");
		label(f, "event", rm_hc_counter_names[i], true);
		sample_u64(f, s->hc[i]);
	}
	family(f, "ringmaster_health_check_lag_max_seconds", "gauge",
	       "The most any check started after it was due.");
	fprintf(f, "ringmaster_health_check_lag_max_seconds %.3f\n",
		s->hc[RM_HC_LAG_MAX_MS] / 1e3);
	scalar(f, "ringmaster_health_check_targets", "gauge",
	       "Nodes the health checker checks.", s->hc[RM_HC_TARGETS]);
}

static void write_changes(FILE *f, const struct scrape *s)
{
	scalar(f, "ringmaster_changes_total", "counter",
	       "Changes of the live state recorded in the change log.",
	       s->hist.appended);
	scalar(f, "ringmaster_ring_swaps_total", "counter",
	       "Rings replaced by those changes.",
	       s->hist.swaps);
	family(f, "ringmaster_last_change_timestamp_seconds", "gauge",
	       "Time of the last recorded change, seconds since the epoch (0: "
	       "none).");
	fprintf(f, "ringmaster_last_change_timestamp_seconds %.3f\n",
		s->hist.last_ns / 1e9);
	scalar(f, "ringmaster_seed_set", "gauge",
	       "1 when the hash seed is set (unseeded: VIP packets dropped).",
	       !!(s->snap.cfg.flags & RM_CFG_SEEDED));
}

static void write_build_info(FILE *f)
{
	family(f, "ringmaster_build_info", "gauge",
	       "Build of the tools that read the state; always 1.");
	fprintf(f, "ringmaster_build_info{");
	label(f, "version", rm_version(), true);
	fprintf(f, "} 1\n");
}

static void write_up(FILE *f, int up)
{
	family(f, "ringmaster_up", "gauge",
	       "1 when the director's state could be read.");
	fprintf(f, "ringmaster_up %d\n", up);
}

void rm_metrics_write_down(FILE *f)
{
	write_up(f, 0);
	write_build_info(f);
}

int rm_metrics_write(FILE *f, const char *pin_dir)
{
	struct scrape *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return rm_state_fail(-ENOMEM, "out of memory");
	/* no lock: a scrape never holds up a change; every map read is
	 * consistent on its own */
	err = rm_state_open(&s->st, pin_dir, RM_LOCK_NONE);
	if (err) {
		free(s);
		return err;
	}
	err = scrape_read(s, pin_dir);
	if (!err) {
		write_up(f, 1);
		write_build_info(f);
		write_outcomes(f, s);
		write_conn_table(f, s);
		write_svc_family(f, s, "ringmaster_service_packets_total",
				 "counter", "Packets forwarded for the service.",
				 svc_packets);
		write_svc_family(f, s, "ringmaster_service_bytes_total",
				 "counter", "Bytes forwarded for the service.",
				 svc_bytes);
		write_svc_family(f, s, "ringmaster_service_new_flows_total",
				 "counter",
				 "Flows the ring newly routed for the service "
				 "(entered in the connection table).",
				 svc_new_flows);
		write_svc_family(f, s, "ringmaster_service_ring_entries",
				 "gauge", "Entries in the service's live ring.",
				 svc_entries);
		write_nodes(f, s);
		write_health_checker(f, s);
		write_changes(f, s);
	}
	rm_state_close(&s->st);
	free(s);
	return err;
}

int rm_metrics_textfile(const char *dir, const char *pin_dir)
{
	char tmp[RM_PATH_MAX + 64], dst[RM_PATH_MAX + 64];
	FILE *f;
	int fd, err;

	if (snprintf(dst, sizeof(dst), "%s/%s", dir, RM_METRICS_TEXTFILE) >=
	    (int)sizeof(dst))
		return rm_state_fail(-ENAMETOOLONG, "path too long: %s", dir);
	/* a dot name: the textfile collector reads only *.prom */
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, RM_METRICS_TEXTFILE);
	fd = mkstemp(tmp);
	if (fd < 0)
		return rm_state_fail(-errno,
				     "cannot create a file in %s: %s (does "
				     "the directory exist and is it writable?)",
				     dir, strerror(errno));
	f = fdopen(fd, "w");
	if (!f) {
		err = rm_state_fail(-errno, "fdopen: %s", strerror(errno));
		close(fd);
		unlink(tmp);
		return err;
	}
	err = rm_metrics_write(f, pin_dir);
	if (fflush(f) || fsync(fd) || fchmod(fd, 0644))
		err = err ? err
			  : rm_state_fail(-errno, "cannot write %s: %s", tmp,
					  strerror(errno));
	if (fclose(f) && !err)
		err = rm_state_fail(-errno, "cannot write %s: %s", tmp,
				    strerror(errno));
	if (!err && rename(tmp, dst))
		err = rm_state_fail(-errno, "cannot rename %s to %s: %s", tmp,
				    dst, strerror(errno));
	if (err)
		unlink(tmp);
	return err;
}
