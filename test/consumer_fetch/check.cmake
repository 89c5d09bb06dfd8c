# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
#
# The test command of consumer_fetch, run after the project built:
# 1. runs the ThreadSanitizer-built consumer (with address randomisation off
#    where the kernel's mmap entropy is above what the TSan runtime supports,
#    as tools/test.sh does), which must exit 0 with no report;
# 2. installs the consumer into a scratch prefix, which must then hold the
#    consumer's program and package, and timingwheel's library, headers and
#    package that the consumer's package refers to.
# Usage: cmake -DBINARY_DIR=<consumer build dir> -P check.cmake
set(program ${BINARY_DIR}/consumer_fetch)
set(wrapper "")
if(EXISTS /proc/sys/vm/mmap_rnd_bits)
  file(READ /proc/sys/vm/mmap_rnd_bits rnd_bits)
  string(STRIP "${rnd_bits}" rnd_bits)
  if(rnd_bits GREATER 28)
    find_program(SETARCH setarch)
    cmake_host_system_information(RESULT arch QUERY OS_PLATFORM)
    if(SETARCH)
      execute_process(COMMAND ${SETARCH} ${arch} -R true RESULT_VARIABLE rc)
      if(rc EQUAL 0)
        set(wrapper ${SETARCH} ${arch} -R)
      endif()
    endif()
  endif()
endif()
set(ENV{TSAN_OPTIONS} "halt_on_error=1")
execute_process(COMMAND ${wrapper} ${program} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${program} failed: ${rc}")
endif()

set(prefix ${BINARY_DIR}/install-check)
file(REMOVE_RECURSE ${prefix})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install of the consumer failed: ${rc}")
endif()
foreach(file IN ITEMS
    bin/consumer_fetch
    lib/cmake/consumer/consumerTargets.cmake
    lib/libtimingwheel.a
    include/timingwheel/timingwheel.h
    lib/cmake/timingwheel/timingwheelConfig.cmake
    lib/cmake/timingwheel/timingwheelTargets.cmake)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "the consumer's install has no ${file}")
  endif()
endforeach()
file(READ ${prefix}/lib/cmake/consumer/consumerTargets.cmake targets)
if(NOT targets MATCHES "timingwheel::timingwheel")
  message(FATAL_ERROR "the consumer's package does not name timingwheel::timingwheel")
endif()
