/* SPDX-License-Identifier: MIT */
/*
 * read_bench: the server's read of one push body, alone: what on_ingest's
 * read_body() does (inflate when gzip, then pprof_read or folded_read with
 * bounded sums), ROUNDS x REPS times in one process; prints the fastest
 * round's time per read, steadier than a server's CPU time on a busy
 * machine for changes to the readers (issue 16).
 *
 *   read_bench FILE [REPS [ROUNDS]]
 *
 * Prints: read: FILE format=pprof|folded us_per_read=U (best of ROUNDS)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "format/format.h"
#include "format/input.h"
#include "format/pprof.h"
#include "profile/profile.h"
#include "util/error.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long reps = argc > 2 ? atol(argv[2]) : 500, rounds = argc > 3 ? atol(argv[3]) : 7;
	struct error err = ERROR_INIT;
	struct read_options o = {.bounded_sum = true};
	enum profile_format fmt = FMT_UNKNOWN;
	double best = 1e30;
	char *buf;
	long len;
	FILE *f;

	if (argc < 2 || !(f = fopen(argv[1], "rb"))) {
		fprintf(stderr, "usage: read_bench FILE [REPS [ROUNDS]]\n");
		return 2;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len)
		return 1;
	fclose(f);
	for (long r = 0; r < rounds; r++) {
		double t = now();

		for (long i = 0; i < reps; i++) {
			struct input in;
			struct profile *p = NULL;
			int rc = input_from_buf(&in, argv[1], buf, (size_t)len, INPUT_MAX_INFLATED,
						&err);

			if (rc == 0) {
				fmt = format_detect(in.data, in.len);
				rc = fmt == FMT_PPROF ? pprof_read(&in, &o, &p, &err)
						      : folded_read(&in, &o, &p, &err);
				input_close(&in);
			}
			if (rc < 0) {
				fprintf(stderr, "read_bench: %s\n", err.msg);
				return 1;
			}
			profile_free(p);
		}
		t = (now() - t) / (double)reps;
		if (t < best)
			best = t;
	}
	printf("read: %s format=%s us_per_read=%.1f\n", argv[1],
	       fmt == FMT_PPROF ? "pprof" : "folded", best * 1e6);
	free(buf);
	return 0;
}
