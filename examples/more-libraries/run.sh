#!/bin/sh
# more-libraries: HEAD links four more libraries than BASE; one of them, libwidgets.so, is
# generated C++-style code: 2,000 exported methods and 5 "vtables" pointing at them (10,000
# symbolic relocations, each a symbol lookup at start-up). Expected: start-up CPU slower, and
# the attribution puts most of the delta on libwidgets.so's relocation and lookups.
. "$(dirname "$0")/../common.sh"

methods=${METHODS:-2000}
vtables=${VTABLES:-5}
cat > base.c <<'C'
int base_value(void) { return 1; }
C
for l in log json net; do
    printf 'static int n;\n__attribute__((constructor)) static void init_%s(void) { n = 1; }\nint %s_value(void) { return n; }\n' "$l" "$l" > "$l.c"
done
# The generated library: what a C++ class hierarchy compiles to (exported methods, vtables
# of pointers to them in .data.rel.ro: R_X86_64_64 against interposable symbols).
awk -v m="$methods" -v t="$vtables" 'BEGIN {
    for (i = 0; i < m; i++) printf "int _ZN7widgets6Widget6methodE%dv(int x) { return x + %d; }\n", i, i;
    for (v = 0; v < t; v++) {
        printf "int (*const _ZTVN7widgets%dE[])(int) = {\n", v;
        for (i = 0; i < m; i++) printf "  _ZN7widgets6Widget6methodE%dv,\n", i;
        print "};";
    }
    print "int widgets_value(int i) { return _ZTVN7widgets0E[i](0); }";
}' > widgets.c
lib base base.c
for l in log json net; do lib "$l" "$l.c"; done
lib widgets widgets.c
cat > base_main.c <<'C'
int base_value(void);
int main(void) { return base_value() - 1; }
C
cat > head_main.c <<'C'
int base_value(void), log_value(void), json_value(void), net_value(void), widgets_value(int);
int main(int argc, char **argv) {
    (void)argv;
    if (argc > 99) return log_value() + json_value() + net_value() + widgets_value(0);
    return base_value() - 1;
}
C
"$CC" -O2 -o app-base base_main.c -L. -lbase -Wl,-rpath,"$work"
"$CC" -O2 -o app-head head_main.c -L. -lbase -llog -ljson -lnet -lwidgets -Wl,-rpath,"$work"
"$LDCOST" compare ./app-base ./app-head -n "${RUNS:-10}" "$@"
