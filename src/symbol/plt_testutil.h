/* SPDX-License-Identifier: MIT */
#ifndef PLATEAU_PLT_TESTUTIL_H
#define PLATEAU_PLT_TESTUTIL_H

/*
 * For unit tests: the PLT-stub check both collectors make, `plateau
 * record`'s symbolizer (src/symbol/symbolize_test.c) and the agent's symbol
 * table (src/agent/stack/symtab_test.c).  Expected names come from binutils
 * (objdump labels each stub "x@plt", reading the relocations too; readelf
 * gives the executable PT_LOAD), never from the code under test.
 * Header-only; include it after <cmocka.h>.
 */

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The executable PT_LOAD of FILE, by readelf: its file offset, vaddr and size. */
static inline bool testutil_readelf_text(const char *file, uint64_t *off, uint64_t *vaddr,
					 uint64_t *size)
{
	char cmd[PATH_MAX + 64], line[512];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (!found && fgets(line, sizeof(line), p)) {
		unsigned long o, v, sz;

		found = strstr(line, " R E ") &&
			sscanf(line, " LOAD %lx %lx %*x %lx", &o, &v, &sz) == 3;
		if (found)
			*off = o, *vaddr = v, *size = sz;
	}
	pclose(p);
	return found;
}

/* The collector under test, on one file mapped where its executable PT_LOAD says. */
struct testutil_plt_ops {
	/* Open PATH, its text at [vaddr, vaddr + size) from file offset off. */
	void *(*open)(const char *path, uint64_t off, uint64_t vaddr, uint64_t size);
	/* The name of the code at ELF vaddr ADDR; asserts that the lookup succeeds. */
	const char *(*name)(void *h, uint64_t addr);
	void (*close)(void *h);
};

/*
 * Each PLT stub objdump names "x@plt" is named so by OPS (not "[plt]" for
 * all of them), in a lazy .plt with .plt.got, in an IBT build (.plt.sec,
 * 16-byte .plt.got) and in a non-PIE program; the lazy PLT's header stays
 * "[plt]".  The fixtures are compiled in TMPDIR.
 */
static inline void testutil_plt_stubs(const char *tmpdir, const struct testutil_plt_ops *ops)
{
	static const char *const flags[] = {"", "-fcf-protection=full -Wl,-z,ibtplt", "-no-pie"};
	static const char src[] = "#include <stdio.h>\n#include <string.h>\n#include <stdlib.h>\n"
				  "int main(int c, char **v) { printf(\"%zu\", strlen(v[0]));"
				  " return atoi(c > 1 ? v[1] : \"0\"); }\n";
	char path[PATH_MAX], cmd[3 * PATH_MAX], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/plt.c", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(src, f);
	fclose(f);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		uint64_t off = 0, vaddr = 0, size = 0;
		unsigned named = 0, header = 0;
		void *h;
		FILE *p;

		snprintf(path, sizeof(path), "%s/plt%zu", tmpdir, i);
		snprintf(cmd, sizeof(cmd), "cc -O2 %s -o '%s' '%s/plt.c'", flags[i], path, tmpdir);
		assert_int_equal(system(cmd), 0);
		assert_true(testutil_readelf_text(path, &off, &vaddr, &size));
		h = ops->open(path, off, vaddr, size);
		assert_non_null(h);
		snprintf(cmd, sizeof(cmd), "objdump -d -j .plt -j .plt.sec -j .plt.got '%s'", path);
		p = popen(cmd, "r");
		assert_non_null(p);
		while (fgets(line, sizeof(line), p)) {
			char label[256];
			unsigned long a;
			const char *name;

			if (sscanf(line, "%lx <%255[^>]>:", &a, label) != 2)
				continue;
			name = ops->name(h, a + 4);
			if (strstr(label, "@plt-0x")) { /* the lazy PLT's header */
				assert_string_equal(name, "[plt]");
				header++;
			} else if (strstr(label, "@plt")) {
				assert_string_equal(name, label);
				named++;
			}
		}
		pclose(p);
		/* strlen, printf, atoi's strtol (and a PIE's __cxa_finalize in .plt.got) */
		assert_true(named >= (i == 2 ? 3u : 4u));
		assert_int_equal(header, i == 1 ? 0 : 1);
		ops->close(h);
	}
}

#endif
