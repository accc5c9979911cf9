#!/usr/bin/env python3
"""Keeps docs/COMMANDS.md true to the command table: each command (and subcommand) of
`fulcrum __table` (the tree its --help, completion and man pages come from) has a section headed
`## fulcrum NAME`, and in it an options table generated from the tree between the markers

    <!-- options: NAME -->
    ...
    <!-- /options -->

  check-commands-doc.py --binary build/fulcrum --doc docs/COMMANDS.md          check (ctest)
  check-commands-doc.py --binary build/fulcrum --doc docs/COMMANDS.md --write  regenerate

Exit 0 when the document matches, 1 with each difference on stderr, 2 on usage errors.
"""
import argparse
import json
import re
import subprocess
import sys


def escape(text):
    return (text or "").replace("|", "\\|").replace("\n", " ")


def options_table(command):
    rows = ["| Option | Meaning |", "| --- | --- |"]
    for option in command["options"]:
        if option["names"][0] == "--help":
            continue
        if option["positional"]:
            name = option["names"][0].upper()
        else:
            name = ", ".join(option["names"])
            if option["value_name"]:
                name += " " + option["value_name"]
        rows.append("| `%s` | %s |" % (name, escape(option["help"])))
    if len(rows) == 2:
        rows.append("| (none) | |")
    return "\n".join(rows)


def commands_of(tree):
    """(path, command) for each command and subcommand, in the table's order."""
    for command in tree["commands"]:
        yield command["name"], command
        for sub in command["subcommands"]:
            yield command["name"] + " " + sub["name"], sub


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--doc", required=True)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    tree = json.loads(subprocess.run([args.binary, "__table"], check=True, capture_output=True,
                                     text=True).stdout)
    with open(args.doc) as f:
        doc = f.read()
    failures = []
    for path, command in commands_of(tree):
        if not re.search(r"^## fulcrum %s[ \t]*$" % re.escape(path), doc, re.M):
            failures.append("%s: no section `## fulcrum %s`" % (args.doc, path))
            continue
        block = "<!-- options: %s -->\n%s\n<!-- /options -->" % (path, options_table(command))
        pattern = re.compile(r"<!-- options: %s -->\n.*?<!-- /options -->" % re.escape(path), re.S)
        found = pattern.search(doc)
        if found is None:
            if args.write:  # right after the section's heading line and its blank line
                heading = re.search(r"^## fulcrum %s[ \t]*\n\n?" % re.escape(path), doc, re.M)
                doc = doc[:heading.end()] + block + "\n\n" + doc[heading.end():]
            else:
                failures.append("%s: section `fulcrum %s` has no options table" % (args.doc, path))
        elif found.group(0) != block:
            if args.write:
                doc = doc[:found.start()] + block + doc[found.end():]
            else:
                line = doc[:found.start()].count("\n") + 1
                failures.append("%s:%d: the options of `fulcrum %s` differ from the command table "
                                "(run scripts/check-commands-doc.py --write)" % (args.doc, line, path))
    if args.write:
        with open(args.doc, "w") as f:
            f.write(doc)
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
