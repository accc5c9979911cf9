# Build-time step (CMakeLists.txt: the man pages, the Debian changelog): writes every IN/PATTERN
# (default *.1) as OUT/<name>.gz with `gzip -9n` (Debian policy 12.1 and 12.7: man pages and
# changelogs compressed with gzip -9; -n leaves the name and time out, so the .deb is
# reproducible). Usage: cmake -DIN=DIR -DOUT=DIR [-DPATTERN=GLOB] -P gzip_files.cmake
find_program(FULCRUM_GZIP gzip REQUIRED)
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
if(NOT PATTERN)
  set(PATTERN "*.1")
endif()
file(GLOB pages "${IN}/${PATTERN}")
foreach(page IN LISTS pages)
  get_filename_component(name "${page}" NAME)
  execute_process(COMMAND "${FULCRUM_GZIP}" -9nc "${page}" OUTPUT_FILE "${OUT}/${name}.gz"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip -9n ${page} failed (${rc})")
  endif()
endforeach()
