// SPDX-License-Identifier: GPL-2.0
/* The VIP is announced (BIRD's static protocol enabled) only while this
 * director can forward it: its XDP program attached somewhere, its state
 * seeded with services, a revision applied by ringsync and, when
 * --fresh-s is set, confirmed current that recently. Checked once per
 * loop; BIRD is told again every time (it may have restarted with the
 * protocol disabled), and transitions are logged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "apply.h"
#include "ringsync.h"

static bool status_ok(const struct sync_opts *o, char *why, size_t len)
{
	char *argv[] = {(char *)o->ringload, "status", "--json", "--pin-dir",
			(char *)o->pin_dir, NULL};
	struct sync_buf out = {0}, err = {0};
	json_object *st = NULL, *v, *ifs;
	bool attached = false, ok = false;
	int rc = sync_run(argv, "", 0, &out, &err);

	if (rc) {
		snprintf(why, len, "ringload status failed: %s",
			 sync_last_line(&err));
		goto out;
	}
	st = json_tokener_parse(out.p);
	if (json_object_object_get_ex(st, "interfaces", &ifs))
		for (size_t i = 0; i < json_object_array_length(ifs); i++)
			if (json_object_object_get_ex(
				json_object_array_get_idx(ifs, i), "attached",
				&v) &&
			    json_object_get_boolean(v))
				attached = true;
	if (!attached)
		snprintf(why, len, "XDP program not attached");
	else if (!json_object_object_get_ex(st, "seeded", &v) ||
		 !json_object_get_boolean(v))
		snprintf(why, len, "state not seeded");
	else if (!json_object_object_get_ex(st, "services", &v) ||
		 !json_object_get_int(v))
		snprintf(why, len, "no service defined");
	else
		ok = true;
out:
	json_object_put(st);
	free(out.p);
	free(err.p);
	return ok;
}

static bool can_forward(const struct sync_opts *o, char *why, size_t len)
{
	struct rm_applied a;
	__u64 now = rm_realtime_ns();

	if (rm_applied_read(o->pin_dir, &a) || !a.applied_ns) {
		snprintf(why, len, "no revision applied yet");
		return false;
	}
	if (o->fresh_s && now - a.checked_ns > (__u64)o->fresh_s * 1000000000ull) {
		snprintf(why, len, "revision %llu not confirmed for %.0f s",
			 (unsigned long long)a.revision,
			 (now - a.checked_ns) / 1e9);
		return false;
	}
	return status_ok(o, why, len);
}

static int bird(const struct sync_opts *o, const char *verb)
{
	char *argv[] = {(char *)o->birdc, "-s", (char *)o->bird_socket,
			(char *)verb, (char *)o->bird_protocol, NULL};
	struct sync_buf out = {0}, err = {0};
	int rc = sync_run(argv, "", 0, &out, &err);

	static bool failing;

	/* birdc exits 0 even when BIRD refuses; it says so in the text */
	if (!rc && strstr(out.p, "syntax error"))
		rc = 1;
	if (rc && !failing) /* once per outage of BIRD, not per loop */
		sync_log("birdc %s %s failed (%d): %s", verb, o->bird_protocol,
			 rc, *err.p ? sync_last_line(&err) : sync_last_line(&out));
	if (!rc && failing)
		sync_log("birdc %s %s works again", verb, o->bird_protocol);
	failing = rc;
	free(out.p);
	free(err.p);
	return rc;
}

void announce_update(const struct sync_opts *o, bool *announced, bool *known)
{
	char why[160] = "";
	bool want;

	if (!o->bird_socket)
		return;
	want = can_forward(o, why, sizeof(why));
	if (bird(o, want ? "enable" : "disable"))
		return;
	if (!*known || want != *announced)
		sync_log("%s %s%s%s", want ? "announcing" : "withdrawing",
			 o->bird_protocol, want ? "" : ": ", why);
	*announced = want;
	*known = true;
}

void announce_withdraw(const struct sync_opts *o)
{
	if (o->bird_socket && !bird(o, "disable"))
		sync_log("withdrawn %s (ringsync stopping)", o->bird_protocol);
}
