# Compiles bpf/NAME.bpf.c with clang and generates NAME.skel.h with bpftool, both in the
# build tree. Skeletons are never committed.
find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

set(CEPHSCOPE_VMLINUX_DIR ${PROJECT_SOURCE_DIR}/bpf/vmlinux/${CMAKE_SYSTEM_PROCESSOR})
if(NOT EXISTS ${CEPHSCOPE_VMLINUX_DIR}/vmlinux.h)
  message(FATAL_ERROR "no vmlinux.h for ${CMAKE_SYSTEM_PROCESSOR}: see bpf/vmlinux/README.md")
endif()
set(CEPHSCOPE_SKEL_DIR ${CMAKE_BINARY_DIR}/skel)
file(MAKE_DIRECTORY ${CEPHSCOPE_SKEL_DIR})

if(CMAKE_SYSTEM_PROCESSOR STREQUAL "x86_64")
  set(BPF_TARGET_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
  set(BPF_TARGET_ARCH arm64)
else()
  set(BPF_TARGET_ARCH ${CMAKE_SYSTEM_PROCESSOR})
endif()

# cephscope_bpf_object(NAME [SOURCE path.bpf.c]): SOURCE defaults to bpf/NAME.bpf.c.
function(cephscope_bpf_object name)
  cmake_parse_arguments(ARG "" "SOURCE" "" ${ARGN})
  set(src ${PROJECT_SOURCE_DIR}/bpf/${name}.bpf.c)
  if(ARG_SOURCE)
    set(src ${ARG_SOURCE})
  endif()
  set(obj ${CEPHSCOPE_SKEL_DIR}/${name}.bpf.o)
  set(skel ${CEPHSCOPE_SKEL_DIR}/${name}.skel.h)
  set(debug_flag)
  if(CEPHSCOPE_BPF_DEBUG)
    set(debug_flag -DCEPHSCOPE_BPF_DEBUG=1)
  endif()
  file(GLOB bpf_headers ${PROJECT_SOURCE_DIR}/bpf/*.h)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_C_COMPILER_LAUNCHER} ${BPF_CLANG} -g -O2 -target bpf -Wall -Werror -D__TARGET_ARCH_${BPF_TARGET_ARCH}
            ${debug_flag} -I${CEPHSCOPE_VMLINUX_DIR} -I${PROJECT_SOURCE_DIR}/bpf
            -c ${src} -o ${obj}
    DEPENDS ${src} ${bpf_headers}
    COMMENT "BPF ${name}.bpf.c"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name}_bpf > ${skel}
    DEPENDS ${obj}
    COMMENT "skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skel DEPENDS ${skel})
endfunction()
