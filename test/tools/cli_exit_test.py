#!/usr/bin/env python3
# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
"""The command-line tools keep the exit statuses their --help promises; run by
ctest.

Usage: cli_exit_test.py TIMINGWHEEL_CLI TIMINGWHEEL_SOAK SCRATCH_DIR

1. Both tools: --help and -h print the usage and the tool's flags and exit
   0; an unknown flag, a value the flag's type rejects (a duration without
   its unit is told it needs one), a flag without its value and a positional
   argument each exit 2 with a message naming it, and nothing runs.
2. timingwheel_cli --timers=99999999999999 exits 2 at once with the memory
   the run would need and the largest --timers allowed, not std::bad_alloc.
   In both tools, a flag whose value is out of its range (a negative or huge
   --workers, a zero --tick, a duration that would overflow int64
   nanoseconds, more --slots than memory holds) exits 2 within seconds,
   before anything is sized from it, with a message naming the flag, the
   value given and the range allowed.
3. A rejected run (bad flag value, too many timers, bad wheel option) leaves
   an existing --plot file as it was.
4. A small run reports the due rate and the fire rate (text and JSON).
"""

import json
import os
import subprocess
import sys

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
    return condition


def run(*args, timeout=120):
    return subprocess.run(list(args), capture_output=True, text=True,
                          timeout=timeout, check=False)


def check_usage(tool, name, bad_value_flag):
    for flag in ("--help", "-h"):
        result = run(tool, flag)
        check(result.returncode == 0,
              f"{name} {flag}: exit {result.returncode}, want 0")
        check("Exit status" in result.stdout and "--threads (default" in
              result.stdout,
              f"{name} {flag}: no usage or flags in {result.stdout!r}")

    for args, message in (
            ([f"--{bad_value_flag}=abc"],
             f"Illegal value 'abc' specified for flag '{bad_value_flag}'"),
            (["--tick=1"], "a duration needs a unit (ns, us, ms, s, m or h), "
             "e.g. --tick=1ms"),
            (["--tick=fast"], "a duration is a number and a unit"),
            (["--bogus"], "unknown flag --bogus"),
            ([f"--{bad_value_flag}"], f"--{bad_value_flag} needs a value"),
            (["stray"], "unexpected argument 'stray'")):
        result = run(tool, *args)
        check(result.returncode == 2,
              f"{name} {' '.join(args)}: exit {result.returncode}, want 2")
        check(message in result.stderr,
              f"{name} {' '.join(args)}: want {message!r} in {result.stderr!r}")
        check(result.stdout == "",
              f"{name} {' '.join(args)}: it ran: {result.stdout!r}")


def check_too_many_timers(cli):
    result = run(cli, "--timers=99999999999999")
    check(result.returncode == 2,
          f"--timers=99999999999999: exit {result.returncode}, want 2")
    check("would need about" in result.stderr and
          "at most --timers=" in result.stderr,
          f"--timers=99999999999999: unclear message {result.stderr!r}")


def check_out_of_range(tool, name, cases):
    """Each case is (args, substrings the message must hold): the flag and the
    value given, and the range."""
    for args, wanted in cases:
        what = f"{name} {' '.join(args)}"
        try:
            result = run(tool, *args, timeout=10)
        except subprocess.TimeoutExpired:
            check(False, f"{what}: still running after 10 s")
            continue
        check(result.returncode == 2,
              f"{what}: exit {result.returncode}, want 2; {result.stderr!r}")
        check(all(w in result.stderr for w in wanted),
              f"{what}: want {wanted} in {result.stderr!r}")
        check(result.stdout == "", f"{what}: it ran: {result.stdout!r}")


# timingwheel_cli's flag values out of range. --timers=1 keeps what the old
# code did with them (allocate, overflow, run) short.
CLI_OUT_OF_RANGE = (
    (["--timers=1", "--workers=-5"], ["--workers=-5", "from 0 to 1024"]),
    (["--timers=1", "--workers=200000"],
     ["--workers=200000", "from 0 to 1024"]),
    (["--timers=1", "--min_delay=3000000h"],
     ["--min_delay=3000000h", "from 0 to 876000h"]),
    (["--timers=1", "--grace=3000000h"],
     ["--grace=3000000h", "from 0 to 876000h"]),
    (["--timers=1", "--window=3000000h"],
     ["--window=3000000h", "from 0 to 876000h"]),
    (["--timers=1", "--min_delay=500000h", "--window=500000h"],
     ["--min_delay=500000h", "--window=500000h", "876000h"]),
    (["--timers=1", "--tick=0"], ["--tick=0", "from 1us to 1h"]),
    (["--timers=1", "--tick=3000000h"],
     ["--tick=3000000h", "from 1us to 1h"]),
    (["--timers=1", "--wheel_size=0"], ["--wheel_size=0", "from 2 to 65536"]),
    (["--timers=1", "--wheel_size=65537"],
     ["--wheel_size=65537", "from 2 to 65536"]),
)


# timingwheel_soak's. --duration=1s keeps the old code's runs short.
SOAK_OUT_OF_RANGE = (
    (["--workers=-5"], ["--workers=-5", "from 0 to 1024"]),
    (["--tick=0"], ["--tick=0", "from 1us to 1h"]),
    (["--wheel_size=0"], ["--wheel_size=0", "from 2 to 65536"]),
    (["--threads=256", "--slots=2000000000"],
     ["--slots=2000000000", "at most --slots="]),
    (["--duration=1s", "--rss_slack_mib=9000000000000"],
     ["--rss_slack_mib=9000000000000", "from 0 to 1048576"]),
    (["--duration=3000000h"], ["--duration=3000000h", "from 1ns to 876000h"]),
    (["--duration=1s", "--quiesce_timeout=3000000h"],
     ["--quiesce_timeout=3000000h", "from 1ns to 876000h"]),
    (["--duration=1s", "--starve_grace=3000000h"],
     ["--starve_grace=3000000h", "from 1ns to 876000h"]),
    (["--duration=1s", "--progress_interval=3000000h"],
     ["--progress_interval=3000000h", "from 1ns to 876000h"]),
)


def check_plot_kept(cli, scratch):
    path = os.path.join(scratch, "kept.svg")
    content = "<svg>an earlier run</svg>\n"
    for args in (["--timers=abc"], ["--timers=99999999999999"],
                 ["--timers=10", "--tick=0"], ["--timers=10", "--window=-1s"]):
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
        result = run(cli, *args, f"--plot={path}")
        check(result.returncode == 2,
              f"{' '.join(args)} --plot: exit {result.returncode}, want 2")
        with open(path, encoding="utf-8") as f:
            check(f.read() == content,
                  f"{' '.join(args)}: the rejected run changed --plot's file")


def check_rates(cli):
    result = run(cli, "--timers=2000", "--window=20ms")
    check(result.returncode == 0 and "due rate" in result.stdout and
          "fire rate" in result.stdout and "throughput" not in result.stdout,
          f"text report: exit {result.returncode}, rates in {result.stdout!r}")
    result = run(cli, "--timers=2000", "--window=20ms", "--json")
    if check(result.returncode == 0, f"--json: exit {result.returncode}"):
        firing = json.loads(result.stdout)["firing"]
        check(firing.get("due_timers_per_second", 0) > 0 and
              firing["timers_per_second"] > 0 and
              firing.get("first_to_last_deadline_ns", 0) > 0,
              f"--json: firing has no rates: {firing}")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    cli, soak, scratch = sys.argv[1:]
    os.makedirs(scratch, exist_ok=True)
    check_usage(cli, "timingwheel_cli", "timers")
    check_usage(soak, "timingwheel_soak", "duration")
    check_too_many_timers(cli)
    check_out_of_range(cli, "timingwheel_cli", CLI_OUT_OF_RANGE)
    check_out_of_range(soak, "timingwheel_soak", SOAK_OUT_OF_RANGE)
    check_plot_kept(cli, scratch)
    check_rates(cli)
    for failure in failures:
        print("FAIL:", failure)
    print("FAIL" if failures else "PASS")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
