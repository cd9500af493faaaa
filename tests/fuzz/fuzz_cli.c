// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: ringctl's command line (main.c's option parsing and
 * command table) driving the offline commands `ring` and `diff`, whose
 * arguments (--nodes lists, --vnodes, --seed, --json) go through the
 * same parsers and ring builder as the live ones. The input is the
 * argument words separated by NUL or newline; the first byte picks the
 * command (parsed by the option tables). Live commands are not reached: they would change the state
 * of whoever runs the fuzzer. Oracles: no crash or sanitizer report,
 * the exit code is 0, 1 or 2. Run it with -close_fd_mask=3: the rings'
 * text and the usage errors go nowhere, libFuzzer's own report still
 * reaches stderr. */
#define main ringctl_main
#include "../../user/ringctl/main.c"
#undef main
#include "fuzz.h"

#define MAX_ARGS 24

static bool asks_for_help(const char *w)
{
	/* -h and --help (or its prefixes) exit(0) after the usage, by design */
	if (w[0] != '-')
		return false;
	if (w[1] == '-')
		return !strncmp(w, "--he", 4);
	return strchr(w, 'h') != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const cmds[] = {"ring", "diff"};
	char *argv[MAX_ARGS + 3], *buf, *w;
	int argc = 0, rc;

	if (size < 1 || size > 4096)
		return 0;
	buf = fuzz_str(data + 1, size - 1);
	if (!buf)
		return 0;
	argv[argc++] = "ringctl";
	argv[argc++] = (char *)cmds[data[0] % 2];
	for (w = strtok(buf, "\n"); w && argc < MAX_ARGS + 2;
	     w = strtok(NULL, "\n")) {
		if (asks_for_help(w))
			goto out;
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	rc = ringctl_main(argc, argv);
	fflush(stdout);
	FUZZ_ASSERT(rc >= 0 && rc <= 2);
out:
	free(buf);
	return 0;
}
