#!/bin/sh
# eval-stdin.sh: code from -e, from '-', and from a standard input that is not a terminal.
# Usage: eval-stdin.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"

check "-e" 7 "$("$addsl" -e 'print(3 + 4)' 2>&1)"
check "-e with two statements" "1 2" "$("$addsl" -e 'let a = 1; print(a, a + 1)' 2>&1)"
check "-" 42 "$(echo 'print(40 + 2)' | "$addsl" - 2>&1)"
check "no argument, piped stdin" 42 "$(echo 'print(40 + 2)' | "$addsl" 2>&1)"
check "multi-line stdin" 6 "$(printf 'fn f(a) {\n    return a * 2\n}\nprint(f(3))\n' | "$addsl" - 2>&1)"
check "empty stdin" "" "$("$addsl" - </dev/null 2>&1)"

# Error messages name the source <string> and <stdin>.
err=$("$addsl" -e 'let = 3' 2>&1 >/dev/null)
case $err in
    "<string>:1:"*) ;;
    *) echo "FAIL: -e error is not named <string>: $err"; fail=1 ;;
esac
err=$(echo 'let = 3' | "$addsl" - 2>&1 >/dev/null)
case $err in
    "<stdin>:1:"*) ;;
    *) echo "FAIL: stdin error is not named <stdin>: $err"; fail=1 ;;
esac
err=$(echo 'let = 3' | "$addsl" 2>&1 >/dev/null)
case $err in
    "<stdin>:1:"*) ;;
    *) echo "FAIL: piped stdin error is not named <stdin>: $err"; fail=1 ;;
esac

# Output printed before a runtime error still reaches stdout, in order.
out=$("$addsl" -e 'print("before"); assert(false, "boom")' 2>/dev/null)
check "output before an error" before "$out"
exit $fail
