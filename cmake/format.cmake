# format.cmake: runs clang-format -i on every .c and .h file of the source tree.
#
# Invoked by the `format` target as
#   cmake -DSOURCE_DIR=<tree> -DCLANG_FORMAT=<clang-format> -P format.cmake
# Build directories and other non-source folders are skipped. Fails with one
# line naming the package when clang-format is missing.
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "format.cmake: pass -DSOURCE_DIR=<source tree>")
endif()
if(NOT CLANG_FORMAT OR CLANG_FORMAT MATCHES "NOTFOUND$")
  message(FATAL_ERROR "format: clang-format not found; install it with: apt-get install -y clang-format")
endif()

set(_rh_files "")
foreach(dir wrap runtime cc-wrapper convert tests)
  file(GLOB_RECURSE _rh_found LIST_DIRECTORIES false
       "${SOURCE_DIR}/${dir}/*.c" "${SOURCE_DIR}/${dir}/*.h")
  list(APPEND _rh_files ${_rh_found})
endforeach()
list(SORT _rh_files)
list(LENGTH _rh_files _rh_n)
if(_rh_n EQUAL 0)
  message(STATUS "format: no .c or .h files under ${SOURCE_DIR}")
  return()
endif()

execute_process(COMMAND "${CLANG_FORMAT}" -i --style=file ${_rh_files}
                WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE _rh_rc)
if(NOT _rh_rc EQUAL 0)
  message(FATAL_ERROR "format: ${CLANG_FORMAT} failed with status ${_rh_rc}")
endif()
message(STATUS "format: formatted ${_rh_n} files")
