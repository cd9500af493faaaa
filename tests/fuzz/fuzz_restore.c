// SPDX-License-Identifier: GPL-2.0
/* libFuzzer target: the configuration parser of `ringctl restore` (the
 * lines `ringctl save` writes, read with the command-line tables by
 * doc_parse), then the edits it yields applied to an in-memory snapshot
 * and planned as a dry run (validation and every ring built, no map
 * written). main.c is included for ringctl's error channel. Oracles: no
 * crash or sanitizer report; every refusal is exit code 1 or 2 with a
 * message; a configuration that applies and validates builds, for every
 * service, a ring of exactly its active nodes. */
#define main ringctl_main
#include "../../user/ringctl/main.c"
#undef main
#include "fuzz.h"

static struct rm_snap old_snap, new_snap;

static __u32 active_nodes(const struct rm_snap *s, __u32 svc)
{
	__u32 n = 0;

	for (__u32 i = 0; i < RM_MAX_NODES; i++)
		n += s->node[i].state == RM_NODE_ACTIVE &&
		     s->node[i].svc_id == svc;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct live lv = {.old = &old_snap, .new = &new_snap};
	struct edit *edits = NULL;
	struct rm_plan *plan;
	int n = 0, ret, i;
	FILE *f;

	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	ret = doc_parse("restore", f, &edits, &n);
	fclose(f);
	if (ret) {
		FUZZ_ASSERT(ret == RM_EXIT_USAGE || ret == RM_EXIT_RUNTIME);
		FUZZ_ASSERT(ctl_error_msg()[0]);
		free(edits);
		return 0;
	}
	memset(&old_snap, 0, sizeof(old_snap));
	old_snap.cfg.flags = RM_CFG_SEEDED;
	new_snap = old_snap;
	for (i = 0; i < n && !ret; i++) {
		FUZZ_ASSERT(edits[i].apply);
		ret = edits[i].apply(&edits[i], &lv);
	}
	free(edits);
	if (ret) {
		FUZZ_ASSERT(ret == RM_EXIT_USAGE || ret == RM_EXIT_RUNTIME);
		FUZZ_ASSERT(ctl_error_msg()[0]);
		return 0;
	}
	plan = malloc(sizeof(*plan));
	FUZZ_ASSERT(plan);
	ret = rm_plan_build(NULL, &old_snap, &new_snap, RM_APPLY_DRY_RUN,
			    plan);
	if (ret) {
		FUZZ_ASSERT(ret < 0 && rm_errmsg()[0]);
		free(plan);
		return 0;
	}
	for (__u32 s = 0; s < RM_MAX_SERVICES; s++) {
		if (!new_snap.svc[s].in_use) {
			FUZZ_ASSERT(active_nodes(&new_snap, s) == 0);
			continue;
		}
		if (plan->changed[s])
			FUZZ_ASSERT(plan->ring[s].n_nodes ==
				    active_nodes(&new_snap, s));
	}
	rm_plan_free(plan);
	free(plan);
	return 0;
}
