#!/bin/sh
# help-coverage.sh: help(name) gives every public callable (dir() and all_ops(): builtins, ops,
# library functions, optimisers) a paragraph of its own and an "Example:" line. The texts come
# from the builtin tables' doc strings and the '#' comments above the library's definitions.
# Usage: help-coverage.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

"$addsl" -e 'for n in dir() { help(n); print("@@end " + n) }' -e 'for o in all_ops() { help(o); print("@@end " + op_name(o)) }' >"$tmp/help" 2>&1 || {
    echo "FAIL: help over dir() stopped"; tail -5 "$tmp/help"; exit 1; }

# One entry: the signature line, indented lines, then "@@end NAME". Values that are not callables
# (dtypes, constants such as pi) have nothing to document.
awk '
/^@@end / {
    name = $2
    if (!plain) {
        if (!para) { print "no paragraph: " name; bad++ }
        if (!ex)   { print "no example: " name; bad++ }
        n++
    }
    para = 0; ex = 0; plain = 0; next
}
/^a value of type / { plain = 1; next }
/^  Example: ./ { ex = 1; next }
/^  / {
    line = substr($0, 3)
    if (line ~ /^(A builtin function \(C\)\.|A differentiable op\.|A function( of the library)?\.)/) next
    if (line ~ /^(Also a method|Derivatives|Defined at|  )/) next
    para = 1
}
END { printf "%d callables checked\n", n; exit bad > 0 }
' "$tmp/help" >"$tmp/report"
rc=$?
cat "$tmp/report"
if [ $rc -ne 0 ]; then echo "FAIL: $(grep -c '^no ' "$tmp/report") missing docs"; exit 1; fi
echo "PASS"
