// SPDX-License-Identifier: GPL-2.0
/*
 * ringbench: benchmarks of the ring, the data plane and the control plane.
 *
 *   ringbench [options] search    userspace search cost, random keys
 *   ringbench [options] quality   ring balance and movement vs Maglev, modulo
 *   ringbench [options] kernel    per-packet cost, bpf_prog_test_run (root)
 *   ringbench [options] encap     per-packet cost of l2, ipip, gue (root)
 *   ringbench [options] control RINGCTL  ringctl commands, memory (root)
 *   ringbench [options] decap     node-side decap, second chance (root)
 *   ringbench [options] live NS   live forwarding in a testbed (root)
 *   ringbench [options] katran OBJ [OBJ]  beside Katran's balancer (root)
 *
 * Options: --json FILE, --targets FILE, --rounds N (>= 5), --quick,
 * --reference OBJ (kernel: the data plane before a change, measured
 * beside the director on new flows; make bench gives the Makefile's
 * ringmaster-noidx.bpf.o). `kernel CANDIDATE.bpf.o` and `encap
 * CANDIDATE.bpf.o...` run changed data planes beside the built one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench.h"
#include "katran.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void bench_stat_of(const double *v, int n, struct bench_stat *s)
{
	double tmp[n > 0 ? n : 1];

	memset(s, 0, sizeof(*s));
	if (n <= 0) {
		s->med = s->min = s->max = NAN;
		return;
	}
	memcpy(tmp, v, n * sizeof(*v));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	s->rounds = n;
	s->min = tmp[0];
	s->max = tmp[n - 1];
	s->med = n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

void bench_json_stat(struct rm_json *j, const char *key,
		     const struct bench_stat *s)
{
	rm_json_obj_open(j, key);
	rm_json_num(j, "median", s->med);
	rm_json_num(j, "min", s->min);
	rm_json_num(j, "max", s->max);
	rm_json_u64(j, "rounds", s->rounds);
	rm_json_obj_close(j);
}

FILE *bench_json_open(const struct bench_opts *o, struct rm_json *j)
{
	FILE *f = fopen(o->json_path ? o->json_path : "/dev/null", "w");

	if (!f) {
		fprintf(stderr, "ringbench: %s: %s\n", o->json_path,
			strerror(errno));
		return NULL;
	}
	rm_json_init(j, f);
	rm_json_obj_open(j, NULL);
	return f;
}

void bench_json_close(FILE *f, struct rm_json *j)
{
	rm_json_obj_close(j);
	rm_json_end(j);
	fclose(f);
}

void bench_target(const struct bench_opts *o, const char *name,
		  const char *target, const char *measured, const char *status,
		  const char *note)
{
	FILE *f;

	if (!o->targets_path) {
		printf("target: %s: %s, %s (target %s)%s%s\n", name, measured,
		       status, target, note && *note ? "; " : "",
		       note ? note : "");
		return;
	}
	f = fopen(o->targets_path, "a");
	if (!f)
		return;
	fprintf(f, "%s\t%s\t%s\t%s\t%s\n", name, target, measured, status,
		note ? note : "");
	fclose(f);
}

void bench_pin_cpu(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	if (ncpu < 1)
		return;
	CPU_ZERO(&set);
	CPU_SET(ncpu - 1, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

const char *bench_size_label(__u32 n, char *buf, size_t len)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(buf, len, "%uM", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, len, "%uk", n >> 10);
	else
		snprintf(buf, len, "%u", n);
	return buf;
}

static void usage(FILE *f)
{
	fputs("usage: ringbench [--json FILE] [--targets FILE] [--rounds N] "
	      "[--quick] [--reference OBJ] "
	      "search|quality|kernel|encap|control|live|keys|decap|katran "
	      "[ARGS]\n"
	      "       ringbench [OPTIONS] kernel [CANDIDATE.bpf.o]   a changed "
	      "data plane against the built one, same rounds\n"
	      "       ringbench [OPTIONS] encap [CANDIDATE.bpf.o]...   changed "
	      "data planes beside the built one on every method's row\n",
	      f);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"json", required_argument, NULL, 'j'},
	    {"targets", required_argument, NULL, 't'},
	    {"rounds", required_argument, NULL, 'r'},
	    {"quick", no_argument, NULL, 'q'},
	    {"reference", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	struct bench_opts o = {.rounds = 7};
	const char *cmd;
	int c;

	while ((c = getopt_long(argc, argv, "+j:t:r:qR:h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'j':
			o.json_path = optarg;
			break;
		case 't':
			o.targets_path = optarg;
			break;
		case 'r':
			o.rounds = atoi(optarg);
			if (o.rounds < 5 || o.rounds > 101) {
				fputs("ringbench: --rounds must be 5..101\n",
				      stderr);
				return 2;
			}
			break;
		case 'q':
			o.quick = true;
			break;
		case 'R':
			o.reference = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	o.argc = argc - optind - 1;
	o.argv = argv + optind + 1;
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(cmd, "search"))
		return cmd_search(&o);
	if (!strcmp(cmd, "quality"))
		return cmd_quality(&o);
	if (!strcmp(cmd, "kernel"))
		return cmd_kernel(&o);
	if (!strcmp(cmd, "encap"))
		return cmd_encap(&o);
	if (!strcmp(cmd, "control"))
		return cmd_control(&o);
	if (!strcmp(cmd, "live"))
		return cmd_live(&o);
	if (!strcmp(cmd, "keys"))
		return cmd_keys(&o);
	if (!strcmp(cmd, "decap"))
		return cmd_decap(&o);
	if (!strcmp(cmd, "katran"))
		return cmd_katran(&o);
	usage(stderr);
	return 2;
}
