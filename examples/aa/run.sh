#!/bin/sh
# aa: a program compared with a byte-identical copy of itself. Expected: "no significant
# change" (the statistics' false-alarm check on a real program; benches/compare_aa.rs runs
# twenty of these).
. "$(dirname "$0")/../common.sh"

cat > main.c <<'C'
#include <math.h>
#include <stdio.h>
int main(int argc, char **argv) {
    (void)argv;
    if (argc > 99) printf("%f\n", sqrt(argc));
    return 0;
}
C
"$CC" -O2 -o app main.c -lm
cp app app-copy
"$LDCOST" compare ./app ./app-copy -n "${RUNS:-10}" "$@"
