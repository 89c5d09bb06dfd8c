# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
#
# Fails unless every ```cpp block of README.md is part of a program that
# ctest compiles and runs: test/readme_example.cc or one of
# test/examples/*.cc. A block may be a fragment (an example's loop), and runs
# of spaces and line breaks compare equal, so that the README may indent and
# wrap a fragment otherwise than its source does.
# Usage: cmake -DREADME=... -DSOURCE_DIR=<test/> -P check_readme_cpp.cmake
cmake_minimum_required(VERSION 3.25)
file(READ ${README} readme)
file(GLOB sources ${SOURCE_DIR}/readme_example.cc ${SOURCE_DIR}/examples/*.cc)
# The sources with their whitespace folded to one space, each on a line of
# its own, so that a block never matches across two of them.
set(programs "")
foreach(source IN LISTS sources)
  file(READ ${source} text)
  string(REGEX REPLACE "[ \t\r\n]+" " " text "${text}")
  string(APPEND programs "${text}\n")
endforeach()

set(rest "${readme}")
set(blocks 0)
while(TRUE)
  string(FIND "${rest}" "```cpp\n" start)
  if(start EQUAL -1)
    break()
  endif()
  math(EXPR start "${start} + 7")
  string(SUBSTRING "${rest}" ${start} -1 rest)
  string(FIND "${rest}" "\n```" end)
  if(end EQUAL -1)
    message(FATAL_ERROR "README.md: a ```cpp block is never closed")
  endif()
  string(SUBSTRING "${rest}" 0 ${end} block)
  string(SUBSTRING "${rest}" ${end} -1 rest)
  string(REGEX REPLACE "[ \t\r\n]+" " " folded "${block}")
  string(STRIP "${folded}" folded)
  string(FIND "${programs}" "${folded}" where)
  if(where EQUAL -1)
    message(SEND_ERROR "README.md quotes C++ that no test compiles; make it "
      "part of test/readme_example.cc or of an example in test/examples/:\n${block}")
  endif()
  math(EXPR blocks "${blocks} + 1")
endwhile()
message(STATUS "README.md: ${blocks} C++ blocks, each part of a program ctest runs")
