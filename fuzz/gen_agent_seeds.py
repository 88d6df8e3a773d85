#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpora of fuzz/fuzz_agentsymtab.c and fuzz/fuzz_agentcfi.c.

agentsymtab: gen_elf_seeds.py's three-function program (and a shared
library with versioned, aliased and unsized symbols) linked in several
shapes, some edited by hand (build-id only in a section, more than
SHN_LORESERVE sections spelled the extended way, truncated), two with
their debug file appended (found through a debuglink "200", by build-id
and by CRC), each behind the target's 16-byte header: the executable
segment's file offset in pages and its length in pages - 1, flags, a
word pick, the address of alpha (or of another symbol), the file's
length when a debug file follows.

agentcfi: .eh_frame sections of small programs (objcopy -O binary
--only-section=.eh_frame) behind the target's 9-byte header (flags, the
code's start relative to .eh_frame, its length), whole small ELF files
(flag 1), and hand-assembled CIEs and FDEs for what compilers rarely
emit: a signal frame, the lazy PLT's expression, DRAP expressions,
remember/restore overflow, 64-bit lengths, version 3, every pointer
encoding and DW_CFA_* op, and malformed entries.

Every build-id is random, so nothing under /usr/lib/debug matches; each
seed stays under 16 KiB.  Needs gcc, g++, clang, binutils, llvm-nm.

    fuzz/gen_agent_seeds.py [SYMTAB_OUTDIR CFI_OUTDIR]
"""
import importlib.util
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("gen_elf_seeds",
                                               os.path.join(HERE, "gen_elf_seeds.py"))
elf_seeds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(elf_seeds)

SEED_MAX = 16 * 1024
SMALL = ["-Wl,-z,noseparate-code", "-Wl,-z,norelro"]  # fewer page-aligned segments

LIB_SOURCE = r"""/* Versioned, aliased, local and unsized symbols: the agentsymtab library seed. */
static volatile int sink;

__attribute__((noinline)) int alpha(int x)
{
	for (int i = 0; i < x; i++)
		sink += i;
	return sink;
}

__attribute__((noinline)) int beta_v1(int x) { return alpha(x) + 1; }
__attribute__((noinline)) int beta_v2(int x) { return alpha(x) + 2; }
__asm__(".symver beta_v1, beta@V1");
__asm__(".symver beta_v2, beta@@V2");

__attribute__((noinline)) int __gamma_impl(int x) { return beta_v2(x) ^ alpha(x + 1); }
extern int gamma_fn(int) __attribute__((alias("__gamma_impl")));
extern int gamma_weak(int) __attribute__((weak, alias("__gamma_impl")));

/* No .size: extends to the next symbol; inner_entry sits inside outer. */
__asm__(".text\n.globl outer\n.type outer, @function\nouter:\n"
	"	nop\n	nop\n"
	".globl inner_entry\n.type inner_entry, @function\ninner_entry:\n"
	"	nop\n	ret\n.size outer, .-outer\n"
	".type unsized, @function\nunsized:\n	ret\n");
"""

LIB_VERSIONS = "V1 { global: alpha; beta; gamma_fn; gamma_weak; outer; inner_entry; " \
               "local: *; };\nV2 { global: beta; } V1;\n"

CXX_SOURCE = r"""// Exceptions: a zPLR CIE with a personality and FDEs with an LSDA.
#include <stdexcept>
static volatile int sink;

__attribute__((noinline)) int thrower(int x)
{
	if (x > sink)
		throw std::runtime_error("x");
	return x;
}

int main(int argc, char **)
{
	try {
		return thrower(argc);
	} catch (const std::exception &) {
		return 2;
	}
}
"""

# agentsymtab: name: (compiler and flags, source, post-processing, edits)
SYMTAB = {
    "o2_pie": (["gcc", "-O2", "-fPIE", "-pie"] + SMALL, "three", [], []),
    "o2_pie_separate": (["gcc", "-O2", "-fPIE", "-pie"], "three", ["strip-debug"], []),
    "dynsym_only": (["gcc", "-O2", "-fPIE", "-pie", "-rdynamic"] + SMALL, "three", ["strip"],
                    []),
    "debuglink": (["gcc", "-O2", "-fPIE", "-pie"] + SMALL, "three", ["debuglink"], []),
    "tiny_static": (["gcc", "-O2"] + elf_seeds.NOSTDLIB + SMALL, "three", [], []),
    "tiny_static_stripped": (["gcc", "-O2"] + elf_seeds.NOSTDLIB + SMALL, "three", ["strip"],
                             []),
    "shlib_versions": (["gcc", "-O2", "-fPIC", "-shared", "-Wl,--version-script=lib.map"]
                       + SMALL, "lib", [], []),
    "bid_section_only": (["gcc", "-O2"] + elf_seeds.NOSTDLIB + SMALL, "three", [],
                         ["note_phdr_null"]),
    "shnum_extended": (["gcc", "-O2"] + elf_seeds.NOSTDLIB + SMALL, "three", [],
                       ["shnum_xindex"]),
    "truncated": (["gcc", "-O2", "-fPIE", "-pie"] + SMALL, "three", [], ["truncate"]),
    "debug_by_build_id": (["gcc", "-O2"] + elf_seeds.NOSTDLIB + SMALL, "three",
                          ["debug200"], []),
    "debug_by_crc": (["gcc", "-O2", "-Wl,--build-id=none"] + elf_seeds.NOSTDLIB + SMALL,
                     "three", ["debug200"], []),
}
SHLIB = SYMTAB["shlib_versions"]
SYMTAB["shlib_aliases"] = SHLIB
SYMTAB["shlib_unsized"] = SHLIB
# The address a seed's header names (symbol + offset); alpha otherwise.
TARGET = {"shlib_versions": ("beta@@V2", 4), "shlib_aliases": ("__gamma_impl", 8),
          "shlib_unsized": ("inner_entry", 1)}

# agentcfi raw .eh_frame: name: (compiler and flags, source, flags byte)
CFI_RAW = {
    "three_o2_pie": (["gcc", "-O2", "-fPIE", "-pie"], "three", 0),
    "three_o0": (["gcc", "-O0", "-fno-omit-frame-pointer", "-fPIE", "-pie"], "three", 0),
    "three_clang_o2": (["clang", "-O2", "-fPIE", "-pie"], "three", 0),
    "fixture_so": (["gcc", "-O2", "-fomit-frame-pointer", "-fPIC", "-shared"], "fixture", 0),
    "fixture_so_table": (["gcc", "-O2", "-fomit-frame-pointer", "-fPIC", "-shared"], "fixture",
                         2),
    "cxx_eh": (["g++", "-O2", "-fPIE", "-pie"], "cxx", 0),
}

# agentcfi whole ELF files (flag 1)
CFI_ELF = {
    "elf_tiny_static": ["gcc", "-O2"] + elf_seeds.NOSTDLIB + SMALL,
    "elf_fixture_so": ["gcc", "-O2", "-fomit-frame-pointer", "-fPIC", "-shared",
                       "-Wl,--eh-frame-hdr"] + SMALL,
}


def run(*cmd, cwd):
    subprocess.run(cmd, cwd=cwd, check=True)


def elf_layout(elf):
    """(program headers, {section name: header}) of an ELF64 LE file."""
    phoff, shoff = struct.unpack_from("<QQ", elf, 32)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", elf, 54)
    phdrs = [struct.unpack_from("<IIQQQQQQ", elf, phoff + i * phentsize) for i in range(phnum)]
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names = shdrs[shstrndx][4] if shdrs else 0

    def name(sh):
        end = elf.index(b"\0", names + sh[0])
        return elf[names + sh[0]:end].decode()
    return phdrs, {name(sh): sh for sh in shdrs}


def text_span(phdrs):
    """[lo, hi) of the executable PT_LOADs, as the unwinder takes it."""
    execs = [(p[3], p[3] + p[6]) for p in phdrs if p[0] == 1 and p[1] & 1 and p[6]]
    return min(lo for lo, _ in execs), max(hi for _, hi in execs)


def compile_to(cc, src, out, tmp):
    run(*cc, "-o", out, src, "-Wl,--build-id=0x" + os.urandom(20).hex(), cwd=tmp)


def post(step, path, tmp):
    """A step on the linked file; returns the debug file that goes with it, if any."""
    if step == "debug200":  # stripped, its debug file found as /proc/self/fd/200
        run("objcopy", "--only-keep-debug", path, "200", cwd=tmp)
        run("objcopy", "--strip-debug", "200", cwd=tmp)  # .symtab is all it needs
        run("strip", "--strip-all", path, cwd=tmp)
        run("objcopy", "--add-gnu-debuglink=200", path, cwd=tmp)
        with open(os.path.join(tmp, "200"), "rb") as f:
            return f.read()
    if step == "strip":
        run("strip", "--strip-all", path, cwd=tmp)
    elif step == "strip-debug":
        run("strip", "--strip-debug", path, cwd=tmp)
    elif step == "debuglink":
        elf_seeds.post("debuglink", path, tmp)


def edit(step, elf):
    """Hand edits of a linked file (bytearray)."""
    phoff, shoff = struct.unpack_from("<QQ", elf, 32)
    phnum, _, shnum, shstrndx = struct.unpack_from("<HHHH", elf, 56)
    if step == "note_phdr_null":  # the build-id then comes from the SHT_NOTE section
        for i in range(phnum):
            if struct.unpack_from("<I", elf, phoff + 56 * i)[0] == 4:  # PT_NOTE
                struct.pack_into("<I", elf, phoff + 56 * i, 0)
    elif step == "shnum_xindex":  # e_shnum 0, e_shstrndx SHN_XINDEX: both in section 0
        struct.pack_into("<HH", elf, 60, 0, 0xffff)
        struct.pack_into("<Q", elf, shoff + 32, shnum)  # sh_size
        struct.pack_into("<I", elf, shoff + 40, shstrndx)  # sh_link
    elif step == "truncate":  # section headers (and .symtab) past the end
        del elf[len(elf) * 2 // 3:]


def symtab_seed(name, tmp):
    cc, source, steps, edits = SYMTAB[name]
    if "-Wl,--build-id=none" in cc:
        run(*cc, "-o", name, source + ".c", cwd=tmp)
    else:
        compile_to(cc, source + ".c", name, tmp)
    syms = elf_seeds.symbols(name, tmp)
    debug = b""
    for step in steps:
        debug = post(step, name, tmp) or debug
    seg = elf_seeds.exec_segment(os.path.join(tmp, name))
    with open(os.path.join(tmp, name), "rb") as f:
        elf = bytearray(f.read())
    for step in edits:
        edit(step, elf)
    pgoff = seg[0] & ~0xfff
    pages = (seg[1] - pgoff + 0xfff) // 0x1000
    if pgoff // 0x1000 > 255 or not 1 <= pages <= 256:
        raise SystemExit(f"{name}: executable segment out of the header's reach")
    pick = 0x9e % max(len(elf) // 8, 1)
    sym, delta = TARGET.get(name, ("alpha", 0))
    flags = 1 if debug else 0
    return struct.pack("<BBBBQI", pgoff // 0x1000, pages - 1, flags, pick, syms[sym] + delta,
                       len(elf) if debug else 0) + bytes(elf) + debug


def cfi_raw_seed(name, tmp):
    cc, source, flags = CFI_RAW[name]
    src = {"three": "three.c", "fixture": "fixture.c", "cxx": "cxx.cc"}[source]
    compile_to(cc, src, name, tmp)
    with open(os.path.join(tmp, name), "rb") as f:
        phdrs, sections = elf_layout(f.read())
    run("objcopy", "-O", "binary", "--only-section=.eh_frame", name, name + ".eh", cwd=tmp)
    with open(os.path.join(tmp, name + ".eh"), "rb") as f:
        eh = f.read()
    lo, hi = text_span(phdrs)
    return struct.pack("<BiI", flags, lo - sections[".eh_frame"][3], hi - lo) + eh


def cfi_elf_seed(name, tmp):
    src = "fixture.c" if "fixture" in name else "three.c"
    compile_to(CFI_ELF[name], src, name, tmp)
    run("strip", "--strip-all", name, cwd=tmp)
    with open(os.path.join(tmp, name), "rb") as f:
        return struct.pack("<BiI", 1, 0, 0) + f.read()


# ---- hand-assembled .eh_frame ----

def uleb(v):
    out = bytearray()
    while True:
        b, v = v & 0x7f, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def sleb(v):
    out = bytearray()
    while True:
        b, v = v & 0x7f, v >> 7
        done = (v == 0 and not b & 0x40) or (v == -1 and b & 0x40)
        out.append(b | (0 if done else 0x80))
        if done:
            return bytes(out)


TEXT_OFF, TEXT_LEN = 0x4000, 0x1000  # the code, relative to .eh_frame's first byte
STD_INIT = bytes([0x0c, 7, 8, 0x90, 1])  # def_cfa rsp+8; offset r16 at cfa-8
PUSH_RBP = bytes([0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6])  # push %rbp; mov %rsp,%rbp


def expr(*ops):
    return bytes(ops)


class EhFrame:
    """An .eh_frame under construction; pointers are pc-relative to where they sit."""

    def __init__(self):
        self.buf = bytearray()

    def _entry(self, body, len64):
        at = len(self.buf)
        if len64:
            self.buf += struct.pack("<IQ", 0xffffffff, len(body))
        else:
            self.buf += struct.pack("<I", len(body))
        self.buf += body
        return at

    def cie(self, aug="zR", enc=0x1b, insns=STD_INIT, version=1, ra=16, caf=1, daf=-8,
            aug_data=None, len64=False):
        body = struct.pack("<IB", 0, version) + aug.encode() + b"\0" + uleb(caf) + sleb(daf)
        body += bytes([ra]) if version == 1 else uleb(ra)
        if aug.startswith("z"):
            data = aug_data if aug_data is not None else bytes([enc])
            body += uleb(len(data)) + data
        return self._entry(body + insns, len64)

    def ptr(self, enc, at, target):
        """TARGET (an .eh_frame offset) in encoding ENC for a field at offset AT."""
        v = target - at if enc & 0x70 == 0x10 else target
        fmt = {0x01: None, 0x02: "<H", 0x03: "<I", 0x04: "<Q", 0x09: None, 0x0a: "<h",
               0x0b: "<i", 0x0c: "<q", 0x00: "<Q"}[enc & 0x0f]
        if enc & 0x0f == 0x01:
            return uleb(v)
        if enc & 0x0f == 0x09:
            return sleb(v)
        return struct.pack(fmt, v)

    def fde(self, cie_at, start, size, insns, enc=0x1b, aug=b"", len64=False, z=True):
        at = len(self.buf)
        head = 12 if len64 else 4
        body = struct.pack("<I", at + head - cie_at)
        body += self.ptr(enc, at + head + len(body), TEXT_OFF + start)
        body += self.ptr(enc & 0x0f, 0, size)
        if z:
            body += uleb(len(aug)) + aug
        return self._entry(body + insns, len64)

    def raw(self, data):
        self.buf += data

    def seed(self, flags=0, terminate=True):
        tail = b"\0\0\0\0" if terminate else b""
        return struct.pack("<BiI", flags, TEXT_OFF, TEXT_LEN) + bytes(self.buf) + tail


def hand_ops():
    """Every DW_CFA_* op the parser knows, in one FDE."""
    e = EhFrame()
    c = e.cie()
    e.fde(c, 0x100, 0x200, PUSH_RBP + bytes(
        [0x02, 20, 0x0a, 0x0c, 7, 8, 0x03]) + struct.pack("<H", 2) + bytes(
        [0x0b, 0x04]) + struct.pack("<I", 5) + bytes(
        [0x05, 6, 2, 0x11, 6] + list(sleb(-2)) + [0x12, 7] + list(sleb(-2)) +
        [0x13] + list(sleb(-3)) + [0x14, 3, 1, 0x15, 3] + list(sleb(-1)) +
        [0x09, 3, 4, 0x08, 6, 0x07, 3, 0xc6, 0x06, 16, 0x2e, 16, 0x2f, 6, 2, 0x00,
         0x41, 0x8c, 3, 0xcc, 0x0c, 7, 16]))
    e.fde(c, 0x300, 0x10, bytes([0x41, 0x0e, 16, 0x42, 0x0e, 8]))
    return e


def set_loc_seed():
    """DW_CFA_set_loc in the FDE's encoding, forward and backward."""
    e = EhFrame()
    c = e.cie()
    at = len(e.buf)
    body_at = at + 4 + 4 + 4 + 4 + 1  # length, CIE pointer, begin, range, aug length
    e.fde(c, 0x400, 0x40, bytes([0x0e, 16, 0x01]) + e.ptr(0x1b, body_at + 3, TEXT_OFF + 0x410)
          + bytes([0x0e, 24, 0x01]) + e.ptr(0x1b, body_at + 10, TEXT_OFF + 0x408))
    return e


def hand_sigframe():
    """glibc's __restore_rt: an S CIE and a CFA expression *(rsp + 160)."""
    e = EhFrame()
    c = e.cie(aug="zRS", insns=b"")
    e.fde(c, 0x10, 0x9, bytes([0x0f, 4, 0x77]) + sleb(160) + bytes([0x06]) +
          bytes([0x10, 16, 2, 0x77, 0x28, 0x10, 6, 2, 0x77, 0x78]))
    return e


def hand_plt():
    """The lazy PLT: CFA = rsp + 8, + 8 once (pc & 15) >= 11."""
    e = EhFrame()
    c = e.cie()
    e.fde(c, 0x20, 0x10, bytes([0x0e, 16, 0x46, 0x0e, 24]))
    e.fde(c, 0x30, 0x40, bytes([0x0f, 11]) + expr(0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a,
                                                  0x33, 0x24, 0x22))
    e.fde(c, 0x70, 0x10, bytes([0x0f, 11]) + expr(0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x40, 0x2a,
                                                  0x33, 0x24, 0x22))  # lit16: not ours
    return e


def hand_drap():
    """gcc's DRAP realignment: CFA = *(rbp - 8), rbp saved at [rbp]; and near misses."""
    e = EhFrame()
    c = e.cie()
    e.fde(c, 0x500, 0x80, bytes([0x45, 0x0c, 10, 0, 0x49, 0x10, 6, 2, 0x76, 0,
                                 0x0f, 3, 0x76, 0x78, 0x06, 0x50, 0x0c, 10, 0, 0x48,
                                 0x0f, 3, 0x77, 0x78, 0x06, 0x44, 0x0e, 8, 0x44,
                                 0x0f, 4, 0x76, 0x78, 0x06, 0x06, 0x44,
                                 0x16, 6, 2, 0x76, 0, 0x44, 0x10, 6, 3, 0x76, 0, 0x96]))
    return e


def hand_outermost():
    """_start: the return address undefined."""
    e = EhFrame()
    c = e.cie(insns=bytes([0x0c, 7, 8, 0x07, 16]))
    e.fde(c, 0x600, 0x20, bytes([0x44, 0x0e, 16]))
    return e


def hand_remember():
    """remember_state past its 16 levels, and restore_state with none saved."""
    e = EhFrame()
    c = e.cie()
    e.fde(c, 0x700, 0x40, bytes([0x41, 0x0a] * 17))
    e.fde(c, 0x740, 0x40, bytes([0x41, 0x0a, 0x0e, 16, 0x41, 0x0b, 0x41, 0x0b]))
    return e


def hand_len64_v3():
    """64-bit lengths, CIE version 3 (uleb return address), sdata8 and udata pointers."""
    e = EhFrame()
    c = e.cie(version=3, enc=0x1c, len64=True)
    e.fde(c, 0x800, 0x20, PUSH_RBP, enc=0x1c, len64=True)
    c2 = e.cie(enc=0x11)
    e.fde(c2, 0x820, 0x20, PUSH_RBP, enc=0x11)
    c3 = e.cie(enc=0x12)
    e.fde(c3, 0x840, 0x20, PUSH_RBP, enc=0x12)
    c4 = e.cie(enc=0x1a)
    e.fde(c4, 0x860, 0x20, PUSH_RBP, enc=0x1a)
    c5 = e.cie(enc=0x19)
    e.fde(c5, 0x880, 0x20, PUSH_RBP, enc=0x19)
    c6 = e.cie(enc=0x13, caf=4, daf=-4)
    e.fde(c6, 0x8a0, 0x20, PUSH_RBP, enc=0x13)
    return e


def hand_zplr():
    """A personality (indirect pcrel sdata4) and an LSDA, as C++ emits; unknown letters."""
    e = EhFrame()
    at = len(e.buf)
    c = e.cie(aug="zPLR", aug_data=bytes([0x9b]) + struct.pack("<i", -at) + bytes([0x1b, 0x1b]))
    e.fde(c, 0x900, 0x30, PUSH_RBP, aug=struct.pack("<i", 0))
    c2 = e.cie(aug="zRX", aug_data=bytes([0x1b, 0xaa, 0xbb]))
    e.fde(c2, 0x930, 0x30, PUSH_RBP)
    c3 = e.cie(aug="", insns=STD_INIT)  # no 'z': FDEs carry no augmentation data
    e.fde(c3, 0x960, 0x30, PUSH_RBP, enc=0x00 | 0x04, z=False)
    return e


def hand_bad():
    """Entries the parser must refuse without reading outside .eh_frame."""
    e = EhFrame()
    good = e.cie()
    e.raw(struct.pack("<II", 8, len(e.buf) + 4 + 0x1000) + b"\0" * 4)  # CIE before the start
    fde = e.fde(good, 0xa00, 0x10, PUSH_RBP)
    e.raw(struct.pack("<II", 12, len(e.buf) + 4 - fde) + b"\0" * 8)  # an FDE as its CIE
    for kw in ({"ra": 15}, {"version": 2}, {"aug": "eh"}, {"aug": "zR", "enc": 0x9b},
               {"aug": "zP", "aug_data": bytes([0x0f, 0])}, {"aug": "zRabcdefgh"},
               {"insns": bytes([0x41])}, {"aug": "zR", "enc": 0x3b}):
        c = e.cie(**kw)
        e.fde(c, 0xa20, 0x10, PUSH_RBP, enc=kw.get("enc", 0x1b))
    e.fde(good, 0xa40, 0, PUSH_RBP)  # empty range
    e.fde(good, 0x2000, 0x10, PUSH_RBP)  # outside the code
    e.fde(good, 0xff0, 0x100, PUSH_RBP)  # running past its end
    e.fde(good, 0xa60, 0x10, bytes([0x0e, 0x80, 0x80]))  # uleb cut by the FDE's end
    e.fde(good, 0xa80, 0x10, bytes([0x0f, 0x20, 0x77]))  # expression longer than the FDE
    e.fde(good, 0xaa0, 0x10, bytes([0x05, 6]) + uleb((1 << 64) - 1) + bytes([0x0e]) +
          bytes([0xff] * 9 + [0x7f]))  # offsets beyond any row's reach
    e.fde(good, 0xae0, 0x10, bytes([0x20]))  # an unknown op
    e.raw(struct.pack("<I", 0x7ffffff0))  # a length past the end
    return e


def hand_daf_overflow():
    """Regression: operands whose product with the data alignment overflows int64_t."""
    e = EhFrame()
    c = e.cie()
    e.fde(c, 0xc00, 0x40, bytes([0x86]) + uleb(1 << 62) + bytes([0x41, 0x05, 6]) + uleb(1 << 62)
          + bytes([0x41, 0x11, 6]) + sleb(1 << 61) + bytes([0x41, 0x12, 7]) + sleb(-(1 << 61))
          + bytes([0x41, 0x13]) + sleb(1 << 61) + bytes([0x41, 0x2f, 6]) + uleb(1 << 63)
          + bytes([0x41]))
    return e


def hand_terminator():
    """A terminator in the middle: what follows is not reached."""
    e = EhFrame()
    c = e.cie()
    e.fde(c, 0xb00, 0x10, PUSH_RBP)
    e.raw(b"\0\0\0\0")
    e.fde(c, 0xb10, 0x10, PUSH_RBP)
    return e


HAND = {
    "hand_ops": (hand_ops, 0),
    "hand_ops_table": (hand_ops, 2),
    "hand_set_loc": (set_loc_seed, 0),
    "hand_sigframe": (hand_sigframe, 0),
    "hand_plt": (hand_plt, 0),
    "hand_drap": (hand_drap, 0),
    "hand_outermost": (hand_outermost, 0),
    "hand_remember": (hand_remember, 0),
    "hand_len64_v3": (hand_len64_v3, 0),
    "hand_zplr": (hand_zplr, 0),
    "hand_bad": (hand_bad, 0),
    "hand_bad_table": (hand_bad, 2),
    "hand_terminator": (hand_terminator, 0),
    "regress_daf_overflow": (hand_daf_overflow, 0),
}


def write(outdir, name, seed):
    if len(seed) > SEED_MAX:
        raise SystemExit(f"{name}: {len(seed)} bytes, over {SEED_MAX}")
    with open(os.path.join(outdir, name), "wb") as f:
        f.write(seed)


def main():
    symdir = sys.argv[1] if len(sys.argv) > 2 else os.path.join(HERE, "corpus", "agentsymtab")
    cfidir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "corpus", "agentcfi")
    os.makedirs(symdir, exist_ok=True)
    os.makedirs(cfidir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gen_agent_seeds.")
    fixture = os.path.join(HERE, "..", "tests", "fixtures", "src", "agent", "unwind_fixture.c")
    try:
        for name, text in (("three.c", elf_seeds.SOURCE), ("lib.c", LIB_SOURCE),
                           ("lib.map", LIB_VERSIONS), ("cxx.cc", CXX_SOURCE)):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        shutil.copy(fixture, os.path.join(tmp, "fixture.c"))
        for name in SYMTAB:
            write(symdir, name, symtab_seed(name, tmp))
        for name in CFI_RAW:
            write(cfidir, name, cfi_raw_seed(name, tmp))
        for name in CFI_ELF:
            write(cfidir, name, cfi_elf_seed(name, tmp))
        for name, (build, flags) in HAND.items():
            write(cfidir, name, build().seed(flags))
        write(cfidir, "empty", EhFrame().seed(0, terminate=False))
    finally:
        shutil.rmtree(tmp)
    print(f"{len(SYMTAB)} seeds in {symdir}, {len(CFI_RAW) + len(CFI_ELF) + len(HAND) + 1} "
          f"in {cfidir}")


if __name__ == "__main__":
    main()
