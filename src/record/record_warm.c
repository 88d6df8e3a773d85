/* SPDX-License-Identifier: MIT */
/* The recorder's early symbol loading: before a command execs, and while recording. */
#include "util/common.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "record/record_int.h"

/* ---- the warmer ----
 *
 * Loading a module's symbols and DWARF (libc's separate debug file is
 * compressed: ~100 ms to inflate) and /proc/kallsyms costs more than
 * everything else at the end of a recording.  A background thread at
 * SCHED_IDLE priority loads each module as soon as a sample lands in it,
 * in the symbolizer the end will use, so the profile is written soon
 * after the target exits.  It only uses CPU nobody else wants.
 */
struct warm_job {
	char *path, *bid;
	uint64_t start, end, pgoff, addr;
};

struct warmer {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct warm_job *jobs;
	size_t nr, alloc, next;
	bool quit, busy, abandoned;
	struct symbolizer *s; /* owned by the thread until it is joined */
	uint8_t *queued;      /* per map id: already given to the thread */
	size_t nr_queued;
};

static void warm_free(struct warmer *w)
{
	for (size_t i = 0; i < w->nr; i++) {
		free(w->jobs[i].path);
		free(w->jobs[i].bid);
	}
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->jobs);
	free(w->queued);
	free(w);
}

static void *warm_main(void *arg)
{
	struct warmer *w = arg;
	struct sched_param sp = {0};

	pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct warm_job j;
		struct sym_frame out[8];
		struct error e = {0};
		struct sym_module *m;

		while (!w->quit && w->next == w->nr)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->quit)
			break;
		j = w->jobs[w->next++];
		w->busy = true;
		pthread_mutex_unlock(&w->lock);
		m = symbolizer_module(w->s, j.path, j.start, j.end, j.pgoff, j.bid);
		symbolizer_lookup(w->s, m, j.addr, out, ARRAY_SIZE(out), &e);
		pthread_mutex_lock(&w->lock);
		w->busy = false;
		if (w->abandoned)
			break;
	}
	if (w->abandoned) {
		/* the recorder went on without us: everything left here is ours to free */
		pthread_mutex_unlock(&w->lock);
		symbolizer_free(w->s);
		warm_free(w);
		return NULL;
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

void rec_warm_start(struct recorder *r)
{
	struct warmer *w;

	if (r->warm)
		return;
	w = xcalloc(1, sizeof(*w));

	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	/* what recorder_preload loaded goes on in the thread's symbolizer */
	w->s = r->pre_sym ? r->pre_sym : symbolizer_new();
	r->pre_sym = NULL;
	if (pthread_create(&w->thread, NULL, warm_main, w)) {
		r->pre_sym = w->s;
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w);
		return;
	}
	r->warm = w;
}

/* ---- preloading a command's modules before it execs ---- */

/* Load path's symbols and DWARF into s, as a mapping whose key matches its MMAP2. */
static void preload_file(struct symbolizer *s, const char *path, Elf *elf)
{
	const void *bid_raw;
	char bid[2 * 64 + 1];
	ssize_t n = dwelf_elf_gnu_build_id(elf, &bid_raw);
	uint64_t base = 0, text = 0;
	size_t phnum, shstrndx;
	struct sym_frame out[8];
	struct error e = ERROR_INIT;
	struct sym_module *m;
	Elf_Scn *scn = NULL;

	if (n <= 0 || n > 64 || elf_getphdrnum(elf, &phnum) || elf_getshdrstrndx(elf, &shstrndx))
		return;
	for (ssize_t i = 0; i < n; i++)
		snprintf(bid + 2 * i, 3, "%02x", ((const uint8_t *)bid_raw)[i]);
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			base = (ph.p_vaddr - ph.p_offset) & ~(uint64_t)0xfff;
			break;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, ".text"))
			text = sh.sh_addr;
	}
	if (!text || text < base)
		return;
	/* a mapping of the whole file at 1 TiB: the lookup forces symbols and DWARF in */
	m = symbolizer_module(s, path, 1ull << 40, 1ull << 41, 0, bid);
	symbolizer_lookup(s, m, (1ull << 40) + (text - base), out, ARRAY_SIZE(out), &e);
}

/* The libraries elf needs (DT_NEEDED), resolved as the dynamic loader would, into paths. */
static void preload_needed(Elf *elf, const char *origin, char ***paths, size_t *nr, size_t *alloc)
{
	static const char *const dirs[] = {
		"/lib/x86_64-linux-gnu",
		"/usr/lib/x86_64-linux-gnu",
		"/lib64",
		"/usr/lib64",
		"/lib",
		"/usr/lib",
		"/usr/local/lib",
	};
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		const char *runpath = NULL;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC ||
		    !(data = elf_getdata(scn, NULL)) || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < data->d_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;

			if (gelf_getdyn(data, (int)i, &dyn) &&
			    (dyn.d_tag == DT_RUNPATH || dyn.d_tag == DT_RPATH))
				runpath = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
		}
		for (size_t i = 0; i < data->d_size / sh.sh_entsize && *nr < 64; i++) {
			GElf_Dyn dyn;
			const char *lib;
			char buf[2 * PATH_MAX + 512], real[PATH_MAX];
			bool found = false;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag != DT_NEEDED ||
			    !(lib = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)) ||
			    strchr(lib, '/'))
				continue;
			if (runpath && !strncmp(runpath, "$ORIGIN", 7)) {
				snprintf(buf, sizeof(buf), "%s%.*s/%s", origin,
					 (int)strcspn(runpath + 7, ":"), runpath + 7, lib);
				found = realpath(buf, real) != NULL;
			} else if (runpath) {
				snprintf(buf, sizeof(buf), "%.*s/%s", (int)strcspn(runpath, ":"),
					 runpath, lib);
				found = realpath(buf, real) != NULL;
			}
			for (size_t d = 0; d < ARRAY_SIZE(dirs) && !found; d++) {
				snprintf(buf, sizeof(buf), "%s/%s", dirs[d], lib);
				found = realpath(buf, real) != NULL;
			}
			if (!found)
				continue;
			for (size_t j = 0; j < *nr && found; j++)
				found = strcmp((*paths)[j], real) != 0;
			if (found) {
				ALLOC_GROW(*paths, *nr + 1, *alloc);
				(*paths)[(*nr)++] = xstrdup(real);
			}
		}
	}
}

void recorder_preload(struct recorder *r, const char *exe)
{
	char **paths = NULL, real[PATH_MAX];
	size_t nr = 0, alloc = 0;

	if (!r->pre_sym)
		r->pre_sym = symbolizer_new();
	if (!r->o.user_only) {
		struct sym_frame out[4];
		struct error e = ERROR_INIT;
		struct sym_module *k =
			symbolizer_module(r->pre_sym, "[kernel.kallsyms]", 0, UINT64_MAX, 0, NULL);

		symbolizer_lookup(r->pre_sym, k, UINT64_MAX - 1, out, ARRAY_SIZE(out), &e);
	}
	if (!exe || !realpath(exe, real))
		return;
	ALLOC_GROW(paths, 1, alloc);
	paths[nr++] = xstrdup(real);
	/* breadth first: the program, its libraries, theirs */
	for (size_t i = 0; i < nr; i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;

		if (elf && elf_kind(elf) == ELF_K_ELF) {
			char origin[PATH_MAX];
			const char *slash = strrchr(paths[i], '/');

			snprintf(origin, sizeof(origin), "%.*s", (int)(slash - paths[i]), paths[i]);
			preload_needed(elf, origin, &paths, &nr, &alloc);
			preload_file(r->pre_sym, paths[i], elf);
		}
		if (elf)
			elf_end(elf);
		if (fd >= 0)
			close(fd);
	}
	for (size_t i = 0; i < nr; i++)
		free(paths[i]);
	free(paths);
}

/* Stop the thread and take its symbolizer (NULL when there was none). */
struct symbolizer *rec_warm_stop(struct recorder *r)
{
	struct warmer *w = r->warm;
	struct sched_param sp = {0};
	struct symbolizer *s;

	if (!w)
		return NULL;
	r->warm = NULL;
	pthread_mutex_lock(&w->lock);
	w->quit = true;
	pthread_cond_signal(&w->cond);
	/*
	 * The profile waits for it now: back to normal priority, as a busy
	 * target may keep every CPU.  An unprivileged process may not leave
	 * SCHED_IDLE: then a thread still loading is left to finish alone
	 * and the end loads what it needs itself.
	 */
	if (pthread_setschedparam(w->thread, SCHED_OTHER, &sp)) {
		/* Idle, its symbolizer is not in use: take it and let it exit alone. */
		s = w->busy ? NULL : w->s;
		if (s)
			w->s = NULL;
		w->abandoned = true;
		free(w->queued);
		w->queued = NULL;
		pthread_mutex_unlock(&w->lock);
		pthread_detach(w->thread);
		return s;
	}
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	s = w->s;
	warm_free(w);
	return s;
}

static void warm_map(struct recorder *r, uint32_t map, uint64_t addr)
{
	struct warmer *w = r->warm;
	const struct rec_map *m = &r->maps[map];
	struct warm_job j = {.start = m->start, .end = m->end, .pgoff = m->pgoff, .addr = addr};
	const char *path = strtab_str(&r->strs, m->path);

	if (map >= w->nr_queued) {
		size_t n = MAX((size_t)map + 1, w->nr_queued * 2);

		w->queued = xrealloc(w->queued, n);
		memset(w->queued + w->nr_queued, 0, n - w->nr_queued);
		w->nr_queued = n;
	}
	if (w->queued[map])
		return;
	w->queued[map] = 1;
	if (map == MAP_KERNEL) {
		path = "[kernel.kallsyms]";
		j.start = 0;
		j.end = UINT64_MAX;
	} else if (m->jitpid || path[0] == '[') {
		return; /* perf maps change while the JIT runs; the vDSO is cheap */
	}
	if (m->delpid) {
		char buf[96];

		path = rec_map_file(r, m, buf, sizeof(buf), true);
		r->maps[map].del_warm = path == buf;
		j.path = xstrdup(path);
	} else {
		j.path = xstrdup(path);
	}
	j.bid = m->bid ? xstrdup(strtab_str(&r->strs, m->bid)) : NULL;
	pthread_mutex_lock(&w->lock);
	ALLOC_GROW(w->jobs, w->nr + 1, w->alloc);
	w->jobs[w->nr++] = j;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Give the thread the modules of a new stack's frames (key entries). */
void rec_warm_stack(struct recorder *r, const uint8_t *k, size_t n)
{
	if (!r->warm)
		return;
	for (size_t i = 0; i < n; i++, k += 12) {
		uint32_t map;
		uint64_t addr;

		memcpy(&map, k, 4);
		memcpy(&addr, k + 4, 8);
		if (map)
			warm_map(r, map, addr);
	}
}
