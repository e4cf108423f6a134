#!/bin/sh
# loss_scatter.sh: tests/export/loss_scatter_cases.ad's exported functions
# (the losses, scatter_reduce and index_reduce, masked_scatter, max_unpool,
# repeat_interleave; also run at indices out of range, which the C clamps),
# compiled with -std=c99 -Wall -Wextra -Werror -pedantic by gcc and clang and
# run against the interpreter (under valgrind when it is installed); and the
# interpreter's errors at the same out-of-range indices, eagerly and at a
# compiled function's replay.
addsl=${1:-${ADDSL_BIN:?usage: $0 PATH-TO-ADDSL}}
src=${srcdir:-.}
. "$src/tests/export/check_c.sh"
export_cases loss_scatter_cases.ad t 1

# expect_error SCRIPT TEXT: the script fails with TEXT in its message
expect_error() {
    printf '%s\n' "$1" > "$dir/err.ad"
    if "$addsl" "$dir/err.ad" > "$dir/err.out" 2>&1; then echo "FAIL: no error from: $1"; exit 1; fi
    grep -qF "$2" "$dir/err.out" || { echo "FAIL: '$1' said:"; cat "$dir/err.out"; exit 1; }
}
x='let x = randn([3, 4], dtype=float64)'
expect_error "$x
print(scatter_reduce(x, 0, tensor([[5, 0, 0, 0]]), x, \"amax\"))" "index 5 is out of bounds for dimension 0 with size 3"
expect_error "$x
print(index_reduce(x, 0, tensor([0, 4]), x[:2], \"prod\"))" "index 4 is out of bounds for dimension with size 3"
expect_error "$x
print(nll_loss(x, tensor([1, 7, 0])))" "Target 7 is out of bounds."
expect_error "print(max_unpool1d(ones([1, 1, 2]), tensor([[[0, 9]]]), 2))" "max_unpool1d: Found an invalid max index: 9 (output volumes are of size [4])"
expect_error "print(gaussian_nll_loss(ones([3]), ones([3]), tensor([1.0, -1.0, 1.0])))" "var has negative entry/entries"
expect_error "print(ctc_loss(zeros([3, 1, 2]), tensor([[1]]), tensor([4]), tensor([1])))" "Expected input_lengths to have value at most 3, but got value 4"
# the checks are calls a compiled program replays, not values read at its trace
expect_error "let cf = compile(fn(x, i) => scatter_reduce(x, 0, i, x, \"sum\"))
$x
print(cf(x, tensor([[0, 1, 2, 0]])))
print(cf(x, tensor([[0, 3, 2, 0]])))" "index 3 is out of bounds for dimension 0 with size 3"
expect_error "let cf = compile(fn(x, i) => max_unpool1d(x, i, 2))
print(cf(ones([1, 1, 2]), tensor([[[0, 3]]])))
print(cf(ones([1, 1, 2]), tensor([[[0, 4]]])))" "Found an invalid max index: 4"
expect_error "let cf = compile(fn(x, m, s) => masked_scatter(x, m, s))
print(cf(zeros([3]), tensor([true, false, true]), ones([2])))
print(cf(zeros([3]), tensor([true, true, true]), ones([2])))" "expected source to have at least as many elements as ones in mask"
echo "export loss_scatter: ok"
