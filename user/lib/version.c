// SPDX-License-Identifier: GPL-2.0
/* The version every program prints and the metrics report: the Makefile
 * reads it from debian/changelog, the package's own version, so a binary
 * and the package it came in cannot disagree. */
#include "util.h"

#ifndef RM_VERSION
#define RM_VERSION "unknown"
#endif

const char *rm_version(void)
{
	return RM_VERSION;
}
