/* SPDX-License-Identifier: GPL-2.0 */
/* Ring reports shared by the offline and the live commands. */
#ifndef RINGCTL_PLAN_H
#define RINGCTL_PLAN_H

#include <stdbool.h>
#include "ring.h"

const char *rm_ring_strerror(int err);
/* Table of nodes with weight, vnodes, exact share and a bar. */
void plan_print_ring(const struct rm_ring *r, const char *indent);
/* Largest share / fair share (weight-adjusted), exact. */
double plan_peak_to_mean(const struct rm_ring *r);
/* Share a perfect scheme must move between a and b. */
double plan_ideal_share(const struct rm_ring *a, const struct rm_ring *b);
/* Moved share and moves by (from, to), text or JSON on stdout. */
int plan_print_diff(const struct rm_ring *a, const struct rm_ring *b,
		    bool json);

#endif
