#!/usr/bin/env python3
"""Keeps the example commands of a Markdown file (docs/COMMANDS.md, README.md) true to the binary.

  doc-examples.py --binary build/fulcrum --doc docs/COMMANDS.md           check (ctest doc_examples)
  doc-examples.py --binary build/fulcrum --doc docs/COMMANDS.md --write   refresh the outputs

An example block is a fenced block (```) with at least one `$ fulcrum ...` or
`$ ./build/fulcrum ...` line. Every `$ ` line of such a block is a command (a line ending in `\\`
continues on the next); the lines after it, up to the next `$ ` line or the fence, are its
output (stdout and stderr together, as a terminal shows them).

How the commands run: each block gets its own scratch directory, and its commands run in order,
each with `bash -c`, in a work directory that holds a symbolic link to every top-level entry of
the repository (so `examples/...` and `catalog` resolve as from the repository root) and
`build/fulcrum` -> the binary, while files a command writes (an export, then a `cat` of it)
stay in the scratch directory. `fulcrum` is on PATH (the binary). The environment is fixed:
HOME, XDG_*, TMPDIR and FULCRUM_DATA_DIR inside the scratch directory (so the user's offers.d,
~/.config/fulcrum/offers.d, starts empty, and an example that imports prices there reads them
back as a user would), FULCRUM_CATALOG the repository's catalog/, TZ=UTC, LC_ALL=C.UTF-8, nothing
else of the caller's environment; the tools through which fulcrum probes the machine (Slurm's
scontrol, sbatch..., nvidia-smi, nvcc, docker) are stubs that fail, as on a machine without
them. `$?` at the start of a command is the previous command's exit status, so `$ echo $?`
works.

Exit codes: the doc's convention is `; echo "exit $?"` on the command (or a following
`$ echo $?`), so the exit code is part of the compared output. A command that exits non-zero
without either is reported; --write appends `; echo "exit $?"` to it.

Markers, an HTML comment on the line before the opening fence (blank lines between allowed):
  <!-- doc-examples: skip (REASON) -->   the block is not run (a running agent, a data dir with
                                          jobs, a GPU, this machine's disk, minutes of run time)
  <!-- doc-examples: abridged -->        the output is shown abridged: each shown output line
                                          must appear in the real output, in order (lines in
                                          between are allowed); a line `...` (optionally
                                          followed by a `#` comment) matches any lines, and a
                                          line ending in `...` any line it begins. If the
                                          output is JSON, the shown keys must be in the real
                                          output with the same values. --write refreshes each
                                          shown line from the next real line with the same
                                          first word (a table's row name; JSON: the shown
                                          keys' real values), or reports that it cannot.

Normalisation (applied to both the shown and the real output before they are compared; a block
whose normalised outputs agree is left as written, so its dates and pids stay stable):
  dates 2026-12-02 -> <date>; times 14:01:44(.917) -> <time>; `pid 1234` -> `pid <pid>`;
  127.0.0.1:PORT / localhost:PORT -> <port>; `/tmp/NAME` (a temporary path) -> /tmp/<tmp>;
  timings `in 0.011 s`, `0.18 s after`, `4 s ago` -> <t> s; `on 2 threads` -> `on <n> threads`;
  trailing blanks of each line. In the real output (also what --write writes) the work directory
  reads /tmp/example, the directory of HOME, FULCRUM_DATA_DIR etc. /tmp/example-env and the
  binary's path /usr/local/bin/fulcrum.

Exit 0 when every example matches, 1 with each difference (file:line of the command, a short
unified diff) on stderr, 2 on usage errors. With --write: 0 once the file is rewritten, 1 if an
abridged output could not be refreshed (edit it by hand).
"""
import argparse
import difflib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!--\s*doc-examples:\s*(skip|abridged)\b.*-->\s*$")
FULCRUM_COMMAND = re.compile(r"^\$ (?:\./build/)?fulcrum\b")
ELLIPSIS = re.compile(r"^\s*(\.\.\.|\[\.\.\.\])\s*(#.*)?$")
SHOWN_EXIT = re.compile(r"\$\?")
SCRATCH_NAME = "/tmp/example"
INSTALLED_BINARY = "/usr/local/bin/fulcrum"
COMMAND_TIMEOUT_S = 60  # per command; a forgotten `agent` without `&` fails, not hangs
# Tools through which fulcrum looks at this machine (a Slurm cluster, a GPU, a CUDA toolkit): a
# stub that fails shadows each, so an example reads the same on a laptop and on a Slurm CI node.
MACHINE_TOOLS = ("scontrol", "sinfo", "squeue", "sbatch", "sacct", "scancel", "srun", "nvidia-smi",
                 "nvcc", "docker")
NORMALISE = [
    (re.compile(r"\b\d{4}-\d{2}-\d{2}\b"), "<date>"),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}(\.\d+)?\b"), "<time>"),
    (re.compile(r"\bpid \d+"), "pid <pid>"),
    (re.compile(r"\b(127\.0\.0\.1|localhost):\d+"), r"\1:<port>"),
    (re.compile(r"/tmp/[^\s/:'\")]+"), "/tmp/<tmp>"),
    (re.compile(r"\bin \d+(\.\d+)? s\b"), "in <t> s"),
    (re.compile(r"\b\d+(\.\d+)? s (after|ago)\b"), r"<t> s \2"),
    (re.compile(r"\bon \d+ threads?\b"), "on <n> threads"),
]


class Command:
    def __init__(self, line, text, output_start, output_end):
        self.line = line  # 1-based line of the `$ ` line
        self.text = text  # the command, continuation lines joined with "\n"
        self.first = line - 1  # index of the `$ ` line
        self.output_start = output_start  # indexes [output_start, output_end) of the output
        self.output_end = output_end


class Block:
    def __init__(self, fence_line, marker, commands):
        self.fence_line = fence_line
        self.marker = marker  # None, "skip" or "abridged"
        self.commands = commands


def parse(lines):
    """The example blocks of the document (lines without their newlines)."""
    blocks = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        start = i
        end = start + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        body = range(start + 1, end)
        if any(FULCRUM_COMMAND.match(lines[k]) for k in body):
            blocks.append(Block(start + 1, marker_before(lines, start),
                                commands_of(lines, start + 1, end)))
        i = end + 1
    return blocks


def marker_before(lines, fence):
    k = fence - 1
    while k >= 0 and not lines[k].strip():
        k -= 1
    found = MARKER.match(lines[k]) if k >= 0 else None
    return found.group(1) if found else None


def commands_of(lines, first, end):
    commands = []
    k = first
    while k < end:
        if not lines[k].startswith("$ "):
            k += 1  # text before the first command: not compared
            continue
        start = k
        text = [lines[k][2:]]
        while text[-1].endswith("\\") and k + 1 < end:
            k += 1
            text.append(lines[k])
        k += 1
        output_start = k
        while k < end and not lines[k].startswith("$ "):
            k += 1
        commands.append(Command(start + 1, "\n".join(text), output_start, k))
    return commands


def normalise(text_lines):
    out = []
    for line in text_lines:
        for pattern, replacement in NORMALISE:
            line = pattern.sub(replacement, line)
        out.append(line.rstrip())
    return out


def line_matches(shown, real):
    """A shown line of an abridged block: equal, or a prefix of real ending in `...`."""
    return shown == real or (shown.endswith("...") and real.startswith(shown[:-3].rstrip()))


def abridged_match(shown, real):
    """Each shown line appears in real, in order; `...` lines match anything."""
    position = 0
    for line in shown:
        if ELLIPSIS.match(line):
            continue
        while position < len(real) and not line_matches(line, real[position]):
            position += 1
        if position == len(real):
            return False
        position += 1
    return True


def line_key(line):
    """What identifies a shown line of an abridged block in the real output: its first word
    (a table's row name), `-` for a rule line of dashes, "" for a blank line."""
    words = line.split()
    if not words:
        return ""
    if set(line.strip()) <= set("- "):
        return "-"
    return words[0]


def abridged_refresh(shown, real):
    """The shown lines replaced by the real lines of the same key, in order (None if one has
    none); a shown line that still matches stays as written."""
    position, out = 0, []
    for line in shown:
        if ELLIPSIS.match(line):
            out.append(line)
            continue
        key = line_key(line)
        while position < len(real) and line_key(real[position]) != key:
            position += 1
        if position == len(real):
            return None
        same = line_matches(normalise([line])[0], normalise([real[position]])[0])
        out.append(line if same else real[position])
        position += 1
    return out


def json_of(lines):
    try:
        return json.loads("\n".join(line for line in lines if not ELLIPSIS.match(line)))
    except ValueError:
        return None


def json_subset(shown, real):
    """Every key (and list element) shown is in real with the same value."""
    if isinstance(shown, dict):
        return isinstance(real, dict) and all(k in real and json_subset(v, real[k])
                                              for k, v in shown.items())
    if isinstance(shown, list):
        return (isinstance(real, list) and len(shown) == len(real)
                and all(json_subset(a, b) for a, b in zip(shown, real)))
    return shown == real


def json_project(shown, real):
    """real restricted to the keys shown (real's value where the shapes differ)."""
    if isinstance(shown, dict) and isinstance(real, dict):
        return {k: json_project(v, real[k]) for k, v in shown.items() if k in real}
    if isinstance(shown, list) and isinstance(real, list) and len(shown) == len(real):
        return [json_project(a, b) for a, b in zip(shown, real)]
    return real


def compare_abridged(shown, real):
    """(matches, refreshed lines for --write or None) of an abridged output."""
    shown_json, real_json = json_of(shown), json_of(real)
    if shown_json is not None and real_json is not None:
        if json_subset(shown_json, real_json):
            return True, None
        return False, json.dumps(json_project(shown_json, real_json), indent=2, sort_keys=True,
                                 ensure_ascii=False).split("\n")
    if abridged_match(normalise(shown), normalise(real)):
        return True, None
    return False, abridged_refresh(shown, real)


class Sandbox:
    """One scratch directory per block, looking like the repository root."""

    def __init__(self, repo, binary):
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="doc-examples-"))
        self.work = os.path.join(self.root, "work")
        self.binary = binary
        env = os.path.join(self.root, "env")
        for name in ("work/build", "env/bin", "env/home", "env/offers.d", "env/data", "env/tmp"):
            os.makedirs(os.path.join(self.root, name))
        for entry in os.listdir(repo):
            if entry not in (".git", "build"):
                os.symlink(os.path.join(repo, entry), os.path.join(self.work, entry))
        os.symlink(binary, os.path.join(self.work, "build", "fulcrum"))
        os.symlink(binary, os.path.join(env, "bin", "fulcrum"))
        for tool in MACHINE_TOOLS:
            stub = os.path.join(env, "bin", tool)
            with open(stub, "w") as f:
                f.write("#!/bin/sh\necho \"%s: not available to doc examples\" >&2\nexit 127\n"
                        % tool)
            os.chmod(stub, 0o755)
        home = os.path.join(env, "home")
        self.env = {
            "PATH": os.path.join(env, "bin") + ":/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "XDG_CONFIG_HOME": os.path.join(home, ".config"),
            "XDG_DATA_HOME": os.path.join(home, ".local/share"),
            "XDG_STATE_HOME": os.path.join(home, ".local/state"),
            "XDG_CACHE_HOME": os.path.join(home, ".cache"),
            "TMPDIR": os.path.join(env, "tmp"),
            "FULCRUM_DATA_DIR": os.path.join(env, "data"),
            "FULCRUM_CATALOG": os.path.join(repo, "catalog"),
            "TZ": "UTC",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TERM": "dumb",
            "COLUMNS": "100",
        }
        self.previous_rc = 0

    def run(self, text):
        script = "(exit %d)\n%s" % (self.previous_rc, text)
        # A session of its own, so whatever the command leaves behind (a `&` job) is ended with it.
        process = subprocess.Popen(["bash", "--noprofile", "--norc", "-c", script], cwd=self.work,
                                   env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            output, _ = process.communicate(timeout=COMMAND_TIMEOUT_S)
            rc = process.returncode
        except subprocess.TimeoutExpired:
            output, rc = b"(doc-examples: timed out)\n", 124
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
        output = output.decode("utf-8", "replace")
        self.previous_rc = rc
        for path, name in ((self.work, SCRATCH_NAME), (self.root + "/env", SCRATCH_NAME + "-env"),
                           (self.binary, INSTALLED_BINARY)):
            output = output.replace(path, name)
        lines = output.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return lines, rc

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)


def shows_exit(block, index):
    command = block.commands[index]
    if SHOWN_EXIT.search(command.text):
        return True
    following = block.commands[index + 1] if index + 1 < len(block.commands) else None
    return following is not None and SHOWN_EXIT.search(following.text) is not None


def run_block(block, lines, repo, binary, doc, failures, unwritable):
    """Runs the block; returns {command index: (new command text or None, new output)} to write."""
    sandbox = Sandbox(repo, binary)
    replacements = {}
    try:
        for index, command in enumerate(block.commands):
            real, rc = sandbox.run(command.text)
            shown = lines[command.output_start:command.output_end]
            where = "%s:%d" % (doc, command.line)
            new_text = None
            if rc != 0 and not shows_exit(block, index):
                failures.append("%s: `%s` exits %d, which the doc does not show (add `; echo "
                                "\"exit $?\"`)" % (where, command.text.split("\n")[0], rc))
                new_text = command.text + '; echo "exit $?"'
                real = real + ["exit %d" % rc]
            if block.marker == "abridged":
                matches, refreshed = compare_abridged(shown, real)
                if matches and new_text is not None:
                    replacements[index] = (new_text, shown + real[-1:])
                elif not matches:
                    failures.append("%s: the abridged output is not found in the real output%s\n%s"
                                    % (where, "" if refreshed else " (--write cannot refresh it)",
                                       diff(shown, real)))
                    if refreshed:
                        replacements[index] = (new_text, refreshed)
                    else:
                        unwritable.append(where)
                continue
            if normalise(shown) != normalise(real):
                failures.append("%s: the output differs\n%s" % (where, diff(shown, real)))
                replacements[index] = (new_text, real)
            elif new_text is not None:
                replacements[index] = (new_text, shown)
    finally:
        sandbox.close()
    return replacements


def diff(shown, real, limit=40):
    text = list(difflib.unified_diff(shown, real, "shown", "real", n=1, lineterm=""))
    if len(text) > limit:
        text = text[:limit] + ["... (%d more diff lines)" % (len(text) - limit)]
    return "\n".join("    " + line for line in text)


def apply(lines, block, replacements):
    """Rewrites the block's commands from the last so earlier indexes stay valid."""
    for index in sorted(replacements, reverse=True):
        command = block.commands[index]
        new_text, output = replacements[index]
        lines[command.output_start:command.output_end] = output
        if new_text is not None:
            first_line = command.first
            last_line = command.output_start
            lines[first_line:last_line] = ("$ " + new_text).split("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--doc", required=True, action="append", help="Markdown file (repeatable)")
    parser.add_argument("--repo", help="repository root (default: the script's parent directory)")
    parser.add_argument("--write", action="store_true", help="replace stale outputs in place")
    args = parser.parse_args()
    repo = os.path.realpath(args.repo or os.path.join(os.path.dirname(__file__), ".."))
    binary = os.path.realpath(args.binary)
    if not os.access(binary, os.X_OK):
        print("doc-examples: error: --binary %s: expected an executable file" % args.binary,
              file=sys.stderr)
        return 2
    failures = []
    unwritable = []  # abridged outputs --write cannot refresh
    counts = {"run": 0, "skip": 0, "abridged": 0}
    for doc in args.doc:
        try:
            with open(doc, encoding="utf-8") as f:
                text = f.read()
        except OSError as error:
            print("doc-examples: error: --doc %s: %s" % (doc, error.strerror), file=sys.stderr)
            return 2
        lines = text.split("\n")
        blocks = parse(lines)
        doc_failures = []
        for block in reversed(blocks):  # from the end, so rewrites keep earlier line numbers
            if block.marker == "skip":
                counts["skip"] += 1
                continue
            counts["abridged" if block.marker == "abridged" else "run"] += 1
            block_failures = []
            replacements = run_block(block, lines, repo, binary, doc, block_failures, unwritable)
            doc_failures[:0] = block_failures
            if args.write and replacements:
                apply(lines, block, replacements)
        failures += doc_failures
        if args.write:
            new_text = "\n".join(lines)
            if new_text != text:
                with open(doc, "w", encoding="utf-8") as f:
                    f.write(new_text)
                print("doc-examples: rewrote %s" % doc, file=sys.stderr)
    for failure in failures:
        print(failure, file=sys.stderr)
    print("doc-examples: %d blocks run, %d abridged, %d skipped; %d difference(s)%s"
          % (counts["run"], counts["abridged"], counts["skip"], len(failures),
             " (rewritten where not abridged)" if args.write and failures else ""), file=sys.stderr)
    if args.write:
        return 1 if unwritable else 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
