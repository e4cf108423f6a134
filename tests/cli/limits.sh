#!/bin/sh
# limits.sh: --memory-limit, --max-depth and --sandbox reach the interpreter.
# Usage: limits.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0

deep=$(printf 'fn f(n) {\n    if n == 0 {\n        return 0\n    }\n    return f(n - 1)\n}\nprint(f(50))\n')
out=$("$addsl" -e "$deep" 2>&1)
[ "$out" = 0 ] || { echo "FAIL: recursion 50 deep: $out"; fail=1; }
"$addsl" --max-depth 10 -e "$deep" >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: --max-depth 10 exited $rc"; fail=1; }
"$addsl" --max-depth=100 -e "$deep" >/dev/null 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: --max-depth=100 exited $rc"; fail=1; }

big='let t = zeros([1000000]); print(t.shape)'
"$addsl" --memory-limit 64M -e "$big" >/dev/null 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: 4 MB under --memory-limit 64M exited $rc"; fail=1; }
"$addsl" --memory-limit 1M -e "$big" >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: 4 MB under --memory-limit 1M exited $rc"; fail=1; }
"$addsl" --memory-limit=1000000 -e "$big" >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: 4 MB under --memory-limit=1000000 exited $rc"; fail=1; }
ext='extern "libm.so.6" cbrt(f64) -> f64
print(cbrt(27.0))'
out=$("$addsl" -e "$ext" 2>&1)
[ "$out" = 3 ] || { echo "FAIL: extern without --sandbox: $out"; fail=1; }
out=$("$addsl" --sandbox -e "$ext" 2>&1)
rc=$?
[ $rc -eq 1 ] && printf '%s' "$out" | grep -q 'ADDSL_DENY_EXTERN' || { echo "FAIL: --sandbox let extern through ($rc): $out"; fail=1; }
tmp=$(mktemp -d) || exit 99
out=$("$addsl" --sandbox -e "save(\"$tmp/t.npy\", zeros([2]))" 2>&1)
rc=$?
[ $rc -eq 1 ] && [ ! -e "$tmp/t.npy" ] && printf '%s' "$out" | grep -q 'ADDSL_DENY_FILES' ||
    { echo "FAIL: --sandbox let save() through ($rc): $out"; fail=1; }
# .npz saves and text loads are refused the same way, before a temporary file is made.
printf '1,2\n' > "$tmp/d.csv"
for call in "save(\"$tmp/d.npz\", {\"a\": zeros(2)})" "load(\"$tmp/d.csv\")" "load(\"$tmp/d.npz\")"; do
    out=$("$addsl" --sandbox -e "$call" 2>&1)
    printf '%s' "$out" | grep -q 'file access is disabled by the host (ADDSL_DENY_FILES)' ||
        { echo "FAIL: --sandbox let $call through: $out"; fail=1; }
done
[ "$(ls -A "$tmp")" = d.csv ] || { echo "FAIL: --sandbox left files: $(ls -A "$tmp")"; fail=1; }
"$addsl" -e "save(\"$tmp/t.npy\", zeros([2]))" && [ -s "$tmp/t.npy" ] || { echo "FAIL: save() without --sandbox"; fail=1; }
rm -rf "$tmp"
exit $fail
