#!/usr/bin/env bash
# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Shows timingwheel working: installs what is missing, builds the release
# preset and runs the command-line demo, which prints its own report and ends
# by naming the plot it drew. It installs and builds only what it runs: the
# demo needs a compiler, CMake, Ninja and Abseil; --bench also Google Benchmark
# and Boost (for the Asio baseline), and moodycamel's concurrentqueue, so that
# the same build tree can also build handoff_benchmark. The tests are
# tools/test.sh's.
#
# Usage:
#   tools/run.sh [cli-args...]        build/release/tools/timingwheel_cli
#                                     --timers=1000000
#                                     --plot=build/release/lateness.svg
#                                     [cli-args...]
#   tools/run.sh --bench [bench-args...]
#                                     build/release/benchmark/timingwheel_benchmark
#                                     --benchmark_repetitions=3
#                                     --benchmark_report_aggregates_only=true
#                                     [bench-args...]
#
# Later arguments win over the defaults, e.g. tools/run.sh --timers=10
# or tools/run.sh --threads=2.

set -euo pipefail

cd "$(dirname "$0")/.."

# Build parallelism; 2 matches the machines this project targets.
readonly JOBS=2

packages=(cmake ninja-build g++ libabsl-dev)
benchmarks=OFF
target=timingwheel_cli
if [[ "${1:-}" == --bench ]]; then
  shift
  # Boost: the Asio baseline. concurrentqueue: moodycamel's queue, for
  # benchmark/handoff_benchmark (the hand-off comparison of the README's
  # Dependencies; optional, the library never uses it).
  packages+=(libbenchmark-dev libboost-dev libconcurrentqueue-dev)
  benchmarks=ON
  target=timingwheel_benchmark
fi

# shellcheck source-path=SCRIPTDIR/..
source tools/install_deps.sh
install_deps "${packages[@]}"

# The release preset without the tests (they need GoogleTest), with the
# benchmark only for --bench; then only the program to run.
cmake --preset release -DTIMINGWHEEL_BUILD_TESTS=OFF \
  -DTIMINGWHEEL_BUILD_TOOLS=ON -DTIMINGWHEEL_BUILD_BENCHMARKS="$benchmarks"
cmake --build --preset release --parallel "$JOBS" --target "$target"

if [[ "$target" == timingwheel_benchmark ]]; then
  echo >&2 "run.sh: Google Benchmark's '***WARNING*** Library was built as" \
    "DEBUG' below is about Debian's libbenchmark (built without NDEBUG), not" \
    "timingwheel: the library and this benchmark are built as Release."
  exec build/release/benchmark/timingwheel_benchmark \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true "$@"
fi
exec build/release/tools/timingwheel_cli --timers=1000000 \
  --plot=build/release/lateness.svg "$@"
