#!/bin/sh
# error-format.sh: errors read FILE:LINE:COL: error: MESSAGE, then the source line and a caret.
# Usage: error-format.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99

# A syntax error: '=' at line 1, column 5.
printf 'let = 3\n' >syntax.ad
"$addsl" syntax.ad >out 2>err
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: syntax error exited $rc"; fail=1; }
case $(head -n 1 err) in
    "syntax.ad:1:5: error: "?*) ;;
    *) echo "FAIL: first line is not 'syntax.ad:1:5: error: ...'"; fail=1 ;;
esac
if ! grep -q 'let = 3' err; then
    echo "FAIL: the source line is not shown"
    fail=1
fi
# The caret sits under column 5, whatever gutter precedes the source line.
src=$(tail -n +2 err | grep -n 'let = 3' | head -n 1 | cut -d: -f1)
if [ -n "$src" ]; then
    src=$((src + 1))
    srcline=$(sed -n "${src}p" err)
    caretline=$(sed -n "$((src + 1))p" err)
    prefix=${srcline%%let = 3*}
    want=$((${#prefix} + 5))
    got=$(printf '%s\n' "$caretline" | awk '{ print index($0, "^") }')
    if [ "$got" != "$want" ]; then
        echo "FAIL: caret line '$caretline' is not under column 5 of '$srcline'"
        fail=1
    fi
fi

# An error on a later line of a file counts lines and columns from 1.
printf 'let a = 1\n\n  let = 2\n' >line3.ad
"$addsl" line3.ad 2>err
case $(head -n 1 err) in
    "line3.ad:3:7: error: "?*) ;;
    *) echo "FAIL: expected 'line3.ad:3:7: error:', got '$(head -n 1 err)'"; fail=1 ;;
esac

# A runtime error inside a function names the failing line and shows a traceback.
printf 'fn f(x) {\n    assert(false, "boom")\n}\nf(1)\n' >runtime.ad
"$addsl" runtime.ad >out 2>err
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: runtime error exited $rc"; fail=1; }
case $(head -n 1 err) in
    "runtime.ad:2:"*": error: "*boom*) ;;
    *) echo "FAIL: runtime error first line: '$(head -n 1 err)'"; fail=1 ;;
esac
if ! grep -q '\^' err; then
    echo "FAIL: the runtime error has no caret"
    fail=1
fi
if ! grep -q 'runtime.ad:4' err; then
    echo "FAIL: the traceback does not name the caller at line 4"
    fail=1
fi
[ $fail -eq 0 ] || sed 's/^/  stderr: /' err
exit $fail
