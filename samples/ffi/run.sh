#!/bin/sh
# run.sh: the make-check test of samples/ffi: runs softplus.ad with the
# kernel library built beside it and compares the output with softplus.out.
# Usage: run.sh ADDSL_BINARY SAMPLE_SRCDIR LIBDIR
addsl=$1 src=$2 libdir=$3
out=$(LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$addsl" "$src/softplus.ad") || exit 1
[ "$out" = "$(cat "$src/softplus.out")" ] || { printf 'got:\n%s\n' "$out"; exit 1; }
