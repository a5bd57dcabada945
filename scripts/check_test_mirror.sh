#!/usr/bin/env bash
# Tests mirror headers (STYLE.md 13): every public header include/onnxstream/<dir>/<name>.hpp
# has a unit test tests/unit/test_<name>.cpp, or tests/unit/test_<dir>_<name>.cpp where two
# folders hold a header of that name (caffe/fields.hpp, onnx/fields.hpp). The test is named
# after the header, not its folder, so a header that moves between folders keeps its test.
#
# A header may instead have a line in tests/unit/mirror_exceptions.txt: the test file that
# covers it (which must exist and name the header), or `-` and the reason it has none yet.
# Fails (exit 1) on a header with neither, and on a stale exception (a header that is gone
# or has its own test now, a covering file that is gone or does not name the header).
# Prints the test files that mirror no header (cross-cutting suites) and the `-` debts.
# Run by ctest as `test_mirror`.
set -euo pipefail
cd "$(dirname "$0")/.."

exceptions=tests/unit/mirror_exceptions.txt
declare -A covered_by=() reason=()
if [ -f "$exceptions" ]; then
  while read -r header test rest; do
    case "$header" in ''|'#'*) continue ;; esac
    covered_by[$header]=$test
    reason[$header]=$rest
  done < "$exceptions"
fi

problems=()
debts=()
mirrors=" "
declare -A seen=()
while IFS= read -r path; do
  header=${path#include/onnxstream/}
  seen[$header]=1
  name=$(basename "$header" .hpp)
  dir=$(dirname "$header")
  own=
  for candidate in "test_${name}.cpp" "test_${dir//\//_}_${name}.cpp"; do
    if [ -f "tests/unit/$candidate" ]; then
      own=$candidate
      mirrors+="$candidate "
    fi
  done
  test=${covered_by[$header]-}
  if [ -n "$own" ]; then
    [ -z "$test" ] || problems+=("$header has $own: remove its line from $exceptions")
  elif [ -z "$test" ]; then
    problems+=("$header has no tests/unit/test_${name}.cpp (nor a line in $exceptions)")
  elif [ "$test" = - ]; then
    debts+=("$header (${reason[$header]})")
  elif [ ! -f "tests/unit/$test" ]; then
    problems+=("$header: $exceptions names tests/unit/$test, which does not exist")
  elif ! grep -q "\b${name}\b" "tests/unit/$test"; then
    problems+=("$header: tests/unit/$test does not name ${name} (stale line in $exceptions)")
  else
    mirrors+="$test "
  fi
done < <(find include/onnxstream -name '*.hpp' | LC_ALL=C sort)

for header in "${!covered_by[@]}"; do
  [ -n "${seen[$header]-}" ] || problems+=("$exceptions names $header, which is not a public header")
done

others=()
for test in tests/unit/test_*.cpp; do
  base=$(basename "$test")
  case "$mirrors" in *" $base "*) ;; *) others+=("$base") ;; esac
done
[ ${#others[@]} -eq 0 ] || echo "tests that mirror no header (cross-cutting): ${others[*]}"
if [ ${#debts[@]} -gt 0 ]; then
  echo "${#debts[@]} public headers without a unit test yet (see $exceptions):"
  printf '  %s\n' "${debts[@]}"
fi
if [ ${#problems[@]} -gt 0 ]; then
  printf '%s\n' "${problems[@]}" >&2
  exit 1
fi
echo "every public header has its test (its own, or the one $exceptions names)"
