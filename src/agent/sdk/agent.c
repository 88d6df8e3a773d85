/* SPDX-License-Identifier: MIT */
/*
 * libplateau.so's entry points: the constructor reads the configuration
 * and starts sampling, the destructor writes the last profile, and fork
 * gives the child a fresh profile of its own (see doc/agent.md).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plateau.h"

#include "agent/core/agent.h"
#include "agent/hooks/alloc.h"
#include "agent/export/collect.h"
#include "agent/hooks/cpu.h"
#include "agent/sdk/labels.h"
#include "agent/core/live.h"
#include "agent/hooks/lock.h"
#include "agent/core/thread.h"
#include "agent/stack/unwind.h"
#include "agent/hooks/wall.h"
#include "agent/core/spinlock.h"
#include "util/banned.h"

#define EXIT_PUSH_DEADLINE_MS 2000

_Alignas(64) struct agent agent_state;

static struct agent_lock start_mu = AGENT_LOCK_INIT;
static bool configured, initialised;
static bool under_tsan;	  /* TSan can start no thread in a fork child: children stay off */
static bool forked_child; /* this process is a fork of one that profiled */

uint64_t agent_now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t agent_now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void agent_warn(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n = snprintf(line, sizeof(line), "plateau: ");

	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(2, line, (size_t)n);
}

void *agent_dlsym_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static const char *env(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

static const char *progname(void)
{
	extern char *program_invocation_name;

	return program_invocation_name;
}

/*
 * Read the configuration once.  A bad value: one line on stderr, and the
 * agent stays off for the life of the process.
 */
static int configure(void)
{
	char err[AGENT_ERR_MAX];

	if (configured)
		return agent_state.interval_ns ? 0 : -1;
	configured = true;
	if (agent_config_parse(&agent_state.cfg, env, NULL, progname(), err, sizeof(err)) != 0) {
		agent_warn("%s; the agent stays off", err);
		return -1;
	}
	agent_state.interval_ns = 1000000000u / agent_state.cfg.hz;
	/*
	 * ThreadSanitizer interposes the pthread lock calls itself, and its
	 * runtime takes its own locks through them: the agent's lock hooks would
	 * hide locks from it.  Lock mode stays off in such programs.
	 */
	under_tsan = dlsym(RTLD_DEFAULT, "__tsan_init") != NULL;
	if ((agent_state.cfg.modes & AGENT_MODE_LOCK) && under_tsan) {
		agent_state.cfg.modes &= ~(unsigned)AGENT_MODE_LOCK;
		agent_warn("the program is built with ThreadSanitizer: lock mode is off");
	}
	return 0;
}

/*
 * Several processes writing one PLATEAU_OUTPUT (a fork, or a child program
 * that inherits the environment) each get their own file: the first process
 * owns the name as given; any other inserts its pid before the extension.
 */
static void own_output(void)
{
	struct agent_config *cfg = &agent_state.cfg;
	const char *owner = getenv("PLATEAU_OUTPUT_OWNER");
	char pid[24], buf[AGENT_PATH_MAX];
	char *dot;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (!cfg->output[0] || strstr(cfg->output, "%p"))
		return;
	if (!forked_child && !owner) {
		setenv("PLATEAU_OUTPUT_OWNER", pid, 1);
		return;
	}
	if (!forked_child && owner && !strcmp(owner, pid))
		return;
	dot = strstr(cfg->output, ".pb");
	if (!dot)
		dot = cfg->output + strlen(cfg->output);
	if (snprintf(buf, sizeof(buf), "%.*s.%%p%s", (int)(dot - cfg->output), cfg->output, dot) <
	    (int)sizeof(buf))
		memcpy(cfg->output, buf, sizeof(buf));
}

/* Threads that were running before the agent started get slots and timers too. */
static void adopt_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	pid_t me = gettid();

	if (!d)
		return;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);

		if (tid > 0 && tid != me)
			agent_thread_adopt(tid);
	}
	closedir(d);
}

static int start_locked(void)
{
	int rc;

	if (atomic_load(&agent_state.running))
		return 0;
	if (configure() != 0)
		return -1;
	own_output();
	if (!initialised) {
		if (agent_thread_init() != 0 || agent_signal_init() != 0) {
			agent_warn("cannot set up sampling: the agent stays off");
			return -1;
		}
		initialised = true;
	}
	agent_unwind_refresh();
	if ((agent_state.cfg.modes & AGENT_MODE_ALLOC) &&
	    (rc = agent_live_init(AGENT_LIVE_CAPACITY_DEFAULT)) < 0 && rc != -EBUSY)
		agent_warn("cannot map the in-use table: in-use memory is not tracked");
	agent_thread_register();
	adopt_threads();
	agent_state.start_ns = agent_now_real();
	rc = agent_collect_start();
	if (rc != 0) {
		agent_warn("cannot start the collector: %s", strerror(-rc));
		return -1;
	}
	atomic_store(&agent_state.running, true);
	agent_signal_catch_fatal();
	agent_cpu_start_all();
	if (agent_wall_start() != 0)
		agent_warn("cannot start the wall sampler");
	return 0;
}

AGENT_API int plateau_start(void)
{
	int rc;

	agent_lock(&start_mu);
	rc = start_locked();
	agent_unlock(&start_mu);
	return rc;
}

AGENT_API int plateau_stop(void)
{
	int rc = 0;

	agent_lock(&start_mu);
	if (atomic_exchange(&agent_state.running, false)) {
		agent_cpu_stop_all();
		agent_wall_stop();
		rc = agent_collect_stop(EXIT_PUSH_DEADLINE_MS) == 0 ? 0 : -1;
	}
	agent_unlock(&start_mu);
	return rc;
}

/*
 * Every agent lock is held across fork, always taken in this order (the
 * collector refreshes the unwind tables with its own lock held).
 */
static void atfork_prepare(void)
{
	agent_collect_atfork_prepare();
	agent_unwind_atfork_prepare();
	agent_labels_atfork_prepare();
}

static void atfork_parent(void)
{
	agent_labels_atfork_parent();
	agent_unwind_atfork_parent();
	agent_collect_atfork_parent();
}

/*
 * The child forgets the parent's samples, threads and locks, and starts a
 * profile of its own (timers, collector, file name) at its first safe point
 * (agent_restart_check).
 */
static void atfork_child(void)
{
	bool was_running = atomic_exchange(&agent_state.running, false);

	agent_labels_atfork_child();
	agent_unwind_atfork_child();
	agent_collect_atfork_child();
	agent_thread_atfork_child();
	agent_live_fork_child();
	agent_wall_atfork_child();
	agent_lock_reset(&start_mu);
	forked_child = true;
	if (was_running && !under_tsan && !agent_state.cfg.fork_off)
		agent_state.restart_pending = true;
}

void agent_restart_slow(void)
{
	if (__atomic_exchange_n(&agent_state.restart_pending, false, __ATOMIC_SEQ_CST))
		plateau_start();
}

/* Whether the agent starts by itself: preloaded, or asked for by a variable. */
static bool autostart(void)
{
	extern char **environ;
	const char *pre = getenv("LD_PRELOAD");

	if (pre && strstr(pre, "libplateau"))
		return true;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "PLATEAU_", 8) && strncmp(*e, "PLATEAU_OUTPUT_OWNER=", 21))
			return true;
	return false;
}

__attribute__((constructor)) static void agent_load(void)
{
	agent_alloc_init();
	agent_lock_init();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (autostart())
		plateau_start();
}

__attribute__((destructor)) static void agent_unload(void)
{
	agent_restart_check(); /* a fork child that never allocated still writes its profile */
	plateau_stop();
}
