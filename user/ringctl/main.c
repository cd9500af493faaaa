// SPDX-License-Identifier: GPL-2.0
/* ringctl: plan rings offline and change a live director's services and
 * nodes. Commands and options: commands.c. Exit 0 ok, 1 runtime failure,
 * 2 usage. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cmd_live.h"

static char errmsg[512];

static int record(int code, const char *fmt, va_list ap)
{
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	return code;
}

int ctl_usage_error(const char *fmt, ...)
{
	va_list ap;
	int code;

	va_start(ap, fmt);
	code = record(RM_EXIT_USAGE, fmt, ap);
	va_end(ap);
	return code;
}

int ctl_runtime_error(const char *fmt, ...)
{
	va_list ap;
	int code;

	va_start(ap, fmt);
	code = record(RM_EXIT_RUNTIME, fmt, ap);
	va_end(ap);
	return code;
}

int ctl_error_context(int code, const char *fmt, ...)
{
	char ctx[256];
	size_t n, keep;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	n = strlen(ctx) + 2; /* "ctx: " in front of the message */
	keep = strlen(errmsg);
	if (n + keep >= sizeof(errmsg))
		keep = sizeof(errmsg) - n - 1;
	memmove(errmsg + n, errmsg, keep);
	errmsg[n + keep] = '\0';
	memcpy(errmsg, ctx, n - 2);
	memcpy(errmsg + n - 2, ": ", 2);
	return code;
}

const char *ctl_error_msg(void)
{
	return errmsg;
}

int main(int argc, char **argv)
{
	struct ctl_opts o = {0};
	const struct ctl_cmd *cmd;
	struct cli_result res;
	int ret;

	if (cli_is_internal(argc, argv))
		return cli_internal(&ctl_prog, argc, argv);
	history_set_cmdline(argc, argv);
	ret = cli_parse(&ctl_prog, argc, argv, 0, &o, &res);
	if (ret) {
		fprintf(stderr, "ringctl: %s\n", res.err);
		return ret;
	}
	if (res.version) {
		cli_version(stdout, &ctl_prog);
		return RM_EXIT_OK;
	}
	if (res.cmd < 0) {
		cli_usage(res.help ? stdout : stderr, &ctl_prog,
			  res.argc ? res.argv[0] : NULL);
		return res.help ? RM_EXIT_OK : RM_EXIT_USAGE;
	}
	cmd = ctl_cmd_at(res.cmd);
	if (res.help) {
		cli_help(stdout, &ctl_prog, &cmd->cli);
		return RM_EXIT_OK;
	}
	cli_libbpf_messages(o.verbose);
	o.argc = res.argc;
	o.argv = res.argv;
	ret = cmd->run ? cmd->run(&o) : live_change(&o, cmd->edit);
	if (ret)
		fprintf(stderr, "ringctl: %s\n",
			errmsg[0] ? errmsg : "failed (no reason recorded)");
	return ret;
}
