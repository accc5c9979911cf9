#!/usr/bin/env python3
"""ctest doc_examples_check_fails: doc-examples.py --check fails (exit 1, file:line of the
command) on doctored examples, skips marked blocks, and --write turns a stale doc into one that
--check passes. The expected outputs come from the binary (through --write), never from here."""
import argparse
import os
import subprocess
import sys
import tempfile

FENCE = "```"
# What varies per run, printed by a command and shown differently: normalised, so not a difference.
VARYING = ("echo 'pid 4242 at 2026-01-02 03:04:05.678 on 127.0.0.1:5555, /tmp/fulcrum-x1Yz9Q: "
           "in 9.5 s on 64 threads, 3 s ago'")
VARYING_SHOWN = ("pid 1 at 2025-12-31 23:59:59 on 127.0.0.1:41795, /tmp/readme: in 0.011 s on "
                 "2 threads, 0 s ago")


def run(script, binary, doc, *extra):
    done = subprocess.run([sys.executable, script, "--binary", binary, "--doc", doc, *extra],
                          capture_output=True, text=True, timeout=300)
    return done.returncode, done.stderr


def expect(condition, message, stderr=""):
    if not condition:
        print("FAIL: %s\n%s" % (message, stderr), file=sys.stderr)
        sys.exit(1)


def line_of(text, command):
    """1-based line of `$ COMMAND` in text."""
    return text.split("\n").index("$ " + command) + 1


def synthetic(script, binary, tmp):
    doc = os.path.join(tmp, "synthetic.md")
    text = "\n".join([
        "# doc", "", FENCE, "$ fulcrum version", "fulcrum 0.0.0-doctored", FENCE, "",
        FENCE, "$ fulcrum offers --provider awz", "fulcrum: error: something", FENCE, "",
        "<!-- doc-examples: skip (would fail if it ran) -->", "",
        FENCE, "$ fulcrum no-such-command", "all fine", FENCE, "",
        "<!-- doc-examples: abridged -->", FENCE, "$ fulcrum version --json", "{",
        '  "version": "0.0.0-doctored"', "}", FENCE, "",
        "<!-- doc-examples: abridged -->", FENCE, "$ fulcrum gpus", "...",
        "H100-SXM5-80GB  doctored row", "...", FENCE, "",
        FENCE, "$ fulcrum version >/dev/null", "$ " + VARYING, VARYING_SHOWN, FENCE, "",
    ])
    with open(doc, "w") as f:
        f.write(text)
    rc, err = run(script, binary, doc)
    expect(rc == 1, "--check on doctored examples exits 1 (got %d)" % rc, err)
    for command in ("fulcrum version", "fulcrum offers --provider awz", "fulcrum version --json",
                    "fulcrum gpus"):
        line = line_of(text, command)
        expect("%s:%d:" % (doc, line) in err, "--check names %s:%d" % (doc, line), err)
    expect("%s:%d:" % (doc, line_of(text, "fulcrum no-such-command")) not in err,
           "--check does not run the skipped block", err)
    expect("%s:%d:" % (doc, line_of(text, VARYING)) not in err,
           "dates, times, pids, ports, temporary paths, timings and threads are normalised", err)
    expect("exits 2, which the doc does not show" in err, "--check reports the hidden exit code",
           err)
    rc, err = run(script, binary, doc, "--write")
    expect(rc == 0, "--write refreshes every block (got %d)" % rc, err)
    with open(doc) as f:
        written = f.read()
    expect('$ fulcrum offers --provider awz; echo "exit $?"' in written,
           "--write adds the exit code to the command", written)
    expect("0.0.0-doctored" not in written and "doctored row" not in written,
           "--write replaces the doctored outputs", written)
    expect("$ fulcrum no-such-command\nall fine" in written, "--write leaves skipped blocks",
           written)
    expect(VARYING_SHOWN in written, "--write leaves outputs equal after normalisation", written)
    rc, err = run(script, binary, doc)
    expect(rc == 0, "--check passes after --write (got %d)" % rc, err)
    with open(doc, "w") as f:  # doctor the refreshed doc again: one digit of the table
        f.write(written.replace("H100-SXM5-80GB   ", "H100-SXM5-80GB  9", 1))
    rc, err = run(script, binary, doc)
    expect(rc == 1 and "%s:%d:" % (doc, line_of(written, "fulcrum gpus")) in err,
           "--check catches a changed abridged row", err)


def doctored_copy(script, binary, source, tmp):
    """The `fulcrum version` section of the real doc, its first output line changed."""
    with open(source) as f:
        lines = f.read().split("\n")
    start = lines.index("## fulcrum version")
    excerpt = lines[start:]
    command = next(i for i, line in enumerate(excerpt)
                   if line.startswith("$ ") and "fulcrum version" in line)
    doc = os.path.join(tmp, "COMMANDS-excerpt.md")
    with open(doc, "w") as f:
        f.write("\n".join(excerpt))
    rc, err = run(script, binary, doc)
    expect(rc == 0, "--check passes on the undoctored excerpt of %s (got %d)" % (source, rc), err)
    excerpt[command + 1] += " (doctored)"
    with open(doc, "w") as f:
        f.write("\n".join(excerpt))
    rc, err = run(script, binary, doc)
    expect(rc == 1 and "%s:%d:" % (doc, command + 1) in err and "(doctored)" in err,
           "--check fails on the doctored excerpt at the command's line", err)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                          "doc-examples.py"))
    parser.add_argument("--binary", required=True)
    parser.add_argument("--doc", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="doc-examples-test-") as tmp:
        synthetic(args.script, args.binary, tmp)
        doctored_copy(args.script, args.binary, args.doc, tmp)
    print("doc_examples_check_fails: ok")


if __name__ == "__main__":
    main()
