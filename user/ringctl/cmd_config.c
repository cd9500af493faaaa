// SPDX-License-Identifier: GPL-2.0
/* config: the connection table's settings in rm_config (UDP idle timeout,
 * insert rate), the outer sources, the second-chance handover window,
 * and the table they apply to. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd_live.h"
#include "json.h"

static int conf_apply(struct edit *e, struct live *lv)
{
	struct rm_config *c = &lv->new->cfg;
	char ho[16];

	if (e->udp_timeout_set)
		c->udp_timeout_s = e->udp_timeout;
	if (e->insert_rate_set)
		c->conn_insert_rate = e->insert_rate;
	if (e->encap_src4_set)
		c->encap_src4 = e->encap_src4;
	if (e->encap_src6_set)
		memcpy(c->encap_src6, e->encap_src6, sizeof(c->encap_src6));
	if (e->handover_set)
		c->handover_window_s = e->handover_s;
	handover_text(c->handover_window_s, ho, sizeof(ho));
	snprintf(e->done, sizeof(e->done),
		 "UDP idle timeout %u s, connection-table inserts %u/s per "
		 "CPU%s, handover window %s",
		 rm_udp_timeout(c), c->conn_insert_rate,
		 c->conn_insert_rate ? "" : " (no limit)", ho);
	return 0;
}

/* The outer source of one family: "none" clears it. */
static int encap_src_parse(const char *arg, __u8 family, __be32 addr[4])
{
	char fam = family == RM_FAMILY_V6 ? '6' : '4';
	__u8 got;

	memset(addr, 0, 16);
	if (!strcmp(arg, "none"))
		return 0;
	if (rm_parse_addr(arg, addr, &got) || got != family)
		return ctl_usage_error("config: --encap-src%c '%s': expected an "
				       "IPv%c address of this director, or none",
				       fam, arg, fam);
	return 0;
}

void encap_src_text(const struct rm_config *c, __u8 family, char *out,
		    size_t len)
{
	__be32 a[4] = {c->encap_src4};

	if (family == RM_FAMILY_V6)
		memcpy(a, c->encap_src6, sizeof(a));
	if (!(a[0] | a[1] | a[2] | a[3]))
		snprintf(out, len, "none");
	else
		rm_format_addr(a, family, out, len);
}

/* A handover window: seconds, or a number with s, m or h; 0 is off. */
static int handover_parse(const char *arg, __u32 *out)
{
	double v, unit = 1;
	char *end;

	errno = 0;
	v = strtod(arg, &end);
	if (!strcmp(end, "m"))
		unit = 60;
	else if (!strcmp(end, "h"))
		unit = 3600;
	else if (*end && strcmp(end, "s"))
		end = (char *)arg; /* refused below */
	v *= unit;
	if (errno || end == arg || !(v >= 0) || v > RM_HANDOVER_MAX_S)
		return ctl_usage_error("config: --handover-window '%s': expected "
				       "a duration up to %us, e.g. 900s, 15m or "
				       "1h, or 0 to turn second chance off",
				       arg, RM_HANDOVER_MAX_S);
	*out = (__u32)(v + 0.5);
	return 0;
}

void handover_text(__u32 s, char *out, size_t len)
{
	if (s && !(s % 3600))
		snprintf(out, len, "%uh", s / 3600);
	else if (s && !(s % 60))
		snprintf(out, len, "%um", s / 60);
	else
		snprintf(out, len, "%u%s", s, s ? "s" : "");
}

static bool conf_given(const struct ctl_opts *o)
{
	return o->udp_timeout.set || o->insert_rate.set || o->encap_src4 ||
	       o->encap_src6 || o->handover;
}

int conf_parse(struct ctl_opts *o, struct edit *e)
{
	__be32 a[4];
	int ret;

	if (o->argc)
		return ctl_usage_error("config: unexpected argument '%s'",
				  o->argv[0]);
	if (!conf_given(o))
		return ctl_usage_error("config: nothing to set: give "
				       "--udp-timeout S, --conn-insert-rate R, "
				       "--encap-src4 ADDR, --encap-src6 ADDR or "
				       "--handover-window DURATION");
	if (o->encap_src4) {
		ret = encap_src_parse(o->encap_src4, RM_FAMILY_V4, a);
		if (ret)
			return ret;
		e->encap_src4 = a[0];
		e->encap_src4_set = true;
	}
	if (o->encap_src6) {
		ret = encap_src_parse(o->encap_src6, RM_FAMILY_V6,
				      e->encap_src6);
		if (ret)
			return ret;
		e->encap_src6_set = true;
	}
	if (o->handover) {
		ret = handover_parse(o->handover, &e->handover_s);
		if (ret)
			return ret;
		e->handover_set = true;
	}
	e->udp_timeout = o->udp_timeout.val;
	e->udp_timeout_set = o->udp_timeout.set;
	e->insert_rate = o->insert_rate.val;
	e->insert_rate_set = o->insert_rate.set;
	e->apply = conf_apply;
	return 0;
}

/* Without options: the settings, and the table they apply to. */
static int conf_show(struct ctl_opts *o)
{
	struct rm_conn_count *cnt = malloc(sizeof(*cnt));
	const struct rm_config *c;
	char src4[64], src6[64], ho[16];
	struct rm_json j;
	struct live lv;
	int ret;

	if (!cnt)
		return ctl_runtime_error("out of memory");
	ret = live_open(o, &lv, RM_LOCK_SH);
	if (ret) {
		free(cnt);
		return ret;
	}
	if (rm_state_conn_count(&lv.st, lv.old, cnt)) {
		ret = ctl_runtime_error("%s", rm_errmsg());
		goto out;
	}
	c = &lv.old->cfg;
	encap_src_text(c, RM_FAMILY_V4, src4, sizeof(src4));
	encap_src_text(c, RM_FAMILY_V6, src6, sizeof(src6));
	handover_text(c->handover_window_s, ho, sizeof(ho));
	if (!o->json) {
		printf("udp-timeout       %u s (idle UDP flows forget their "
		       "node)\n"
		       "conn-insert-rate  %u%s\n"
		       "conn-table        %u entries, %llu in use, %llu "
		       "stale (size set at attach: ringload attach "
		       "--conn-table N)\n",
		       rm_udp_timeout(c), c->conn_insert_rate,
		       c->conn_insert_rate ? " entries/s per CPU"
					   : " (no limit)",
		       cnt->max_entries, (unsigned long long)cnt->entries,
		       (unsigned long long)cnt->stale);
		printf("encap-src4        %s\nencap-src6        %s\n", src4,
		       src6);
		printf("handover-window   %s%s\n", ho,
		       c->handover_window_s ? " (second chance: older owners "
					      "named to GUE nodes)"
					    : " (second chance off)");
		goto out;
	}
	rm_json_init(&j, stdout);
	rm_json_obj_open(&j, NULL);
	rm_json_u64(&j, "udp_timeout_s", rm_udp_timeout(c));
	rm_json_u64(&j, "conn_insert_rate", c->conn_insert_rate);
	rm_json_str(&j, "encap_src4", src4);
	rm_json_str(&j, "encap_src6", src6);
	rm_json_u64(&j, "handover_window_s", c->handover_window_s);
	rm_json_obj_open(&j, "conn_table");
	rm_json_u64(&j, "max_entries", cnt->max_entries);
	rm_json_u64(&j, "entries", cnt->entries);
	rm_json_u64(&j, "stale", cnt->stale);
	rm_json_obj_close(&j);
	rm_json_obj_close(&j);
	rm_json_end(&j);
out:
	live_close(&lv);
	free(cnt);
	return ret;
}

int cmd_config(struct ctl_opts *o)
{
	struct edit e;
	int ret;

	if (!conf_given(o)) {
		if (o->argc)
			return ctl_usage_error("config: unexpected argument "
					       "'%s'",
					       o->argv[0]);
		return conf_show(o);
	}
	memset(&e, 0, sizeof(e));
	e.state = -1;
	ret = conf_parse(o, &e);
	if (ret)
		return ret;
	return live_change_edit(o, &e);
}
