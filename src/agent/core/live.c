/* SPDX-License-Identifier: MIT */
/*
 * The live table of sampled allocations (see live.h and doc/agent-alloc.md).
 *
 * Layout: one mapping holding a hash table of keys (0 = free, SLOT_BUSY =
 * claimed by a writer, else the pointer) with, per key slot, the index of
 * its payload; one counter per bucket of the keys whose home it is (the
 * filter free() reads); and a pool of payloads — a 64-byte header guarded
 * by a sequence counter and a stack of AGENT_MAX_DEPTH pcs — handed out
 * from a lock-free LIFO free list.
 *
 * The keys are spread by the hash; the payloads are not: an insert takes
 * the payload its thread or another freed last, so a program with a few
 * hundred sampled blocks live touches a few hundred payloads however many
 * samples it takes, where a payload per hash slot would fault in a new
 * page of the mapping for most samples and thrash the caches.
 *
 * Ownership of a key slot moves only through its key: an inserter CASes 0
 * to SLOT_BUSY, takes a payload, fills it (seq odd, then even), stores its
 * index and publishes the key with a release store; a remover CASes the
 * pointer to SLOT_BUSY, gives the payload back (after copying it out when
 * asked) and stores 0.  Lookups scan both buckets of a home whole, so a
 * freed slot needs no tombstone: nothing stops at an empty one.
 *
 * The live count and the home counters are raised before a key is
 * published and lowered after it is removed, so they never read below the
 * number of published keys; a free whose home counter is 0 skips the scan.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/core/live.h"
#include "util/banned.h"

#define SLOT_BUSY  ((uintptr_t)1)
#define NO_SLOT	   SIZE_MAX
#define NO_PAYLOAD UINT32_MAX
#define READ_TRIES 4
/* Hot paths run in malloc hooks, possibly before a sanitizer runtime has
 * mapped its shadow memory (ld.so allocates during ASan's own init). */
#define NOASAN __attribute__((no_sanitize_address))

/* A payload's header, one cache line; written only by the payload's owner. */
struct meta {
	atomic_uint seq;  /* odd while the owner writes */
	atomic_uint info; /* nframes | nlabels << 16 | flags << 24 */
	atomic_uint tid;
	atomic_uint next; /* free list: the next free payload + 1, 0 = none */
	atomic_uint labels[AGENT_MAX_LABELS];
	_Atomic uint64_t size;
	_Atomic uint64_t weight; /* the double's bits */
};

struct live_table {
	_Atomic uintptr_t *keys;
	atomic_uint *payload_of; /* per key slot: its payload while the key is published */
	struct meta *meta;	 /* per payload */
	_Atomic uintptr_t (*pcs)[AGENT_MAX_DEPTH];
	size_t capacity, nbuckets;
	void *map;
	size_t map_size;
	_Alignas(64) _Atomic uint64_t free_head; /* tag << 32 | (payload + 1); 0 low: empty */
	atomic_uint pool_used;			 /* payloads handed out at least once */
	_Alignas(64) atomic_size_t live;	 /* written by inserts and removes only */
};

static struct live_table table;
static struct live_table *_Atomic cur;
_Alignas(64) struct agent_live_filter agent_live_filter;

static NOASAN size_t home(const struct live_table *t, uintptr_t ptr)
{
	return agent_live_home(ptr, agent_live_filter.shift) & (t->nbuckets - 1);
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
	size_t cap = AGENT_LIVE_CAPACITY_MIN, off_homes, off_payload, off_meta, off_pcs, size;
	int saved = errno;
	void *map;

	if (capacity == 0 || capacity > AGENT_LIVE_CAPACITY_MAX)
		return -EINVAL;
	if (atomic_load(&cur))
		return -EBUSY;
	while (cap < capacity)
		cap <<= 1;
	off_homes = round_up(cap * sizeof(uintptr_t), 64);
	off_payload = round_up(off_homes + cap / AGENT_LIVE_BUCKET, 64);
	off_meta = round_up(off_payload + cap * sizeof(atomic_uint), 64);
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
	table.payload_of = (atomic_uint *)((char *)map + off_payload);
	table.meta = (struct meta *)((char *)map + off_meta);
	table.pcs = (_Atomic uintptr_t(*)[AGENT_MAX_DEPTH])((char *)map + off_pcs);
	table.capacity = cap;
	table.nbuckets = cap / AGENT_LIVE_BUCKET;
	table.map = map;
	table.map_size = size;
	agent_live_filter.shift = 64 - (unsigned)__builtin_ctzll(table.nbuckets);
	atomic_store_explicit(&agent_live_filter.homes,
			      (atomic_uint_least8_t *)((char *)map + off_homes),
			      memory_order_release);
	atomic_store_explicit(&cur, &table, memory_order_release);
	return 0;
}

void agent_live_fini(void)
{
	struct live_table *t = atomic_exchange(&cur, NULL);

	if (!t)
		return;
	atomic_store(&agent_live_filter.homes, NULL);
	munmap(t->map, t->map_size);
	memset(t, 0, sizeof(*t));
}

/* ---- the payload pool ---- */

/* A free payload: the one freed last, else one never used; NO_PAYLOAD when all are taken. */
static NOASAN uint32_t payload_get(struct live_table *t)
{
	uint64_t head = atomic_load_explicit(&t->free_head, memory_order_acquire);
	unsigned used;

	while ((uint32_t)head != 0) {
		uint32_t i = (uint32_t)head - 1;
		/* A stale next (I taken meanwhile) fails the CAS: the tag moved on. */
		uint64_t next = atomic_load_explicit(&t->meta[i].next, memory_order_relaxed);
		uint64_t want = ((head >> 32) + 1) << 32 | next;

		if (atomic_compare_exchange_weak_explicit(
			    &t->free_head, &head, want, memory_order_acquire, memory_order_acquire))
			return i;
	}
	used = atomic_load_explicit(&t->pool_used, memory_order_relaxed);
	while (used < t->capacity)
		if (atomic_compare_exchange_weak_explicit(&t->pool_used, &used, used + 1,
							  memory_order_relaxed,
							  memory_order_relaxed))
			return used;
	return NO_PAYLOAD;
}

static NOASAN void payload_put(struct live_table *t, uint32_t i)
{
	uint64_t head = atomic_load_explicit(&t->free_head, memory_order_relaxed), want;

	do {
		atomic_store_explicit(&t->meta[i].next, (uint32_t)head, memory_order_relaxed);
		want = ((head >> 32) + 1) << 32 | (i + 1);
	} while (!atomic_compare_exchange_weak_explicit(
		&t->free_head, &head, want, memory_order_release, memory_order_relaxed));
}

/* ---- insert ---- */

/* Claim a free slot in home bucket B or the next one; NO_SLOT when both are full. */
static NOASAN size_t claim(struct live_table *t, size_t b)
{
	size_t k;

	for (k = 0; k < 2 * AGENT_LIVE_BUCKET; k++) {
		size_t i = slot_of(t, b, k);
		uintptr_t expected = 0;

		if (atomic_load_explicit(&t->keys[i], memory_order_relaxed) != 0)
			continue;
		if (atomic_compare_exchange_strong_explicit(&t->keys[i], &expected, SLOT_BUSY,
							    memory_order_acquire,
							    memory_order_relaxed))
			return i;
	}
	return NO_SLOT;
}

/*
 * Write S into payload P, which the caller owns (seqlock writer side).  The
 * stores are releases and the reader's loads acquires (free on x86): a
 * reader that sees any of this payload then sees the odd seq.
 */
static NOASAN void fill(struct live_table *t, uint32_t p, const struct agent_live_sample *s)
{
	struct meta *m = &t->meta[p];
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
		atomic_store_explicit(&t->pcs[p][k], s->pcs[k], memory_order_release);
	atomic_store_explicit(&m->seq, seq + 2, memory_order_release);
}

NOASAN bool agent_live_insert(const struct agent_live_sample *s)
{
	struct live_table *t = atomic_load_explicit(&cur, memory_order_acquire);
	size_t b, i;
	uint32_t p;

	if (s->ptr <= SLOT_BUSY)
		return false;
	if (!t)
		goto drop;
	b = home(t, s->ptr);
	atomic_fetch_add_explicit(&t->live, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&agent_live_filter.homes[b], 1, memory_order_relaxed);
	i = claim(t, b);
	if (i == NO_SLOT)
		goto undo;
	p = payload_get(t);
	if (p == NO_PAYLOAD) { /* not while a key slot was free; kept for safety */
		atomic_store_explicit(&t->keys[i], 0, memory_order_release);
		goto undo;
	}
	fill(t, p, s);
	atomic_store_explicit(&t->payload_of[i], p, memory_order_relaxed);
	atomic_store_explicit(&t->keys[i], s->ptr, memory_order_release);
	return true;
undo:
	atomic_fetch_sub_explicit(&agent_live_filter.homes[b], 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&t->live, 1, memory_order_relaxed);
drop:
	atomic_fetch_add_explicit(&agent_state.counters.live_full, 1, memory_order_relaxed);
	return false;
}

/* ---- remove ---- */

/* Copy payload P into *E (the caller validates it). */
static NOASAN void copy_payload(const struct live_table *t, uint32_t p, struct agent_live_entry *e)
{
	struct meta *m = &t->meta[p];
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
		e->pcs[k] = atomic_load_explicit(&t->pcs[p][k], memory_order_acquire);
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
		uint32_t p;

		if (atomic_load_explicit(&t->keys[i], memory_order_relaxed) != ptr)
			continue;
		/* Hold the slot busy while its payload goes back: no inserter refills it meanwhile. */
		if (!atomic_compare_exchange_strong_explicit(&t->keys[i], &expected, SLOT_BUSY,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		p = atomic_load_explicit(&t->payload_of[i], memory_order_relaxed);
		if (out && found == 0) {
			copy_payload(t, p, out);
			out->ptr = ptr;
		}
		payload_put(t, p);
		atomic_store_explicit(&t->keys[i], 0, memory_order_release);
		found++;
	}
	if (found == 0)
		return false;
	atomic_fetch_sub_explicit(&agent_live_filter.homes[b], (uint_least8_t)found,
				  memory_order_relaxed);
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

/* ---- the collector's side ---- */

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

size_t agent_live_payloads_used(void)
{
	struct live_table *t = atomic_load_explicit(&cur, memory_order_acquire);

	return t ? atomic_load_explicit(&t->pool_used, memory_order_relaxed) : 0;
}

/*
 * Seqlock reader: 1 when *E holds a consistent live entry of key slot I, 0
 * when the slot holds none, -1 when a writer got in the way (retry).
 */
static int read_slot(const struct live_table *t, size_t i, struct agent_live_entry *e)
{
	/* Acquire: a published key brings its payload index and contents with it. */
	uintptr_t key = atomic_load_explicit(&t->keys[i], memory_order_acquire);
	uint32_t p;
	unsigned s1;

	if (key <= SLOT_BUSY)
		return 0;
	p = atomic_load_explicit(&t->payload_of[i], memory_order_relaxed);
	if (p >= t->capacity)
		return -1;
	s1 = atomic_load_explicit(&t->meta[p].seq, memory_order_acquire);
	if (s1 & 1)
		return -1;
	copy_payload(t, p, e);
	/* Still the same key on the same payload, not rewritten meanwhile. */
	if (atomic_load_explicit(&t->meta[p].seq, memory_order_acquire) != s1 ||
	    atomic_load_explicit(&t->keys[i], memory_order_acquire) != key ||
	    atomic_load_explicit(&t->payload_of[i], memory_order_relaxed) != p)
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

/*
 * The child has one thread: rebuild the counters and the free list from
 * the published keys.  Slots and payloads that parent threads held while
 * they wrote or removed an entry go back to the pool.
 */
void agent_live_fork_child(void)
{
	struct live_table *t = atomic_load_explicit(&cur, memory_order_acquire);
	atomic_uint_least8_t *homes = agent_live_filter.homes;
	unsigned used, p;
	uint64_t head = 0;
	size_t i, live = 0;

	if (!t)
		return;
	used = atomic_load_explicit(&t->pool_used, memory_order_relaxed);
	for (p = 0; p < used; p++) {
		unsigned seq = atomic_load_explicit(&t->meta[p].seq, memory_order_relaxed);

		if (seq & 1)
			atomic_store_explicit(&t->meta[p].seq, seq + 1, memory_order_relaxed);
		atomic_store_explicit(&t->meta[p].next, NO_PAYLOAD, memory_order_relaxed);
	}
	for (i = 0; i < t->nbuckets; i++)
		atomic_store_explicit(&homes[i], 0, memory_order_relaxed);
	for (i = 0; i < t->capacity; i++) {
		uintptr_t key = atomic_load_explicit(&t->keys[i], memory_order_relaxed);

		if (key == SLOT_BUSY) {
			atomic_store_explicit(&t->keys[i], 0, memory_order_relaxed);
		} else if (key != 0) {
			p = atomic_load_explicit(&t->payload_of[i], memory_order_relaxed);
			atomic_store_explicit(&t->meta[p].next, 0, memory_order_relaxed);
			atomic_fetch_add_explicit(&homes[home(t, key)], 1, memory_order_relaxed);
			live++;
		}
	}
	/* Payloads no published key uses (still marked NO_PAYLOAD) form the free list. */
	for (p = used; p-- > 0;) {
		if (atomic_load_explicit(&t->meta[p].next, memory_order_relaxed) != NO_PAYLOAD)
			continue;
		atomic_store_explicit(&t->meta[p].next, (uint32_t)head, memory_order_relaxed);
		head = p + 1;
	}
	atomic_store_explicit(&t->free_head, head, memory_order_relaxed);
	atomic_store_explicit(&t->live, live, memory_order_release);
}
