# Cross-compiles a Windows x86-64 onnxstream.exe with Debian's mingw-w64 (posix threads:
# std::thread and std::mutex need them):
#   apt-get install g++-mingw-w64-x86-64-posix
#   cmake -S . -B build-windows -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake
# The result is linked statically (libstdc++, libgcc, winpthreads): one .exe that runs on
# a bare Windows, or here under wine.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(ONNXSTREAM_MINGW_PREFIX x86_64-w64-mingw32)

find_program(CMAKE_CXX_COMPILER NAMES ${ONNXSTREAM_MINGW_PREFIX}-g++-posix REQUIRED)
find_program(CMAKE_C_COMPILER NAMES ${ONNXSTREAM_MINGW_PREFIX}-gcc-posix)
find_program(CMAKE_RC_COMPILER NAMES ${ONNXSTREAM_MINGW_PREFIX}-windres)

set(CMAKE_FIND_ROOT_PATH /usr/${ONNXSTREAM_MINGW_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# -O2 as the Linux RelWithDebInfo build: at -O3 mingw's GCC 12 reports false warnings
# inside libstdc++ (null dereference in vector<bool>, loop bounds) that ONNXSTREAM_WERROR
# turns into errors.
set(CMAKE_CXX_FLAGS_RELEASE "-O2 -DNDEBUG" CACHE STRING "Release flags of the Windows build")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static -static-libgcc -static-libstdc++")
# Run the test executables through wine when ctest runs them here.
find_program(ONNXSTREAM_WINE NAMES wine64 wine)
if(ONNXSTREAM_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ONNXSTREAM_WINE})
endif()
