#!/usr/bin/env bash
# fk_adolc.sh: builds and runs bench/fk_adolc.cpp, the ADOL-C baseline of bench/fk_chain.ad;
# skips with a message when ADOL-C (Debian's libadolc-dev) is missing. Not a build dependency.
# Usage: bench/fk_adolc.sh [ROW CALLS]  (arguments go to the program; see fk_adolc.cpp)
set -u
BENCH=$(cd "$(dirname "$0")" && pwd)
CXX=${CXX:-c++}
if ! pkg-config --exists adolc 2>/dev/null && [ ! -f /usr/include/adolc/adolc.h ]; then
    echo "fk_adolc: ADOL-C not found (apt-get install libadolc-dev); skipped" >&2
    exit 0
fi
BIN=${FK_ADOLC_BIN:-${TMPDIR:-/tmp}/fk_adolc.$$}
# Debian's adolc.pc names -lboost_system, which libadolc-dev does not pull in and the
# program does not need: try the plain library first.
$CXX -O2 -o "$BIN" "$BENCH/fk_adolc.cpp" -ladolc -lm 2>/dev/null ||
    $CXX -O2 -o "$BIN" "$BENCH/fk_adolc.cpp" $(pkg-config --cflags --libs adolc) ||
    { echo "fk_adolc: build failed" >&2; exit 1; }
"$BIN" "$@"
rc=$?
[ -z "${FK_ADOLC_BIN:-}" ] && rm -f "$BIN"
exit $rc
