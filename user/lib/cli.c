// SPDX-License-Identifier: GPL-2.0
/* Command lines from tables: see cli.h. */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "util.h"

const struct cli_cmd *cli_cmd_at(const struct cli_prog *p, size_t i)
{
	return (const struct cli_cmd *)((const char *)p->cmds + i * p->stride);
}

/* ---- looking options up ---------------------------------------------- */

static bool opt_match(const struct cli_opt *o, const char *name, size_t len,
		      char sh)
{
	if (sh)
		return o->short_name == sh;
	return strlen(o->name) == len && !strncmp(o->name, name, len);
}

static const struct cli_opt *find_in(const struct cli_opt *t, const char *name,
				     size_t len, char sh)
{
	for (; t && t->name; t++)
		if (opt_match(t, name, len, sh))
			return t;
	return NULL;
}

/* In the command's table or the global one. */
static const struct cli_opt *find_for(const struct cli_prog *p,
				      const struct cli_cmd *c, const char *name,
				      size_t len, char sh)
{
	const struct cli_opt *o = find_in(p->global, name, len, sh);

	return o ? o : find_in(c->opts, name, len, sh);
}

/* Any table: only to know whether the option takes a value before the
 * command is known (the same name is the same option everywhere). */
static const struct cli_opt *find_any(const struct cli_prog *p,
				      const char *name, size_t len, char sh)
{
	const struct cli_opt *o = find_in(p->global, name, len, sh);

	for (size_t i = 0; !o && i < p->n_cmds; i++)
		o = find_in(cli_cmd_at(p, i)->opts, name, len, sh);
	return o;
}

/* ---- values ------------------------------------------------------------ */

static void *field(void *base, const struct cli_opt *o)
{
	return (char *)base + o->off;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void words_text(const struct cli_word *w, const char *sep,
		       const char *last_sep, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t i = 0; w[i].word && n < len; i++)
		n += snprintf(out + n, len - n, "%s%s",
			      !i ? "" : w[i + 1].word ? sep : last_sep,
			      w[i].word);
}

/* Why text is not a value of o, in err; 0 if it is (and stored). */
static int set_value(const struct cli_opt *o, void *base, const char *text,
		     char *err, size_t errlen)
{
	void *f = field(base, o);
	char words[160];

	switch (o->type) {
	case CLI_FLAG:
		*(bool *)f = true;
		return 0;
	case CLI_UINT: {
		struct cli_u32 *u = f;

		if (rm_parse_u32(text, o->min, o->max, &u->val))
			break;
		u->set = true;
		return 0;
	}
	case CLI_STRING:
		if (!*text || (o->max && strlen(text) > o->max))
			break;
		*(const char **)f = text;
		return 0;
	case CLI_ADDR: {
		struct cli_addr *a = f;

		if (rm_parse_addr(text, a->addr, &a->family))
			break;
		a->set = true;
		a->text = text;
		return 0;
	}
	case CLI_MAC: {
		struct cli_mac *m = f;

		if (rm_parse_mac(text, m->mac))
			break;
		m->set = true;
		m->text = text;
		return 0;
	}
	case CLI_HEX: {
		struct cli_hex *h = f;
		const char *s = text;

		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
			s += 2;
		if (strlen(s) != 2 * (size_t)o->max || o->max > CLI_HEX_MAX)
			break;
		for (__u32 i = 0; i < o->max; i++) {
			int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

			if (hi < 0 || lo < 0)
				goto bad;
			h->bytes[i] = (__u8)(hi << 4 | lo);
		}
		h->set = true;
		h->text = text;
		return 0;
	}
	case CLI_ENUM: {
		struct cli_enum *e = f;

		for (size_t i = 0; o->words[i].word; i++) {
			if (strcmp(o->words[i].word, text))
				continue;
			e->val = o->words[i].val;
			e->set = true;
			e->text = text;
			return 0;
		}
		break;
	}
	}
bad:
	switch (o->type) {
	case CLI_UINT:
		snprintf(err, errlen, "--%s '%s': expected %u-%u", o->name,
			 text, o->min, o->max);
		break;
	case CLI_STRING:
		if (*text)
			snprintf(err, errlen, "--%s '%s': at most %u characters",
				 o->name, text, o->max);
		else
			snprintf(err, errlen, "--%s: empty value", o->name);
		break;
	case CLI_ADDR:
		snprintf(err, errlen,
			 "--%s '%s': expected an IPv4 or IPv6 address",
			 o->name, text);
		break;
	case CLI_MAC:
		snprintf(err, errlen,
			 "--%s '%s': expected a MAC address as "
			 "xx:xx:xx:xx:xx:xx",
			 o->name, text);
		break;
	case CLI_HEX:
		snprintf(err, errlen, "--%s '%s': expected %u hex digits",
			 o->name, text, 2 * o->max);
		break;
	case CLI_ENUM:
		words_text(o->words, ", ", " or ", words, sizeof(words));
		snprintf(err, errlen, "--%s '%s': expected %s", o->name, text,
			 words);
		break;
	default:
		break;
	}
	return -1;
}

/* Is text a value of o? Stored nowhere: for an option the command ignores. */
static int check_value(const struct cli_opt *o, const char *text, char *err,
		       size_t errlen)
{
	union {
		bool b;
		struct cli_u32 u;
		const char *s;
		struct cli_addr a;
		struct cli_mac m;
		struct cli_hex h;
		struct cli_enum e;
	} scratch;
	struct cli_opt at0 = *o;

	at0.off = 0;
	return set_value(&at0, &scratch, text, err, errlen);
}

/* ---- parsing ------------------------------------------------------------ */

struct tok {
	const struct cli_opt *any; /* NULL: no table knows it */
	const char *text;	   /* as typed, for messages */
	size_t len;		   /* of the name in text (long) */
	char sh;		   /* short name, or 0 for a long one */
	const char *val;
	bool pre; /* before the first positional word (the command) */
};

static bool word_eq(const char *words, size_t idx, const char *w)
{
	const char *s = words, *sp;

	for (size_t i = 0; i < idx; i++) {
		s = strchr(s, ' ');
		if (!s)
			return false;
		s++;
	}
	sp = strchr(s, ' ');
	return sp ? strlen(w) == (size_t)(sp - s) && !strncmp(s, w, sp - s)
		  : !strcmp(s, w);
}

static size_t n_words(const char *words)
{
	size_t n = !!*words; /* "": a program without command words */

	for (; *words; words++)
		n += *words == ' ';
	return n;
}

static int find_cmd(const struct cli_prog *p, char **pos, int np)
{
	for (size_t i = 0; i < p->n_cmds; i++) {
		const char *w = cli_cmd_at(p, i)->words;
		size_t n = n_words(w);

		if ((int)n > np)
			continue;
		if (word_eq(w, 0, pos[0]) && (n < 2 || word_eq(w, 1, pos[1])))
			return (int)i;
	}
	return -1;
}

static bool is_group(const struct cli_prog *p, const char *w)
{
	for (size_t i = 0; i < p->n_cmds; i++) {
		const char *cw = cli_cmd_at(p, i)->words;

		if (n_words(cw) > 1 && word_eq(cw, 0, w))
			return true;
	}
	return false;
}

static void tok_name(const struct tok *t, char *out, size_t len)
{
	if (t->sh)
		snprintf(out, len, "-%c", t->sh);
	else
		snprintf(out, len, "--%.*s", (int)t->len, t->text + 2);
}

static void apply_defaults(const struct cli_opt *t, void *base)
{
	char err[8];

	for (; t && t->name; t++) {
		if (!t->def)
			continue;
		set_value(t, base, t->def, err, sizeof(err));
		/* a default is not "given" */
		switch (t->type) {
		case CLI_UINT: ((struct cli_u32 *)field(base, t))->set = false; break;
		case CLI_ADDR: ((struct cli_addr *)field(base, t))->set = false; break;
		case CLI_MAC: ((struct cli_mac *)field(base, t))->set = false; break;
		case CLI_HEX: ((struct cli_hex *)field(base, t))->set = false; break;
		case CLI_ENUM: ((struct cli_enum *)field(base, t))->set = false; break;
		default: break;
		}
	}
}

static bool given(const struct cli_opt *o, void *base)
{
	void *f = field(base, o);

	switch (o->type) {
	case CLI_FLAG: return *(bool *)f;
	case CLI_UINT: return ((struct cli_u32 *)f)->set;
	case CLI_STRING: return *(const char **)f;
	case CLI_ADDR: return ((struct cli_addr *)f)->set;
	case CLI_MAC: return ((struct cli_mac *)f)->set;
	case CLI_HEX: return ((struct cli_hex *)f)->set;
	case CLI_ENUM: return ((struct cli_enum *)f)->set;
	}
	return false;
}

static void saved_list(const struct cli_prog *p, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t i = 0; i < p->n_cmds && n < len; i++) {
		const struct cli_cmd *c = cli_cmd_at(p, i);

		if (c->flags & CLI_CMD_SAVED)
			n += snprintf(out + n, len - n, "%s%s", n ? ", " : "",
				      c->words);
	}
}

/* A daemon: one command, no command words (cli.h). */
static bool wordless(const struct cli_prog *p)
{
	return p->n_cmds == 1 && !*cli_cmd_at(p, 0)->words;
}

/* What a user types to run c ("ringctl node add", "ringexport"), and the
 * prefix of c's messages ("node add: ", or nothing). */
static void cmd_line(const struct cli_prog *p, const struct cli_cmd *c,
		     char *out, size_t len)
{
	snprintf(out, len, "%s%s%s", p->name, *c->words ? " " : "", c->words);
}

static const char *cmd_sep(const struct cli_cmd *c)
{
	return *c->words ? ": " : "";
}

/* Split argv into option tokens and positional words (pos). */
static int scan(const struct cli_prog *p, int argc, char **argv,
		struct tok *toks, int *nt, char **pos, int *np, char *err,
		size_t errlen)
{
	bool dashdash = false, pre = true;
	int ret = 0;

	*nt = *np = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!dashdash && !strcmp(a, "--")) {
			dashdash = true;
			continue;
		}
		if (dashdash || a[0] != '-' || !a[1]) {
			pos[(*np)++] = argv[i];
			pre = false;
			continue;
		}
		if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			struct tok *t = &toks[(*nt)++];

			*t = (struct tok){.text = a,
					  .len = eq ? (size_t)(eq - a - 2)
						    : strlen(a + 2),
					  .pre = pre};
			t->any = find_any(p, a + 2, t->len, 0);
			if (!t->any)
				continue;
			if (t->any->type == CLI_FLAG) {
				if (eq && !ret) {
					snprintf(err, errlen,
						 "--%s takes no value",
						 t->any->name);
					ret = RM_EXIT_USAGE;
				}
				continue;
			}
			t->val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
			if (!t->val && !ret) {
				snprintf(err, errlen, "--%s needs a value (%s)",
					 t->any->name,
					 t->any->arg ? t->any->arg : "");
				ret = RM_EXIT_USAGE;
			}
			continue;
		}
		for (int j = 1; a[j]; j++) {
			struct tok *t = &toks[(*nt)++];

			*t = (struct tok){.text = a, .sh = a[j], .pre = pre};
			t->any = find_any(p, NULL, 0, a[j]);
			if (!t->any || t->any->type == CLI_FLAG)
				continue;
			t->val = a[j + 1] ? a + j + 1 : i + 1 < argc ? argv[++i]
								      : NULL;
			if (!t->val && !ret) {
				snprintf(err, errlen, "-%c needs a value", a[j]);
				ret = RM_EXIT_USAGE;
			}
			break;
		}
	}
	return ret;
}

static int usage_err(struct cli_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int usage_err(struct cli_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res->err, sizeof(res->err), fmt, ap);
	va_end(ap);
	return RM_EXIT_USAGE;
}

static int parse_cmd(const struct cli_prog *p, const struct cli_cmd *c,
		     unsigned int mode, void *base, struct tok *toks, int nt,
		     struct cli_result *res)
{
	char name[48], why[256], line[96];

	cmd_line(p, c, line, sizeof(line));
	for (int i = 0; i < nt; i++) {
		const struct tok *t = &toks[i];
		const struct cli_opt *o;

		tok_name(t, name, sizeof(name));
		if (!t->any)
			return usage_err(res,
					 "%s%sunknown option '%s' (%s --help "
					 "lists its options)",
					 c->words, cmd_sep(c), name, line);
		o = find_for(p, c, t->any->name, strlen(t->any->name), 0);
		if (!o && t->pre && (t->any->flags & CLI_GLOBAL)) {
			/* meaningless here, but still a well-formed value */
			if (check_value(t->any, t->val, why, sizeof(why)))
				return usage_err(res, "%s%s%s", c->words,
						 cmd_sep(c), why);
			continue;
		}
		if (!o)
			return usage_err(res,
					 "%s: %s does not apply to %s (%s "
					 "--help lists its options)",
					 c->words, name, c->words, line);
		if ((mode & CLI_PARSE_SAVED) && (o->flags & CLI_NOT_SAVED))
			return usage_err(res,
					 "%s: --%s does not belong in a saved "
					 "file",
					 c->words, o->name);
		if (set_value(o, base, t->val, why, sizeof(why)))
			return usage_err(res, "%s%s%s", c->words, cmd_sep(c),
					 why);
	}
	for (const struct cli_opt *o = c->opts; o && o->name; o++)
		if ((o->flags & CLI_REQUIRED) && !given(o, base))
			return usage_err(res, "%s%s--%s %s is required (%s)",
					 c->words, cmd_sep(c), o->name,
					 o->arg ? o->arg : "", o->help);
	return 0;
}

int cli_parse(const struct cli_prog *p, int argc, char **argv,
	      unsigned int mode, void *base, struct cli_result *res)
{
	struct tok *toks = NULL;
	char **pos = NULL, scan_err[sizeof(res->err)], name[48], list[200];
	int nt, np, ret, k;
	size_t total = 1;
	const struct cli_cmd *c;

	memset(res, 0, sizeof(*res));
	res->cmd = -1;
	for (int i = 1; i < argc; i++)
		total += strlen(argv[i]);
	toks = calloc(total, sizeof(*toks));
	pos = calloc(argc > 0 ? argc : 1, sizeof(*pos));
	if (!toks || !pos) {
		ret = usage_err(res, "out of memory");
		goto out;
	}
	scan_err[0] = '\0';
	ret = scan(p, argc, argv, toks, &nt, pos, &np, scan_err,
		   sizeof(scan_err));
	for (int i = 0; i < nt; i++) {
		const struct cli_opt *h = toks[i].any;

		if (h && h->type == CLI_FLAG && !strcmp(h->name, CLI_HELP_NAME))
			res->help = true;
		if (h && h->type == CLI_FLAG &&
		    !strcmp(h->name, CLI_VERSION_NAME))
			res->version = true;
	}
	/* the positional words back into argv, in order */
	for (int i = 0; i < np; i++)
		argv[1 + i] = pos[i];
	res->argv = argv + 1;
	res->argc = np;
	if (res->version) {
		ret = 0; /* whatever else is on the line */
		goto out;
	}
	if (!np && !wordless(p)) {
		for (int i = 0; !ret && i < nt; i++) {
			if (toks[i].any)
				continue;
			tok_name(&toks[i], name, sizeof(name));
			ret = usage_err(res, "unknown option '%s' (%s --help "
					     "lists the options)",
					name, p->name);
		}
		if (ret && scan_err[0])
			snprintf(res->err, sizeof(res->err), "%s", scan_err);
		goto out;
	}
	k = wordless(p) ? 0 : find_cmd(p, argv + 1, np);
	if (k < 0) {
		if (is_group(p, argv[1]) && np == 1)
			ret = usage_err(res,
					"%s: expected a subcommand (%s %s "
					"--help lists them)",
					argv[1], p->name, argv[1]);
		else
			ret = usage_err(res,
					"unknown command '%s%s%s' (%s --help "
					"lists them)",
					argv[1], np > 1 ? " " : "",
					np > 1 ? argv[2] : "", p->name);
		if (res->help && is_group(p, argv[1]))
			ret = 0; /* PROG GROUP --help: the group's listing */
		goto out;
	}
	c = cli_cmd_at(p, k);
	res->cmd = k;
	res->argv += n_words(c->words);
	res->argc -= (int)n_words(c->words);
	if ((mode & CLI_PARSE_SAVED) && !(c->flags & CLI_CMD_SAVED)) {
		saved_list(p, list, sizeof(list));
		ret = usage_err(res,
				"'%s' does not belong in a saved file (it "
				"holds %s)",
				c->words, list);
		goto out;
	}
	if (res->help) {
		ret = 0;
		goto out;
	}
	if (ret) {
		snprintf(res->err, sizeof(res->err), "%s%s%s", c->words,
			 cmd_sep(c), scan_err);
		goto out;
	}
	apply_defaults(p->global, base);
	apply_defaults(c->opts, base);
	ret = parse_cmd(p, c, mode, base, toks, nt, res);
out:
	free(toks);
	free(pos);
	return ret;
}

int cli_daemon(const struct cli_prog *p, int argc, char **argv, void *base)
{
	struct cli_result res;
	int ret;

	if (cli_is_internal(argc, argv))
		return cli_internal(p, argc, argv);
	ret = cli_parse(p, argc, argv, 0, base, &res);
	if (res.version) {
		cli_version(stdout, p);
		return RM_EXIT_OK;
	}
	if (res.help) {
		cli_help(stdout, p, cli_cmd_at(p, 0));
		return RM_EXIT_OK;
	}
	if (ret) {
		fprintf(stderr, "%s: %s\n", p->name, res.err);
		return ret;
	}
	if (res.argc) {
		fprintf(stderr,
			"%s: unexpected argument '%s' (%s takes options only: "
			"%s --help)\n",
			p->name, res.argv[0], p->name, p->name);
		return RM_EXIT_USAGE;
	}
	return -1;
}

/* ---- help ---------------------------------------------------------------- */

static void opt_arg(const struct cli_opt *o, char *out, size_t len)
{
	if (o->type == CLI_FLAG)
		out[0] = '\0';
	else if (o->arg)
		snprintf(out, len, "%s", o->arg);
	else if (o->type == CLI_ENUM)
		words_text(o->words, "|", "|", out, len);
	else
		snprintf(out, len, "VALUE");
}

/* Print words with wrapping at 79 columns, continuation lines indented. */
struct wrap {
	FILE *f;
	int col, indent;
};

static void wrap_put(struct wrap *w, const char *s)
{
	int len = (int)strlen(s);

	if (w->col > w->indent && w->col + 1 + len > 79) {
		fprintf(w->f, "\n%*s", w->indent, "");
		w->col = w->indent;
	} else if (w->col > w->indent) {
		fputc(' ', w->f);
		w->col++;
	}
	fputs(s, w->f);
	w->col += len;
}

static void synopsis(FILE *f, const struct cli_prog *p, const struct cli_cmd *c,
		     int col)
{
	struct wrap w = {f, col, col + 4};
	char arg[160], item[200], line[96];

	cmd_line(p, c, line, sizeof(line));
	fputs(line, f);
	w.col += (int)strlen(line);
	w.indent = col + 4;
	if (c->args)
		wrap_put(&w, c->args);
	for (const struct cli_opt *o = c->opts; o && o->name; o++) {
		if (o->flags & CLI_COMMON)
			continue;
		opt_arg(o, arg, sizeof(arg));
		snprintf(item, sizeof(item), "%s--%s%s%s%s",
			 o->flags & CLI_REQUIRED ? "" : "[", o->name,
			 *arg ? " " : "", arg,
			 o->flags & CLI_REQUIRED ? "" : "]");
		wrap_put(&w, item);
	}
	fputc('\n', f);
}

/* Why the option's help adds: required, range, default. */
static void opt_extra(const struct cli_opt *o, char *extra, size_t len)
{
	size_t n = 0;

	extra[0] = '\0';
	if (o->flags & CLI_REQUIRED)
		n += snprintf(extra + n, len - n, "required");
	if (o->type == CLI_UINT && n < len)
		n += snprintf(extra + n, len - n, "%s%u-%u", n ? ", " : "",
			      o->min, o->max);
	if (o->def && n < len)
		snprintf(extra + n, len - n, "%sdefault %s", n ? ", " : "",
			 o->def);
}

static void opt_line(FILE *f, const struct cli_opt *o)
{
	char arg[160], head[200], extra[200], word[200];
	struct wrap w = {f, 29, 29};
	const char *s;

	opt_arg(o, arg, sizeof(arg));
	if (o->short_name)
		snprintf(head, sizeof(head), "-%c, --%s%s%s", o->short_name,
			 o->name, *arg ? " " : "", arg);
	else
		snprintf(head, sizeof(head), "    --%s%s%s", o->name,
			 *arg ? " " : "", arg);
	opt_extra(o, extra, sizeof(extra));
	fprintf(f, "  %-26s", head);
	if (strlen(head) > 26) {
		fprintf(f, "\n%*s", 29, "");
	} else {
		fputc(' ', f);
	}
	for (int part = 0; part < 2; part++) {
		s = part ? extra : o->help;
		if (part && !*extra)
			break;
		while (*s) {
			size_t n = strcspn(s, " ");

			snprintf(word, sizeof(word), "%s%.*s%s",
				 part && s == extra ? "(" : "", (int)n, s,
				 part && !s[n] ? ")" : "");
			wrap_put(&w, word);
			s += n;
			s += strspn(s, " ");
		}
	}
	fputc('\n', f);
}

void cli_help(FILE *f, const struct cli_prog *p, const struct cli_cmd *c)
{
	fprintf(f, "usage: ");
	synopsis(f, p, c, 7);
	fprintf(f, "%s\n\nOptions:\n", c->summary);
	for (const struct cli_opt *o = c->opts; o && o->name; o++)
		opt_line(f, o);
	for (const struct cli_opt *o = p->global; o && o->name; o++)
		opt_line(f, o);
}

void cli_version(FILE *f, const struct cli_prog *p)
{
	fprintf(f, "%s %s\n", p->name, rm_version());
}

/* The first option named like o in the commands' tables, if it is o. */
static bool first_of_name(const struct cli_prog *p, const struct cli_opt *o)
{
	return find_any(p, o->name, strlen(o->name), 0) == o;
}

void cli_usage(FILE *f, const struct cli_prog *p, const char *word1)
{
	fprintf(f, "usage: %s [OPTIONS] COMMAND [ARGS]\n", p->name);
	for (size_t i = 0; i < p->n_cmds; i++) {
		const struct cli_cmd *c = cli_cmd_at(p, i);

		if (word1 && !word_eq(c->words, 0, word1))
			continue;
		fprintf(f, "  ");
		synopsis(f, p, c, 2);
	}
	fprintf(f, "Options of every command:\n");
	for (const struct cli_opt *o = p->global; o && o->name; o++)
		opt_line(f, o);
	for (size_t i = 0, head = 0; i < p->n_cmds; i++)
		for (const struct cli_opt *o = cli_cmd_at(p, i)->opts;
		     o && o->name; o++) {
			if (!(o->flags & CLI_GLOBAL) || !first_of_name(p, o))
				continue;
			if (!head++)
				fprintf(f, "Before COMMAND, also (ignored by a "
					   "command without it):\n");
			opt_line(f, o);
		}
	fprintf(f, "%s COMMAND --help: what the command does and its "
		   "options.\n",
		p->name);
	if (p->footer)
		fputs(p->footer, f);
}

/* ---- internal modes: the option dump and completion ---------------------- */

static const char *type_name(enum cli_type t)
{
	static const char *const names[] = {
	    [CLI_FLAG] = "flag", [CLI_UINT] = "uint", [CLI_STRING] = "string",
	    [CLI_ADDR] = "addr", [CLI_MAC] = "mac",   [CLI_HEX] = "hex",
	    [CLI_ENUM] = "enum"};
	return names[t];
}

static void dump_opt(const char *cmd, const struct cli_opt *o)
{
	char arg[160], words[160] = "", extra[200], flags[4];

	opt_arg(o, arg, sizeof(arg));
	if (o->words)
		words_text(o->words, ",", ",", words, sizeof(words));
	opt_extra(o, extra, sizeof(extra));
	snprintf(flags, sizeof(flags), "%s%s%s",
		 o->flags & CLI_REQUIRED ? "R" : "",
		 o->flags & CLI_NOT_SAVED ? "N" : "",
		 o->flags & CLI_COMMON ? "C" : "");
	printf("O\t%s\t--%s\t%s%c\t%s\t%s\t%s\t%s\t%s\t%s\n", cmd, o->name,
	       o->short_name ? "-" : "", o->short_name ? o->short_name : '-',
	       type_name(o->type), *arg ? arg : "-", *flags ? flags : "-",
	       *words ? words : "-", *extra ? extra : "-", o->help);
}

/* Same name, same option: arity and short name agree everywhere; no
 * name or short name twice in one command. */
static int check_pair(const struct cli_opt *a, const struct cli_opt *b,
		      const char *where)
{
	if (a == b)
		return 0;
	if (!strcmp(a->name, b->name) &&
	    ((a->type == CLI_FLAG) != (b->type == CLI_FLAG) ||
	     a->short_name != b->short_name ||
	     (a->flags & CLI_GLOBAL) != (b->flags & CLI_GLOBAL))) {
		fprintf(stderr, "--%s: defined two ways\n", a->name);
		return 1;
	}
	if (a->short_name && a->short_name == b->short_name &&
	    strcmp(a->name, b->name)) {
		fprintf(stderr, "-%c: both --%s and --%s\n", a->short_name,
			a->name, b->name);
		return 1;
	}
	if (where && !strcmp(a->name, b->name)) {
		fprintf(stderr, "%s: --%s twice\n", where, a->name);
		return 1;
	}
	return 0;
}

static int self_check(const struct cli_prog *p)
{
	int bad = 0;

	for (size_t i = 0; i < p->n_cmds; i++) {
		const struct cli_cmd *c = cli_cmd_at(p, i);

		for (const struct cli_opt *a = c->opts; a && a->name; a++) {
			for (const struct cli_opt *g = p->global; g && g->name;
			     g++)
				bad |= check_pair(a, g, c->words);
			for (const struct cli_opt *b = c->opts; b->name; b++)
				bad |= check_pair(a, b, c->words);
			for (size_t j = 0; j < p->n_cmds; j++)
				for (const struct cli_opt *b =
					 cli_cmd_at(p, j)->opts;
				     b && b->name; b++)
					bad |= check_pair(a, b, NULL);
		}
	}
	return bad;
}

bool cli_is_internal(int argc, char **argv)
{
	return argc > 1 && (!strcmp(argv[1], "__options") ||
			    !strcmp(argv[1], "__complete"));
}

int cli_internal(const struct cli_prog *p, int argc, char **argv)
{
	const char *what = argc > 2 ? argv[2] : "";
	const struct cli_cmd *c = NULL;
	int k = -1, nw = argc - 3;

	if (!strcmp(argv[1], "__options")) {
		for (const struct cli_opt *o = p->global; o && o->name; o++)
			dump_opt("*", o);
		for (size_t i = 0; i < p->n_cmds; i++) {
			c = cli_cmd_at(p, i);
			printf("C\t%s\t%s\t%s\t%s\n", c->words,
			       c->args ? c->args : "-",
			       c->flags & CLI_CMD_SAVED ? "S" : "-",
			       c->summary);
			for (const struct cli_opt *o = c->opts; o && o->name;
			     o++)
				dump_opt(c->words, o);
		}
		return self_check(p) ? RM_EXIT_RUNTIME : RM_EXIT_OK;
	}
	if (!strcmp(what, "values") && nw > 0)
		nw--; /* the last word is the option */
	if (wordless(p))
		k = 0; /* every word is the command's */
	else if (nw > 0)
		k = find_cmd(p, argv + 3, nw);
	if (k >= 0)
		c = cli_cmd_at(p, k);
	if (!strcmp(what, "commands")) {
		/* the next command word after argv[3..] */
		for (size_t i = 0; i < p->n_cmds; i++) {
			const char *w = cli_cmd_at(p, i)->words;
			size_t len = strcspn(w, " ");
			bool dup = false;

			if (nw == 1 && n_words(w) == 2 && word_eq(w, 0, argv[3]))
				printf("%s\n", w + len + 1);
			if (nw)
				continue;
			for (size_t j = 0; j < i && !dup; j++) {
				const char *v = cli_cmd_at(p, j)->words;

				dup = strcspn(v, " ") == len && !strncmp(v, w, len);
			}
			if (!dup && len)
				printf("%.*s\n", (int)len, w);
		}
		return RM_EXIT_OK;
	}
	if (!c)
		return RM_EXIT_USAGE;
	if (!strcmp(what, "args")) {
		printf("%s\n", c->args ? c->args : "");
		return RM_EXIT_OK;
	}
	if (!strcmp(what, "options")) {
		char arg[160];

		for (int g = 0; g < 2; g++)
			for (const struct cli_opt *o = g ? p->global : c->opts;
			     o && o->name; o++) {
				/* the program's, not the command's: offered
				 * after a command it would only be noise */
				if (!strcmp(o->name, CLI_VERSION_NAME))
					continue;
				opt_arg(o, arg, sizeof(arg));
				printf("--%s\t%s\n", o->name,
				       o->type == CLI_FLAG ? "" : arg);
			}
		return RM_EXIT_OK;
	}
	if (!strcmp(what, "values")) {
		const char *name = argv[argc - 1];
		const struct cli_opt *o;

		if (strncmp(name, "--", 2))
			return RM_EXIT_USAGE;
		o = find_for(p, c, name + 2, strlen(name + 2), 0);
		if (!o)
			return RM_EXIT_USAGE;
		for (size_t i = 0; o->words && o->words[i].word; i++)
			printf("%s\n", o->words[i].word);
		return RM_EXIT_OK;
	}
	return RM_EXIT_USAGE;
}

static bool libbpf_verbose;

static int print_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	(void)level; /* warnings too: our own message says what failed */
	return libbpf_verbose ? vfprintf(stderr, fmt, ap) : 0;
}

void cli_libbpf_messages(bool verbose)
{
	libbpf_verbose = verbose;
	libbpf_set_print(print_libbpf);
}
