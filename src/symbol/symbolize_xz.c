/* SPDX-License-Identifier: MIT */
#include <lzma.h>

#include "util/common.h"
#include "symbol/symbolize_elf.h"

/*
 * MiniDebugInfo: a .gnu_debugdata section holding an xz-compressed ELF
 * whose .symtab has the function symbols that .dynsym lacks (Fedora and
 * others ship it in place of a full debug package).
 */

#define MAX_MINIDEBUG (64u << 20) /* decompressed bytes */
#define XZ_MEMLIMIT   (128u << 20)

/* Decompress xz[0..size) into a new buffer (caller frees); NULL if bad or too big. */
static unsigned char *xz_decode(const void *xz, size_t size, size_t *out_len)
{
	lzma_stream st = LZMA_STREAM_INIT;
	unsigned char *buf = NULL;
	size_t alloc = 0;
	lzma_ret ret = LZMA_OK;

	if (lzma_stream_decoder(&st, XZ_MEMLIMIT, 0) != LZMA_OK)
		return NULL;
	st.next_in = xz;
	st.avail_in = size;
	while (ret == LZMA_OK) {
		if (!st.avail_out) {
			size_t used = alloc;

			if (alloc >= MAX_MINIDEBUG)
				break;
			alloc = alloc ? alloc * 2 : 1u << 16;
			buf = xrealloc(buf, alloc);
			st.next_out = buf + used;
			st.avail_out = alloc - used;
		}
		ret = lzma_code(&st, LZMA_FINISH);
	}
	*out_len = alloc - st.avail_out;
	lzma_end(&st);
	if (ret != LZMA_STREAM_END) {
		free(buf);
		return NULL;
	}
	return buf;
}

Elf *sym_minidebug_open(const void *xz, size_t size, void **buf)
{
	size_t len = 0;
	unsigned char *raw = xz_decode(xz, size, &len);
	Elf *elf = raw ? elf_memory((char *)raw, len) : NULL;
	GElf_Ehdr eh;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || eh.e_shoff > len ||
	    (uint64_t)eh.e_shnum * eh.e_shentsize > len - eh.e_shoff) {
		elf_end(elf);
		free(raw);
		return NULL;
	}
	*buf = raw;
	return elf;
}
