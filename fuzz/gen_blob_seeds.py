#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz/fuzz_blob.c: store blobs, valid and not.

An encoder of its own, written from doc/store-format.md (not from
src/store/), so that a seed that decodes also checks the document.  The
valid seeds cover each part of the format: no samples, a tree, several
types with decimals, string and numeric labels with units, profile
labels, comments, frame flags, odd bytes in strings, values at the
extremes, deep and wide trees, samples at the root, strings and frames
given twice; most raw (flags 0, so the fuzzer mutates the body itself),
some as zstd frames (made with the zstd command, with content size and
checksum).  The invalid ones take one check each: header, truncation,
varint overflow, counts, parent and frame ids, order of samples,
overflowing values, trailing bytes, and zstd frames that inflate past the
fuzzer's 4 MiB limit, do not state their size, or are followed by more.

    fuzz/gen_blob_seeds.py [OUTDIR]     (default fuzz/corpus/blob)
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def u(v):
    """Unsigned LEB128."""
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def s(v):
    """Zigzag, then LEB128."""
    return u(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)


def refs(ids, first):
    """A column of ids as differences from one past the largest so far."""
    out, nxt = b"", first
    for i in ids:
        out += s(i - nxt)
        nxt = max(nxt, i + 1)
    return out


def gcd(a, b):
    while b:
        a, b = b, a % b
    return a


class Profile:
    """A profile in blob ids: strings[0] is "" (implied), nodes[0] the root."""

    def __init__(self):
        self.strings = [b""]
        self.frames = []  # (name, module, file, line, addr, flags)
        self.nodes = [None]  # (parent, frame)
        self.types = []  # (type, unit, decimals)
        self.default = 0
        self.period_type = (0, 0)
        self.period = self.time = self.duration = 0
        self.sets = [[]]  # set 0 is empty; labels (key, str, num, unit)
        self.profile_labels = 0
        self.comments = []
        self.samples = {}  # (node, set) -> [values]

    def str(self, text):
        b = text if isinstance(text, bytes) else text.encode()
        if b in self.strings:
            return self.strings.index(b)
        self.strings.append(b)
        return len(self.strings) - 1

    def frame(self, name, module="", file="", line=0, addr=0, flags=0):
        f = (self.str(name), self.str(module), self.str(file), line, addr, flags)
        if f not in self.frames:
            self.frames.append(f)
        return self.frames.index(f)

    def child(self, parent, frame):
        for i, n in enumerate(self.nodes):
            if n == (parent, frame):
                return i
        self.nodes.append((parent, frame))
        return len(self.nodes) - 1

    def stack(self, names):
        node = 0
        for name in names:
            node = self.child(node, self.frame(name))
        return node

    def type(self, name, unit, decimals=0):
        self.types.append((self.str(name), self.str(unit), decimals))

    def labels(self, *labels):
        """Labels as (key, value) with a str value, or (key, num, unit)."""
        out = []
        for l in labels:
            if isinstance(l[1], int):
                out.append((self.str(l[0]), 0, l[1], self.str(l[2])))
            else:
                out.append((self.str(l[0]), self.str(l[1]), 0, 0))
        self.sets.append(out)
        return len(self.sets) - 1

    def sample(self, node, values, labels=0):
        old = self.samples.get((node, labels), [0] * len(values))
        self.samples[(node, labels)] = [a + b for a, b in zip(old, values)]

    def sections(self):
        """The body's sections, in order, as a dict (seeds spoil one at a time)."""
        sec = {}
        sec["strings"] = u(len(self.strings) - 1) + b"".join(
            u(len(x)) for x in self.strings[1:]) + b"".join(self.strings[1:])
        fr = self.frames
        b = u(len(fr)) + refs([f[0] for f in fr], 1)
        for col in (1, 2, 3):
            b += b"".join(u(f[col]) for f in fr)
        prev = 0
        for f in fr:
            b += s(((f[4] - prev + 2**63) % 2**64) - 2**63)
            prev = f[4]
        sec["frames"] = b + b"".join(u(f[5]) for f in fr)
        nodes = self.nodes[1:]
        sec["nodes"] = u(len(nodes)) + b"".join(u(i - p) for i, (p, _) in enumerate(nodes)) + \
            refs([f for _, f in nodes], 0)
        b = u(len(self.types)) + u(self.default)
        b += b"".join(u(t) + u(un) + u(d) for t, un, d in self.types)
        b += u(self.period_type[0]) + u(self.period_type[1])
        sec["types"] = b + s(self.period) + s(self.time) + s(self.duration)
        b = u(len(self.sets) - 1) + b"".join(u(len(x)) for x in self.sets[1:])
        for labels in self.sets[1:]:
            b += b"".join(u(k) + u(v) + s(n) + u(un) for k, v, n, un in labels)
        sec["sets"] = b
        sec["tail"] = u(self.profile_labels) + u(len(self.comments)) + b"".join(
            u(c) for c in self.comments)
        sec["samples"] = self.samples_section(sorted(self.samples))
        return sec

    def samples_section(self, keys):
        b = u(len(keys))
        prev = 0
        for node, _ in keys:
            b += u(node - prev)
            prev = node
        b += b"".join(u(st) for _, st in keys)
        for t in range(len(self.types)):
            vals = [self.samples[k][t] for k in keys]
            g = 0
            for v in vals:
                g = gcd(g, abs(v))
            b += u(g)
            if g:
                b += b"".join(s(v // g if v >= 0 else -(-v // g)) for v in vals)
        return b

    def body(self, **spoiled):
        sec = self.sections()
        sec.update(spoiled)
        return b"".join(sec.values())


def raw(body):
    return b"PLTB\x01\x00" + body


def zstd(data, *args):
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        return subprocess.run(["zstd", "-q", "-c", "-1", *args, f.name], check=True,
                              stdout=subprocess.PIPE).stdout


def compressed(body, *args):
    return b"PLTB\x01\x01" + zstd(body, *args)


def simple():
    p = Profile()
    p.type("samples", "count")
    for st, v in ((["main", "a", "b"], 10), (["main", "a", "c"], 20), (["main", "d"], 30),
                  (["main", "d", "d", "d"], 40)):
        p.sample(p.stack(st), [v])
    return p


def rich():
    p = Profile()
    p.type("cpu", "nanoseconds")
    p.type("wall", "seconds", 3)
    p.type("alloc_space", "bytes", 9)
    p.default = 1
    p.period_type = (p.str("cpu"), p.str("nanoseconds"))
    p.period, p.time, p.duration = 10101010, 1718000000000000000, 10**10
    f1 = p.frame(b"with\0nul", "/usr/lib/libc.so.6", b"mem\xff.c", 2**32 - 1, 2**64 - 1, 1 | 4)
    f2 = p.frame("entry_SYSCALL_64", "[kernel.kallsyms]", "", 0, 0xFFFFFFFF81000000, 2 | 8)
    n = p.child(p.child(0, f1), f2)
    t = p.labels(("thread", "worker 1"), ("bytes", -4096, "bytes"), ("", -2**63, ""))
    p.sample(n, [-2**63, 2**63 - 1, 0], t)
    p.sample(n, [7, -3, 10**9])
    p.sample(0, [7, -3, 10**9], t)
    p.sample(p.stack(["main", "work", "work"]), [1, 2, 3], p.labels(("thread", "worker 2")))
    p.profile_labels = p.labels(("service_name", "shop"), ("env", "prod"))
    p.comments = [p.str("recorded by a test"), 0, p.str("recorded by a test")]
    return p


def deep():
    p = Profile()
    p.type("samples", "count")
    p.sample(p.stack(["f%d" % (i % 7) for i in range(300)]), [1])
    return p


def wide():
    p = Profile()
    p.type("samples", "count")
    p.type("cpu", "nanoseconds")
    for i in range(120):
        p.sample(p.stack(["main", "handler_%d" % i, "leaf_%d" % (i % 5)]),
                 [1 + i % 3, (1 + i % 3) * 10000000],
                 i % 4 and p.labels(("thread", "t%d" % (i % 4))))
    return p


def repeated():
    """The same string and frame twice: a valid blob whose ids collapse on decoding."""
    p = simple()
    p.strings.append(b"a")
    p.frames.append(p.frames[1])
    p.nodes.append((1, len(p.frames) - 1))
    p.sample(len(p.nodes) - 1, [5])
    p.frames.append((len(p.strings) - 1, 0, 0, 0, 0, 0))
    p.nodes.append((1, len(p.frames) - 1))
    p.sample(len(p.nodes) - 1, [6])
    return p


def valid_seeds():
    empty = Profile()
    typed = Profile()
    typed.type("samples", "count")
    typed.nodes.append((0, typed.frame("unsampled")))
    return {
        "empty": raw(empty.body()),
        "no_samples": raw(typed.body()),
        "simple": raw(simple().body()),
        "rich": raw(rich().body()),
        "deep": raw(deep().body()),
        "wide": raw(wide().body()),
        "repeated_ids": raw(repeated().body()),
        "simple_zstd": compressed(simple().body()),
        "rich_zstd": compressed(rich().body()),
        "wide_zstd": compressed(wide().body()),
    }


def two_nodes():
    p = Profile()
    p.type("samples", "count")
    p.sample(p.stack(["a", "b"]), [1])
    return p


def invalid_seeds():
    sb = simple().body()
    rb = rich().body()
    p = two_nodes()
    with tempfile.TemporaryDirectory() as tmp:
        zeros = os.path.join(tmp, "zeros")
        with open(zeros, "wb") as f:
            f.truncate(8 << 20)
        bomb = subprocess.run(["zstd", "-q", "-c", "-19", zeros], check=True,
                              stdout=subprocess.PIPE).stdout
    tens = two_nodes()
    tens.types[0] = (tens.types[0][0], tens.types[0][1], 10)
    return {
        "bad_magic": b"PLTX\x01\x00" + sb,
        "bad_version": b"PLTB\x02\x00" + sb,
        "bad_flags": b"PLTB\x01\x80" + sb,
        "short_header": b"PLTB\x01",
        "truncated": raw(rb[: len(rb) // 2]),
        "truncated_zstd": compressed(rb)[:-7],
        "trailing_byte": raw(sb + b"\x00"),
        "varint_overflow": raw(b"\xff" * 10 + b"\x01"),
        "huge_count": raw(u(2**40)),
        "count_past_end": raw(u(1000) + b"\x01\x01"),
        "string_past_end": raw(u(2) + u(1) + u(200) + b"a"),
        "name_out_of_range": raw(p.body(frames=u(1) + s(9) + b"\0" * 5)),
        "parent_out_of_range": raw(p.body(nodes=u(2) + u(0) + u(5) + u(0) + u(0))),
        "frame_out_of_range": raw(p.body(nodes=u(2) + u(0) + u(0) + u(0) + s(2))),
        "types_17": raw(p.body(types=u(17))),
        "decimals_10": raw(tens.body()),
        "profile_labels_out_of_range": raw(p.body(tail=u(1) + u(0))),
        "sample_node_out_of_range": raw(p.body(samples=u(1) + u(3) + u(0) + u(1) + u(1))),
        "samples_unsorted": raw(p.body(samples=u(2) + u(2) + u(0) + u(0) + u(0) + u(1) +
                                       u(2) + u(2))),
        "value_overflow": raw(p.body(samples=u(1) + u(2) + u(0) + u(2**62) + s(2))),
        "zstd_bomb": b"PLTB\x01\x01" + bomb,
        "zstd_no_size": compressed(rb, "--no-content-size"),
        "zstd_trailing": compressed(rb) + b"\x00",
        "zstd_as_raw": b"PLTB\x01\x00" + zstd(rb),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus", "blob")
    os.makedirs(out, exist_ok=True)
    seeds = valid_seeds()
    seeds.update(invalid_seeds())
    for name, data in sorted(seeds.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("%d seeds, %d bytes in %s" % (len(seeds), sum(map(len, seeds.values())), out))


if __name__ == "__main__":
    main()
