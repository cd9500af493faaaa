// SPDX-License-Identifier: GPL-2.0
/* service set (a service's health check) and how show, save and stats
 * present checks and node health. The checker itself is ringhealth. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cmd_live.h"
#include "health.h"
#include "json.h"

/* The fields of struct rm_check an edit sets (the others stay). */
enum {
	CK_TYPE = 1 << 0, CK_PORT = 1 << 1, CK_PATH = 1 << 2,
	CK_STATUS = 1 << 3, CK_HOST = 1 << 4, CK_PAYLOAD = 1 << 5,
	CK_EXPECT = 1 << 6, CK_CMD = 1 << 7, CK_INTERVAL = 1 << 8,
	CK_TIMEOUT = 1 << 9, CK_FALL = 1 << 10, CK_RISE = 1 << 11,
	CK_PANIC = 1 << 12,
};

int rm_parse_duration_ms(const char *s, __u32 *ms)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	if (!strcmp(end, "s"))
		v *= 1000;
	else if (*end && strcmp(end, "ms"))
		return -EINVAL;
	if (v > 86400000.0 || v != v)
		return -ERANGE;
	*ms = (__u32)(v + 0.5);
	return 0;
}

int live_interval(const char *cmd, const char *val, __u32 min_ms,
		  __u32 max_ms, double def_s, double *out_s)
{
	__u32 ms;

	*out_s = def_s;
	if (!val)
		return 0;
	if (rm_parse_duration_ms(val, &ms) || ms < min_ms || ms > max_ms)
		return ctl_usage_error("%s: --interval '%s': expected a duration "
				       "of %u ms to %u s, e.g. 500ms or 2s",
				       cmd, val, min_ms, max_ms / 1000);
	*out_s = ms / 1000.0;
	return 0;
}

static int str_opt(const char *name, const char *val, char *dst, size_t size)
{
	if (strlen(val) >= size)
		return ctl_usage_error("service set: --%s is longer than %zu "
				       "characters",
				       name, size - 1);
	if (!rm_check_str_valid(val))
		return ctl_usage_error("service set: --%s '%s': no spaces or "
				       "control characters (in a payload write "
				       "\\s, \\n, \\r, \\t, \\xHH)",
				       name, val);
	snprintf(dst, size, "%s", val);
	return 0;
}

static int dur_opt(const char *name, const char *val, __u32 min, __u32 *out)
{
	if (rm_parse_duration_ms(val, out) || *out < min ||
	    *out > RM_CHECK_INTERVAL_MAX_MS)
		return ctl_usage_error("service set: --%s '%s': expected a "
				       "duration of %u ms to 1 h, e.g. 200ms "
				       "or 2s",
				       name, val, min);
	return 0;
}

static int svc_set_apply(struct edit *e, struct live *lv)
{
	int id = live_svc(lv, e->svc);
	struct rm_check *c, *w = &e->check;
	struct rm_hc_params p;
	unsigned int m = e->check_mask;

	if (id < 0)
		return RM_EXIT_RUNTIME;
	c = &lv->new->svc[id].check;
	if ((m & CK_TYPE) && w->type == RM_CHECK_NONE) {
		memset(c, 0, sizeof(*c));
		snprintf(e->done, sizeof(e->done),
			 "service %s: no health check (every node counts as "
			 "healthy)",
			 e->svc);
		return 0;
	}
	if (m & CK_TYPE)
		c->type = w->type;
	if (m & CK_PORT)
		c->port = w->port;
	if (m & CK_PATH)
		memcpy(c->path, w->path, sizeof(c->path));
	if (m & CK_STATUS)
		c->status = w->status;
	if (m & CK_HOST)
		memcpy(c->host, w->host, sizeof(c->host));
	if (m & CK_PAYLOAD)
		memcpy(c->payload, w->payload, sizeof(c->payload));
	if (m & CK_EXPECT)
		memcpy(c->expect, w->expect, sizeof(c->expect));
	if (m & CK_CMD)
		memcpy(c->cmd, w->cmd, sizeof(c->cmd));
	if (m & CK_INTERVAL)
		c->interval_ms = w->interval_ms;
	if (m & CK_TIMEOUT)
		c->timeout_ms = w->timeout_ms;
	if (m & CK_FALL)
		c->fall = w->fall;
	if (m & CK_RISE)
		c->rise = w->rise;
	if (m & CK_PANIC) {
		c->panic_pct = w->panic_pct;
		c->flags = (c->flags & ~RM_CHECK_F_NO_PANIC) |
			   (w->flags & RM_CHECK_F_NO_PANIC);
	}
	if (c->type == RM_CHECK_NONE)
		return ctl_runtime_error("service %s has no check yet: give "
					 "--check tcp|http|udp|exec",
					 e->svc);
	if (c->type == RM_CHECK_EXEC && !c->cmd[0])
		return ctl_runtime_error("service set %s: --check exec needs "
					 "--check-cmd PATH",
					 e->svc);
	rm_check_params(c, &p);
	if (p.timeout_ms > p.interval_ms)
		return ctl_runtime_error("service set %s: the timeout (%u ms) "
					 "is longer than the interval (%u ms): "
					 "give a shorter --timeout",
					 e->svc, p.timeout_ms, p.interval_ms);
	snprintf(e->done, sizeof(e->done),
		 "service %s: %s check every %u ms, timeout %u ms, fall %u, "
		 "rise %u, fail-open below %u%% healthy",
		 e->svc, rm_check_type_name(c->type), p.interval_ms,
		 p.timeout_ms, p.fall, p.rise, p.panic_pct);
	return 0;
}

/* A payload or expected reply: a valid string whose escapes decode. */
static int escaped_opt(const char *name, const char *val, char *dst,
		       size_t size)
{
	char tmp[RM_CHECK_STR_MAX];
	int ret = str_opt(name, val, dst, size);

	if (!ret && rm_check_unescape(dst, tmp, sizeof(tmp)) < 0)
		ret = ctl_usage_error("service set: --%s '%s': bad escape "
				      "(\\n \\r \\t \\s \\\\ \\xHH)",
				      name, val);
	return ret;
}

int svc_set_parse(struct ctl_opts *o, struct edit *e)
{
	struct rm_check *w = &e->check;
	int ret = 0;

	ret = live_svc_arg(o, "service set", e->svc, sizeof(e->svc));
	if (ret)
		return ret;
	if (o->check.set) {
		w->type = (__u32)o->check.val;
		e->check_mask |= CK_TYPE;
	}
	if (o->check_port.set) {
		w->port = (__u16)o->check_port.val;
		e->check_mask |= CK_PORT;
	}
	if (o->check_status.set) {
		w->status = (__u16)o->check_status.val;
		e->check_mask |= CK_STATUS;
	}
	if (o->check_path) {
		if (o->check_path[0] != '/')
			return ctl_usage_error("service set: --check-path '%s' "
					       "must start with /",
					       o->check_path);
		ret = str_opt("check-path", o->check_path, w->path,
			      sizeof(w->path));
		e->check_mask |= CK_PATH;
	}
	if (!ret && o->check_host) {
		ret = str_opt("check-host", o->check_host, w->host,
			      sizeof(w->host));
		e->check_mask |= CK_HOST;
	}
	if (!ret && o->check_payload) {
		ret = escaped_opt("check-payload", o->check_payload,
				  w->payload, sizeof(w->payload));
		e->check_mask |= CK_PAYLOAD;
	}
	if (!ret && o->check_expect) {
		ret = escaped_opt("check-expect", o->check_expect, w->expect,
				  sizeof(w->expect));
		e->check_mask |= CK_EXPECT;
	}
	if (!ret && o->check_cmd) {
		if (o->check_cmd[0] != '/')
			return ctl_usage_error("service set: --check-cmd '%s': "
					       "give an absolute path (it runs "
					       "with RM_NODE, RM_SERVICE, "
					       "RM_ADDR, RM_PORT in its "
					       "environment)",
					       o->check_cmd);
		ret = str_opt("check-cmd", o->check_cmd, w->cmd,
			      sizeof(w->cmd));
		e->check_mask |= CK_CMD;
	}
	if (!ret && o->interval) {
		ret = dur_opt("interval", o->interval, RM_CHECK_INTERVAL_MIN_MS,
			      &w->interval_ms);
		e->check_mask |= CK_INTERVAL;
	}
	if (!ret && o->timeout) {
		ret = dur_opt("timeout", o->timeout, RM_CHECK_TIMEOUT_MIN_MS,
			      &w->timeout_ms);
		e->check_mask |= CK_TIMEOUT;
	}
	if (o->fall.set) {
		w->fall = (__u8)o->fall.val;
		e->check_mask |= CK_FALL;
	}
	if (o->rise.set) {
		w->rise = (__u8)o->rise.val;
		e->check_mask |= CK_RISE;
	}
	if (o->panic_share.set) {
		w->panic_pct = (__u8)o->panic_share.val;
		w->flags = o->panic_share.val ? 0 : RM_CHECK_F_NO_PANIC;
		e->check_mask |= CK_PANIC;
	}
	if (ret)
		return ret;
	if (!e->check_mask)
		return ctl_usage_error("service set: nothing to set: give "
				       "--check TYPE and/or its options "
				       "(ringctl service set --help)");
	e->apply = svc_set_apply;
	return 0;
}

/* ---- presenting ------------------------------------------------------- */

void health_save_line(FILE *f, const struct rm_svc_meta *m)
{
	const struct rm_check *c = &m->check;

	if (c->type == RM_CHECK_NONE)
		return;
	fprintf(f, "service set %s --check %s", m->name,
	       rm_check_type_name(c->type));
	if (c->port)
		fprintf(f, " --check-port %u", c->port);
	if (c->path[0])
		fprintf(f, " --check-path %s", c->path);
	if (c->status)
		fprintf(f, " --check-status %u", c->status);
	if (c->host[0])
		fprintf(f, " --check-host %s", c->host);
	if (c->payload[0])
		fprintf(f, " --check-payload %s", c->payload);
	if (c->expect[0])
		fprintf(f, " --check-expect %s", c->expect);
	if (c->cmd[0])
		fprintf(f, " --check-cmd %s", c->cmd);
	if (c->interval_ms)
		fprintf(f, " --interval %ums", c->interval_ms);
	if (c->timeout_ms)
		fprintf(f, " --timeout %ums", c->timeout_ms);
	if (c->fall)
		fprintf(f, " --fall %u", c->fall);
	if (c->rise)
		fprintf(f, " --rise %u", c->rise);
	if (c->panic_pct || (c->flags & RM_CHECK_F_NO_PANIC))
		fprintf(f, " --panic-share %u", c->panic_pct);
	fprintf(f, "\n");
}

void health_check_text(const struct rm_svc_meta *m)
{
	struct rm_hc_params p;

	if (m->check.type == RM_CHECK_NONE) {
		printf("  health check: none (ringctl service set %s --check "
		       "tcp|http|udp|exec)\n",
		       m->name);
		return;
	}
	rm_check_params(&m->check, &p);
	printf("  health check: %s port %u%s%s, every %u ms, timeout %u ms, "
	       "fall %u, rise %u, fail-open below %u%%\n",
	       rm_check_type_name(m->check.type),
	       p.port ? p.port : ntohs(m->key.port),
	       m->check.type == RM_CHECK_HTTP ? " " : "",
	       m->check.type == RM_CHECK_HTTP
		   ? (m->check.path[0] ? m->check.path : "/")
		   : "",
	       p.interval_ms, p.timeout_ms, p.fall, p.rise, p.panic_pct);
}

void health_check_json(struct rm_json *j, const struct rm_svc_meta *m)
{
	const struct rm_check *c = &m->check;
	struct rm_hc_params p;

	rm_check_params(c, &p);
	rm_json_obj_open(j, "check");
	rm_json_str(j, "type", rm_check_type_name(c->type));
	if (c->type != RM_CHECK_NONE) {
		rm_json_u64(j, "port", p.port ? p.port : ntohs(m->key.port));
		rm_json_u64(j, "interval_ms", p.interval_ms);
		rm_json_u64(j, "timeout_ms", p.timeout_ms);
		rm_json_u64(j, "fall", p.fall);
		rm_json_u64(j, "rise", p.rise);
		rm_json_u64(j, "panic_share", p.panic_pct);
		if (c->type == RM_CHECK_HTTP) {
			rm_json_str(j, "path", c->path[0] ? c->path : "/");
			rm_json_u64(j, "status", p.status);
			rm_json_str(j, "host", c->host);
		}
		if (c->type == RM_CHECK_UDP) {
			rm_json_str(j, "payload", c->payload);
			rm_json_str(j, "expect", c->expect);
		}
		if (c->type == RM_CHECK_EXEC)
			rm_json_str(j, "cmd", c->cmd);
	}
	rm_json_obj_close(j);
}

/* "healthy", "failing 1 of 3", "unhealthy since 12:01:02", ... */
void health_text(const struct rm_svc_meta *m, const struct rm_node *n,
		 char *out, size_t len)
{
	const struct rm_node_health *h = &n->health;
	struct rm_hc_params p;
	char when[32] = "?";
	time_t since = (time_t)h->since;
	struct tm tm;
	int k;

	rm_check_params(&m->check, &p);
	if (h->since && localtime_r(&since, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	switch (h->state) {
	case RM_HEALTH_HEALTHY:
		k = snprintf(out, len, "healthy");
		break;
	case RM_HEALTH_FAILING:
		k = snprintf(out, len, "failing %u of %u", h->count, p.fall);
		break;
	case RM_HEALTH_UNHEALTHY:
		k = snprintf(out, len, "unhealthy since %s", when);
		if (h->count && k >= 0 && (size_t)k < len)
			k += snprintf(out + k, len - k, " (%u of %u ok)",
				      h->count, p.rise);
		break;
	default:
		k = snprintf(out, len, "unchecked");
		break;
	}
	if (k >= 0 && (size_t)k < len && (h->flags & RM_HEALTH_F_PANIC))
		k += snprintf(out + k, len - k, ", kept: fail-open");
	if (k >= 0 && (size_t)k < len && (h->flags & RM_HEALTH_F_DAMPED))
		snprintf(out + k, len - k, ", damped");
}

void health_json(struct rm_json *j, const struct rm_svc_meta *m,
		 const struct rm_node *n)
{
	const struct rm_node_health *h = &n->health;
	struct rm_hc_params p;
	char addr[64] = "";

	rm_check_params(&m->check, &p);
	if (n->addr_family)
		rm_format_addr(n->addr, (__u8)n->addr_family, addr,
			       sizeof(addr));
	rm_json_str(j, "addr", addr);
	rm_json_bool(j, "in_ring", rm_node_in_ring(n));
	rm_json_obj_open(j, "health");
	rm_json_str(j, "state", rm_health_state_name(h->state));
	rm_json_bool(j, "out", h->out);
	rm_json_u64(j, "count", h->count);
	rm_json_u64(j, "of", h->state == RM_HEALTH_UNHEALTHY ? p.rise : p.fall);
	rm_json_u64(j, "since", h->since);
	rm_json_bool(j, "fail_open", h->flags & RM_HEALTH_F_PANIC);
	rm_json_bool(j, "damped", h->flags & RM_HEALTH_F_DAMPED);
	rm_json_str(j, "error", h->err);
	rm_json_obj_close(j);
}

/* The checker's counters, if one ever ran on this pin dir. */
void health_counters(struct rm_json *j, const char *pin_dir)
{
	__u64 cnt[RM_HC_CNT_MAX];
	int fd = rm_hc_counters_open(pin_dir, false);
	bool have = fd >= 0 && !rm_hc_counters_read(fd, cnt);

	if (fd >= 0)
		close(fd);
	if (j) {
		rm_json_obj_open(j, "health_checker");
		rm_json_bool(j, "ran", have);
		for (int i = 0; i < RM_HC_CNT_MAX && have; i++)
			rm_json_u64(j, rm_hc_counter_names[i], cnt[i]);
		rm_json_obj_close(j);
		return;
	}
	if (!have) {
		printf("\nhealth checker: never ran on this pin dir "
		       "(ringhealth)\n");
		return;
	}
	printf("\nhealth checker\n");
	for (int i = 0; i < RM_HC_CNT_MAX; i++)
		printf("%-28s %14llu\n", rm_hc_counter_names[i],
		       (unsigned long long)cnt[i]);
}
