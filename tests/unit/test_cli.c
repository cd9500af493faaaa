// SPDX-License-Identifier: GPL-2.0
/*
 * ringctl's offline commands (`ring`, `diff`) as a user runs them: the real
 * binary, its stdout, stderr and exit code.
 *
 * The binary is $RINGCTL, else ../ringctl next to this test's directory
 * (build/tests/test_cli -> build/ringctl), else build/ringctl relative to
 * the current directory (the repo root). JSON is checked by a strict
 * parser below and, when python3 is installed, by python's json module.
 * Numbers are compared with the library (libringmaster.a) building the same
 * ring with the same seed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "ring.h"
#include "util.h"

extern char **environ;

#define KEYSPACE 4294967296.0
#define SEED_HEX "000102030405060708090a0b0c0d0e0f"

static char ringctl[4096];

/* JSON numbers are printed with 9 significant digits (rm_json_num's
 * %.9g): a printed value is within half a unit of the 9th digit, i.e. a
 * relative 5e-9, of the exact one. */
static bool near(double printed, double exact)
{
	return fabs(printed - exact) <= 5e-9 * fabs(exact) + 1e-15;
}

/* ---- running a program ------------------------------------------------ */
struct run {
	int status; /* exit code, or 128 + signal */
	char *out, *err;
	size_t out_len, err_len;
};

static char *slurp(FILE *f, size_t *len)
{
	long n;
	char *buf;

	fflush(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* Run argv with stdin from in_path (or /dev/null), capturing stdout and
 * stderr. Returns -1 if it could not be started. */
static int run_prog(struct run *r, char *const argv[], const char *in_path)
{
	posix_spawn_file_actions_t fa;
	FILE *out = tmpfile(), *err = tmpfile();
	pid_t pid;
	int st, rc;

	memset(r, 0, sizeof(*r));
	assert_non_null(out);
	assert_non_null(err);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(
	    &fa, 0, in_path ? in_path : "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, fileno(out), 1);
	posix_spawn_file_actions_adddup2(&fa, fileno(err), 2);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		fclose(out);
		fclose(err);
		return -1;
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->out = slurp(out, &r->out_len);
	r->err = slurp(err, &r->err_len);
	fclose(out);
	fclose(err);
	return 0;
}

/* ringctl with the given arguments (NULL-terminated). */
static void run_ctl(struct run *r, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = ringctl;
	va_start(ap, r);
	while ((argv[argc] = va_arg(ap, char *)))
		assert_true(++argc < 31);
	va_end(ap);
	if (run_prog(r, argv, NULL))
		fail_msg("cannot run %s: %s", ringctl, strerror(errno));
	/* a crash is never an acceptable answer */
	assert_true(r->status < 128);
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static size_t count_char(const char *s, size_t len, char c)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += s[i] == c;
	return n;
}

/* ---- a strict JSON parser (RFC 8259) ---------------------------------- */
enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jtype t;
	bool b;
	double num;
	char *str; /* J_STR */
	size_t n;  /* J_ARR / J_OBJ: items */
	struct jv *items;
	char **keys; /* J_OBJ */
};

struct jp {
	const char *s;
	size_t pos, len;
	int depth;
};

static void jws(struct jp *p)
{
	while (p->pos < p->len &&
	       (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
		p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static bool jlit(struct jp *p, const char *lit)
{
	size_t n = strlen(lit);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, lit, n))
		return false;
	p->pos += n;
	return true;
}

static bool jvalue(struct jp *p, struct jv *v);

static bool jstring(struct jp *p, char **out)
{
	size_t cap = 16, n = 0;
	char *buf = malloc(cap);

	if (!buf || p->pos >= p->len || p->s[p->pos] != '"')
		goto bad;
	p->pos++;
	for (;;) {
		unsigned char c;

		if (p->pos >= p->len)
			goto bad;
		c = (unsigned char)p->s[p->pos++];
		if (c == '"')
			break;
		if (c < 0x20)
			goto bad;
		if (c == '\\') {
			if (p->pos >= p->len)
				goto bad;
			c = (unsigned char)p->s[p->pos++];
			switch (c) {
			case '"':
			case '\\':
			case '/':
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'n':
				c = '\n';
				break;
			case 'r':
				c = '\r';
				break;
			case 't':
				c = '\t';
				break;
			case 'u':
				for (int i = 0; i < 4; i++)
					if (p->pos >= p->len ||
					    !isxdigit(
						(unsigned char)p->s[p->pos++]))
						goto bad;
				c = '?'; /* good enough for these tests */
				break;
			default:
				goto bad;
			}
		}
		if (n + 2 > cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb)
				goto bad;
			buf = nb;
		}
		buf[n++] = (char)c;
	}
	buf[n] = '\0';
	*out = buf;
	return true;
bad:
	free(buf);
	return false;
}

static bool jnumber(struct jp *p, double *out)
{
	size_t start = p->pos;
	char tmp[64];

#define DIGIT() (p->pos < p->len && isdigit((unsigned char)p->s[p->pos]))
	if (p->pos < p->len && p->s[p->pos] == '-')
		p->pos++;
	if (!DIGIT())
		return false;
	if (p->s[p->pos] == '0')
		p->pos++;
	else
		while (DIGIT())
			p->pos++;
	if (p->pos < p->len && p->s[p->pos] == '.') {
		p->pos++;
		if (!DIGIT())
			return false;
		while (DIGIT())
			p->pos++;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		p->pos++;
		if (p->pos < p->len &&
		    (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (!DIGIT())
			return false;
		while (DIGIT())
			p->pos++;
	}
#undef DIGIT
	if (p->pos - start >= sizeof(tmp))
		return false;
	memcpy(tmp, p->s + start, p->pos - start);
	tmp[p->pos - start] = '\0';
	*out = strtod(tmp, NULL);
	return true;
}

static bool jcontainer(struct jp *p, struct jv *v, bool obj)
{
	char close = obj ? '}' : ']';

	v->t = obj ? J_OBJ : J_ARR;
	p->pos++;
	jws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return true;
	}
	for (;;) {
		struct jv *ni = realloc(v->items, (v->n + 1) * sizeof(*ni));
		char **nk = realloc(v->keys, (v->n + 1) * sizeof(*nk));

		if (ni)
			v->items = ni;
		if (nk)
			v->keys = nk;
		if (!ni || !nk)
			return false;
		memset(&v->items[v->n], 0, sizeof(*ni));
		v->keys[v->n] = NULL;
		v->n++;
		jws(p);
		if (obj) {
			if (!jstring(p, &v->keys[v->n - 1]))
				return false;
			jws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':')
				return false;
			p->pos++;
		}
		if (!jvalue(p, &v->items[v->n - 1]))
			return false;
		jws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == close) {
			p->pos++;
			return true;
		}
		return false;
	}
}

static bool jvalue(struct jp *p, struct jv *v)
{
	bool ok;

	memset(v, 0, sizeof(*v));
	jws(p);
	if (p->pos >= p->len || ++p->depth > 64)
		return false;
	switch (p->s[p->pos]) {
	case '{':
		ok = jcontainer(p, v, true);
		break;
	case '[':
		ok = jcontainer(p, v, false);
		break;
	case '"':
		v->t = J_STR;
		ok = jstring(p, &v->str);
		break;
	case 't':
		v->t = J_BOOL;
		v->b = true;
		ok = jlit(p, "true");
		break;
	case 'f':
		v->t = J_BOOL;
		ok = jlit(p, "false");
		break;
	case 'n':
		v->t = J_NULL;
		ok = jlit(p, "null");
		break;
	default:
		v->t = J_NUM;
		ok = jnumber(p, &v->num);
		break;
	}
	p->depth--;
	return ok;
}

static void jfree(struct jv *v)
{
	for (size_t i = 0; i < v->n; i++) {
		jfree(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	memset(v, 0, sizeof(*v));
}

/* The whole text is exactly one JSON value (surrounding whitespace ok). */
static bool jparse(const char *s, size_t len, struct jv *v)
{
	struct jp p = {.s = s, .len = len};

	if (memchr(s, '\0', len))
		return false;
	if (!jvalue(&p, v)) {
		jfree(v);
		return false;
	}
	jws(&p);
	if (p.pos != len) {
		jfree(v);
		return false;
	}
	return true;
}

static const struct jv *jget(const struct jv *o, const char *key, enum jtype t)
{
	assert_int_equal(o->t, J_OBJ);
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key)) {
			if (o->items[i].t != t)
				fail_msg(
				    "JSON field \"%s\" has type %d, want %d",
				    key, o->items[i].t, t);
			return &o->items[i];
		}
	fail_msg("JSON field \"%s\" missing", key);
	return NULL;
}

static bool jhas(const struct jv *o, const char *key)
{
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return true;
	return false;
}

/* JSON stdout of a successful run: parses (here and in python3 if there
 * is one), nothing but JSON on stdout, nothing on stderr. */
static bool have_python = true;

static void parse_json_output(const struct run *r, struct jv *v)
{
	if (r->status != 0 || r->err_len)
		print_error("exit %d, stderr: %s\n", r->status, r->err);
	assert_int_equal(r->status, 0);
	assert_int_equal(r->err_len, 0);
	assert_true(r->out_len > 0);
	assert_true(r->out[r->out_len - 1] == '\n');
	if (!jparse(r->out, r->out_len, v))
		fail_msg("stdout is not one JSON value:\n%s", r->out);

	if (have_python) {
		char path[] = "/tmp/test_cli_json_XXXXXX";
		int fd = mkstemp(path);
		char *argv[] = {"python3", "-c",
				"import json,sys; json.load(sys.stdin)", NULL};
		struct run py;

		assert_true(fd >= 0);
		assert_int_equal(write(fd, r->out, r->out_len),
				 (ssize_t)r->out_len);
		close(fd);
		if (run_prog(&py, argv, path) || py.status == 127) {
			have_python = false;
			print_message("python3 not found: JSON checked by the "
				      "built-in parser only\n");
		} else {
			if (py.status)
				print_error("python3 json: %s\n", py.err);
			assert_int_equal(py.status, 0);
		}
		if (py.out)
			run_free(&py);
		unlink(path);
	}
}

/* ---- the library's view of the same rings ---------------------------- */
static void lib_ring(const char *list, const char *seed_hex, __u32 vnodes,
		     struct rm_ring *r)
{
	struct rm_node_spec *specs;
	struct rm_seed seed = {0, 0};
	__u32 n;

	if (seed_hex)
		assert_int_equal(rm_parse_seed(seed_hex, &seed), 0);
	assert_int_equal(rm_parse_nodes(list, &specs, &n), 0);
	assert_int_equal(rm_ring_build(&seed, specs, n, vnodes, r), 0);
	free(specs);
}

/* ---- JSON parser self-check (so a pass means something) -------------- */
static void test_json_parser(void **state)
{
	static const char *good[] = {
	    "{}",
	    "[]",
	    "0",
	    "-0.5e-3",
	    "\"a\\n\\u00e9\"",
	    "true",
	    "null",
	    "{\"a\":[1,2,{\"b\":false}],\"c\":\"d\"}\n",
	    " [ 1 , 2 ] ",
	    "1E+9",
	};
	static const char *bad[] = {
	    "",	     "{",	"{\"a\":1,}",
	    "[1 2]", "[1,]",	"01",
	    "1.",    ".5",	"+1",
	    "nul",   "{a:1}",	"{\"a\" 1}",
	    "\"x",   "\"\t\"",	"[1]x",
	    "{} {}", "NaN",	"inf",
	    "'a'",   "\"\\x\"", "ring: 3 entries",
	};
	struct jv v;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		if (!jparse(good[i], strlen(good[i]), &v))
			fail_msg("rejected good JSON %s", good[i]);
		jfree(&v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		if (jparse(bad[i], strlen(bad[i]), &v))
			fail_msg("accepted bad JSON %s", bad[i]);
	assert_true(jparse("{\"x\":[1,2.5]}", 13, &v));
	assert_int_equal(v.n, 1);
	assert_string_equal(v.keys[0], "x");
	assert_int_equal(jget(&v, "x", J_ARR)->n, 2);
	assert_true(jget(&v, "x", J_ARR)->items[1].num == 2.5);
	jfree(&v);
}

/* ---- ring ------------------------------------------------------------- */
static void check_ring_json(const struct jv *v, const struct rm_ring *lib)
{
	const struct jv *nodes = jget(v, "nodes", J_ARR);
	__u64 *arcs = calloc(lib->n_nodes, sizeof(*arcs));
	double sum = 0, peak = 0;
	__u64 keys = 0, wsum = 0;

	assert_non_null(arcs);
	rm_ring_arcs(lib, arcs);
	assert_true(jget(v, "entries", J_NUM)->num == lib->n);
	assert_true(jget(v, "peak_to_mean", J_NUM)->num >= 1.0);
	assert_int_equal(nodes->n, lib->n_nodes);
	for (__u32 i = 0; i < lib->n_nodes; i++)
		wsum += lib->nodes[i].weight;
	for (__u32 i = 0; i < lib->n_nodes; i++) {
		const struct jv *nd = &nodes->items[i];
		double share = jget(nd, "share", J_NUM)->num;
		double want = arcs[i] / KEYSPACE;

		/* listed in the ring's canonical (name) order */
		assert_string_equal(jget(nd, "name", J_STR)->str,
				    lib->nodes[i].name);
		assert_true(jget(nd, "weight", J_NUM)->num ==
			    lib->nodes[i].weight);
		assert_true(jget(nd, "vnodes", J_NUM)->num ==
			    (double)lib->nodes[i].weight * lib->vnodes);
		if (!near(share, want))
			fail_msg("%s: share %.12g, library %.12g",
				 lib->nodes[i].name, share, want);
		if (jhas(nd, "keys")) {
			assert_true(jget(nd, "keys", J_NUM)->num ==
				    (double)arcs[i]);
			keys += arcs[i];
		}
		sum += share;
		if (want / ((double)lib->nodes[i].weight / wsum) > peak)
			peak = want / ((double)lib->nodes[i].weight / wsum);
	}
	if (fabs(sum - 1.0) > 1e-9)
		fail_msg("shares sum to %.12g", sum);
	if (keys)
		assert_true(keys == (1ULL << 32));
	assert_true(fabs(jget(v, "peak_to_mean", J_NUM)->num - peak) <
		    1e-8 * peak);
	free(arcs);
}

static void test_ring_text(void **state)
{
	struct run r;
	struct rm_ring lib;
	char head[128];

	(void)state;
	run_ctl(&r, "ring", "--nodes", "a,b:2,c", "--seed", SEED_HEX, NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	lib_ring("a,b:2,c", SEED_HEX, RM_DEFAULT_VNODES, &lib);
	snprintf(head, sizeof(head), "ring: %u entries, 3 nodes, %u vnodes",
		 lib.n, RM_DEFAULT_VNODES);
	if (strncmp(r.out, head, strlen(head)))
		fail_msg("first line: %.80s\nwant: %s", r.out, head);
	/* a header plus one row per node */
	assert_int_equal(count_char(r.out, r.out_len, '\n'), 2 + 3);
	assert_non_null(strstr(r.out, "\na "));
	assert_non_null(strstr(r.out, "\nb "));
	assert_non_null(strstr(r.out, "\nc "));
	rm_ring_free(&lib);
	run_free(&r);
}

static void test_ring_json(void **state)
{
	static const struct {
		const char *nodes, *vnodes; /* vnodes NULL: default */
		__u32 vn;
	} cases[] = {
	    {"a,b:2,c", NULL, RM_DEFAULT_VNODES},
	    {"solo", NULL, RM_DEFAULT_VNODES},
	    {"web-1,web-2,web-3,db:5,cache.a:100", "37", 37},
	    {"x,y", "1", 1},
	    {"n00,n01,n02,n03,n04,n05,n06,n07,n08,n09,n10,n11,n12,n13,n14,"
	     "n15",
	     "4096", 4096},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct run r;
		struct jv v;
		struct rm_ring lib;

		if (cases[i].vnodes)
			run_ctl(&r, "ring", "--nodes", cases[i].nodes,
				"--vnodes", cases[i].vnodes, "--seed", SEED_HEX,
				"--json", NULL);
		else
			run_ctl(&r, "--json", "ring", "--seed", SEED_HEX,
				"--nodes", cases[i].nodes, NULL);
		parse_json_output(&r, &v);
		lib_ring(cases[i].nodes, SEED_HEX, cases[i].vn, &lib);
		check_ring_json(&v, &lib);
		if (jhas(&v, "vnodes"))
			assert_true(jget(&v, "vnodes", J_NUM)->num ==
				    cases[i].vn);
		rm_ring_free(&lib);
		jfree(&v);
		run_free(&r);
	}
}

/* Same input, same output; node order on the command line is irrelevant;
 * the seed changes the ring. */
static void test_ring_deterministic(void **state)
{
	struct run a, b, c, d;
	struct jv v;
	double sum = 0;

	(void)state;
	run_ctl(&a, "ring", "--nodes", "a,b:2,c", "--json", NULL);
	run_ctl(&b, "ring", "--nodes", "c,a,b:2", "--json", NULL);
	run_ctl(&c, "ring", "--nodes", "a,b:2,c", "--json", NULL);
	run_ctl(&d, "ring", "--nodes", "a,b:2,c", "--json", "--seed",
		"0xffeeddccbbaa99887766554433221100", NULL);
	parse_json_output(&a, &v);
	for (size_t i = 0; i < jget(&v, "nodes", J_ARR)->n; i++)
		sum += jget(&jget(&v, "nodes", J_ARR)->items[i], "share", J_NUM)
			   ->num;
	assert_true(fabs(sum - 1.0) <= 1e-9);
	jfree(&v);
	assert_int_equal(a.out_len, b.out_len);
	assert_memory_equal(a.out, b.out, a.out_len);
	assert_int_equal(a.out_len, c.out_len);
	assert_memory_equal(a.out, c.out, a.out_len);
	assert_true(a.out_len != d.out_len || memcmp(a.out, d.out, a.out_len));
	run_free(&a);
	run_free(&b);
	run_free(&c);
	run_free(&d);
}

/* ---- diff ------------------------------------------------------------- */
static void check_diff_json(const struct jv *v, const char *from,
			    const char *to, const char *seed_hex, double ideal)
{
	const struct jv *moves = jget(v, "moves", J_ARR);
	struct rm_ring a, b;
	struct rm_move *mv;
	size_t nmv;
	__u64 moved;
	double sum = 0, ms = jget(v, "moved_share", J_NUM)->num;

	lib_ring(from, seed_hex, RM_DEFAULT_VNODES, &a);
	lib_ring(to, seed_hex, RM_DEFAULT_VNODES, &b);
	assert_int_equal(rm_ring_diff(&a, &b, &mv, &nmv, &moved), 0);
	if (!near(ms, moved / KEYSPACE))
		fail_msg("moved_share %.12g, library %.12g", ms,
			 moved / KEYSPACE);
	assert_true(near(jget(v, "ideal_share", J_NUM)->num, ideal));
	assert_int_equal(moves->n, nmv);
	for (size_t i = 0; i < moves->n; i++) {
		const struct jv *m = &moves->items[i];
		double share = jget(m, "share", J_NUM)->num;

		assert_string_equal(jget(m, "from", J_STR)->str, mv[i].from);
		assert_string_equal(jget(m, "to", J_STR)->str, mv[i].to);
		assert_true(near(share, mv[i].keys / KEYSPACE));
		sum += share;
	}
	assert_true(fabs(sum - ms) <= 1e-9);
	free(mv);
	rm_ring_free(&a);
	rm_ring_free(&b);
}

static void test_diff_json(void **state)
{
	struct run r;
	struct jv v;
	const struct jv *moves;

	(void)state;
	/* adding d to a,b,c: everything that moves goes to d */
	run_ctl(&r, "diff", "--from", "a,b,c", "--to", "a,b,c,d", "--json",
		"--seed", SEED_HEX, NULL);
	parse_json_output(&r, &v);
	moves = jget(&v, "moves", J_ARR);
	assert_true(moves->n >= 1 && moves->n <= 3);
	for (size_t i = 0; i < moves->n; i++) {
		assert_string_equal(jget(&moves->items[i], "to", J_STR)->str,
				    "d");
		assert_string_not_equal(
		    jget(&moves->items[i], "from", J_STR)->str, "d");
	}
	assert_true(jget(&v, "moved_share", J_NUM)->num > 0.2 &&
		    jget(&v, "moved_share", J_NUM)->num < 0.3);
	check_diff_json(&v, "a,b,c", "a,b,c,d", SEED_HEX, 0.25);
	jfree(&v);
	run_free(&r);

	/* removing b: everything that moves comes from b */
	run_ctl(&r, "diff", "--json", "--from", "a,b,c,d", "--to", "a,c,d",
		"--seed", SEED_HEX, NULL);
	parse_json_output(&r, &v);
	moves = jget(&v, "moves", J_ARR);
	for (size_t i = 0; i < moves->n; i++)
		assert_string_equal(jget(&moves->items[i], "from", J_STR)->str,
				    "b");
	/* ideal = b's exact share in the old ring = what moved */
	assert_true(near(jget(&v, "ideal_share", J_NUM)->num,
			 jget(&v, "moved_share", J_NUM)->num));
	check_diff_json(&v, "a,b,c,d", "a,c,d", SEED_HEX,
			jget(&v, "moved_share", J_NUM)->num);
	jfree(&v);
	run_free(&r);

	/* no change: nothing moves, an empty list */
	run_ctl(&r, "diff", "--from", "a,b", "--to", "b,a", "--json", NULL);
	parse_json_output(&r, &v);
	assert_true(jget(&v, "moved_share", J_NUM)->num == 0);
	assert_int_equal(jget(&v, "moves", J_ARR)->n, 0);
	jfree(&v);
	run_free(&r);

	/* replacing every node: all of the keyspace moves, and no scheme
	 * can be asked to move more than all of it */
	run_ctl(&r, "diff", "--from", "a,b", "--to", "c,d", "--json", "--seed",
		SEED_HEX, NULL);
	parse_json_output(&r, &v);
	assert_true(jget(&v, "moved_share", J_NUM)->num == 1);
	if (jget(&v, "ideal_share", J_NUM)->num > 1)
		fail_msg("ideal_share %.9g > 1 when every node is replaced",
			 jget(&v, "ideal_share", J_NUM)->num);
	check_diff_json(&v, "a,b", "c,d", SEED_HEX, 1.0);
	jfree(&v);
	run_free(&r);

	/* reweighting: default seed, internal consistency only */
	run_ctl(&r, "diff", "--from", "a,b,c", "--to", "a,b:3,c", "--json",
		NULL);
	parse_json_output(&r, &v);
	moves = jget(&v, "moves", J_ARR);
	assert_true(moves->n >= 1);
	for (size_t i = 0; i < moves->n; i++)
		assert_string_equal(jget(&moves->items[i], "to", J_STR)->str,
				    "b");
	jfree(&v);
	run_free(&r);
}

static void test_diff_text(void **state)
{
	struct run r;

	(void)state;
	run_ctl(&r, "diff", "--from", "a,b,c", "--to", "a,b,c,d", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	assert_true(!strncmp(r.out, "moved: ", 7));
	assert_non_null(strstr(r.out, "ideal 25.0000%"));
	/* one line per move, each into d */
	for (const char *l = strchr(r.out, '\n'); l && l[1];
	     l = strchr(l + 1, '\n')) {
		assert_non_null(strstr(l + 1, "-> d "));
		assert_true(l[1] == ' ');
	}
	assert_true(count_char(r.out, r.out_len, '\n') >= 2);
	run_free(&r);
}

/* ---- usage errors ----------------------------------------------------- */
/* Exit 2, nothing on stdout, one line on stderr that holds needle. */
static void expect_usage_v(const char *bin, const char *what,
			   const char *needle, va_list ap)
{
	char *argv[48];
	int argc = 0;
	struct run r;

	argv[argc++] = (char *)bin;
	while ((argv[argc] = va_arg(ap, char *)))
		assert_true(++argc < 47);
	if (run_prog(&r, argv, NULL))
		fail_msg("cannot run %s", bin);
	if (r.status != 2 || r.out_len ||
	    count_char(r.err, r.err_len, '\n') != 1 ||
	    r.err[r.err_len - 1] != '\n' || !strstr(r.err, needle))
		fail_msg("%s: exit %d, stdout \"%s\", stderr \"%s\"", what,
			 r.status, r.out, r.err);
	assert_true(r.err_len > 1); /* says something */
	run_free(&r);
}

static void expect_usage_error(const char *what, ...)
{
	va_list ap;

	va_start(ap, what);
	expect_usage_v(ringctl, what, "", ap);
	va_end(ap);
}

static void test_usage_errors(void **state)
{
	(void)state;
	expect_usage_error("missing --nodes", "ring", NULL);
	expect_usage_error("missing --nodes, json", "ring", "--json", NULL);
	expect_usage_error("missing --to", "diff", "--from", "a,b", NULL);
	expect_usage_error("missing --from", "diff", "--to", "a", "--json",
			   NULL);
	expect_usage_error("weight 0", "ring", "--nodes", "a:0", NULL);
	expect_usage_error("weight 101", "ring", "--nodes", "a,b:101", NULL);
	expect_usage_error("weight text", "ring", "--nodes", "a:x", "--json",
			   NULL);
	expect_usage_error("diff bad weight", "diff", "--from", "a,b", "--to",
			   "a,b:0", NULL);
	expect_usage_error("duplicate", "ring", "--nodes", "a,b,a", NULL);
	expect_usage_error("duplicate, json", "diff", "--from", "a", "--to",
			   "a,a", "--json", NULL);
	expect_usage_error("empty name", "ring", "--nodes", "a,,b", NULL);
	expect_usage_error("empty list", "ring", "--nodes", "", NULL);
	expect_usage_error("bad name", "ring", "--nodes", "a/b", NULL);
	expect_usage_error("long name", "ring", "--nodes",
			   "abcdefghijklmnopqrstuvwxyz012345", NULL);
	expect_usage_error("unknown command", "frobnicate", NULL);
	expect_usage_error("unknown command, json", "frobnicate", "--json",
			   NULL);
	expect_usage_error("unknown option", "ring", "--nodes", "a", "--bogus",
			   NULL);
	expect_usage_error("unknown short option", "ring", "--nodes", "a", "-q",
			   NULL);
	expect_usage_error("option without value", "ring", "--nodes", NULL);
	expect_usage_error("vnodes 0", "ring", "--nodes", "a", "--vnodes", "0",
			   NULL);
	expect_usage_error("vnodes too big", "ring", "--nodes", "a", "--vnodes",
			   "4097", NULL);
	expect_usage_error("vnodes text", "ring", "--nodes", "a", "--vnodes",
			   "ten", "--json", NULL);
	expect_usage_error("vnodes negative", "ring", "--nodes", "a",
			   "--vnodes", "-5", NULL);
	expect_usage_error("short seed", "ring", "--nodes", "a", "--seed",
			   "0123", NULL);
	expect_usage_error("non-hex seed", "ring", "--nodes", "a", "--seed",
			   "000102030405060708090a0b0c0d0e0g", NULL);
	expect_usage_error("long seed", "diff", "--from", "a", "--to", "b",
			   "--seed", SEED_HEX "00", NULL);
	expect_usage_error("stray argument", "ring", "--nodes", "a", "extra",
			   NULL);
	expect_usage_error("stray argument, diff", "diff", "--from", "a",
			   "--to", "b", "extra", NULL);
	expect_usage_error("ring too big", "ring", "--nodes",
			   "a:100,b:100,c:100", "--vnodes", "4096", NULL);
}

/* No command at all: usage on stderr, nothing on stdout, exit 2. --help:
 * usage on stdout, exit 0. */
static void test_no_command_and_help(void **state)
{
	struct run r;

	(void)state;
	run_ctl(&r, NULL);
	assert_int_equal(r.status, 2);
	assert_int_equal(r.out_len, 0);
	assert_non_null(strstr(r.err, "usage"));
	run_free(&r);
	run_ctl(&r, "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	assert_non_null(strstr(r.out, "usage"));
	assert_non_null(strstr(r.out, "ring --nodes"));
	run_free(&r);
}


/* An option of another command is a usage error that names it, before
 * anything runs (it used to be accepted and ignored). */
static void expect_names(const char *needle, ...)
{
	va_list ap;

	va_start(ap, needle);
	expect_usage_v(ringctl, needle, needle, ap);
	va_end(ap);
}

static void test_foreign_options(void **state)
{
	(void)state;
	expect_names("--mac", "ring", "--nodes", "a,b", "--mac", "zz",
		     "--dry-run", NULL);
	expect_names("--dry-run", "ring", "--nodes", "a,b", "--dry-run", NULL);
	/* after the command, --pin-dir is checked like any option */
	expect_names("--pin-dir", "diff", "--from", "a", "--to", "b",
		     "--pin-dir", "/tmp", NULL);
	expect_names("--drain", "node", "add", "s", "n", "--mac",
		     "02:00:00:00:00:01", "--dev", "lo", "--drain", NULL);
	expect_names("--src", "show", "--src", "198.18.0.1", NULL);
	expect_names("--bogus", "ring", "--nodes", "a", "--bogus", NULL);
	expect_names("--json", "ring", "--nodes", "a", "--json=yes", NULL);
	/* a value is checked by the option's type before the command runs */
	expect_names("--vip", "service", "add", "x", "--vip", "1.2.3",
		     "--port", "1", "--proto", "tcp", NULL);
	expect_names("--proto", "service", "add", "x", "--vip", "198.18.0.1",
		     "--port", "1", "--proto", "sctp", NULL);
	expect_names("--mac", "node", "add", "s", "n", "--mac", "zz", "--dev",
		     "lo", NULL);
	expect_names("--dev", "node", "add", "s", "n", "--mac",
		     "02:00:00:00:00:01", NULL);
	expect_names("node", "node", "frob", NULL);
}

/* --vnodes=V is --vnodes V; options may come before the command words. */
static void test_option_forms(void **state)
{
	struct run a, b, c;

	(void)state;
	run_ctl(&a, "ring", "--nodes", "a,b", "--vnodes", "7", "--json", NULL);
	run_ctl(&b, "ring", "--nodes=a,b", "--vnodes=7", "-j", NULL);
	run_ctl(&c, "--vnodes", "7", "-j", "ring", "--nodes", "a,b", NULL);
	assert_int_equal(a.status, 0);
	assert_int_equal(b.status, 0);
	assert_int_equal(c.status, 0);
	assert_string_equal(a.out, b.out);
	assert_string_equal(a.out, c.out);
	assert_non_null(strstr(a.out, "\"vnodes\":7"));
	run_free(&a);
	run_free(&b);
	run_free(&c);
}

/* Global options before the command (--pin-dir, -v) are taken by every
 * command and ignored by those without them, so a wrapper that always
 * passes them works; after the command they are checked against its
 * table; other options before the command still are; a global option's
 * value is checked even where it is ignored. */
static void daemon_path(const char *name, char *out, size_t len);
static void expect_daemon_usage(const char *name, const char *needle, ...);

static void test_global_options(void **state)
{
	struct run a, b;

	(void)state;
	run_ctl(&a, "ring", "--nodes", "a,b", "--json", NULL);
	run_ctl(&b, "--pin-dir", "/sys/fs/bpf/rm-none", "-v", "ring",
		"--nodes", "a,b", "--json", NULL);
	assert_int_equal(a.status, 0);
	assert_int_equal(b.status, 0);
	assert_int_equal(b.err_len, 0);
	assert_string_equal(a.out, b.out);
	run_free(&a);
	run_free(&b);
	/* publish has no --pin-dir: before it, ignored (the run goes as far
	 * as reading the file, which it refuses: no seed line) */
	run_ctl(&a, "--pin-dir=/sys/fs/bpf/rm-none", "publish", "/dev/null",
		"--etcd", "http://198.18.0.9:1", "--key", "/k", "--dry-run",
		NULL);
	assert_int_equal(a.status, 2);
	assert_null(strstr(a.err, "pin-dir"));
	assert_non_null(strstr(a.err, "seed --set"));
	run_free(&a);
	expect_names("--pin-dir", "publish", "/dev/null", "--etcd",
		     "http://198.18.0.9:1", "--key", "/k", "--pin-dir", "/x",
		     NULL);
	expect_names("--pin-dir: empty value", "--pin-dir=", "ring", "--nodes",
		     "a", NULL);
	/* only the global ones are ignored: --dry-run before ring still
	 * names itself */
	expect_names("--dry-run", "--dry-run", "ring", "--nodes", "a", NULL);
	/* ringload too: before status, --pin-dir reaches it (a relative
	 * one is refused by status itself), and before decap status */
	expect_daemon_usage("ringload", "--pin-dir 'rel': expected an absolute",
			    "--pin-dir", "rel", "-v", "status", NULL);
	expect_daemon_usage("ringload", "--pin-dir 'rel'", "--pin-dir", "rel",
			    "decap", "status", NULL);
	expect_daemon_usage("ringload", "--mode does not apply", "status",
			    "--mode", "native", NULL);
}

/* --version: "PROG VERSION", the library's (debian/changelog), on every
 * program, exit 0, whatever follows. */
static void test_version(void **state)
{
	const char *const progs[] = {"ringctl", "ringload", "ringhealth",
				     "ringsync", "ringexport"};
	char bin[4096], want[128];
	char *argv[4];
	struct run r;

	(void)state;
	assert_string_not_equal(rm_version(), "");
	assert_string_not_equal(rm_version(), "unknown");
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		daemon_path(progs[i], bin, sizeof(bin));
		snprintf(want, sizeof(want), "%s %s\n", progs[i],
			 rm_version());
		argv[0] = bin;
		argv[1] = "--version";
		argv[2] = i < 2 ? "--pin-dir=/x" : NULL;
		argv[3] = NULL;
		if (run_prog(&r, argv, NULL))
			fail_msg("cannot run %s", bin);
		assert_int_equal(r.status, 0);
		assert_int_equal(r.err_len, 0);
		assert_string_equal(r.out, want);
		run_free(&r);
	}
}

/* Every command's --help: usage on stdout, exit 0, nothing run, and every
 * option the table gives it (ringctl __options, which also fails on an
 * inconsistent table) listed. */
static void test_command_help(void **state)
{
	struct run dump, h;
	char *line, *save = NULL, cmd[64] = "";
	char *argv[8];
	int n_cmds = 0, n_opts = 0;

	(void)state;
	run_ctl(&dump, "__options", NULL);
	if (dump.status)
		fail_msg("__options: exit %d: %s", dump.status, dump.err);
	memset(&h, 0, sizeof(h));
	for (line = strtok_r(dump.out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[4] = {0}, *fs = NULL;
		int k = 0;

		for (char *t = strtok_r(line, "\t", &fs); t && k < 4;
		     t = strtok_r(NULL, "\t", &fs))
			f[k++] = t;
		assert_true(k >= 3);
		if (!strcmp(f[0], "C")) {
			int argc = 0;
			char words[64], *ws = NULL;

			snprintf(cmd, sizeof(cmd), "%s", f[1]);
			snprintf(words, sizeof(words), "%s", f[1]);
			argv[argc++] = ringctl;
			for (char *w = strtok_r(words, " ", &ws); w;
			     w = strtok_r(NULL, " ", &ws))
				argv[argc++] = w;
			argv[argc++] = "--help";
			argv[argc] = NULL;
			if (h.out)
				run_free(&h);
			assert_int_equal(run_prog(&h, argv, NULL), 0);
			if (h.status || h.err_len || !strstr(h.out, "usage: ringctl ") ||
			    !strstr(h.out, cmd))
				fail_msg("%s --help: exit %d, out %s, err %s", cmd,
					 h.status, h.out, h.err);
			n_cmds++;
		} else if (strcmp(f[1], "*")) {
			assert_string_equal(f[1], cmd);
			if (!strstr(h.out, f[2]))
				fail_msg("%s --help does not list %s:\n%s", cmd,
					 f[2], h.out);
			n_opts++;
		}
	}
	if (h.out)
		run_free(&h);
	run_free(&dump);
	assert_true(n_cmds >= 15);
	assert_true(n_opts >= 40);
}

/* ---- the daemons: the same tables, one command without words ---------- */

/* BUILD/NAME, beside ringctl */
static void daemon_path(const char *name, char *out, size_t len)
{
	char *copy = strdup(ringctl);

	assert_non_null(copy);
	snprintf(out, len, "%s/%s", dirname(copy), name);
	free(copy);
	if (access(out, X_OK))
		fail_msg("no %s at %s: run make", name, out);
}

/* exit 2, nothing on stdout, one line on stderr holding needle */
static void expect_daemon_usage(const char *name, const char *needle, ...)
{
	char bin[4096];
	va_list ap;

	daemon_path(name, bin, sizeof(bin));
	va_start(ap, needle);
	expect_usage_v(bin, needle, needle, ap);
	va_end(ap);
}

/* --help: the table's help on stdout, exit 0, every option of the table
 * (NAME __options, which fails on an inconsistent table) listed */
static void expect_daemon_help(const char *name, int min_opts)
{
	char bin[4096], usage[64], *line, *save = NULL;
	char *argv[3] = {bin, NULL, NULL};
	struct run dump, h;
	int n_opts = 0;

	daemon_path(name, bin, sizeof(bin));
	argv[1] = "--help";
	assert_int_equal(run_prog(&h, argv, NULL), 0);
	snprintf(usage, sizeof(usage), "usage: %s ", name);
	if (h.status || h.err_len || strncmp(h.out, usage, strlen(usage)))
		fail_msg("%s --help: exit %d, out %s, err %s", name, h.status,
			 h.out, h.err);
	argv[1] = "__options";
	assert_int_equal(run_prog(&dump, argv, NULL), 0);
	if (dump.status)
		fail_msg("%s __options: exit %d: %s", name, dump.status,
			 dump.err);
	for (line = strtok_r(dump.out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[3] = {0};
		int k = 0;

		/* fields may be empty (the command has no words) */
		for (char *t = line; t && k < 3; k++) {
			f[k] = t;
			t = strchr(t, '\t');
			if (t)
				*t++ = '\0';
		}
		assert_true(k == 3);
		if (strcmp(f[0], "O"))
			continue;
		if (!strstr(h.out, f[2]))
			fail_msg("%s --help does not list %s:\n%s", name, f[2],
				 h.out);
		n_opts++;
	}
	assert_true(n_opts >= min_opts);
	run_free(&h);
	run_free(&dump);
}

static void test_ringexport_cli(void **state)
{
	(void)state;
	expect_daemon_help("ringexport", 4);
	expect_daemon_usage("ringexport", "--bogus", "--listen", ":9842",
			    "--bogus", NULL);
	expect_daemon_usage("ringexport", "-x", "-x", NULL);
	expect_daemon_usage("ringexport", "--listen", NULL);
	expect_daemon_usage("ringexport", "--listen", "--pin-dir", "/tmp",
			    NULL);
	expect_daemon_usage("ringexport", "--listen needs a value", "--listen",
			    NULL);
	expect_daemon_usage("ringexport", "--verbose takes no value",
			    "--listen", ":1", "--verbose=1", NULL);
	expect_daemon_usage("ringexport", "'extra'", "--listen", ":1", "extra",
			    NULL);
	/* every option taken, in both forms: parsing gets as far as checking
	 * the address (and fails there, before listening) */
	expect_daemon_usage("ringexport", "--listen 'no-port'", "--listen",
			    "no-port", "--pin-dir", "/sys/fs/bpf/x", "-v",
			    NULL);
	expect_daemon_usage("ringexport", "--listen '1.2.3:80'",
			    "--pin-dir=/sys/fs/bpf/x", "--verbose",
			    "--listen=1.2.3:80", NULL);
}

static void test_ringsync_cli(void **state)
{
	(void)state;
	expect_daemon_help("ringsync", 18);
	expect_daemon_usage("ringsync", "--etcd", NULL);
	expect_daemon_usage("ringsync", "--key", "--etcd", "http://[::1]:2379",
			    NULL);
	expect_daemon_usage("ringsync", "--bogus", "--etcd", "http://x",
			    "--key", "k", "--bogus", NULL);
	expect_daemon_usage("ringsync", "-v", "--etcd", "http://x", "--key",
			    "k", "-v", NULL);
	expect_daemon_usage("ringsync", "--interval-ms '5'", "--etcd",
			    "http://x", "--key", "k", "--interval-ms", "5",
			    NULL);
	expect_daemon_usage("ringsync", "--fresh-s 'x'", "--etcd", "http://x",
			    "--key", "k", "--fresh-s", "x", NULL);
	expect_daemon_usage("ringsync", "'extra'", "--etcd", "http://x",
			    "--key", "k", "extra", NULL);
	/* every option taken: parsing gets as far as the checks of pairs and
	 * the password file, before anything is read or run */
	expect_daemon_usage("ringsync", "--cert and --tls-key go together",
			    "--etcd", "https://x:2379", "--key", "k",
			    "--pin-dir", "/sys/fs/bpf/x", "--cacert", "/ca",
			    "--cert", "/c", "--user", "u", "--password-file",
			    "/nonexistent", "--bird-socket", "/s",
			    "--bird-protocol", "p", "--fresh-s", "0",
			    "--interval-ms", "10", "--backoff-max-ms", "20",
			    "--timeout-ms", "30", "--ringctl", "/x/ringctl",
			    "--ringload", "/x/ringload", "--birdc", "/x/birdc",
			    NULL);
	expect_daemon_usage("ringsync",
			    "--user and --password-file go together",
			    "--etcd=http://x", "--key=k", "--cert=/c",
			    "--tls-key=/k", "--user=u", NULL);
	expect_daemon_usage("ringsync", "cannot read --password-file",
			    "--etcd", "http://x", "--key", "k", "--user", "u",
			    "--password-file", "/nonexistent/pw", NULL);
}

static void test_ringhealth_cli(void **state)
{
	char bin[4096];
	char *argv[8] = {bin, "--pin-dir", "/sys/fs/bpf/rm-test-cli-none", "-v",
			 NULL};
	struct run r;

	(void)state;
	expect_daemon_help("ringhealth", 3);
	expect_daemon_usage("ringhealth", "--bogus", "--bogus", NULL);
	expect_daemon_usage("ringhealth", "-x", "-v", "-x", NULL);
	expect_daemon_usage("ringhealth", "--pin-dir needs a value",
			    "--pin-dir", NULL);
	expect_daemon_usage("ringhealth", "'extra'", "-v", "extra", NULL);
	/* every option taken, in both forms: it gets as far as opening the
	 * state, and fails there (runtime, exit 1) naming the directory */
	daemon_path("ringhealth", bin, sizeof(bin));
	for (int form = 0; form < 2; form++) {
		if (form) {
			argv[1] = "--pin-dir=/sys/fs/bpf/rm-test-cli-none";
			argv[2] = "--verbose";
			argv[3] = NULL;
		}
		assert_int_equal(run_prog(&r, argv, NULL), 0);
		if (r.status != 1 || r.out_len ||
		    count_char(r.err, r.err_len, '\n') != 1 ||
		    !strstr(r.err, "/sys/fs/bpf/rm-test-cli-none"))
			fail_msg("ringhealth --pin-dir (none there): exit %d, "
				 "out %s, err %s",
				 r.status, r.out, r.err);
		run_free(&r);
	}
}

/* restore reads its lines with the command-line tables: a line is checked
 * (type, range, which command takes which option) before any state is
 * opened, so these fail with exit 2 and the line number even where no
 * director runs. */
static void expect_restore(const char *text, int status, const char *needle)
{
	char path[] = "/tmp/rm-restore.XXXXXX";
	int fd = mkstemp(path);
	struct run r;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	run_ctl(&r, "--pin-dir", "/sys/fs/bpf/rm-test-cli-none", "restore", path,
		NULL);
	unlink(path);
	if (r.status != status || count_char(r.err, r.err_len, '\n') != 1 ||
	    !strstr(r.err, needle))
		fail_msg("restore of \"%s\": exit %d (want %d), stderr \"%s\" "
			 "(want \"%s\")",
			 text, r.status, status, r.err, needle);
	run_free(&r);
}

static void test_restore_lines(void **state)
{
	(void)state;
	expect_restore("# c\nservice add x --vip 198.18.0.1 --port 1 --proto "
		       "tcp --dry-run\n",
		       2, "line 2: service add: --dry-run does not belong");
	expect_restore("node del web a\n", 2,
		       "line 1: 'node del' does not belong in a saved file");
	expect_restore("seed --set 00\n", 2, "line 1: seed: --set '00'");
	expect_restore("node add web a --mac 02:00:00:00:00:01\n", 2,
		       "--dev IFACE is required");
	expect_restore("node add web a --mac 02:00:00:00:00:01 --dev d0 "
		       "--vip 198.18.0.1\n",
		       2, "--vip does not apply to node add");
	expect_restore("ring --nodes a\n", 2, "'ring' does not belong");
	/* routed nodes: each method with the options it takes, only those */
	expect_restore("node add web a --via ipip --dev d0\n", 2,
		       "--via ipip needs --addr NODE_IP");
	expect_restore("node add web a --via gue --addr 198.18.0.9 --mac "
		       "02:00:00:00:00:01\n",
		       2, "--mac goes with --via l2");
	expect_restore("node add web a --mac 02:00:00:00:00:01 --dev d0 "
		       "--gue-port 7000\n",
		       2, "--gue-port goes with --via gue");
	expect_restore("node add web a --via ipip --addr 198.18.0.9 "
		       "--gue-port 7000\n",
		       2, "--gue-port goes with --via gue");
	expect_restore("node add web a --via gre --addr 198.18.0.9\n", 2,
		       "--via 'gre'");
	expect_restore("node add web a --via gue --addr 198.18.0.9 "
		       "--gue-port 0\n",
		       2, "--gue-port '0'");
	expect_restore("node set web a --mac 02:00:00:00:00:01\n", 2,
		       "give --via too");
	expect_restore("config --encap-src4 2001:db8::1\n", 2,
		       "--encap-src4 '2001:db8::1': expected an IPv4 address");
	expect_restore("config --encap-src6 198.18.0.1\n", 2,
		       "--encap-src6 '198.18.0.1': expected an IPv6 address");
	expect_restore("config --udp-timeout 0\n", 2, "--udp-timeout '0'");
	/* well-formed: then the missing director is the failure */
	expect_restore("seed --set 000102030405060708090a0b0c0d0e0f\n"
		       "service add x --vip 198.18.0.1 --port 1 --proto tcp\n",
		       1, "rm-test-cli-none");
}

/* publish refuses a document that sets one director's outer source (it
 * would become every director's) before it contacts etcd: exit 2, the
 * line, and the fix (save --fleet). The URL is never used (test_fleet_
 * local.sh publishes the fleet part to a real etcd). */
static void test_publish_local(void **state)
{
	const char *doc = "seed --set 000102030405060708090a0b0c0d0e0f\n"
			  "config --udp-timeout 60 --conn-insert-rate 0\n"
			  "config --encap-src4 none --encap-src6 2001:db8::1\n";
	char path[] = "/tmp/rm-publish.XXXXXX";
	int fd = mkstemp(path);
	struct run r;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
	close(fd);
	run_ctl(&r, "publish", path, "--etcd", "http://x", "--key", "/rm/test",
		NULL);
	unlink(path);
	if (r.status != 2 || count_char(r.err, r.err_len, '\n') != 1 ||
	    !strstr(r.err, "line 3 sets --encap-src4") ||
	    !strstr(r.err, "save --fleet"))
		fail_msg("publish of a document with --encap-src6: exit %d, "
			 "stderr \"%s\"", r.status, r.err);
	run_free(&r);
}

/* ---- setup ------------------------------------------------------------ */
static int find_ringctl(const char *argv0)
{
	const char *env = getenv("RINGCTL");
	char *copy;

	if (env && *env) {
		snprintf(ringctl, sizeof(ringctl), "%s", env);
	} else {
		copy = strdup(argv0);
		if (!copy)
			return -1;
		snprintf(ringctl, sizeof(ringctl), "%s/../ringctl",
			 dirname(copy));
		free(copy);
		if (access(ringctl, X_OK))
			snprintf(ringctl, sizeof(ringctl), "build/ringctl");
	}
	/* posix_spawnp must not search PATH for a bare name */
	if (!strchr(ringctl, '/') && strlen(ringctl) + 3 <= sizeof(ringctl)) {
		memmove(ringctl + 2, ringctl, strlen(ringctl) + 1);
		memcpy(ringctl, "./", 2);
	}
	if (access(ringctl, X_OK)) {
		fprintf(stderr,
			"test_cli: no ringctl at %s (build it: make "
			"build/ringctl, or set RINGCTL)\n",
			ringctl);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json_parser),
	    cmocka_unit_test(test_ring_text),
	    cmocka_unit_test(test_ring_json),
	    cmocka_unit_test(test_ring_deterministic),
	    cmocka_unit_test(test_diff_json),
	    cmocka_unit_test(test_diff_text),
	    cmocka_unit_test(test_usage_errors),
	    cmocka_unit_test(test_no_command_and_help),
	    cmocka_unit_test(test_foreign_options),
	    cmocka_unit_test(test_option_forms),
	    cmocka_unit_test(test_command_help),
	    cmocka_unit_test(test_restore_lines),
	    cmocka_unit_test(test_publish_local),
	    cmocka_unit_test(test_ringexport_cli),
	    cmocka_unit_test(test_ringsync_cli),
	    cmocka_unit_test(test_ringhealth_cli),
	    cmocka_unit_test(test_global_options),
	    cmocka_unit_test(test_version),
	};

	(void)argc;
	if (find_ringctl(argv[0]))
		return 1;
	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
