/* SPDX-License-Identifier: MIT */
/* Deadlines on sockets, enforced by one thread (deadline.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "server/deadline.h"
#include "util/clock.h"
#include "util/common.h"

struct deadline {
	int fd;
	_Atomic int64_t at_ns; /* CLOCK_MONOTONIC; 0 = none */
	bool cut;
	struct deadline *prev, *next;
};

struct deadlines {
	pthread_mutex_t mu; /* the list, cut, stopping */
	pthread_cond_t cv;
	struct deadline *head;
	int64_t period_ns;
	uint64_t cut;
	bool stopping;
	pthread_t thread;
};

/* Shut down every socket past its deadline; D->mu held. */
static void cut_late(struct deadlines *d, int64_t now)
{
	for (struct deadline *e = d->head; e; e = e->next) {
		int64_t at = atomic_load(&e->at_ns);

		if (!at || at > now || e->cut)
			continue;
		/* Held under D->mu: the owner cannot have closed FD yet. */
		shutdown(e->fd, SHUT_RDWR);
		e->cut = true;
		d->cut++;
	}
}

static void *watch(void *arg)
{
	struct deadlines *d = arg;
	struct timespec ts;
	int64_t wake;

	pthread_mutex_lock(&d->mu);
	while (!d->stopping) {
		wake = clock_ns(CLOCK_MONOTONIC) + d->period_ns;
		ts.tv_sec = (time_t)(wake / 1000000000);
		ts.tv_nsec = (long)(wake % 1000000000);
		pthread_cond_timedwait(&d->cv, &d->mu, &ts);
		cut_late(d, clock_ns(CLOCK_MONOTONIC));
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

int deadlines_start(int64_t period_ns, struct deadlines **out, struct error *err)
{
	struct deadlines *d = calloc(1, sizeof(*d));
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (!d)
		return error_set(err, ERR_NOMEM, "deadlines: out of memory");
	d->period_ns = period_ns > 0 ? period_ns : 1000000000;
	pthread_mutex_init(&d->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cv, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&d->thread, NULL, watch, d);
	if (rc) {
		pthread_cond_destroy(&d->cv);
		pthread_mutex_destroy(&d->mu);
		free(d);
		return error_set(err, ERR_IO, "deadlines: cannot start a thread: %s", strerror(rc));
	}
	*out = d;
	return 0;
}

struct deadline *deadlines_add(struct deadlines *d, int fd)
{
	struct deadline *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->fd = fd;
	pthread_mutex_lock(&d->mu);
	e->next = d->head;
	if (d->head)
		d->head->prev = e;
	d->head = e;
	pthread_mutex_unlock(&d->mu);
	return e;
}

void deadline_set(struct deadline *e, int64_t at_ns)
{
	if (e)
		atomic_store(&e->at_ns, at_ns);
}

void deadlines_remove(struct deadlines *d, struct deadline *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&d->mu);
	if (e->prev)
		e->prev->next = e->next;
	else
		d->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	pthread_mutex_unlock(&d->mu);
	free(e);
}

uint64_t deadlines_cut(struct deadlines *d)
{
	uint64_t n;

	pthread_mutex_lock(&d->mu);
	n = d->cut;
	pthread_mutex_unlock(&d->mu);
	return n;
}

void deadlines_stop(struct deadlines *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	d->stopping = true;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
	free(d);
}
