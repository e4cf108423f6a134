#!/bin/sh
# host_sample.sh: runs samples/embed/host (built in the build tree) and compares
# its output with samples/embed/host.out, to the tolerance samples/embed/host.out.tol
# states (its numbers come from OpenBLAS's float32 kernels, which differ by CPU).
# $1: the addsl binary (its directory is the build dir).
addsl=$1
fail=0
. "$(dirname "$0")/../cli/lib.sh"
make_tmp
top_build=$(cd "$(dirname "$addsl")" && pwd)
"$top_build/samples/embed/host" >"$tmp/host.out" || { echo "FAIL: samples/embed/host exits $?"; cat "$tmp/host.out"; exit 1; }
check_golden "samples/embed/host" "${srcdir:-.}/samples/embed/host.out" "$tmp/host.out"
[ $fail = 0 ] || { printf 'got:\n'; cat "$tmp/host.out"; }
exit $fail
