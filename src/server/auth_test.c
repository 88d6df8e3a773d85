/* SPDX-License-Identifier: MIT */
/* server_auth_allows: Bearer and Basic (the password is the token), scopes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "server/server.h"

static char write_token[] = "w-secret.123", read_token[] = "r-secret/456=";
static struct server_token tokens[] = {
	{write_token, SCOPE_WRITE},
	{read_token, SCOPE_READ},
};
static const struct server_config cfg = {.tokens = tokens, .ntokens = 2};

static void test_no_tokens(void **state)
{
	struct server_config open = {0};

	(void)state;
	assert_true(server_auth_allows(&open, NULL, SCOPE_WRITE));
	assert_true(server_auth_allows(&open, "Bearer anything", SCOPE_READ));
}

static void test_bearer(void **state)
{
	(void)state;
	assert_true(server_auth_allows(&cfg, "Bearer w-secret.123", SCOPE_WRITE));
	assert_true(server_auth_allows(&cfg, "bearer w-secret.123", SCOPE_WRITE));
	assert_true(server_auth_allows(&cfg, "BEARER w-secret.123", SCOPE_WRITE));
	/* White space: a tab, several, and trailing (optional white space in a header). */
	assert_true(server_auth_allows(&cfg, "bEaReR\tw-secret.123", SCOPE_WRITE));
	assert_true(server_auth_allows(&cfg, "Bearer  \t w-secret.123", SCOPE_WRITE));
	assert_true(server_auth_allows(&cfg, "bearer w-secret.123 \t", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Bearerw-secret.123", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Bearer w-secret.123 x", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Bearer \t ", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Bear w-secret.123", SCOPE_WRITE));
	assert_true(server_auth_allows(&cfg, "Bearer r-secret/456=", SCOPE_READ));
	assert_false(server_auth_allows(&cfg, "Bearer w-secret.123", SCOPE_READ));
	assert_false(server_auth_allows(&cfg, "Bearer r-secret/456=", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Bearer w-secret.12", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Bearer w-secret.1234", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Bearer ", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "w-secret.123", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, NULL, SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Token w-secret.123", SCOPE_WRITE));
}

static void test_basic(void **state)
{
	(void)state;
	/* base64("123456:w-secret.123"): a Grafana Cloud style user, the token as password */
	assert_true(server_auth_allows(&cfg, "Basic MTIzNDU2Onctc2VjcmV0LjEyMw==", SCOPE_WRITE));
	assert_true(server_auth_allows(&cfg, "basic MTIzNDU2Onctc2VjcmV0LjEyMw", SCOPE_WRITE));
	assert_true(server_auth_allows(&cfg, "BASIC\tMTIzNDU2Onctc2VjcmV0LjEyMw== ", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Basic MTIzNDU2Onctc2VjcmV0LjEyMw==", SCOPE_READ));
	/* base64(":r-secret/456="): no user name */
	assert_true(server_auth_allows(&cfg, "Basic OnItc2VjcmV0LzQ1Nj0=", SCOPE_READ));
	/* base64("w-secret.123:x"): the token as the user name is not enough */
	assert_false(server_auth_allows(&cfg, "Basic dy1zZWNyZXQuMTIzOng=", SCOPE_WRITE));
	/* base64("w-secret.123"): no colon */
	assert_false(server_auth_allows(&cfg, "Basic dy1zZWNyZXQuMTIz", SCOPE_WRITE));
	/* base64("u:w-secret.12") and base64("u:w-secret.123x") */
	assert_false(server_auth_allows(&cfg, "Basic dTp3LXNlY3JldC4xMg==", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Basic dTp3LXNlY3JldC4xMjN4", SCOPE_WRITE));
	/* malformed base64 */
	assert_false(server_auth_allows(&cfg, "Basic MTIzNDU2Onctc2Vj*mV0LjEyMw==", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Basic M", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Basic MTIz===", SCOPE_WRITE));
	assert_false(server_auth_allows(&cfg, "Basic ", SCOPE_WRITE));
}

static void test_basic_too_long(void **state)
{
	static char h[4000];
	size_t n;

	(void)state;
	n = (size_t)snprintf(h, sizeof(h), "Basic ");
	memset(h + n, 'A', sizeof(h) - n - 1);
	assert_false(server_auth_allows(&cfg, h, SCOPE_WRITE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_tokens),
		cmocka_unit_test(test_bearer),
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_basic_too_long),
	};

	return cmocka_run_group_tests_name("server_auth", tests, NULL, NULL);
}
