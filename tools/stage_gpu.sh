#!/bin/sh
# stage_gpu.sh: copies a build's binaries and every shared library they need
# (OpenBLAS, SLEEF, libffi, libgomp, the CUDA runtime, ...) into one folder,
# so GPU tests can run on a machine that has a driver but none of addsl's
# build dependencies (a lent GPU box). Nothing in the build uses it.
#
# Usage: tools/stage_gpu.sh BUILDDIR DEST
# Then, on the GPU machine, from the source tree:
#   LD_LIBRARY_PATH=DEST/lib ADDSL_CUDA_MODULE=DEST/lib/addsl_cuda.so DEST/bin/addsl tests/cuda/device_basics.ad
set -eu
build=$1 dest=$2
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
# The real programs: libtool leaves wrapper scripts where it links shared.
for p in addsl tests/cuda/test_tensor_cuda tests/cuda/test_traj_cuda bench/traj_cuda; do
    d=$(dirname "$build/$p") b=$(basename "$p")
    if test -f "$d/.libs/$b"; then cp "$d/.libs/$b" "$dest/bin/"
    elif test -f "$build/$p"; then cp "$build/$p" "$dest/bin/"; fi
done
cp "$build"/.libs/addsl_cuda.so "$dest/lib/"
# Every library the binaries load, except the C library itself (the GPU
# machine's own is newer and compatible).
for f in "$dest"/bin/* "$dest"/lib/*.so*; do ldd "$f" 2>/dev/null; done |
    awk '$3 ~ /^\// { print $3 }' | sort -u |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$dest/lib/"; done
# Symbols are not needed to run: stay well inside a 64 MiB transfer.
strip --strip-unneeded "$dest"/bin/* "$dest"/lib/* 2>/dev/null || true
du -sh "$dest"
