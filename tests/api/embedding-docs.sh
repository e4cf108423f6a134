#!/bin/sh
# embedding-docs.sh: follows docs/embedding.md literally: 'make install' into a
# temporary prefix, then every C program of the installed docs/embedding.md and
# README.md, and samples/embed/host.c, built with the page's commands (rpath,
# LD_LIBRARY_PATH, pkg-config --static) and run; each must print what the page says.
# Usage: embedding-docs.sh PATH-TO-ADDSL (in the build tree)
addsl=${1:?usage: $0 PATH-TO-ADDSL}
builddir=$(cd "$(dirname "$addsl")" && pwd)
command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: no pkg-config"; exit 77; }
# A sanitizer build (./configure --enable-asan) installs a library that only an
# ASan-linked host can load; the pages' plain commands are for normal builds.
if ldd "$addsl" 2>/dev/null | grep -q 'libasan'; then
    echo "SKIP: sanitizer build (a plain host program cannot load an ASan-instrumented libaddsl)"; exit 77
fi
cc=${CC:-cc}
top_src=$(cd "$(dirname "$0")/../.." && pwd)
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
pfx=$tmp/prefix
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

# The install. The test may run inside 'make check': the inner make must not
# join the outer one's job server.
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$builddir" install prefix="$pfx" >"$tmp/install.log" 2>&1; then
    tail -20 "$tmp/install.log"; echo "FAIL: make install"; exit 1
fi
# What './configure --prefix=$pfx' would have written into addsl.pc.
sed -i "s|^prefix=.*|prefix=$pfx|" "$pfx/lib/pkgconfig/addsl.pc"
doc=$pfx/share/doc/addsl
for f in README.md docs/embedding.md docs/language.md docs/images/trajectory.png samples/trajectory.ad samples/embed/host.c samples/ffi/softplus.c; do
    [ -f "$doc/$f" ] || bad "not installed: share/doc/addsl/$f"
done
[ $fail = 0 ] && ok "docs and samples under \$(docdir)"

export PKG_CONFIG_PATH=$pfx/lib/pkgconfig
cflags_libs=$(pkg-config --cflags --libs addsl) || { echo "FAIL: pkg-config addsl"; exit 1; }
libdir=$(pkg-config --variable=libdir addsl)
[ "$libdir" = "$pfx/lib" ] || bad "libdir is '$libdir'"

# Each ```c block, numbered, and what the text after its fence says it prints.
awk -v dir="$tmp" -v tag="$(basename "$doc")" '
    FNR == 1 { file = FILENAME; sub(/.*\//, "", file) }
    /^```c$/ { n++; name = dir "/" file "-" n; out = name ".c"; printf "" > out; inside = 1; after = 0; next }
    inside && /^```$/ { inside = 0; after = 3; next }
    inside { print > out; next }
    after > 0 { after--; if (match($0, /prints `[^`]*`/)) { print substr($0, RSTART + 8, RLENGTH - 9) > (name ".expect"); after = 0 } }
' "$doc/docs/embedding.md" "$doc/README.md"
n=0
for src in "$tmp"/*.md-*.c; do
    [ -f "$src" ] || continue
    n=$((n + 1))
    base=${src%.c}
    name=$(basename "$base")
    # docs/embedding.md's command, as written.
    if ! $cc "$src" $cflags_libs -Wl,-rpath,"$libdir" -o "$base" 2>"$base.err"; then
        bad "$name does not compile:"; cat "$base.err"; continue
    fi
    "$base" >"$base.out" 2>&1 || { bad "$name exits $?:"; cat "$base.out"; continue; }
    # Exact: the pages' examples compute with small integers (x @ w of
    # integers, sums of squares), which every correct kernel gets exactly.
    if [ -f "$base.expect" ]; then
        if [ "$(cat "$base.out")" = "$(cat "$base.expect")" ]; then ok "$name prints $(cat "$base.expect")"
        else bad "$name prints '$(cat "$base.out")', the page says '$(cat "$base.expect")'"; fi
    else
        bad "$name: the page does not say what it prints"
    fi
done
[ $n -ge 4 ] && ok "$n C programs in the pages" || bad "only $n C programs found in the pages"

# The tutorial's complete host, from the installed samples, against the
# installed host.out to the tolerance of the source tree's host.out.tol (its
# numbers come from OpenBLAS's float32 kernels, which differ by CPU).
host=$tmp/host
if $cc "$doc/samples/embed/host.c" $cflags_libs -Wl,-rpath,"$libdir" -o "$host" 2>"$tmp/host.err" && "$host" >"$tmp/host.out" 2>&1 \
   && why=$(${SHELL:-/bin/sh} "$top_src/tests/numcmp" -t "$top_src/samples/embed/host.out.tol" "$doc/samples/embed/host.out" "$tmp/host.out"); then
    ok "samples/embed/host.c${why:+ ($why)}"
else bad "samples/embed/host.c:"; printf '%s\n' "$why"; cat "$tmp/host.err" "$tmp/host.out"; fi

# Without the rpath, the loader needs LD_LIBRARY_PATH (the failure the page explains).
first=$tmp/embedding.md-1.c
$cc "$first" $cflags_libs -o "$tmp/norpath" || bad "compiling without rpath"
if env -u LD_LIBRARY_PATH "$tmp/norpath" >/dev/null 2>&1 && ! ldconfig -p 2>/dev/null | grep -q "$pfx"; then
    bad "runs without rpath or LD_LIBRARY_PATH (is another libaddsl.so.0 installed?)"
fi
LD_LIBRARY_PATH=$pfx/lib "$tmp/norpath" >/dev/null 2>&1 && ok "LD_LIBRARY_PATH instead of the rpath" || bad "LD_LIBRARY_PATH run"

# Static: the page's command; the program must not need libaddsl.so.
if $cc "$first" $(pkg-config --static --cflags --libs addsl | sed 's/-laddsl/-l:libaddsl.a/') -o "$tmp/static" 2>"$tmp/static.err" \
   && env -u LD_LIBRARY_PATH "$tmp/static" >"$tmp/static.out" 2>&1 && [ "$(cat "$tmp/static.out")" = "$(cat "$tmp/embedding.md-1.expect")" ]; then
    if command -v ldd >/dev/null 2>&1 && ldd "$tmp/static" | grep -q libaddsl; then bad "the static link still needs libaddsl.so"
    else ok "pkg-config --static"; fi
else bad "pkg-config --static:"; cat "$tmp/static.err" "$tmp/static.out"; fi
# The installed addsl finds its modules in the tree it was installed to: this
# install overrode the configured prefix, as a moved tree or a DESTDIR staging
# does, so the configured pkglibdir does not hold them. Run by path and, as
# users do, by bare name from PATH (dladdr then names no directory). The
# loader's "calling init" line names the module it loaded.
loaded() { # MODULE: the path of the MODULE the last command's loader log loaded
    sed -n "s/.*calling init: \(.*\/$1\)$/\1/p" "$tmp/ld.err" | head -1
}
same_file() { [ -n "$1" ] && [ "$(cd "$(dirname "$1")" && pwd -P)/$(basename "$1")" = "$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")" ]; }
if [ -f "$pfx/lib/addsl/addsl_mpi.so" ]; then
    for how in path PATH; do
        if [ $how = path ]; then run="$pfx/bin/addsl"; else run=addsl; fi
        got=$(env -u ADDSL_MPI_MODULE PATH="$pfx/bin:$PATH" LD_DEBUG=files "$run" -e 'print(mpi_is_available())' 2>"$tmp/ld.err")
        if same_file "$(loaded addsl_mpi.so)" "$pfx/lib/addsl/addsl_mpi.so"; then ok "the installed addsl (by $how) loads its own addsl_mpi.so"
        else bad "the installed addsl (by $how) did not load $pfx/lib/addsl/addsl_mpi.so (printed '$got', loaded '$(loaded addsl_mpi.so)')"; fi
    done
fi
if [ -f "$pfx/lib/addsl/addsl_cuda.so" ]; then
    env -u ADDSL_CUDA_MODULE LD_DEBUG=files "$pfx/bin/addsl" -e 'print(cuda_is_available())' >/dev/null 2>"$tmp/ld.err"
    if same_file "$(loaded addsl_cuda.so)" "$pfx/lib/addsl/addsl_cuda.so"; then ok "the installed addsl loads its own addsl_cuda.so"
    else bad "the installed addsl did not load $pfx/lib/addsl/addsl_cuda.so (loaded '$(loaded addsl_cuda.so)')"; fi
fi
exit $fail
