#!/usr/bin/env bash
# Makes libcuda linkable and loadable for the host crate, and prints the folder to
# use as CUDA_LIBRARY_PATH (it holds lib64/libcuda.so) on stdout.
#
# cust links libcuda at build time and the executables load it at start. On a GPU
# machine we point at the driver's own library. On a machine without a driver (CI,
# laptops) we unpack Debian's non-free `libcuda1` into target/libcuda: cuInit then
# answers CUDA_ERROR_NO_DEVICE and everything that needs no GPU runs normally.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/target/libcuda"
mkdir -p "$dest/lib64"

system_lib=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
if [ -n "${system_lib}" ] && [ -z "${GPUKERN_FORCE_STUB_LIBCUDA:-}" ]; then
    ln -sfn "$system_lib" "$dest/lib64/libcuda.so"
    echo "$dest"
    exit 0
fi

lib=$(find "$dest/root" -name "libcuda.so.1" 2>/dev/null | head -n 1 || true)
if [ -z "$lib" ]; then
    echo "libcuda.sh: no NVIDIA driver here; fetching Debian's libcuda1 (non-free) into $dest" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    . /etc/os-release
    codename=${VERSION_CODENAME:-bookworm}
    printf 'deb http://deb.debian.org/debian %s main contrib non-free non-free-firmware\n' "$codename" >"$tmp/sources.list"
    mkdir -p "$tmp/lists/partial" "$tmp/archives/partial"
    apt_opts=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache::Archives=$tmp/archives" -o Debug::NoLocking=1)
    [ "$(id -u)" = 0 ] && apt_opts+=(-o APT::Sandbox::User=root)
    apt-get "${apt_opts[@]}" -qq update >&2
    (cd "$tmp" && apt-get "${apt_opts[@]}" -qq download libcuda1 >&2)
    rm -rf "$dest/root"
    dpkg -x "$tmp"/libcuda1_*.deb "$dest/root"
    # The package keeps the library under nvidia/current/ (alternatives pick it).
    lib=$(find "$dest/root" -name "libcuda.so.1" | head -n 1)
fi
[ -n "$lib" ] || { echo "libcuda.sh: libcuda1 held no libcuda.so.1" >&2; exit 1; }
ln -sfn "$lib" "$dest/lib64/libcuda.so"
ln -sfn "$lib" "$dest/lib64/libcuda.so.1"
echo "$dest"
