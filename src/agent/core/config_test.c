/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "agent/core/config.h"

/* A fake environment: NAME=VALUE pairs, NULL-terminated. */
static const char *fake_getenv(const char *name, void *arg)
{
	const char *const *env = arg;
	size_t len = strlen(name);

	for (; *env; env++)
		if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

static struct agent_config cfg;
static char err[AGENT_ERR_MAX];

/* Parse one variable VAR=VALUE (or none when VAR is NULL). */
static int parse1(const char *var, const char *value)
{
	char buf[8192];
	const char *env[2] = {NULL, NULL};

	if (var) {
		snprintf(buf, sizeof(buf), "%s=%s", var, value);
		env[0] = buf;
	}
	return agent_config_parse(&cfg, fake_getenv, env, "/usr/bin/my-app", err, sizeof(err));
}

/* VAR=VALUE must fail with a one-line message naming VAR, quoting QUOTED and saying WHAT. */
static void expect_error(const char *var, const char *value, const char *quoted, const char *what)
{
	char prefix[512];

	if (parse1(var, value) != -1)
		fail_msg("%s=%s was accepted", var, value);
	snprintf(prefix, sizeof(prefix), "%s: %s ", var, quoted);
	if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, what))
		fail_msg("%s=%s: got message '%s'", var, value, err);
	assert_null(strchr(err, '\n'));
	assert_true(strlen(err) < sizeof(err) - 1);
}

static void test_defaults(void **state)
{
	(void)state;
	assert_int_equal(parse1(NULL, NULL), 0);
	assert_string_equal(err, "");
	assert_int_equal(cfg.modes, AGENT_MODE_CPU);
	assert_int_equal(cfg.hz, 99);
	assert_string_equal(cfg.output, "plateau-%p.pb.gz");
	assert_true(cfg.output_default);
	assert_string_equal(cfg.server, "");
	assert_string_equal(cfg.app, "my-app");
	assert_int_equal(cfg.ntags, 0);
	assert_int_equal(cfg.upload_interval_ms, 10000);
	assert_int_equal(cfg.alloc_rate, 524288);
	assert_int_equal(cfg.lock_threshold_ns, 10000);
}

/* An empty value is the same as unset. */
static void test_empty_is_unset(void **state)
{
	const char *env[] = {"PLATEAU_MODES=",
			     "PLATEAU_HZ=",
			     "PLATEAU_OUTPUT=",
			     "PLATEAU_SERVER=",
			     "PLATEAU_APP=",
			     "PLATEAU_TAGS=",
			     "PLATEAU_UPLOAD_INTERVAL=",
			     "PLATEAU_ALLOC_RATE=",
			     "PLATEAU_LOCK_THRESHOLD=",
			     "PLATEAU_FORK=",
			     "PLATEAU_TENANT=",
			     NULL};

	(void)state;
	assert_int_equal(agent_config_parse(&cfg, fake_getenv, env, "x", err, sizeof(err)), 0);
	assert_int_equal(cfg.modes, AGENT_MODE_CPU);
	assert_int_equal(cfg.hz, 99);
	assert_true(cfg.output_default);
	assert_string_equal(cfg.app, "x");
	assert_string_equal(cfg.token, "");
	assert_string_equal(cfg.tenant, "");
}

static void test_program_name(void **state)
{
	(void)state;
	agent_config_defaults(&cfg, NULL);
	assert_string_equal(cfg.app, "unknown");
	agent_config_defaults(&cfg, "/opt/x/");
	assert_string_equal(cfg.app, "unknown");
	agent_config_defaults(&cfg, "my prog (1)");
	assert_string_equal(cfg.app, "my_prog__1_");
	char name[300];
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	agent_config_defaults(&cfg, name);
	assert_int_equal(strlen(cfg.app), AGENT_APP_MAX);
}

static void test_var_names(void **state)
{
	(void)state;
	assert_string_equal(agent_config_var_name(AGENT_VAR_MODES), "PLATEAU_MODES");
	assert_string_equal(agent_config_var_name(AGENT_VAR_LOCK_THRESHOLD),
			    "PLATEAU_LOCK_THRESHOLD");
	assert_string_equal(agent_config_var_name(AGENT_VAR_TOKEN), "PLATEAU_TOKEN");
	assert_string_equal(agent_config_var_name(AGENT_VAR_TENANT), "PLATEAU_TENANT");
	assert_null(agent_config_var_name(AGENT_VAR_COUNT));
}

static void test_modes(void **state)
{
	(void)state;
	assert_int_equal(parse1("PLATEAU_MODES", "wall"), 0);
	assert_int_equal(cfg.modes, AGENT_MODE_WALL);
	assert_int_equal(parse1("PLATEAU_MODES", "cpu,wall,alloc,lock"), 0);
	assert_int_equal(cfg.modes,
			 AGENT_MODE_CPU | AGENT_MODE_WALL | AGENT_MODE_ALLOC | AGENT_MODE_LOCK);
	assert_int_equal(parse1("PLATEAU_MODES", "lock,alloc,lock"), 0);
	assert_int_equal(cfg.modes, AGENT_MODE_ALLOC | AGENT_MODE_LOCK);
	expect_error("PLATEAU_MODES", "cpu,gpu", "\"cpu,gpu\"", "unknown mode \"gpu\"");
	expect_error("PLATEAU_MODES", "CPU", "\"CPU\"", "unknown mode \"CPU\"");
	expect_error("PLATEAU_MODES", "cpu, wall", "\"cpu, wall\"", "unknown mode \" wall\"");
	expect_error("PLATEAU_MODES", "cpu,", "\"cpu,\"", "empty mode");
	expect_error("PLATEAU_MODES", ",cpu", "\",cpu\"", "empty mode");
	expect_error("PLATEAU_MODES", "cpu,,wall", "\"cpu,,wall\"", "empty mode");
	expect_error("PLATEAU_MODES", "cpuwall", "\"cpuwall\"", "unknown mode");
}

static void test_hz(void **state)
{
	(void)state;
	assert_int_equal(parse1("PLATEAU_HZ", "1"), 0);
	assert_int_equal(cfg.hz, 1);
	assert_int_equal(parse1("PLATEAU_HZ", "1000"), 0);
	assert_int_equal(cfg.hz, 1000);
	assert_int_equal(parse1("PLATEAU_HZ", "0099"), 0);
	assert_int_equal(cfg.hz, 99);
	expect_error("PLATEAU_HZ", "abc", "\"abc\"",
		     "is not a number of samples per second (1..1000)");
	expect_error("PLATEAU_HZ", "0", "\"0\"", "(1..1000)");
	expect_error("PLATEAU_HZ", "1001", "\"1001\"", "(1..1000)");
	expect_error("PLATEAU_HZ", "-5", "\"-5\"", "(1..1000)");
	expect_error("PLATEAU_HZ", "+5", "\"+5\"", "(1..1000)");
	expect_error("PLATEAU_HZ", "99Hz", "\"99Hz\"", "(1..1000)");
	expect_error("PLATEAU_HZ", "9.5", "\"9.5\"", "(1..1000)");
	expect_error("PLATEAU_HZ", "99999999999999999999999", "\"99999999999999999999999\"",
		     "(1..1000)");
}

static void test_whitespace(void **state)
{
	(void)state;
	expect_error("PLATEAU_HZ", " 99", "\" 99\"", "leading or trailing whitespace");
	expect_error("PLATEAU_HZ", "99\n", "\"99\\x0a\"", "leading or trailing whitespace");
	expect_error("PLATEAU_APP", "\tweb", "\"\\x09web\"", "whitespace");
	expect_error("PLATEAU_MODES", " ", "\" \"", "whitespace");
}

static void test_output(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(parse1("PLATEAU_OUTPUT", "/tmp/prof-%p.pb.gz"), 0);
	assert_string_equal(cfg.output, "/tmp/prof-%p.pb.gz");
	assert_false(cfg.output_default);
	assert_string_equal(cfg.server, "");
	assert_int_equal(agent_config_output_path(&cfg, 4242, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp/prof-4242.pb.gz");

	assert_int_equal(parse1("PLATEAU_OUTPUT", "%p/%p-100%%"), 0);
	assert_int_equal(agent_config_output_path(&cfg, 7, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "7/7-100%");
	assert_int_equal(parse1("PLATEAU_OUTPUT", "plain.pb"), 0);
	assert_int_equal(agent_config_output_path(&cfg, 7, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "plain.pb");

	/* The default: plateau-<pid>.pb.gz in the working directory. */
	assert_int_equal(parse1(NULL, NULL), 0);
	assert_int_equal(agent_config_output_path(&cfg, 123, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "plateau-123.pb.gz");

	/* Exactly fitting, one byte short. */
	assert_int_equal(parse1("PLATEAU_OUTPUT", "ab%p"), 0);
	assert_int_equal(agent_config_output_path(&cfg, 12345, buf, 8), 0);
	assert_string_equal(buf, "ab12345");
	assert_int_equal(agent_config_output_path(&cfg, 12345, buf, 7), -1);
	assert_string_equal(buf, "");
	assert_int_equal(agent_config_output_path(&cfg, 12345, buf, 0), -1);

	expect_error("PLATEAU_OUTPUT", "a%d", "\"a%d\"", "not followed by p");
	expect_error("PLATEAU_OUTPUT", "a%", "\"a%\"", "not followed by p");
	expect_error("PLATEAU_OUTPUT", "/tmp/x ", "\"/tmp/x \"", "whitespace");
}

static void test_output_limits(void **state)
{
	static char path[AGENT_PATH_MAX + 1];
	static char out[AGENT_PATH_MAX];

	(void)state;
	memset(path, 'p', AGENT_PATH_MAX - 1);
	path[AGENT_PATH_MAX - 1] = '\0';
	assert_int_equal(parse1("PLATEAU_OUTPUT", path), 0);
	assert_int_equal(strlen(cfg.output), AGENT_PATH_MAX - 1);
	assert_int_equal(agent_config_output_path(&cfg, 1, out, sizeof(out)), 0);
	path[AGENT_PATH_MAX - 1] = 'p';
	path[AGENT_PATH_MAX] = '\0';
	assert_int_equal(parse1("PLATEAU_OUTPUT", path), -1);
	/* The long value is cut with "..." and the message stays one line. */
	assert_non_null(strstr(err, "...\" is longer than 4095 bytes"));
	assert_true(strncmp(err, "PLATEAU_OUTPUT: \"pppp", 21) == 0);
}

static void test_server(void **state)
{
	(void)state;
	assert_int_equal(parse1("PLATEAU_SERVER", "http://127.0.0.1:4040"), 0);
	assert_string_equal(cfg.server, "http://127.0.0.1:4040");
	assert_string_equal(cfg.server_host, "127.0.0.1");
	assert_int_equal(cfg.server_port, 4040);
	assert_string_equal(cfg.server_path, "");
	/* A server alone: no file. */
	assert_string_equal(cfg.output, "");
	assert_false(cfg.output_default);

	assert_int_equal(parse1("PLATEAU_SERVER", "http://prof.example.com"), 0);
	assert_string_equal(cfg.server_host, "prof.example.com");
	assert_int_equal(cfg.server_port, 80);
	assert_int_equal(parse1("PLATEAU_SERVER", "http://h:1/base/path"), 0);
	assert_int_equal(cfg.server_port, 1);
	assert_string_equal(cfg.server_path, "/base/path");
	assert_int_equal(parse1("PLATEAU_SERVER", "http://h:65535/"), 0);
	assert_int_equal(cfg.server_port, 65535);
	assert_string_equal(cfg.server_path, "/");
	assert_int_equal(parse1("PLATEAU_SERVER", "http://[::1]:4040/x"), 0);
	assert_string_equal(cfg.server_host, "::1");
	assert_int_equal(cfg.server_port, 4040);

	expect_error("PLATEAU_SERVER", "https://h", "\"https://h\"", "is not an http:// URL");
	expect_error("PLATEAU_SERVER", "h:4040", "\"h:4040\"", "is not an http:// URL");
	expect_error("PLATEAU_SERVER", "http://", "\"http://\"", "has no host");
	expect_error("PLATEAU_SERVER", "http://:80", "\"http://:80\"", "has no host");
	expect_error("PLATEAU_SERVER", "http://h:0", "\"http://h:0\"",
		     "bad port (expected 1..65535)");
	expect_error("PLATEAU_SERVER", "http://h:65536", "\"http://h:65536\"", "bad port");
	expect_error("PLATEAU_SERVER", "http://h:", "\"http://h:\"", "bad port");
	expect_error("PLATEAU_SERVER", "http://h:80x", "\"http://h:80x\"", "bad character");
	expect_error("PLATEAU_SERVER", "http://u@h", "\"http://u@h\"",
		     "has a user name without a password");
	expect_error("PLATEAU_SERVER", "http://h/a b", "\"http://h/a b\"", "in its path");
	expect_error("PLATEAU_SERVER", "http://h/a#f", "\"http://h/a#f\"", "in its path");
	expect_error("PLATEAU_SERVER", "http://[::1", "\"http://[::1\"", "bad IPv6");
	expect_error("PLATEAU_SERVER", "http://[]", "\"http://[]\"", "bad IPv6");
}

static void test_server_limits(void **state)
{
	static char url[AGENT_URL_MAX + 1];
	size_t n;

	(void)state;
	n = (size_t)snprintf(url, sizeof(url), "http://h/");
	memset(url + n, 'a', AGENT_URL_MAX - 1 - n);
	url[AGENT_URL_MAX - 1] = '\0';
	assert_int_equal(parse1("PLATEAU_SERVER", url), 0);
	assert_int_equal(strlen(cfg.server), AGENT_URL_MAX - 1);
	url[AGENT_URL_MAX - 1] = 'a';
	url[AGENT_URL_MAX] = '\0';
	assert_int_equal(parse1("PLATEAU_SERVER", url), -1);
	assert_non_null(strstr(err, "is longer than 2047 bytes"));

	/* Host of 255 characters fits, 256 does not. */
	n = (size_t)snprintf(url, sizeof(url), "http://");
	memset(url + n, 'h', AGENT_HOST_MAX - 1);
	url[n + AGENT_HOST_MAX - 1] = '\0';
	assert_int_equal(parse1("PLATEAU_SERVER", url), 0);
	url[n + AGENT_HOST_MAX - 1] = 'h';
	url[n + AGENT_HOST_MAX] = '\0';
	assert_int_equal(parse1("PLATEAU_SERVER", url), -1);
	assert_non_null(strstr(err, "host longer than 255 bytes"));
}

/* Both set: a file and a push. */
static void test_output_and_server(void **state)
{
	const char *env[] = {"PLATEAU_OUTPUT=p.pb", "PLATEAU_SERVER=http://h", NULL};

	(void)state;
	assert_int_equal(agent_config_parse(&cfg, fake_getenv, env, "x", err, sizeof(err)), 0);
	assert_string_equal(cfg.output, "p.pb");
	assert_string_equal(cfg.server, "http://h");
	assert_false(cfg.output_default);
}

static void test_app(void **state)
{
	char name[AGENT_APP_MAX + 2];

	(void)state;
	assert_int_equal(parse1("PLATEAU_APP", "checkout-svc.v2_eu"), 0);
	assert_string_equal(cfg.app, "checkout-svc.v2_eu");
	memset(name, 'a', AGENT_APP_MAX);
	name[AGENT_APP_MAX] = '\0';
	assert_int_equal(parse1("PLATEAU_APP", name), 0);
	assert_int_equal(strlen(cfg.app), AGENT_APP_MAX);
	name[AGENT_APP_MAX] = 'a';
	name[AGENT_APP_MAX + 1] = '\0';
	assert_int_equal(parse1("PLATEAU_APP", name), -1);
	assert_non_null(strstr(err, "is not an app name ([A-Za-z0-9._-], 1..100 characters)"));
	expect_error("PLATEAU_APP", "my app", "\"my app\"", "is not an app name");
	expect_error("PLATEAU_APP", "app{x}", "\"app{x}\"", "is not an app name");
	expect_error("PLATEAU_APP", "caf\xc3\xa9", "\"caf\\xc3\\xa9\"", "is not an app name");
}

static void test_tags(void **state)
{
	(void)state;
	assert_int_equal(parse1("PLATEAU_TAGS", "region=eu-west,_tier2=gold"), 0);
	assert_int_equal(cfg.ntags, 2);
	assert_string_equal(cfg.tags[0].key, "region");
	assert_string_equal(cfg.tags[0].value, "eu-west");
	assert_string_equal(cfg.tags[1].key, "_tier2");
	assert_string_equal(cfg.tags[1].value, "gold");
	assert_int_equal(parse1("PLATEAU_TAGS", "path=/a b/c"), 0);
	assert_string_equal(cfg.tags[0].value, "/a b/c");

	expect_error("PLATEAU_TAGS", "a=1,", "\"a=1,\"", "empty tag");
	expect_error("PLATEAU_TAGS", "a=1,,b=2", "\"a=1,,b=2\"", "empty tag");
	expect_error("PLATEAU_TAGS", "a", "\"a\"", "tag \"a\" without '='");
	expect_error("PLATEAU_TAGS", "a=", "\"a=\"", "bad value for tag \"a\"");
	expect_error("PLATEAU_TAGS", "a=b=c", "\"a=b=c\"", "bad value for tag \"a\"");
	expect_error("PLATEAU_TAGS", "=v", "\"=v\"", "tag key \"\"");
	expect_error("PLATEAU_TAGS", "1a=v", "\"1a=v\"", "tag key \"1a\"");
	expect_error("PLATEAU_TAGS", "a-b=v", "\"a-b=v\"", "tag key \"a-b\"");
	expect_error("PLATEAU_TAGS", "a=1,b=2,a=3", "\"a=1,b=2,a=3\"", "tag key \"a\" twice");
	expect_error("PLATEAU_TAGS", "a=x\x01y", "\"a=x\\x01y\"", "control character");
}

static void test_tag_limits(void **state)
{
	char buf[1024], key[AGENT_TAG_KEY_MAX + 2], val[AGENT_TAG_VALUE_MAX + 2];
	size_t n = 0;
	int i;

	(void)state;
	for (i = 0; i < AGENT_TAGS_MAX; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%sk%d=v", i ? "," : "", i);
	assert_int_equal(parse1("PLATEAU_TAGS", buf), 0);
	assert_int_equal(cfg.ntags, AGENT_TAGS_MAX);
	assert_string_equal(cfg.tags[15].key, "k15");
	snprintf(buf + n, sizeof(buf) - n, ",k16=v");
	assert_int_equal(parse1("PLATEAU_TAGS", buf), -1);
	assert_non_null(strstr(err, "has more than 16 tags"));

	memset(key, 'k', AGENT_TAG_KEY_MAX);
	key[AGENT_TAG_KEY_MAX] = '\0';
	snprintf(buf, sizeof(buf), "%s=v", key);
	assert_int_equal(parse1("PLATEAU_TAGS", buf), 0);
	assert_int_equal(strlen(cfg.tags[0].key), AGENT_TAG_KEY_MAX);
	snprintf(buf, sizeof(buf), "%sk=v", key);
	assert_int_equal(parse1("PLATEAU_TAGS", buf), -1);
	assert_non_null(strstr(err, "has tag key"));

	memset(val, 'v', AGENT_TAG_VALUE_MAX);
	val[AGENT_TAG_VALUE_MAX] = '\0';
	snprintf(buf, sizeof(buf), "k=%s", val);
	assert_int_equal(parse1("PLATEAU_TAGS", buf), 0);
	assert_int_equal(strlen(cfg.tags[0].value), AGENT_TAG_VALUE_MAX);
	snprintf(buf, sizeof(buf), "k=%sv", val);
	assert_int_equal(parse1("PLATEAU_TAGS", buf), -1);
	assert_non_null(strstr(err, "bad value for tag \"k\""));
}

static void test_upload_interval(void **state)
{
	(void)state;
	assert_int_equal(parse1("PLATEAU_UPLOAD_INTERVAL", "1s"), 0);
	assert_int_equal(cfg.upload_interval_ms, 1000);
	assert_int_equal(parse1("PLATEAU_UPLOAD_INTERVAL", "1000ms"), 0);
	assert_int_equal(cfg.upload_interval_ms, 1000);
	assert_int_equal(parse1("PLATEAU_UPLOAD_INTERVAL", "60m"), 0);
	assert_int_equal(cfg.upload_interval_ms, 3600000);
	assert_int_equal(parse1("PLATEAU_UPLOAD_INTERVAL", "3600s"), 0);
	assert_int_equal(cfg.upload_interval_ms, 3600000);
	assert_int_equal(parse1("PLATEAU_UPLOAD_INTERVAL", "90s"), 0);
	assert_int_equal(cfg.upload_interval_ms, 90000);
	/* The one grammar (util/duration.h): fractions, compound durations, hours. */
	assert_int_equal(parse1("PLATEAU_UPLOAD_INTERVAL", "1.5s"), 0);
	assert_int_equal(cfg.upload_interval_ms, 1500);
	assert_int_equal(parse1("PLATEAU_UPLOAD_INTERVAL", "1m30s"), 0);
	assert_int_equal(cfg.upload_interval_ms, 90000);
	assert_int_equal(parse1("PLATEAU_UPLOAD_INTERVAL", "1h"), 0);
	assert_int_equal(cfg.upload_interval_ms, 3600000);
	const char *what = "is not a duration from 1s to 1h (units ms, s, m; e.g. 10s)";
	expect_error("PLATEAU_UPLOAD_INTERVAL", "999ms", "\"999ms\"", what);
	expect_error("PLATEAU_UPLOAD_INTERVAL", "3600001ms", "\"3600001ms\"", what);
	expect_error("PLATEAU_UPLOAD_INTERVAL", "61m", "\"61m\"", what);
	expect_error("PLATEAU_UPLOAD_INTERVAL", "0s", "\"0s\"", what);
	expect_error("PLATEAU_UPLOAD_INTERVAL", "10", "\"10\"", what);
	expect_error("PLATEAU_UPLOAD_INTERVAL", "10h", "\"10h\"", what);
	expect_error("PLATEAU_UPLOAD_INTERVAL", "0.5s", "\"0.5s\"", what);
	expect_error("PLATEAU_UPLOAD_INTERVAL", "s", "\"s\"", what);
	expect_error("PLATEAU_UPLOAD_INTERVAL", "10 s", "\"10 s\"", what);
	expect_error("PLATEAU_UPLOAD_INTERVAL", "99999999999999999999m",
		     "\"99999999999999999999m\"", what);
	expect_error("PLATEAU_UPLOAD_INTERVAL", "18446744073709552m", "\"18446744073709552m\"",
		     what);
}

static void test_alloc_rate(void **state)
{
	(void)state;
	assert_int_equal(parse1("PLATEAU_ALLOC_RATE", "1"), 0);
	assert_int_equal(cfg.alloc_rate, 1);
	assert_int_equal(parse1("PLATEAU_ALLOC_RATE", "512KiB"), 0);
	assert_int_equal(cfg.alloc_rate, 524288);
	assert_int_equal(parse1("PLATEAU_ALLOC_RATE", "64k"), 0);
	assert_int_equal(cfg.alloc_rate, 65536);
	assert_int_equal(parse1("PLATEAU_ALLOC_RATE", "2MiB"), 0);
	assert_int_equal(cfg.alloc_rate, 2 << 20);
	assert_int_equal(parse1("PLATEAU_ALLOC_RATE", "3m"), 0);
	assert_int_equal(cfg.alloc_rate, 3 << 20);
	assert_int_equal(parse1("PLATEAU_ALLOC_RATE", "1024MiB"), 0);
	assert_int_equal(cfg.alloc_rate, 1 << 30);
	assert_int_equal(parse1("PLATEAU_ALLOC_RATE", "1073741824"), 0);
	assert_int_equal(cfg.alloc_rate, 1 << 30);
	const char *what = "is not a number of bytes from 1 to 1GiB";
	expect_error("PLATEAU_ALLOC_RATE", "0", "\"0\"", what);
	expect_error("PLATEAU_ALLOC_RATE", "0KiB", "\"0KiB\"", what);
	expect_error("PLATEAU_ALLOC_RATE", "1073741825", "\"1073741825\"", what);
	expect_error("PLATEAU_ALLOC_RATE", "1025MiB", "\"1025MiB\"", what);
	assert_int_equal(parse1("PLATEAU_ALLOC_RATE", "1GiB"), 0);
	assert_int_equal(cfg.alloc_rate, 1 << 30);
	assert_int_equal(parse1("PLATEAU_ALLOC_RATE", "1g"), 0);
	expect_error("PLATEAU_ALLOC_RATE", "2GiB", "\"2GiB\"", what);
	expect_error("PLATEAU_ALLOC_RATE", "512kb", "\"512kb\"", what);
	expect_error("PLATEAU_ALLOC_RATE", "KiB", "\"KiB\"", what);
	expect_error("PLATEAU_ALLOC_RATE", "-1", "\"-1\"", what);
	expect_error("PLATEAU_ALLOC_RATE", "18014398509481985KiB", "\"18014398509481985KiB\"",
		     what);
}

static void test_lock_threshold(void **state)
{
	(void)state;
	assert_int_equal(parse1("PLATEAU_LOCK_THRESHOLD", "0ns"), 0);
	assert_int_equal(cfg.lock_threshold_ns, 0);
	assert_int_equal(parse1("PLATEAU_LOCK_THRESHOLD", "0s"), 0);
	assert_int_equal(cfg.lock_threshold_ns, 0);
	assert_int_equal(parse1("PLATEAU_LOCK_THRESHOLD", "250ns"), 0);
	assert_int_equal(cfg.lock_threshold_ns, 250);
	assert_int_equal(parse1("PLATEAU_LOCK_THRESHOLD", "5us"), 0);
	assert_int_equal(cfg.lock_threshold_ns, 5000);
	assert_int_equal(parse1("PLATEAU_LOCK_THRESHOLD", "2ms"), 0);
	assert_int_equal(cfg.lock_threshold_ns, 2000000);
	assert_int_equal(parse1("PLATEAU_LOCK_THRESHOLD", "10s"), 0);
	assert_int_equal(cfg.lock_threshold_ns, 10000000000);
	assert_int_equal(parse1("PLATEAU_LOCK_THRESHOLD", "10000000000ns"), 0);
	/* The one grammar (util/duration.h): zero alone, fractions. */
	assert_int_equal(parse1("PLATEAU_LOCK_THRESHOLD", "0"), 0);
	assert_int_equal(cfg.lock_threshold_ns, 0);
	assert_int_equal(parse1("PLATEAU_LOCK_THRESHOLD", "1.5us"), 0);
	assert_int_equal(cfg.lock_threshold_ns, 1500);
	const char *what = "is not a duration from 0 to 10s (units ns, us, ms, s; e.g. 10us)";
	expect_error("PLATEAU_LOCK_THRESHOLD", "10000000001ns", "\"10000000001ns\"", what);
	expect_error("PLATEAU_LOCK_THRESHOLD", "11s", "\"11s\"", what);
	expect_error("PLATEAU_LOCK_THRESHOLD", "10", "\"10\"", what);
	expect_error("PLATEAU_LOCK_THRESHOLD", "10m", "\"10m\"", what);
	expect_error("PLATEAU_LOCK_THRESHOLD", "10\xc2\xb5s", "\"10\\xc2\\xb5s\"", what);
	expect_error("PLATEAU_LOCK_THRESHOLD", "-1us", "\"-1us\"", what);
}

static void test_fork(void **state)
{
	(void)state;
	assert_int_equal(parse1("PLATEAU_FORK", "off"), 0);
	assert_true(cfg.fork_off);
	assert_int_equal(parse1("PLATEAU_FORK", "profile"), 0);
	assert_false(cfg.fork_off);
	agent_config_defaults(&cfg, "x");
	assert_false(cfg.fork_off);
	expect_error("PLATEAU_FORK", "no", "\"no\"", "is not profile or off");
	expect_error("PLATEAU_FORK", "OFF", "\"OFF\"", "is not profile or off");
}

/* The first bad variable is reported; the message never overflows ERR. */
/* VAR=VALUE must fail with "VAR: WHAT" and no trace of SECRET. */
static void expect_secret_error(const char *var, const char *value, const char *secret,
				const char *what)
{
	if (parse1(var, value) != -1)
		fail_msg("%s was accepted", var);
	if (strncmp(err, var, strlen(var)) != 0 || !strstr(err, what))
		fail_msg("%s: got message '%s'", var, err);
	if (strstr(err, secret))
		fail_msg("%s: the secret is in the message '%s'", var, err);
	assert_null(strchr(err, '\n'));
}

static void test_server_user_info(void **state)
{
	(void)state;
	assert_int_equal(parse1("PLATEAU_SERVER", "http://123456:glc_s3cr3t@h:4040/p"), 0);
	assert_string_equal(cfg.server_user, "123456");
	assert_string_equal(cfg.server_password, "glc_s3cr3t");
	assert_string_equal(cfg.server_host, "h");
	assert_int_equal(cfg.server_port, 4040);
	assert_string_equal(cfg.server_path, "/p");
	/* The URL kept for messages has no password. */
	assert_string_equal(cfg.server, "http://123456:***@h:4040/p");

	/* Percent escapes are decoded; ':' after the first belongs to the password. */
	assert_int_equal(parse1("PLATEAU_SERVER", "http://a%40b:p%2F%3A@[::1]:1"), 0);
	assert_string_equal(cfg.server_user, "a@b");
	assert_string_equal(cfg.server_password, "p/:");
	assert_string_equal(cfg.server_host, "::1");
	assert_int_equal(parse1("PLATEAU_SERVER", "http://u:a:b@h"), 0);
	assert_string_equal(cfg.server_password, "a:b");
	assert_string_equal(cfg.server, "http://u:***@h");
	assert_int_equal(parse1("PLATEAU_SERVER", "http://:pw@h"), 0);
	assert_string_equal(cfg.server_user, "");
	assert_string_equal(cfg.server_password, "pw");
	assert_int_equal(parse1("PLATEAU_SERVER", "http://h"), 0);
	assert_string_equal(cfg.server_user, "");
	assert_string_equal(cfg.server_password, "");

	/* Errors quote the URL with the password as ***. */
	expect_error("PLATEAU_SERVER", "http://u:hunter22@h:0", "\"http://u:***@h:0\"", "bad port");
	expect_error("PLATEAU_SERVER", "https://u:hunter22@h", "\"https://u:***@h\"",
		     "is not an http:// URL");
	expect_error("PLATEAU_SERVER", "u:hunter22@h:4040", "\"u:***@h:4040\"",
		     "is not an http:// URL");
	expect_error("PLATEAU_SERVER", " http://u:hunter22@h", "\" http://u:***@h\"", "whitespace");
	expect_error("PLATEAU_SERVER", "http://u:@h", "\"http://u:***@h\"", "empty password");
	expect_error("PLATEAU_SERVER", "http://u:hunter 22@h", "\"http://u:***@h\"",
		     "bad character or % escape in its user info");
	expect_error("PLATEAU_SERVER", "http://u:hunter%2@h", "\"http://u:***@h\"", "% escape");
	expect_error("PLATEAU_SERVER", "http://u:a@b@h", "\"http://u:***@h\"", "% escape");
	expect_error("PLATEAU_SERVER", "http://u:hunter%0d%0a22@h", "\"http://u:***@h\"",
		     "control character in its user name or password");
	expect_error("PLATEAU_SERVER", "http://u%3Av:pw@h", "\"http://u%3Av:***@h\"", "% escape");
}

static void test_server_user_limits(void **state)
{
	static char url[AGENT_URL_MAX + 16];
	size_t n;

	(void)state;
	/* A user name of 256 bytes fits, 257 does not. */
	n = (size_t)snprintf(url, sizeof(url), "http://");
	memset(url + n, 'u', AGENT_USER_MAX);
	snprintf(url + n + AGENT_USER_MAX, sizeof(url) - n - AGENT_USER_MAX, ":pw@h");
	assert_int_equal(parse1("PLATEAU_SERVER", url), 0);
	assert_int_equal(strlen(cfg.server_user), AGENT_USER_MAX);
	memset(url + n, 'u', AGENT_USER_MAX + 1);
	snprintf(url + n + AGENT_USER_MAX + 1, sizeof(url) - n - AGENT_USER_MAX - 1, ":pw@h");
	assert_int_equal(parse1("PLATEAU_SERVER", url), -1);
	assert_non_null(strstr(err, "user name longer than 256 bytes"));

	/* A password as long as the URL allows: its redacted form is shorter. */
	n = (size_t)snprintf(url, sizeof(url), "http://u:");
	memset(url + n, 'p', AGENT_URL_MAX - 1 - n - 2);
	snprintf(url + AGENT_URL_MAX - 3, 3, "@h");
	assert_int_equal(strlen(url), AGENT_URL_MAX - 1);
	assert_int_equal(parse1("PLATEAU_SERVER", url), 0);
	assert_string_equal(cfg.server, "http://u:***@h");
	assert_int_equal(strlen(cfg.server_password), AGENT_URL_MAX - 1 - 9 - 2);
}

static void test_token(void **state)
{
	static char tok[AGENT_TOKEN_MAX + 2];

	(void)state;
	assert_int_equal(parse1("PLATEAU_TOKEN", "glc_eyJvIjoiMTIzIn0=+/~._-"), 0);
	assert_string_equal(cfg.token, "glc_eyJvIjoiMTIzIn0=+/~._-");
	memset(tok, 'T', AGENT_TOKEN_MAX);
	tok[AGENT_TOKEN_MAX] = '\0';
	assert_int_equal(parse1("PLATEAU_TOKEN", tok), 0);
	assert_int_equal(strlen(cfg.token), AGENT_TOKEN_MAX);

	/* Bad values name the variable and never show the token. */
	tok[AGENT_TOKEN_MAX] = 'T';
	tok[AGENT_TOKEN_MAX + 1] = '\0';
	expect_secret_error("PLATEAU_TOKEN", tok, "TTTTTTTT", "is longer than 4096 bytes");
	expect_secret_error("PLATEAU_TOKEN", "s3cr3t-t0k3n\r\nX-Evil: 1", "s3cr3t",
			    "control character or non-ASCII byte at byte 13");
	expect_secret_error("PLATEAU_TOKEN", "s3cr3t\x01t0k3n", "s3cr3t", "at byte 7");
	expect_secret_error("PLATEAU_TOKEN", "s3cr3t t0k3n", "s3cr3t", "at byte 7");
	expect_secret_error("PLATEAU_TOKEN", "s3cr3t\xc3\xa9", "s3cr3t", "non-ASCII");
	expect_secret_error("PLATEAU_TOKEN", "s3cr3t-t0k3n\n", "s3cr3t", "trailing whitespace");
	expect_secret_error("PLATEAU_TOKEN", "", "\"", "is set but empty");
	assert_string_equal(err, "PLATEAU_TOKEN: is set but empty (unset it to push without a "
				 "token)");
}

/* A token and a password both: which one would be sent? Refused. */
static void test_token_and_password(void **state)
{
	const char *both[] = {"PLATEAU_SERVER=http://u:pw-s3cr3t@h", "PLATEAU_TOKEN=t0k3n-s3cr3t",
			      NULL};
	const char *user_only[] = {"PLATEAU_SERVER=http://h", "PLATEAU_TOKEN=t0k3n-s3cr3t", NULL};

	(void)state;
	assert_int_equal(agent_config_parse(&cfg, fake_getenv, both, "x", err, sizeof(err)), -1);
	assert_string_equal(err, "PLATEAU_TOKEN: is set and PLATEAU_SERVER has a user:password: "
				 "use one of them");
	assert_int_equal(agent_config_parse(&cfg, fake_getenv, user_only, "x", err, sizeof(err)),
			 0);
	assert_string_equal(cfg.token, "t0k3n-s3cr3t");
}

static void test_tenant(void **state)
{
	static char t[AGENT_TENANT_MAX + 2];

	(void)state;
	assert_int_equal(parse1("PLATEAU_TENANT", "team-a_1.prod!*'()"), 0);
	assert_string_equal(cfg.tenant, "team-a_1.prod!*'()");
	memset(t, 't', AGENT_TENANT_MAX);
	assert_int_equal(parse1("PLATEAU_TENANT", t), 0);
	assert_int_equal(strlen(cfg.tenant), AGENT_TENANT_MAX);
	t[AGENT_TENANT_MAX] = 't';
	assert_int_equal(parse1("PLATEAU_TENANT", t), -1);
	expect_error("PLATEAU_TENANT", "a/b", "\"a/b\"", "is not a tenant ID");
	expect_error("PLATEAU_TENANT", "a\r\nb", "\"a\\x0d\\x0ab\"", "is not a tenant ID");
	expect_error("PLATEAU_TENANT", "..", "\"..\"", "not . or ..");
	expect_error("PLATEAU_TENANT", ".", "\".\"", "is not a tenant ID");
}

static void test_error_buffer(void **state)
{
	const char *env[] = {"PLATEAU_HZ=x", "PLATEAU_APP=a b", NULL};
	char small[16];

	(void)state;
	assert_int_equal(agent_config_parse(&cfg, fake_getenv, env, "x", err, sizeof(err)), -1);
	assert_string_equal(err,
			    "PLATEAU_HZ: \"x\" is not a number of samples per second (1..1000)");
	assert_int_equal(agent_config_parse(&cfg, fake_getenv, env, "x", small, sizeof(small)), -1);
	assert_string_equal(small, "PLATEAU_HZ: \"x\"");
	assert_int_equal(agent_config_parse(&cfg, fake_getenv, env, "x", NULL, 0), -1);

	/* Quotes and backslashes are escaped. */
	expect_error("PLATEAU_MODES", "a\"b\\c", "\"a\\\"b\\\\c\"", "unknown mode");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_empty_is_unset),
		cmocka_unit_test(test_program_name),
		cmocka_unit_test(test_var_names),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_hz),
		cmocka_unit_test(test_whitespace),
		cmocka_unit_test(test_output),
		cmocka_unit_test(test_output_limits),
		cmocka_unit_test(test_server),
		cmocka_unit_test(test_server_limits),
		cmocka_unit_test(test_output_and_server),
		cmocka_unit_test(test_app),
		cmocka_unit_test(test_tags),
		cmocka_unit_test(test_tag_limits),
		cmocka_unit_test(test_upload_interval),
		cmocka_unit_test(test_alloc_rate),
		cmocka_unit_test(test_lock_threshold),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_error_buffer),
		cmocka_unit_test(test_server_user_info),
		cmocka_unit_test(test_server_user_limits),
		cmocka_unit_test(test_token),
		cmocka_unit_test(test_token_and_password),
		cmocka_unit_test(test_tenant),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
