#!/bin/sh
# build.sh: builds the libFuzzer targets with clang (ASan + UBSan) from the project sources.
# Usage: build.sh SRCDIR BUILDDIR CLANG SOURCE...  (sources relative to SRCDIR or BUILDDIR; non-.c ignored)
set -e
srcdir=${1:?usage: build.sh SRCDIR BUILDDIR CLANG SOURCE...}
builddir=${2:?}
cc=${3:-clang}
shift 3
out=$builddir/fuzz
obj=$out/obj
mkdir -p "$obj"
pc=$(pkg-config --cflags libffi sleef openblas libzip 2>/dev/null || true)
libs=$(pkg-config --libs libffi sleef openblas libzip 2>/dev/null || echo "-lffi -lsleef -lopenblas -lzip")
# OpenMP stays off: fuzz inputs are far below the parallel threshold, and threads confuse the fuzzer.
cflags="-std=c11 -g -O1 -fno-omit-frame-pointer -D_GNU_SOURCE -Wno-unknown-pragmas
  -fsanitize=address,undefined -fno-sanitize-recover=undefined
  -I$srcdir/include -I$builddir/vm -I$srcdir/vm -I$srcdir/builtins -I$builddir -I$srcdir $pc"

# Objects depend on the headers too: the newest one stands for all (a stale
# object built against an old struct layout gives false crashes).
newest_h=$(ls -t $(find "$srcdir"/include "$srcdir"/vm "$srcdir"/builtins -name '*.h' -o -name '*.def') \
    "$builddir"/grammar.h 2>/dev/null | head -1)
objs=
for s do
    case $s in *.c) ;; *) continue ;; esac
    if [ -f "$builddir/$s" ]; then f=$builddir/$s; else f=$srcdir/$s; fi
    o=$obj/$(printf '%s' "$s" | tr / _ | sed 's/\.c$/.o/')
    if [ ! -f "$o" ] || [ "$f" -nt "$o" ] || { [ -n "$newest_h" ] && [ "$newest_h" -nt "$o" ]; }; then
        echo "  FUZZCC   $s"
        $cc $cflags -fsanitize=fuzzer-no-link -c "$f" -o "$o"
    fi
    objs="$objs $o"
done
rm -f "$obj/libaddsl_fuzz.a"
ar rcs "$obj/libaddsl_fuzz.a" $objs
for t in compile program npy op opcall api; do
    echo "  FUZZLD   fuzz/fuzz_$t"
    $cc $cflags -fsanitize=fuzzer "$srcdir/fuzz/fuzz_$t.c" "$obj/libaddsl_fuzz.a" $libs -ldl -lm -o "$out/fuzz_$t"
done
