#!/usr/bin/env python3
"""Lists the longest function definitions in the C++ sources and fails past a limit.

Scans every *.cc and *.h under the given roots (default: src/ of the repository), skipping the
generated *_fitted.cc. A function's length is counted from the line of its name to the line of its
closing brace, both included; a lambda is part of the function it is written in. Comments, string
literals (raw ones too), character literals and preprocessor lines are blanked before the braces
are matched, so a brace inside any of them does not count.

Usage: scripts/function-lengths.py [--max N] [--top K] [ROOT_OR_FILE ...]
Prints the K longest (default 10) as `file:line: name N lines`, then every function over N lines
(default 150); exits 1 when there is one, 0 otherwise, 2 on bad usage or an unreadable file.
"""

import argparse
import os
import re
import sys

IDENT_START = re.compile(r"[A-Za-z_]")
IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")
# Prefixes of string and character literals ([lex.string], [lex.ccon] of the C++20 standard).
LITERAL_PREFIXES = ("u8R", "uR", "UR", "LR", "R", "u8", "u", "U", "L")


def blank(text):
    """Returns text with comments, literals and preprocessor lines replaced by spaces.

    Newlines are kept so that offsets map to the same lines; a literal keeps its quotes so that
    the code around it still reads as an expression.
    """
    out = list(text)
    n = len(text)
    i = 0
    line_start = True  # only whitespace since the last newline

    def wipe(begin, end):
        for k in range(begin, end):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if line_start and c == "#":
            # A preprocessor directive, with its backslash continuations (a #define's body is not
            # a function of this file).
            j = i
            while j < n:
                if text[j] == "\n" and text[j - 1] != "\\":
                    break
                if text.startswith("//", j):
                    j = text.find("\n", j)
                    j = n if j < 0 else j
                    break
                if text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                    continue
                j += 1
            wipe(i, j)
            i = j
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            j = n if end < 0 else end + 2
            wipe(i, j)
            i = j
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            # A pp-number: digits, letters, '.', exponent signs and digit separators (1'000).
            j = i + 1
            while j < n:
                d = text[j]
                if IDENT_CHAR.match(d) or d == ".":
                    j += 1
                elif d == "'" and j + 1 < n and IDENT_CHAR.match(text[j + 1]):
                    j += 2
                elif d in "+-" and text[j - 1] in "eEpP":
                    j += 1
                else:
                    break
            i = j
            continue
        if IDENT_START.match(c):
            j = i + 1
            while j < n and IDENT_CHAR.match(text[j]):
                j += 1
            word = text[i:j]
            if j < n and text[j] in "\"'" and word in LITERAL_PREFIXES:
                if text[j] == '"' and word.endswith("R"):
                    i = skip_raw_string(text, j, wipe)
                else:
                    i = skip_quoted(text, j, wipe)
                continue
            i = j
            continue
        if c in "\"'":
            i = skip_quoted(text, i, wipe)
            continue
        i += 1
    return "".join(out)


def skip_quoted(text, quote_at, wipe):
    """Blanks the inside of a "..." or '...' literal starting at quote_at; returns the end."""
    quote = text[quote_at]
    j = quote_at + 1
    n = len(text)
    while j < n and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    wipe(quote_at + 1, min(j, n))
    return min(j + 1, n)


def skip_raw_string(text, quote_at, wipe):
    """Blanks a raw string literal R"delim( ... )delim" whose quote is at quote_at."""
    open_paren = text.find("(", quote_at)
    if open_paren < 0:
        return quote_at + 1
    delimiter = text[quote_at + 1:open_paren]
    closing = ")" + delimiter + '"'
    end = text.find(closing, open_paren + 1)
    end = len(text) if end < 0 else end + len(closing)
    wipe(quote_at + 1, end - 1)
    return end


TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|::|->|\S")


class Source:
    """A blanked file with its tokens (text, offset) and a map from offset to line."""

    def __init__(self, text):
        self.code = blank(text)
        self.tokens = [(m.group(0), m.start()) for m in TOKEN.finditer(self.code)]
        self.line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def line_of(self, offset):
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1


def matching(tokens, open_index):
    """Index of the token closing the bracket at open_index (same kind), or len(tokens)."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    opener = tokens[open_index][0]
    closer = pairs[opener]
    depth = 0
    for k in range(open_index, len(tokens)):
        t = tokens[k][0]
        if t == opener:
            depth += 1
        elif t == closer:
            depth -= 1
            if depth == 0:
                return k
    return len(tokens)


def strip_template_header(header):
    """Drops leading `template <...>` groups (and `export`) from a list of token strings."""
    k = 0
    while k < len(header):
        if header[k] == "export":
            k += 1
            continue
        if header[k] == "template" and k + 1 < len(header) and header[k + 1] == "<":
            depth = 0
            k += 1
            while k < len(header):
                if header[k] == "<":
                    depth += 1
                elif header[k] == ">":
                    depth -= 1
                    if depth == 0:
                        k += 1
                        break
                k += 1
            continue
        break
    return header[k:]


def top_level_paren(header_tokens):
    """Index (in header_tokens) of the first '(' outside <...>, or -1."""
    for k, (t, _) in enumerate(header_tokens):
        if t == "(":
            if k > 0 and header_tokens[k - 1][0] == "operator":  # operator()(...)
                continue
            return k
    return -1


def function_name(header_tokens, paren):
    """The (qualified) name before the parameter list; TEST-like macros keep their arguments."""
    k = paren - 1
    parts = []
    if k >= 0 and header_tokens[k][0] not in ("::",) and not IDENT_START.match(header_tokens[k][0]):
        # operator(), operator==, operator[] ...: walk back to the `operator` keyword.
        j = k
        while j >= 0 and header_tokens[j][0] != "operator" and paren - j < 5:
            j -= 1
        if j >= 0 and header_tokens[j][0] == "operator":
            parts = [t for t, _ in header_tokens[j:paren]]
            k = j - 1
            name = "operator" + "".join(parts[1:])
            parts = [name]
            while k >= 1 and header_tokens[k][0] == "::":
                parts.insert(0, header_tokens[k - 1][0] + "::")
                k -= 2
            return "".join(parts), header_tokens[j][1]
    if k < 0:
        return "?", header_tokens[0][1]
    name_offset = header_tokens[k][1]
    parts = [header_tokens[k][0]]
    if k >= 1 and header_tokens[k - 1][0] == "~":
        parts[0] = "~" + parts[0]
        k -= 1
    while k >= 2 and header_tokens[k - 1][0] == "::":
        parts.insert(0, header_tokens[k - 2][0] + "::")
        k -= 2
        name_offset = header_tokens[k][1]
    name = "".join(parts)
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", name):  # TEST(Suite, Name), TEST_F(...)
        close = paren
        depth = 0
        for j in range(paren, len(header_tokens)):
            if header_tokens[j][0] == "(":
                depth += 1
            elif header_tokens[j][0] == ")":
                depth -= 1
                if depth == 0:
                    close = j
                    break
        args = " ".join(t for t, _ in header_tokens[paren + 1:close]).replace(" ,", ",")
        name = f"{name}({args})"
    return name, name_offset


def find_functions(source):
    """Yields (name, start_line, end_line) for every function definition in the file."""
    tokens = source.tokens
    results = []

    def scan_scope(begin, end):
        """Walks the declarations of a namespace or class body tokens[begin:end]."""
        header_start = begin
        k = begin
        while k < end:
            t = tokens[k][0]
            if t in (";", "}"):
                header_start = k + 1
                k += 1
                continue
            if t == ":" and k > header_start and tokens[k - 1][0] in ("public", "private",
                                                                        "protected"):
                header_start = k + 1
                k += 1
                continue
            if t in ("(", "["):
                k = matching(tokens, k) + 1
                continue
            if t != "{":
                k += 1
                continue
            close = matching(tokens, k)
            header = tokens[header_start:k]
            kind = classify(header)
            if kind == "scope":
                scan_scope(k + 1, close)
            elif kind == "function":
                paren = top_level_paren(header)
                name, name_offset = function_name(header, paren)
                close = function_body_close(k, header, paren)
                k_body = close
                results.append((name, source.line_of(name_offset),
                                source.line_of(tokens[min(k_body, len(tokens) - 1)][1])))
            k = close + 1
            header_start = k

    def function_body_close(k, header, paren):
        """The closing brace of the body, stepping over a constructor's braced member inits."""
        if not constructor_init_list(header, paren):
            return matching(tokens, k)
        # `Foo() : a_{1}, b_(2) {`: a brace right after a name or a template's `>` initializes a
        # member or base; the body's brace follows `)` or `}`.
        j = k
        while j < len(tokens):
            if tokens[j][0] == "{":
                before = tokens[j - 1][0]
                if IDENT_START.match(before) or before == ">":
                    j = matching(tokens, j) + 1
                    continue
                return matching(tokens, j)
            if tokens[j][0] in ("(", "["):
                j = matching(tokens, j) + 1
                continue
            j += 1
        return len(tokens) - 1

    def constructor_init_list(header, paren):
        close = matching_in(header, paren)
        return any(t == ":" for t, _ in header[close + 1:])

    scan_scope(0, len(tokens))
    return results


def matching_in(header, open_index):
    depth = 0
    for k in range(open_index, len(header)):
        if header[k][0] == "(":
            depth += 1
        elif header[k][0] == ")":
            depth -= 1
            if depth == 0:
                return k
    return len(header) - 1


def classify(header_tokens):
    """'scope' (namespace, class, extern "C"), 'function', or 'other' (enum, initializer)."""
    words = strip_template_header([t for t, _ in header_tokens])
    while words and words[0] == "[":  # [[attributes]]
        depth = 0
        k = 0
        for k, w in enumerate(words):
            depth += (w == "[") - (w == "]")
            if depth == 0:
                break
        words = words[k + 1:]
    if not words:
        return "other"
    if words[0] in ("namespace", "extern", "inline") and "(" not in words:
        return "scope"
    if words[0] in ("class", "struct", "union"):
        return "scope"
    if words[0] == "enum" or words[0] == "typedef":
        return "other"
    equals = top_level_assignment(words)
    if equals >= 0:
        # `auto f = [](...) {` at namespace scope: a lambda bound to a name counts as a function.
        if equals + 1 < len(words) and words[equals + 1] == "[" and "(" in words[equals:]:
            return "function"
        return "other"
    if "(" in words:
        return "function"
    return "other"


def top_level_assignment(words):
    """Index of an `=` outside parentheses that is not part of `operator=`, `operator==` etc.;
    -1 when there is none (`void f(int x = 0) {` and `T& operator=(T&&) {` are functions)."""
    depth = 0
    for k, w in enumerate(words):
        if w in ("(", "["):
            depth += 1
        elif w in (")", "]"):
            depth -= 1
        elif w == "=" and depth == 0:
            j = k - 1
            while j >= 0 and words[j] in ("=", "!", "<", ">", "+", "-", "*", "/", "%", "^", "&", "|"):
                j -= 1
            if j >= 0 and words[j] == "operator":
                continue
            return k
    return -1


def source_files(roots):
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for directory, subdirs, files in os.walk(root):
            subdirs.sort()
            for name in sorted(files):
                if not name.endswith((".cc", ".h")) or name.endswith("_fitted.cc"):
                    continue
                yield os.path.join(directory, name)


def shown_path(path):
    """The path relative to the repository when it lies inside it (src/plan/search.cc)."""
    repo = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    real = os.path.realpath(path)
    if real.startswith(repo + os.sep):
        return os.path.relpath(real, repo)
    return path


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=150, help="longest allowed function (lines)")
    parser.add_argument("--top", type=int, default=10, help="how many of the longest to print")
    parser.add_argument("roots", nargs="*", help="files or folders (default: the repo's src/)")
    args = parser.parse_args(argv)
    roots = args.roots or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")]
    found = []
    for path in source_files(roots):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as error:
            print(f"function-lengths: {path}: {error.strerror}", file=sys.stderr)
            return 2
        shown = shown_path(path)
        for name, start, end in find_functions(Source(text)):
            found.append((end - start + 1, shown, start, name))
    if not found:
        print("function-lengths: no function definitions found under " + " ".join(roots),
              file=sys.stderr)
        return 2
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    print(f"The {min(args.top, len(found))} longest of {len(found)} functions:")
    for length, path, line, name in found[:args.top]:
        print(f"{path}:{line}: {name} {length} lines")
    over = [f for f in found if f[0] > args.max]
    if over:
        print(f"\n{len(over)} function(s) over {args.max} lines (split them into named helpers):",
              file=sys.stderr)
        for length, path, line, name in over:
            print(f"{path}:{line}: {name} {length} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
