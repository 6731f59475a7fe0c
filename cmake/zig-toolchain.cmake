# Cross-compiling Tack with the ziglang wheel's `zig cc` (make test-cross):
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/zig-toolchain.cmake -DTACK_ZIG=/path/to/zig \
#         -DTACK_ZIG_TARGET=x86_64-windows-gnu|aarch64-macos|x86_64-macos ...
# zig carries the C library headers and import libraries of every target
# (MinGW-w64's for Windows, the macOS SDK's libSystem stubs), so no SDK is
# needed.  The compiler, archiver and ranlib are small scripts written into
# the build folder that run zig with the target, since CMake takes a compiler
# as one program.
if(NOT TACK_ZIG OR NOT TACK_ZIG_TARGET)
  message(FATAL_ERROR "zig-toolchain.cmake needs TACK_ZIG (the zig binary) and TACK_ZIG_TARGET")
endif()
# try_compile projects read the toolchain file again: hand them the two settings.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES TACK_ZIG TACK_ZIG_TARGET)

if(TACK_ZIG_TARGET MATCHES "windows")
  set(CMAKE_SYSTEM_NAME Windows)
elseif(TACK_ZIG_TARGET MATCHES "macos")
  set(CMAKE_SYSTEM_NAME Darwin)
  set(CMAKE_OSX_SYSROOT "/")          # zig brings the SDK's headers; no xcrun
  set(CMAKE_OSX_DEPLOYMENT_TARGET "")
else()
  set(CMAKE_SYSTEM_NAME Linux)
endif()
string(REGEX REPLACE "-.*" "" CMAKE_SYSTEM_PROCESSOR "${TACK_ZIG_TARGET}")

set(_zig_dir "${CMAKE_BINARY_DIR}/zig-bin")
if(CMAKE_BINARY_DIR MATCHES "CMakeFiles/CMakeScratch")
  set(_zig_dir "${CMAKE_BINARY_DIR}/../../../zig-bin") # a try_compile: the outer build's scripts
endif()
# The scripts name zig's size and time, so that ccache (which Tack's Makefile puts in
# front, told to hash the compiler's content) sees a new zig as a new compiler.
file(SIZE "${TACK_ZIG}" _zig_size)
file(TIMESTAMP "${TACK_ZIG}" _zig_time "%Y-%m-%dT%H:%M:%S" UTC)
foreach(tool cc ar ranlib)
  set(args "${tool}")
  if(tool STREQUAL "cc")
    set(args "cc -target ${TACK_ZIG_TARGET}")
  endif()
  if(NOT EXISTS "${_zig_dir}/zig-${tool}")
    file(WRITE "${_zig_dir}/zig-${tool}.tmp" "#!/bin/sh\n# zig ${_zig_size} bytes, ${_zig_time}\nexec \"${TACK_ZIG}\" ${args} \"$@\"\n")
    file(CHMOD "${_zig_dir}/zig-${tool}.tmp" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
    file(RENAME "${_zig_dir}/zig-${tool}.tmp" "${_zig_dir}/zig-${tool}")
  endif()
endforeach()
set(CMAKE_C_COMPILER "${_zig_dir}/zig-cc")
set(CMAKE_AR "${_zig_dir}/zig-ar" CACHE FILEPATH "" FORCE)
set(CMAKE_RANLIB "${_zig_dir}/zig-ranlib" CACHE FILEPATH "" FORCE)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
