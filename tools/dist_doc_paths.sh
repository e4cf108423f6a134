#!/bin/sh
# dist_doc_paths.sh: checks that 'make dist' ships every file the documentation names.
# Usage: dist_doc_paths.sh SRCDIR DISTDIR [BUILT-FILE...] (Makefile.am's dist-hook).
# A path in backquotes or a Markdown link in README.md, HACKING.md, docs/*.md or bench/*.md, taken
# from the top of the tree or from the page's own directory, that is a source file must
# be in DISTDIR too. In a git checkout the sources are the tracked files (but git's
# own); elsewhere (a tarball) every file in SRCDIR but the BUILT-FILEs (programs,
# configure's outputs) and objects that an in-tree build leaves there. Prints each
# file missing and exits 1 when one is.
srcdir=${1:?usage: $0 SRCDIR DISTDIR [BUILT-FILE...]}
distdir=${2:?usage: $0 SRCDIR DISTDIR [BUILT-FILE...]}
shift 2
built=" $* Makefile config.status config.log libtool configure~ "
tracked=
if top=$(git -C "$srcdir" rev-parse --show-toplevel 2>/dev/null) && [ "$(cd "$top" && pwd -P)" = "$(cd "$srcdir" && pwd -P)" ]; then
    tracked=$(mktemp) || exit 1
    trap 'rm -f "$tracked"' EXIT
    git -C "$srcdir" ls-files > "$tracked" || exit 1
fi
source_file() { # PATH (relative to SRCDIR)
    [ -f "$srcdir/$1" ] || return 1
    case $1 in .git*) return 1 ;; esac
    if [ -n "$tracked" ]; then grep -qxF "$1" "$tracked"; return; fi
    case $1 in *.o | *.lo | *.la | *.so | *.a | *.log | *.trs) return 1 ;; esac
    case $built in *" $1 "*) return 1 ;; esac
}
missing=0
checked=0
# The pages name files as patterns too (vm/ast.[ch], tests/lang/*.ad): they
# are expanded in the source tree.
distdir=$(cd "$distdir" && pwd) && cd "$srcdir" || exit 1
srcdir=.
for page in "$srcdir"/README.md "$srcdir"/HACKING.md "$srcdir"/docs/*.md "$srcdir"/bench/*.md; do
    [ -f "$page" ] || continue
    rel_page=${page#"$srcdir"/}
    page_dir=$(dirname "$rel_page")
    # `path`, `path:line` and `path (...)` in backquotes; ](path#anchor) links.
    for name in $( (grep -oE '`[^`]+`' "$page" | tr -d '`'
                    grep -oE '\]\([^) ]+\)' "$page" | sed 's/^](//; s/)$//') |
                  sed 's/#.*//; s/:[0-9][0-9,:-]*$//; s|^\./||' | sort -u); do
        case $name in /* | *'$'* | '~'* | *://* | -* | '') continue ;; esac
        for f in $name $page_dir/$name; do
            f=${f#./}
            source_file "$f" || continue
            checked=$((checked + 1))
            if [ ! -e "$distdir/$f" ]; then
                echo "dist: $rel_page names $f, which the tarball lacks (EXTRA_DIST)" >&2
                missing=1
            fi
            break
        done
    done
done
[ $missing = 0 ] && echo "dist: the $checked files the documentation names are all in the tarball"
exit $missing
