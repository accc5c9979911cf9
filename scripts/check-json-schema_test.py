#!/usr/bin/python3
"""Proof that check-json-schema.py can fail: an output or a documented example with a field its
schema does not list, a wrong type or a missing required field is refused; a true one passes."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-json-schema.py")
SCHEMA = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
          "properties": {"schema_version": {"type": "integer"},
                         "gpus": {"type": "array", "items": {
                             "type": "object", "additionalProperties": False,
                             "required": ["name"],
                             "properties": {"name": {"type": "string"},
                                            "memory_gib": {"type": ["number", "null"]}}}}},
          "required": ["schema_version", "gpus"], "additionalProperties": False}


def run(args, stdin=""):
    return subprocess.run([sys.executable, SCRIPT] + args, input=stdin, capture_output=True,
                          text=True)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        schemas = os.path.join(d, "schemas")
        os.mkdir(schemas)
        with open(os.path.join(schemas, "gpus.json"), "w") as f:
            json.dump(SCHEMA, f)
        good = '{"schema_version": 1, "gpus": [{"name": "H100", "memory_gib": 80.0}]}'
        cases = [("a true output", good, 0),
                 ("an undocumented field", good.replace('"memory_gib"', '"memory_gb"'), 1),
                 ("a wrong type", good.replace('"H100"', "100"), 1),
                 ("a missing required field", '{"gpus": []}', 1),
                 ("not JSON", "{", 1)]
        for what, text, expected in cases:
            r = run(["--schemas", schemas, "--command", "gpus"], text)
            if r.returncode != expected:
                failures.append("%s: exit %d, expected %d (%s)" % (what, r.returncode, expected,
                                                                   r.stderr.strip()))
        doc = os.path.join(d, "doc.md")
        with open(doc, "w") as f:
            f.write("```\n$ fulcrum gpus --json\n%s\n```\n" % good.replace('"H100"', "1"))
        if run(["--schemas", schemas, "--docs", doc]).returncode != 1:
            failures.append("a documented example with a wrong type passed")
        with open(doc, "w") as f:
            f.write("excerpt:\n```\n$ fulcrum gpus --json\n{\n  \"gpus\": [\n    ...\n  ]\n}\n```\n")
        r = run(["--schemas", schemas, "--docs", doc])
        if r.returncode != 0:
            failures.append("an excerpt without its required fields failed: " + r.stderr)
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
