#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seeds of fuzz_multipart into fuzz/corpus/multipart/.

Each seed is the request's Content-Type value, a newline, then the body:
bodies as Pyroscope's clients (pyroscope-go's multipart.Writer) and curl
send them, RFC 2046's preamble, padding and epilogue, and one of each
malformed shape the reader refuses.  Seeds starting with '{' are
sample_type_config documents (the target parses every input as one too).
"""
import os
import sys

GO = "9051914041544df3e7e63a7a8f0a2a3b8d3c1e7f5a6b4c2d0e9f8a7b6c5d"
CT = "multipart/form-data; boundary=" + GO
HEAP = (b'{"alloc_objects":{"units":"objects"},"alloc_space":{"units":"bytes"},'
        b'"inuse_objects":{"units":"objects","aggregation":"average"},'
        b'"inuse_space":{"units":"bytes","aggregation":"average"}}')
PPROF = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\r\n--\r\n-" + GO.encode() + b"\x00"


def go_body(parts, boundary=GO):
    """Parts (name, filename, data) as Go's Writer.CreateFormFile writes them."""
    out = b""
    for name, filename, data in parts:
        out += b"\r\n--" if out else b"--"
        out += boundary.encode() + b"\r\n"
        out += b'Content-Disposition: form-data; name="%s"; filename="%s"\r\n' % (
            name.encode(), filename.encode())
        out += b"Content-Type: application/octet-stream\r\n\r\n" + data
    return out + b"\r\n--" + boundary.encode() + b"--\r\n"


def part(headers, data, first=False, boundary=b"b"):
    lead = b"--" if first else b"\r\n--"
    return lead + boundary + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + data


CD = b'Content-Disposition: form-data; name="profile"'
B = "multipart/form-data; boundary=b"


def seeds():
    yield "go_profile_config", CT, go_body([("profile", "profile.pprof", PPROF),
                                           ("sample_type_config", "sample_type_config.json",
                                            HEAP)])
    yield "go_profile_only", CT, go_body([("profile", "profile.pprof", PPROF)])
    yield "go_prev_profile", CT, go_body([("profile", "profile.pprof", PPROF),
                                         ("prev_profile", "profile.pprof", PPROF)])
    yield "go_duplicate_profile", CT, go_body([("profile", "profile.pprof", b"a"),
                                              ("profile", "profile.pprof", b"b")])
    yield "go_empty_parts", CT, go_body([("profile", "profile.pprof", b""),
                                        ("sample_type_config", "x", b"")])
    curl = "------------------------d74496d66958873e"
    yield "curl_two_parts", "multipart/form-data; boundary=" + curl, (
        part([b'Content-Disposition: form-data; name="profile"; filename="cpu.pb.gz"',
              b"Content-Type: application/octet-stream"], PPROF, True, curl.encode()) +
        part([b'Content-Disposition: form-data; name="x"'], b"1", False, curl.encode()) +
        b"\r\n--" + curl.encode() + b"--\r\n")
    yield "quoted_boundary", ' Multipart/Form-Data ; charset=utf-8; BOUNDARY="a b:c(d)?="', (
        part([CD], b"x", True, b"a b:c(d)?=") + b"\r\n--a b:c(d)?=--")
    yield "preamble_epilogue", B, (b"a --b in the preamble\r\n" +
                                   part([CD, b"X-Other: 1"], b"\r\n") +
                                   b"\r\n--b-- \t\r\nepilogue --b\r\n")
    yield "escaped_values", B, (part([b'content-disposition: FORM-DATA ; NAME="a\\"b" ;'
                                      b'filename="x\\\\y"',
                                      b'Content-Type: text/plain; charset="utf-8"'], b"v", True)
                                + b"\r\n--b--")
    yield "sixteen_parts", B, (b"".join(part([b'Content-Disposition: form-data; name="p%d"' % i],
                                             b"x", i == 0) for i in range(16)) + b"\r\n--b--")
    yield "seventeen_parts", B, (b"".join(part([b'Content-Disposition: form-data; name="p%d"' % i],
                                               b"x", i == 0) for i in range(17)) + b"\r\n--b--")
    yield "encoding_binary", B, part([CD, b"Content-Transfer-Encoding: binary"], b"x", True) + \
        b"\r\n--b--"
    yield "encoding_base64", B, part([CD, b"Content-Transfer-Encoding: base64"], b"eA==", True) + \
        b"\r\n--b--"
    yield "lf_only", B, b"--b\n" + CD + b"\n\nx\n--b--\n"
    yield "folded_header", B, part([CD, b" continued"], b"x", True) + b"\r\n--b--"
    yield "long_header", B, part([CD, b"X: " + b"v" * 2100], b"x", True) + b"\r\n--b--"
    yield "no_close", B, part([CD], b"x", True)
    yield "close_first", B, b"--b--\r\n"
    yield "boundary_junk", B, part([CD], b"x", True) + b"\r\n--bx\r\n"
    yield "no_name", B, part([b"Content-Disposition: form-data; filename=f"], b"x", True) + \
        b"\r\n--b--"
    yield "unterminated_quote", B, part([b'Content-Disposition: form-data; name="a'], b"x",
                                        True) + b"\r\n--b--"
    yield "control_char", B, part([b'Content-Disposition: form-data; name="\x01"'], b"x",
                                  True) + b"\r\n--b--"
    yield "empty_body", B, b""
    yield "bad_content_type", "multipart/form-data; boundary=a!b; boundary=c", b"--c\r\n"
    yield "config_heap", None, HEAP
    yield "config_dotnet", None, (
        b'{\n  "alloc-samples": {"units": "objects", "display-name": "alloc_objects"},\n'
        b'  "cpu": {"units": "samples", "sampled": true},\n'
        b'  "lock-time": {"Units": "lock_nanoseconds", "cumulative": false, "future": [1]},\n'
        b'  "gone": null\n}\n')
    yield "config_bad_types", None, b'{"a": {"units": 1, "sampled": "yes"}, "a": {}}'


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "multipart")
    os.makedirs(out, exist_ok=True)
    for name, ct, body in seeds():
        data = body if ct is None else ct.encode() + b"\n" + body
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
