#!/usr/bin/env python3
"""Tests of scripts/function-lengths.py: fixture sources written to a temporary folder, the
script run on them as CI runs it, its exit code and its `file:line: name N lines` lines checked.

Usage: scripts/function-lengths_test.py  (unittest; exit 0 when every case passes)
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "function-lengths.py")


def function_of(name, lines, body_line="  total += 1;"):
    """A C++ function `int name()` exactly `lines` lines long (signature to closing brace)."""
    assert lines >= 4
    body = [body_line] * (lines - 4)
    return "\n".join([f"int {name}() {{", "  int total = 0;", *body, "  return total;", "}"]) + "\n"


class FunctionLengthsTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                              timeout=60)

    def test_fixture_helper_writes_the_length_asked_for(self):
        for lines in (4, 150, 151):
            self.assertEqual(function_of("F", lines).count("\n"), lines)

    def test_150_lines_pass_and_151_fail(self):
        self.write("a/ok.cc", function_of("AtTheLimit", 150))
        result = self.run_script("--max", "150", self.root)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("ok.cc:1: AtTheLimit 150 lines", result.stdout)

        self.write("a/long.cc", "// leading comment\n\n" + function_of("OneTooMany", 151))
        result = self.run_script("--max", "150", self.root)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("long.cc:3: OneTooMany 151 lines", result.stderr)
        self.assertNotIn("AtTheLimit", result.stderr)

    def test_the_default_limit_is_150(self):
        self.write("long.cc", function_of("OneTooMany", 151))
        self.assertEqual(self.run_script(self.root).returncode, 1)

    def test_braces_in_literals_and_comments_do_not_end_a_function(self):
        tricky = textwrap.dedent('''\
            int Tricky() {
              const char* close = "}}}";
              char brace = '}';
              char quote = '\\'';
              const char* escaped = "\\"}";
              // }
              /* } } */
              const char* raw = R"x(} " })x";
              long big = 1'000'000;
              auto lambda = [&](int v) {
                return v + 1;
              };
              if (big > 0) {
                return lambda(brace);
              }
              return 0;
            }
            int After() { return 1; }
            ''')
        self.write("tricky.cc", tricky)
        result = self.run_script("--top", "5", self.root)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("tricky.cc:1: Tricky 17 lines", result.stdout)
        self.assertIn("tricky.cc:18: After 1 lines", result.stdout)
        # The lambda is part of Tricky, not a function of its own.
        self.assertNotIn("lambda", result.stdout)

    def test_a_lambda_counts_toward_its_enclosing_function(self):
        body = "\n".join("    x += 1;" for _ in range(150))
        self.write("lambda.cc", "void Outer() {\n  auto step = [](int x) {\n" + body +
                   "\n    return x;\n  };\n  step(1);\n}\n")
        result = self.run_script(self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("lambda.cc:1: Outer 156 lines", result.stderr)

    def test_classes_namespaces_constructors_and_macros(self):
        source = textwrap.dedent('''\
            #define LONG_MACRO(x) { \\
              {
            namespace outer {
            namespace {
            struct Point {
              int x{0};
              Point(int a) : x{a} {
                x += 1;
              }
              int Get() const { return x; }
            };
            enum class Color { kRed, kBlue };
            const int kTable[] = {1, 2, 3};
            }  // namespace
            Widget::Widget(int a, int b) : a_{a}, b_(b), c_{{1, 2}} {
              a_ += b_;
            }
            TEST(WidgetTest, Adds) {
              EXPECT_EQ(1, 1);
            }
            Widget& Widget::operator=(Widget&& other) noexcept {
              return *this;
            }
            int Scaled(int x, int factor = 2) {
              return x * factor;
            }
            bool operator==(const Widget& a, const Widget& b) { return a.a_ == b.a_; }
            }  // namespace outer
            ''')
        self.write("classes.cc", source)
        self.write("skip_fitted.cc", function_of("Generated", 400))
        result = self.run_script("--top", "20", self.root)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("classes.cc:7: Point 3 lines", result.stdout)
        self.assertIn("classes.cc:10: Get 1 lines", result.stdout)
        self.assertIn("classes.cc:15: Widget::Widget 3 lines", result.stdout)
        self.assertIn("classes.cc:18: TEST(WidgetTest, Adds) 3 lines", result.stdout)
        self.assertIn("classes.cc:21: Widget::operator= 3 lines", result.stdout)
        self.assertIn("classes.cc:24: Scaled 3 lines", result.stdout)
        self.assertIn("classes.cc:27: operator== 1 lines", result.stdout)
        self.assertIn("of 7 functions", result.stdout)
        self.assertNotIn("Generated", result.stdout)

    def test_no_sources_is_a_usage_error(self):
        self.assertEqual(self.run_script(self.root).returncode, 2)


if __name__ == "__main__":
    unittest.main()
