# Header-only libraries for the Windows cross build, copied from the build machine's
# Debian packages (libxxhash-dev, doctest-dev): the target's sysroot has neither, and the
# host's /usr/include must not be on a mingw include path (glibc's headers are there).
set(ONNXSTREAM_WINDOWS_HEADERS ${CMAKE_BINARY_DIR}/windows-headers)
foreach(header xxhash.h doctest/doctest.h)
  if(NOT EXISTS /usr/include/${header})
    message(FATAL_ERROR "/usr/include/${header} is missing: apt-get install libxxhash-dev doctest-dev")
  endif()
  configure_file(/usr/include/${header} ${ONNXSTREAM_WINDOWS_HEADERS}/${header} COPYONLY)
endforeach()
add_library(onnxstream_windows_headers INTERFACE)
target_include_directories(onnxstream_windows_headers SYSTEM INTERFACE ${ONNXSTREAM_WINDOWS_HEADERS})
# tests/CMakeLists.txt asks for doctest::doctest.
add_library(doctest::doctest ALIAS onnxstream_windows_headers)
set(doctest_FOUND ON)
