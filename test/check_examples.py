#!/usr/bin/env python3
# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
"""Fails unless every code example of the README and the public headers is
one that a test builds; run by ctest.

Usage: check_examples.py SOURCE_DIR

README.md, by the info string of each fenced block:
  * `cpp`: the whole of a C++ file of test/ (less its licence header), which
    the tests compile and run: test/readme_example.cc; or an excerpt of a
    program of test/examples/, which the tests build and run too (whitespace
    aside, as for the headers);
  * `cmake`: its lines, in order, in one of test/consumer*/CMakeLists.txt,
    the projects the consumer tests configure and build;
  * `sh`: run by the readme_commands test;
  * any other is an error: no test would build it.
include/timingwheel/*.h: every code example of a comment must be in
test/header_examples_test.cc, which the tests compile and run. An example is
a paragraph of its own (after an empty comment line) indented two spaces past
the prose; an indented line right after prose continues a list, not an
example. Examples are compared with the test's code whitespace aside, so
that clang-format may lay out either.
"""

import glob
import os
import re
import sys

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
LICENCE = re.compile(r"\A// Copyright[^\n]*\n// SPDX-License-Identifier:[^\n]*\n\n")
COMMENT = re.compile(r"^\s*//(.*)$")


def squeeze(text):
    """`text` without the whitespace that clang-format may add or take away:
    one space is kept between two words, none next to punctuation."""
    return re.sub(r"\s*(\W)\s*", r"\1", " ".join(text.split()))


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def check_readme(source):
    """The errors in README.md's fenced blocks."""
    errors = []
    programs = [LICENCE.sub("", read(path)) for path in
                glob.glob(os.path.join(source, "test", "**", "*.cc"),
                          recursive=True)]
    excerpts = [squeeze(read(path)) for path in glob.glob(
        os.path.join(source, "test", "examples", "*.cc"))]
    projects = {path: [line.strip() for line in read(path).splitlines()]
                for path in glob.glob(os.path.join(
                    source, "test", "consumer*", "CMakeLists.txt"))}
    for language, block in FENCE.findall(read(os.path.join(source,
                                                           "README.md"))):
        first = block.splitlines()[0] if block else ""
        if language == "sh":
            continue
        if language == "cpp":
            if block not in programs and not any(
                    squeeze(block) in example for example in excerpts):
                errors.append(f"README.md: the cpp block that starts "
                              f"'{first}' is neither a file of test/ quoted "
                              f"whole nor part of a test/examples/ program")
        elif language == "cmake":
            lines = [line.strip() for line in block.splitlines()
                     if line.strip()]
            if not any(in_order(lines, project)
                       for project in projects.values()):
                errors.append(f"README.md: the cmake block that starts "
                              f"'{first}' is not in a test/consumer*/"
                              f"CMakeLists.txt")
        else:
            errors.append(f"README.md: no test builds the '{language}' "
                          f"block that starts '{first}'")
    return errors


def in_order(lines, project):
    """Whether `lines` are lines of `project`, in this order."""
    remaining = iter(project)
    return all(line in remaining for line in lines)


def header_examples(text):
    """The code examples of a header's comments: (line number, code)."""
    examples = []
    current = None
    previous = None  # the previous line's comment text; None: not a comment
    for number, line in enumerate(text.splitlines(), 1):
        match = COMMENT.match(line)
        body = match.group(1) if match else None
        is_code = body is not None and body.startswith("   ")
        if is_code and (current is not None or previous == ""):
            if current is None:
                current = (number, [])
            current[1].append(body[3:])
        elif current is not None:
            examples.append((current[0], "\n".join(current[1])))
            current = None
        previous = body
    return examples


def check_headers(source):
    """The errors in the public headers' examples."""
    errors = []
    code = squeeze(read(os.path.join(source, "test",
                                     "header_examples_test.cc")))
    for header in sorted(glob.glob(os.path.join(source, "include",
                                                "timingwheel", "*.h"))):
        for number, example in header_examples(read(header)):
            if squeeze(example) not in code:
                errors.append(f"{os.path.basename(header)}:{number}: this "
                              f"example is not in "
                              f"test/header_examples_test.cc:\n{example}")
    return errors


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    source = os.path.abspath(sys.argv[1])
    errors = check_readme(source) + check_headers(source)
    for error in errors:
        print(f"FAIL: {error}")
    if errors:
        sys.exit(1)
    print("PASS: every example of README.md and include/timingwheel/ is built "
          "by a test")


if __name__ == "__main__":
    main()
