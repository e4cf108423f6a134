#!/bin/sh
# include_graph.sh: the folder-level include graph of the sources, to check the
# layers docs/architecture.md draws against the code (run from the top of the tree).
# Usage: tools/include_graph.sh [-f]   prints "COUNT FROM -> TO" per pair of folders;
# with -f, one "FROM-FILE -> TO-FILE" line per include that crosses folders.
# Quoted includes resolve as the compiler finds them: the including file's own
# folder, then -Iinclude -Ivm -Ibuiltins (AM_CPPFLAGS), then the top.
files=$(git ls-files '*.c' '*.h' '*.cu' '*.def' lexer.re grammar.y 2>/dev/null |
        grep -vE '^(tests|bench|fuzz|samples)/') || exit 1
[ -n "$files" ] || { echo "include_graph.sh: run it at the top of a git checkout" >&2; exit 1; }
for f in $files; do
    d=$(dirname "$f")
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
        for c in "$d/$inc" "include/$inc" "vm/$inc" "builtins/$inc" "$inc"; do
            [ -f "$c" ] || continue
            t=$(realpath -m --relative-to=. "$c")
            [ "$(dirname "$t")" != "$d" ] && echo "$f -> $t"
            break
        done
    done
done | if [ "${1:-}" = -f ]; then sort -u; else
    awk 'function dir(p) { if (!index(p, "/")) return "."; sub(/\/[^\/]*$/, "", p); return p }
         { print dir($1) " -> " dir($3) }' | sort | uniq -c
fi
