#!/usr/bin/env python3
# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
"""End-to-end test of `timingwheel_cli --plot=FILE.svg`, run by ctest.

Usage: cli_plot_test.py TIMINGWHEEL_CLI SCRATCH_DIR

1. A small run (20000 timers over 200ms) with --json and --plot: exit 0, and
   the SVG parses as XML, is self-contained SVG 1.1, and holds the title, the
   histogram (whose bars add up to the run's fired timers), a rising CDF that
   ends at the top, on a percent axis stretched for the tail (0%, 90%, 99%,
   99.9%...), labelled axes and the four markers, whose values agree with the
   JSON report. The run names the plot file on stderr (--json), and without
   --json as the last line of its report.
2. --plot into a directory that does not exist: exit 2 before the run, with
   a message naming the file and the reason.
3. --plot=/dev/full: the run happens, then writing fails: exit 2, with the
   message.
"""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
    return condition


def run(cli, *args):
    return subprocess.run([cli, *args], capture_output=True, text=True,
                          timeout=240, check=False)


def to_ns(label):
    """'612.3 µs' -> (612300.0, 50.0): the value and its rounding error."""
    value, unit = label.split()
    scale = {"ns": 1, "\u00b5s": 1e3, "ms": 1e6, "s": 1e9}[unit]
    decimals = len(value.partition(".")[2])
    return float(value) * scale, 0.5 * 10**-decimals * scale


def points(element):
    return [tuple(map(float, xy.split(",")))
            for xy in element.get("points").split()]


def check_plot(cli, scratch):
    path = os.path.join(scratch, "plot.svg")
    if os.path.exists(path):
        os.remove(path)
    result = run(cli, "--timers=20000", "--window=200ms", "--json",
                 f"--plot={path}")
    if not check(result.returncode == 0,
                 f"run: exit {result.returncode}, stderr: {result.stderr}"):
        return
    report = json.loads(result.stdout)
    lateness = report["lateness"]
    check(f"Lateness plot: {path}" in result.stderr,
          f"--json run does not name the plot on stderr: {result.stderr!r}")

    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        check(False, f"{path} is not well-formed XML: {e}")
        return
    check(root.tag == SVG + "svg", f"root element is {root.tag}")
    check(root.get("version") == "1.1", "svg version is not 1.1")
    check(root.get("width") and root.get("height"), "svg has no size")

    # Self-contained: nothing to run, fetch or style from elsewhere.
    for element in root.iter():
        tag = element.tag.replace(SVG, "")
        check(tag not in ("script", "style", "image", "foreignObject", "use"),
              f"<{tag}> in a self-contained plot")
        for name, value in element.attrib.items():
            check("href" not in name and "url(" not in value,
                  f"external reference {name}={value}")

    texts = ["".join(t.itertext()) for t in root.iter(SVG + "text")]
    all_text = "\n".join(texts)
    for expected in ("20000 timers", "[0, 200ms)", "tick 1ms",
                     "wheel_size 20", "workers", "early 0", "lost 0",
                     "doubled 0", "Histogram", "CDF",
                     "timers per bin (log scale)", "0%", "90%", "99%", "99.9%",
                     "lateness = callback start \u2212 deadline (log scale)"):
        check(expected in all_text, f"no text {expected!r} in the plot")
    check(any(re.fullmatch(r"\d+ (\u00b5s|ms)", t) for t in texts),
          "no lateness tick label in \u00b5s or ms")

    # The histogram: one bar per non-empty bin, the counts in the tooltips.
    bars = [r for r in root.iter(SVG + "rect") if r.get("class") == "bar"]
    counted = 0
    for bar in bars:
        match = re.search(r": (\d+) timers?$", bar.find(SVG + "title").text)
        if check(match, "bar without a count"):
            counted += int(match.group(1))
        check(float(bar.get("height")) > 0, "empty bar drawn")
    check(len(bars) >= 2, f"only {len(bars)} bars")
    # Every timer was late (early 0, and lateness is never exactly 0 ns).
    check(counted == lateness["count"],
          f"bars hold {counted} timers, the run fired {lateness['count']}")

    # The CDF: rises left to right, from below 90% (the first step of its
    # axis; 20000 timers, five nines) to the top.
    cdf = [p for p in root.iter(SVG + "polyline") if p.get("class") == "cdf"]
    area = [p for p in root.iter(SVG + "polygon")
            if p.get("class") == "cdf-area"]
    if check(len(cdf) == 1 and len(area) == 1, "no CDF line and area"):
        line = points(cdf[0])
        bottom = points(area[0])[0][1]
        top = line[-1][1]
        check(all(b[0] > a[0] and b[1] <= a[1]
                  for a, b in zip(line, line[1:])), "the CDF is not rising")
        check((bottom - line[0][1]) / (bottom - top) < 1 / 5,
              "the CDF starts above 90%")
        check(top < bottom, "the CDF never rises")

    # The markers, which must agree with the report.
    lines = [l for l in root.iter(SVG + "line") if l.get("class") == "marker"]
    check(len(lines) == 4, f"{len(lines)} marker lines, want 4")
    labels = {}
    for t in root.iter(SVG + "text"):
        if t.get("class") == "marker-label":
            name, _, value = t.text.partition(" ")
            labels[name] = to_ns(value)
    for name, key in (("p50", "p50_ns"), ("p99", "p99_ns"),
                      ("p99.9", "p999_ns"), ("max", "max_ns")):
        want = lateness[key]
        got, rounding = labels.get(name, (None, 0))
        check(got is not None and abs(got - want) <= rounding * 1.001,
              f"marker {name} says {got} ns, the report {want} ns")


def check_named(cli, scratch):
    path = os.path.join(scratch, "named.svg")
    result = run(cli, "--timers=1000", "--window=10ms", f"--plot={path}")
    check(result.returncode == 0 and
          result.stdout.splitlines()[-1:] == [f"Lateness plot: {path}"],
          f"the report does not end by naming the plot: {result.stdout!r}")


def check_bad_paths(cli, scratch):
    missing = os.path.join(scratch, "no-such-dir", "plot.svg")
    result = run(cli, "--timers=1000", "--window=10ms", f"--plot={missing}")
    check(result.returncode == 2,
          f"unwritable path: exit {result.returncode}, want 2")
    check(f"cannot write --plot file '{missing}'" in result.stderr and
          "No such file or directory" in result.stderr,
          f"unwritable path: unclear message {result.stderr!r}")
    check(result.stdout == "", "unwritable path: the run went ahead")

    if os.access("/dev/full", os.W_OK):
        result = run(cli, "--timers=1000", "--window=10ms", "--plot=/dev/full")
        check(result.returncode == 2,
              f"/dev/full: exit {result.returncode}, want 2")
        check("cannot write --plot file '/dev/full'" in result.stderr and
              "No space left on device" in result.stderr,
              f"/dev/full: unclear message {result.stderr!r}")
        check("Result: PASS" in result.stdout, "/dev/full: no report")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cli, scratch = sys.argv[1:]
    os.makedirs(scratch, exist_ok=True)
    check_plot(cli, scratch)
    check_named(cli, scratch)
    check_bad_paths(cli, scratch)
    for failure in failures:
        print("FAIL:", failure)
    print("FAIL" if failures else "PASS")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
