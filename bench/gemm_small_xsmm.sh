#!/usr/bin/env bash
# gemm_small_xsmm.sh: builds and runs gemm_small_xsmm.c (addsl's batched small-product kernel
# against libxsmm and cblas) where libxsmm is installed (Debian: libxsmm-dev); not part of
# make check. Usage: bench/gemm_small_xsmm.sh   (from anywhere; OMP_NUM_THREADS=1 by default)
set -eu
BENCH=$(cd "$(dirname "$0")" && pwd)
TOP=$(dirname "$BENCH")
CC=${CC:-cc}
if ! pkg-config --exists libxsmm; then
    echo "gemm_small_xsmm.sh: libxsmm not installed (apt-get install libxsmm-dev); nothing to do" >&2
    exit 0
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/addsl-xsmm.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# the hand kernel built as the library builds it (-O2 plus its own O3 pragma, OpenMP)
$CC -std=c11 -O2 -fopenmp -I"$TOP/builtins" -I"$TOP/vm" -o "$TMP/gemm_small_xsmm" \
    "$BENCH/gemm_small_xsmm.c" "$TOP/builtins/kernels/gemm_small.c" \
    $(pkg-config --cflags openblas) $(pkg-config --libs libxsmm) $(pkg-config --libs openblas) -lm
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "$TMP/gemm_small_xsmm"
