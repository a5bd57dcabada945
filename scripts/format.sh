#!/usr/bin/env bash
# Formats the C++ sources with the repository's .clang-format (clang-format 14, as Debian
# ships it; other versions may format a few constructs differently).
#
#   scripts/format.sh                 format every source in src/ include/ tests/ bench/ fuzz/
#   scripts/format.sh FILE...         format those files
#   scripts/format.sh --check [BASE]  CI: list the C++ files changed since BASE (default: the
#                                     merge base with main) that are not formatted; exit 1 if any
#   scripts/format.sh --check --all   the same over every source
set -euo pipefail
cd "$(dirname "$0")/.."

formatter=${CLANG_FORMAT:-}
if [ -z "$formatter" ]; then
  for candidate in clang-format-14 clang-format; do
    if command -v "$candidate" >/dev/null; then formatter=$candidate; break; fi
  done
fi
[ -n "$formatter" ] || { echo "format.sh: clang-format not found (apt install clang-format)" >&2; exit 2; }

all_sources() {
  git ls-files -- 'src/*.cpp' 'src/*.hpp' 'include/*.hpp' 'tests/*.cpp' 'tests/*.hpp' \
    'bench/*.cpp' 'bench/*.hpp' 'fuzz/*.cpp' 'fuzz/*.hpp'
}

changed_sources() {
  local base=$1
  # Committed changes since the merge base, staged and unstaged ones, and new files.
  { git diff --name-only --diff-filter=d "$(git merge-base "$base" HEAD)" -- ; git ls-files --others --exclude-standard; } |
    grep -E '^(src|include|tests|bench|fuzz)/.*\.(cpp|hpp|h)$' | sort -u || true
}

if [ "${1-}" = --check ]; then
  shift
  if [ "${1-}" = --all ]; then
    mapfile -t files < <(all_sources)
  else
    mapfile -t files < <(changed_sources "${1:-main}")
  fi
  # One formatter process per 40 files, as many at once as there are cores: --dry-run
  # names each file it would change (one process per file took 44 s over the tree).
  # Its status is read before its words: a formatter that fails (a crash, a file it
  # cannot read, an unknown option) names no file, and a check that only parsed the
  # warnings would pass.
  status=0
  report=$(
    # (An `if`: a missing last file must not end the loop, so the pipeline, with a status.)
    for file in "${files[@]}"; do if [ -f "$file" ]; then printf '%s\0' "$file"; fi; done |
      xargs -0 -r -P "$(nproc 2>/dev/null || echo 2)" -n 40 "$formatter" --style=file --dry-run 2>&1
  ) || status=$?
  if [ "$status" -ne 0 ]; then
    echo "format.sh: $formatter failed (xargs exit $status); nothing was checked:" >&2
    printf '%s\n' "$report" | head -n 20 >&2
    exit 2
  fi
  mapfile -t unformatted < <(
    printf '%s\n' "$report" |
      sed -n 's/^\(.*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u
  )
  if [ ${#unformatted[@]} -gt 0 ]; then
    echo "not formatted (run scripts/format.sh ${unformatted[*]}):" >&2
    printf '  %s\n' "${unformatted[@]}" >&2
    exit 1
  fi
  echo "format.sh: ${#files[@]} files checked, all formatted"
  exit 0
fi

if [ $# -gt 0 ]; then
  files=()
  for file in "$@"; do
    case "$file" in
      *.cpp|*.hpp|*.h) files+=("$file") ;;
      *) echo "format.sh: skipping $file (not C++)" >&2 ;;
    esac
  done
else
  mapfile -t files < <(all_sources)
fi
[ ${#files[@]} -eq 0 ] || "$formatter" --style=file -i "${files[@]}"
