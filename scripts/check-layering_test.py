#!/usr/bin/env python3
"""Proves that scripts/check-layering.py fails when it should: a copy of the repository's src/
and docs/ARCHITECTURE.md passes, then the same copy with one upward include (store -> alert, a
planner room reaching store), an unlisted room, or a table edited to allow a forbidden path or a
cycle fails, naming the file:line or table line and the arrow.

Usage: scripts/check-layering_test.py [REPO]  (unittest; exit 0 when every case passes)
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check-layering.py")
REPO = os.path.normpath(os.path.join(HERE, ".."))


class CheckLayeringTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        shutil.copytree(os.path.join(REPO, "src"), os.path.join(self.root, "src"),
                        ignore=shutil.ignore_patterns("*.o", "*.a", "node_modules"))
        os.makedirs(os.path.join(self.root, "docs"))
        shutil.copy(os.path.join(REPO, "docs", "ARCHITECTURE.md"),
                    os.path.join(self.root, "docs", "ARCHITECTURE.md"))

    def tearDown(self):
        self.dir.cleanup()

    def run_script(self):
        return subprocess.run([sys.executable, SCRIPT, "--root", self.root], capture_output=True,
                              text=True, timeout=120)

    def append(self, relative, text):
        with open(os.path.join(self.root, relative), "a") as f:
            f.write(text)

    def edit_table(self, old, new):
        path = os.path.join(self.root, "docs", "ARCHITECTURE.md")
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w") as f:
            f.write(text.replace(old, new, 1))

    def line_count(self, relative):
        with open(os.path.join(self.root, relative)) as f:
            return sum(1 for _ in f)

    def test_the_copy_passes_as_the_repository_does(self):
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("layer 0: core", result.stdout)

    def test_an_upward_include_fails_naming_file_line_and_arrow(self):
        target = "src/store/jobs.cc"
        line = self.line_count(target) + 1
        self.append(target, '#include "alert/outbox.h"\n')
        result = self.run_script()
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn(f"{target}:{line}: store -> alert is not allowed", result.stderr)

    def test_a_planner_room_reaching_the_store_fails(self):
        self.append("src/plan/cost.h", '#  include "store/jobs.h"\n')
        result = self.run_script()
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("plan -> store is not allowed", result.stderr)

    def test_the_library_including_cli_fails(self):
        self.append("src/core/parse.cc", '#include <cli/commands.h>\n')
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn("core -> cli is not allowed", result.stderr)

    def test_test_helpers_only_in_test_files(self):
        self.append("src/store/jobs.cc", '#include "support/run_binary.h"\n')
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn("only *_test.cc files include test helpers", result.stderr)

    def test_a_room_missing_from_the_table_fails(self):
        os.makedirs(os.path.join(self.root, "src", "newroom"))
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn("src/newroom/: a room that the layering table does not list", result.stderr)

    def test_a_table_that_allows_a_forbidden_path_fails(self):
        # Allowing estimate -> supervise lets plan reach supervise through estimate.
        self.edit_table("estimate:  core catalog workload",
                        "estimate:  core catalog workload supervise")
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn("the table lets plan reach supervise (plan -> estimate -> supervise)",
                      result.stderr)

    def test_a_cycle_in_the_table_fails(self):
        self.edit_table("telemetry: core", "telemetry: core store")
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn("a cycle through store", result.stderr)

    def test_no_table_is_a_usage_error(self):
        self.edit_table("```layers", "```text")
        self.assertEqual(self.run_script().returncode, 2)


if __name__ == "__main__":
    unittest.main()
