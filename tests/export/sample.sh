#!/bin/sh
# sample.sh: samples/export/controller (built by make check from the C that
# addsl --export-c writes for samples/export/arm.ad) reaches its targets, and
# runs clean under valgrind when it is installed and can read the program
# (tests/valgrind/check.sh).
src=${srcdir:-.}
[ -x samples/export/controller ] || { echo "SKIP: samples/export/controller not built"; exit 77; }
# Its output goes to a temporary file: 'make distclean' must leave the build tree as it found it.
log=$(mktemp "${TMPDIR:-/tmp}/addsl-controller.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
samples/export/controller > "$log" || { echo "FAIL: controller"; exit 1; }
diff "$src/samples/export/controller.out" "$log" || { echo "FAIL: output differs"; exit 1; }
# In a sanitizer build (./configure --enable-asan) the controller is built
# with ASan too, which valgrind cannot run: ASan checks it instead.
if ldd samples/export/controller 2>/dev/null | grep -q libasan; then
    echo "valgrind: skipped (sanitizer build; ASan checked the run above)"
else
    . "$src/tests/valgrind/check.sh"
    valgrind_check samples/export/controller || exit 1
fi
echo "export sample: ok"
