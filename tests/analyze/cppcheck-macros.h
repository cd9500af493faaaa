/* SPDX-License-Identifier: GPL-2.0 */
/* Read by cppcheck only (make analyze, --include): the option macros of
 * libbpf and libxdp, whose headers cppcheck is not given (reading every
 * system header makes it slow and reports their code, not ours). Without
 * them cppcheck stops at the first use with "unknownMacro". */
#define LIBBPF_OPTS(TYPE, NAME, ...) struct TYPE NAME = {__VA_ARGS__}
#define DECLARE_LIBXDP_OPTS(TYPE, NAME, ...) struct TYPE NAME = {__VA_ARGS__}
