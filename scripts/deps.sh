#!/bin/sh
# Install every Debian package plateau's build, tests and benchmarks need,
# then the npm packages the client tests run (pinned by package-lock.json).
# Idempotent and fast when everything is present: dpkg is asked first and
# apt-get runs only for what is missing; npm ci runs only when a test
# package's node_modules is missing or older than its lock file.  Uses
# sudo only when not root.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)

# npm_deps: the real Pyroscope SDKs the client tests push with
# (tests/cli/clients.sh).  The stamp is a copy of the lock file it
# installed, so a changed lock file installs again.
npm_deps() {
	for dir in "$top/tests/clients/node"; do
		stamp=$dir/node_modules/.plateau-installed-lock
		if [ -f "$stamp" ] && cmp -s "$dir/package-lock.json" "$stamp"; then
			continue
		fi
		echo "deps: npm ci in ${dir#"$top"/}" >&2
		npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >&2
		cp "$dir/package-lock.json" "$stamp"
	done
}

PKGS="
build-essential pkg-config meson ninja-build
zlib1g-dev libdeflate-dev libzstd-dev libprotobuf-c-dev protobuf-c-compiler libxxhash-dev
libdw-dev libiberty-dev liblzma-dev xz-utils libc6-dbg elfutils dwz
libcmocka-dev libcurl4-openssl-dev libcjson-dev
libsqlite3-dev libmicrohttpd-dev
clang libclang-rt-14-dev
lld
linux-perf golang-go perl python3 python3-jsonschema time curl
libgoogle-perftools-dev google-perftools heaptrack
libxml2-utils redis-server redis-tools
chromium
"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing="$missing $p"
	fi
done
# The UI tests run node + npm; any node will do (e.g. nodesource's, which bundles npm).
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
if [ -z "$missing" ]; then
	npm_deps
	exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
	SUDO=""
else
	SUDO="sudo"
fi

echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# A new machine's package lists can be empty: refresh them, then install.
$SUDO apt-get update -qq >&2 || true
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2
npm_deps
