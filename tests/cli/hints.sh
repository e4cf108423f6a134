#!/bin/sh
# hints.sh: an error gets a "did you mean" or a habit hint only when one fits:
# the exact first line of each message below, so nothing extra may be appended.
# Usage: hints.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99

# first_line CODE WANT: the first stderr line of 'addsl -e CODE' is exactly WANT.
first_line() {
    "$addsl" -e "$1" >out 2>err
    got=$(head -n 1 err)
    [ "$got" = "$2" ] || { echo "FAIL: $1"; echo "  want: $2"; echo "  got:  $got"; fail=1; }
}

# Nothing close: no suggestion.
first_line 'print(zqxv)' "<string>:1:7: error: name 'zqxv' is not defined"
# One letter apart is too far for a one-letter name ('x' never suggests 'y').
first_line 'let x = 1
print(y)' "<string>:2:7: error: name 'y' is not defined"
first_line 'let x = ones(2)
print(x.qqqq)' "<string>:2:9: error: unknown attribute 'qqqq'"
# 'pi' exists but is a number: no 'x.pi()' advice.
first_line 'let x = ones(2)
print(x.pi)' "<string>:2:9: error: unknown attribute 'pi'"
first_line 'let x = ones(2)
print(x.frobnicate())' "<string>:2:9: error: unknown method 'frobnicate'"
first_line 'print(sum(ones(2), zzz=1))' "<string>:1:7: error: sum() got an unexpected keyword argument 'zzz'"
# A script's own 'np' is a value, not numpy: no prefix advice.
first_line 'let np = 2
print(np.shape)' "<string>:2:10: error: number has no attribute 'shape'"
# A close name beats the let advice for an assignment.
first_line 'let best_loss = 1
best_los = 2' "<string>:2:1: error: name 'best_los' is not defined; did you mean 'best_loss'?"
# Tokens the hints look at still work where they are addsl: ':' in a slice
# inside an if, 'a ++1' and '3--1' as unary signs, 'def' as a name.
"$addsl" -e 'let x = arange(4)
if true { print(x[1:3]) }
print(3--1)
let a = 1
print(a ++1)
let def = 5
print(def)' >out 2>err || { echo "FAIL: valid code was refused"; sed 's/^/  /' err; fail=1; }
printf 'tensor([1, 2])\n4\n2\n5\n' >want
cmp -s out want || { echo "FAIL: valid code printed:"; sed 's/^/  /' out; fail=1; }
exit $fail
