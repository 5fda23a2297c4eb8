#!/bin/sh
# visibility: libshapes.so rebuilt with -fvisibility=hidden (only its API exported). Its
# 3,000 methods and the vtables that point at them stop being interposable: 12,000 symbolic
# relocations (each a lookup through the whole scope) become relative relocations.
# Expected: fewer lookups, start-up faster.
. "$(dirname "$0")/../common.sh"

methods=${METHODS:-3000}
vtables=${VTABLES:-4}
awk -v m="$methods" -v t="$vtables" 'BEGIN {
    print "#define API __attribute__((visibility(\"default\")))";
    for (i = 0; i < m; i++) printf "int _ZN6shapes5Shape4areaE%dv(int x) { return x * %d; }\n", i, i;
    for (v = 0; v < t; v++) {
        printf "int (*const _ZTVN6shapes%dE[])(int) = {\n", v;
        for (i = 0; i < m; i++) printf "  _ZN6shapes5Shape4areaE%dv,\n", i;
        print "};";
    }
    print "API int shapes_area(int i) { return _ZTVN6shapes0E[i](2); }";
}' > shapes.c
cat > main.c <<'C'
#include <math.h>
int shapes_area(int);
int main(int argc, char **argv) {
    (void)argv;
    return argc > 99 ? shapes_area(0) + (int)sqrt(argc) : 0;
}
C
mkdir default hidden
"$CC" -O2 -fPIC -shared -o default/libshapes.so shapes.c
"$CC" -O2 -fPIC -shared -fvisibility=hidden -o hidden/libshapes.so shapes.c
for v in default hidden; do
    "$CC" -O2 -o "$v/app" main.c -Wl,--no-as-needed -lm -L"$v" -lshapes -Wl,-rpath,"$work/$v"
done
"$LDCOST" compare ./default/app ./hidden/app -n "${RUNS:-10}" "$@"
