# Shared by the examples' run.sh scripts (sourced, not run).
#
# LDCOST: the ldcost binary (default: `ldcost` on PATH, else this repository's
#         target/release/ldcost). CC: the C compiler (default cc). KEEP=1 keeps the build
#         directory; WORK=DIR builds in DIR (kept). RUNS=N: runs per side (default 10).
#         Every argument of run.sh is passed on to `ldcost compare`, after the
#         example's own, so `./run.sh --format json --json out.json` works.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
if [ -z "${LDCOST:-}" ]; then
    if command -v ldcost >/dev/null 2>&1; then
        LDCOST=ldcost
    elif [ -x "$repo/target/release/ldcost" ]; then
        LDCOST="$repo/target/release/ldcost"
    else
        echo "run.sh: no ldcost: put it on PATH, set LDCOST, or run cargo build --release" >&2
        exit 2
    fi
fi
CC=${CC:-cc}
if [ -n "${WORK:-}" ]; then
    mkdir -p "$WORK"
    work=$(cd "$WORK" && pwd)
else
    work=$(mktemp -d /tmp/ldcost-example.XXXXXX)
    if [ "${KEEP:-0}" != 1 ]; then
        trap 'rm -rf "$work"' EXIT
    fi
fi
cd "$work"

# lib NAME SOURCE [cc flags...]: builds $work/libNAME.so from SOURCE (a file in $work).
lib() {
    name=$1 src=$2
    shift 2
    "$CC" -O2 -fPIC -shared -o "lib$name.so" "$src" "$@"
}
