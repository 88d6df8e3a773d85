/* SPDX-License-Identifier: MIT */
/*
 * plateau record --agent: profile a command with the in-process agent
 * (libplateau.so preloaded) instead of perf events.  Used when asked, for
 * the kinds perf events cannot give (alloc, lock), and by itself when perf
 * events are refused (a container's seccomp profile, paranoid settings).
 * The agent writes one pprof file per process into a private directory;
 * they are merged into the requested output.  See doc/plateau-record.md.
 */
#include "util/common.h"

#include <dirent.h>
#include <stdarg.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/record_agent.h"

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

/* libplateau.so: $PLATEAU_AGENT_LIB, or beside the plateau binary, or in ../lib. */
static int find_agent(char *buf, size_t size)
{
	static const char *const rel[] = {"libplateau.so", "../lib/libplateau.so",
					  "../lib/plateau/libplateau.so"};
	const char *env = getenv("PLATEAU_AGENT_LIB");
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		if ((size_t)snprintf(buf, size, "%s", env) >= size || access(buf, R_OK))
			return -1;
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = 0;
	for (size_t i = 0; i < ARRAY_SIZE(rel); i++)
		if ((size_t)snprintf(buf, size, "%s/%s", exe, rel[i]) < size && !access(buf, R_OK))
			return 0;
	return -1;
}

static void set_env(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_env(const char *name, const char *fmt, ...)
{
	char value[PATH_MAX * 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	if (setenv(name, value, 1))
		die("setenv %s: %s", name, strerror(errno));
}

static void agent_env(const struct record_agent_opts *o, const char *lib, const char *dir)
{
	const char *pre = getenv("LD_PRELOAD");

	if (pre && *pre)
		set_env("LD_PRELOAD", "%s:%s", lib, pre);
	else
		set_env("LD_PRELOAD", "%s", lib);
	set_env("PLATEAU_MODES", "%s", o->modes);
	set_env("PLATEAU_HZ", "%u", o->freq);
	set_env("PLATEAU_OUTPUT", "%s/agent-%%p.pb.gz", dir);
	/* The file is rewritten every second: a command killed hard loses little. */
	set_env("PLATEAU_UPLOAD_INTERVAL", "1s");
	unsetenv("PLATEAU_SERVER");
	unsetenv("PLATEAU_OUTPUT_OWNER");
}

/* Run argv until it exits, -d passes or we are told to stop; returns its wait status. */
static int run_command(const char **argv, double duration)
{
	struct timespec start, now;
	pid_t pid;
	int status = 0;
	bool termed = false;
	void (*old_int)(int), (*old_term)(int);

	/* Restored after: what removes an unfinished output on a signal (cmd_output_open). */
	old_int = signal(SIGINT, on_signal);
	old_term = signal(SIGTERM, on_signal);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "plateau: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		double elapsed;

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			die("waitpid: %s", strerror(errno));
		clock_gettime(CLOCK_MONOTONIC, &now);
		elapsed = (double)(now.tv_sec - start.tv_sec) +
			  (double)(now.tv_nsec - start.tv_nsec) / 1e9;
		if (!termed && (got_signal || (duration > 0 && elapsed >= duration))) {
			/* The agent catches SIGTERM, writes its profile and dies of it. */
			kill(pid, SIGTERM);
			termed = true;
		}
		usleep(10000);
	}
	signal(SIGINT, old_int);
	signal(SIGTERM, old_term);
	return status;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The agent's files in DIR (sorted), or none; *N gets the count. */
static char **agent_files(const char *dir, int *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **files = NULL;
	size_t nr = 0, alloc = 0;

	if (!d)
		die("%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (strncmp(de->d_name, "agent-", 6) || len < 6 ||
		    strcmp(de->d_name + len - 6, ".pb.gz"))
			continue;
		ALLOC_GROW(files, nr + 1, alloc);
		files[nr] = xmalloc(strlen(dir) + len + 2);
		snprintf(files[nr++], strlen(dir) + len + 2, "%s/%s", dir, de->d_name);
	}
	closedir(d);
	if (nr)
		qsort(files, nr, sizeof(*files), cmp_str);
	*n = (int)nr;
	return files;
}

static void remove_dir(const char *dir, char **files, int n)
{
	for (int i = 0; i < n; i++) {
		unlink(files[i]);
		free(files[i]);
	}
	free(files);
	rmdir(dir);
}

int record_agent(const struct record_agent_opts *o, const char **argv)
{
	char lib[PATH_MAX], dir[] = "/tmp/plateau-agent.XXXXXX";
	struct error err = ERROR_INIT;
	struct read_options ro = {0};
	struct profile *p = NULL;
	char **files;
	int n, status;

	if (find_agent(lib, sizeof(lib))) {
		if (getenv("PLATEAU_AGENT_LIB") && *getenv("PLATEAU_AGENT_LIB"))
			die("cannot find libplateau.so: PLATEAU_AGENT_LIB=%s is not readable",
			    getenv("PLATEAU_AGENT_LIB"));
		die("cannot find libplateau.so beside plateau (set PLATEAU_AGENT_LIB to its path)");
	}
	if (!mkdtemp(dir))
		die("mkdtemp: %s", strerror(errno));
	agent_env(o, lib, dir);
	status = run_command(argv, o->duration);
	files = agent_files(dir, &n);
	if (n == 0) {
		remove_dir(dir, files, n);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
			die("cannot run %s", argv[0]);
		die("the agent wrote no profile: %s ended before it started, or by SIGKILL",
		    argv[0]);
	}
	if (profile_read_files((const char **)files, n, &ro, &p, &err))
		die("%s", err.msg);
	cmd_write_profile(p, o->fmt, p->default_type, o->out, o->out_path);
	cmd_output_close(o->out, o->out_path);
	if (!o->quiet) {
		fprintf(stderr, "plateau record: wrote %s (%s) from %d process%s with the agent\n",
			o->out_path, format_name(o->fmt), n, n == 1 ? "" : "es");
		if (WIFEXITED(status) && WEXITSTATUS(status))
			fprintf(stderr, "plateau record: %s exited with status %d\n", argv[0],
				WEXITSTATUS(status));
		else if (WIFSIGNALED(status))
			fprintf(stderr, "plateau record: %s was killed by signal %d\n", argv[0],
				WTERMSIG(status));
		for (uint32_t t = 0; t < p->nr_types; t++)
			if (strcmp(profile_str(p, p->types[t].type), "samples") &&
			    profile_total(p, t) > 0)
				cmd_top_print(stderr, p, t, 10, false, FUNC_BY_FUNCTION);
	}
	profile_free(p);
	remove_dir(dir, files, n);
	return 0;
}
