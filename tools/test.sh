#!/usr/bin/env bash
# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Builds timingwheel and runs its tests in every checked configuration. This is
# the one command a newcomer runs, and it is what CI runs (.ci/run).
#
# Usage:
#   tools/test.sh [config...]
#
# Configurations (CMake presets, see CMakePresets.json), default all:
#   lint       clang-format and clang-tidy over our sources, and every source
#              file's licence header (a finding fails)
#   debug      g++, Debug
#   clang-tsa  clang, Debug, -Wthread-safety -Werror=thread-safety: built,
#              not run (a compile-time check; its tests are debug's, and
#              tsan and asan run them under clang)
#   tsan       clang, ThreadSanitizer
#   gcc-tsan   g++, ThreadSanitizer, with -Werror like every preset (g++ warns
#              about what clang does not, e.g. -Wtsan); the library and the
#              tests where threads meet (scheduler_test and uptime_test
#              included: their timers run on a worker). Left to the tsan
#              configuration, to keep this one near two minutes: the model
#              test (80 s under g++'s TSan) and
#              FaultsTest.ShutdownWithAMillionPending (a million adds on one
#              thread, 47 s); see the gcc-tsan presets in CMakePresets.json
#   asan       clang, AddressSanitizer + UndefinedBehaviorSanitizer
#   fuzz       clang libFuzzer + ASan + UBSan: timingwheel_fuzz for 60 s and
#              loop_wheel_fuzz for 30 s, each on a scratch copy of its seed
#              corpus (test/fuzz/corpus, test/fuzz/loop_corpus; passed =
#              inputs executed by both)
#
# Environment:
#   TIMINGWHEEL_TEST_JOBS   build and test parallelism (default 2)
#
# Missing Debian packages are installed first (tools/install_deps.sh). Every
# configuration is configured, built and tested even if an earlier one failed;
# a summary table is printed at the end and the exit status is non-zero if any
# step of any configuration failed. Build trees go to build/<config>, the
# output of each step to build/test-logs/<config>.{configure,build,test}.log.

set -euo pipefail

cd "$(dirname "$0")/.."

readonly ALL_CONFIGS=(lint debug clang-tsa tsan gcc-tsan asan fuzz)
# libboost-dev: Asio's headers, for the example_asio_loop test (and the
# benchmark's Asio baseline). libconcurrentqueue-dev: moodycamel's queue, so
# that the debug and clang-tsa builds also compile handoff_benchmark.
readonly PACKAGES=(
  cmake ninja-build g++ clang libclang-rt-14-dev clang-format clang-tidy
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev libboost-dev
  libconcurrentqueue-dev
  make pkg-config python3
)
readonly LOG_DIR=build/test-logs

usage() {
  echo "usage: $0 [config...]   (configs: ${ALL_CONFIGS[*]})"
}

# ---- Arguments --------------------------------------------------------------

jobs="${TIMINGWHEEL_TEST_JOBS:-2}"
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "TIMINGWHEEL_TEST_JOBS must be a positive integer, got '$jobs'" >&2
  exit 2
fi

configs=()
for arg in "$@"; do
  case "$arg" in
    -h | --help)
      usage
      exit 0
      ;;
    lint | debug | clang-tsa | tsan | gcc-tsan | asan | fuzz) configs+=("$arg") ;;
    *)
      echo "unknown configuration '$arg'" >&2
      usage >&2
      exit 2
      ;;
  esac
done
if ((${#configs[@]} == 0)); then
  configs=("${ALL_CONFIGS[@]}")
fi

# ---- Dependencies -----------------------------------------------------------

# shellcheck source-path=SCRIPTDIR/..
source tools/install_deps.sh
install_deps "${PACKAGES[@]}"

# ---- ThreadSanitizer and ASLR -----------------------------------------------

# The ThreadSanitizer runtimes of clang 14 and g++ 12 (both LLVM's) abort with
# "unexpected memory mapping" on kernels that randomise mmap with more than 28
# bits of entropy (vm.mmap_rnd_bits = 32 on many recent hosts). There the tsan
# and gcc-tsan configurations run with address randomisation turned off for
# their processes (setarch -R), provided the container allows it. Sets the
# array tsan_wrapper.
tsan_wrapper=()
rnd_bits="$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)"
if [[ "$rnd_bits" =~ ^[0-9]+$ ]] && ((rnd_bits > 28)); then
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    tsan_wrapper=(setarch "$(uname -m)" -R)
    echo "note: vm.mmap_rnd_bits=$rnd_bits; running tsan and gcc-tsan with ASLR disabled"
  else
    echo "warning: vm.mmap_rnd_bits=$rnd_bits and setarch -R is not permitted;" \
      "tsan and gcc-tsan binaries may fail with 'unexpected memory mapping'" \
      "(fix on the host: sysctl vm.mmap_rnd_bits=28)" >&2
  fi
fi

# ---- Running one configuration ----------------------------------------------

# Runs "$@" with its output shown and also written to the file $1.
# Returns the command's exit status.
logged() {
  local log="$1"
  shift
  "$@" 2>&1 | tee "$log"
}

# Results per configuration, filled in by run_config.
declare -A result passed failed seconds

# Prints each tracked source file (C++, CMake, shell, Python and the .in
# templates) whose copyright line is not followed by the line
# `SPDX-License-Identifier: Apache-2.0` (LICENSE) in the file's comment
# syntax. Returns non-zero if there is one.
# shellcheck disable=SC2317 # called through logged, which shellcheck cannot see
check_licence_headers() {
  local file comment copyright ok=1
  while IFS= read -r file; do
    [[ -f "$file" ]] || continue # deleted in the work tree, not committed yet
    case "$file" in
      *.h | *.cc) comment=// ;;
      *) comment='#' ;;
    esac
    copyright="$(grep -n -m 1 -F "$comment Copyright 2026 The timingwheel Authors." \
      "$file" | cut -d: -f1)"
    if [[ -z "$copyright" ]] || ((copyright > 2)) ||
      [[ "$(sed -n "$((copyright + 1))p" "$file")" != \
      "$comment SPDX-License-Identifier: Apache-2.0" ]]; then
      echo "$file: its header must open with" \
        "'$comment Copyright 2026 The timingwheel Authors.' then" \
        "'$comment SPDX-License-Identifier: Apache-2.0'"
      ok=0
    fi
  done < <(git ls-files '*.h' '*.cc' '*.py' '*.sh' '*CMakeLists.txt' '*.cmake' \
    '*.in' .ci/run)
  ((ok))
}

# The lint configuration: every tracked C++ file is clang-formatted, every
# source file has its licence header, and clang-tidy (.clang-tidy) finds
# nothing in lib/. Uses the compile commands of the clang-tsa configuration.
run_lint() {
  local start="$SECONDS" ok=1
  local -a sources
  echo
  echo "==== lint ===="
  mapfile -t sources < <(git ls-files '*.h' '*.cc')
  if ! logged "$LOG_DIR/lint.format.log" \
    clang-format --dry-run --Werror "${sources[@]}"; then
    ok=0
  fi
  if ! logged "$LOG_DIR/lint.licence.log" check_licence_headers; then
    ok=0
  fi
  if ! logged "$LOG_DIR/lint.configure.log" cmake --preset clang-tsa ||
    ! logged "$LOG_DIR/lint.tidy.log" \
      clang-tidy -p build/clang-tsa --quiet lib/*/*.cc; then
    ok=0
  fi
  if ((ok)); then result[lint]=PASS; else result[lint]="FAIL (lint)"; fi
  passed[lint]=-
  failed[lint]=-
  seconds[lint]=$((SECONDS - start))
}

# Configures, builds and tests one configuration; records the outcome in the
# result/passed/failed/seconds arrays. Never fails itself.
run_config() {
  local config="$1" start summary total nfailed
  local -a wrap=()
  if [[ "$config" == tsan || "$config" == gcc-tsan ]]; then
    wrap=("${tsan_wrapper[@]}")
  fi
  start="$SECONDS"
  rm -f "$LOG_DIR/$config".*.log # no stale logs from an earlier run
  passed[$config]=-
  failed[$config]=-
  echo
  echo "==== $config ===="

  if ! logged "$LOG_DIR/$config.configure.log" cmake --preset "$config"; then
    result[$config]="FAIL (configure)"
  elif ! logged "$LOG_DIR/$config.build.log" \
    "${wrap[@]}" cmake --build --preset "$config" --parallel "$jobs"; then
    # The build also runs the test binaries (gtest_discover_tests), hence the
    # tsan wrapper here.
    result[$config]="FAIL (build)"
  elif [[ "$config" == clang-tsa ]]; then
    result[$config]=PASS # the analysis ran with the build
  else
    # --no-tests=error: a configuration in which no test was found is a
    # failure, not a silent pass.
    if logged "$LOG_DIR/$config.test.log" \
      "${wrap[@]}" ctest --preset "$config" -j "$jobs" --timeout 300 \
      --no-tests=error; then
      result[$config]=PASS
    else
      result[$config]="FAIL (test)"
    fi
    # ctest ends with e.g. "95% tests passed, 1 tests failed out of 20".
    summary="$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' \
      "$LOG_DIR/$config.test.log" | tail -n 1 || true)"
    if [[ "$summary" =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
      nfailed="${BASH_REMATCH[1]}"
      total="${BASH_REMATCH[2]}"
      passed[$config]=$((total - nfailed))
      failed[$config]="$nfailed"
    fi
  fi
  seconds[$config]=$((SECONDS - start))
}

# The fuzz configuration: builds the libFuzzer targets (preset fuzz) and runs
# each for its time on a scratch copy of its seed corpus, so that the
# repository is not modified. Records PASS/FAIL, and the number of inputs
# executed (from libFuzzer's final stats, summed) in the passed column.
run_fuzz() {
  local start="$SECONDS" execs total=0 target corpus time_s log
  rm -f "$LOG_DIR"/fuzz.*.log
  passed[fuzz]=-
  failed[fuzz]=-
  echo
  echo "==== fuzz ===="
  rm -rf build/fuzz/corpus-scratch build/fuzz/artifacts
  mkdir -p build/fuzz/artifacts
  if ! logged "$LOG_DIR/fuzz.configure.log" cmake --preset fuzz; then
    result[fuzz]="FAIL (configure)"
  elif ! logged "$LOG_DIR/fuzz.build.log" \
    cmake --build --preset fuzz --parallel "$jobs"; then
    result[fuzz]="FAIL (build)"
  else
    result[fuzz]=PASS
    failed[fuzz]=0
    for target in timingwheel_fuzz:corpus:60 loop_wheel_fuzz:loop_corpus:30; do
      IFS=: read -r target corpus time_s <<<"$target"
      log="$LOG_DIR/fuzz.$target.log"
      mkdir -p "build/fuzz/corpus-scratch/$target"
      cp "test/fuzz/$corpus"/* "build/fuzz/corpus-scratch/$target"/
      if ! logged "$log" "build/fuzz/test/fuzz/$target" \
        -max_total_time="$time_s" -timeout=10 -print_final_stats=1 \
        -artifact_prefix=build/fuzz/artifacts/ \
        "build/fuzz/corpus-scratch/$target"; then
        result[fuzz]="FAIL (crash)"
        failed[fuzz]=1
        echo "fuzz: $target's crashing input saved in build/fuzz/artifacts/" >&2
      fi
      execs="$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' \
        "$log" | tail -n 1)"
      total=$((total + ${execs:-0}))
    done
    passed[fuzz]="$total"
  fi
  seconds[fuzz]=$((SECONDS - start))
}

mkdir -p "$LOG_DIR"
overall_start="$SECONDS"
for config in "${configs[@]}"; do
  if [[ "$config" == lint ]]; then
    run_lint
  elif [[ "$config" == fuzz ]]; then
    run_fuzz
  else
    run_config "$config"
  fi
done

# ---- Summary ----------------------------------------------------------------

status=0
echo
echo "==== Summary (logs in $LOG_DIR/) ===="
printf '%-13s  %-17s  %6s  %6s  %7s\n' configuration result passed failed seconds
for config in "${configs[@]}"; do
  printf '%-13s  %-17s  %6s  %6s  %7s\n' "$config" "${result[$config]}" \
    "${passed[$config]}" "${failed[$config]}" "${seconds[$config]}"
  if [[ "${result[$config]}" != PASS ]]; then
    status=1
  fi
done
printf '%-13s  %-17s  %6s  %6s  %7s\n' total \
  "$( ((status == 0)) && echo PASS || echo FAIL)" "" "" "$((SECONDS - overall_start))"
exit "$status"
