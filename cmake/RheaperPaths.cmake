# RheaperPaths.cmake: install-path arithmetic shared by cc-wrapper/ (where
# rheaper-cc finds its runtime) and cmake/ (where the toolchain file finds
# rheaper-cc). Both bake relative paths in, so a moved prefix keeps working.

# rh_relative_dir(<out> <from> <to>): the path from install dir <from> to install
# dir <to>, both relative to the prefix (or absolute). Computed on a dummy prefix
# so that nothing of this machine ends up in the result.
function(rh_relative_dir out from to)
  foreach(v from to)
    if(IS_ABSOLUTE "${${v}}")
      set(_${v} "${${v}}")
    else()
      set(_${v} "/rheaper-prefix/${${v}}")
    endif()
  endforeach()
  file(RELATIVE_PATH rel "${_from}" "${_to}")
  if(rel STREQUAL "")
    set(rel ".")
  endif()
  set(${out} "${rel}" PARENT_SCOPE)
endfunction()
