#!/bin/sh
# gemm_pieces.sh: products cut into row pieces on the OpenMP team (builtins/kernels/reduce.c,
# GEMM_SPLIT_MIN to GEMM_SPLIT_MAX) give the right values and the same bytes with 1, 2 and 3
# OpenMP threads. Runs tests/ops/gemm_pieces_script.ad (which checks its values against an
# independent product) under each team size and compares every saved result byte for byte.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
. "${srcdir:-.}/tests/ops/threads_equal.sh"
threads_equal "$addsl" "${srcdir:-.}/tests/ops/gemm_pieces_script.ad" 74
