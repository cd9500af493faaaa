// SPDX-License-Identifier: GPL-2.0
#include <math.h>
#include "json.h"

void rm_json_init(struct rm_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
}

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void prefix(struct rm_json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
	if (key) {
		put_string(j->f, key);
		fputc(':', j->f);
	}
}

static void open(struct rm_json *j, const char *key, char c)
{
	prefix(j, key);
	fputc(c, j->f);
	if (j->depth < RM_JSON_DEPTH - 1)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_(struct rm_json *j, char c)
{
	fputc(c, j->f);
	if (j->depth > 0)
		j->depth--;
}

void rm_json_obj_open(struct rm_json *j, const char *key)
{
	open(j, key, '{');
}

void rm_json_obj_close(struct rm_json *j)
{
	close_(j, '}');
}

void rm_json_arr_open(struct rm_json *j, const char *key)
{
	open(j, key, '[');
}

void rm_json_arr_close(struct rm_json *j)
{
	close_(j, ']');
}

void rm_json_str(struct rm_json *j, const char *key, const char *val)
{
	prefix(j, key);
	put_string(j->f, val);
}

void rm_json_u64(struct rm_json *j, const char *key, unsigned long long val)
{
	prefix(j, key);
	fprintf(j->f, "%llu", val);
}

void rm_json_i64(struct rm_json *j, const char *key, long long val)
{
	prefix(j, key);
	fprintf(j->f, "%lld", val);
}

void rm_json_num(struct rm_json *j, const char *key, double val)
{
	prefix(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.17g", val);
	else
		fputs("null", j->f); /* JSON has no NaN/inf */
}

void rm_json_bool(struct rm_json *j, const char *key, bool val)
{
	prefix(j, key);
	fputs(val ? "true" : "false", j->f);
}

void rm_json_end(struct rm_json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}
