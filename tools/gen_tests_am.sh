#!/bin/sh
# gen_tests_am.sh: writes tests/tests_list.am, the test suite's file lists, from
# the tree: automake cannot glob, so every test is found here by folder and
# extension, and each C test program gets its build variables, unless
# tests/tests.am sets that variable by hand (its per-test special flags).
# Usage: tools/gen_tests_am.sh SRCDIR > tests/tests_list.am   (make tests-am)
# tests/cli/tests-am.sh fails when the committed file is stale.
set -e
cd "${1:-.}"

# Files the patterns match that are not tests of their own: scripts and a
# program that tests run, shared shell code; samples/trajectory.ad is listed
# in tests/tests.am under the cairo condition its golden needs.
EXCEPT='tests/api/test_locale.c tests/cli/lib.sh tests/cli/run.sh tests/export/check_c.sh'
EXCEPT="$EXCEPT tests/mpi/common.sh tests/ops/threads_equal.sh samples/trajectory.ad"
excepted() { # FILE
    case $1 in tests/ops/*_script.ad) return 0 ;; esac
    case " $EXCEPT " in *" $1 "*) return 0 ;; esac
    return 1
}

# files DIR/PATTERN...: the matching files, sorted bytewise, without the exceptions.
files() {
    for pat in "$@"; do
        for f in $pat; do
            [ -f "$f" ] && ! excepted "$f" && echo "$f"
        done
    done | LC_ALL=C sort
}
# programs DIR: the C test programs of DIR (test_*.c), by program name.
programs() { files "$1/test_*.c" | sed 's/\.c$//'; }

# list VAR FILE...: VAR = \ then one file a line.
list() {
    var=$1; shift
    if [ $# -eq 0 ]; then echo "$var ="; return; fi
    echo "$var = \\"
    n=$#
    for f in "$@"; do
        n=$((n - 1))
        if [ $n -gt 0 ]; then printf '\t%s \\\n' "$f"; else printf '\t%s\n' "$f"; fi
    done
}

# The headers a test program's source includes by a path from its own
# folder (tap.h, ../api/steps_program.h), for its _SOURCES (and so the dist).
headers() { # PROG
    d=$(dirname "$1")
    sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1.c" | while read -r h; do
        [ -f "$d/$h" ] || continue
        # "tests/unit/../api/x.h" -> "tests/api/x.h"
        echo "$d/$h" | awk -F/ '{ n = 0; for (i = 1; i <= NF; i++) { if ($i == "..") n--; else if ($i != ".") p[++n] = $i }
            s = p[1]; for (i = 2; i <= n; i++) s = s "/" p[i]; print s }'
    done | LC_ALL=C sort -u
}

# hand VAR: whether tests/tests.am sets VAR itself.
hand() { grep -q "^$1[[:space:]]*+*=" tests/tests.am; }

# vars PROG LDADD LDFLAGS [CPPFLAGS]: a program's variables, each unless set
# by hand (an empty LDFLAGS or CPPFLAGS: automake's default, AM_*).
vars() {
    c=$(echo "$1" | sed 's/[^A-Za-z0-9_]/_/g')
    hand "${c}_SOURCES" || echo "${c}_SOURCES = $1.c$(headers "$1" | sed 's/^/ /' | tr -d '\n')"
    [ -z "$4" ] || hand "${c}_CPPFLAGS" || echo "${c}_CPPFLAGS = $4"
    hand "${c}_LDADD" || echo "${c}_LDADD = $2"
    [ -z "$3" ] || hand "${c}_LDFLAGS" || echo "${c}_LDFLAGS = $3"
}

# A test folder this script does not know would go unlisted: stop instead.
KNOWN=' api autograd cli compile cuda export hostile lang limits mpi ops optim traj unit '
NOT_TESTS=' fixtures valgrind '
for d in tests/*/; do
    n=$(basename "$d")
    case "$KNOWN$NOT_TESTS" in *" $n "*) continue ;; esac
    echo "gen_tests_am.sh: tests/$n/ is a folder it does not know: add it to tools/gen_tests_am.sh" >&2
    exit 1
done

core_ldflags='$(AM_LDFLAGS) $(OPENMP_CFLAGS)'

echo '# tests/tests_list.am: written by tools/gen_tests_am.sh (make tests-am); do not edit.'
echo '# Every test of the tree by folder and extension; tests/tests.am has the rest.'
echo
echo '# C unit tests: TAP programs against the core library.'
# shellcheck disable=SC2046
list UNIT_TESTS $(programs tests/unit)
for p in $(programs tests/unit); do vars "$p" libaddsl_core.la "$core_ldflags"; done
echo
echo '# The C API (issue 4): TAP programs linked against the shared library, so'
echo '# only addsl_* symbols are reachable.'
list API_TESTS $(programs tests/api)
for p in $(programs tests/api); do vars "$p" libaddsl.la ''; done
echo
echo '# The CUDA module'"'"'s C tests: exit 77 (SKIP, with the reason) without a device.'
echo 'if WITH_CUDA'
list CUDA_C_TESTS $(programs tests/cuda)
for p in $(programs tests/cuda); do
    vars "$p" 'libaddsl_cuda_kern.la libaddsl_core.la $(CUDA_LIBS)' "$core_ldflags -R\$(CUDA_LIBDIR)" \
        '$(AM_CPPFLAGS) -I$(CUDA_INCDIR) -I$(srcdir)/cuda'
done
echo 'endif'
echo
echo '# Limits a script cannot escape, and regression inputs found by fuzzing (issue 6).'
list LIMIT_TESTS $(files 'tests/limits/*.ad' 'tests/limits/*.sh') $(programs tests/limits)
list LIMIT_C_TESTS $(programs tests/limits)
for p in $(programs tests/limits); do vars "$p" libaddsl_core.la "$core_ldflags"; done
echo
echo '# .ad scripts: run under tests/ad-driver (inline "# expect:" lines).'
list LANG_TESTS $(files 'tests/lang/*.ad')
echo
list OPS_TESTS $(files 'tests/ops/*.ad' 'tests/ops/*.sh')
echo
echo '# Each sample has a .out golden beside it.'
list SAMPLE_TESTS $(files 'samples/*.ad')
echo
echo '# Autograd: the op table sweep, API semantics, formula checks, references.'
list AUTOGRAD_TESTS $(files 'tests/autograd/*.ad' 'tests/autograd/*.sh')
echo
echo '# Trajectory integration steps (issue 5): kernels vs hand cases and the matrix formulation.'
list TRAJ_TESTS $(files 'tests/traj/*.ad')
echo
echo '# compile(): tracing, replay, the passes (issue 14); export_c (issue 15).'
list COMPILE_TESTS $(files 'tests/compile/*.ad' 'tests/compile/*.sh' 'tests/export/*.sh')
echo
echo '# Optimisers and learning-rate schedulers (issue 9).'
list OPTIM_TESTS $(files 'tests/optim/*.ad')
echo
echo '# GPU tensors in the interpreter (issue 5): each script skips (exit 77)'
echo '# where cuda_is_available() is false, so they are listed everywhere.'
list GPU_TESTS $(files 'tests/cuda/*.ad')
echo
list HOSTILE_TESTS $(files 'tests/hostile/*.ad' 'tests/hostile/*.sh')
echo
echo '# MPI (docs/mpi.md): scripts on 2 or 3 ranks through mpirun.'
list MPI_TESTS $(files 'tests/mpi/*.ad' 'tests/mpi/*.sh')
echo
echo '# Command-line tests: shell scripts given the addsl binary as $1.'
list CLI_TESTS $(files 'tests/cli/*.sh' 'tests/api/*.sh')
