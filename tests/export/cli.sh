#!/bin/sh
# cli.sh: addsl --export-c OUT.c FILE.ad: the script's export_c call writes
# OUT.c and OUT.h instead of its own path; no call, or a second one, fails.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
dir=$(mktemp -d "${TMPDIR:-/tmp}/addsl-export-cli.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
cd "$dir" || exit 1
cat > one.ad <<'AD'
let x = tensor([1.0, 2.0, 3.0], dtype=float64)
export_c(fn(x) => (x * x).sum(), [x], "named_by_script.c", name="sq")
AD
"$addsl" --export-c out/sq.c one.ad 2>err && { echo "FAIL: a missing directory should fail"; exit 1; }
mkdir out
"$addsl" --export-c out/sq.c one.ad || { echo "FAIL: --export-c"; cat err; exit 1; }
[ -f out/sq.c ] && [ -f out/sq.h ] || { echo "FAIL: out/sq.c and out/sq.h not written"; exit 1; }
[ ! -e named_by_script.c ] || { echo "FAIL: the script's own path was written"; exit 1; }
grep -q '^#define SQ_WORK_BYTES' out/sq.h || { echo "FAIL: no SQ_WORK_BYTES"; exit 1; }
grep -q '^void sq_vjp(const double \*in0, const double \*in1, double \*out0, void \*work);' out/sq.h \
    || { echo "FAIL: sq_vjp's prototype"; cat out/sq.h; exit 1; }
grep -q '^void sq_jvp(const double \*in0, const double \*in1, double \*out0, double \*out1, void \*work);' out/sq.h \
    || { echo "FAIL: sq_jvp's prototype"; cat out/sq.h; exit 1; }
# without the option the script's path is used; the output is deterministic
"$addsl" one.ad && cmp -s named_by_script.c out/sq.c && echo "FAIL: header name should differ" && exit 1
sed 's/named_by_script/sq/g' named_by_script.c | cmp -s - out/sq.c || { echo "FAIL: the two runs differ beyond the file name"; exit 1; }
printf 'print("no export")\n' > none.ad
"$addsl" --export-c x.c none.ad >/dev/null 2>err && { echo "FAIL: no export_c call should fail"; exit 1; }
grep -q 'the script made no export_c call' err || { echo "FAIL: message"; cat err; exit 1; }
printf 'export_c(fn(x) => x * 2.0, [zeros(2)], "a.c")\nexport_c(fn(x) => x * 3.0, [zeros(2)], "b.c")\n' > two.ad
"$addsl" --export-c x.c two.ad 2>err && { echo "FAIL: a second export_c call should fail"; exit 1; }
grep -q 'two.ad:2:1: error: export_c(): the command line' err || { echo "FAIL: message"; cat err; exit 1; }
printf 'export_c(fn(x) => x.masked_select(x > 0.0), [zeros(3)], "s.c")\n' > bad.ad
"$addsl" bad.ad 2>err && { echo "FAIL: masked_select should not lower"; exit 1; }
grep -q "'masked_select' at bad.ad:1:21 has an output whose shape depends on the mask" err || { echo "FAIL: the error names the op and line:col"; cat err; exit 1; }
# the work buffer: unfused (fuse=false), a chain of 10 ops on [100] float64
# needs one block, whatever the chain's length: each op reads its input
# element for element and writes its output over it, as the input dies there
# (export/export_c.c's plan_work); the last op writes the caller's output. Fused, the
# chain is one loop over scalars and needs none.
cat > chain.ad <<'AD'
fn chain(x) {
    let y = x
    for i in range(10) { y = sin(y) * 1.5 }
    return y
}
export_c(chain, [ones(100, dtype=float64)], "chain.c", name="chain")
export_c(chain, [ones(100, dtype=float64)], "chain_nf.c", name="chain_nf", fuse=false)
export_c(chain, [ones(100)], "chain32.c", name="chain32")
export_c(chain, [ones(100)], "chain32_nf.c", name="chain32_nf", fuse=false)
AD
"$addsl" chain.ad || { echo "FAIL: chain.ad"; exit 1; }
# (the header's CHAIN_WORK_BYTES is the most any of chain, chain_vjp and chain_jvp needs)
[ "$(grep -m1 ' \* work: ' chain_nf.c)" = " * work: 800 bytes of the header's WORK_BYTES */" ] \
    || { echo "FAIL: the unfused chain's work buffer is not one block of 800 bytes"; grep 'work:' chain_nf.c; exit 1; }
grep -q "float64\[100\], live over records [0-9]*\.\.[0-9]*, in %[0-9]*'s block \*/" chain_nf.c \
    || { echo "FAIL: no value of the unfused chain takes over its input's block"; exit 1; }
[ "$(grep -m1 ' \* work: ' chain.c)" = " * work: 0 bytes of the header's WORK_BYTES */" ] \
    || { echo "FAIL: the fused chain uses work"; grep 'work:' chain.c; exit 1; }
grep -q 'one loop for 20 element-wise records' chain.c || { echo "FAIL: the chain is not one loop"; exit 1; }
grep -q '^void chain32(const float \*in0, float \*out0, void \*work);' chain32.h || { echo "FAIL: float32 prototype"; exit 1; }
[ "$(grep -m1 ' \* work: ' chain32_nf.c)" = " * work: 400 bytes of the header's WORK_BYTES */" ] \
    || { echo "FAIL: float32 work buffer"; grep 'work:' chain32_nf.c; exit 1; }
# an op whose forward is a kernel bound with 'extern' is declared extern in the
# exported file and called there; the C program links the kernel itself
if command -v cc >/dev/null 2>&1; then
    cat > cube.c <<'C'
#include <stdint.h>
void my_cube_f64(double *out, const double *x, int64_t n) { for (int64_t i = 0; i < n; i++) out[i] = x[i] * x[i] * x[i]; }
C
    cc -shared -fPIC -o libcube.so cube.c || { echo "FAIL: cc -shared"; exit 1; }
    cat > ext.ad <<AD
extern "$dir/libcube.so" my_cube_f64(p, p, i64) -> v
op cube(x) {
    forward: kernel("my_cube_f64")
    x: grad * 3.0 * x * x
    result: x_t * 3.0 * x_p * x_p
}
export_c(fn(x) => cube(x * 2.0).sum(), [tensor([1.0, 2.0, -0.5], dtype=float64)], "cub.c", name="cub")
AD
    "$addsl" ext.ad || { echo "FAIL: ext.ad"; exit 1; }
    grep -q '^extern void my_cube_f64(void \*, void \*, int64_t);' cub.c || { echo "FAIL: no extern declaration"; exit 1; }
    cat > cubmain.c <<'C'
#include <stdio.h>
#include "cub.h"
int main(void) {
    double x[3] = {1.0, 2.0, -0.5}, y, g[3], one = 1, w[CUB_WORK_BYTES / sizeof(double) + 1];
    cub(x, &y, w);
    cub_vjp(x, &one, g, w);
    printf("%g %g %g %g\n", y, g[0], g[1], g[2]);
    return 0;
}
C
    cc -std=c99 -Wall -Wextra -Werror -pedantic cubmain.c cub.c cube.c -lm -o cubmain || { echo "FAIL: build with the kernel"; exit 1; }
    # sum((2x)^3) = 71; its gradient 24 x^2
    [ "$(./cubmain)" = "71 24 96 6" ] || { echo "FAIL: extern kernel result: $(./cubmain)"; exit 1; }
fi
echo "export cli: ok"
