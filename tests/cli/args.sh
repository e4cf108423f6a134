#!/bin/sh
# args.sh: the words after the script reach it as the list 'args', for a file, -e and '-'.
# Usage: args.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
make_tmp

code='print(len(args)); for a in args { print(a) }'
printf '%s\n' "$code" >"$tmp/args.ad"
want=$(printf '3\na b\n-x\n--help')
check "file" "$want" "$("$addsl" "$tmp/args.ad" 'a b' -x --help 2>&1)"
check "-e" "$want" "$("$addsl" -e "$code" 'a b' -x --help 2>&1)"
check "-" "$want" "$(printf '%s\n' "$code" | "$addsl" - 'a b' -x --help 2>&1)"
check "no args" 0 "$("$addsl" -e 'print(len(args))' 2>&1)"
check "an option before the script" "1" "$("$addsl" --max-depth 50 -e 'print(len(args))' z 2>&1)"
check "'--' ends options" "1" "$(cd "$tmp" && cp args.ad ./-dash.ad && "$addsl" -- -dash.ad only 2>&1 | head -n 1)"
check "numeric words stay strings" "true" "$("$addsl" -e 'print(args[0] == "7")' 7 2>&1)"

# print(args) shows both words, however strings inside a list are quoted.
out=$("$addsl" -e 'print(args)' first second 2>&1)
case $out in
    \[*first*second*\]) ;;
    *) echo "FAIL: print(args) gave '$out'"; fail=1 ;;
esac
exit $fail
