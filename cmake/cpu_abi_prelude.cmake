# The CPU launch ABI's structs, from their one definition (src/runtime/cpu_abi.h) into
# the C dialect's prelude (src/compiler/dialects/dialect_c.c): the lines between the
# header's PRELUDE_BEGIN and PRELUDE_END markers become a C string literal, one
# "line\n" piece per line, in OUT, which dialect_c.c includes inside its prelude string.
# Whole-line comments are left out; TACK_* macros (TACK_MAX_NDIM) are written as
# TK_STRINGIFY(name), so the generated file holds their value, as the C compiler
# that built libtack sees it.  Any other comment in the region stops the build.
# Runs at configure time, and again whenever the header changes (CMAKE_CONFIGURE_DEPENDS);
# OUT is rewritten only when its text changes, so nothing rebuilds for nothing.
# Also a script of its own, for builds without CMake's configure step (tools/cross_check.py):
#   cmake -DTACK_PRELUDE_HEADER=src/runtime/cpu_abi.h -DTACK_PRELUDE_OUT=OUT -P cmake/cpu_abi_prelude.cmake
if(CMAKE_SCRIPT_MODE_FILE)
  cmake_minimum_required(VERSION 3.20) # the policies the function was written for
endif()
function(tack_cpu_abi_prelude header out)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${header})
  file(READ ${header} text)
  set(begin_mark "/* TK_CPU_ABI_PRELUDE_BEGIN */")
  set(end_mark "/* TK_CPU_ABI_PRELUDE_END */")
  string(FIND "${text}" "${begin_mark}" begin)
  string(FIND "${text}" "${end_mark}" end)
  if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
    message(FATAL_ERROR "${header}: no ${begin_mark} ... ${end_mark} region")
  endif()
  string(LENGTH "${begin_mark}" mark_len)
  math(EXPR begin "${begin} + ${mark_len}")
  math(EXPR len "${end} - ${begin}")
  string(SUBSTRING "${text}" ${begin} ${len} region) # "\nline\n...\nline\n"
  # whole-line comments out, one at a time (two in a row share a newline)
  set(comment_line "\n[ \t]*/\\*([^*\n]|\\*+[^*/\n])*\\*+/[ \t]*\n")
  while(TRUE)
    string(REGEX REPLACE "${comment_line}" "\n" next "${region}")
    if("${next}" STREQUAL "${region}")
      break()
    endif()
    set(region "${next}")
  endwhile()
  if(region MATCHES "/\\*|\\*/|//")
    message(FATAL_ERROR "${header}: a comment between the prelude markers must be a whole line of its own")
  endif()
  if(NOT region MATCHES "^\n(.*)\n$")
    message(FATAL_ERROR "${header}: the prelude markers must stand on lines of their own")
  endif()
  set(region "${CMAKE_MATCH_1}")
  string(REPLACE "\\" "\\\\" region "${region}")
  string(REPLACE "\"" "\\\"" region "${region}")
  string(REGEX REPLACE "(TACK_[A-Z0-9_]+)" "\" TK_STRINGIFY(\\1) \"" region "${region}")
  string(REPLACE "\n" "\\n\"\n    \"" region "${region}")
  file(RELATIVE_PATH name ${CMAKE_SOURCE_DIR} ${header})
  set(content "/* Generated from ${name} by cmake/cpu_abi_prelude.cmake: do not edit. */\n    \"${region}\\n\"\n")
  set(old "")
  if(EXISTS ${out})
    file(READ ${out} old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE ${out} "${content}")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  tack_cpu_abi_prelude(${CMAKE_SOURCE_DIR}/${TACK_PRELUDE_HEADER} ${TACK_PRELUDE_OUT})
endif()
