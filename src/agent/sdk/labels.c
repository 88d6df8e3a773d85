/* SPDX-License-Identifier: MIT */
/*
 * Label interning and the SDK's label and request calls.  A thread's labels
 * are a small stack of ids in its slot: push writes the id first and the
 * count last, pop lowers the count, so a signal handler reading the count
 * sees only complete entries (compiler fences suffice: the handler runs on
 * the same thread).
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "plateau.h"

#include "agent/core/agent.h"
#include "agent/sdk/labels.h"
#include "agent/core/ring.h"
#include "agent/core/thread.h"
#include "util/banned.h"

struct pair {
	uint32_t key; /* key number */
	uint32_t hash;
	const char *k, *v;
};

struct keyinfo {
	const char *name;
	uint32_t values;
	uint32_t other; /* id of KEY=_other, 0 until needed */
};

#define HASH_SLOTS (AGENT_LABELS_MAX * 2)
#define ARENA_SIZE ((size_t)AGENT_LABELS_MAX * 2 * 64)

static struct {
	atomic_flag lock;
	struct pair *pairs; /* index = id, 0 unused */
	uint32_t *hash;	    /* open addressing: ids */
	uint32_t npairs;
	struct keyinfo keys[AGENT_LABEL_KEYS_MAX];
	uint32_t nkeys;
	char *arena;
	size_t arena_used;
	unsigned cap;
} lt = {.lock = ATOMIC_FLAG_INIT, .cap = 256};

static void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&lt.lock, memory_order_acquire))
		;
}

static void unlock(void)
{
	atomic_flag_clear_explicit(&lt.lock, memory_order_release);
}

static uint32_t fnv(const char *a, const char *b)
{
	uint32_t h = 2166136261u;

	for (; *a; a++)
		h = (h ^ (unsigned char)*a) * 16777619u;
	h = (h ^ '=') * 16777619u;
	for (; *b; b++)
		h = (h ^ (unsigned char)*b) * 16777619u;
	return h ? h : 1;
}

static bool tables(void)
{
	size_t bytes = sizeof(struct pair) * (AGENT_LABELS_MAX + 1) +
		       sizeof(uint32_t) * HASH_SLOTS + ARENA_SIZE;
	char *p;

	if (lt.pairs)
		return true;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return false;
	lt.pairs = (struct pair *)p;
	lt.hash = (uint32_t *)(p + sizeof(struct pair) * (AGENT_LABELS_MAX + 1));
	lt.arena = (char *)(lt.hash + HASH_SLOTS);
	lt.npairs = 1;
	return true;
}

static const char *save(const char *s)
{
	size_t n = strnlen(s, AGENT_LABEL_STR_MAX);
	char *d;

	if (lt.arena_used + n + 1 > ARENA_SIZE)
		return NULL;
	d = lt.arena + lt.arena_used;
	memcpy(d, s, n);
	d[n] = 0;
	lt.arena_used += n + 1;
	return d;
}

static int key_number(const char *k, bool add)
{
	for (uint32_t i = 0; i < lt.nkeys; i++)
		if (!strcmp(lt.keys[i].name, k))
			return (int)i;
	if (!add || lt.nkeys == AGENT_LABEL_KEYS_MAX || !(lt.keys[lt.nkeys].name = save(k)))
		return -1;
	return (int)lt.nkeys++;
}

/* Find KEY=VALUE, or its slot in the hash when absent (*id = 0). */
static uint32_t *find(const char *k, const char *v, uint32_t h, uint32_t *id)
{
	for (uint32_t i = h % HASH_SLOTS;; i = (i + 1) % HASH_SLOTS) {
		struct pair *p = &lt.pairs[lt.hash[i]];

		*id = lt.hash[i];
		if (!*id || (p->hash == h && !strcmp(p->k, k) && !strcmp(p->v, v)))
			return &lt.hash[i];
	}
}

static uint32_t add(const char *k, const char *v, int key)
{
	uint32_t h = fnv(k, v), id, *slot = find(k, v, h, &id);
	struct pair *p;

	if (id)
		return id;
	if (lt.npairs > AGENT_LABELS_MAX)
		return 0;
	p = &lt.pairs[lt.npairs];
	p->key = (uint32_t)key;
	p->hash = h;
	p->k = lt.keys[key].name;
	if (!(p->v = save(v)))
		return 0;
	*slot = lt.npairs;
	return lt.npairs++;
}

uint32_t agent_label_intern(const char *key, const char *value)
{
	char kb[AGENT_LABEL_STR_MAX + 1], vb[AGENT_LABEL_STR_MAX + 1];
	uint32_t id = 0, h;
	int k;

	if (!key || !*key || !value)
		return 0;
	/* Cut long strings first so that the cut string is what is interned. */
	memcpy(kb, key, strnlen(key, AGENT_LABEL_STR_MAX));
	kb[strnlen(key, AGENT_LABEL_STR_MAX)] = 0;
	memcpy(vb, value, strnlen(value, AGENT_LABEL_STR_MAX));
	vb[strnlen(value, AGENT_LABEL_STR_MAX)] = 0;
	h = fnv(kb, vb);
	lock();
	if (!tables() || (k = key_number(kb, true)) < 0)
		goto out;
	find(kb, vb, h, &id);
	if (id)
		goto out;
	if (lt.keys[k].values >= lt.cap) {
		atomic_fetch_add(&agent_state.counters.label_overflow, 1);
		if (!lt.keys[k].other)
			lt.keys[k].other = add(kb, AGENT_LABEL_OTHER, k);
		id = lt.keys[k].other;
		goto out;
	}
	if ((id = add(kb, vb, k)))
		lt.keys[k].values++;
out:
	unlock();
	return id;
}

bool agent_label_get(uint32_t id, const char **key, const char **value)
{
	bool ok;

	lock();
	ok = lt.pairs && id > 0 && id < lt.npairs;
	if (ok) {
		*key = lt.pairs[id].k;
		*value = lt.pairs[id].v;
	}
	unlock();
	return ok;
}

int agent_label_key(uint32_t id)
{
	int k = -1;

	lock();
	if (lt.pairs && id > 0 && id < lt.npairs)
		k = (int)lt.pairs[id].key;
	unlock();
	return k;
}

void agent_labels_atfork_prepare(void)
{
	lock();
}

void agent_labels_atfork_parent(void)
{
	unlock();
}

void agent_labels_atfork_child(void)
{
	unlock();
}

/* ---- the SDK ---- */

AGENT_API unsigned plateau_set_label_cap(unsigned values_per_key)
{
	unsigned old;

	if (values_per_key < 1)
		values_per_key = 1;
	if (values_per_key > 65536)
		values_per_key = 65536;
	lock();
	old = lt.cap;
	lt.cap = values_per_key;
	unlock();
	return old;
}

AGENT_API int plateau_label_push(const char *key, const char *value)
{
	struct agent_thread *t = agent_thread_self();
	int n;
	uint32_t id;

	if (!t)
		return -1;
	n = (int)t->nlabels;
	if (t->labels_hidden || n >= AGENT_MAX_LABELS || !(id = agent_label_intern(key, value))) {
		/* Still counted, so that pops stay balanced (and in order). */
		t->labels_hidden++;
		return -1;
	}
	t->labels[n] = id;
	atomic_signal_fence(memory_order_seq_cst);
	t->nlabels = n + 1;
	return 0;
}

AGENT_API void plateau_label_pop(void)
{
	struct agent_thread *t = agent_thread_self();

	if (!t)
		return;
	if (t->labels_hidden) {
		t->labels_hidden--;
		return;
	}
	if (t->nlabels > 0)
		t->nlabels = t->nlabels - 1;
}

AGENT_API int plateau_labels_push(const char *const *kv)
{
	int n = 0;

	for (; kv && kv[0] && kv[1]; kv += 2, n++)
		plateau_label_push(kv[0], kv[1]);
	return n;
}

AGENT_API void plateau_labels_pop(int n)
{
	while (n-- > 0)
		plateau_label_pop();
}

AGENT_API void plateau__labels_cleanup(int *n)
{
	plateau_labels_pop(*n);
}

/* ---- slow requests ---- */

AGENT_API void plateau_request_begin(void)
{
	struct agent_thread *t = agent_thread_self();

	if (!t)
		return;
	if (t->request)
		plateau_request_end(UINT64_MAX);
	t->request_start = agent_now_mono();
	t->request = ++t->request_seq ? t->request_seq : ++t->request_seq;
}

AGENT_API int plateau_request_end(uint64_t threshold_ns)
{
	struct agent_thread *t = agent_thread_self();
	uint32_t id;
	bool slow;

	if (!t || !t->request)
		return 0;
	slow = agent_now_mono() - t->request_start > threshold_ns;
	id = t->request;
	t->request = 0;
	/* The marker tells the collector what to do with the held samples. */
	if (atomic_load(&agent_state.running))
		agent_emit(t, AGENT_KIND_REQUEST_END, id, slow, NULL, 0, 0, 0);
	return slow;
}
