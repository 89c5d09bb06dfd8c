#!/usr/bin/env bash
# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Shows timingwheel working: installs what is missing, builds the release
# preset and runs the command-line demo, which prints its own report.
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

readonly PACKAGES=(
  cmake ninja-build g++ clang libclang-rt-14-dev
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev libboost-dev
)

# Build parallelism; 2 matches the machines this project targets.
readonly JOBS=2

# shellcheck source-path=SCRIPTDIR/..
source tools/install_deps.sh
install_deps "${PACKAGES[@]}"

cmake --preset release
cmake --build --preset release --parallel "$JOBS"

if [[ "${1:-}" == --bench ]]; then
  shift
  exec build/release/benchmark/timingwheel_benchmark \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true "$@"
fi
exec build/release/tools/timingwheel_cli --timers=1000000 \
  --plot=build/release/lateness.svg "$@"
