#!/bin/sh
# bind-now: the same program and libraries linked with and without `-z now`. The program
# references 3,000 functions of libapi.so (PLT slots it calls only with an argument), and
# 24 plugin libraries each call eight helpers through their PLT in a destructor. Expected:
# start-up slower with -z now (3,000 PLT slots become start-up lookups), and each forked
# child that exits (--fork --child exit) faster: lazily, every child binds `exit` (main
# ends in exit(0)) and the 24 × 8 helpers again, walking the scope's hash tables each time.
. "$(dirname "$0")/../common.sh"

funcs=${FUNCS:-3000}
plugins=${PLUGINS:-24}
awk -v n="$funcs" 'BEGIN { for (i = 0; i < n; i++) printf "int api_%d(int x) { return x + %d; }\n", i, i }' > api.c
awk -v n="$funcs" 'BEGIN {
    for (i = 0; i < n; i++) printf "int api_%d(int);\n", i;
    print "#include <stdlib.h>";
    print "int main(int argc, char **argv) {\n    (void)argv;\n    int s = 0;\n    if (argc > 1) {";
    for (i = 0; i < n; i++) printf "        s += api_%d(argc);\n", i;
    print "    }\n    exit(s & 0);\n}";
}' > main.c
# Eight helpers per plugin destructor: 24 × 8 lazy bindings in every child that exits.
awk 'BEGIN { for (i = 0; i < 8; i++) printf "int helper%d(int i) { return i + %d; }\n", i, i }' > helper.c
i=0
while [ "$i" -lt "$plugins" ]; do
    awk -v p="$i" 'BEGIN {
        for (h = 0; h < 8; h++) printf "int helper%d(int);\n", h;
        printf "int plugin_%d(void) { return 0; }\n", p;
        printf "volatile int sink;\n__attribute__((destructor)) static void fini(void) {\n";
        for (h = 0; h < 8; h++) printf "    sink += helper%d(%d);\n", h, p;
        print "}";
    }' > "plugin$i.c"
    i=$((i + 1))
done
for mode in lazy now; do
    mkdir "$mode"
    flags=""
    [ "$mode" = now ] && flags="-Wl,-z,now"
    (
        cd "$mode"
        lib helper ../helper.c $flags
        lib api ../api.c $flags
        libs=""
        i=0
        while [ "$i" -lt "$plugins" ]; do
            lib "plugin$i" "../plugin$i.c" -L. -lhelper -Wl,-rpath,"$work/$mode" $flags
            libs="$libs -lplugin$i"
            i=$((i + 1))
        done
        # Link order = lookup scope: the plugins, then libapi and libhelper, then libc.
        "$CC" -O2 -o app ../main.c -L. -Wl,--no-as-needed $libs -lapi -lhelper -Wl,-rpath,"$work/$mode" $flags
    )
done
"$LDCOST" compare ./lazy/app ./now/app -n "${RUNS:-10}" --fork "${FORKS:-1000}" --child exit "$@"
