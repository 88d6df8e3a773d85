/* SPDX-License-Identifier: MIT */
/*
 * serve_load: the load generator of bench/serve-bench.py.  Pushes N
 * synthetic pprof profiles to plateau serve over C keep-alive connections
 * (one thread each) and prints what it took:
 *
 *   serve_load HOST PORT N CONNS INSTANCES T0_SECONDS [SAMPLES STACKS]
 *
 * Push i is instance i % INSTANCES at time T0 + (i / INSTANCES) * 10 s:
 * 40 instances pushing every 10 s for an hour is N = 14,400.  Each
 * profile has STACKS distinct stacks (default 500, 10-30 frames from a
 * vocabulary of 400 functions) and SAMPLES samples (default 2,000: each
 * stack under several thread labels), values cpu nanoseconds; each
 * instance carries 6 labels.  The bodies are built once per instance
 * (gzip pprof, as agents send them).  Prints one line:
 *
 *   load: pushes=N seconds=S rate=R/s body_bytes=B errors=E
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "format/pprof.h"
#include "profile/profile.h"

#define FUNCS 400

struct body {
	char *buf;
	size_t len;
};

static const char *host;
static int port;
static long total, instances;
static long long t0;
static struct body *bodies;
static atomic_long next_push, errors;

static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005u + 1442695040888963407u;
	return *s >> 33;
}

/* One instance's profile: STACKS stacks, SAMPLES samples over thread labels. */
static struct body make_body(long instance, long samples, long stacks)
{
	struct profile *p = profile_new();
	uint64_t seed = 42; /* the same stacks for every instance: they merge, as a fleet's do */
	uint32_t frames[FUNCS], stack[32];
	long per = samples / stacks > 0 ? samples / stacks : 1;
	struct body b = {0};
	char name[64];
	FILE *mem;

	profile_add_type(p, "samples", "count");
	profile_add_type(p, "cpu", "nanoseconds");
	for (int f = 0; f < FUNCS; f++) {
		snprintf(name, sizeof(name), "pkg%d::Module%d::function_%d", f % 17, f % 41, f);
		frames[f] = profile_frame_named(p, name, strlen(name));
	}
	for (long s = 0; s < stacks; s++) {
		size_t depth = 10 + rnd(&seed) % 21;
		uint32_t node;

		for (size_t d = 0; d < depth; d++)
			stack[d] = frames[d < 3 ? d
						: rnd(&seed) % FUNCS]; /* main, run, serve on top */
		node = profile_stack(p, stack, depth);
		for (long t = 0; t < per; t++) {
			struct label l = {profile_intern_str(p, "thread"), 0, 0, 0};
			int64_t v[2] = {1 + (int64_t)(rnd(&seed) % 5), 0};

			snprintf(name, sizeof(name), "worker-%ld", t + instance % 3);
			l.str = profile_intern_str(p, name);
			v[1] = v[0] * 10000000;
			profile_add_sample(p, node, profile_intern_labels(p, &l, 1), v);
		}
	}
	p->period = 10000000;
	mem = open_memstream(&b.buf, &b.len);
	if (!mem || pprof_write(p, mem, NULL) < 0 || fclose(mem) != 0) {
		fprintf(stderr, "serve_load: cannot build a profile\n");
		exit(1);
	}
	profile_free(p);
	return b;
}

static int dial(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	inet_pton(AF_INET, host, &a.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("serve_load: connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read one reply; returns its status, or -1 when the connection broke. */
static int read_reply(int fd)
{
	char buf[8192];
	size_t have = 0;
	char *end = NULL, *cl;
	long body = 0, status;

	while (!end) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);

		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (!end && have == sizeof(buf) - 1)
			return -1;
	}
	status = strtol(buf + 9, NULL, 10);
	cl = strcasestr(buf, "Content-Length:");
	if (cl)
		body = strtol(cl + 15, NULL, 10);
	body -= (long)(have - (size_t)(end + 4 - buf));
	while (body > 0) {
		ssize_t r = read(fd, buf, sizeof(buf) < (size_t)body ? sizeof(buf) : (size_t)body);

		if (r <= 0)
			return -1;
		body -= r;
	}
	return (int)status;
}

static void *pusher(void *arg)
{
	char head[1024];
	int fd = dial();
	long i;

	(void)arg;
	while ((i = atomic_fetch_add(&next_push, 1)) < total) {
		long inst = i % instances;
		long long from = t0 + (i / instances) * 10;
		const struct body *b = &bodies[inst];
		int n = snprintf(head, sizeof(head),
				 "POST /api/v1/profiles?app=bench&service=checkout&version=v2.4.%ld"
				 "&region=eu-west-%ld&zone=z%ld&env=prod&instance=i%ld&from=%lld"
				 "&until=%lld HTTP/1.1\r\nHost: %s\r\nContent-Type: "
				 "application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
				 inst % 3, inst % 2, inst % 4, inst, from, from + 10, host, b->len);

		if (send_all(fd, head, (size_t)n) < 0 || send_all(fd, b->buf, b->len) < 0 ||
		    read_reply(fd) != 200) {
			atomic_fetch_add(&errors, 1);
			close(fd);
			fd = dial();
		}
	}
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	long conns, samples = 2000, stacks = 500;
	pthread_t th[64];
	struct timespec a, b;
	size_t bytes = 0;
	double sec;

	if (argc < 7) {
		fprintf(stderr,
			"usage: serve_load HOST PORT N CONNS INSTANCES T0 [SAMPLES STACKS]\n");
		return 2;
	}
	host = argv[1];
	port = atoi(argv[2]);
	total = atol(argv[3]);
	conns = atol(argv[4]);
	instances = atol(argv[5]);
	t0 = atoll(argv[6]);
	if (argc > 8) {
		samples = atol(argv[7]);
		stacks = atol(argv[8]);
	}
	if (conns < 1 || conns > 64 || instances < 1 || stacks < 1) {
		fprintf(stderr, "serve_load: 1..64 connections, instances and stacks >= 1\n");
		return 2;
	}
	bodies = calloc((size_t)instances, sizeof(*bodies));
	for (long i = 0; i < instances; i++) {
		bodies[i] = make_body(i, samples, stacks);
		bytes += bodies[i].len;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < conns; i++)
		pthread_create(&th[i], NULL, pusher, NULL);
	for (long i = 0; i < conns; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	sec = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	printf("load: pushes=%ld seconds=%.3f rate=%.1f/s body_bytes=%zu errors=%ld\n", total, sec,
	       (double)total / sec, bytes / (size_t)instances, atomic_load(&errors));
	return 0;
}
