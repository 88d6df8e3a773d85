#!/bin/bash
# Run the browser tests of the HTML viewer: node viewer.test.mjs DIR.
# Installs playwright-core (pinned in package-lock.json) into
# tests/ui/node_modules the first time; the browser is Debian's chromium
# (scripts/deps.sh), never one downloaded by playwright.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/node_modules/playwright-core" ]; then
	echo "# installing playwright-core into tests/ui/node_modules" >&2
	npm ci --prefix "$here" --no-audit --no-fund --loglevel=error >&2
fi
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
exec node "$here/viewer.test.mjs" "$@"
