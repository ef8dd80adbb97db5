# tests/oci/engine.sh — what the engine suites (tests/suites/engine-*.sh)
# share: their result lines, the whole-suite skip, and the side-by-side
# check of one scenario under runc and under fluebox.
#
# engine_suite NAME WHAT — results are "ok - NAME: ..."; skip_all says WHAT
#   is skipped and why, and ends the suite.
# same NAME KEY [WANT] — R[KEY:runc] and R[KEY:fluebox] (an associative
#   array R the suite fills) are equal, and equal WANT when it is given.

engine_suite() {
    ENGINE_NAME=$1
    ENGINE_WHAT=$2
}
ok() { echo "ok - $ENGINE_NAME: $1"; }
fail() { echo "not ok - $ENGINE_NAME: $1${2:+: $2}"; }
skip_all() { echo "ok - $ENGINE_NAME: $ENGINE_WHAT # SKIP $1"; echo "# end of suite"; exit 0; }

same() {
    local name=$1 key=$2 want=${3-}
    local a=${R[$key:runc]} b=${R[$key:fluebox]}
    if [ "$a" = "$b" ] && { [ -z "$want" ] || [ "$a" = "$want" ]; }; then
        ok "$name (runc and fluebox: $a)"
    else
        fail "$name" "${want:+want $want; }runc: $a; fluebox: $b"
    fi
}
