#!/bin/sh
# simd_threads.sh: the kernels of issue 13 (SLEEF calls cut by their cost, column and row
# sums of kernels/reduce_simd.c, mean's gradient) give the same bytes with 1, 2 and 3 OpenMP threads.
# Runs tests/ops/simd_threads_script.ad (which checks its values against serial pieces) under
# each team size and compares every saved result byte for byte, as ew_threads.sh does.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
. "${srcdir:-.}/tests/ops/threads_equal.sh"
threads_equal "$addsl" "${srcdir:-.}/tests/ops/simd_threads_script.ad" 92
