// SPDX-License-Identifier: GPL-2.0
/* Health checks, the pure part: see health.h for the rules. */
#include <ctype.h>
#include <math.h>
#include <string.h>
#include "health.h"

void rm_check_params(const struct rm_check *c, struct rm_hc_params *p)
{
	p->interval_ms = c->interval_ms ? c->interval_ms
					: RM_CHECK_DEF_INTERVAL_MS;
	p->timeout_ms = c->timeout_ms ? c->timeout_ms : RM_CHECK_DEF_TIMEOUT_MS;
	p->fall = c->fall ? c->fall : RM_CHECK_DEF_FALL;
	p->rise = c->rise ? c->rise : RM_CHECK_DEF_RISE;
	p->panic_pct = (c->flags & RM_CHECK_F_NO_PANIC) ? 0
		       : c->panic_pct			? c->panic_pct
							: RM_CHECK_DEF_PANIC_PCT;
	p->port = c->port;
	p->status = c->status ? c->status : RM_CHECK_DEF_STATUS;
}

static const char *const type_names[] = {
	[RM_CHECK_NONE] = "none", [RM_CHECK_TCP] = "tcp",
	[RM_CHECK_HTTP] = "http", [RM_CHECK_UDP] = "udp",
	[RM_CHECK_EXEC] = "exec",
};

const char *rm_check_type_name(__u32 type)
{
	return type < sizeof(type_names) / sizeof(type_names[0])
		   ? type_names[type]
		   : "?";
}

int rm_check_type_parse(const char *s)
{
	for (int i = 0; s && i < (int)(sizeof(type_names) /
				       sizeof(type_names[0]));
	     i++)
		if (!strcmp(s, type_names[i]))
			return i;
	return -1;
}

bool rm_check_str_valid(const char *s)
{
	for (; *s; s++)
		if (!isgraph((unsigned char)*s))
			return false;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int rm_check_unescape(const char *s, char *out, int size)
{
	int n = 0, hi, lo;
	char c;

	for (; *s; s++) {
		c = *s;
		if (c == '\\') {
			switch (*++s) {
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 's': c = ' '; break;
			case '\\': c = '\\'; break;
			case 'x':
				hi = s[1] ? hexval(s[1]) : -1;
				lo = hi >= 0 && s[2] ? hexval(s[2]) : -1;
				if (lo < 0)
					return -1;
				c = (char)(hi << 4 | lo);
				s += 2;
				break;
			default: return -1;
			}
		}
		if (n == size)
			return -1;
		out[n++] = c;
	}
	return n;
}

const char *rm_health_state_name(__u32 state)
{
	switch (state) {
	case RM_HEALTH_UNCHECKED: return "unchecked";
	case RM_HEALTH_HEALTHY: return "healthy";
	case RM_HEALTH_FAILING: return "failing";
	case RM_HEALTH_UNHEALTHY: return "unhealthy";
	default: return "?";
	}
}

/* The penalty as it stands at now_ms. */
static void decay(struct rm_hc_node *n, const struct rm_hc_params *p,
		  __u64 now_ms)
{
	double half = (double)p->interval_ms * RM_HC_FLAP_HALF_LIFE;

	if (now_ms > n->penalty_ms && n->penalty > 0)
		n->penalty *= exp2(-(double)(now_ms - n->penalty_ms) / half);
	n->penalty_ms = now_ms;
	if ((n->flags & RM_HEALTH_F_DAMPED) && n->penalty < RM_HC_FLAP_REUSE)
		n->flags &= ~RM_HEALTH_F_DAMPED;
}

static enum rm_hc_change go(struct rm_hc_node *n, __u32 state, __u32 count,
			    __u64 now_ms)
{
	enum rm_hc_change c = n->state != state ? RM_HC_STATE
			      : n->count != count ? RM_HC_COUNT
						  : RM_HC_SAME;

	if (n->state != state)
		n->since_ms = now_ms;
	n->state = state;
	n->count = count;
	return c;
}

enum rm_hc_change rm_hc_result(struct rm_hc_node *n,
			       const struct rm_hc_params *p, bool ok,
			       __u64 now_ms)
{
	__u32 damped = n->flags & RM_HEALTH_F_DAMPED;
	enum rm_hc_change c;

	decay(n, p, now_ms);
	switch (n->state) {
	case RM_HEALTH_UNCHECKED: /* the first result decides at once */
		return go(n, ok ? RM_HEALTH_HEALTHY : RM_HEALTH_UNHEALTHY, 0,
			  now_ms);
	case RM_HEALTH_HEALTHY:
	case RM_HEALTH_FAILING:
		if (ok)
			return go(n, RM_HEALTH_HEALTHY, 0, now_ms);
		if (n->count + 1 < p->fall)
			return go(n, RM_HEALTH_FAILING, n->count + 1, now_ms);
		n->penalty += RM_HC_FLAP_PENALTY;
		if (n->penalty > RM_HC_FLAP_SUPPRESS)
			n->flags |= RM_HEALTH_F_DAMPED;
		return go(n, RM_HEALTH_UNHEALTHY, 0, now_ms);
	default: /* unhealthy */
		if (!ok)
			c = go(n, RM_HEALTH_UNHEALTHY, 0, now_ms);
		else if (n->count + 1 >= p->rise &&
			 !(n->flags & RM_HEALTH_F_DAMPED))
			c = go(n, RM_HEALTH_HEALTHY, 0, now_ms);
		else /* a damped node keeps counting, capped at rise */
			c = go(n, RM_HEALTH_UNHEALTHY,
			       n->count + 1 < p->rise ? n->count + 1 : p->rise,
			       now_ms);
		/* damping lifted shows too */
		if (c == RM_HC_SAME && damped != (n->flags & RM_HEALTH_F_DAMPED))
			c = RM_HC_COUNT;
		return c;
	}
}

bool rm_hc_verdicts(struct rm_hc_member *m, __u32 n, __u32 panic_pct,
		    __u32 *healthy, __u32 *total)
{
	__u32 good = 0, all = 0;
	bool panic;

	for (__u32 i = 0; i < n; i++) {
		if (!m[i].eligible)
			continue;
		all++;
		good += m[i].health != RM_HEALTH_UNHEALTHY;
	}
	/* "fewer than panic_pct % healthy", in integers */
	panic = all && (__u64)good * 100 < (__u64)panic_pct * all;
	for (__u32 i = 0; i < n; i++)
		m[i].out = m[i].health == RM_HEALTH_UNHEALTHY &&
			   (!panic || !m[i].eligible);
	if (healthy)
		*healthy = good;
	if (total)
		*total = all;
	return panic;
}
