# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Fails unless README.md quotes test/readme_example.cc verbatim, so the
# example a reader copies is the one ctest compiles and runs.
# Usage: cmake -DREADME=... -DEXAMPLE=... -P check_readme_example.cmake
file(READ ${README} readme)
file(READ ${EXAMPLE} example)
# The README quotes the program, not its licence header.
string(REGEX REPLACE "^// Copyright[^\n]*\n// SPDX-License-Identifier:[^\n]*\n\n" ""
  example "${example}")
string(FIND "${readme}" "${example}" where)
if(where EQUAL -1)
  message(FATAL_ERROR "README.md does not quote ${EXAMPLE} verbatim; update the README's usage example")
endif()
