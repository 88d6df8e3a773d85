/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's web UI (doc/ui.md): GET /, /comparison and /diff answer
 * one page, put together once from the assets compiled into the binary
 * (src/server/assets/ui.html, with the HTML viewer's script and the UI's
 * own inlined), so the page loads nothing but the API's answers.  The
 * page reads its view from its path and query string.
 */
#include <pthread.h>
#include <string.h>

#include "util/common.h"
#include "server/http_int.h"

extern const char asset_ui_html[];
extern const size_t asset_ui_html_len;
extern const char asset_ui_js[];
extern const size_t asset_ui_js_len;
extern const char asset_viewer_js[];
extern const size_t asset_viewer_js_len;

static struct strbuf page = STRBUF_INIT;
static pthread_once_t page_once = PTHREAD_ONCE_INIT;

/* ui.html with its markers replaced, in order; page.len 0 when it lacks one. */
static void page_build(void)
{
	static const char *const markers[] = {"@PLATEAU_VIEWER@", "@PLATEAU_UI@"};
	const char *pos = asset_ui_html, *end = pos + asset_ui_html_len;

	for (size_t i = 0; i < ARRAY_SIZE(markers); i++) {
		const char *m = memmem(pos, (size_t)(end - pos), markers[i], strlen(markers[i]));

		if (!m) {
			strbuf_release(&page);
			return;
		}
		strbuf_add(&page, pos, (size_t)(m - pos));
		if (i == 0)
			strbuf_add(&page, asset_viewer_js, asset_viewer_js_len);
		else
			strbuf_add(&page, asset_ui_js, asset_ui_js_len);
		pos = m + strlen(markers[i]);
	}
	strbuf_add(&page, pos, (size_t)(end - pos));
}

enum MHD_Result on_ui(struct server *s, struct MHD_Connection *c, struct request *rq)
{
	struct strbuf out = REPLY_INIT;

	pthread_once(&page_once, page_build);
	if (!page.len)
		return reply_error(s, c, rq, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "the UI's page is missing from this build");
	strbuf_add(&out, page.buf, page.len);
	return reply(s, c, rq, MHD_HTTP_OK, "text/html; charset=utf-8", &out);
}
