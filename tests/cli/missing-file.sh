#!/bin/sh
# missing-file.sh: a script file that cannot be opened is bad usage: exit 2 and one clear line.
# Usage: missing-file.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

cd "$tmp" || exit 99
"$addsl" x.ad >out 2>err
rc=$?
if [ $rc -ne 2 ]; then
    echo "FAIL: a missing file exited $rc, expected 2"
    fail=1
fi
if [ "$(cat err)" != "addsl: cannot open 'x.ad': No such file or directory" ]; then
    echo "FAIL: message was: $(cat err)"
    fail=1
fi
if [ -s out ]; then
    echo "FAIL: a missing file wrote to stdout: $(cat out)"
    fail=1
fi

# Its arguments do not matter, and --disasm reports it the same way.
"$addsl" x.ad a b 2>/dev/null
[ $? -eq 2 ] || { echo "FAIL: a missing file with args did not exit 2"; fail=1; }
"$addsl" --disasm x.ad 2>err
rc=$?
if [ $rc -ne 2 ] || ! grep -q "cannot open 'x.ad'" err; then
    echo "FAIL: --disasm of a missing file exited $rc: $(cat err)"
    fail=1
fi

# A directory is not a script.
mkdir d.ad
"$addsl" d.ad 2>err
rc=$?
if [ $rc -ne 2 ] || ! grep -q "cannot open 'd.ad'" err; then
    echo "FAIL: a directory exited $rc: $(cat err)"
    fail=1
fi
exit $fail
