#!/bin/sh
# line-endings.sh: a UTF-8 byte order mark and CRLF or CR-only line endings are accepted, as Python
# accepts them, and errors in such files name the right line and column (issue 27, item 8).
# Usage: line-endings.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
. "$(dirname "$0")/lib.sh"
make_tmp

# got FILE: stdout and stderr of running FILE, with the status last.
got() {
    out=$("$addsl" "$1" 2>&1)
    printf '%s|%s' "$out" "$?"
}

printf '\357\273\277print(1)\nprint(2)\n' > "$tmp/bom.ad"
check "BOM" "$(printf '1\n2|0')" "$(got "$tmp/bom.ad")"
printf 'print(1)\r\nlet x = [1,\r\n  2]\r\nprint(x)\r\n' > "$tmp/crlf.ad"
check "CRLF" "$(printf '1\n[1, 2]|0')" "$(got "$tmp/crlf.ad")"
printf 'print(1)\rlet x = [1,\r  2]\rprint(x)\r' > "$tmp/cr.ad"
check "CR only" "$(printf '1\n[1, 2]|0')" "$(got "$tmp/cr.ad")"
printf '\357\273\277print(1)\rprint(2)\r\nprint(3)\n' > "$tmp/mixed.ad"
check "BOM and mixed endings" "$(printf '1\n2\n3|0')" "$(got "$tmp/mixed.ad")"

# An error on line 3 of a CR-only file is on line 3, and its line is quoted alone.
printf 'let a = 1\rlet b = 2\rprint(a +)\rprint(b)\r' > "$tmp/cr_err.ad"
check "CR-only syntax error" "$(printf '%s\n%s\n%s|1' "$tmp/cr_err.ad:3:10: error: unexpected ')'" 'print(a +)' '         ^')" \
    "$(got "$tmp/cr_err.ad")"
printf '\357\273\277let a = 1\r\nprint(b)\r\n' > "$tmp/bom_err.ad"
check "BOM CRLF name error" "$(printf '%s\n%s\n%s|1' "$tmp/bom_err.ad:2:7: error: name 'b' is not defined" 'print(b)' '      ^')" \
    "$(got "$tmp/bom_err.ad")"
# A runtime error's traceback line too, and an imported module in CR-only text.
printf 'let m = 1\rfn f() {\r  return [1][5]\r}\rf()\r' > "$tmp/cr_run.ad"
case $(got "$tmp/cr_run.ad") in "$tmp/cr_run.ad:3:"*"|1") ;; *) echo "FAIL: CR-only runtime error: $(got "$tmp/cr_run.ad")"; fail=1 ;; esac
printf 'let v = 7\r' > "$tmp/mod.ad"
printf 'import "mod.ad" as m\rprint(m.v)\r' > "$tmp/use.ad"
check "CR-only module" "7|0" "$(got "$tmp/use.ad")"
# -e and standard input go through the same door.
check "-e CR" "$(printf '1\n2')" "$("$addsl" -e "$(printf 'print(1)\rprint(2)')" 2>&1)"
check "stdin BOM CR" "$(printf '1\n2')" "$(printf '\357\273\277print(1)\rprint(2)\r' | "$addsl" - 2>&1)"
[ $fail -eq 0 ] && echo PASS
exit $fail
