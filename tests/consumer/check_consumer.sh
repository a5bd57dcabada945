#!/usr/bin/env bash
# The CMake package, as another project sees it (ctest `cmake_consumer`):
#   check_consumer.sh BUILD_DIR LIBDIR VERSION FIXTURES LIBRARIES [CMAKE_ARGS...]
# installs BUILD_DIR into a scratch prefix (BUILD_DIR/consumer-test/prefix, removed when
# every check passed) and checks the shared library's SONAME and symbolic links (and, when
# include/onnxstream.h is installed, that it compiles as C and that the library carrying it
# exports each function it declares). Then it builds tests/consumer against the prefix with find_package,
# once linking onnxstream::onnxstream (shared) and once onnxstream::onnxstream_static, runs
# each on the fixture one_file (6 tensors in one external data file) and compares what it
# prints; and a find_package asking for the next minor version must fail. LIBRARIES is
# "shared,static", or "static" for a build without the shared library. CMAKE_ARGS go to the
# consumer's configure (the compiler, sanitizer flags); CMAKE_COMMAND names the cmake to use.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$1" libdir="$2" version="$3" fixtures="$4" libraries="$5"
shift 5
cmake_args=("$@")
cmake="${CMAKE_COMMAND:-cmake}"
work="$build/consumer-test"
prefix="$work/prefix"
model="$fixtures/one_file/model.onnx"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

if [ ! -f "$model" ]; then
  echo "FAIL: no fixture $model (/usr/bin/python3 scripts/make_fixtures.py $fixtures)" >&2
  exit 1
fi
rm -rf "$work"
mkdir -p "$work"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
echo "installed into $prefix: $(du -sh "$prefix" | cut -f1)"

# The shared library: libonnxstream.so -> .so.MAJOR -> .so.VERSION, SONAME .so.MAJOR.
IFS=. read -r major minor _ <<<"$version"
lib="$prefix/$libdir/libonnxstream.so.$version"
if [[ ",$libraries," != *,shared,* ]]; then
  echo "no shared library in this build"
  [ ! -e "$lib" ] || fail "$lib is installed by a build without the shared library"
elif [ ! -f "$lib" ]; then
  fail "no $lib"
else
  soname=$(objdump -p "$lib" | sed -n 's/^ *SONAME *//p')
  [ "$soname" = "libonnxstream.so.$major" ] || fail "SONAME of $lib is '$soname', not libonnxstream.so.$major"
  [ "$(readlink "$prefix/$libdir/libonnxstream.so")" = "libonnxstream.so.$major" ] ||
    fail "libonnxstream.so does not point to libonnxstream.so.$major"
  [ "$(readlink "$prefix/$libdir/libonnxstream.so.$major")" = "libonnxstream.so.$version" ] ||
    fail "libonnxstream.so.$major does not point to libonnxstream.so.$version"
  echo "shared library: $(basename "$lib"), SONAME $soname"
fi
[ -f "$prefix/$libdir/libonnxstream.a" ] || fail "no $prefix/$libdir/libonnxstream.a"
for file in onnxstream-config.cmake onnxstream-config-version.cmake; do
  [ -f "$prefix/$libdir/cmake/onnxstream/$file" ] || fail "no $libdir/cmake/onnxstream/$file"
done

# The C API, when there is one: plain C, and every function it declares exported unmangled
# by the library that carries it: libonnxstream-c.so (which exports nothing else) where the
# build makes one, else libonnxstream.so. The declarations are read from the preprocessed
# header (no comments; typedefs left out).
header="$prefix/include/onnxstream.h"
c_lib="$prefix/$libdir/libonnxstream-c.so.$version"
if [ -f "$c_lib" ]; then
  c_soname=$(objdump -p "$c_lib" | sed -n 's/^ *SONAME *//p')
  [ "$c_soname" = "libonnxstream-c.so.$major" ] || fail "SONAME of $c_lib is '$c_soname', not libonnxstream-c.so.$major"
  others=$(nm -D --defined-only "$c_lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | grep -v '^onnxstream_' || true)
  [ -z "$others" ] || fail "libonnxstream-c.so exports more than the C API: $(head -3 <<<"$others" | tr '\n' ' ')"
  echo "C library: $(basename "$c_lib"), SONAME $c_soname"
else
  c_lib="$lib"
fi
if [ -f "$header" ] && [ -f "$c_lib" ]; then
  c_api=$(printf '#include <onnxstream.h>\n' | cc -std=c11 -Wall -Wextra -Werror -E -P -I"$prefix/include" -x c -) ||
    fail "include/onnxstream.h does not compile as C"
  printf '#include <onnxstream.h>\n' | cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" -x c - ||
    fail "include/onnxstream.h does not compile as C"
  exported=$(nm -D --defined-only "$c_lib" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }')
  declared=$(grep -v '\btypedef\b' <<<"$c_api" | grep -o '\bonnxstream_[a-z0-9_]*[[:space:]]*(' | tr -d '( \t' |
             sort -u || true)
  [ -n "$declared" ] || fail "include/onnxstream.h declares no onnxstream_ function"
  for name in $declared; do
    grep -qx "$name" <<<"$exported" || fail "$(basename "$c_lib") does not export $name (include/onnxstream.h declares it)"
  done
  echo "C API: $(wc -w <<<"$declared") functions declared in onnxstream.h, checked against $(basename "$c_lib")'s exports"
fi

# The consumer, once per library.
# Without a shared library, onnxstream::onnxstream is the static one ("default").
IFS=, read -r -a variants <<<"$libraries"
[[ ",$libraries," == *,shared,* ]] || variants+=(default)
for variant in "${variants[@]}"; do
  case "$variant" in
    shared | default) target=onnxstream::onnxstream ;;
    static) target=onnxstream::onnxstream_static ;;
    *) fail "unknown library $variant"; continue ;;
  esac
  dir="$work/$variant"
  if ! "$cmake" -S "$here" -B "$dir" -DCMAKE_PREFIX_PATH="$prefix" -DONNXSTREAM_TARGET="$target" \
         -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON "${cmake_args[@]}" >"$dir.configure.log" 2>&1 ||
     ! "$cmake" --build "$dir" >"$dir.build.log" 2>&1; then
    cat "$dir.configure.log" "$dir.build.log" 2>/dev/null >&2 || true
    fail "the consumer does not build against $target"
    continue
  fi
  found=$(sed -n 's/^onnxstream_DIR:PATH=//p' "$dir/CMakeCache.txt")
  [ "$found" = "$prefix/$libdir/cmake/onnxstream" ] || fail "$variant: find_package took $found, not the install"
  needed=$(readelf -d "$dir/onnxstream_consumer" | sed -n 's/.*(NEEDED).*\[\(libonnxstream[^]]*\)\]/\1/p')
  case "$variant" in
    shared) [ "$needed" = "libonnxstream.so.$major" ] || fail "shared: the consumer needs '$needed', not libonnxstream.so.$major" ;;
    static | default) [ -z "$needed" ] || fail "$variant: the consumer needs $needed" ;;
  esac

  output="$dir/merged.onnx"
  if ! printed=$("$dir/onnxstream_consumer" "$model" "$output"); then
    fail "$variant: the consumer failed"
    continue
  fi
  echo "$variant ($target):"
  sed 's/^/  /' <<<"$printed"
  field() { sed -n "s/^$1 .*\\b$2=\\([0-9]*\\).*/\\1/p" <<<"$printed"; }
  expect() {  # STEP FIELD VALUE
    local got
    got=$(field "$1" "$2")
    [ "$got" = "$3" ] || fail "$variant: $1 $2 is '$got', expected $3"
  }
  expect input tensors 6
  expect input external 6
  expect input data_files 1
  expect input clean 1
  expect merge tensors_inlined 6
  expect merge exists 1
  expect output tensors 6
  expect output external 0
  expect output data_files 0
  size=$(stat -c %s "$output" 2>/dev/null || echo missing)
  expect merge output_size "$size"
  expect input merged_size "$size"
  expect output file_size "$size"
done

# 0.x: another minor version may change the API, so the version file refuses it.
wanted="$major.$((minor + 1))"
if "$cmake" -S "$here" -B "$work/version" -DCMAKE_PREFIX_PATH="$prefix" -DONNXSTREAM_WANTED="$wanted" \
     "${cmake_args[@]}" >"$work/version.log" 2>&1; then
  fail "find_package(onnxstream $wanted) accepted version $version"
elif ! grep -q "compatible with requested version" "$work/version.log" ||
     ! grep -q "onnxstream-config.cmake, version: $version" "$work/version.log"; then
  cat "$work/version.log" >&2
  fail "find_package(onnxstream $wanted) failed for another reason than the version"
else
  echo "find_package(onnxstream $wanted) refuses $version"
fi

if [ "$failures" -ne 0 ]; then
  echo "cmake_consumer: $failures check(s) failed" >&2
  exit 1
fi
# Passed: the install (hundreds of MB with debug information) is not kept.
rm -rf "$work"
echo "cmake_consumer: the installed package builds and runs (${variants[*]})"
