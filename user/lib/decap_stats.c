// SPDX-License-Identifier: GPL-2.0
/* The decapsulator's pinned counters (decap_stats.h). */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "decap_stats.h"
#include "state.h"

int rm_decap_counters_read(const char *dir, __u64 sum[RM_DCNT_MAX])
{
	char path[RM_PATH_MAX + RM_NAME_MAX];
	int ncpus = libbpf_num_possible_cpus(), fd, err = 0;
	__u64 *v;

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	snprintf(path, sizeof(path), "%s/%s", dir, RM_DECAP_MAP_COUNTERS);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	v = calloc(ncpus, sizeof(*v));
	if (!v)
		err = -ENOMEM;
	for (__u32 k = 0; !err && k < RM_DCNT_MAX; k++) {
		sum[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, v))
			err = -errno;
		for (int c = 0; !err && c < ncpus; c++)
			sum[k] += v[c];
	}
	free(v);
	close(fd);
	return err;
}

void rm_metrics_decap_write(FILE *f, const char *dir)
{
	static const char name[] = "ringmaster_decap_packets_total";
	__u64 sum[RM_DCNT_MAX] = {0}; /* the analyzer cannot see a failed read returns early */
	int up = !rm_decap_counters_read(dir, sum);

	fprintf(f,
		"# HELP ringmaster_decap_up 1 when the node-side "
		"decapsulator's counters could be read.\n"
		"# TYPE ringmaster_decap_up gauge\nringmaster_decap_up %d\n",
		up);
	if (!up)
		return;
	fprintf(f,
		"# HELP %s Packets seen by the node-side decapsulator, by "
		"outcome (decap-*, passed-*, dropped-*; sc-*: second chance, "
		"packets with a hop list).\n# TYPE %s counter\n",
		name, name);
	for (__u32 i = 0; i < RM_DCNT_MAX; i++)
		fprintf(f, "%s{outcome=\"%s\"} %llu\n", name,
			rm_decap_counter_name(i), (unsigned long long)sum[i]);
}
