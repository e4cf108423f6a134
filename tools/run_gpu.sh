#!/bin/sh
# run_gpu.sh: every GPU check of a staged build, for one call on a lent GPU
# machine: the GPU scripts (tests/cuda/*.ad, under tests/ad-driver), the C
# tests of the CUDA module (tests/cuda/test_*.c), and the GPU benchmarks
# (compile() with and without its CUDA graph, the trajectory step). One log, PASS/FAIL/SKIP per
# test first, the failing tests' logs after.
#
# Usage: from a folder holding the staged build (tools/stage_gpu.sh BUILD DIR)
# and copies of tests/ad-driver, tests/cuda/ and bench/*gpu*.ad:
#   cd DIR && sh run_gpu.sh [OUTDIR]     (OUTDIR: $OUT, else /tmp)
here=$(pwd)
out=${1:-${OUT:-/tmp}}
log=$out/run_gpu.log
tmp=$(mktemp -d)
export LD_LIBRARY_PATH="$here/lib" ADDSL_CUDA_MODULE="$here/lib/addsl_cuda.so" AD_SRCDIR="$here"
: >"$log"
nvidia-smi -L >>"$log" 2>&1
fails=0
for t in tests/cuda/*.ad; do
    n=$(basename "$t" .ad)
    sh tests/ad-driver --test-name "$n" --log-file "$tmp/$n.log" --trs-file "$tmp/$n.trs" -- "$here/bin/addsl" "$here/$t" >/dev/null 2>&1
    res=$(sed -n 's/^:test-result: //p' "$tmp/$n.trs")
    echo "${res:-ERROR} $t" >>"$log"
    case $res in PASS|SKIP) ;; *) fails=$((fails + 1)); { echo "---- $t"; cat "$tmp/$n.log"; } >>"$tmp/failed" ;; esac
done
for p in test_tensor_cuda test_traj_cuda; do
    "$here/bin/$p" >"$tmp/$p.out" 2>&1
    rc=$?
    nok=$(grep -c '^not ok' "$tmp/$p.out")
    echo "rc=$rc not_ok=$nok $p ($(grep -c '^ok' "$tmp/$p.out") ok)" >>"$log"
    if test $rc -ne 0 || test "$nok" -ne 0; then fails=$((fails + 1)); { echo "---- $p"; tail -40 "$tmp/$p.out"; } >>"$tmp/failed"; fi
done
echo "failures: $fails" >>"$log"
test -f "$tmp/failed" && cat "$tmp/failed" >>"$log"
echo "---- bench/compile_graph_gpu.ad (CUDA graph)" >>"$log"
bin/addsl bench/compile_graph_gpu.ad >>"$log" 2>&1
echo "---- bench/compile_graph_gpu.ad (ADDSL_NO_CUDA_GRAPH=1: compiled through the seam)" >>"$log"
ADDSL_NO_CUDA_GRAPH=1 bin/addsl bench/compile_graph_gpu.ad >>"$log" 2>&1
echo "---- bench/traj_gpu.ad" >>"$log"
bin/addsl bench/traj_gpu.ad >>"$log" 2>&1
rm -rf "$tmp"
cat "$log"
