/* SPDX-License-Identifier: MIT */
/* A fixed pool of threads over one FIFO of work (workpool.h). */
#include <pthread.h>

#include "server/workpool.h"
#include "util/common.h"

struct workpool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct work *head, *tail;
	bool stopping;
	unsigned nthreads;
	pthread_t threads[];
};

static struct work *next_work(struct workpool *p)
{
	struct work *w;

	pthread_mutex_lock(&p->mu);
	while (!p->head && !p->stopping)
		pthread_cond_wait(&p->cv, &p->mu);
	w = p->head;
	if (w) {
		p->head = w->next;
		if (!p->head)
			p->tail = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	return w;
}

/* Until stopped and the queue is empty: queued work is always run. */
static void *worker(void *arg)
{
	struct workpool *p = arg;
	struct work *w;

	while ((w = next_work(p)))
		w->fn(w);
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
	p = calloc(1, sizeof(*p) + n * sizeof(p->threads[0]));
	if (!p)
		return error_set(err, ERR_NOMEM, "workers: out of memory");
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (; p->nthreads < n; p->nthreads++) {
		rc = pthread_create(&p->threads[p->nthreads], NULL, worker, p);
		if (rc) {
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
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

void workpool_stop(struct workpool *p)
{
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	p->nthreads = 0;
}

void workpool_free(struct workpool *p)
{
	if (!p)
		return;
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
