#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz/fuzz_perfrecord.c.

Each seed is the target's 4-byte layout prefix (sample_type selector bits
as u16, regs_mask selector, flags: bit 0 sample_id_all) followed by one
perf_event record laid out as the kernel writes it (include/uapi/linux/
perf_event.h).  Hand-built records cover every record type the parser
knows under the layouts `plateau record` opens; with --perf-data, records
are also copied from a real perf.data file (`perf record` output: the
kernel's own bytes, plus perf's synthesized MMAP2/COMM).  The sched_switch
format text of the running kernel is written as a seed of the text side.

    fuzz/gen_perfrecord_seeds.py [--perf-data FILE --prefix NAME] [OUTDIR]
"""
import argparse
import os
import struct

# Bit i of the selector stands for SAMPLE_BITS[i] (see fuzz_perfrecord.c).
SAMPLE_BITS = ["IP", "TID", "TIME", "CPU", "PERIOD", "CALLCHAIN", "RAW", "REGS_USER",
               "STACK_USER", "IDENTIFIER", "ID", "STREAM_ID", "ADDR"]
PERF_SAMPLE = {"IP": 1 << 0, "TID": 1 << 1, "TIME": 1 << 2, "ADDR": 1 << 3, "ID": 1 << 6,
               "CPU": 1 << 7, "PERIOD": 1 << 8, "STREAM_ID": 1 << 9, "RAW": 1 << 10,
               "CALLCHAIN": 1 << 5, "REGS_USER": 1 << 12, "STACK_USER": 1 << 13,
               "IDENTIFIER": 1 << 16}
REC = {"MMAP": 1, "LOST": 2, "COMM": 3, "EXIT": 4, "THROTTLE": 5, "UNTHROTTLE": 6, "FORK": 7,
       "SAMPLE": 9, "MMAP2": 10, "LOST_SAMPLES": 13, "SWITCH": 14, "SWITCH_CPU_WIDE": 15}
MISC_USER = 2
MISC_COMM_EXEC = 1 << 13
MISC_SWITCH_OUT = 1 << 13
MISC_MMAP_BUILD_ID = 1 << 14
CONTEXT_KERNEL = (1 << 64) - 128
CONTEXT_USER = (1 << 64) - 512
X86_REGS_MASK = 0xff0fff  # regs selector 0: all but DS, ES, FS, GS (20 registers)

BASE = ["IP", "TID", "TIME", "CPU", "PERIOD"]
TRACEPOINT_FORMAT = "/sys/kernel/tracing/events/sched/sched_switch/format"


def prefix(names, regs=0, id_all=True):
    bits = sum(1 << SAMPLE_BITS.index(n) for n in names)
    return struct.pack("<HBB", bits, regs, 1 if id_all else 0)


def pad8(b):
    return b + b"\0" * (-len(b) % 8)


def record(rtype, misc, body):
    body = pad8(body)
    return struct.pack("<IHH", rtype, misc, 8 + len(body)) + body


def sample_id(names, pid=4242, tid=4243, time=1_000_000_123, cpu=1):
    """The sample_id trailer of non-SAMPLE records (sample_id_all)."""
    out = b""
    if "TID" in names:
        out += struct.pack("<II", pid, tid)
    if "TIME" in names:
        out += struct.pack("<Q", time)
    if "ID" in names:
        out += struct.pack("<Q", 77)
    if "STREAM_ID" in names:
        out += struct.pack("<Q", 78)
    if "CPU" in names:
        out += struct.pack("<II", cpu, 0)
    if "IDENTIFIER" in names:
        out += struct.pack("<Q", 77)
    return out


def sched_switch_raw(prev_comm=b"worker", prev_pid=4243, prev_state=1, next_pid=0):
    """Raw data of sched:sched_switch in the kernel's layout (64 bytes)."""
    return (struct.pack("<HBBi", 372, 0, 0, prev_pid) + prev_comm.ljust(16, b"\0") +
            struct.pack("<iiq", prev_pid, 120, prev_state) + b"swapper/1".ljust(16, b"\0") +
            struct.pack("<ii", next_pid, 120))


def sample(names, callchain=None, raw=None, nregs=0, stack=b""):
    """A SAMPLE record with the fields of names, in the kernel's order."""
    body = b""
    if "IDENTIFIER" in names:
        body += struct.pack("<Q", 77)
    if "IP" in names:
        body += struct.pack("<Q", 0x55555555a123)
    if "TID" in names:
        body += struct.pack("<II", 4242, 4243)
    if "TIME" in names:
        body += struct.pack("<Q", 1_000_000_456)
    if "ADDR" in names:
        body += struct.pack("<Q", 0x7ffd0000)
    if "ID" in names:
        body += struct.pack("<Q", 77)
    if "STREAM_ID" in names:
        body += struct.pack("<Q", 78)
    if "CPU" in names:
        body += struct.pack("<II", 1, 0)
    if "PERIOD" in names:
        body += struct.pack("<Q", 10_101_010)
    if "CALLCHAIN" in names:
        chain = callchain or []
        body += struct.pack("<Q", len(chain)) + b"".join(struct.pack("<Q", ip) for ip in chain)
    if "RAW" in names:
        raw = raw or b""
        body += pad8(struct.pack("<I", len(raw)) + raw)
    if "REGS_USER" in names:
        body += struct.pack("<Q", 2 if nregs else 0)  # PERF_SAMPLE_REGS_ABI_64
        body += b"".join(struct.pack("<Q", 0x7ffd1000 + 8 * i) for i in range(nregs))
    if "STACK_USER" in names:
        body += struct.pack("<Q", len(stack))
        if stack:
            body += stack + struct.pack("<Q", len(stack) - 16)
    return record(REC["SAMPLE"], MISC_USER, body)


def mmap2(names, build_id=None):
    body = struct.pack("<IIQQQ", 4242, 4242, 0x555555555000, 0x2000, 0x1000)
    if build_id is None:
        body += struct.pack("<IIQQ", 259, 1, 1234567, 0)
        misc = MISC_USER
    else:
        body += struct.pack("<BBH", len(build_id), 0, 0) + build_id.ljust(20, b"\0")
        misc = MISC_USER | MISC_MMAP_BUILD_ID
    body += struct.pack("<II", 5, 0x802)  # PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_DENYWRITE
    body = pad8(body + b"/usr/bin/true\0")
    return record(REC["MMAP2"], misc, body + sample_id(names))


def hand_built():
    cpu = BASE + ["CALLCHAIN"]
    dwarf = BASE + ["REGS_USER", "STACK_USER"]
    tp = BASE + ["CALLCHAIN", "RAW"]
    chain = [CONTEXT_KERNEL, 0xffffffff81000100, 0xffffffff81000200, CONTEXT_USER,
             0x55555555a123, 0x55555555a456, 0x7f0000012345]
    stack = bytes(range(256))
    seeds = {
        "sample_cpu_clock": prefix(cpu) + sample(cpu, callchain=chain),
        "sample_user_only": prefix(cpu) + sample(cpu, callchain=chain[3:]),
        "sample_dwarf": prefix(dwarf) + sample(dwarf, nregs=20, stack=stack),
        "sample_dwarf_no_regs": prefix(dwarf) + sample(dwarf),
        "sample_sched_switch": prefix(tp) + sample(tp, callchain=chain[:3], raw=sched_switch_raw()),
        "sample_all_fields": prefix(SAMPLE_BITS, regs=1) + sample(
            SAMPLE_BITS, callchain=chain, raw=sched_switch_raw(prev_state=0x100),
            nregs=33, stack=stack[:64]),
        "sample_unsupported_read": struct.pack("<HBB", 0x1f | 1 << 13, 0, 1) + sample(BASE),
        "mmap2": prefix(cpu) + mmap2(cpu),
        "mmap2_build_id": prefix(cpu) + mmap2(cpu, build_id=bytes(range(0xa0, 0xb4))),
        "comm_exec": prefix(cpu) + record(REC["COMM"], MISC_COMM_EXEC, pad8(
            struct.pack("<II", 4242, 4242) + b"worker\0") + sample_id(cpu)),
        "fork": prefix(cpu) + record(REC["FORK"], 0, struct.pack(
            "<IIIIQ", 4242, 4242, 4244, 4243, 1_000_000_789) + sample_id(cpu)),
        "exit": prefix(cpu) + record(REC["EXIT"], 0, struct.pack(
            "<IIIIQ", 4242, 4242, 4244, 4244, 1_000_000_999) + sample_id(cpu)),
        "switch_out": prefix(cpu) + record(REC["SWITCH"], MISC_SWITCH_OUT, sample_id(cpu)),
        "switch_cpu_wide": prefix(cpu) + record(REC["SWITCH_CPU_WIDE"], 0, struct.pack(
            "<II", 0, 0) + sample_id(cpu)),
        "lost": prefix(cpu) + record(REC["LOST"], 0, struct.pack("<QQ", 77, 12) + sample_id(cpu)),
        "lost_samples": prefix(cpu) + record(REC["LOST_SAMPLES"], 0, struct.pack("<Q", 3) +
                                             sample_id(cpu)),
        "throttle": prefix(cpu) + record(REC["THROTTLE"], 0, struct.pack(
            "<QQQ", 1_000_001_000, 77, 78) + sample_id(cpu)),
        "comm_no_id_all": prefix(cpu, id_all=False) + record(REC["COMM"], 0, pad8(
            struct.pack("<II", 1, 1) + b"init\0")),
        "comm_all_ids": prefix(SAMPLE_BITS) + record(REC["COMM"], 0, pad8(
            struct.pack("<II", 1, 1) + b"init\0") + sample_id(SAMPLE_BITS)),
    }
    # A header that claims more bytes than there are (the parser must refuse it).
    lie = bytearray(seeds["fork"])
    struct.pack_into("<H", lie, 4 + 6, len(lie) - 4 + 64)
    seeds["fork_size_lies"] = bytes(lie)
    return seeds


def perf_data_records(path):
    """(layout prefix, record) pairs of a perf.data file, first of each record type."""
    with open(path, "rb") as f:
        data = f.read()
    magic, _, attr_size, attrs_off, attrs_size, data_off, data_size = struct.unpack_from(
        "<8sQQQQQQ", data)
    if magic != b"PERFILE2" or attrs_size < attr_size:
        raise SystemExit(f"{path}: not a perf.data (PERFILE2) file")
    sample_type, _, flags = struct.unpack_from("<QQQ", data, attrs_off + 24)
    regs_mask, = struct.unpack_from("<Q", data, attrs_off + 80)
    names = [n for n in SAMPLE_BITS if sample_type & PERF_SAMPLE[n]]
    if sample_type & ~sum(PERF_SAMPLE[n] for n in names):
        raise SystemExit(f"{path}: sample_type {sample_type:#x} has bits the target cannot pick")
    regs = 0 if regs_mask in (0, X86_REGS_MASK) else 1 if regs_mask == (1 << 33) - 1 else None
    if regs is None:
        raise SystemExit(f"{path}: sample_regs_user {regs_mask:#x} cannot be picked")
    pre = prefix(names, regs, bool(flags >> 18 & 1))
    seen, off = set(), data_off
    while off + 8 <= data_off + data_size:
        rtype, _, size = struct.unpack_from("<IHH", data, off)
        if size < 8:
            break
        if rtype < 64 and rtype not in seen:  # kernel record types, not perf's own
            seen.add(rtype)
            yield rtype, pre + data[off:off + size]
        off += size


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "perfrecord"))
    ap.add_argument("--perf-data", help="also copy records from this perf.data")
    ap.add_argument("--prefix", default="real", help="name prefix of the copied records")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    seeds = {}
    if args.perf_data:
        names = {v: k.lower() for k, v in REC.items()}
        for rtype, seed in perf_data_records(args.perf_data):
            seeds[f"{args.prefix}_{names.get(rtype, rtype)}"] = seed
    else:
        seeds = hand_built()
        if os.path.exists(TRACEPOINT_FORMAT):
            with open(TRACEPOINT_FORMAT, "rb") as f:
                seeds["sched_switch_format.txt"] = f.read()
    for name, seed in seeds.items():
        with open(os.path.join(args.outdir, name), "wb") as f:
            f.write(seed)
    print(f"{len(seeds)} seeds in {args.outdir}")


if __name__ == "__main__":
    main()
