#!/usr/bin/env bash
# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Installs the Debian packages given as arguments, but only those that are not
# installed yet. Shared by tools/test.sh and tools/run.sh.
#
# Usage:
#   tools/install_deps.sh pkg...             # run it
#   source tools/install_deps.sh; install_deps pkg...
#
# Environment:
#   TIMINGWHEEL_DEPS_DRY_RUN=1   only print which packages would be installed.
#
# When nothing is missing this does no network access and needs no root. When
# something is missing it runs `apt-get update` and then
# `apt-get install -y --no-install-recommends` of the missing packages, through
# sudo when not running as root.

set -euo pipefail

# Prints the packages among "$@" that dpkg does not consider installed, one per
# line. A package that was removed but left its config files behind
# ("deinstall ok config-files") counts as missing.
missing_packages() {
  local pkg status
  for pkg in "$@"; do
    status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
    if [[ "$status" != *" ok installed" ]]; then
      printf '%s\n' "$pkg"
    fi
  done
}

# Installs whichever of "$@" are missing.
install_deps() {
  local -a missing sudo
  mapfile -t missing < <(missing_packages "$@")
  if ((${#missing[@]} == 0)); then
    echo "install_deps: all ${#} packages already installed"
    return 0
  fi
  echo "install_deps: missing packages: ${missing[*]}"
  if [[ "${TIMINGWHEEL_DEPS_DRY_RUN:-0}" == 1 ]]; then
    echo "install_deps: dry run, would run: apt-get update &&" \
      "apt-get install -y --no-install-recommends ${missing[*]}"
    return 0
  fi

  sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "install_deps: not root and sudo is not available; as root run:" >&2
      echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
      return 1
    fi
    # sudo resets the environment, so pass DEBIAN_FRONTEND through env(1).
    sudo=(sudo)
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
}

# When executed rather than sourced, install the packages named on the command
# line.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  install_deps "$@"
fi
