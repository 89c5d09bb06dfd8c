#!/usr/bin/env bash
# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Shows that the concurrency tests catch bugs in the hand-off: each patch of
# test/mutations/ injects one by hand, and history_test must then fail.
#
#   lost_submission        the take-back of a ring's latest push checks the
#                          owner's mark, then moves the count back, in two
#                          steps instead of one compare-and-swap: an owner
#                          that marks in between takes the slot the Stop
#                          took back (freed while in use), and the next push
#                          lands in a slot the owner counts as taken (lost)
#   stop_before_take_runs  the owner claims an arm of the right generation
#                          whatever its state: a Stop that came before the
#                          take is undone and the callback runs
#   double_take            the owner reads a ring's count without marking
#                          it: a Retract after the take still moves the count
#                          back, so the submission is had twice (by the
#                          owner, and by the Stop that took it back)
#
# A lost arm and a stopped arm that runs are histories that no serial order
# explains: the checker prints the timer's history. A submission had twice
# cannot make a callback run twice (the state word refuses the second claim),
# but the two holders share one reference, so the node is freed while in use:
# AddressSanitizer reports the use after poison, and a debug build's
# assertion in Advancer::Apply names it.
#
# Usage:
#   tools/mutation_check.sh            every patch of test/mutations/
#   tools/mutation_check.sh NAME...    those patches only
#
# Environment:
#   TIMINGWHEEL_MUTATION_RUNS   runs of history_test per mutation (default 10:
#                               a lost submission needs the owner to mark in
#                               the few instructions between the take-back's
#                               check and its store, and shows in 1 of several)
#
# It works on a scratch worktree of HEAD (build/mutations/tree, built in
# build/mutations/asan with the asan preset): the checkout is not touched. The
# unpatched tree runs first and must pass, so a mutation counts as caught only
# for a failure the patch made. Exit status: non-zero if the control failed, a
# patch no longer applies, or a mutation was not caught. Logs:
# build/mutations/<name>.log.

set -euo pipefail

cd "$(dirname "$0")/.."

readonly ROOT=$PWD
readonly OUT=$ROOT/build/mutations
readonly TREE=$OUT/tree
readonly BUILD=$OUT/asan
readonly RUNS=${TIMINGWHEEL_MUTATION_RUNS:-10}
# The lines of a failed run that say what failed.
readonly EVIDENCE='no serial order|ERROR: AddressSanitizer|Assertion|runtime error'

source tools/install_deps.sh
install_deps cmake ninja-build clang libclang-rt-14-dev git \
  libabsl-dev libgtest-dev libgmock-dev

mutations=("$@")
if ((${#mutations[@]} == 0)); then
  for patch in test/mutations/*.patch; do
    mutations+=("$(basename "$patch" .patch)")
  done
fi

mkdir -p "$OUT"
if [[ -e "$TREE" ]]; then
  git worktree remove --force "$TREE"
fi
git worktree add --quiet --detach "$TREE" HEAD
trap 'git -C "$ROOT" worktree remove --force "$TREE"' EXIT

build() {
  cmake --build "$BUILD" --target history_test >>"$1" 2>&1
}

# Runs history_test up to RUNS times; prints the first line that tells what
# failed, or nothing if every run passed.
first_failure() {
  local log=$1 run
  for ((run = 1; run <= RUNS; ++run)); do
    if ! "$BUILD/test/history_test" --gtest_brief=1 >>"$log" 2>&1; then
      grep -a -m1 -E "$EVIDENCE" "$log" || echo "history_test failed (run $run)"
      return
    fi
  done
}

echo "mutation_check: configuring and building history_test (asan preset)"
(cd "$TREE" && cmake --preset asan -B "$BUILD" -DTIMINGWHEEL_BUILD_BENCHMARKS=OFF \
  >"$OUT/configure.log" 2>&1)
: >"$OUT/control.log"
build "$OUT/control.log"
control=$(first_failure "$OUT/control.log")
if [[ -n "$control" ]]; then
  echo "mutation_check: the unpatched tree fails: $control" >&2
  exit 1
fi
echo "control (no patch): passed $RUNS runs"

missed=0
for name in "${mutations[@]}"; do
  patch=$ROOT/test/mutations/$name.patch
  log=$OUT/$name.log
  : >"$log"
  if ! git -C "$TREE" apply "$patch" 2>>"$log"; then
    echo "$name: the patch no longer applies (see $log)"
    missed=1
    continue
  fi
  build "$log"
  found=$(first_failure "$log")
  git -C "$TREE" checkout --quiet -- .
  if [[ -n "$found" ]]; then
    echo "$name: caught: ${found:0:160}"
  else
    echo "$name: NOT caught in $RUNS runs"
    missed=1
  fi
done
build "$OUT/control.log"  # leave the build tree unpatched
exit "$missed"
