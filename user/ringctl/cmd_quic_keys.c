// SPDX-License-Identifier: GPL-2.0
/* An encrypted QUIC service's key over one change: written before the
 * commit (the service's first packets need it), put back as it was when
 * the change does not commit, and wiped once the commit has removed the
 * service (service del, or a restore/apply document without it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmd_live.h"
#include "quic.h"

struct live_keys {
	int fd;
	bool written[RM_MAX_SERVICES];
	struct rm_quic_key before[RM_MAX_SERVICES];
};

static bool svc_encrypted(const struct rm_snap *s, __u32 svc)
{
	const struct rm_svc_meta *m = &s->svc[svc];

	return m->in_use && m->keyspec.kind == RM_KEY_QUIC &&
	       m->keyspec.quic.enc;
}

int live_quic_keys_open(struct live *lv)
{
	struct live_keys *k;
	int fd;

	if (lv->keys)
		return 0;
	fd = rm_quic_keys_open(lv->st.pin_dir);
	if (fd == -ENOENT)
		return ctl_runtime_error(
		    "the director in %s cannot decrypt QUIC CIDs: its kernel "
		    "gives BPF no crypto kfuncs (Linux 6.10+; or ringload "
		    "attached it with RM_QUIC_CRYPT=0). Leave out "
		    "--quic-key-file for plaintext CIDs",
		    lv->st.pin_dir);
	if (fd < 0)
		return ctl_runtime_error("cannot open %s/%s: %s",
					 lv->st.pin_dir, RM_QUIC_KEYS_MAP,
					 strerror(-fd));
	k = calloc(1, sizeof(*k));
	if (!k) {
		close(fd);
		return ctl_runtime_error("out of memory");
	}
	k->fd = fd;
	lv->keys = k;
	return 0;
}

int live_quic_key_write(struct live *lv, __u32 svc, const __u8 *key,
			const char *file)
{
	struct live_keys *k;
	int err = live_quic_keys_open(lv);

	if (err)
		return err;
	k = lv->keys;
	if (!k->written[svc]) {
		err = rm_quic_key_get(k->fd, svc, &k->before[svc]);
		if (err)
			return ctl_runtime_error("cannot read the key of "
						 "service %u: %s", svc,
						 strerror(-err));
		k->written[svc] = true;
	}
	if (rm_quic_key_set(k->fd, svc, key, file))
		return ctl_runtime_error("%s", rm_errmsg());
	return 0;
}

/* The change committed: the keys of encrypted services it removed go.
 * Their records are gone, so nothing reads the keys any more. */
static int keys_drop(struct live *lv)
{
	int err = 0;

	for (__u32 i = 0; i < RM_MAX_SERVICES && !err; i++) {
		if (!svc_encrypted(lv->old, i) || svc_encrypted(lv->new, i))
			continue;
		/* opened once, kept with the change's other key writes */
		if (live_quic_keys_open(lv))
			return ctl_runtime_error("the change is done, but the "
						 "key of deleted service %u "
						 "stays", i);
		if (rm_quic_key_set(lv->keys->fd, i, NULL, NULL))
			err = ctl_runtime_error("the change is done, but the "
						"key of deleted service %u "
						"stays: %s", i, rm_errmsg());
	}
	return err;
}

int live_quic_keys_commit(struct live *lv)
{
	lv->committed = true;
	return keys_drop(lv);
}

void live_quic_keys_close(struct live *lv)
{
	struct live_keys *k = lv->keys;

	if (!k)
		return;
	for (__u32 i = 0; i < RM_MAX_SERVICES && !lv->committed; i++) {
		const struct rm_quic_key *b = &k->before[i];

		if (!k->written[i])
			continue;
		/* best effort: the change's own error is the one reported */
		if (rm_quic_key_set(k->fd, i, b->set ? b->key : NULL, b->file))
			fprintf(stderr, "ringctl: service %u keeps the key this "
					"failed change gave it: %s\n",
				i, rm_errmsg());
	}
	close(k->fd);
	explicit_bzero(k, sizeof(*k));
	free(k);
	lv->keys = NULL;
}
