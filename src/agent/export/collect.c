/* SPDX-License-Identifier: MIT */
/*
 * The collector thread (see collect.h).  It is the only consumer of the
 * rings and the only writer of the aggregates, so nothing here locks except
 * `mu`, which serialises the thread against the final flush at exit and
 * against fork.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/agent.h"
#include "agent/hooks/alloc.h"
#include "agent/export/aggregate.h"
#include "agent/export/collect.h"
#include "agent/export/export.h"
#include "agent/hooks/cpu.h"
#include "agent/sdk/labels.h"
#include "agent/core/live.h"
#include "agent/export/pprof.h"
#include "agent/export/push_module.h"
#include "agent/sdk/region.h"
#include "agent/core/ring.h"
#include "agent/stack/symtab.h"
#include "agent/core/thread.h"
#include "agent/stack/unwind.h"
#include "agent/core/spinlock.h"
#include "util/banned.h"

#define DRAIN_NS (50 * 1000000ull)    /* rings are drained this often */
#define HELD_MAX 4096		      /* samples held per thread for a request */
#define NAME_NS	 (10 * 1000000000ull) /* thread names are re-read this often */

/* What the collector knows about one thread slot. */
struct slot_state {
	uint32_t gen;
	uint32_t name_label;
	uint64_t name_read;
	int64_t last_wall[2]; /* entry index + 1 in cum / delta, 0 = none */
	struct agent_sample **held;
	size_t nheld;
	uint32_t held_request;
};

static struct {
	struct agent_lock mu;
	pthread_t thread;
	atomic_bool on;
	bool want_file, want_push;
	struct agent_agg cum, delta;
	struct slot_state *slots; /* AGENT_MAX_THREADS */
	struct agent_symtab *symtab;
	struct agent_push *push;
	struct agent_push_api push_api;
	uint64_t delta_start_ns; /* CLOCK_REALTIME */
	char output[AGENT_PATH_MAX];
	uint32_t state_label[2], slow_label;
} co = {.mu = AGENT_LOCK_INIT};

/* ---- turning ring records into keys ---- */
/* The sample's labels with inner ones hiding outer ones of the same key, sorted. */
static unsigned key_labels(const struct agent_sample *s, uint32_t *out)
{
	int keys[AGENT_MAX_LABELS];
	unsigned n = 0;

	for (int i = (int)s->nlabels - 1; i >= 0; i--) {
		int k = agent_label_key(s->labels[i]);
		bool hidden = false;

		for (unsigned j = 0; j < n; j++)
			hidden |= keys[j] == k;
		if (k < 0 || hidden)
			continue;
		keys[n] = k;
		out[n++] = s->labels[i];
	}
	return n;
}

static void thread_name(struct slot_state *ss, const struct agent_thread *t)
{
	char path[64], name[32] = "";
	uint64_t now = agent_now_mono();
	ssize_t n;
	int fd;

	if (ss->name_label && now - ss->name_read < NAME_NS)
		return;
	ss->name_read = now;
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)t->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, name, sizeof(name) - 1);
		close(fd);
		name[n > 0 ? n : 0] = 0;
		name[strcspn(name, "\n")] = 0;
	}
	if (!*name)
		memcpy(name, t->name, sizeof(t->name));
	name[sizeof(name) - 1] = 0;
	if (*name)
		ss->name_label = agent_label_intern("thread", name);
}

static void add_entry(struct slot_state *ss, struct agent_entry *k, bool is_wall)
{
	struct agent_agg *aggs[2] = {co.want_file ? &co.cum : NULL,
				     co.want_push ? &co.delta : NULL};

	qsort(k->labels, k->nlabels, sizeof(k->labels[0]), agent_cmp_u32);
	k->hash = agent_entry_hash(k);
	for (int i = 0; i < 2; i++) {
		ssize_t at;

		if (!aggs[i])
			continue;
		at = agent_agg_add(aggs[i], k);
		if (is_wall && ss)
			ss->last_wall[i] = at + 1;
	}
}

/* The agent's own code: frames there (the thread trampoline) are not the program's. */
static uintptr_t self_lo, self_hi;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	const Dl_info *me = arg;

	(void)size;
	if ((void *)info->dlpi_addr != me->dli_fbase && info->dlpi_addr)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if ((uintptr_t)find_self >= lo && (uintptr_t)find_self < lo + ph->p_memsz) {
			self_lo = lo;
			self_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

static void find_self_text(void)
{
	Dl_info me;

	if (!self_hi && dladdr((void *)find_self, &me))
		dl_iterate_phdr(find_self, &me);
}

/*
 * S's frames without the agent's below the program's: the thread trampoline
 * between start_thread and the start routine.  Agent frames at the leaf end
 * (a sample that landed in a hook) stay: they are the agent's cost.
 */
static uint16_t own_frames_dropped(const struct agent_sample *s, uintptr_t *out)
{
	uint16_t n = 0;
	bool program = false;

	for (uint16_t i = 0; i < s->nframes; i++) {
		bool own = s->pcs[i] >= self_lo && s->pcs[i] < self_hi;

		program |= !own;
		if (!own || !program)
			out[n++] = s->pcs[i];
	}
	return n;
}

static void add_sample(struct slot_state *ss, const struct agent_sample *s, bool slow)
{
	uintptr_t pcs[AGENT_MAX_DEPTH];
	struct agent_entry k;

	memset(&k, 0, sizeof(k));
	k.kind = s->kind;
	k.nframes = own_frames_dropped(s, pcs);
	k.pcs = pcs;
	k.v0 = s->v[0];
	k.v1 = s->v[1];
	k.n = 1;
	k.nlabels = (uint8_t)key_labels(s, k.labels);
	if (ss && ss->name_label)
		k.labels[k.nlabels++] = ss->name_label;
	if (s->kind == AGENT_KIND_WALL && co.state_label[s->state & 1])
		k.labels[k.nlabels++] = co.state_label[s->state & 1];
	if (slow && co.slow_label)
		k.labels[k.nlabels++] = co.slow_label;
	add_entry(ss, &k, s->kind == AGENT_KIND_WALL);
}

/* Whether E's labels say blocked already: a repeat adds to it as it is. */
static bool entry_blocked(const struct agent_entry *e)
{
	bool blocked = false;

	for (unsigned j = 0; j < e->nlabels; j++) {
		if (e->labels[j] == co.state_label[AGENT_STATE_RUNNING])
			return false;
		blocked |= e->labels[j] == co.state_label[AGENT_STATE_BLOCKED];
	}
	return blocked;
}

/* The samples a repeat of NS stands for: one per sampler visit. */
static int64_t repeat_count(uint64_t ns)
{
	int64_t n = (int64_t)((ns + agent_state.interval_ns / 2) / agent_state.interval_ns);

	return n < 1 ? 1 : n;
}

/* Charge an idle thread's wall time to its last wall stack. */
static void add_wall_repeat(struct slot_state *ss, uint64_t ns)
{
	struct agent_agg *aggs[2] = {&co.cum, &co.delta};

	for (int i = 0; i < 2; i++) {
		struct agent_entry *e;

		if (!ss->last_wall[i] || (size_t)ss->last_wall[i] > aggs[i]->n)
			continue;
		e = &aggs[i]->e[ss->last_wall[i] - 1];
		if (e->kind != AGENT_KIND_WALL)
			continue;
		if (co.state_label[AGENT_STATE_BLOCKED] && entry_blocked(e)) {
			/* The usual case: the thread's previous repeat's entry. */
			e->v0 += (int64_t)ns;
			e->n += repeat_count(ns);
		} else if (co.state_label[AGENT_STATE_BLOCKED]) {
			/* The repeat is blocked time: its own entry, same stack. */
			struct agent_entry k = *e;
			bool has = false;

			for (unsigned j = 0; j < k.nlabels; j++) {
				if (k.labels[j] == co.state_label[AGENT_STATE_RUNNING])
					k.labels[j] = co.state_label[AGENT_STATE_BLOCKED];
				has |= k.labels[j] == co.state_label[AGENT_STATE_BLOCKED];
			}
			if (!has && k.nlabels < AGENT_KEY_LABELS)
				k.labels[k.nlabels++] = co.state_label[AGENT_STATE_BLOCKED];
			qsort(k.labels, k.nlabels, sizeof(k.labels[0]), agent_cmp_u32);
			k.hash = agent_entry_hash(&k);
			k.v0 = (int64_t)ns;
			k.v1 = 0;
			k.n = repeat_count(ns);
			{
				ssize_t at = agent_agg_add(aggs[i], &k);

				ss->last_wall[i] = at + 1;
			}
		} else {
			e->v0 += (int64_t)ns;
			e->n++;
		}
	}
}

static void held_flush(struct slot_state *ss, bool slow)
{
	for (size_t i = 0; i < ss->nheld; i++) {
		add_sample(ss, ss->held[i], slow);
		free(ss->held[i]);
	}
	ss->nheld = 0;
	ss->held_request = 0;
}

static void hold(struct slot_state *ss, const struct agent_sample *s)
{
	size_t bytes = agent_sample_size(s->nframes);
	struct agent_sample *copy;

	if (ss->held_request != s->request)
		held_flush(ss, false);
	if (!ss->held) {
		ss->held = malloc(HELD_MAX * sizeof(*ss->held));
		if (!ss->held) {
			add_sample(ss, s, false);
			return;
		}
	}
	if (ss->nheld == HELD_MAX)
		held_flush(ss, false);
	copy = malloc(bytes);
	if (!copy) {
		add_sample(ss, s, false);
		return;
	}
	memcpy(copy, s, bytes);
	ss->held[ss->nheld++] = copy;
	ss->held_request = s->request;
}

static void on_record(const struct agent_sample *s, void *arg)
{
	struct slot_state *ss = arg;

	if (s->kind == AGENT_KIND_REQUEST_END) {
		if (ss->held_request == (uint32_t)s->v[0])
			held_flush(ss, s->v[1] != 0);
		return;
	}
	/* Time the thread spent blocked in its previous wall stack, ahead of its new one. */
	if (s->kind == AGENT_KIND_WALL_REPEAT) {
		add_wall_repeat(ss, (uint64_t)s->v[0]);
		return;
	}
	if (s->kind >= AGENT_KIND_COUNT)
		return;
	if (s->request)
		hold(ss, s);
	else
		add_sample(ss, s, false);
}

static void reset_slot_state(struct slot_state *ss, uint32_t gen)
{
	held_flush(ss, false);
	free(ss->held);
	memset(ss, 0, sizeof(*ss));
	ss->gen = gen;
}

/* Drain every ring once; free the slots of threads that have exited. */
static void drain_all(void)
{
	size_t n = agent_thread_count();

	for (size_t i = 0; i < n; i++) {
		struct agent_thread *t = agent_thread_at(i);
		struct slot_state *ss = &co.slots[i];
		int status = atomic_load_explicit(&t->status, memory_order_acquire);
		uint64_t rep;

		if (status != SLOT_LIVE && status != SLOT_EXITED)
			continue;
		if (ss->gen != t->gen)
			reset_slot_state(ss, t->gen);
		if (atomic_load_explicit(&t->ring->head, memory_order_acquire) !=
		    atomic_load_explicit(&t->ring->tail, memory_order_relaxed)) {
			thread_name(ss, t);
			/* Counted here, not by the writers: one shared counter would
			 * bounce between their cores on every sample. */
			atomic_fetch_add_explicit(&agent_state.counters.samples,
						  agent_ring_drain(t->ring, on_record, ss),
						  memory_order_relaxed);
		}
		rep = atomic_exchange(&t->wall_repeat_ns, 0);
		if (rep)
			add_wall_repeat(ss, rep);
		if (status == SLOT_EXITED) {
			reset_slot_state(ss, t->gen);
			agent_thread_release(t);
		}
	}
}

/* Write the file and push the interval (cold, with mu held). */
static int export_now(bool final)
{
	uint64_t now = agent_now_real();
	uint8_t *data;
	size_t len;
	int rc = 0;

	if (co.want_file) {
		rc = agent_export_encode(&co.cum, true, agent_state.start_ns, now, &co.symtab,
					 &data, &len);
		if (rc == 0) {
			rc = agent_export_write_file(co.output, data, len);
			free(data);
		}
		if (rc == 0)
			atomic_fetch_add(&agent_state.counters.profiles_written, 1);
		else if (final)
			agent_warn("cannot write %s: %s", co.output, strerror(-rc));
	}
	if (co.want_push && co.push) {
		if (agent_export_encode(&co.delta, true, co.delta_start_ns, now, &co.symtab, &data,
					&len) == 0)
			co.push_api.enqueue(co.push, data, len, co.delta_start_ns, now, NULL);
		agent_agg_clear(&co.delta);
		for (size_t i = 0; i < AGENT_MAX_THREADS; i++)
			co.slots[i].last_wall[1] = 0;
		co.delta_start_ns = now;
	}
	return rc;
}

static int dl_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *v = arg;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		v[0] = info->dlpi_adds;
		v[1] = info->dlpi_subs;
	}
	return 1;
}

/* Rebuild the unwind tables when a module was loaded or unloaded since the last look. */
static void refresh_modules(void)
{
	static unsigned long long last[2];
	unsigned long long now[2] = {0, 0};

	dl_iterate_phdr(dl_counts, now);
	if (now[0] == last[0] && now[1] == last[1])
		return;
	agent_unwind_refresh();
	agent_alloc_refresh(); /* a library may have brought operator new */
	last[0] = now[0];
	last[1] = now[1];
}

/* A fatal signal at its default action: write the profile, then die of it. */
static void flush_and_die(int signo)
{
	atomic_store(&agent_state.running, false);
	agent_cpu_stop_all();
	drain_all();
	for (size_t i = 0; i < AGENT_MAX_THREADS; i++)
		if (co.slots[i].nheld)
			held_flush(&co.slots[i], false);
	export_now(true);
	if (co.push)
		co.push_api.stop(co.push, 1000, NULL);
	co.push = NULL;
	agent_signal_die(signo);
}

static void *collector_main(void *arg)
{
	uint64_t next_export = agent_now_mono() + agent_state.cfg.upload_interval_ms * 1000000u;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)DRAIN_NS};

	(void)arg;
	while (atomic_load(&co.on)) {
		nanosleep(&ts, NULL);
		/*
		 * Under mu, as everything the collector does that allocates: fork
		 * holds mu (then the unwinder's lock), so no agent thread is inside
		 * the allocator when a child is made (ASan's cannot recover from it).
		 */
		agent_lock(&co.mu);
		refresh_modules();
		if (atomic_load(&agent_state.fatal_signal)) {
			flush_and_die(atomic_load(&agent_state.fatal_signal));
			atomic_store(&co.on, false);
		} else if (atomic_load(&co.on)) {
			drain_all();
			if (agent_now_mono() >= next_export) {
				export_now(false);
				next_export += agent_state.cfg.upload_interval_ms * 1000000u;
			}
		}
		agent_unlock(&co.mu);
	}
	return NULL;
}

static int output_path(void)
{
	const struct agent_config *cfg = &agent_state.cfg;

	co.output[0] = 0;
	if (!cfg->output[0])
		return 0;
	return agent_config_output_path(cfg, getpid(), co.output, sizeof(co.output));
}

const char *agent_collect_output(void)
{
	return co.output;
}

int agent_collect_start(void)
{
	int rc;

	if (atomic_load(&co.on))
		return 0;
	if (!co.slots) {
		co.slots = calloc(AGENT_MAX_THREADS, sizeof(*co.slots));
		if (!co.slots)
			return -ENOMEM;
	}
	if (output_path() != 0)
		return -ENAMETOOLONG;
	co.want_file = co.output[0] != 0;
	co.want_push = agent_state.cfg.server[0] != 0;
	co.state_label[AGENT_STATE_RUNNING] = agent_label_intern("thread_state", "running");
	co.state_label[AGENT_STATE_BLOCKED] = agent_label_intern("thread_state", "blocked");
	co.slow_label = agent_label_intern("latency", "slow");
	co.delta_start_ns = agent_now_real();
	find_self_text();
	if (co.want_push && !co.push) {
		struct agent_push_opts opts;

		memset(&opts, 0, sizeof(opts));
		opts.thread_init = agent_thread_set_internal;
		if (agent_push_module_load(&co.push_api) == 0)
			co.push = co.push_api.create(&agent_state.cfg, &opts);
	}
	atomic_store(&co.on, true);
	rc = agent_thread_spawn(&co.thread, collector_main, NULL);
	if (rc != 0) {
		atomic_store(&co.on, false);
		return -rc;
	}
	return 0;
}

int agent_collect_stop(uint64_t push_deadline_ms)
{
	int rc;

	if (atomic_exchange(&co.on, false))
		pthread_join(co.thread, NULL);
	agent_lock(&co.mu);
	if (!co.slots) {
		agent_unlock(&co.mu);
		return 0;
	}
	drain_all();
	for (size_t i = 0; i < AGENT_MAX_THREADS; i++)
		if (co.slots[i].nheld)
			held_flush(&co.slots[i], false);
	rc = export_now(true);
	agent_unlock(&co.mu);
	if (co.push) {
		struct agent_push_counters pc;

		co.push_api.stop(co.push, push_deadline_ms, &pc);
		atomic_store(&agent_state.counters.profiles_pushed, pc.pushed);
		atomic_store(&agent_state.counters.profiles_dropped,
			     pc.dropped + pc.expired + pc.unsent);
		co.push = NULL;
	}
	return rc;
}

void agent_collect_atfork_prepare(void)
{
	agent_lock(&co.mu);
}

void agent_collect_atfork_parent(void)
{
	agent_unlock(&co.mu);
}

void agent_collect_atfork_child(void)
{
	/*
	 * The parent's collector and push threads are gone and their memory may
	 * be mid-update: forget it (leaked, shared copy-on-write) and start over.
	 */
	memset(&co.cum, 0, sizeof(co.cum));
	memset(&co.delta, 0, sizeof(co.delta));
	co.slots = NULL;
	co.symtab = NULL;
	co.push = NULL;
	atomic_store(&co.on, false);
	agent_lock_reset(&co.mu);
}
