#!/bin/sh
# help-version.sh: --help lists every option and environment variable and exits 0; --version prints "addsl 0.1.0".
# Usage: help-version.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0

out=$("$addsl" --help 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL: --help exited $rc"
    fail=1
fi
for opt in -e -i -u --disasm --memory-limit --max-depth --export-c --sandbox --help --version ADDSL_HISTORY ADDSL_CUDA_MODULE; do
    case $out in
        *"$opt"*) ;;
        *) echo "FAIL: --help does not mention $opt"; fail=1 ;;
    esac
done
case $out in
    *usage:*) ;;
    *) echo "FAIL: --help has no usage line"; fail=1 ;;
esac

out=$("$addsl" --version 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ "$out" != "addsl 0.1.0" ]; then
    echo "FAIL: --version exited $rc and printed '$out'"
    fail=1
fi

# Help goes to stdout, and a bad option's complaint to stderr only.
if [ -z "$("$addsl" --help 2>/dev/null)" ]; then
    echo "FAIL: --help wrote nothing to stdout"
    fail=1
fi
out=$("$addsl" --bogus 2>/dev/null)
if [ -n "$out" ]; then
    echo "FAIL: an unknown option wrote to stdout: $out"
    fail=1
fi
err=$("$addsl" --bogus 2>&1 >/dev/null)
case $err in
    *--bogus*) ;;
    *) echo "FAIL: the unknown option message does not name it: $err"; fail=1 ;;
esac
exit $fail
