# RheaperCrossCc.cmake: rheaper-cc and rheaper-c++ of a cross build
# (RHEAPER_TARGET_ONLY=ON, included from cc-wrapper/CMakeLists.txt).
#
# The wrappers run on the build machine while the project's compiler targets
# another one, so they are compiled here with the host's compiler
# (RHEAPER_HOST_CC, default cc) and drive the target's compilers by default
# (the toolchain file's CMAKE_C_COMPILER, and RHEAPER_TARGET_CXX or
# CMAKE_CXX_COMPILER for rheaper-c++). Whether -mno-omit-leaf-frame-pointer is
# passed follows the target's processor, not the host's, and so does -marm
# (32-bit ARM targets: the top-level RH_TARGET_ARM). They find the target
# runtime in build/lib like the native ones.

set(RHEAPER_HOST_CC "cc" CACHE STRING "the build machine's C compiler, for rheaper-cc")
if(NOT RHEAPER_TARGET_CXX)
  if(CMAKE_CXX_COMPILER)
    set(RHEAPER_TARGET_CXX "${CMAKE_CXX_COMPILER}")
  else()
    set(RHEAPER_TARGET_CXX "c++")
  endif()
endif()

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|amd64|i.86|aarch64|arm64)$")
  set(_rh_leaf_fp 1)
else()
  set(_rh_leaf_fp 0)
endif()
if(RH_TARGET_ARM)
  set(_rh_arm_mode 1)
else()
  set(_rh_arm_mode 0)
endif()
# MIPS: .eh_frame for the program's C code too (the walk steps by CFI there)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^mips")
  set(_rh_unwind_tables 1)
else()
  set(_rh_unwind_tables 0)
endif()

set(_rh_cc_dir "${CMAKE_CURRENT_SOURCE_DIR}")
set(_rh_cc_out "${CMAKE_BINARY_DIR}/bin/rheaper-cc")
add_custom_command(
  OUTPUT "${_rh_cc_out}"
  COMMAND "${CMAKE_COMMAND}" -E make_directory "${CMAKE_BINARY_DIR}/bin"
  COMMAND ${RHEAPER_HOST_CC} -O2 -std=gnu11 -Wall -I "${RHEAPER_GEN_DIR}" -I "${_rh_cc_dir}"
          "-DRH_CC_REL_LIBDIR=\"../lib\""
          "-DRH_CC_DEFAULT_CC=\"${CMAKE_C_COMPILER}\""
          "-DRH_CC_DEFAULT_CXX=\"${RHEAPER_TARGET_CXX}\""
          "-DRH_CC_LEAF_FP=${_rh_leaf_fp}" "-DRH_CC_ARM_MODE=${_rh_arm_mode}"
          "-DRH_CC_UNWIND_TABLES=${_rh_unwind_tables}"
          -o "${_rh_cc_out}"
          "${_rh_cc_dir}/rh_cc_main.c" "${_rh_cc_dir}/rh_cc_args.c" "${_rh_cc_dir}/rh_cc_alloc.c"
  COMMAND "${CMAKE_COMMAND}" -E create_symlink rheaper-cc "${CMAKE_BINARY_DIR}/bin/rheaper-c++"
  DEPENDS "${_rh_cc_dir}/rh_cc_main.c" "${_rh_cc_dir}/rh_cc_args.c" "${_rh_cc_dir}/rh_cc_alloc.c"
          "${_rh_cc_dir}/rh_cc.h" "${RHEAPER_GEN_DIR}/rh_link_flags.h" rheaper_wrap_generate
  COMMENT "Building rheaper-cc for the build machine (target: ${CMAKE_SYSTEM_PROCESSOR})"
  VERBATIM)
add_custom_target(rheaper-cc ALL DEPENDS "${_rh_cc_out}")
add_dependencies(rheaper-cc rheaper_rt rheaper_weak rheaper_ip rheaper_ipcxx)
