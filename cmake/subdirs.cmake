# add_subdirectory() for every direct child of DIR that has a CMakeLists.txt, so that a feature
# brings its tests or programs by adding a folder, without editing a shared list.
function(vqs_add_child_dirs dir)
  file(GLOB children LIST_DIRECTORIES true ${dir}/*)
  list(SORT children)
  foreach(child ${children})
    if(IS_DIRECTORY ${child} AND EXISTS ${child}/CMakeLists.txt)
      add_subdirectory(${child})
    endif()
  endforeach()
endfunction()
