# musl static-pie toolchain: a gcc specs file plus a wrapper script.
#
# Include this file from any CMakeLists.txt that needs it; it only does its
# work once per build tree. Afterwards (in every directory, they are cache
# variables):
#   FLATUX_MUSL_FOUND  TRUE when musl (musl-tools) is installed
#   FLATUX_MUSL_CC     the wrapper; use it like gcc, add -static-pie to link
#   FLATUX_MUSL_SPECS  the generated specs file (for dependencies)
# and the function flatux_add_musl_executable() below.
#
# Guest programs are built this way because a static PIE needs no loader and
# no libraries from the host, so the same binary runs natively, under
# flatux with the host root, and inside an arbitrary --root folder.
include_guard(GLOBAL)

set(FLATUX_MUSL_LIBDIR "/usr/lib/x86_64-linux-musl" CACHE PATH
  "musl's crt*.o and libc.a")
set(FLATUX_MUSL_INCDIR "/usr/include/x86_64-linux-musl" CACHE PATH
  "musl's C headers")
set(FLATUX_KERNEL_HEADERS "/usr/include" CACHE PATH
  "Folder holding the kernel uapi headers (linux/, asm-generic/, ...)")
set(FLATUX_KERNEL_ARCH_HEADERS "/usr/include/x86_64-linux-gnu/asm" CACHE PATH
  "The x86_64 uapi asm/ folder")
find_program(FLATUX_MUSL_REALGCC NAMES x86_64-linux-gnu-gcc gcc
  DOC "The gcc the musl wrapper drives")

set(_flatux_musl_out "${CMAKE_BINARY_DIR}/tools/musl-static-pie")

if(NOT EXISTS "${FLATUX_MUSL_LIBDIR}/rcrt1.o"
   OR NOT EXISTS "${FLATUX_MUSL_LIBDIR}/libc.a"
   OR NOT EXISTS "${FLATUX_MUSL_INCDIR}/stdio.h"
   OR NOT FLATUX_MUSL_REALGCC)
  message(WARNING "musl not found (apt-get install musl-tools); "
    "musl guest programs will not be built")
  set(FLATUX_MUSL_FOUND FALSE CACHE INTERNAL "")
  set(FLATUX_MUSL_CC "" CACHE INTERNAL "")
  set(FLATUX_MUSL_SPECS "" CACHE INTERNAL "")
  return()
endif()

# musl ships no kernel headers and the host's /usr/include cannot be put on
# the search path wholesale (it is glibc's), so point at just the uapi
# folders through a folder of symlinks.
set(FLATUX_MUSL_KINC "${_flatux_musl_out}/kinc")
file(MAKE_DIRECTORY "${FLATUX_MUSL_KINC}")
foreach(_d linux asm-generic misc mtd rdma sound video xen)
  if(EXISTS "${FLATUX_KERNEL_HEADERS}/${_d}")
    file(CREATE_LINK "${FLATUX_KERNEL_HEADERS}/${_d}" "${FLATUX_MUSL_KINC}/${_d}"
      SYMBOLIC)
  endif()
endforeach()
if(NOT EXISTS "${FLATUX_KERNEL_ARCH_HEADERS}/unistd.h")
  message(WARNING "no x86_64 uapi asm headers at ${FLATUX_KERNEL_ARCH_HEADERS} "
    "(linux-libc-dev); musl programs including <linux/...> will not compile")
endif()
file(CREATE_LINK "${FLATUX_KERNEL_ARCH_HEADERS}" "${FLATUX_MUSL_KINC}/asm" SYMBOLIC)

# The compiler's own header folder comes last: musl's headers win, but
# compiler-provided ones musl lacks (stdatomic.h, cpuid.h, intrinsics) stay
# reachable.
execute_process(COMMAND "${FLATUX_MUSL_REALGCC}" -print-file-name=include
  OUTPUT_VARIABLE FLATUX_MUSL_GCC_INCDIR OUTPUT_STRIP_TRAILING_WHITESPACE)

set(FLATUX_MUSL_SPECS "${_flatux_musl_out}/musl-gcc-spie.specs" CACHE INTERNAL "")
configure_file("${CMAKE_CURRENT_LIST_DIR}/musl-gcc-spie.specs.in"
  "${FLATUX_MUSL_SPECS}" @ONLY)
set(FLATUX_MUSL_CC "${_flatux_musl_out}/flatux-musl-gcc" CACHE INTERNAL "")
configure_file("${CMAKE_CURRENT_LIST_DIR}/flatux-musl-gcc.in"
  "${FLATUX_MUSL_CC}" @ONLY
  FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
                   GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(FLATUX_MUSL_FOUND TRUE CACHE INTERNAL "")
set(FLATUX_MUSL_CHECK_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/check-static-pie.sh"
  CACHE INTERNAL "")

# flatux_add_musl_executable(<target> OUTPUT <file> SOURCES <src>...
#                            [CFLAGS <flag>...] [DEPENDS <file>...])
# Builds a musl static PIE with FLATUX_MUSL_CC. It is a custom command, not
# add_executable(), because the project's C compiler is the host gcc with
# glibc and CMake allows one compiler per language.
function(flatux_add_musl_executable target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "OUTPUT" "SOURCES;CFLAGS;DEPENDS")
  if(NOT arg_OUTPUT OR NOT arg_SOURCES)
    message(FATAL_ERROR "flatux_add_musl_executable: OUTPUT and SOURCES are required")
  endif()
  set(_srcs)
  foreach(_s IN LISTS arg_SOURCES)
    cmake_path(ABSOLUTE_PATH _s BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND _srcs "${_s}")
  endforeach()
  cmake_path(ABSOLUTE_PATH arg_OUTPUT BASE_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
  add_custom_command(
    OUTPUT "${arg_OUTPUT}"
    COMMAND "${FLATUX_MUSL_CC}" -static-pie -fPIE ${arg_CFLAGS}
            -o "${arg_OUTPUT}" ${_srcs}
    DEPENDS ${_srcs} ${arg_DEPENDS} "${FLATUX_MUSL_CC}" "${FLATUX_MUSL_SPECS}"
    COMMENT "Building musl static-pie ${target}"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS "${arg_OUTPUT}")
endfunction()
