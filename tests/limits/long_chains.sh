#!/bin/sh
# long_chains.sh: a left chain of 10^4 terms (+, *, mixed) compiles in O(1)
# registers and gives its value; so do right-nested chains 255 brackets deep
# and 900-term right-associative ** chains (issue 27, item 8).
# Usage: long_chains.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# check NAME EXPECTED SCRIPT-FILE
check() {
    out=$("$addsl" "$3" 2>&1 | cut -c1-200)
    [ "$out" = "$2" ] || { echo "FAIL: $1: expected '$2', got '$out'"; fail=1; }
}
# chain N TERM OP: print(TERM OP TERM OP ... TERM), N terms, one line
chain() {
    awk -v n="$1" -v t="$2" -v op="$3" 'BEGIN { s = t; for (i = 1; i < n; i++) s = s op t; print "print(" s ")" }'
}

chain 10000 1 + >"$tmp/add.ad"
check "10^4 ones added" 10000 "$tmp/add.ad"
chain 250 1 + >"$tmp/add250.ad"
check "250 ones added (the old limit)" 250 "$tmp/add250.ad"
chain 10000 1.0001 '*' >"$tmp/mul.ad"
# 1.0001^10000 = e^(10000 ln 1.0001) = 2.718145927...
printf 'let x = %s\nprint(f"{x:.6f}")\n' "$(chain 10000 1.0001 '*' | sed 's/^print(//; s/)$//')" >"$tmp/mul.ad"
check "10^4 factors" 2.718146 "$tmp/mul.ad"
# mixed: 1 + 2 * 3 - 4 + 2 * 3 - 4 ... (+ and - on the chain, * below it): 1 + 2 * 3333
awk 'BEGIN { s = "1"; for (i = 0; i < 3333; i++) s = s " + 2 * 3 - 4"; print "print(" s ")" }' >"$tmp/mixed.ad"
check "a 10^4-term mixed chain" 6667 "$tmp/mixed.ad"
# * and / alternating on one chain: 3 * 2 / 2 * 2 / 2 ... stays 3
awk 'BEGIN { s = "3"; for (i = 0; i < 5000; i++) s = s " * 2 / 2"; print "print(" s ")" }' >"$tmp/muldiv.ad"
check "a 10^4-term * / chain" 3 "$tmp/muldiv.ad"
# locals and calls inside a chain in a function: each term is f(i) = i, sum 0..9999
awk 'BEGIN { s = "id(0)"; for (i = 1; i < 10000; i++) s = s " + id(" i ")"; print "fn id(v) { return v }\nfn total() {\n    let a = 1\n    return " s " + a - a\n}\nprint(total())" }' >"$tmp/calls.ad"
check "a chain of 10^4 calls in a function" 49995000 "$tmp/calls.ad"
# a tensor chain: every partial result a tensor
awk 'BEGIN { s = "t"; for (i = 1; i < 10000; i++) s = s " + t"; print "let t = ones([2])\nprint((" s ").tolist())" }' >"$tmp/tensor.ad"
check "a chain of 10^4 tensors" "[10000, 10000]" "$tmp/tensor.ad"
# right-nested, 255 brackets deep (the lexer's bracket limit): 1 + (1 + (... 1))
awk 'BEGIN { s = "1"; for (i = 0; i < 255; i++) s = "(1 + " s ")"; print "print(" s ")" }' >"$tmp/rnest.ad"
check "a right-nested sum 255 deep" 256 "$tmp/rnest.ad"
# right-nested subtraction, where the order matters: 2 - (1 - (2 - (1 - ... 0))), 254 levels
awk 'BEGIN { s = "0"; for (i = 0; i < 254; i++) s = "(" (i % 2 ? 2 : 1) " - " s ")"; print "print(" s ")" }' >"$tmp/rsub.ad"
check "a right-nested difference 254 deep" 127 "$tmp/rsub.ad"
# ** is right-associative: 1 ** 1 ** ... ** 2 (900 terms, under the parser's
# stack) is 1; x ** x ** ... with a local x = 1 in a function is 1
awk 'BEGIN { s = "2"; for (i = 0; i < 900; i++) s = "1 ** " s; print "print(" s ")" }' >"$tmp/pow1.ad"
check "a 900-term ** chain" 1 "$tmp/pow1.ad"
awk 'BEGIN { s = "x"; for (i = 0; i < 900; i++) s = "x ** " s; print "fn f(x) { return " s " }\nprint(f(1))" }' >"$tmp/pow2.ad"
check "a 900-term ** chain of a local" 1 "$tmp/pow2.ad"
exit $fail
