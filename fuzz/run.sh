#!/bin/sh
# run.sh: runs each libFuzzer target built by build.sh for a given time, one at a time.
# Usage: run.sh SRCDIR BUILDDIR SECONDS [TARGET...]   (default: every target)
# With FUZZ_RUNS=N in the environment each target stops after N inputs drawn from the seed
# FUZZ_SEED (default 1) or at SECONDS, whichever comes first: on one build and one machine such
# a run takes the same inputs each time, so CI finds what a run before landing found, not a
# new crash by chance. Without it each target explores for SECONDS from a random seed.
# New corpus entries and crash inputs stay under BUILDDIR/fuzz/; a crash fails the run.
srcdir=${1:?usage: run.sh SRCDIR BUILDDIR SECONDS [TARGET...]}
builddir=${2:?}
secs=${3:-60}
shift 3
[ $# -gt 0 ] || set -- compile program npy op opcall api
out=$builddir/fuzz
"$(dirname "$0")/seeds.sh" "$srcdir" "$out/seeds"
status=0
limits=
[ -n "${FUZZ_RUNS:-}" ] && limits="-runs=$FUZZ_RUNS -seed=${FUZZ_SEED:-1}"
for t in "$@"; do
    mkdir -p "$out/corpus/$t" "$out/crashes/$t"
    dict=
    case $t in
    npy | api) ;;
    opcall) # the names of every op and builtin and their parameters, as the target enumerates them
        FUZZ_OPCALL_DICT="$out/opcall.dict" FUZZ_OPCALL_SEEDS="$out/seeds/opcall" "$out/fuzz_$t" -runs=0 \
            > /dev/null 2>&1
        dict=-dict="$out/opcall.dict" ;;
    *) dict=-dict="$srcdir/fuzz/addsl.dict" ;;
    esac
    echo "fuzz_$t: ${secs}s${FUZZ_RUNS:+ or $FUZZ_RUNS inputs from seed ${FUZZ_SEED:-1}}"
    # Leak checks stay on; rss and per-input limits catch runaway scripts the sandbox missed.
    if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$out/fuzz_$t" -max_total_time="$secs" $limits -timeout=20 -rss_limit_mb=2048 -max_len=4096 \
            -print_final_stats=1 $dict -artifact_prefix="$out/crashes/$t/" \
            "$out/corpus/$t" "$out/seeds/$t" > "$out/fuzz_$t.log" 2>&1; then
        echo "fuzz_$t: FAILED (see $out/fuzz_$t.log and $out/crashes/$t/)"
        # The report itself, so that a CI log shows what crashed without the machine it ran on.
        sed -n '/^==[0-9]*==ERROR\|runtime error\|^SUMMARY\|ALARM\|out-of-memory\|deadly signal/,$p' \
            "$out/fuzz_$t.log" | head -60
        for c in "$out/crashes/$t"/*; do
            [ -f "$c" ] && { echo "crash input $c:"; od -c "$c" | head -20; }
        done
        status=1
    fi
    grep -E '^#[0-9]+.*(DONE|cov:)' "$out/fuzz_$t.log" | tail -1
    grep -E 'stat::(number_of_executed_units|average_exec_per_sec)' "$out/fuzz_$t.log"
done
exit $status
