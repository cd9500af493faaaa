/* SPDX-License-Identifier: GPL-2.0 */
/* How a suite says it could not run all of its tests: it prints why and
 * exits RM_TEST_SKIP (the automake convention), which scripts/run-tests.sh
 * counts as skipped, never as passed (and CI as a failure). */
#ifndef RM_TEST_SKIP_H
#define RM_TEST_SKIP_H

#define RM_TEST_SKIP 77

/* cmocka's result, or RM_TEST_SKIP when nothing failed but something
 * skipped. */
static inline int rm_test_result(int cmocka_failed, int skipped)
{
	return cmocka_failed ? cmocka_failed : skipped ? RM_TEST_SKIP : 0;
}

#endif
