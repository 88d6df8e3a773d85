/* SPDX-License-Identifier: MIT */
/*
 * plateau record: sample a command, a process or the whole system with
 * perf events and write one profile.  See doc/plateau-record.md.
 */
#include "util/common.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/record.h"
#include "cmd/cmd.h"
#include "cmd/record_agent.h"
#include "util/duration.h"

static const char *const record_usage[] = {
	"plateau record [-F HZ] [-e cpu|offcpu|wall|alloc|lock]... [-g auto|fp|dwarf] [-d SECONDS] "
	"[-o FILE] [--agent] [-p PID | -a | [--] CMD ARGS]",
	NULL,
};

/* Kinds only the in-process agent records. */
#define EV_AGENT_ALLOC (1u << 16)
#define EV_AGENT_LOCK  (1u << 17)

static volatile sig_atomic_t stop_flag;
static volatile sig_atomic_t child_done;
static pid_t child_pid;

static void on_stop_signal(int sig UNUSED)
{
	stop_flag = 1;
}

static void on_sigchld(int sig UNUSED)
{
	int saved = errno, status;

	/* Only the command we started ends the recording. */
	if (child_pid > 0 && waitpid(child_pid, &status, WNOHANG) == child_pid) {
		child_done = status + 1;
		stop_flag = 1;
	}
	errno = saved;
}

static void install(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = sig == SIGCHLD ? SA_NOCLDSTOP | SA_RESTART : SA_RESTART;
	sigaction(sig, &sa, NULL);
}

static unsigned parse_events(const char **list)
{
	unsigned ev = 0;

	for (; list && *list; list++) {
		char *copy = xstrdup(*list), *save = NULL;

		for (char *tok = strtok_r(copy, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			if (!strcmp(tok, "cpu") || !strcmp(tok, "cpu-clock"))
				ev |= REC_EV_CPU;
			else if (!strcmp(tok, "offcpu") || !strcmp(tok, "off-cpu"))
				ev |= REC_EV_OFFCPU;
			else if (!strcmp(tok, "wall"))
				ev |= REC_EV_WALL;
			else if (!strcmp(tok, "alloc"))
				ev |= EV_AGENT_ALLOC;
			else if (!strcmp(tok, "lock"))
				ev |= EV_AGENT_LOCK;
			else
				die_usage("-e takes cpu, offcpu, wall, alloc or lock, not '%s'",
					  tok);
		}
		free(copy);
	}
	return ev ? ev : REC_EV_CPU;
}

static enum record_callgraph parse_cg(const char *s)
{
	if (!s || !strcmp(s, "auto"))
		return REC_CG_AUTO;
	if (!strcmp(s, "fp"))
		return REC_CG_FP;
	if (!strcmp(s, "dwarf"))
		return REC_CG_DWARF;
	die_usage("-g takes auto, fp or dwarf, not '%s'", s);
}

/*
 * Fork the command stopped before exec: it waits for a byte on go[0];
 * an exec failure comes back as errno on the close-on-exec pipe err.
 */
static pid_t spawn(const char **argv, int *go_fd, int *err_fd)
{
	int go[2], er[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) || pipe2(er, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(er[0]);
		signal(SIGINT, SIG_DFL);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], (char *const *)argv);
		e = errno;
		if (write(er[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(er[1]);
	*go_fd = go[1];
	*err_fd = er[0];
	return pid;
}

/* The file execvp would run for name, or NULL. */
static const char *find_program(const char *name, char *buf, size_t size)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/'))
		return name;
	while (path && *path) {
		size_t len = strcspn(path, ":");

		if (len && (size_t)snprintf(buf, size, "%.*s/%s", (int)len, path, name) < size &&
		    !access(buf, X_OK))
			return buf;
		path += len + (path[len] == ':');
	}
	return NULL;
}

struct status_ctx {
	bool tty;
	bool shown;
};

static void show_status(const struct record_stats *st, uint64_t elapsed_ns, void *arg)
{
	struct status_ctx *s = arg;

	if (!s->tty)
		return;
	fprintf(stderr, "\rplateau record: %.1fs, %" PRIu64 " samples, %" PRIu64 " lost\033[K",
		(double)elapsed_ns / 1e9, st->samples, st->lost + st->lost_samples);
	s->shown = true;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* " (stripped 3.1%, ...)": the unnamed frames' share of all frames, by reason. */
static void unnamed_reasons(const struct record_stats *st, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = 0;
	for (unsigned i = 1; i < REC_NR_REASONS && len + 64 < size; i++) {
		if (!st->frames_unnamed_by_reason[i])
			continue;
		double share = pct(st->frames_unnamed_by_reason[i], st->frames_total);

		len += (size_t)snprintf(buf + len, size - len, "%s%s %s%.1f%%", len ? ", " : " (",
					record_reason_str(i), share < 0.05 ? "<" : "",
					share < 0.05 ? 0.1 : share);
	}
	if (len)
		snprintf(buf + len, size - len, ")");
}

/* One line per reason frames went unnamed, with what names them. */
static void unnamed_advice(const struct record_stats *st)
{
	for (unsigned i = 1; i < REC_NR_REASONS; i++)
		if (st->frames_unnamed_by_reason[i] && record_reason_fix(i))
			fprintf(stderr, "plateau record: %s (%.1f%% of frames): %s\n",
				record_reason_str(i),
				pct(st->frames_unnamed_by_reason[i], st->frames_total),
				record_reason_fix(i));
}

/*
 * The remedy depends on the ring that overflowed: cpu-clock samples come
 * at -F; context switches come as often as threads block, whatever -F is,
 * and cost an unwind each unless --min-block drops them first.
 */
static void lost_advice(const struct record_stats *st, const struct record_opts *ro)
{
	uint64_t lost = st->lost + st->lost_samples, off = st->lost_offcpu;
	const char *mb = ro->min_block_ns ? "raise --min-block" : "set --min-block (e.g. 1ms)";

	if (!lost)
		return;
	fprintf(stderr, "plateau record: the kernel dropped %" PRIu64 " records (ring full)", lost);
	if (!off)
		fprintf(stderr, ": lower -F or raise --mmap-pages\n");
	else if (off == lost)
		fprintf(stderr,
			", all context switches (off-CPU): raise --mmap-pages, or %s so that "
			"shorter blocks are not unwound and the rings drain faster (-F does not "
			"change how often threads switch)\n",
			mb);
	else
		fprintf(stderr,
			", %" PRIu64 " of them context switches (off-CPU): raise --mmap-pages; "
			"lower -F for the cpu samples and %s for the switches\n",
			off, mb);
}

static void print_summary(const struct record_stats *st, const struct record_opts *ro,
			  const char *out, const char *fmt)
{
	uint64_t n = st->stacks_total;
	char reasons[512];

	unnamed_reasons(st, reasons, sizeof(reasons));
	fprintf(stderr,
		"plateau record: wrote %s (%s): %" PRIu64 " samples in %.2fs, %" PRIu64
		" lost, unnamed frames: %.1f%% of frames%s, in %.1f%% of samples, %.1f%% of user "
		"stacks truncated\n",
		out, fmt, n, (double)st->duration_ns / 1e9, st->lost + st->lost_samples,
		pct(st->frames_unnamed, st->frames_total), reasons, pct(st->unnamed_samples, n),
		pct(st->truncated_samples, n));
	unnamed_advice(st);
	lost_advice(st, ro);
	if (n && st->truncated_samples * 20 > n)
		fprintf(stderr,
			"plateau record: %.1f%% of user stacks do not reach a thread's entry point "
			"(truncated: deeper than --stack-size or no unwind information)\n",
			pct(st->truncated_samples, n));
	if (st->offcpu_source)
		fprintf(stderr, "plateau record: off-CPU time from %s\n", st->offcpu_source);
}

/* PLATEAU_MODES for the agent from the -e kinds; dies on a kind it lacks. */
static const char *agent_modes(unsigned ev, char *buf, size_t size)
{
	static const struct {
		unsigned bit;
		const char *name;
	} kinds[] = {{REC_EV_CPU, "cpu"},
		     {REC_EV_WALL, "wall"},
		     {EV_AGENT_ALLOC, "alloc"},
		     {EV_AGENT_LOCK, "lock"}};
	size_t len = 0;

	if (ev & REC_EV_OFFCPU)
		die_usage("-e offcpu needs perf events; the agent records wall time (-e wall)");
	buf[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (ev & kinds[i].bit)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "",
						kinds[i].name);
	return buf;
}

/* The perf-event options given, to tell the user the agent ignores them. */
struct perf_only {
	const char *cg, *min_block;
	bool stack_size, user_only, mmap_pages;
};

/* One warning per perf-event option given that the agent, used because of VIA, ignores. */
static void warn_perf_only(const struct perf_only *po, const char *via)
{
	static const char fmt[] = "%s has no effect with %s (the in-process agent %s)";

	if (po->cg)
		warning(fmt, "-g", via, "unwinds each stack where it is sampled, from .eh_frame");
	if (po->stack_size)
		warning(fmt, "--stack-size", via, "walks the live stack: nothing is copied");
	if (po->user_only)
		warning(fmt, "--user-only", via, "sees user stacks only");
	if (po->mmap_pages)
		warning(fmt, "--mmap-pages", via, "reads no perf ring buffers");
	if (po->min_block)
		warning(fmt, "--min-block", via,
			"samples blocked threads at -F: there are no context switches to filter");
}

/* OUT is the output already opened, or NULL to open OUT_PATH once the options are known good. */
static int record_by_agent(unsigned ev, int freq, double duration, enum profile_format fmt,
			   FILE *out, const char *out_path, bool quiet, const char **argv)
{
	char modes[64];
	struct record_agent_opts ao = {
		.modes = agent_modes(ev, modes, sizeof(modes)),
		.freq = (unsigned)freq,
		.duration = duration,
		.fmt = fmt,
		.out_path = out_path,
		.quiet = quiet,
	};

	if (freq > 1000)
		die_usage("-F must be 1..1000 Hz with the agent, not %d", freq);
	ao.out = out ? out : cmd_output_open(out_path);
	return record_agent(&ao, argv);
}

int cmd_record(int argc, const char **argv)
{
	int freq = 99, pid = 0, stack_size = INT_MIN, pages = 0;
	double duration = 0;
	bool all = false, quiet = false, user_only = false, use_agent = false;
	const char **events = NULL, *cg = NULL, *out_path = "plateau.pb.gz", *format = NULL;
	const char *min_block = NULL;
	const struct option opts[] = {
		OPT_INT('F', "freq", &freq, "HZ", "cpu-clock samples per second (default 99)"),
		OPT_LIST('e', "event", &events, "EV",
			 "cpu (default), offcpu, wall, alloc or lock (alloc, lock: the agent); "
			 "repeat or comma-separate for several"),
		OPT_STRING(
			'g', "call-graph", &cg, "MODE",
			"auto (default: DWARF unwinding, frame pointers as fallback), fp or dwarf"),
		OPT_INT(0, "stack-size", &stack_size, "BYTES",
			"user stack bytes copied per sample for DWARF unwinding (default 16384)"),
		OPT_INT('p', "pid", &pid, "PID", "record a running process and all its threads"),
		OPT_BOOL('a', "all-cpus", &all, "record every process on every online CPU"),
		OPT_DOUBLE('d', "duration", &duration, "SECONDS", "stop after SECONDS"),
		OPT_STRING(0, "min-block", &min_block, "DURATION",
			   "off-CPU: ignore blocks shorter than DURATION (e.g. 100us)"),
		OPT_STRING('o', "output", &out_path, "FILE",
			   "write to FILE (default plateau.pb.gz; format from the extension)"),
		OPT_STRING(0, "format", &format, "FORMAT",
			   "pprof, folded, speedscope, svg or html"),
		OPT_BOOL(0, "user-only", &user_only, "do not record kernel stacks"),
		OPT_INT(0, "mmap-pages", &pages, "N",
			"ring buffer pages per CPU, a power of two (default 64, 128 or 256): raise "
			"it when records are lost"),
		OPT_BOOL('q', "quiet", &quiet, "no status line, summary or table"),
		OPT_BOOL(0, "agent", &use_agent,
			 "sample with the in-process agent (libplateau.so) instead of perf events"),
		OPT_END(),
	};
	struct record_opts ro = {0};
	struct perf_only po;
	const char *via = "--agent";
	struct status_ctx sc = {0};
	struct error err = ERROR_INIT;
	struct recorder *r;
	struct profile *p;
	enum profile_format fmt;
	int64_t mb = 0;
	int go_fd = -1, err_fd = -1, exec_errno = 0, ret;
	FILE *out;

	argc = parse_options_posix(argc, argv, opts, record_usage);
	po = (struct perf_only){.cg = cg,
				.min_block = min_block,
				.stack_size = stack_size != INT_MIN,
				.user_only = user_only,
				.mmap_pages = pages != 0};
	if (stack_size == INT_MIN) /* not given */
		stack_size = 16384;
	if ((pid != 0) + all + (argc > 0) != 1)
		die_usage("record needs exactly one target: -p PID, -a, or a command after --");
	if (freq < 1 || freq > 100000)
		die_usage("-F must be 1..100000 Hz, not %d", freq);
	if (pid < 0)
		die_usage("-p takes a process id, not %d", pid);
	if (stack_size < 8 || stack_size > 65528 || stack_size % 8)
		die_usage("--stack-size must be a multiple of 8 from 8 to 65528, not %d",
			  stack_size);
	if (duration < 0 || !isfinite(duration) || duration > 1e7)
		die_usage("-d must be a number of seconds, not %g", duration);
	if (pages < 0 || (pages & (pages - 1)))
		die_usage("--mmap-pages must be a power of two, not %d", pages);
	if (min_block && duration_scan(min_block, &mb, NULL) < 0)
		die_usage("--min-block takes a duration such as 100us or 2ms, not '%s'", min_block);
	fmt = format ? format_from_name(format) : format_from_filename(out_path);
	if (fmt == FMT_UNKNOWN || fmt == FMT_PERF_SCRIPT) {
		if (format)
			die_usage(
				"unknown output format '%s' (pprof, folded, speedscope, svg, html)",
				format);
		fmt = FMT_PPROF; /* an unknown extension gets the default format */
	}
	if (pid > 0 && kill(pid, 0) && errno == ESRCH)
		die("-p %d: no such process", pid);
	ro.events = parse_events(events);
	free(events);
	if (!use_agent && (ro.events & (EV_AGENT_ALLOC | EV_AGENT_LOCK))) {
		use_agent = true;
		via = ro.events & EV_AGENT_ALLOC ? "-e alloc" : "-e lock";
	}
	if (use_agent && argc == 0)
		die_usage("the agent records a command it starts (-- CMD), not -p or -a");
	if (use_agent) {
		warn_perf_only(&po, via);
		return record_by_agent(ro.events, freq, duration, fmt, NULL, out_path, quiet, argv);
	}
	if (pages && !(cg && !strcmp(cg, "fp")) &&
	    (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE) < 4 * ((uint64_t)stack_size + 1024))
		die_usage(
			"--mmap-pages %d is too small for samples of %d stack bytes: give at least "
			"%d bytes (4 samples), or lower --stack-size",
			pages, stack_size, 4 * (stack_size + 1024));
	ro.freq = (unsigned)freq;
	ro.cg = parse_cg(cg);
	ro.stack_size = (uint32_t)stack_size;
	ro.min_block_ns = (uint64_t)mb;
	ro.user_only = user_only;
	ro.ring_pages = (unsigned)pages;

	/* Fail before recording, not after, when the output cannot be written. */
	out = cmd_output_open(out_path);
	install(SIGINT, on_stop_signal);
	install(SIGTERM, on_stop_signal);
	install(SIGHUP, on_stop_signal);
	r = recorder_new(&ro);
	if (argc > 0) {
		install(SIGCHLD, on_sigchld);
		child_pid = spawn(argv, &go_fd, &err_fd);
		pid = child_pid;
	}
	ret = recorder_open(r, all ? -1 : pid, argc > 0, &err);
	if (ret) {
		if (child_pid > 0) {
			signal(SIGCHLD, SIG_DFL);
			kill(child_pid, SIGKILL);
			waitpid(child_pid, NULL, 0);
		}
		if (child_pid > 0 && !(ro.events & REC_EV_OFFCPU)) {
			/* perf events refused (seccomp, paranoid): the agent needs none. */
			warning("%s: recording with the in-process agent instead", err.msg);
			warn_perf_only(&po, "the agent fallback");
			recorder_free(r);
			return record_by_agent(ro.events, freq, duration, fmt, out, out_path, quiet,
					       argv);
		}
		die("%s", err.msg);
	}
	if (recorder_stats(r)->note[0])
		warning("%s", recorder_stats(r)->note);
	if (argc > 0) {
		char exe[PATH_MAX];

		/* Symbols of what will run are loaded now, not after it exits. */
		recorder_preload(r, find_program(argv[0], exe, sizeof(exe)));
		/* Let the command exec: counting starts there. */
		if (write(go_fd, "x", 1) != 1)
			die("cannot start %s: %s", argv[0], strerror(errno));
		close(go_fd);
		if (read(err_fd, &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno)) {
			waitpid(child_pid, NULL, 0);
			die("cannot run %s: %s", argv[0], strerror(exec_errno));
		}
		close(err_fd);
	}
	sc.tty = !quiet && isatty(STDERR_FILENO);
	ret = recorder_run(r, &stop_flag, (uint64_t)(duration * 1000), show_status, &sc, &err);
	if (sc.shown)
		fprintf(stderr, "\r\033[K");
	if (child_pid > 0 && !child_done) {
		/* Stopped by a signal or -d: end the command as perf does. */
		kill(child_pid, SIGTERM);
	}
	if (child_pid > 0) {
		int status;

		signal(SIGCHLD, SIG_DFL);
		if (!child_done && waitpid(child_pid, &status, 0) == child_pid)
			child_done = status + 1;
	}
	if (ret)
		die("%s", err.msg);
	p = recorder_profile(r, &err);
	if (!p)
		die("%s", err.msg);
	cmd_write_profile(p, fmt, p->default_type, out, out_path);
	cmd_output_close(out, out_path);
	if (!quiet) {
		const struct record_stats *st = recorder_stats(r);

		print_summary(st, &ro, out_path, format_name(fmt));
		if (child_done && WIFEXITED(child_done - 1) && WEXITSTATUS(child_done - 1))
			fprintf(stderr, "plateau record: %s exited with status %d\n", argv[0],
				WEXITSTATUS(child_done - 1));
		else if (child_done && WIFSIGNALED(child_done - 1))
			fprintf(stderr, "plateau record: %s was killed by signal %d\n", argv[0],
				WTERMSIG(child_done - 1));
		/* One table per recorded kind (the sample count goes with cpu). */
		for (uint32_t t = 0; t < p->nr_types; t++)
			if (strcmp(profile_str(p, p->types[t].type), "samples") &&
			    profile_total(p, t) > 0)
				cmd_top_print(stderr, p, t, 10, false, FUNC_BY_FUNCTION);
	}
	profile_free(p);
	recorder_free(r);
	return 0;
}
