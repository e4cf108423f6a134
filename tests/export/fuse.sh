#!/bin/sh
# fuse.sh: element-wise chains exported as one loop (tests/export/fuse_cases.ad:
# broadcasts, 0-d, empty and non-contiguous inputs, bool and int64 operands,
# values read after the chain, basic indexing, products), with fuse=false and,
# when cblas.h is found, with blas=true against the loop version; every function,
# VJP and JVP against the interpreter. The fused code must compile under
# -std=c99 -Wall -Wextra -Werror -pedantic with gcc and clang, reference no
# allocator nor libaddsl, run clean under valgrind, and need less work buffer.
addsl=${1:?usage: $0 PATH-TO-ADDSL}
src=${srcdir:-.}
dir=$(mktemp -d "${TMPDIR:-/tmp}/addsl-export-fuse.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
flags="-std=c99 -Wall -Wextra -Werror -pedantic"
cc=
for c in gcc clang cc; do command -v $c >/dev/null 2>&1 && { cc=$c; break; }; done
[ -n "$cc" ] || { echo "SKIP: no C compiler"; exit 77; }

# build MODE [CFLAGS LIBS]: export the cases, compile them and the driver, run it
build() {
    mkdir -p "$dir/$1"
    "$addsl" "$src/tests/export/fuse_cases.ad" "$dir/$1" "$1" > "$dir/$1/main.c" || { echo "FAIL: fuse_cases.ad $1"; exit 1; }
    cat "$dir/$1"/c[0-9]*.c > "$dir/$1/cases.c"
    $cc $flags -O2 $2 -I"$dir/$1" -c "$dir/$1/cases.c" -o "$dir/$1/cases.o" || { echo "FAIL: $cc rejects the $1 code"; exit 1; }
    for other in gcc clang; do
        [ $other != $cc ] && command -v $other >/dev/null 2>&1 || continue
        $other $flags $2 -fsyntax-only -I"$dir/$1" "$dir/$1/cases.c" || { echo "FAIL: $other rejects the $1 code"; exit 1; }
    done
    $cc -std=c99 -O0 -I"$dir/$1" "$dir/$1/main.c" "$dir/$1/cases.o" $3 -lm -o "$dir/$1/main" || { echo "FAIL: $1 driver"; exit 1; }
    OMP_NUM_THREADS=1 "$dir/$1/main" || { echo "FAIL: the $1 code differs from the interpreter"; exit 1; }
}

build fuse
bad=$(nm -u "$dir/fuse/cases.o" | awk '{print $NF}' | grep -E '^(malloc|calloc|realloc|free|ad_|addsl_)')
[ -z "$bad" ] || { echo "FAIL: the exported code references: $bad"; exit 1; }
[ -z "$(nm "$dir/fuse/cases.o" | awk '$2 ~ /^[BDbd]$/')" ] || { echo "FAIL: the exported code has writable data"; exit 1; }
grep -q 'one loop for 8 element-wise records' "$dir/fuse/c1.c" || { echo "FAIL: the broadcast chain is not one loop"; exit 1; }
if ldd "$dir/fuse/main" 2>/dev/null | grep -q libasan; then :
else
    . "$src/tests/valgrind/check.sh"
    valgrind_check "$dir/fuse/main" || exit 1
fi

build nofuse
# the broadcast chain's forward keeps only its [3, 1] column values in memory once fused
# (two blocks of 3 doubles, 32 bytes each), not its [3, 4] intermediates
work() { sed -n "s/^#define C1_WORK_BYTES //p" "$dir/$1/c1.h"; }
fwd() { grep -m1 ' \* work: ' "$dir/$1/c1.c" | awk '{print $3}'; }
[ "$(fwd fuse)" -le 64 ] || { echo "FAIL: the fused chain's forward uses $(fwd fuse) bytes of work"; exit 1; }
[ "$(work fuse)" -lt "$(work nofuse)" ] || { echo "FAIL: fusion does not shrink the work buffer ($(work fuse) vs $(work nofuse))"; exit 1; }
echo "work buffer of the broadcast chain: $(work nofuse) bytes unfused, $(work fuse) fused"

# blas=true: cblas_dgemm/sgemm calls, checked against the same functions exported with loops
bcflags=$(pkg-config --cflags openblas 2>/dev/null)
blibs=$(pkg-config --libs openblas 2>/dev/null || echo -lblas)
if printf '#include <cblas.h>\nint main(void) { return 0; }\n' | $cc $bcflags -x c - -o "$dir/cblas" $blibs 2>/dev/null; then
    build blas "$bcflags" "$blibs"
    grep -q 'cblas_dgemm(CblasRowMajor' "$dir/blas/cases.c" && grep -q 'cblas_sgemm(CblasRowMajor' "$dir/blas/cases.c" ||
        { echo "FAIL: blas=true wrote no cblas calls"; exit 1; }
else
    echo "blas=true: skipped (no cblas.h and CBLAS library to link)"
fi
echo "export fuse: ok"
