#!/bin/sh
# limits.sh: --memory-limit and --max-depth reach the interpreter.
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
exit $fail
