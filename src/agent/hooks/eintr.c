/* SPDX-License-Identifier: MIT */
/*
 * Blocking calls that a signal interrupts with EINTR even under SA_RESTART
 * (nanosleep, poll, epoll_wait, select, sem_wait, sigtimedwait, pause ...,
 * see signal(7)).  The wall sampler's and the CPU timers' signals must not
 * change what a program sees, and many programs do not retry on EINTR: when the agent's own signal
 * caused the interruption (its handler ran, or the sampler counted a
 * signal sent during the call), the call is
 * retried with the time that is left.  An EINTR caused by any other signal
 * is returned as usual — unless one of ours arrived during the same call,
 * which the agent cannot tell apart (see doc/agent.md).
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/agent.h"
#include "agent/core/thread.h"
#include "util/banned.h"

#define NS 1000000000LL

#define REAL(name, type)                                     \
	static type real_##name;                             \
	if (!real_##name)                                    \
		real_##name = (type)agent_dlsym_next(#name); \
	if (!real_##name) {                                  \
		errno = ENOSYS;                              \
		return -1;                                   \
	}

/* The calling thread when an EINTR may be ours to hide, else NULL. */
static struct agent_thread *watched(void)
{
	struct agent_thread *t = agent_thread_self();

	if (!t || !(agent_state.cfg.modes & (AGENT_MODE_WALL | AGENT_MODE_CPU)))
		return NULL;
	t->eintr_ours = 0;
	t->eintr_snap = atomic_load(&t->wall_sent);
	return t;
}

/*
 * The wall sampler splits the time between two looks at a thread that ran
 * meanwhile where the thread left one blocking call for another (wall.c):
 * the calls wrapped here say when they begin and end.
 */
static void mark(struct agent_thread *t)
{
	struct timespec ts;

	if (!t || !(agent_state.cfg.modes & AGENT_MODE_WALL))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	atomic_store_explicit(&t->wall_mark_ns, (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec,
			      memory_order_relaxed);
}

/* watched(), for a call that blocks: its start is marked. */
static struct agent_thread *watched_call(void)
{
	struct agent_thread *t = watched();

	mark(t);
	return t;
}

/* The end of a watched_call(): marked; returns RC. */
static int ended(struct agent_thread *t, int rc)
{
	int saved = errno;

	mark(t);
	errno = saved;
	return rc;
}

/* Whether the failed call is to be retried: EINTR, and our signal came. */
static bool ours(struct agent_thread *t, int rc_or_errno, bool is_errno)
{
	int err = is_errno ? rc_or_errno : errno;

	if (!t || (is_errno ? err != EINTR : (rc_or_errno != -1 || err != EINTR)))
		return false;
	/*
	 * Ours when our handler ran during the call, or when the sampler sent a
	 * signal since it began (its handler may not have run yet).
	 */
	if (!t->eintr_ours && atomic_load(&t->wall_sent) == t->eintr_snap)
		return false;
	t->eintr_ours = 0;
	t->eintr_snap = atomic_load(&t->wall_sent);
	return true;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NS + ts.tv_nsec;
}

/* Milliseconds left to DEADLINE (ns), for poll-style timeouts; -1 stays -1. */
static int ms_left(int timeout, int64_t deadline)
{
	int64_t left;

	if (timeout < 0)
		return -1;
	left = deadline - mono_ns();
	return left <= 0 ? 0 : (int)((left + 999999) / 1000000);
}

static struct timespec ts_left(int64_t deadline)
{
	int64_t left = deadline - mono_ns();
	struct timespec ts;

	if (left < 0)
		left = 0;
	ts.tv_sec = (time_t)(left / NS);
	ts.tv_nsec = (long)(left % NS);
	return ts;
}

typedef int (*nanosleep_fn)(const struct timespec *, struct timespec *);

AGENT_API int nanosleep(const struct timespec *req, struct timespec *rem)
{
	REAL(nanosleep, nanosleep_fn);
	struct agent_thread *t = watched_call();
	struct timespec cur, left;
	int rc;

	if (!t)
		return real_nanosleep(req, rem);
	cur = *req;
	while ((rc = real_nanosleep(&cur, &left)) == -1 && ours(t, rc, false))
		cur = left;
	if (rc == -1 && errno == EINTR && rem)
		*rem = left;
	return ended(t, rc);
}

typedef int (*clock_nanosleep_fn)(clockid_t, int, const struct timespec *, struct timespec *);

AGENT_API int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
			      struct timespec *rem)
{
	static clock_nanosleep_fn real;
	struct agent_thread *t;
	struct timespec cur, left;
	int rc;

	if (!real)
		real = (clock_nanosleep_fn)agent_dlsym_next("clock_nanosleep");
	if (!real)
		return ENOSYS;
	t = watched_call();
	if (!t)
		return real(clk, flags, req, rem);
	cur = *req;
	while ((rc = real(clk, flags, &cur, &left)) == EINTR && ours(t, rc, true))
		if (!(flags & TIMER_ABSTIME))
			cur = left;
	if (rc == EINTR && rem && !(flags & TIMER_ABSTIME))
		*rem = left;
	return ended(t, rc);
}

AGENT_API int usleep(useconds_t us)
{
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};

	return nanosleep(&ts, NULL);
}

AGENT_API unsigned int sleep(unsigned int s)
{
	struct timespec ts = {.tv_sec = s, .tv_nsec = 0}, rem = {0, 0};

	if (nanosleep(&ts, &rem) == 0)
		return 0;
	return (unsigned)rem.tv_sec + (rem.tv_nsec > 0);
}

typedef int (*poll_fn)(struct pollfd *, nfds_t, int);

AGENT_API int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	REAL(poll, poll_fn);
	struct agent_thread *t = watched_call();
	int64_t deadline = mono_ns() + (int64_t)timeout * 1000000;
	int rc, ms = timeout;

	if (!t)
		return real_poll(fds, n, timeout);
	while ((rc = real_poll(fds, n, ms)) == -1 && ours(t, rc, false))
		ms = ms_left(timeout, deadline);
	return ended(t, rc);
}

typedef int (*ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);

AGENT_API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
	REAL(ppoll, ppoll_fn);
	struct agent_thread *t = watched_call();
	int64_t deadline = tmo ? mono_ns() + tmo->tv_sec * NS + tmo->tv_nsec : 0;
	struct timespec left;
	int rc;

	if (!t)
		return real_ppoll(fds, n, tmo, mask);
	while ((rc = real_ppoll(fds, n, tmo, mask)) == -1 && ours(t, rc, false))
		if (tmo) {
			left = ts_left(deadline);
			tmo = &left;
		}
	return ended(t, rc);
}

/* The fd sets of a select call, to hand back unchanged when we retry it. */
struct fds {
	fd_set r, w, e;
};

static void fds_save(struct fds *s, const fd_set *r, const fd_set *w, const fd_set *e)
{
	if (r)
		s->r = *r;
	if (w)
		s->w = *w;
	if (e)
		s->e = *e;
}

static void fds_restore(const struct fds *s, fd_set *r, fd_set *w, fd_set *e)
{
	if (r)
		*r = s->r;
	if (w)
		*w = s->w;
	if (e)
		*e = s->e;
}

typedef int (*select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);

AGENT_API int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	REAL(select, select_fn);
	struct agent_thread *t = watched_call();
	struct fds saved;
	int rc;

	if (!t || n < 0 || n > FD_SETSIZE)
		return real_select(n, r, w, e, tv);
	/* Linux leaves the sets alone on EINTR and updates *tv; keep copies anyway. */
	fds_save(&saved, r, w, e);
	while ((rc = real_select(n, r, w, e, tv)) == -1 && ours(t, rc, false)) {
		fds_restore(&saved, r, w, e);
	}
	return ended(t, rc);
}

typedef int (*pselect_fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
			  const sigset_t *);

AGENT_API int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
		      const sigset_t *mask)
{
	REAL(pselect, pselect_fn);
	struct agent_thread *t = watched_call();
	int64_t deadline = tmo ? mono_ns() + tmo->tv_sec * NS + tmo->tv_nsec : 0;
	struct fds saved;
	struct timespec left;
	int rc;

	if (!t || n < 0 || n > FD_SETSIZE)
		return real_pselect(n, r, w, e, tmo, mask);
	fds_save(&saved, r, w, e);
	while ((rc = real_pselect(n, r, w, e, tmo, mask)) == -1 && ours(t, rc, false)) {
		fds_restore(&saved, r, w, e);
		if (tmo) {
			left = ts_left(deadline);
			tmo = &left;
		}
	}
	return ended(t, rc);
}

typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);

AGENT_API int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
	REAL(epoll_wait, epoll_wait_fn);
	struct agent_thread *t = watched_call();
	int64_t deadline = mono_ns() + (int64_t)timeout * 1000000;
	int rc, ms = timeout;

	if (!t)
		return real_epoll_wait(ep, ev, max, timeout);
	while ((rc = real_epoll_wait(ep, ev, max, ms)) == -1 && ours(t, rc, false))
		ms = ms_left(timeout, deadline);
	return ended(t, rc);
}

typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);

AGENT_API int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout,
			  const sigset_t *mask)
{
	REAL(epoll_pwait, epoll_pwait_fn);
	struct agent_thread *t = watched_call();
	int64_t deadline = mono_ns() + (int64_t)timeout * 1000000;
	int rc, ms = timeout;

	if (!t)
		return real_epoll_pwait(ep, ev, max, timeout, mask);
	while ((rc = real_epoll_pwait(ep, ev, max, ms, mask)) == -1 && ours(t, rc, false))
		ms = ms_left(timeout, deadline);
	return ended(t, rc);
}

typedef int (*sem_wait_fn)(sem_t *);
typedef int (*sem_timedwait_fn)(sem_t *, const struct timespec *);

AGENT_API int sem_wait(sem_t *s)
{
	REAL(sem_wait, sem_wait_fn);
	struct agent_thread *t = watched();
	int rc;

	while ((rc = real_sem_wait(s)) == -1 && ours(t, rc, false))
		;
	return rc;
}

AGENT_API int sem_timedwait(sem_t *s, const struct timespec *abs)
{
	REAL(sem_timedwait, sem_timedwait_fn);
	struct agent_thread *t = watched();
	int rc;

	while ((rc = real_sem_timedwait(s, abs)) == -1 && ours(t, rc, false))
		;
	return rc;
}

typedef int (*sigtimedwait_fn)(const sigset_t *, siginfo_t *, const struct timespec *);

AGENT_API int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *tmo)
{
	REAL(sigtimedwait, sigtimedwait_fn);
	struct agent_thread *t = watched_call();
	int64_t deadline = tmo ? mono_ns() + tmo->tv_sec * NS + tmo->tv_nsec : 0;
	struct timespec left;
	int rc;

	while ((rc = real_sigtimedwait(set, info, tmo)) == -1 && ours(t, rc, false))
		if (tmo) {
			left = ts_left(deadline);
			tmo = &left;
		}
	return ended(t, rc);
}

AGENT_API int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	return sigtimedwait(set, info, NULL);
}

typedef int (*sigsuspend_fn)(const sigset_t *);

AGENT_API int sigsuspend(const sigset_t *mask)
{
	REAL(sigsuspend, sigsuspend_fn);
	struct agent_thread *t = watched_call();
	int rc;

	while ((rc = real_sigsuspend(mask)) == -1 && ours(t, rc, false))
		;
	return ended(t, rc);
}

AGENT_API int pause(void)
{
	sigset_t cur;

	sigprocmask(SIG_BLOCK, NULL, &cur);
	return sigsuspend(&cur);
}
