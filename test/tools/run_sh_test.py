#!/usr/bin/env python3
# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
"""tools/run.sh installs and builds only what it runs; run by ctest.

Usage: run_sh_test.py SOURCE_DIR SCRATCH_DIR

Runs a copy of tools/run.sh (with tools/install_deps.sh) in SCRATCH_DIR, with
stand-ins on PATH for dpkg-query (nothing is installed, so install_deps names
every package run.sh asks for; TIMINGWHEEL_DEPS_DRY_RUN=1 installs none) and
for cmake (records its arguments), and stand-ins for the two programs run.sh
runs. Nothing is installed or built.

1. The demo asks for a compiler, CMake, Ninja and Abseil only (no clang, no
   GoogleTest, no Benchmark, no Boost), configures the release preset with
   the tests and the benchmark off, builds the one target timingwheel_cli and
   runs it with --plot=build/release/lateness.svg.
2. --bench asks for Google Benchmark and Boost as well, configures with the
   benchmark on, builds only timingwheel_benchmark, says that Google
   Benchmark's "Library was built as DEBUG" is about Debian's library, and
   runs it.
"""

import os
import shutil
import stat
import subprocess
import sys

failures = []

DEMO_PACKAGES = {"cmake", "ninja-build", "g++", "libabsl-dev"}
BENCH_PACKAGES = DEMO_PACKAGES | {"libbenchmark-dev", "libboost-dev",
                                   "libconcurrentqueue-dev"}


def check(condition, what):
    if not condition:
        failures.append(what)
    return condition


def write_script(path, body):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def set_up(source, scratch):
    """A tree with run.sh, install_deps.sh and the stand-ins; returns it and
    the PATH directory of the stand-ins."""
    shutil.rmtree(scratch, ignore_errors=True)
    tree = os.path.join(scratch, "tree")
    for name in ("run.sh", "install_deps.sh"):
        os.makedirs(os.path.join(tree, "tools"), exist_ok=True)
        shutil.copy2(os.path.join(source, "tools", name),
                     os.path.join(tree, "tools", name))
    bin_dir = os.path.join(scratch, "bin")
    log = os.path.join(scratch, "commands.log")
    write_script(os.path.join(bin_dir, "dpkg-query"), "exit 1\n")
    write_script(os.path.join(bin_dir, "cmake"),
                 f'echo "cmake $*" >> "{log}"\n')
    for program in ("tools/timingwheel_cli", "benchmark/timingwheel_benchmark"):
        write_script(os.path.join(tree, "build", "release", program),
                     f'echo "{os.path.basename(program)} $*" >> "{log}"\n')
    return tree, bin_dir, log


def run_sh(source, scratch, *args):
    """Returns (stdout + stderr, the commands run.sh ran)."""
    tree, bin_dir, log = set_up(source, scratch)
    env = dict(os.environ, TIMINGWHEEL_DEPS_DRY_RUN="1",
               PATH=bin_dir + os.pathsep + os.environ["PATH"])
    result = subprocess.run(["bash", os.path.join(tree, "tools", "run.sh"),
                             *args], capture_output=True, text=True,
                            timeout=60, env=env, check=False)
    check(result.returncode == 0,
          f"run.sh {' '.join(args)}: exit {result.returncode}, "
          f"{result.stdout!r} {result.stderr!r}")
    with open(log, encoding="utf-8") as f:
        commands = f.read().splitlines()
    return result.stdout + result.stderr, commands


def packages(output):
    prefix = "install_deps: missing packages: "
    for line in output.splitlines():
        if line.startswith(prefix):
            return set(line[len(prefix):].split())
    return set()


def check_run(name, output, commands, want_packages, benchmarks, target,
              program):
    got = packages(output)
    check(got == want_packages,
          f"{name}: asks for {sorted(got)}, want {sorted(want_packages)}")
    configure = [c for c in commands if c.startswith("cmake --preset")]
    builds = [c for c in commands if c.startswith("cmake --build")]
    check(len(configure) == 1 and "--preset release" in configure[0] and
          "-DTIMINGWHEEL_BUILD_TESTS=OFF" in configure[0].split() and
          f"-DTIMINGWHEEL_BUILD_BENCHMARKS={benchmarks}" in
          configure[0].split(),
          f"{name}: configures with {configure}")
    check(len(builds) == 1 and builds[0].split().count("--target") == 1 and
          builds[0].endswith(f"--target {target}"),
          f"{name}: builds with {builds}, want only --target {target}")
    check(commands[-1:] and commands[-1].startswith(program + " "),
          f"{name}: runs {commands[-1:]}, want {program}")
    return commands[-1] if commands else ""


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source, scratch = sys.argv[1:]

    output, commands = run_sh(source, scratch)
    ran = check_run("run.sh", output, commands, DEMO_PACKAGES, "OFF",
                    "timingwheel_cli", "timingwheel_cli")
    check("--plot=build/release/lateness.svg" in ran.split(),
          f"run.sh: the demo draws no plot: {ran}")

    output, commands = run_sh(source, scratch, "--bench")
    check_run("run.sh --bench", output, commands, BENCH_PACKAGES, "ON",
              "timingwheel_benchmark", "timingwheel_benchmark")
    check("about Debian's libbenchmark" in output,
          f"run.sh --bench: no word on libbenchmark's DEBUG warning: {output!r}")

    for failure in failures:
        print("FAIL:", failure)
    print("FAIL" if failures else "PASS")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
