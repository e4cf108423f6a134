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
printf 'export_c(fn(x) => x.sort()[0], [zeros(3)], "s.c")\n' > bad.ad
"$addsl" bad.ad 2>err && { echo "FAIL: sort should not lower"; exit 1; }
grep -q "'sort' at bad.ad:1:21" err || { echo "FAIL: the error names the op and line:col"; cat err; exit 1; }
echo "export cli: ok"
