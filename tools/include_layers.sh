#!/bin/sh
# include_layers.sh: the include graph of the C sources folded onto the
# layers' folders (vm/tensor, builtins/kernels, ...): one line per
# folder-to-folder edge, "FROM -> TO  N" (N includes), marked when it goes
# up the layer order below; with --files, the including files too.
# --check: exits 1 when an edge goes up and is not on the ALLOWED list,
# printing it with its files (tests/cli/include-layers.sh runs this).
#   tools/include_layers.sh [--check | --files] [SRCDIR]
mode=print
case ${1:-} in --check|--files) mode=${1#--}; shift ;; esac
src=${1:-${srcdir:-.}}
cd "$src" || exit 2

# The layers from the bottom up, '|' between them; folders in one layer
# may include each other. vm/ holds two layers: its base (values, state,
# buffers, dicts, the collector) and, as "vm/top", the files that drive
# everything (the interpreter loop, the compiler and the public API).
LAYERS="include include/addsl | builtins/kernels | vm vm/tensor | vm/autograd | vm/trace vm/jit | vm/export |
        builtins builtins/system | vm/top vm/repl | cuda mpi | ."
TOP_FILES="vm/vm.c vm/api.c vm/args.c vm/codegen.c vm/ast.c"

# Upward edges that stay, each for a reason (the note on issue 28 has them):
ALLOWED="
vm -> vm/autograd
vm/tensor -> vm/autograd
vm/autograd -> vm/trace
vm/autograd -> vm/repl
builtins -> vm/repl
vm/autograd -> builtins
vm/trace -> builtins
vm/jit -> builtins/system
vm/export -> builtins
vm/export -> builtins/system
vm/tensor -> cuda
builtins -> cuda
builtins/system -> mpi
"

# Every quoted include of a C source, as "file<TAB>included name".
files=$(find include vm builtins cuda mpi -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' -o -name '*.cu' \) 2>/dev/null | sort)
files="$files
addsl.c"
edges=$(for f in $files; do
    [ -f "$f" ] || continue
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
        printf '%s\t%s\n' "$f" "$inc"
    done
done | awk -F '\t' -v mode="$mode" -v layers="$LAYERS" -v top="$TOP_FILES" -v allowed="$ALLOWED" '
function exists(p,   line) { if (p in seen) return seen[p]; seen[p] = ((getline line < p) >= 0); close(p); return seen[p] }
function norm(p,   n, parts, out, i, k) {
    n = split(p, parts, "/"); k = 0
    for (i = 1; i <= n; i++) {
        if (parts[i] == "." || parts[i] == "") continue
        if (parts[i] == "..") { if (k > 0) k--; continue }
        out[++k] = parts[i]
    }
    p = ""
    for (i = 1; i <= k; i++) p = p (i > 1 ? "/" : "") out[i]
    return p
}
function dir(p,   d) { d = p; if (sub(/\/[^\/]*$/, "", d)) return d; return "." }
# As the compiler finds it: beside the file, then -Iinclude -Ivm -Ibuiltins and the top.
function resolve(f, inc,   c, i, n, roots) {
    c = norm(dir(f) "/" inc); if (exists(c)) return c
    n = split("include vm builtins .", roots, " ")
    for (i = 1; i <= n; i++) { c = norm(roots[i] "/" inc); if (exists(c)) return c }
    return "?" inc
}
# grammar.h (made by lemon, in the top or the build folder) is the front end:
# the parser belongs to the language core.
function folder(p) {
    if (p ~ /^\?/ || p == "grammar.h") return "vm"
    if (p in topf) return "vm/top"
    return dir(p)
}
BEGIN {
    n = split(layers, L, " "); r = 1
    for (i = 1; i <= n; i++) { if (L[i] == "|") r++; else if (L[i] != "") rank[L[i]] = r }
    n = split(top, T, " ")
    for (i = 1; i <= n; i++) topf[T[i]] = 1
    m = split(allowed, A, "\n")
    for (i = 1; i <= m; i++) if (A[i] != "") ok[A[i]] = 1
}
{
    to = resolve($1, $2); a = folder($1); b = folder(to)
    if (a == b) next
    e = a " -> " b
    cnt[e]++
    if (!((e SUBSEP $1) in fl)) { fl[e SUBSEP $1] = 1; fs[e] = fs[e] " " $1 }
}
END {
    bad = 0
    for (e in cnt) {
        split(e, ab, " -> ")
        up = !(ab[1] in rank) || !(ab[2] in rank) || rank[ab[2]] > rank[ab[1]]
        tag = up ? (e in ok ? "  (allowed upward)" : "  (UPWARD)") : ""
        if (mode == "check") {
            if (up && !(e in ok)) { printf "not allowed: %s  %d:%s\n", e, cnt[e], fs[e]; bad = 1 }
            continue
        }
        printf "%-36s %4d%s%s\n", e, cnt[e], tag, mode == "files" ? "  <-" fs[e] : ""
    }
    if (mode == "check") {
        for (e in ok) if (!(e in cnt)) printf "allowed but gone (drop it from ALLOWED): %s\n", e
        exit bad
    }
}')
status=$?
[ -n "$edges" ] && printf '%s\n' "$edges" | sort
exit $status
