/* SPDX-License-Identifier: MIT */
/* The perf mmap ring buffer: reading records, and the poll loop. */
#include "util/common.h"

#include <linux/perf_event.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/perf_ring.h"

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
	if (r->base)
		munmap(r->base, r->map_size);
	if (r->fd >= 0)
		close(r->fd);
	free(r->bounce);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

int perf_session_enable(struct perf_session *s, bool on, struct error *err)
{
	for (size_t i = 0; i < s->nr_rings; i++)
		if (ioctl(s->rings[i].fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0))
			return error_set(err, ERR_IO, "perf: ioctl %s (cpu %d): %s",
					 on ? "ENABLE" : "DISABLE", s->rings[i].cpu,
					 strerror(errno));
	return 0;
}

/* Copy n bytes starting at ring offset pos (mod size) into dst. */
static void ring_copy(const struct perf_ring *r, uint64_t pos, void *dst, size_t n)
{
	size_t off = (size_t)(pos & (r->data_size - 1));
	size_t first = MIN(n, (size_t)r->data_size - off);

	memcpy(dst, r->data + off, first);
	memcpy((uint8_t *)dst + first, r->data, n - first);
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

static int ring_drain(struct perf_session *s, struct perf_ring *r, perf_record_fn fn, void *arg,
		      struct error *err)
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
		if (h.size < sizeof(h) || h.size > head - tail || h.size % 8)
			return error_set(err, ERR_FORMAT,
					 "perf ring (cpu %d): record at %" PRIu64
					 " has header size %u (%" PRIu64 " bytes available)",
					 r->cpu, tail, h.size, head - tail);
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
		tail += h.size;
		ret = fn ? fn(&rec, arg) : 0;
		if (ret)
			break;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
	return ret;
}

int perf_session_drain(struct perf_session *s, perf_record_fn fn, void *arg, struct error *err)
{
	for (size_t i = 0; i < s->nr_rings; i++) {
		int ret = ring_drain(s, &s->rings[i], fn, arg, err);

		if (ret)
			return ret;
	}
	return 0;
}

int perf_session_loop(struct perf_session *s, int timeout_ms, volatile sig_atomic_t *stop,
		      perf_record_fn fn, void *arg, struct error *err)
{
	struct pollfd *pfd = xcalloc(s->nr_rings ? s->nr_rings : 1, sizeof(*pfd));
	int ret = 0;

	for (size_t i = 0; i < s->nr_rings; i++) {
		pfd[i].fd = s->rings[i].fd;
		pfd[i].events = POLLIN;
	}
	while (!ret && !(stop && *stop)) {
		size_t hup = 0;
		int n = poll(pfd, s->nr_rings, timeout_ms);

		if (n < 0 && errno != EINTR) {
			ret = error_set(err, ERR_IO, "perf: poll: %s", strerror(errno));
			break;
		}
		ret = perf_session_drain(s, fn, arg, err);
		for (size_t i = 0; n > 0 && i < s->nr_rings; i++)
			hup += !!(pfd[i].revents & (POLLHUP | POLLERR));
		if (s->nr_rings == 0 || hup == s->nr_rings)
			break;
	}
	free(pfd);
	return ret ? ret : perf_session_drain(s, fn, arg, err);
}
