/* SPDX-License-Identifier: MIT */
/*
 * The live table of sampled allocations (see live.h and doc/agent-alloc.md).
 *
 * Layout: one mapping holding, per slot, a key (0 = free, SLOT_BUSY =
 * claimed by a writer, else the pointer), a 64-byte payload guarded by a
 * sequence counter, and a stack of AGENT_MAX_DEPTH pcs; plus one counter per
 * bucket of the entries whose home it is.
 *
 * Ownership of a slot moves only through its key: an inserter CASes 0 to
 * SLOT_BUSY, fills the payload (seq odd, then even) and publishes the key
 * with a release store; a remover CASes the pointer to 0 (or to SLOT_BUSY
 * while it copies the payload out).  Lookups scan both buckets of a home
 * whole, so a freed slot needs no tombstone: nothing stops at an empty one.
 *
 * The live count and the home counters are raised before a key is
 * published and lowered after it is removed, so they never read below the
 * number of published keys; a free whose home counter is 0 skips the scan.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/live.h"
#include "util/banned.h"

#define SLOT_BUSY  ((uintptr_t)1)
#define NO_SLOT	   SIZE_MAX
#define HASH_MUL   UINT64_C(0x9e3779b97f4a7c15)
#define READ_TRIES 4
/* Hot paths run in malloc hooks, possibly before a sanitizer runtime has
 * mapped its shadow memory (ld.so allocates during ASan's own init). */
#define NOASAN __attribute__((no_sanitize_address))

/* A slot's payload, one cache line; written only by the slot's owner. */
struct meta {
	atomic_uint seq;  /* odd while the owner writes */
	atomic_uint info; /* nframes | nlabels << 16 | flags << 24 */
	atomic_uint tid;
	atomic_uint pad;
	atomic_uint labels[AGENT_MAX_LABELS];
	_Atomic uint64_t size;
	_Atomic uint64_t weight; /* the double's bits */
};

struct live_table {
	_Atomic uintptr_t *keys;
	atomic_uint_least16_t *homes; /* per bucket */
	struct meta *meta;
	_Atomic uintptr_t (*pcs)[AGENT_MAX_DEPTH];
	size_t capacity, nbuckets;
	unsigned shift; /* 64 - log2(nbuckets) */
	void *map;
	size_t map_size;
	_Alignas(64) atomic_size_t live; /* written by inserts and removes only */
};

static struct live_table table;
static struct live_table *_Atomic cur;

static NOASAN size_t home(const struct live_table *t, uintptr_t ptr)
{
	return (size_t)((((uint64_t)ptr >> 4) * HASH_MUL) >> t->shift);
}

/* Slot K (0 .. 2 * AGENT_LIVE_BUCKET - 1) of home bucket B. */
static NOASAN size_t slot_of(const struct live_table *t, size_t b, size_t k)
{
	size_t bucket = (b + k / AGENT_LIVE_BUCKET) & (t->nbuckets - 1);

	return bucket * AGENT_LIVE_BUCKET + k % AGENT_LIVE_BUCKET;
}

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

int agent_live_init(size_t capacity)
{
	size_t cap = AGENT_LIVE_CAPACITY_MIN, off_homes, off_meta, off_pcs, size;
	int saved = errno;
	void *map;

	if (capacity == 0 || capacity > AGENT_LIVE_CAPACITY_MAX)
		return -EINVAL;
	if (atomic_load(&cur))
		return -EBUSY;
	while (cap < capacity)
		cap <<= 1;
	off_homes = round_up(cap * sizeof(uintptr_t), 64);
	off_meta =
		round_up(off_homes + cap / AGENT_LIVE_BUCKET * sizeof(atomic_uint_least16_t), 64);
	off_pcs = off_meta + cap * sizeof(struct meta);
	size = round_up(off_pcs + cap * sizeof(*table.pcs), 4096);
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		   -1, 0);
	if (map == MAP_FAILED) {
		int err = errno;

		errno = saved;
		return -err;
	}
	memset(&table, 0, sizeof(table));
	table.keys = map;
	table.homes = (atomic_uint_least16_t *)((char *)map + off_homes);
	table.meta = (struct meta *)((char *)map + off_meta);
	table.pcs = (_Atomic uintptr_t(*)[AGENT_MAX_DEPTH])((char *)map + off_pcs);
	table.capacity = cap;
	table.nbuckets = cap / AGENT_LIVE_BUCKET;
	table.shift = 64 - (unsigned)__builtin_ctzll(table.nbuckets);
	table.map = map;
	table.map_size = size;
	atomic_store_explicit(&cur, &table, memory_order_release);
	return 0;
}

void agent_live_fini(void)
{
	struct live_table *t = atomic_exchange(&cur, NULL);

	if (!t)
		return;
	munmap(t->map, t->map_size);
	memset(t, 0, sizeof(*t));
}

/* Claim a free slot in home bucket B or the next one; NO_SLOT when both are full. */
static NOASAN size_t claim(struct live_table *t, size_t b)
{
	size_t k;

	for (k = 0; k < 2 * AGENT_LIVE_BUCKET; k++) {
		size_t i = slot_of(t, b, k);
		uintptr_t expected = 0;

		if (atomic_load_explicit(&t->keys[i], memory_order_relaxed) != 0)
			continue;
		/* Acquire: see the previous owner's seq. */
		if (atomic_compare_exchange_strong_explicit(&t->keys[i], &expected, SLOT_BUSY,
							    memory_order_acquire,
							    memory_order_relaxed))
			return i;
	}
	return NO_SLOT;
}

/*
 * Write S into slot I, which the caller owns (seqlock writer side).  The
 * payload stores are releases and the reader's loads acquires (free on
 * x86): a reader that sees any of this payload then sees the odd seq.
 */
static NOASAN void fill(struct live_table *t, size_t i, const struct agent_live_sample *s)
{
	struct meta *m = &t->meta[i];
	unsigned seq = atomic_load_explicit(&m->seq, memory_order_relaxed);
	size_t n = s->nframes < AGENT_MAX_DEPTH ? s->nframes : AGENT_MAX_DEPTH;
	size_t nl = s->nlabels < AGENT_MAX_LABELS ? s->nlabels : AGENT_MAX_LABELS;
	uint64_t bits;
	size_t k;

	memcpy(&bits, &s->weight, sizeof(bits));
	atomic_store_explicit(&m->seq, seq + 1, memory_order_relaxed);
	atomic_store_explicit(&m->size, s->size, memory_order_release);
	atomic_store_explicit(&m->weight, bits, memory_order_release);
	atomic_store_explicit(&m->tid, s->tid, memory_order_release);
	atomic_store_explicit(&m->info, (unsigned)n | (unsigned)nl << 16 | (s->flags & 0xffu) << 24,
			      memory_order_release);
	for (k = 0; k < nl; k++)
		atomic_store_explicit(&m->labels[k], s->labels[k], memory_order_release);
	for (k = 0; k < n; k++)
		atomic_store_explicit(&t->pcs[i][k], s->pcs[k], memory_order_release);
	atomic_store_explicit(&m->seq, seq + 2, memory_order_release);
}

NOASAN bool agent_live_insert(const struct agent_live_sample *s)
{
	struct live_table *t = atomic_load_explicit(&cur, memory_order_acquire);
	size_t b, i;

	if (s->ptr <= SLOT_BUSY)
		return false;
	if (!t)
		goto drop;
	b = home(t, s->ptr);
	atomic_fetch_add_explicit(&t->live, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->homes[b], 1, memory_order_relaxed);
	i = claim(t, b);
	if (i == NO_SLOT) {
		atomic_fetch_sub_explicit(&t->homes[b], 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&t->live, 1, memory_order_relaxed);
		goto drop;
	}
	fill(t, i, s);
	atomic_store_explicit(&t->keys[i], s->ptr, memory_order_release);
	return true;
drop:
	atomic_fetch_add_explicit(&agent_state.counters.live_full, 1, memory_order_relaxed);
	return false;
}

/* Copy slot I's payload into *E (the caller validates it). */
static NOASAN void copy_payload(const struct live_table *t, size_t i, struct agent_live_entry *e)
{
	struct meta *m = &t->meta[i];
	unsigned info = atomic_load_explicit(&m->info, memory_order_acquire);
	uint64_t bits = atomic_load_explicit(&m->weight, memory_order_acquire);
	size_t k;

	e->size = atomic_load_explicit(&m->size, memory_order_acquire);
	memcpy(&e->weight, &bits, sizeof(bits));
	e->tid = atomic_load_explicit(&m->tid, memory_order_acquire);
	e->nframes = (uint16_t)(info & 0xffffu);
	e->nlabels = (uint8_t)((info >> 16) & 0xffu);
	e->flags = (uint8_t)(info >> 24);
	if (e->nframes > AGENT_MAX_DEPTH)
		e->nframes = AGENT_MAX_DEPTH;
	if (e->nlabels > AGENT_MAX_LABELS)
		e->nlabels = AGENT_MAX_LABELS;
	for (k = 0; k < e->nlabels; k++)
		e->labels[k] = atomic_load_explicit(&m->labels[k], memory_order_acquire);
	for (k = 0; k < e->nframes; k++)
		e->pcs[k] = atomic_load_explicit(&t->pcs[i][k], memory_order_acquire);
}

NOASAN bool agent_live_maybe(uintptr_t ptr)
{
	struct live_table *t = atomic_load_explicit(&cur, memory_order_acquire);

	if (!t || atomic_load_explicit(&t->live, memory_order_relaxed) == 0)
		return false;
	return atomic_load_explicit(&t->homes[home(t, ptr)], memory_order_relaxed) != 0;
}

/*
 * Clear every slot holding PTR (a stale duplicate left by a free we never
 * saw heals here); the first one's payload goes to *OUT when OUT is set.
 */
static NOASAN bool drop_key(struct live_table *t, uintptr_t ptr, struct agent_live_entry *out)
{
	size_t b = home(t, ptr), found = 0, k;

	for (k = 0; k < 2 * AGENT_LIVE_BUCKET; k++) {
		size_t i = slot_of(t, b, k);
		uintptr_t expected = ptr;
		bool copy = out && found == 0;

		if (atomic_load_explicit(&t->keys[i], memory_order_relaxed) != ptr)
			continue;
		/* To copy, hold the slot busy so that no inserter refills it meanwhile. */
		if (!atomic_compare_exchange_strong_explicit(
			    &t->keys[i], &expected, copy ? SLOT_BUSY : 0,
			    copy ? memory_order_acquire : memory_order_release,
			    memory_order_relaxed))
			continue;
		if (copy) {
			copy_payload(t, i, out);
			out->ptr = ptr;
			atomic_store_explicit(&t->keys[i], 0, memory_order_release);
		}
		found++;
	}
	if (found == 0)
		return false;
	atomic_fetch_sub_explicit(&t->homes[b], (uint_least16_t)found, memory_order_relaxed);
	atomic_fetch_sub_explicit(&t->live, found, memory_order_relaxed);
	return true;
}

NOASAN bool agent_live_remove(uintptr_t ptr)
{
	if (!agent_live_maybe(ptr))
		return false;
	return drop_key(atomic_load_explicit(&cur, memory_order_relaxed), ptr, NULL);
}

NOASAN bool agent_live_take(uintptr_t ptr, struct agent_live_entry *out)
{
	if (!agent_live_maybe(ptr))
		return false;
	return drop_key(atomic_load_explicit(&cur, memory_order_relaxed), ptr, out);
}

size_t agent_live_count(void)
{
	struct live_table *t = atomic_load_explicit(&cur, memory_order_acquire);

	return t ? atomic_load_explicit(&t->live, memory_order_relaxed) : 0;
}

size_t agent_live_capacity(void)
{
	struct live_table *t = atomic_load_explicit(&cur, memory_order_acquire);

	return t ? t->capacity : 0;
}

size_t agent_live_mapped_bytes(void)
{
	struct live_table *t = atomic_load_explicit(&cur, memory_order_acquire);

	return t ? t->map_size : 0;
}

/*
 * Seqlock reader: 1 when *E holds a consistent live entry of slot I, 0 when
 * the slot holds none, -1 when a writer got in the way (retry).
 */
static int read_slot(const struct live_table *t, size_t i, struct agent_live_entry *e)
{
	const struct meta *m = &t->meta[i];
	unsigned s1 = atomic_load_explicit(&m->seq, memory_order_acquire);
	uintptr_t key;

	if (s1 & 1)
		return 0; /* being filled: not live yet */
	/* Acquire: a key published after s1 brings its owner's seq with it. */
	key = atomic_load_explicit(&t->keys[i], memory_order_acquire);
	if (key <= SLOT_BUSY)
		return 0;
	copy_payload(t, i, e);
	if (atomic_load_explicit(&m->seq, memory_order_relaxed) != s1)
		return -1;
	e->ptr = key;
	return 1;
}

size_t agent_live_foreach(void (*fn)(const struct agent_live_entry *e, void *arg), void *arg)
{
	struct live_table *t = atomic_load_explicit(&cur, memory_order_acquire);
	struct agent_live_entry e;
	size_t i, seen = 0;

	if (!t)
		return 0;
	for (i = 0; i < t->capacity; i++) {
		int r = -1, tries;

		for (tries = 0; tries < READ_TRIES && r < 0; tries++)
			r = read_slot(t, i, &e);
		if (r > 0) {
			fn(&e, arg);
			seen++;
		}
	}
	return seen;
}

void agent_live_fork_child(void)
{
	struct live_table *t = atomic_load_explicit(&cur, memory_order_acquire);
	size_t i, live = 0;

	if (!t)
		return;
	for (i = 0; i < t->nbuckets; i++)
		atomic_store_explicit(&t->homes[i], 0, memory_order_relaxed);
	for (i = 0; i < t->capacity; i++) {
		uintptr_t key = atomic_load_explicit(&t->keys[i], memory_order_relaxed);
		unsigned seq = atomic_load_explicit(&t->meta[i].seq, memory_order_relaxed);

		if (seq & 1)
			atomic_store_explicit(&t->meta[i].seq, seq + 1, memory_order_relaxed);
		if (key == SLOT_BUSY) {
			/* A parent thread was filling or removing it: that thread is gone. */
			atomic_store_explicit(&t->keys[i], 0, memory_order_relaxed);
		} else if (key != 0) {
			atomic_fetch_add_explicit(&t->homes[home(t, key)], 1, memory_order_relaxed);
			live++;
		}
	}
	atomic_store_explicit(&t->live, live, memory_order_release);
}
