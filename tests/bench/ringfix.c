// SPDX-License-Identifier: GPL-2.0
/* Ring fixtures shared by the subcommands: named nodes, built and encoded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"
#include "ringfix.h"

void bench_seed(struct rm_seed *seed)
{
	seed->k0 = BENCH_SEED_K0;
	seed->k1 = BENCH_SEED_K1;
}

void bench_node_name(char *buf, size_t len, __u32 i)
{
	snprintf(buf, len, "node-%04u", i);
}

struct rm_node_spec *bench_specs(__u32 first, __u32 count)
{
	struct rm_node_spec *s = calloc(count ? count : 1, sizeof(*s));

	if (!s)
		return NULL;
	for (__u32 i = 0; i < count; i++) {
		bench_node_name(s[i].name, sizeof(s[i].name), first + i);
		s[i].weight = 1;
		s[i].id = first + i;
	}
	return s;
}

int bench_ring(__u32 nodes, __u32 vnodes, struct bench_ring *out)
{
	struct rm_node_spec *specs;
	struct rm_seed seed;
	int err;

	memset(out, 0, sizeof(*out));
	bench_seed(&seed);
	specs = bench_specs(0, nodes);
	if (!specs)
		return -ENOMEM;
	err = rm_ring_build(&seed, specs, nodes, vnodes, &out->ring);
	free(specs);
	if (err)
		return err;
	out->nslots = rm_ring_nslots(&out->ring);
	out->slots = calloc(out->nslots, sizeof(*out->slots));
	if (!out->slots) {
		rm_ring_free(&out->ring);
		return -ENOMEM;
	}
	err = rm_ring_encode(&out->ring, out->slots, out->nslots);
	if (err) {
		bench_ring_free(out);
		return err;
	}
	return 0;
}

void bench_ring_free(struct bench_ring *r)
{
	rm_ring_free(&r->ring);
	free(r->slots);
	memset(r, 0, sizeof(*r));
}
