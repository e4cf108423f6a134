#!/bin/sh
# seeds.sh: builds the seed corpora of the fuzz targets from tests/, samples/ and lib/ at run time.
# Usage: seeds.sh SRCDIR OUTDIR   (makes OUTDIR/{compile,program,npy,op,opcall,api}; nothing is committed)
# The opcall target writes its own seeds (one call per op and builtin), see run.sh.
set -e
srcdir=${1:?usage: seeds.sh SRCDIR OUTDIR}
out=${2:?}
mkdir -p "$out/compile" "$out/program" "$out/npy" "$out/op" "$out/opcall" "$out/api"
n=0
for f in "$srcdir"/tests/*/*.ad "$srcdir"/samples/*.ad "$srcdir"/tests/hostile/*.ad; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    cp -f "$f" "$out/compile/$n.ad"
    # Scripts that need the file system or native code gain nothing in the sandbox.
    grep -q 'extern\|load(\|save(\|args\[' "$f" || cp -f "$f" "$out/program/$n.ad"
done
for f in "$srcdir"/lib/*.ad; do
    [ -f "$f" ] && cp "$f" "$out/compile/lib-$(basename "$f")"
done
for f in "$srcdir"/tests/fixtures/*.npy "$srcdir"/tests/hostile/*.npy; do
    [ -f "$f" ] && cp "$f" "$out/npy/$(basename "$f")"
done
# Op seeds: the backward and forward-mode formulas of the shipped ops, three per seed.
n=0
cat "$srcdir"/lib/*.ad | sed -n 's/^ *\(self\|other\|result\|input\|grad_output\): *//p' |
while IFS= read -r a && IFS= read -r b && IFS= read -r c; do
    n=$((n + 1))
    printf '%s\n%s\n%s\n' "$a" "$b" "$c" > "$out/op/$n.txt"
done
printf 'grad * other\ngrad * self\nother_t * self_p + self_t * other_p\n' > "$out/op/mul.txt"
