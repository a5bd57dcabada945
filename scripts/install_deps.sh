#!/usr/bin/env bash
# Installs what onnxstream needs to build and test, from Debian's packages and the npm
# registry. Safe to run again: it installs only what is missing. Needs root (or sudo).
set -euo pipefail

packages=(
  # build
  cmake g++ make pkg-config
  libxxhash-dev libssl-dev liburing-dev
  libcpp-httplib-dev  # the gui command's web server
  # tests and benchmarks
  doctest-dev libbenchmark-dev
  clang libclang-rt-dev  # the sanitizer stage's compiler and its ASan/UBSan/libFuzzer runtimes
  strace  # delays system calls in the race tests (test_security.py)
  clang-format  # scripts/format.sh: test.sh checks every source's layout
  # independent references
  python3-onnx python3-numpy python3-pytest python3-torch python3-torchvision
  # the Python package: its wheel (scripts/build_wheel.sh) and the venvs its tests install it in
  python3-pip python3-setuptools python3-wheel python3-venv
  # export --to caffe: --check in process, the tests' Caffe runtime, the report page
  libopencv-dnn-dev python3-opencv chromium
)
# The Windows build (cmake/mingw-w64-x86_64.cmake) and its tests under wine: optional,
# test.sh skips that stage with a clear line when they cannot be installed.
# dpkg-dev and the keyring: scripts/fetch_httplib_source.sh (cpp-httplib's single header, for the gui).
windows_packages=(g++-mingw-w64-x86-64-posix wine wine64 dpkg-dev debian-archive-keyring)
# Node.js may come from elsewhere (its npm then comes with it): install Debian's only if absent.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

missing_windows=()
for p in "${windows_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing_windows+=("$p")
done
if [ ${#missing_windows[@]} -gt 0 ]; then
  echo "installing (for the Windows build): ${missing_windows[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing_windows[@]}" ||
    echo "could not install ${missing_windows[*]}: the Windows stage of test.sh will be skipped"
fi
