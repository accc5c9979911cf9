#!/usr/bin/python3
"""Checks fulcrum's --json outputs against their contracts in docs/schemas/ (JSON Schema draft 7,
as Debian's python3-jsonschema 4.10 validates it; https://json-schema.org/draft-07/schema).

  check-json-schema.py --schemas DIR --command CMD [FILE]
      validate one output (FILE or stdin) of `fulcrum CMD --json` (CMD as the schema's file name:
      plan, spot-interval, ...; an object with an "error" key is checked against error.json)
  check-json-schema.py --schemas DIR --check-schemas
      every schema in DIR is itself a valid draft-7 schema
  check-json-schema.py --schemas DIR --docs FILE|DIR...
      every example in the Markdown files (a DIR: its *.md) whose command line (`$ ... fulcrum CMD ... --json`) is
      followed by its JSON output validates against CMD's schema; an example marked "excerpt"
      on the line before its block is checked for types and undocumented keys only

Exit 0 when everything validates, 1 when something does not (each failure on stderr), 2 on
usage errors. Run with /usr/bin/python3 (Debian's jsonschema).
"""
import argparse
import json
import os
import re
import sys

import jsonschema


def load_schema(schemas, command):
    path = os.path.join(schemas, command + ".json")
    if not os.path.exists(path):
        return None, path
    with open(path) as f:
        return json.load(f), path


def drop_required(schema):
    """The schema without "required" anywhere: for excerpts, which leave parts out."""
    if isinstance(schema, dict):
        return {k: drop_required(v) for k, v in schema.items() if k != "required"}
    if isinstance(schema, list):
        return [drop_required(v) for v in schema]
    return schema


def errors_of(schemas, command, document, excerpt=False):
    if isinstance(document, dict) and "error" in document:
        command = "error"
    schema, path = load_schema(schemas, command)
    if schema is None:
        return ["no schema %s for `fulcrum %s --json`" % (path, command)]
    if excerpt:
        schema = drop_required(schema)
    validator = jsonschema.Draft7Validator(schema)
    out = []
    for e in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        out.append("%s: at %s: %s" % (os.path.basename(path), where, e.message[:300]))
    return out


def command_of(line, schemas):
    """`$ ./build/fulcrum spot interval --x --json` -> "spot-interval" (the longest command path
    whose schema exists), or None when the line runs no fulcrum command with --json."""
    words = line[1:].split()
    at = next((i for i, w in enumerate(words) if w == "fulcrum" or w.endswith("/fulcrum")), None)
    if at is None or "--json" not in words or ">" in words or "|" in words:
        return None
    path = [w for w in words[at + 1:at + 3] if re.fullmatch(r"[a-z][a-z-]*", w)]
    for n in range(len(path), 0, -1):
        name = "-".join(path[:n])
        if os.path.exists(os.path.join(schemas, name + ".json")):
            return name
    return path[0] if path else None


def doc_examples(text, schemas):
    """(line number, command, JSON text, excerpt) of each example in a Markdown text."""
    lines = text.split("\n")
    in_block, excerpt, i = False, False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_block = not in_block
            if in_block:
                # the 3 lines above, doc-examples.py's marker (<!-- doc-examples: ... -->) left out
                above = [text for text in lines[max(0, i - 4):i]
                         if not text.startswith("<!-- doc-examples:")]
                before = "\n".join(above[-3:]).lower()
                excerpt = "excerpt" in before
            i += 1
            continue
        if in_block and line.startswith("$ "):
            start, command_line = i, line
            while command_line.endswith("\\") and i + 1 < len(lines):
                i += 1
                command_line = command_line[:-1] + " " + lines[i].strip()
            command = command_of(command_line, schemas)
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith("$ ") and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            text_out = "\n".join(body).strip()
            if command and text_out.startswith(("{", "[")):
                yield start + 1, command, text_out, excerpt
            continue
        i += 1


def markdown_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                if name.endswith(".md"):
                    yield os.path.join(path, name)
        else:
            yield path


def check_docs(schemas, paths):
    failures, checked = [], 0
    files = list(markdown_files(paths))
    for name in files:
        with open(name) as f:
            text = f.read()
        for line, command, body, excerpt in doc_examples(text, schemas):
            checked += 1
            if excerpt:  # "..." stands for left-out items or fields
                body = re.sub(r"^\s*\.\.\.,?\s*$\n?", "", body, flags=re.M)
                body = re.sub(r",(\s*[\]}])", r"\1", body)
            try:
                document = json.loads(body)
            except json.JSONDecodeError as e:
                failures.append("%s:%d: the output of `fulcrum %s --json` is not JSON (%s); mark a "
                                "shortened example as an excerpt" % (name, line, command, e))
                continue
            for error in errors_of(schemas, command, document, excerpt):
                failures.append("%s:%d: %s" % (name, line, error))
    print("checked %d JSON examples in %d files" % (checked, len(files)))
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--schemas", required=True)
    parser.add_argument("--command")
    parser.add_argument("--check-schemas", action="store_true")
    parser.add_argument("--docs", nargs="+")
    parser.add_argument("file", nargs="?")
    args = parser.parse_args()
    failures = []
    if args.check_schemas:
        names = sorted(n for n in os.listdir(args.schemas) if n.endswith(".json"))
        for name in names:
            with open(os.path.join(args.schemas, name)) as f:
                schema = json.load(f)
            try:
                jsonschema.Draft7Validator.check_schema(schema)
            except jsonschema.SchemaError as e:
                failures.append("%s: not a valid draft-7 schema: %s" % (name, e.message))
        print("checked %d schemas" % len(names))
    elif args.docs:
        failures = check_docs(args.schemas, args.docs)
    elif args.command:
        text = open(args.file).read() if args.file else sys.stdin.read()
        try:
            document = json.loads(text)
        except json.JSONDecodeError as e:
            print("the output is not one JSON document: %s" % e, file=sys.stderr)
            return 1
        failures = errors_of(args.schemas, args.command, document)
    else:
        parser.print_usage(sys.stderr)
        return 2
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
