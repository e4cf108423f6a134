#!/bin/sh
# help-examples.sh: runs the "Example:" line of every public callable's help (builtins, ops,
# library functions), each in a fresh addsl, in a scratch directory so the examples that write
# files (save, plot, makedirs) write there. An example that fails is reported with its error.
# Usage: help-examples.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
case $addsl in /*) ;; *) addsl=$(pwd)/$addsl ;; esac
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/run" || exit 99

"$addsl" -e 'for n in dir() { help(n); print("@@end " + n) }' \
    -e 'for o in all_ops() { help(o); print("@@end " + op_name(o)) }' >"$tmp/help" 2>&1 || {
    echo "FAIL: help over dir() stopped"; tail -5 "$tmp/help"; exit 1; }
# NAME<TAB>CODE per example
awk '/^  Example: / { ex = substr($0, 12); next }
     /^@@end / { if (ex != "" && !seen[$2]++) printf "%s\t%s\n", $2, ex; ex = ""; next }' "$tmp/help" >"$tmp/examples"

to=
command -v timeout >/dev/null 2>&1 && to="timeout 60"
n=0
fail=0
tab=$(printf '\t')
while IFS="$tab" read -r name code; do
    n=$((n + 1))
    if ! (cd "$tmp/run" && $to "$addsl" -e "$code" </dev/null >"$tmp/out" 2>&1); then
        echo "FAIL: help($name) example: $code"
        sed 's/^/    /' "$tmp/out" | head -6
        fail=$((fail + 1))
    fi
done <"$tmp/examples"
echo "$n examples run, $fail failed"
[ "$n" -gt 0 ] || { echo "FAIL: no examples found"; exit 1; }
[ $fail -eq 0 ] || exit 1
echo "PASS"
