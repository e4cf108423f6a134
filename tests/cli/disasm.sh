#!/bin/sh
# disasm.sh: --disasm prints a bytecode listing and runs nothing.
# Usage: disasm.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

printf 'fn f(a) {\n    return a * 2\n}\nprint("ran", f(21))\n' >"$tmp/prog.ad"
"$addsl" --disasm "$tmp/prog.ad" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: --disasm exited $rc: $(cat "$tmp/err")"; fail=1; }
[ -s "$tmp/out" ] || { echo "FAIL: --disasm printed nothing"; fail=1; }
if grep -q '^ran 42' "$tmp/out"; then
    echo "FAIL: --disasm ran the script"
    fail=1
fi

"$addsl" --disasm -e 'let x = 1 + 2' >"$tmp/out" 2>&1
[ $? -eq 0 ] && [ -s "$tmp/out" ] || { echo "FAIL: --disasm -e: $(cat "$tmp/out")"; fail=1; }

printf 'let = 3\n' >"$tmp/bad.ad"
"$addsl" --disasm "$tmp/bad.ad" >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: --disasm of a syntax error exited $rc"; fail=1; }
exit $fail
