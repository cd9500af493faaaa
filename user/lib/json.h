/* SPDX-License-Identifier: GPL-2.0 */
/* Minimal streaming JSON writer: --json output is only JSON on stdout. */
#ifndef RM_JSON_H
#define RM_JSON_H

#include <stdbool.h>
#include <stdio.h>

#define RM_JSON_DEPTH 16

struct rm_json {
	FILE *f;
	int depth;
	bool need_comma[RM_JSON_DEPTH];
};

void rm_json_init(struct rm_json *j, FILE *f);
void rm_json_obj_open(struct rm_json *j, const char *key);  /* key NULL in arrays/top */
void rm_json_obj_close(struct rm_json *j);
void rm_json_arr_open(struct rm_json *j, const char *key);
void rm_json_arr_close(struct rm_json *j);
void rm_json_str(struct rm_json *j, const char *key, const char *val);
void rm_json_u64(struct rm_json *j, const char *key, unsigned long long val);
void rm_json_i64(struct rm_json *j, const char *key, long long val);
void rm_json_num(struct rm_json *j, const char *key, double val);
void rm_json_bool(struct rm_json *j, const char *key, bool val);
void rm_json_end(struct rm_json *j); /* newline after the top value */

#endif
