#!/bin/bash
# The agent's layout keeps its one hard rule visible (doc/agent.md, "Where
# the code lives"): what runs in the host's signal handlers and interposed
# calls lives in src/agent/hooks/, includes only the hot-safe headers of
# core/ and the unwinder's walkers, and calls nothing that allocates, locks
# or uses stdio.  Read from the sources, so it needs neither the binary nor
# a build; a file that breaks the rule is named with its line.
. "$(dirname "$0")/lib.sh"
A=$TOP/src/agent

check_py() {
	python3 - "$A" "$1" <<'EOF'
import os, re, sys

root, what = sys.argv[1], sys.argv[2]

def sources(folder):
    """The folder's C files but its tests (the tests hold doubles and may do anything)."""
    d = os.path.join(root, folder)
    for name in sorted(os.listdir(d)):
        if name.endswith(('.c', '.h')) and not name.endswith(('_test.c', '_testutil.h')):
            yield os.path.join(d, name)

def code(path):
    """The file's lines with comments and string and char literals blanked out."""
    text = open(path).read()
    text = re.sub(r'/\*.*?\*/', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    return text.split('\n')

def includes(path):
    for n, line in enumerate(open(path), 1):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if m:
            yield n, m.group(1)

bad = []
rel = lambda p: os.path.relpath(p, os.path.dirname(os.path.dirname(root)))
if what == 'flat':
    bad = [name for name in sorted(os.listdir(root)) if os.path.isfile(os.path.join(root, name))]
elif what == 'hooks-includes':
    # The hot-safe headers: the contract, the thread slots, the rings, the
    # in-use table, the sampling arithmetic and the configuration they read,
    # the hooks' own headers, and the unwinder's walkers.  Not the spinlock
    # (cold paths only), the symbol table, export or the SDK.
    allowed = {'agent/core/agent.h', 'agent/core/config.h', 'agent/core/sampling.h',
               'agent/core/thread.h', 'agent/core/ring.h', 'agent/core/live.h',
               'agent/stack/unwind.h', 'util/banned.h'}
    for p in sources('hooks'):
        for n, inc in includes(p):
            if inc not in allowed and not re.fullmatch(r'agent/hooks/\w+\.h', inc):
                bad.append('%s:%d includes "%s"' % (rel(p), n, inc))
elif what == 'hooks-calls':
    # Calls only: the hooks define malloc, free and pthread_mutex_lock (at
    # the start of a line) and reach the real ones through pointers.
    banned = ['malloc', 'calloc', 'realloc', 'reallocarray', 'free', 'strdup', 'strndup',
              'posix_memalign', 'aligned_alloc', 'memalign', 'valloc', 'pvalloc',
              'pthread_mutex_lock', 'pthread_mutex_timedlock', 'pthread_rwlock_rdlock',
              'pthread_rwlock_wrlock', 'pthread_spin_lock', 'agent_lock',
              'printf', 'fprintf', 'vfprintf', 'puts', 'fputs', 'fopen', 'fwrite', 'perror']
    call = re.compile(r'(?<![\w.>])(%s)\s*\(' % '|'.join(banned))
    for p in sources('hooks'):
        for n, line in enumerate(code(p), 1):
            if not line[:1].isspace():
                continue  # a definition or declaration at file scope
            for m in call.finditer(line):
                bad.append('%s:%d calls %s()' % (rel(p), n, m.group(1)))
elif what == 'below-export':
    # core/ and stack/ are what the hooks and the collector share: they
    # never reach up into the collector, export or the SDK.
    for folder in ('core', 'stack'):
        for p in sources(folder):
            for n, inc in includes(p):
                if re.match(r'agent/(export|sdk)/', inc):
                    bad.append('%s:%d includes "%s"' % (rel(p), n, inc))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
EOF
}

check "src/agent/ holds only its subfolders (hooks, core, stack, export, sdk)" check_py flat
check "src/agent/hooks/ includes only core's hot-safe headers and the unwinder's walkers" \
	check_py hooks-includes
check "src/agent/hooks/ calls nothing that allocates, locks or uses stdio" check_py hooks-calls
check "src/agent/core/ and stack/ include nothing from export/ or sdk/" check_py below-export

# The checks catch what they are for: the thread registry's pthread_create
# allocates (it runs on the host's thread, outside any handler), so it
# would fail as a hook.
mkdir -p "$TMP/agent/hooks" "$TMP/agent/core" "$TMP/agent/stack"
cp "$A/core/thread.c" "$TMP/agent/hooks/"
printf '#include "agent/export/export.h"\n' >"$TMP/agent/hooks/bad.h"
A=$TMP/agent
check_status "... and fails on a hook that calls malloc (core/thread.c as a hook)" 1 check_py hooks-calls
check_status "... and on a hook that includes export/" 1 check_py hooks-includes

done_testing
