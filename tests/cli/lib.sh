# shellcheck shell=sh
# lib.sh: sourced by the tests/cli scripts that compare outputs, so that each of
# them checks by the same rule.
# Usage, after addsl= and fail=0:  . "$(dirname "$0")/lib.sh"

# make_tmp: $tmp, a folder removed when the script exits.
make_tmp() {
    tmp=$(mktemp -d) || exit 99
    trap 'rm -rf "$tmp"' EXIT
}

# check NAME WANT GOT: compares one output (fail is the sourcing script's).
# shellcheck disable=SC2034
check() {
    if [ "$3" != "$2" ]; then
        echo "FAIL: $1: expected '$2', got '$3'"
        fail=1
    fi
}
