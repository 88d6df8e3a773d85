/* SPDX-License-Identifier: MIT */
/* A fixed pool of threads over one FIFO of work (workpool.h). */
#include <pthread.h>

#include "server/workpool.h"
#include "util/common.h"

/*
 * Idle threads wait on a stack, each on its own condition: the thread that
 * went idle last is woken first, and no more threads are woken than there
 * is queued work (a thread that finishes takes the next work itself), so
 * a light load keeps running on the same few threads and their malloc
 * arenas instead of touching all of them in turn.
 */
struct worker {
	struct workpool *p;
	pthread_t thread;
	pthread_cond_t cv;
	bool waiting;
	struct worker *next_idle;
};

struct workpool {
	pthread_mutex_t mu;
	struct work *head, *tail;
	size_t queued, waking; /* works in the queue; threads woken, not yet running */
	struct worker *idle;   /* top of the stack */
	bool stopping;
	unsigned nthreads;
	struct worker workers[];
};

/* The next work, or NULL once stopping with nothing queued; P->mu held. */
static struct work *next_work(struct workpool *p, struct worker *me)
{
	struct work *w;

	while (!p->head && !p->stopping) {
		me->waiting = true;
		me->next_idle = p->idle;
		p->idle = me;
		while (me->waiting && !p->stopping)
			pthread_cond_wait(&me->cv, &p->mu);
		if (!me->waiting)
			p->waking--;
	}
	w = p->head;
	if (w) {
		p->queued--;
		p->head = w->next;
		if (!p->head)
			p->tail = NULL;
	}
	return w;
}

/* Until stopped and the queue is empty: queued work is always run. */
static void *worker_run(void *arg)
{
	struct worker *me = arg;
	struct workpool *p = me->p;
	struct work *w;

	pthread_mutex_lock(&p->mu);
	while ((w = next_work(p, me))) {
		pthread_mutex_unlock(&p->mu);
		w->fn(w);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int workpool_start(unsigned n, struct workpool **out, struct error *err)
{
	struct workpool *p;
	int rc;

	*out = NULL;
	if (n < 1 || n > WORKPOOL_MAX)
		return error_set(err, ERR_USAGE, "workers: %u is not from 1 to %d", n,
				 WORKPOOL_MAX);
	p = calloc(1, sizeof(*p) + n * sizeof(p->workers[0]));
	if (!p)
		return error_set(err, ERR_NOMEM, "workers: out of memory");
	pthread_mutex_init(&p->mu, NULL);
	for (; p->nthreads < n; p->nthreads++) {
		struct worker *wk = &p->workers[p->nthreads];

		wk->p = p;
		pthread_cond_init(&wk->cv, NULL);
		rc = pthread_create(&wk->thread, NULL, worker_run, wk);
		if (rc) {
			pthread_cond_destroy(&wk->cv);
			workpool_stop(p);
			workpool_free(p);
			return error_set(err, ERR_IO, "workers: cannot start a thread: %s",
					 strerror(rc));
		}
	}
	*out = p;
	return 0;
}

int workpool_submit(struct workpool *p, struct work *w)
{
	pthread_mutex_lock(&p->mu);
	if (p->stopping) {
		pthread_mutex_unlock(&p->mu);
		return -1;
	}
	w->next = NULL;
	if (p->tail)
		p->tail->next = w;
	else
		p->head = w;
	p->tail = w;
	p->queued++;
	if (p->idle && p->queued > p->waking) {
		struct worker *wk = p->idle;

		p->idle = wk->next_idle;
		p->waking++;
		wk->waiting = false;
		pthread_cond_signal(&wk->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return 0;
}

void workpool_stop(struct workpool *p)
{
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_cond_signal(&p->workers[i].cv);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->workers[i].thread, NULL);
}

void workpool_free(struct workpool *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_cond_destroy(&p->workers[i].cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
