/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/common.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/outfile.h"

static char dir[] = "/tmp/outfile_test.XXXXXX";
static char path[64];

/* Files in dir, the target included. */
static int nr_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static void put(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void assert_content(const char *text)
{
	char buf[64] = "";
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	assert_string_equal(buf, text);
}

static int setup(void **state UNUSED)
{
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	return 0;
}

static int teardown(void **state UNUSED)
{
	unlink(path);
	return rmdir(dir);
}

/* Until commit the old file is there; after it the new one, mode kept, nothing else. */
static void test_commit_replaces(void **state UNUSED)
{
	struct error err = ERROR_INIT;
	struct outfile o;
	struct stat st;

	put("old\n");
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(outfile_open(&o, path, &err), 0);
	fputs("new\n", o.f);
	assert_int_equal(nr_files(), 2);
	assert_content("old\n");
	assert_int_equal(outfile_commit(&o, &err), 0);
	assert_content("new\n");
	assert_int_equal(nr_files(), 1);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
}

/* abort and outfile_cleanup() (at exit, on a signal) leave the old file alone. */
static void test_abort_and_cleanup_keep_old(void **state UNUSED)
{
	struct error err = ERROR_INIT;
	struct outfile o;

	put("old\n");
	assert_int_equal(outfile_open(&o, path, &err), 0);
	fputs("half", o.f);
	fflush(o.f);
	outfile_abort(&o);
	assert_content("old\n");
	assert_int_equal(nr_files(), 1);
	assert_int_equal(outfile_open(&o, path, &err), 0);
	fputs("half", o.f);
	fflush(o.f);
	outfile_cleanup();
	assert_int_equal(nr_files(), 1);
	assert_content("old\n");
	outfile_abort(&o); /* the file is gone already */
	outfile_abort(NULL);
}

/* A write error (here: the stream already failed) removes the temporary file. */
static void test_write_error_keeps_old(void **state UNUSED)
{
	struct error err = ERROR_INIT;
	struct outfile o;

	put("old\n");
	assert_int_equal(outfile_open(&o, path, &err), 0);
	fputs("new\n", o.f);
	fgetc(o.f); /* reading a write-only stream sets its error flag */
	assert_int_equal(outfile_commit(&o, &err), ERR_IO);
	assert_non_null(strstr(err.msg, "out.txt"));
	assert_content("old\n");
	assert_int_equal(nr_files(), 1);
}

/* /dev/null is written in place, never replaced. */
static void test_device_in_place(void **state UNUSED)
{
	struct error err = ERROR_INIT;
	struct outfile o;
	struct stat st;

	assert_int_equal(outfile_open(&o, "/dev/null", &err), 0);
	assert_null(o.tmp);
	fputs("x", o.f);
	assert_int_equal(outfile_commit(&o, &err), 0);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commit_replaces),
		cmocka_unit_test(test_abort_and_cleanup_keep_old),
		cmocka_unit_test(test_write_error_keeps_old),
		cmocka_unit_test(test_device_in_place),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
