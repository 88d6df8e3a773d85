/* SPDX-License-Identifier: MIT */
/* The perf mmap ring buffer: reading records, and the poll loop. */
#include "util/common.h"

#include <linux/perf_event.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perf/perf_ring.h"

/* Copy n bytes starting at ring offset pos (mod size) into dst. */
static void ring_copy(const struct perf_ring *r, uint64_t pos, void *dst, size_t n)
{
	size_t off = (size_t)(pos & (r->data_size - 1));
	size_t first = MIN(n, (size_t)r->data_size - off);

	memcpy(dst, r->data + off, first);
	memcpy((uint8_t *)dst + first, r->data, n - first);
}

int perf_ring_map(struct perf_ring *r, int fd, int cpu, unsigned pages, struct error *err)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *mp;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->cpu = cpu;
	r->map_size = psz * (1 + (size_t)pages);
	r->base = mmap(NULL, r->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED) {
		int e = errno;

		r->base = NULL;
		r->fd = -1;
		close(fd);
		return error_set(err, ERR_IO, "perf: mmap of %u ring pages (cpu %d): %s%s", pages,
				 cpu, strerror(e),
				 e == EPERM ? " (over kernel.perf_event_mlock_kb; use fewer pages)"
					    : "");
	}
	mp = r->base;
	if (mp->data_offset && mp->data_size) {
		r->data = (uint8_t *)r->base + mp->data_offset;
		r->data_size = mp->data_size;
	} else {
		r->data = (uint8_t *)r->base + psz;
		r->data_size = psz * pages;
	}
	r->bounce = xmalloc((size_t)r->data_size);
	return 0;
}

void perf_ring_unmap(struct perf_ring *r)
{
	for (size_t i = 0; i < r->nr_redirected; i++)
		close(r->redirected[i]);
	free(r->redirected);
	if (r->base)
		munmap(r->base, r->map_size);
	if (r->fd >= 0)
		close(r->fd);
	free(r->bounce);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

int perf_ring_redirect(struct perf_ring *r, int fd, struct error *err)
{
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd)) {
		int e = errno;

		close(fd);
		return error_set(err, ERR_IO, "perf: ioctl SET_OUTPUT (cpu %d): %s", r->cpu,
				 strerror(e));
	}
	ALLOC_GROW(r->redirected, r->nr_redirected + 1, r->alloc_redirected);
	r->redirected[r->nr_redirected++] = fd;
	return 0;
}

void perf_ring_peek_forks(const struct perf_ring *r, void (*fn)(uint32_t tid, void *arg), void *arg)
{
	const struct perf_event_mmap_page *mp = r->base;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;

	if (head - tail > r->data_size)
		return;
	while (tail < head) {
		struct perf_event_header h;
		uint32_t task[4]; /* pid, ppid, tid, ptid */

		ring_copy(r, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail || h.size % 8)
			return;
		if (h.type == PERF_RECORD_FORK && h.size >= sizeof(h) + sizeof(task)) {
			ring_copy(r, tail + sizeof(h), task, sizeof(task));
			fn(task[2], arg);
		}
		tail += h.size;
	}
}

static int fd_enable(int fd, int cpu, bool on, struct error *err)
{
	if (ioctl(fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0))
		return error_set(err, ERR_IO, "perf: ioctl %s (cpu %d): %s",
				 on ? "ENABLE" : "DISABLE", cpu, strerror(errno));
	return 0;
}

int perf_session_enable(struct perf_session *s, bool on, struct error *err)
{
	for (size_t i = 0; i < s->nr_rings; i++) {
		struct perf_ring *r = &s->rings[i];
		int ret = fd_enable(r->fd, r->cpu, on, err);

		for (size_t j = 0; !ret && j < r->nr_redirected; j++)
			ret = fd_enable(r->redirected[j], r->cpu, on, err);
		if (ret)
			return ret;
	}
	return 0;
}

static void count(struct perf_stats *st, const struct perf_record *rec)
{
	st->records++;
	switch (rec->type) {
	case PERF_RECORD_SAMPLE: st->samples++; break;
	case PERF_RECORD_LOST:
		st->lost_records++;
		st->lost += rec->u.lost;
		break;
	case PERF_RECORD_LOST_SAMPLES: st->lost_samples += rec->u.lost; break;
	case PERF_RECORD_THROTTLE: st->throttle++; break;
	case PERF_RECORD_UNTHROTTLE: st->unthrottle++; break;
	default: break;
	}
}

static int ring_drain(struct perf_session *s, size_t idx, struct perf_ring *r, perf_record_fn fn,
		      void *arg, struct error *err)
{
	struct perf_event_mmap_page *mp = r->base;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;
	struct perf_record rec;
	int ret = 0;

	if (head - tail > r->data_size)
		return error_set(err, ERR_FORMAT,
				 "perf ring (cpu %d): head %" PRIu64 " is %" PRIu64
				 " bytes past tail, more than the %" PRIu64 "-byte buffer",
				 r->cpu, head, head - tail, r->data_size);
	while (tail < head) {
		struct perf_event_header h;
		size_t off = (size_t)(tail & (r->data_size - 1));
		const void *p;

		ring_copy(r, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail || h.size % 8) {
			ret = error_set(err, ERR_FORMAT,
					"perf ring (cpu %d): record at %" PRIu64
					" has header size %u (%" PRIu64 " bytes available)",
					r->cpu, tail, h.size, head - tail);
			break;
		}
		if (off + h.size <= r->data_size) {
			p = r->data + off;
		} else {
			ring_copy(r, tail, r->bounce, h.size);
			p = r->bounce;
			s->stats.wrapped++;
		}
		ret = perf_record_parse(&s->layout, p, h.size, &rec, err);
		if (ret)
			break;
		count(&s->stats, &rec);
		rec.session = idx;
		tail += h.size;
		if (s->hide_task && (rec.type == PERF_RECORD_FORK || rec.type == PERF_RECORD_EXIT))
			continue;
		ret = fn ? fn(&rec, arg) : 0;
		if (ret)
			break;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
	return ret;
}

static int session_drain(struct perf_session *s, size_t idx, perf_record_fn fn, void *arg,
			 struct error *err)
{
	for (size_t i = 0; i < s->nr_rings; i++) {
		int ret = ring_drain(s, idx, &s->rings[i], fn, arg, err);

		if (ret)
			return ret;
	}
	return 0;
}

int perf_session_drain(struct perf_session *s, perf_record_fn fn, void *arg, struct error *err)
{
	return session_drain(s, 0, fn, arg, err);
}

/* ---- the poll loop ---- */

/* The poll set of perf_loop: every fd of every ring, and how many are still alive. */
struct loop {
	struct pollfd *pfd;
	size_t *ring_of; /* pfd index -> global ring index */
	size_t nfd;
	size_t *live; /* global ring index -> fds not yet HUP */
	size_t rings_left;
};

static void loop_add(struct loop *lp, int fd, size_t g)
{
	lp->pfd[lp->nfd].fd = fd;
	lp->pfd[lp->nfd].events = POLLIN;
	lp->ring_of[lp->nfd++] = g;
	lp->live[g]++;
}

static void loop_init(struct loop *lp, struct perf_session *const *s, size_t n)
{
	size_t nr_fds = 0, nr_rings = 0, g = 0;

	for (size_t i = 0; i < n; i++) {
		nr_rings += s[i]->nr_rings;
		for (size_t j = 0; j < s[i]->nr_rings; j++)
			nr_fds += 1 + s[i]->rings[j].nr_redirected;
	}
	lp->pfd = xcalloc(nr_fds ? nr_fds : 1, sizeof(*lp->pfd));
	lp->ring_of = xcalloc(nr_fds ? nr_fds : 1, sizeof(*lp->ring_of));
	lp->live = xcalloc(nr_rings ? nr_rings : 1, sizeof(*lp->live));
	lp->nfd = 0;
	lp->rings_left = nr_rings;
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < s[i]->nr_rings; j++, g++) {
			const struct perf_ring *r = &s[i]->rings[j];

			loop_add(lp, r->fd, g);
			for (size_t k = 0; k < r->nr_redirected; k++)
				loop_add(lp, r->redirected[k], g);
		}
	}
}

/* Drop the fds that hung up from the poll set; a ring with none left is done. */
static void loop_hup(struct loop *lp)
{
	for (size_t i = 0; i < lp->nfd; i++) {
		if (lp->pfd[i].fd < 0 || !(lp->pfd[i].revents & (POLLHUP | POLLERR | POLLNVAL)))
			continue;
		lp->pfd[i].fd = -1;
		if (--lp->live[lp->ring_of[i]] == 0)
			lp->rings_left--;
	}
}

static void loop_release(struct loop *lp)
{
	free(lp->pfd);
	free(lp->ring_of);
	free(lp->live);
}

static int drain_all(struct perf_session *const *s, size_t n, perf_record_fn fn, void *arg,
		     struct error *err)
{
	for (size_t i = 0; i < n; i++) {
		int ret = session_drain(s[i], i, fn, arg, err);

		if (ret)
			return ret;
	}
	return 0;
}

/*
 * One poll + drain + round.  Returns nonzero (fn's return, a drain error,
 * round's negative return, poll's ERR_IO) to fail; sets *finish when round
 * asked to stop or every ring is done.
 */
static int loop_round(struct loop *lp, struct perf_session *const *s, size_t n, int timeout_ms,
		      perf_record_fn fn, perf_round_fn round, void *arg, bool *finish,
		      struct error *err)
{
	int k = poll(lp->pfd, lp->nfd, timeout_ms);
	int ret;

	if (k < 0 && errno != EINTR)
		return error_set(err, ERR_IO, "perf: poll: %s", strerror(errno));
	ret = drain_all(s, n, fn, arg, err);
	if (ret)
		return ret;
	ret = round ? round(arg) : 0;
	if (ret < 0)
		return ret;
	if (k > 0)
		loop_hup(lp);
	*finish = ret > 0 || lp->rings_left == 0;
	return 0;
}

int perf_loop(struct perf_session *const *s, size_t n, int timeout_ms, volatile sig_atomic_t *stop,
	      perf_record_fn fn, perf_round_fn round, void *arg, struct error *err)
{
	struct loop lp;
	bool finish = false;
	int ret = 0;

	loop_init(&lp, s, n);
	finish = lp.rings_left == 0;
	while (!ret && !finish && !(stop && *stop))
		ret = loop_round(&lp, s, n, timeout_ms, fn, round, arg, &finish, err);
	loop_release(&lp);
	if (ret)
		return ret;
	ret = drain_all(s, n, fn, arg, err);
	if (ret)
		return ret;
	ret = round ? round(arg) : 0;
	return ret < 0 ? ret : 0;
}

int perf_session_loop(struct perf_session *s, int timeout_ms, volatile sig_atomic_t *stop,
		      perf_record_fn fn, void *arg, struct error *err)
{
	return perf_loop(&s, 1, timeout_ms, stop, fn, NULL, arg, err);
}
