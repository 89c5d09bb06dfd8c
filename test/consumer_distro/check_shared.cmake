# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
#
# The test command of consumer_distro_shared, after consumer_distro_install
# built the shared library with prefix /usr and installed it into a DESTDIR:
# 1. the library is libtimingwheel.so.VERSION, with the soname
#    libtimingwheel.so.MAJOR.MINOR and the usual two links to it;
# 2. its dynamic symbols hold the public API and nothing of lib/'s
#    (timingwheel::internal, anonymous namespaces);
# 3. no function or variable that lib/ defines in the public namespace is
#    hidden: a declaration in include/timingwheel/ lacks TIMINGWHEEL_EXPORT;
# 4. test/consumer, built against the install with find_package, links the
#    shared library into its program and its plugin, and both run.
# Usage: cmake -DROOT=<the DESTDIR> -DBUILD_DIR=<the library's build>
#   -DVERSION=<project version> -DCONSUMER_SOURCE=<test/consumer>
#   -DCONSUMER_BUILD=<its build dir> -DGENERATOR=... -DCXX_COMPILER=...
#   -DBUILD_TYPE=... -P check_shared.cmake

# 1. The file and its links.
file(GLOB_RECURSE library ${ROOT}/usr/*/libtimingwheel.so.${VERSION})
if(NOT library)
  message(FATAL_ERROR "no libtimingwheel.so.${VERSION} under ${ROOT}/usr")
endif()
get_filename_component(libdir ${library} DIRECTORY)
string(REGEX MATCH "^[0-9]+\\.[0-9]+" soversion ${VERSION})
set(soname libtimingwheel.so.${soversion})
foreach(link IN ITEMS "libtimingwheel.so;${soname}"
                      "${soname};libtimingwheel.so.${VERSION}")
  list(GET link 0 name)
  list(GET link 1 target)
  if(NOT IS_SYMLINK ${libdir}/${name})
    message(FATAL_ERROR "${libdir}/${name} is not a link to ${target}")
  endif()
  file(READ_SYMLINK ${libdir}/${name} points_to)
  if(NOT points_to STREQUAL target)
    message(FATAL_ERROR "${name} links to ${points_to}, not ${target}")
  endif()
endforeach()
execute_process(COMMAND readelf -d ${library} OUTPUT_VARIABLE dynamic
  COMMAND_ERROR_IS_FATAL ANY)
if(NOT dynamic MATCHES "Library soname: \\[${soname}\\]")
  message(FATAL_ERROR "the soname of ${library} is not ${soname}:\n${dynamic}")
endif()

# 2. What it exports.
execute_process(COMMAND nm -D --defined-only -C ${library}
  OUTPUT_VARIABLE exported COMMAND_ERROR_IS_FATAL ANY)
string(REGEX MATCHALL "[^\n]*timingwheel::(internal::|\\(anonymous)[^\n]*"
  internals "${exported}")
# A public member may name an internal type in its parameters
# (Timer::Timer(internal::TimerNode*)); what must not be exported is the
# internal entity itself.
list(FILTER internals INCLUDE REGEX
  "^[0-9a-f]+ [A-Za-z] ([a-zA-Z ]+ for )?timingwheel::(internal::|\\(anonymous)")
if(internals)
  list(JOIN internals "\n" internals)
  message(FATAL_ERROR "libtimingwheel.so exports lib/'s internals:\n${internals}")
endif()
if(NOT exported MATCHES "timingwheel::TimingWheel::Create\\(")
  message(FATAL_ERROR "libtimingwheel.so does not export TimingWheel::Create")
endif()

# 3. Nothing of the public namespace left hidden.
file(GLOB_RECURSE objects ${BUILD_DIR}/CMakeFiles/timingwheel.dir/*.o)
if(NOT objects)
  message(FATAL_ERROR "no object files under ${BUILD_DIR}/CMakeFiles/timingwheel.dir")
endif()
set(unmarked "")
foreach(object IN LISTS objects)
  execute_process(COMMAND readelf -sW -C ${object} OUTPUT_VARIABLE symbols
    COMMAND_ERROR_IS_FATAL ANY)
  # Defined (a section index, not UND), global (not weak: code of the headers
  # is weak) and hidden, in timingwheel:: but not in its internal namespaces.
  string(REGEX MATCHALL
    "[^\n]* (FUNC|OBJECT) +GLOBAL +HIDDEN +[0-9]+ ([a-zA-Z ]+ for )?timingwheel::[^\n]*"
    hidden "${symbols}")
  list(FILTER hidden EXCLUDE REGEX "timingwheel::(internal::|\\(anonymous)")
  list(APPEND unmarked ${hidden})
endforeach()
if(unmarked)
  list(REMOVE_DUPLICATES unmarked)
  list(JOIN unmarked "\n" unmarked)
  message(FATAL_ERROR "defined in the public namespace but hidden; mark the "
    "declarations TIMINGWHEEL_EXPORT (include/timingwheel/export.h):\n${unmarked}")
endif()

# 4. A user's project against the shared library.
execute_process(COMMAND ${CMAKE_CTEST_COMMAND}
    --build-and-test ${CONSUMER_SOURCE} ${CONSUMER_BUILD}
    --build-generator ${GENERATOR}
    --build-options -DCMAKE_PREFIX_PATH=${ROOT}/usr
                    -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
                    -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    --test-command ${CMAKE_CTEST_COMMAND} --output-on-failure
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "test/consumer against the shared library failed: ${rc}")
endif()
execute_process(COMMAND readelf -d ${CONSUMER_BUILD}/my_server
  OUTPUT_VARIABLE needed COMMAND_ERROR_IS_FATAL ANY)
if(NOT needed MATCHES "Shared library: \\[${soname}\\]")
  message(FATAL_ERROR "the consumer does not load ${soname}:\n${needed}")
endif()
