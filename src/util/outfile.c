/* SPDX-License-Identifier: MIT */
#include "util/common.h"
#include "util/outfile.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Temporary files to remove at exit; read by outfile_cleanup() in a signal handler. */
static char *volatile pending[OUTFILE_MAX];
static pid_t pending_pid;

void outfile_cleanup(void)
{
	/* A forked child that exits must not remove its parent's files. */
	if (getpid() != pending_pid)
		return;
	for (int i = 0; i < OUTFILE_MAX; i++)
		if (pending[i])
			unlink(pending[i]);
}

static int pending_add(char *tmp)
{
	for (int i = 0; i < OUTFILE_MAX; i++) {
		if (!pending[i]) {
			pending_pid = getpid();
			pending[i] = tmp;
			return i;
		}
	}
	return -1;
}

static void pending_del(int slot)
{
	if (slot >= 0)
		pending[slot] = NULL;
}

/* The file a write to path replaces: path, or where its symbolic link points. */
static char *resolve(const char *path, struct stat *st, bool *exists)
{
	char *real;

	*exists = !stat(path, st);
	if (*exists && !lstat(path, st) && S_ISLNK(st->st_mode) && (real = realpath(path, NULL))) {
		stat(real, st);
		return real;
	}
	if (*exists)
		stat(path, st);
	return xstrdup(path);
}

/* Create "DIR/.BASE.XXXXXXXX.tmp" beside dest with O_EXCL; returns the fd or -1. */
static int create_tmp(const char *dest, mode_t mode, char **tmp)
{
	static unsigned counter;
	const char *slash = strrchr(dest, '/');
	int dlen = slash ? (int)(slash - dest + 1) : 0;
	const char *base = dest + dlen;
	struct timespec ts;

	for (int tries = 0; tries < 100; tries++) {
		unsigned r;
		int fd;

		clock_gettime(CLOCK_REALTIME, &ts);
		r = (unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 12) ^ (++counter * 2654435761u);
		/* Keep the name under NAME_MAX whatever the target's length. */
		*tmp = xmalloc(st_add((size_t)dlen, 220));
		snprintf(*tmp, (size_t)dlen + 220, "%.*s.%.200s.%08x.tmp", dlen, dest, base, r);
		fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			return fd;
		free(*tmp);
	}
	*tmp = NULL;
	errno = EEXIST;
	return -1;
}

static int open_in_place(struct outfile *o, struct error *err)
{
	o->f = fopen(o->dest, "w");
	if (!o->f)
		return error_set(err, ERR_IO, "cannot write %s: %s", o->path, strerror(errno));
	return 0;
}

int outfile_open(struct outfile *o, const char *path, struct error *err)
{
	struct stat st;
	bool exists;
	int fd;

	memset(o, 0, sizeof(*o));
	o->slot = -1;
	o->path = xstrdup(path);
	o->dest = resolve(path, &st, &exists);
	if (exists && !S_ISREG(st.st_mode))
		return open_in_place(o, err);
	fd = create_tmp(o->dest, 0666, &o->tmp);
	if (fd < 0 ||
	    /* Replacing a file keeps its permissions, as writing into it would. */
	    (exists && fchmod(fd, st.st_mode & 07777)) || !(o->f = fdopen(fd, "w"))) {
		int e = errno;

		if (fd >= 0) {
			close(fd);
			unlink(o->tmp);
		}
		free(o->tmp);
		o->tmp = NULL;
		return error_set(err, ERR_IO, "cannot write %s: %s", o->path, strerror(e));
	}
	o->slot = pending_add(o->tmp);
	if (o->slot < 0) {
		outfile_abort(o);
		return error_set(err, ERR_LIMIT, "cannot write %s: over %d output files open", path,
				 OUTFILE_MAX);
	}
	return 0;
}

static void outfile_release(struct outfile *o)
{
	pending_del(o->slot);
	free(o->tmp);
	free(o->dest);
	free(o->path);
	memset(o, 0, sizeof(*o));
	o->slot = -1;
}

int outfile_commit(struct outfile *o, struct error *err)
{
	bool failed = ferror(o->f) != 0;
	int e = failed ? EIO : 0;

	if (fflush(o->f))
		e = errno;
	/* The data must be on disk before the name points at it. */
	if (!e && o->tmp && fsync(fileno(o->f)) && errno != EINVAL)
		e = errno;
	if (fclose(o->f) && !e)
		e = errno;
	o->f = NULL;
	if (!e && o->tmp && rename(o->tmp, o->dest))
		e = errno;
	if (e && o->tmp)
		unlink(o->tmp);
	if (e)
		error_set(err, ERR_IO, "write error on %s: %s", o->path, strerror(e));
	outfile_release(o);
	return e ? ERR_IO : 0;
}

void outfile_abort(struct outfile *o)
{
	if (!o || !o->path)
		return;
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	outfile_release(o);
}
