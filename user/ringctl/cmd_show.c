// SPDX-License-Identifier: GPL-2.0
/* show / lookup / stats: read-only views of the live state. Shares and
 * owners come from the ring maps the kernel searches, not from a rebuild,
 * so they report what the data plane does. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ringmaster/rm_hash.h>
#include <ringmaster/rm_encap.h>
#include "apply.h"
#include "cmd_live.h"
#include "hops.h"
#include "health.h"
#include "counters.h"
#include "json.h"
#include "key.h"


/* What show prints of one service. */
struct view {
	__u32 svc;
	struct rm_ring ring; /* the live ring's nodes and size */
	struct rm_ring_owned owned; /* what each of ring.nodes[] owns */
	const __u64 *arcs;   /* keyspace per ring.nodes[]: owned.keys */
	bool matches;
	const struct rm_conn_count *conns;
	int ret; /* an exit code the printing met */
};

static __u64 node_keys(const struct rm_ring *r, const __u64 *arcs, __u32 id)
{
	for (__u32 k = 0; k < r->n_nodes; k++)
		if (r->nodes[k].id == id)
			return arcs[k];
	return 0;
}

static __u64 svc_conns(struct live *lv, __u32 svc,
		       const struct rm_conn_count *c)
{
	__u64 sum = 0;

	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		if (lv->old->node[i].state != RM_NODE_FREE &&
		    lv->old->node[i].svc_id == svc)
			sum += c->node[i];
	return sum;
}

/* How a node is reached, for text: its MAC, or method and address. */
static void node_reach(const struct rm_node *n, char *out, size_t len)
{
	char a[64];

	if (n->via == RM_VIA_L2) {
		rm_format_mac(n->mac, out);
		return;
	}
	rm_format_addr(n->addr, (__u8)n->addr_family, a, sizeof(a));
	if (n->via == RM_VIA_GUE)
		snprintf(out, len, "gue %s:%u", a, ntohs(n->gue_port));
	else
		snprintf(out, len, "%s %s", rm_via_name(n->via), a);
}

/* The method fields of a node's JSON object ("addr" is health's). */
static void node_reach_json(struct rm_json *j, const struct rm_node *n)
{
	rm_json_str(j, "via", rm_via_name(n->via));
	if (n->via == RM_VIA_GUE)
		rm_json_u64(j, "gue_port", ntohs(n->gue_port));
}

/* Points node n of service svc has (its vnodes), as the service's ring
 * scheme gives them; a node out of the ring shows what it would get in
 * it. */
static __u32 node_vnodes(const struct rm_snap *s, __u32 svc,
			 const struct rm_node *n)
{
	const struct rm_svc_meta *m = &s->svc[svc];
	__u64 total = 0;
	__u32 count = 0;

	if (m->ring.scheme == RM_RING_MD5_VNODES)
		return n->weight * m->ring.count;
	if (m->ring.scheme != RM_RING_KETAMA)
		return n->weight * m->vnodes;
	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		if (s->node[i].svc_id == svc && rm_node_in_ring(&s->node[i])) {
			total += s->node[i].weight;
			count++;
		}
	if (!rm_node_in_ring(n)) {
		total += n->weight;
		count++;
	}
	return rm_ketama_points(n->weight, total, count);
}

static void show_json(struct rm_json *j, struct live *lv, struct view *w)
{
	const struct rm_ring *r = &w->ring;
	const __u64 *arcs = w->arcs;
	__u32 svc = w->svc;
	const struct rm_svc_meta *m = &lv->old->svc[svc];
	char addr[64], mac[18], text[80];

	rm_format_svc_addr(&m->key, addr, sizeof(addr));
	rm_json_obj_open(j, NULL);
	rm_json_str(j, "name", m->name);
	rm_json_u64(j, "id", svc);
	rm_json_str(j, "vip", addr);
	rm_json_u64(j, "port", ntohs(m->key.port));
	rm_json_str(j, "proto", rm_proto_name(m->key.proto));
	rm_json_str(j, "hash",
		    m->flags & RM_SVC_F_3TUPLE ? "3tuple" : "5tuple");
	rm_json_u64(j, "vnodes", m->vnodes);
	rm_format_ringspec(&m->ring, text, sizeof(text));
	rm_json_str(j, "ring", text);
	rm_json_u64(j, "entries", r->n);
	rm_json_bool(j, "ring_matches", w->matches);
	rm_json_u64(j, "conns", svc_conns(lv, svc, w->conns));
	health_check_json(j, m);
	quic_key_show(lv, svc, j);
	w->ret = hops_show_json(j, lv, svc);
	rm_json_arr_open(j, "nodes");
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &lv->old->node[i];
		__u64 keys;

		if (n->state == RM_NODE_FREE || n->svc_id != svc)
			continue;
		keys = node_keys(r, arcs, i);
		rm_format_mac(n->mac, mac);
		rm_json_obj_open(j, NULL);
		rm_json_str(j, "name", n->name);
		rm_json_u64(j, "id", i);
		rm_json_str(j, "state", rm_node_state_name(n->state));
		rm_json_u64(j, "weight", n->weight);
		rm_json_u64(j, "vnodes", node_vnodes(lv->old, svc, n));
		rm_json_num(j, "share", keys / RM_KEYSPACE);
		rm_json_u64(j, "keys", keys);
		rm_json_str(j, "mac", mac);
		rm_json_str(j, "dev", n->dev);
		node_reach_json(j, n);
		rm_json_u64(j, "ifindex", n->ifindex);
		rm_json_u64(j, "gen", n->gen);
		rm_json_u64(j, "conns", w->conns->node[i]);
		rm_json_u64(j, "conns_recent", w->conns->recent[i]);
		if (n->quic_sid_len && n->quic_sid_len <= RM_QUIC_SID_MAX) {
			rm_format_hex(n->quic_sid, n->quic_sid_len, text);
			rm_json_str(j, "server_id", text);
		}
		health_json(j, m, n);
		rm_json_obj_close(j);
	}
	rm_json_arr_close(j);
	rm_json_obj_close(j);
}

static void show_text(struct live *lv, struct view *w)
{
	const struct rm_ring *r = &w->ring;
	const __u64 *arcs = w->arcs;
	__u32 svc = w->svc;
	const struct rm_svc_meta *m = &lv->old->svc[svc];
	char text[200], mac[80], bar[64];
	double max = 0;

	for (__u32 k = 0; k < r->n_nodes; k++)
		if (arcs[k] / RM_KEYSPACE > max)
			max = arcs[k] / RM_KEYSPACE;
	live_svc_text(m, text, sizeof(text));
	if (m->ring.scheme == RM_RING_RINGMASTER)
		printf("service %s (id %u): %s, %u vnodes per weight, %u "
		       "entries\n",
		       m->name, svc, text, m->vnodes, r->n);
	else
		printf("service %s (id %u): %s, %u entries\n", m->name, svc,
		       text, r->n);
	if (!w->matches)
		printf("  warning: the live ring differs from the "
		       "configuration (an interrupted change?): `ringctl save "
		       "| ringctl restore -` rebuilds it\n");
	health_check_text(m);
	quic_key_show(lv, svc, NULL);
	w->ret = hops_show_text(lv, svc);
	printf("  %-20s %-8s %-26s %6s %7s %8s %8s %7s  %-17s %-10s\n",
	       "NODE", "STATE", "HEALTH", "WEIGHT", "VNODES", "SHARE", "CONNS",
	       "RECENT", "MAC", "DEV");
	for (__u32 i = 0; i < RM_MAX_NODES; i++) {
		const struct rm_node *n = &lv->old->node[i];
		char health[64];
		double share;

		if (n->state == RM_NODE_FREE || n->svc_id != svc)
			continue;
		share = node_keys(r, arcs, i) / RM_KEYSPACE;
		node_reach(n, mac, sizeof(mac));
		rm_bar(bar, sizeof(bar), share, max, 30);
		health_text(m, n, health, sizeof(health));
		printf("  %-20s %-8s %-26s %6u %7u %7.3f%% %8u %7u  %-17s "
		       "%-10s %s\n",
		       n->name, rm_node_state_name(n->state), health, n->weight,
		       node_vnodes(lv->old, svc, n), share * 100, w->conns->node[i],
		       w->conns->recent[i], mac, n->dev, bar);
		if (n->health.err[0] && n->health.state != RM_HEALTH_HEALTHY)
			printf("  %-20s last error: %s\n", "", n->health.err);
		if (n->quic_sid_len && n->quic_sid_len <= RM_QUIC_SID_MAX) {
			rm_format_hex(n->quic_sid, n->quic_sid_len, text);
			printf("  %-20s QUIC-LB server ID %s\n", "", text);
		}
	}
}

/* Read the ring once: the shares and the consistency check use it. */
static int view_service(struct live *lv, __u32 svc,
			const struct rm_conn_count *conns, struct rm_json *j)
{
	static const __u64 no_keys[1];
	struct view w = {.svc = svc, .conns = conns, .arcs = no_keys};
	int err;

	/* no ring yet (a change cut short after the service's record was
	 * written), or none this build reads (an older layout's, before
	 * `ringload attach --migrate`): show it empty and flagged rather
	 * than fail */
	err = rm_state_ring_owned(&lv->st, lv->old, svc, &w.ring, &w.owned,
				  &w.matches);
	if (err && err != -ENOENT)
		return ctl_runtime_error("%s", rm_errmsg());
	if (!err)
		w.arcs = w.owned.keys;
	if (j)
		show_json(j, lv, &w);
	else
		show_text(lv, &w);
	rm_ring_owned_free(&w.owned);
	rm_ring_free(&w.ring);
	return w.ret;
}

/* Connection counts: entries of rm_conns the data plane still honours,
 * per node (its slot and current gen, ACTIVE or DRAINING, UDP not idle
 * past the timeout), and of those the ones with a packet in the last
 * RM_CONN_RECENT_S seconds. Entries count flows, not open connections:
 * the table does not follow FIN/RST, so a closed TCP connection's entry
 * stays until the LRU needs its room (RECENT shows the live ones, which
 * is what a drain waits for). Stale entries (their node deleted, down or
 * its slot reused; UDP idle too long) can no longer be tied to a node and
 * are only counted for the whole table. */
static void show_table_text(const struct rm_conn_count *c, __u32 udp_timeout)
{
	printf("connection table: %llu of %u entries in use (%llu stale); "
	       "UDP idle timeout %u s\n"
	       "  CONNS: entries still sending flows to the node; RECENT: "
	       "those with a packet in the last %d s\n",
	       (unsigned long long)c->entries, c->max_entries,
	       (unsigned long long)c->stale, udp_timeout, RM_CONN_RECENT_S);
}

static void show_table_json(struct rm_json *j, const struct rm_conn_count *c,
			    __u32 udp_timeout)
{
	rm_json_obj_open(j, "conn_table");
	rm_json_u64(j, "max_entries", c->max_entries);
	rm_json_u64(j, "entries", c->entries);
	rm_json_u64(j, "stale", c->stale);
	rm_json_u64(j, "recent_s", RM_CONN_RECENT_S);
	rm_json_u64(j, "udp_timeout_s", udp_timeout);
	rm_json_obj_close(j);
}

int cmd_show(struct ctl_opts *o)
{
	struct rm_conn_count *conns = NULL;
	struct rm_json j;
	struct live lv;
	int ret, only = -1;

	if (o->argc > 1)
		return ctl_usage_error("show: expected at most one SERVICE");
	if (o->argc && (ret = live_name("service", o->argv[0])))
		return ret;
	ret = live_open(o, &lv, RM_LOCK_SH);
	if (ret)
		return ret;
	if (o->argc && (only = live_svc(&lv, o->argv[0])) < 0) {
		live_close(&lv);
		return RM_EXIT_RUNTIME;
	}
	conns = rm_scratch_alloc(sizeof(*conns));
	if (!conns) {
		ret = ctl_runtime_error("out of memory");
		goto out;
	}
	if (rm_state_conn_count(&lv.st, lv.old, conns)) {
		ret = ctl_runtime_error("%s", rm_errmsg());
		goto out;
	}
	if (o->json) {
		rm_json_init(&j, stdout);
		rm_json_obj_open(&j, NULL);
		rm_json_str(&j, "pin_dir", o->pin_dir);
		show_table_json(&j, conns, rm_udp_timeout(&lv.old->cfg));
		health_counters(&j, o->pin_dir);
		rm_applied_json(&j, o->pin_dir);
		rm_json_arr_open(&j, "services");
	}
	for (__u32 i = 0; i < RM_MAX_SERVICES && !ret; i++) {
		if (!lv.old->svc[i].in_use || (only >= 0 && (int)i != only))
			continue;
		ret = view_service(&lv, i, conns, o->json ? &j : NULL);
	}
	if (o->json) {
		rm_json_arr_close(&j);
		rm_json_obj_close(&j);
		rm_json_end(&j);
	} else if (!ret) {
		show_table_text(conns, rm_udp_timeout(&lv.old->cfg));
		rm_applied_text(stdout, o->pin_dir);
	}
out:
	rm_scratch_free(conns);
	live_close(&lv);
	return ret;
}

/* The flow as the data plane hashes it. */
static int lookup_flow(struct ctl_opts *o, const struct rm_svc_meta *m,
		       struct rm_flow *f)
{
	__u8 fam = m->key.flags & RM_SVCK_V6 ? RM_FAMILY_V6 : RM_FAMILY_V4;

	memset(f, 0, sizeof(*f));
	if (o->src.family != fam)
		return ctl_usage_error("lookup: --src %s is not IPv%u like "
				       "service %s",
				       o->src.text, fam, m->name);
	memcpy(f->src, o->src.addr, sizeof(f->src));
	memcpy(f->dst, m->key.vip, sizeof(f->dst));
	if (o->dst.set && o->dst.family != fam)
		return ctl_usage_error("lookup: --dst %s is not IPv%u like "
				       "service %s",
				       o->dst.text, fam, m->name);
	if (o->dst.set)
		memcpy(f->dst, o->dst.addr, sizeof(f->dst));
	f->family = fam;
	f->proto = m->key.proto;
	if (m->flags & RM_SVC_F_3TUPLE)
		return 0; /* ports are not hashed */
	/* --sport-file gives the ports itself (lookup_flow_file) */
	if (!o->sport.set && !o->sport_file)
		return ctl_usage_error("lookup: --sport is required for a "
				       "5-tuple service");
	f->sport = htons((__u16)o->sport.val);
	f->dport = o->dport.set ? htons((__u16)o->dport.val) : m->key.port;
	return 0;
}

/* The owner of one key; 0, or the exit code after the message. */
static int key_owner(struct live *lv, int svc, const char *spec,
		     const char *key, __u32 *id, __u32 *h)
{
	const struct rm_svc_meta *m = &lv->old->svc[svc];
	int err, res;

	err = rm_key_owner(&lv->st, lv->old, svc, key, strlen(key), id, h,
			   &res);
	if (err == -EINVAL)
		return ctl_usage_error("lookup: '%s' is no key of --key %s "
				       "(%s): the data plane would route "
				       "such a request by its flow",
				       key, spec, rm_key_result_name(res));
	if (err == -ENOENT)
		return ctl_runtime_error("service '%s' has no active node: its "
					 "packets are dropped",
					 m->name);
	if (err)
		return ctl_runtime_error("%s", rm_errmsg());
	return 0;
}

/* lookup --key KEY / --qname NAME / --key-file FILE: the node the data
 * plane sends each key's requests to, computed by the same code
 * (rm_key_owner). A file gives a key a line (no line ending kept). */
static int lookup_key(struct ctl_opts *o, struct live *lv, int svc)
{
	const struct rm_svc_meta *m = &lv->old->svc[svc];
	const char *one = o->lookup_key ? o->lookup_key : o->qname;
	FILE *f = NULL;
	char spec[64], ring[80], mac[18], *line = NULL;
	size_t cap = 0;
	struct rm_json j;
	__u32 id, h;
	int ret = 0;

	rm_format_keyspec(&m->keyspec, spec, sizeof(spec));
	rm_format_ringspec(&m->ring, ring, sizeof(ring));
	if (!(m->flags & RM_SVC_F_KEYED))
		return ctl_usage_error("lookup: service %s routes by flow, not "
				       "by key: use --src/--sport (or add it "
				       "with --key)",
				       m->name);
	if (o->qname && m->keyspec.kind != RM_KEY_DNS)
		return ctl_usage_error("lookup: --qname is for --key dns "
				       "services; %s has --key %s: use --key",
				       m->name, spec);
	if (o->key_file) {
		f = strcmp(o->key_file, "-") ? fopen(o->key_file, "r") : stdin;
		if (!f)
			return ctl_runtime_error("lookup: --key-file %s: %s",
						 o->key_file, strerror(errno));
	}
	if (o->json) {
		rm_json_init(&j, stdout);
		if (f)
			rm_json_arr_open(&j, NULL);
	}
	for (;;) {
		const struct rm_node *n;
		const char *key = one;

		if (f) {
			ssize_t len = getline(&line, &cap, f);

			if (len < 0)
				break;
			while (len && (line[len - 1] == '\n' ||
				       line[len - 1] == '\r'))
				line[--len] = 0;
			key = line;
		}
		if (!key) {
			ret = ctl_usage_error("lookup: give --key KEY, --qname "
					      "NAME or --key-file FILE");
			break;
		}
		ret = key_owner(lv, svc, spec, key, &id, &h);
		if (ret)
			break;
		n = &lv->old->node[id];
		rm_format_mac(n->mac, mac);
		if (!o->json) {
			if (f)
				printf("%s %s\n", key, n->name);
			else
				printf("%s: key '%s' (%s, ring %s) hash "
				       "0x%08x -> node %s (slot %u, %s via "
				       "%s)\n",
				       m->name, key, spec, ring, h, n->name, id,
				       mac, n->dev);
		} else {
			rm_json_obj_open(&j, NULL);
			rm_json_str(&j, "service", m->name);
			rm_json_str(&j, "key", key);
			rm_json_str(&j, "extractor", spec);
			rm_json_str(&j, "ring", ring);
			rm_json_u64(&j, "hash", h);
			rm_json_str(&j, "node", n->name);
			rm_json_u64(&j, "node_id", id);
			rm_json_str(&j, "mac", mac);
			rm_json_str(&j, "dev", n->dev);
			rm_json_obj_close(&j);
		}
		if (!f)
			break;
	}
	if (o->json && !ret) {
		if (f)
			rm_json_arr_close(&j);
		rm_json_end(&j);
	}
	free(line);
	if (f && f != stdin)
		fclose(f);
	return ret;
}

/* One flow's owner, printed as a line of text or a JSON object; 0, or
 * the exit code after the message. */
static int lookup_one_flow(struct ctl_opts *o, struct live *lv, int svc,
			   const struct rm_slot *slots, __u32 nslots,
			   const struct rm_gens *g, const struct rm_flow *f,
			   __u16 file_sport, struct rm_json *j)
{
	/* no ring owner but a valid table entry: the flow still goes */
	static const struct rm_node none = {.name = "-", .dev = "-"};
	const char *svc_name = lv->old->svc[svc].name;
	char src[64], dst[64], mac[80], addr[64] = "";
	const struct rm_node *n;
	struct lookup_conn lc;
	__u32 h, id;
	int ret, owner;

	h = rm_flow_hash(&lv->old->cfg.seed, f);
	ret = lookup_conn_read(lv, f, &lc);
	if (ret)
		return ret;
	owner = rm_ring_lookup(slots, nslots, h, &id) /* RM_SEARCH_OK */ ||
			id >= RM_MAX_NODES
		    ? -1
		    : (int)id;
	if (owner < 0 && !(lc.found && lc.valid))
		return ctl_runtime_error("service '%s' has no active node: its "
					 "packets are dropped",
					 svc_name);
	n = owner >= 0 ? &lv->old->node[owner] : &none;
	rm_format_addr(f->src, f->family, src, sizeof(src));
	rm_format_addr(f->dst, f->family, dst, sizeof(dst));
	node_reach(n, mac, sizeof(mac));
	if (!j && o->sport_file) {
		printf("%u %s\n", file_sport, n->name);
		return 0;
	}
	if (!j) {
		printf("%s: %s:%u -> %s:%u/%s hash 0x%08x -> node %s (slot "
		       "%d, %s via %s)\n",
		       svc_name, src, ntohs(f->sport), dst, ntohs(f->dport),
		       rm_proto_name(f->proto), h, n->name, owner, mac, n->dev);
		lookup_conn_text(lv, &lc, owner);
		lookup_hops_text(lv, g, &lc, h, owner);
		return 0;
	}
	rm_json_obj_open(j, NULL);
	rm_json_str(j, "service", svc_name);
	rm_json_str(j, "node", n->name);
	rm_json_i64(j, "node_id", owner);
	rm_json_u64(j, "hash", h);
	rm_json_str(j, "src", src);
	rm_json_u64(j, "sport", ntohs(f->sport));
	rm_json_str(j, "dst", dst);
	rm_json_u64(j, "dport", ntohs(f->dport));
	rm_json_str(j, "proto", rm_proto_name(f->proto));
	rm_format_mac(n->mac, mac);
	rm_json_str(j, "mac", mac);
	rm_json_str(j, "dev", n->dev);
	node_reach_json(j, n);
	if (n->addr_family)
		rm_format_addr(n->addr, (__u8)n->addr_family, addr,
			       sizeof(addr));
	rm_json_str(j, "addr", addr);
	if (n->via == RM_VIA_GUE)
		rm_json_u64(j, "gue_sport", ntohs(rm_gue_sport(f)));
	lookup_conn_json(j, lv, &lc, owner);
	lookup_hops_json(j, lv, g, &lc, h, owner);
	rm_json_obj_close(j);
	return 0;
}

/* A source port of --sport-file: digits, nothing else on the line but
 * blanks. */
static int parse_sport_line(char *line, __u16 *port)
{
	char *end;
	unsigned long v;

	line += strspn(line, " \t");
	if (*line < '0' || *line > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(line, &end, 10);
	end += strspn(end, " \t\r\n");
	if (errno || *end || v > 65535)
		return -EINVAL;
	*port = (__u16)v;
	return 0;
}

/* The ports of --sport-file, all read before anything is printed: a bad
 * line leaves stdout empty (no half a JSON array). */
static int read_sport_file(const char *path, __u16 **ports, size_t *count)
{
	unsigned long lineno = 0;
	size_t n = 0, cap = 0, linecap = 0;
	__u16 *v = NULL, *nv, port;
	char *line = NULL;
	FILE *in;
	int ret = 0;

	in = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!in)
		return ctl_runtime_error("lookup: --sport-file %s: %s", path,
					 strerror(errno));
	while (getline(&line, &linecap, in) >= 0) {
		lineno++;
		if (parse_sport_line(line, &port)) {
			ret = ctl_usage_error("lookup: --sport-file %s line "
					      "%lu: not a port (0-65535), "
					      "one a line",
					      path, lineno);
			goto out;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				ret = ctl_runtime_error("lookup: out of "
							"memory");
				goto out;
			}
			v = nv;
		}
		v[n++] = port;
	}
	if (ferror(in))
		ret = ctl_runtime_error("lookup: --sport-file %s: %s", path,
					strerror(errno));
out:
	free(line);
	if (in != stdin)
		fclose(in);
	if (ret) {
		free(v);
		return ret;
	}
	*ports = v;
	*count = n;
	return 0;
}

/* lookup --src ADDR --sport-file FILE: the owner of each flow from ADDR
 * and a source port read from FILE (one a line), in one pass over the
 * state: a batch of flows costs one ringctl run, not one each. */
static int lookup_flow_file(struct ctl_opts *o, struct live *lv, int svc,
			    const struct rm_slot *slots, __u32 nslots,
			    const struct rm_gens *g, struct rm_flow *f,
			    struct rm_json *j)
{
	__u16 *ports = NULL;
	size_t i, n = 0;
	int ret;

	ret = read_sport_file(o->sport_file, &ports, &n);
	if (ret)
		return ret;
	if (j)
		rm_json_arr_open(j, NULL);
	for (i = 0; i < n && !ret; i++) {
		/* a 3-tuple service hashes no port: every line is one flow */
		if (!(lv->old->svc[svc].flags & RM_SVC_F_3TUPLE))
			f->sport = htons(ports[i]);
		ret = lookup_one_flow(o, lv, svc, slots, nslots, g, f,
				      ports[i], j);
	}
	if (j && !ret)
		rm_json_arr_close(j);
	free(ports);
	return ret;
}

int cmd_lookup(struct ctl_opts *o)
{
	struct rm_slot *slots = NULL;
	struct rm_json j, *jp = NULL;
	struct rm_gens g = {0};
	struct rm_flow f;
	struct live lv;
	__u32 nslots;
	int ret, svc, keyed;

	if (o->argc != 1)
		return ctl_usage_error("lookup: expected one SERVICE");
	if ((ret = live_name("service", o->argv[0])))
		return ret;
	keyed = !!o->lookup_key + !!o->qname + !!o->key_file + !!o->cid;
	if (keyed > 1)
		return ctl_usage_error("lookup: --key, --qname, --key-file, "
				       "--cid: give one");
	if (keyed && (o->src.set || o->sport.set || o->sport_file))
		return ctl_usage_error("lookup: --key/--qname/--key-file/--cid "
				       "name keys, --src/--sport a flow: give "
				       "one");
	if (!keyed && !o->src.set)
		return ctl_usage_error("lookup: --src ADDR (a flow) or --key "
				       "KEY / --qname NAME (a keyed service) "
				       "or --cid HEX (a QUIC service) is "
				       "required");
	if (o->sport.set && o->sport_file)
		return ctl_usage_error("lookup: --sport PORT or --sport-file "
				       "FILE: give one");
	ret = live_open(o, &lv, RM_LOCK_SH);
	if (ret)
		return ret;
	svc = live_svc(&lv, o->argv[0]);
	if (svc < 0) {
		ret = RM_EXIT_RUNTIME;
		goto out;
	}
	if (o->cid) {
		ret = lookup_cid(o, &lv, svc);
		goto out;
	}
	if (keyed) {
		ret = lookup_key(o, &lv, svc);
		goto out;
	}
	ret = lookup_flow(o, &lv.old->svc[svc], &f);
	if (ret)
		goto out;
	if (rm_state_ring_slots(&lv.st, svc, &slots, &nslots) ||
	    rm_gens_read(&lv.st, lv.old, svc, &g)) {
		ret = ctl_runtime_error("%s", rm_errmsg());
		goto out;
	}
	if (o->json) {
		rm_json_init(&j, stdout);
		jp = &j;
	}
	if (o->sport_file)
		ret = lookup_flow_file(o, &lv, svc, slots, nslots, &g, &f, jp);
	else
		ret = lookup_one_flow(o, &lv, svc, slots, nslots, &g, &f, 0,
				      jp);
	if (jp && !ret)
		rm_json_end(jp);
out:
	rm_gens_free(&g);
	free(slots);
	live_close(&lv);
	return ret;
}

int cmd_stats(struct ctl_opts *o)
{
	__u64 cnt[RM_CNT_MAX];
	struct rm_traffic *svc = NULL, *node = NULL;
	struct rm_json j;
	struct live lv;
	int ret;

	if (o->argc)
		return ctl_usage_error("stats: unexpected argument '%s'",
				       o->argv[0]);
	if (o->prometheus || o->textfile)
		return cmd_stats_prometheus(o);
	ret = live_open(o, &lv, RM_LOCK_NONE);
	if (ret)
		return ret;
	svc = calloc(RM_MAX_SERVICES, sizeof(*svc));
	node = calloc(RM_MAX_NODES, sizeof(*node));
	if (!svc || !node) {
		ret = ctl_runtime_error("out of memory");
		goto out;
	}
	/* everything read before anything is printed */
	if (rm_state_counters(&lv.st, cnt) ||
	    rm_state_traffic_rows(&lv.st, lv.old, -1, svc, node)) {
		ret = ctl_runtime_error("%s", rm_errmsg());
		goto out;
	}
	if (o->json) {
		rm_json_init(&j, stdout);
		rm_json_obj_open(&j, NULL);
		rm_json_obj_open(&j, "counters");
	}
	for (int i = 0; i < RM_CNT_MAX; i++) {
		if (o->json)
			rm_json_u64(&j, rm_counter_names[i], cnt[i]);
		else
			printf("%-28s %14llu\n", rm_counter_names[i],
			       (unsigned long long)cnt[i]);
	}
	if (o->json) {
		rm_json_obj_close(&j);
		rm_json_arr_open(&j, "services");
	} else {
		printf("\n%-20s %-20s %14s %16s %12s\n", "SERVICE", "NODE",
		       "PACKETS", "BYTES", "NEW-FLOWS");
	}
	for (__u32 i = 0; i < RM_MAX_SERVICES; i++) {
		const struct rm_traffic *t = &svc[i];

		if (!lv.old->svc[i].in_use)
			continue;
		if (o->json) {
			rm_json_obj_open(&j, NULL);
			rm_json_str(&j, "name", lv.old->svc[i].name);
			rm_json_u64(&j, "packets", t->packets);
			rm_json_u64(&j, "bytes", t->bytes);
			rm_json_u64(&j, "new_flows", t->new_flows);
			rm_json_arr_open(&j, "nodes");
		} else {
			printf("%-20s %-20s %14llu %16llu %12llu\n",
			       lv.old->svc[i].name, "*",
			       (unsigned long long)t->packets,
			       (unsigned long long)t->bytes,
			       (unsigned long long)t->new_flows);
		}
		for (__u32 k = 0; k < RM_MAX_NODES; k++) {
			const struct rm_node *n = &lv.old->node[k];
			const struct rm_traffic *nt = &node[k];

			if (n->state == RM_NODE_FREE || n->svc_id != i)
				continue;
			if (!o->json) {
				printf("%-20s %-20s %14llu %16llu %12llu\n", "",
				       n->name, (unsigned long long)nt->packets,
				       (unsigned long long)nt->bytes,
				       (unsigned long long)nt->new_flows);
				continue;
			}
			rm_json_obj_open(&j, NULL);
			rm_json_str(&j, "name", n->name);
			rm_json_u64(&j, "packets", nt->packets);
			rm_json_u64(&j, "bytes", nt->bytes);
			rm_json_u64(&j, "new_flows", nt->new_flows);
			rm_json_obj_close(&j);
		}
		if (o->json) {
			rm_json_arr_close(&j);
			rm_json_obj_close(&j);
		}
	}
	if (o->json) {
		rm_json_arr_close(&j);
		health_counters(&j, o->pin_dir);
		rm_json_obj_close(&j);
		rm_json_end(&j);
	} else {
		health_counters(NULL, o->pin_dir);
	}
out:
	free(svc);
	free(node);
	live_close(&lv);
	return ret;
}
