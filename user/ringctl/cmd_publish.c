// SPDX-License-Identifier: GPL-2.0
/* publish: validate a configuration document and write it to the fleet's
 * etcd key as a new revision, by compare-and-swap (/v3/kv/txn on the
 * key's mod_revision): with --expect-revision N only if the key is still
 * at revision N (the one the operator last saw), otherwise only if it
 * did not change between our read and our write. Two operators therefore
 * never overwrite each other silently: the second one is refused and
 * told the revision to look at. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd_live.h"
#include "etcd.h"
#include "json.h"

#define DOC_MAX (4u << 20) /* far above any document: a guard, not a limit */

static int read_all(const char *path, char **buf, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	size_t cap = 0, n = 0;
	char *p = NULL, *g;

	if (!f)
		return ctl_runtime_error("publish: cannot open %s: %s", path,
					 strerror(errno));
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 16384;
			g = realloc(p, cap);
			if (!g || cap > DOC_MAX) {
				free(g ? g : p);
				if (f != stdin)
					fclose(f);
				return ctl_runtime_error("publish: %s is too "
							 "large",
							 path);
			}
			p = g;
		}
		size_t r = fread(p + n, 1, 4096, f);

		n += r;
		if (r < 4096)
			break;
	}
	if (f != stdin)
		fclose(f);
	p[n] = 0;
	*buf = p;
	*len = n;
	return 0;
}

/* A fleet's document must set the seed: directors that hash with their
 * own random seeds would send a flow ECMP moves to another node. */
static bool has_seed(const char *doc)
{
	for (const char *l = doc; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		while (*l == ' ' || *l == '\t')
			l++;
		if (!strncmp(l, "seed ", 5) && strstr(l, "--set"))
			return true;
	}
	return false;
}

static int validate(struct ctl_opts *o, const char *doc, size_t len)
{
	struct edit *edits = NULL;
	FILE *f = fmemopen((void *)doc, len ? len : 1, "r");
	int n, ret, local;

	if (!f)
		return ctl_runtime_error("publish: %s", strerror(errno));
	ret = doc_parse("publish", f, &edits, &n);
	fclose(f);
	local = ret ? 0 : doc_local_line(edits, n);
	free(edits);
	if (ret)
		return ret;
	/* every director would take one director's outer source */
	if (local)
		return ctl_usage_error("publish: %s: line %d sets --encap-src4/"
				       "--encap-src6, an address of one "
				       "director: publish the output of "
				       "`ringctl save --fleet` (each director "
				       "keeps its own, "
				       "docs/fleet-local-settings.md)",
				       o->argv[0], local);
	if (!has_seed(doc))
		return ctl_usage_error("publish: %s has no `seed --set HEX` "
				       "line: every director must hash with "
				       "the same seed (ringctl save writes it)",
				       o->argv[0]);
	return 0;
}

static void report(const struct ctl_opts *o, const char *what, __u64 cur,
		   __u64 rev)
{
	struct rm_json j;

	if (!o->json) {
		if (!strcmp(what, "published"))
			printf("published %s as revision %llu of %s (was "
			       "%llu)\n",
			       o->argv[0], (unsigned long long)rev, o->key,
			       (unsigned long long)cur);
		else if (!strcmp(what, "unchanged"))
			printf("no change: revision %llu of %s already holds "
			       "%s\n",
			       (unsigned long long)cur, o->key, o->argv[0]);
		else
			printf("dry run: %s is valid; %s is at revision %llu "
			       "(publish --expect-revision %llu writes it "
			       "only if it still is)\n",
			       o->argv[0], o->key, (unsigned long long)cur,
			       (unsigned long long)cur);
		return;
	}
	rm_json_init(&j, stdout);
	rm_json_obj_open(&j, NULL);
	rm_json_str(&j, "result", what);
	rm_json_str(&j, "key", o->key);
	rm_json_u64(&j, "previous_revision", cur);
	rm_json_u64(&j, "revision", rev);
	rm_json_obj_close(&j);
	rm_json_end(&j);
}

int cmd_publish(struct ctl_opts *o)
{
	struct rm_etcd_opts eo = {.url = o->etcd,
				  .cacert = o->cacert,
				  .cert = o->cert,
				  .key = o->tls_key,
				  .user = o->user,
				  .timeout_ms = 3000};
	struct rm_etcd_kv cur;
	__u64 expect, rev = 0;
	char *doc = NULL, pw[256];
	size_t len = 0;
	int ret, err;

	if (o->argc != 1)
		return ctl_usage_error("publish: expected FILE or - (stdin)");
	if (!o->etcd || !o->key)
		return ctl_usage_error("publish: --etcd URL and --key KEY are "
				       "required");
	if (!o->cert != !o->tls_key)
		return ctl_usage_error("publish: --cert and --tls-key go "
				       "together (a client certificate and "
				       "its key)");
	if (!o->user != !o->password_file)
		return ctl_usage_error("publish: --user and --password-file "
				       "go together");
	if (o->password_file) {
		FILE *f = fopen(o->password_file, "r");

		if (!f || !fgets(pw, sizeof(pw), f)) {
			if (f)
				fclose(f);
			return ctl_usage_error("publish: cannot read "
					       "--password-file %s",
					       o->password_file);
		}
		fclose(f);
		pw[strcspn(pw, "\r\n")] = 0;
		eo.password = pw;
	}
	ret = read_all(o->argv[0], &doc, &len);
	if (ret)
		return ret;
	ret = validate(o, doc, len);
	if (ret)
		goto out;
	if (rm_etcd_global_init(eo.url, false)) {
		ret = ctl_runtime_error("publish: %s", rm_etcd_errmsg());
		goto out;
	}
	err = rm_etcd_get(&eo, o->key, &cur);
	if (err && err != -ENOENT) {
		ret = ctl_runtime_error("publish: %s (nothing written)",
					rm_etcd_errmsg());
		goto out;
	}
	if (o->expect_revision.set && cur.mod_revision != o->expect_revision.val) {
		ret = ctl_runtime_error(
		    "publish: %s changed since revision %llu: it is at %llu "
		    "now; read it, merge, and publish with --expect-revision "
		    "%llu (nothing written)",
		    o->key, (unsigned long long)o->expect_revision.val,
		    (unsigned long long)cur.mod_revision,
		    (unsigned long long)cur.mod_revision);
		rm_etcd_kv_free(&cur);
		goto out;
	}
	expect = cur.mod_revision;
	/* an empty or missing value has no bytes to compare (and may be NULL) */
	if (!err && cur.len == len &&
	    (!len || (cur.value && !memcmp(cur.value, doc, len)))) {
		report(o, o->dry_run ? "dry-run" : "unchanged", expect, expect);
		rm_etcd_kv_free(&cur);
		goto out;
	}
	rm_etcd_kv_free(&cur);
	if (o->dry_run) {
		report(o, "dry-run", expect, expect);
		goto out;
	}
	err = rm_etcd_cas(&eo, o->key, doc, len, expect, &rev);
	if (err == -ESTALE)
		ret = ctl_runtime_error("publish: %s changed while publishing: "
					"it is at revision %llu now, not %llu; "
					"read it, merge, retry (nothing "
					"written)",
					o->key, (unsigned long long)rev,
					(unsigned long long)expect);
	else if (err)
		ret = ctl_runtime_error("publish: %s (nothing written)",
					rm_etcd_errmsg());
	else
		report(o, "published", expect, rev);
out:
	free(doc);
	return ret;
}
