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
# Import-heavy seeds (issue 27): every kind of path the sandbox must refuse without reading it
# (fuzz_program's "<fuzz>" chunk imports nothing), imports in functions, loops and modules' names,
# and sources with a byte order mark and CR or CRLF line endings.
i=0
for imp in '"/etc/passwd"' '"../secret.ad"' '"sub/../../x.ad"' '"/dev/zero"' '"m.ad"' '"./m.ad"' \
        '"dir/"' '""' '"a.ad\\0b"' '"\\n.ad"' '"/proc/self/fd/0"' '"m.txt"' '".ad"' '"//x.ad"'; do
    i=$((i + 1))
    printf 'import %s as m\nprint(m.x)\n' "$imp" > "$out/program/import-$i.ad"
    printf 'fn f(n) {\n  import %s as m\n  return m.v + n\n}\nfor i in range(3) { f(i) }\n' "$imp" > "$out/program/import-fn-$i.ad"
    cp "$out/program/import-$i.ad" "$out/compile/import-$i.ad"
done
printf 'import "a.ad" as a\nimport "b.ad" as b\nimport "a.ad" as c\nprint(a.f(1), b.g, c)\n' > "$out/program/import-many.ad"
printf 'let m = 1\nimport "m.ad" as m\nm.f(m)\n' > "$out/program/import-shadow.ad"
printf '\357\273\277import "m.ad" as m\rprint(1)\r\n' > "$out/program/import-bom-cr.ad"
printf '\357\273\277let x = [1,\r  2]\rprint(x)\r' > "$out/program/bom-cr.ad"
printf 'print(1)\r\nlet s = "a\rb"\r\n' > "$out/program/crlf-string.ad"
cp "$out"/program/import-*.ad "$out"/program/bom-cr.ad "$out"/program/crlf-string.ad "$out/compile/"
# Container-building seeds (issue 27): self-holding lists, dicts and closures printed, compared,
# sorted, hashed and dropped; deep chains; cycles left for the collector (gc_collect()).
cat > "$out/program/cycle-list.ad" <<'EOS'
let l = [1]
append(l, l)
print(l, str(l), len(l), l == l, sorted([l, l]))
EOS
cat > "$out/program/cycle-dict.ad" <<'EOS'
let d = {"k": 1}
d["s"] = d
let t = (d, [d])
print(d, t, gc_collect())
EOS
cat > "$out/program/cycle-closure.ad" <<'EOS'
let fs = []
for i in range(50) { let f = fn() => len(fs) + i; append(fs, f); let d = {"f": f, "d": fs} }
print(fs[3](), gc_collect())
EOS
cat > "$out/program/deep-chain.ad" <<'EOS'
let l = []
for i in range(3000) { l = [l, (l,)] }
let d = {}
for i in range(3000) { d = {"k": d} }
print(len(l))
EOS
cp "$out"/program/cycle-*.ad "$out"/program/deep-chain.ad "$out/compile/"
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
