// SPDX-License-Identifier: GPL-2.0
/* The checker's counters: one pinned array element (health.h). */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "health.h"
#include "state.h"

#define RM_HC_COUNTER_NAME(id, name) [id] = name,
const char *const rm_hc_counter_names[RM_HC_CNT_MAX] = {
	RM_HC_COUNTERS(RM_HC_COUNTER_NAME)};
#undef RM_HC_COUNTER_NAME

int rm_hc_counters_open(const char *pin_dir, bool create)
{
	char path[RM_PATH_MAX + 32];
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd;

	fd = rm_pinned_array_open(pin_dir, RM_MAP_HC_COUNTERS,
				  sizeof(__u64) * RM_HC_CNT_MAX, 1, false);
	if (fd < 0)
		return create && fd == -ENOENT
			   ? rm_pinned_array_open(pin_dir, RM_MAP_HC_COUNTERS,
						  sizeof(__u64) * RM_HC_CNT_MAX,
						  1, true)
			   : fd;
	/* from a build with other counters: start over */
	if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
	    info.value_size == sizeof(__u64) * RM_HC_CNT_MAX)
		return fd;
	close(fd);
	if (!create)
		return -EPROTO;
	snprintf(path, sizeof(path), "%s/%s", pin_dir, RM_MAP_HC_COUNTERS);
	unlink(path);
	return rm_pinned_array_open(pin_dir, RM_MAP_HC_COUNTERS,
				    sizeof(__u64) * RM_HC_CNT_MAX, 1, true);
}

int rm_hc_counters_read(int fd, __u64 out[RM_HC_CNT_MAX])
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(fd, &zero, out) ? -errno : 0;
}

int rm_hc_counters_write(int fd, const __u64 in[RM_HC_CNT_MAX])
{
	__u32 zero = 0;

	return bpf_map_update_elem(fd, &zero, in, BPF_ANY) ? -errno : 0;
}
