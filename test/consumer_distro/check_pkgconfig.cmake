# Copyright 2026 The timingwheel Authors.
# SPDX-License-Identifier: Apache-2.0
#
# The test command of consumer_distro_pkgconfig: the pkg-config file of a
# /usr install made into a DESTDIR must name, as libdir and includedir, the
# directories the library and the headers went to, less the DESTDIR.
# Usage: cmake -DROOT=<the DESTDIR> -DPKG_CONFIG=<pkg-config> -P check_pkgconfig.cmake

# The directory of the first file matching `pattern` under ROOT/usr, as it
# will be once installed for real (without ROOT).
function(installed_dir var pattern)
  file(GLOB_RECURSE found ${ROOT}/usr/${pattern})
  if(NOT found)
    message(FATAL_ERROR "nothing matches ${pattern} under ${ROOT}/usr")
  endif()
  list(GET found 0 first)
  get_filename_component(dir ${first} DIRECTORY)
  file(RELATIVE_PATH dir ${ROOT} ${dir})
  set(${var} /${dir} PARENT_SCOPE)
endfunction()

installed_dir(pc_dir */timingwheel.pc)
installed_dir(lib_dir */libtimingwheel.*)
installed_dir(include_dir */timingwheel/timingwheel.h)
get_filename_component(include_dir ${include_dir} DIRECTORY)

set(ENV{PKG_CONFIG_PATH} ${ROOT}${pc_dir})
foreach(check IN ITEMS "libdir;${lib_dir}" "includedir;${include_dir}")
  list(GET check 0 variable)
  list(GET check 1 expected)
  execute_process(COMMAND ${PKG_CONFIG} --variable=${variable} timingwheel
    OUTPUT_VARIABLE value OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT value STREQUAL expected)
    message(FATAL_ERROR
      "${variable} of timingwheel.pc is '${value}', should be '${expected}'")
  endif()
  message(STATUS "${variable}: ${value}")
endforeach()
