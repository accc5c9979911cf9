#!/usr/bin/env python3
"""Checks every #include between rooms (src/<room>/) against the layering table.

The table is the fenced ```layers block of docs/ARCHITECTURE.md, one line per room:

    room: rooms it may include          (its own room always; `core:` = core includes no room)
    never: A B -> X Y                   (no room of A B reaches X Y, directly or through others;
                                         `*` on the left = every room but those on the right)
    tests-only: support                 (include folders of tests/ that only *_test.cc may use)

The script fails (exit 1), naming file:line and the arrow, when an include crosses rooms in a way
the table does not allow, when a room under src/ is missing from the table, when the table has a
cycle (arrows only point down), or when the table itself allows a path a `never:` line forbids.
On success it prints the layers the table implies, bottom first. Exit 2: no table, bad table line.

Usage: scripts/check-layering.py [--root REPO] [--table FILE]
"""

import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)')
TEST_FILE = re.compile(r"_(test|perftest)\.cc$")


class TableError(Exception):
    pass


def parse_table(path):
    """Returns (allowed: room -> set, nevers: [(line, lefts, rights)], tests_only: set)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as error:
        raise TableError(f"{path}: {error.strerror}")
    start = None
    for number, line in enumerate(lines, 1):
        if line.strip() == "```layers":
            start = number
            break
    if start is None:
        raise TableError(f"{path}: no ```layers block (the layering table)")
    allowed, nevers, tests_only = {}, [], set()
    for number in range(start + 1, len(lines) + 1):
        line = lines[number - 1].split("#", 1)[0].strip()
        if lines[number - 1].strip() == "```":
            return allowed, nevers, tests_only
        if not line:
            continue
        where = f"{path}:{number}"
        key, colon, rest = line.partition(":")
        key = key.strip()
        if not colon or not re.fullmatch(r"[a-z_*-]+", key):
            raise TableError(f"{where}: expected 'room: rooms...', 'never: A -> B' or "
                             f"'tests-only: folders', found {line!r}")
        words = rest.split()
        if key == "never":
            if "->" not in words or words.count("->") != 1:
                raise TableError(f"{where}: expected 'never: A B -> X Y', found {line!r}")
            arrow = words.index("->")
            lefts, rights = words[:arrow], words[arrow + 1:]
            if not lefts or not rights:
                raise TableError(f"{where}: expected rooms on both sides of '->', found {line!r}")
            nevers.append((where, lefts, rights))
        elif key == "tests-only":
            tests_only.update(words)
        else:
            if key in allowed:
                raise TableError(f"{where}: room '{key}' is listed twice")
            allowed[key] = set(words) - {key}
    raise TableError(f"{path}:{start}: the ```layers block is not closed")


def check_table(allowed, nevers):
    """Problems of the table itself: unknown rooms, cycles, paths a never: line forbids."""
    problems = []
    rooms = set(allowed)
    for room, targets in sorted(allowed.items()):
        for target in sorted(targets - rooms):
            problems.append(f"table: {room} may include '{target}', which is not a room of the "
                            f"table")
    reach = {room: reachable(allowed, room) for room in rooms}
    for room in sorted(rooms):
        if room in reach[room]:
            problems.append(f"table: a cycle through {room} (arrows only point down): " +
                            " -> ".join(path_between(allowed, room, room)))
    for where, lefts, rights in nevers:
        for name in lefts + rights:
            if name != "*" and name not in rooms:
                problems.append(f"{where}: '{name}' is not a room of the table")
        sources = sorted(rooms - set(rights)) if lefts == ["*"] else lefts
        for source in sources:
            for target in rights:
                if source in rooms and target in reach[source]:
                    problems.append(f"{where}: the table lets {source} reach {target} (" +
                                    " -> ".join(path_between(allowed, source, target)) +
                                    "), which this line forbids")
    return problems


def reachable(allowed, room):
    seen, stack = set(), list(allowed.get(room, ()))
    while stack:
        r = stack.pop()
        if r in seen:
            continue
        seen.add(r)
        stack.extend(allowed.get(r, ()))
    return seen


def path_between(allowed, source, target):
    """A shortest arrow path source -> ... -> target (breadth first; source == target: a cycle)."""
    previous, seen, frontier = {}, {source}, [source]
    while frontier:
        next_frontier = []
        for room in frontier:
            for r in sorted(allowed.get(room, ())):
                if r == target:
                    path = [r, room]
                    while path[-1] != source:
                        path.append(previous[path[-1]])
                    return list(reversed(path))
                if r in seen:
                    continue
                seen.add(r)
                previous[r] = room
                next_frontier.append(r)
        frontier = next_frontier
    return [source, "?", target]


def layers_of(allowed):
    """Rooms by height: a room sits one above the highest room it may include."""
    height = {}

    def h(room, visiting=()):
        if room in height:
            return height[room]
        if room in visiting:
            return 0
        below = [h(r, visiting + (room,)) for r in allowed.get(room, ()) if r in allowed]
        height[room] = 1 + max(below) if below else 0
        return height[room]

    for room in allowed:
        h(room)
    out = {}
    for room, level in height.items():
        out.setdefault(level, []).append(room)
    return [sorted(out[level]) for level in sorted(out)]


def check_includes(root, allowed, tests_only):
    """(problems, number of cross-room includes checked, number of files scanned)."""
    src = os.path.join(root, "src")
    rooms_on_disk = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    problems = [f"src/{room}/: a room that the layering table does not list (add a line "
                f"'{room}: rooms it may include')" for room in rooms_on_disk if room not in allowed]
    checked = files = 0
    for room in rooms_on_disk:
        for directory, subdirs, names in os.walk(os.path.join(src, room)):
            subdirs.sort()
            for name in sorted(names):
                if not name.endswith((".cc", ".h")):
                    continue
                files += 1
                path = os.path.join(directory, name)
                shown = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        match = INCLUDE.match(line)
                        if not match:
                            continue
                        included = match.group(1) or match.group(2)
                        target = included.split("/", 1)[0] if "/" in included else None
                        quoted = match.group(1) is not None
                        if target is None or target == room:
                            continue
                        if target in tests_only and quoted:
                            if not TEST_FILE.search(name):
                                problems.append(f"{shown}:{number}: {room} -> tests/{target}: "
                                                f"only *_test.cc files include test helpers")
                            continue
                        if target not in rooms_on_disk and target not in allowed:
                            if quoted:
                                problems.append(f"{shown}:{number}: \"{included}\" names no room "
                                                f"of src/ and no tests-only folder")
                            continue
                        checked += 1
                        if target not in allowed.get(room, set()):
                            may = ", ".join(sorted(allowed.get(room, set()))) or "no other room"
                            problems.append(f"{shown}:{number}: {room} -> {target} is not allowed "
                                            f"by the layering table ({room} may include {may})")
    return problems, checked, files


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--root", default=os.path.normpath(os.path.join(here, "..")),
                        help="the repository (its src/ is scanned)")
    parser.add_argument("--table", help="the file holding the ```layers block "
                        "(default: ROOT/docs/ARCHITECTURE.md)")
    args = parser.parse_args(argv)
    table = args.table or os.path.join(args.root, "docs", "ARCHITECTURE.md")
    try:
        allowed, nevers, tests_only = parse_table(table)
    except TableError as error:
        print(f"check-layering: {error}", file=sys.stderr)
        return 2
    if not os.path.isdir(os.path.join(args.root, "src")):
        print(f"check-layering: {args.root}/src: no such folder", file=sys.stderr)
        return 2
    problems = check_table(allowed, nevers)
    include_problems, checked, files = check_includes(args.root, allowed, tests_only)
    problems += include_problems
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"check-layering: {len(problems)} problem(s); the table is the ```layers block of "
              f"{os.path.relpath(table, args.root)}", file=sys.stderr)
        return 1
    print(f"check-layering: {checked} includes between rooms in {files} files follow the table")
    for level, rooms in enumerate(layers_of(allowed)):
        print(f"  layer {level}: {' '.join(rooms)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
