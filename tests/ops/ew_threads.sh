#!/bin/sh
# ew_threads.sh: results do not depend on the OpenMP team size. Runs
# tests/ops/ew_threads_script.ad (which checks its values against serial
# computations) with 1, 2 and 3 threads and compares every saved result byte for byte.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
. "${srcdir:-.}/tests/ops/threads_equal.sh"
threads_equal "$addsl" "${srcdir:-.}/tests/ops/ew_threads_script.ad" 224
