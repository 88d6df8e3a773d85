#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz/fuzz_elf.c.

Compiles a three-function C program (plus an inlined helper) in several
shapes and prefixes each file with the target's 32-byte header: flags,
the executable segment's file offset and length in pages, and the ELF
addresses of alpha, the middle of beta and gamma_fn (see fuzz_elf.c).
Every file gets a random build-id, so no debug file under /usr/lib/debug
can match it.  Needs gcc, clang + ld.lld (big-endian and 32-bit seeds),
binutils, llvm-objcopy/llvm-strip and xz; each seed stays under 20 KiB.

    fuzz/gen_elf_seeds.py [OUTDIR]
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

SOURCE = r"""/* Three functions and an inlined helper: the fuzz_elf seed program. */
static volatile int sink;

static inline __attribute__((always_inline)) int helper(int x)
{
	sink = x;
	return x * 7 + sink;
}

__attribute__((noinline)) int alpha(int x)
{
	for (int i = 0; i < x; i++)
		sink += i;
	return sink;
}

__attribute__((noinline)) int beta(int x)
{
	return helper(alpha(x)) + 1;
}

__attribute__((noinline)) int gamma_fn(int x)
{
	return beta(x) ^ alpha(x + 1);
}

#if defined(NOSTDLIB) && defined(__x86_64__)
void _start(void)
{
	int r = gamma_fn(sink + 3);

	__asm__ volatile("syscall" : : "a"(60), "D"(r & 1));
	__builtin_unreachable();
}
#elif defined(NOSTDLIB)
void _start(void)
{
	for (;;)
		sink = gamma_fn(sink);
}
#else
int main(int argc, char **argv)
{
	(void)argv;
	return gamma_fn(argc) & 1;
}
#endif
"""

FLAG_BUILD_ID, FLAG_DELETED, FLAG_SECOND = 1, 2, 4
MAX_ALL = 7 << 3  # first lookup of each address with 8 frames
NOSTDLIB = ["-static", "-nostdlib", "-DNOSTDLIB", "-Wl,--eh-frame-hdr",
            "-fasynchronous-unwind-tables"]
LLD_BE = ["clang", "--target=aarch64_be-linux-gnu", "-fuse-ld=lld"]

# name: (compiler and flags, post-processing steps, header flags)
VARIANTS = {
    "o2_pie": (["gcc", "-O2", "-fPIE", "-pie"], [], MAX_ALL),
    "o2_g": (["gcc", "-O2", "-g", "-fPIE", "-pie"], [], MAX_ALL | FLAG_SECOND),
    "o2_g_max1": (["gcc", "-O2", "-g", "-fPIE", "-pie"], [], 0),
    "o2_stripped": (["gcc", "-O2", "-fPIE", "-pie"], ["strip"], MAX_ALL),
    "o2_minidebuginfo": (["gcc", "-O2", "-fPIE", "-pie"], ["minidebug"], MAX_ALL),
    "o2_debuglink": (["gcc", "-O2", "-fPIE", "-pie"], ["debuglink"], MAX_ALL),
    "o2_build_id_given": (["gcc", "-O2", "-fPIE", "-pie"], [], MAX_ALL | FLAG_BUILD_ID),
    "tiny_static": (["gcc", "-O2"] + NOSTDLIB, [], MAX_ALL),
    "tiny_static_stripped": (["gcc", "-O2", "-Wl,-z,noseparate-code"] + NOSTDLIB, ["strip"],
                             MAX_ALL),
    "tiny_static_32": (["clang", "-m32", "-O2"] + NOSTDLIB, ["strip"], MAX_ALL),
    "tiny_static_be64": (LLD_BE + ["-O2", "-g"] + NOSTDLIB, [], MAX_ALL | FLAG_SECOND),
    "tiny_static_be64_stripped": (LLD_BE + ["-O2"] + NOSTDLIB, ["llvm-strip"], MAX_ALL),
}


def run(*cmd, cwd):
    subprocess.run(cmd, cwd=cwd, check=True)


def symbols(path, cwd):
    out = subprocess.run(["llvm-nm", "--defined-only", path], cwd=cwd, check=True,
                         capture_output=True, text=True).stdout
    return {f[2]: int(f[0], 16) for f in (line.split() for line in out.splitlines())
            if len(f) == 3}


def exec_segment(path):
    """(file offset, end) of the first executable PT_LOAD."""
    with open(path, "rb") as f:
        elf = f.read()
    is64, end = elf[4] == 2, ">" if elf[5] == 2 else "<"
    if is64:
        phoff, = struct.unpack_from(end + "Q", elf, 32)
        phentsize, phnum = struct.unpack_from(end + "HH", elf, 54)
    else:
        phoff, = struct.unpack_from(end + "I", elf, 28)
        phentsize, phnum = struct.unpack_from(end + "HH", elf, 42)
    for i in range(phnum):
        at = phoff + i * phentsize
        if is64:
            ptype, pflags, off, _, _, filesz = struct.unpack_from(end + "IIQQQQ", elf, at)
        else:
            ptype, off, _, _, filesz, _, pflags = struct.unpack_from(end + "IIIIIII", elf, at)
        if ptype == 1 and pflags & 1:
            return off, off + filesz
    raise SystemExit(f"{path}: no executable PT_LOAD")


def minidebug(path, cwd):
    """Strip path and add a .gnu_debugdata with the function symbols .dynsym lacks."""
    dyn = subprocess.run(["nm", "-D", "--format=posix", "--defined-only", path], cwd=cwd,
                         capture_output=True, text=True).stdout
    dynsyms = {line.split()[0] for line in dyn.splitlines() if line}
    full = subprocess.run(["nm", "--format=posix", "--defined-only", path], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout
    funcs = {f[0] for f in (line.split() for line in full.splitlines()) if f[1] in "Tt"}
    with open(os.path.join(cwd, "keep"), "w") as f:
        f.write("".join(s + "\n" for s in sorted(funcs - dynsyms)))
    run("objcopy", "--only-keep-debug", path, "mini", cwd=cwd)
    run("objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment",
        "--keep-symbols=keep", "mini", cwd=cwd)
    run("xz", "-f", "mini", cwd=cwd)
    run("strip", "--strip-all", path, cwd=cwd)
    run("objcopy", "--add-section", ".gnu_debugdata=mini.xz", path, cwd=cwd)


def post(step, path, cwd):
    if step in ("strip", "llvm-strip"):
        run(step, "--strip-all", path, cwd=cwd)
    elif step == "minidebug":
        minidebug(path, cwd)
    elif step == "debuglink":
        name = "seed-" + os.urandom(4).hex() + ".debug"
        run("objcopy", "--only-keep-debug", path, name, cwd=cwd)
        run("strip", "--strip-all", path, cwd=cwd)
        run("objcopy", "--add-gnu-debuglink=" + name, path, cwd=cwd)
        os.unlink(os.path.join(cwd, name))  # nothing beside the memfd: the link leads nowhere


def header(flags, seg, syms, size):
    pgoff = seg[0] & ~0xfff
    pages = (seg[1] - pgoff + 0xfff) // 0x1000
    if pgoff // 0x1000 > 255 or not 1 <= pages <= 256:
        raise SystemExit("executable segment out of the header's reach")
    vaddrs = [syms["alpha"], syms["beta"] + 4, syms["gamma_fn"]]
    # A second mapping (FLAG_SECOND) of the first page; words picked from the whole file.
    return struct.pack("<BBBBI3Q", flags, pgoff // 0x1000, 0, pages - 1,
                       0x9e3779b1 % max(size // 8, 1), *vaddrs)


def build(name, tmp, outdir):
    cc, steps, flags = VARIANTS[name]
    src = os.path.join(tmp, "three.c")
    bid = "--build-id=0x" + os.urandom(20).hex()
    run(*cc, "-o", name, src, "-Wl," + bid, cwd=tmp)
    syms = symbols(name, tmp)
    for step in steps:
        post(step, name, tmp)
    path = os.path.join(tmp, name)
    with open(path, "rb") as f:
        elf = f.read()
    seed = header(flags, exec_segment(path), syms, len(elf)) + elf
    if len(seed) > 20 * 1024:
        raise SystemExit(f"{name}: {len(seed)} bytes, over 20 KiB")
    with open(os.path.join(outdir, name), "wb") as f:
        f.write(seed)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "elf")
    os.makedirs(outdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gen_elf_seeds.")
    try:
        with open(os.path.join(tmp, "three.c"), "w") as f:
            f.write(SOURCE)
        for name in VARIANTS:
            build(name, tmp, outdir)
    finally:
        shutil.rmtree(tmp)
    print(f"{len(VARIANTS)} seeds in {outdir}")


if __name__ == "__main__":
    main()
