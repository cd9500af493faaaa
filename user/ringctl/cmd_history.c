// SPDX-License-Identifier: GPL-2.0
/* The change log from ringctl's side: every committed change is logged
 * (history_log, called by live_commit), and `ringctl history` prints it. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cmd_live.h"
#include "history.h"
#include "json.h"

static char cmdline[RM_HISTORY_WHAT];

void history_set_cmdline(int argc, char **argv)
{
	size_t len = 0;

	cmdline[0] = 0;
	for (int i = 0; i < argc && len < sizeof(cmdline); i++)
		len += snprintf(cmdline + len, sizeof(cmdline) - len, "%s%s",
				i ? " " : "", i ? argv[i] : "ringctl");
}

/* "ringctl" and the user, as sudo or the uid says. */
static void who(char *out, size_t len)
{
	const char *user = getenv("SUDO_USER");
	struct passwd *pw = user ? NULL : getpwuid(getuid());

	if (!user)
		user = pw ? pw->pw_name : "?";
	snprintf(out, len, "ringctl:%s", user);
}

void history_log(struct live *lv, const struct rm_moved *m)
{
	char w[RM_HISTORY_WHO];

	who(w, sizeof(w));
	if (m && m->counted
		? rm_history_append_moved(&lv->st, w, cmdline, m)
		: rm_history_append(&lv->st, w, cmdline, lv->old, lv->new))
		fprintf(stderr,
			"ringctl: warning: the change is made but not logged "
			"in the history: %s\n",
			rm_errmsg());
}

static void format_time(__u64 ns, char *out, size_t len)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int cmd_history(struct ctl_opts *o)
{
	struct rm_history_head head;
	struct rm_history_rec *recs;
	char when[32];
	struct rm_json j;
	__u32 n;

	if (o->argc)
		return ctl_usage_error("history: unexpected argument '%s'",
				       o->argv[0]);
	if (rm_history_read(o->pin_dir, &head, &recs, &n))
		return ctl_runtime_error("%s", rm_errmsg());
	if (o->json) {
		rm_json_init(&j, stdout);
		rm_json_obj_open(&j, NULL);
		rm_json_u64(&j, "appended", head.appended);
		rm_json_u64(&j, "kept", n);
		rm_json_u64(&j, "ring_swaps", head.swaps);
		rm_json_arr_open(&j, "changes");
	} else if (!n) {
		printf("no change recorded in %s\n", o->pin_dir);
	} else {
		printf("%-6s %-20s %-16s %8s %10s  %s\n", "SEQ", "TIME (UTC)",
		       "WHO", "SERVICES", "MOVED", "WHAT");
	}
	for (__u32 i = 0; i < n; i++) {
		const struct rm_history_rec *r = &recs[i];

		format_time(r->time_ns, when, sizeof(when));
		if (!o->json) {
			printf("%-6llu %-20s %-16s %8u %9.4f%%  %s\n",
			       (unsigned long long)r->seq, when, r->who,
			       r->services, r->moved_keys / RM_KEYSPACE * 100,
			       r->what);
			continue;
		}
		rm_json_obj_open(&j, NULL);
		rm_json_u64(&j, "seq", r->seq);
		rm_json_str(&j, "time", when);
		rm_json_u64(&j, "time_ns", r->time_ns);
		rm_json_str(&j, "who", r->who);
		rm_json_str(&j, "what", r->what);
		rm_json_u64(&j, "services", r->services);
		rm_json_u64(&j, "moved_keys", r->moved_keys);
		rm_json_num(&j, "moved_share", r->moved_keys / RM_KEYSPACE);
		rm_json_obj_close(&j);
	}
	if (o->json) {
		rm_json_arr_close(&j);
		rm_json_obj_close(&j);
		rm_json_end(&j);
	}
	free(recs);
	return RM_EXIT_OK;
}
