#!/usr/bin/env python3
# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
"""Runs the README's shell commands as a reader would; run by ctest.

Usage: readme_commands_test.py SOURCE_DIR SCRATCH_DIR

Every fenced block of SOURCE_DIR/README.md whose info string is `sh` is run,
in the order of the README, by `bash -e -o pipefail`, in a fresh copy of the
checkout (the files git tracks, as they are in the work tree) under
SCRATCH_DIR, with HOME set to SCRATCH_DIR/home so that what the README
installs into ~/.local stays there. A block that fails stops the test, which
prints the block and its output.

The blocks run as on a machine that has only what the README's Quick start
installs for the library: CMake reads CMAKE_TOOLCHAIN_FILE from the
environment, and the test's toolchain file makes GoogleTest, Google Benchmark
and Boost unfindable; a `ninja` that fails comes first in PATH.

The README's other commands are not run here: `./tools/test.sh` is what CI
runs, and `./tools/run.sh` runs a million timers, too long for a test
(run_sh_test.py checks what it installs and builds).
"""

import os
import re
import shutil
import subprocess
import sys

FENCE = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def tracked_files(source):
    """The files to copy: git's tracked files, or every file outside build/."""
    try:
        listing = subprocess.run(["git", "-C", source, "ls-files", "-z"],
                                 capture_output=True, check=True).stdout
        return [f for f in listing.decode().split("\0")
                if f and os.path.isfile(os.path.join(source, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk(source):
            dirs[:] = [d for d in dirs if d not in (".git", "build")]
            files += [os.path.relpath(os.path.join(root, n), source)
                      for n in names]
        return files


def copy_checkout(source, destination):
    for name in tracked_files(source):
        target = os.path.join(destination, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(source, name), target)


def bare_machine(scratch, env):
    """`env` for a machine without the tests' and benchmark's packages."""
    toolchain = os.path.join(scratch, "bare_machine.cmake")
    with open(toolchain, "w", encoding="utf-8") as f:
        for package in ("GTest", "benchmark", "Boost"):
            f.write(f"set(CMAKE_DISABLE_FIND_PACKAGE_{package} ON)\n")
    bin_dir = os.path.join(scratch, "bin")
    os.makedirs(bin_dir)
    ninja = os.path.join(bin_dir, "ninja")
    with open(ninja, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\necho 'ninja: not installed' >&2\nexit 127\n")
    os.chmod(ninja, 0o755)
    env = dict(env, CMAKE_TOOLCHAIN_FILE=toolchain,
               PATH=bin_dir + os.pathsep + env.get("PATH", ""))
    env.pop("CMAKE_GENERATOR", None)
    return env


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source, scratch = (os.path.abspath(a) for a in sys.argv[1:])
    with open(os.path.join(source, "README.md"), encoding="utf-8") as f:
        blocks = FENCE.findall(f.read())
    if not blocks:
        sys.exit("FAIL: README.md has no sh block")

    shutil.rmtree(scratch, ignore_errors=True)
    checkout = os.path.join(scratch, "timingwheel")
    home = os.path.join(scratch, "home")
    os.makedirs(home)
    copy_checkout(source, checkout)
    env = bare_machine(scratch, dict(os.environ, HOME=home))

    for number, block in enumerate(blocks, 1):
        print(f"---- block {number} of {len(blocks)}:\n{block}", flush=True)
        result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block],
                                cwd=checkout, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                timeout=600, check=False)
        print(result.stdout, flush=True)
        if result.returncode != 0:
            print(f"FAIL: block {number} exited {result.returncode}")
            sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
