#!/usr/bin/env bash
# Builds the seed corpus of the `analyze` fuzz target from files of this machine (nothing
# binary is committed: fuzz/corpus is gitignored). Usage: fuzz/seed-corpus.sh [DIR]
# (default fuzz/corpus/analyze). Safe to re-run; existing corpus entries are kept.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/corpus/analyze}"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Real objects: an executable, a small library, the interpreter (a static-pie-like
# self-relocating object), each also cut short (header only, one page, half).
add_real() {
    local name="$1" src="$2"
    [ -f "$src" ] || { echo "seed: no $src, skipped" >&2; return 0; }
    cp "$src" "$out/$name"
    local len
    len=$(stat -c %s "$src")
    head -c 64 "$src" >"$out/$name.ehdr"
    head -c 4096 "$src" >"$out/$name.page"
    head -c $((len / 2)) "$src" >"$out/$name.half"
    # Without section headers (as sstrip leaves it): goblin then reads everything through
    # the program headers, which reaches more of ldcost's own code.
    python3 - "$src" "$out/$name.nosh" <<'PY' || true
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<Q", d, 0x28, 0)
struct.pack_into("<HHH", d, 0x3C, 0, 0, 0)
open(sys.argv[2], "wb").write(d)
PY
}
add_real true /bin/true
add_real libz "$(readlink -f /lib/x86_64-linux-gnu/libz.so.1 2>/dev/null || echo /nonexistent)"
add_real ldso "$(readlink -f /lib64/ld-linux-x86-64.so.2 2>/dev/null || echo /nonexistent)"

# Tiny objects (a few KiB: the fuzzer mutates them far faster than real libraries), built
# with cc when it is there: a shared library with PLT, GOT, TLS, IFUNC and init_array
# entries, the same packed with DT_RELR, a static non-PIE and a static-pie executable.
if command -v cc >/dev/null 2>&1; then
    cat >"$work/lib.c" <<'C'
extern int ext_data;
extern int ext_fn(int);
__thread int tls_var;
static int impl(void) { return 1; }
static void *resolve(void) { return (void *)impl; }
int ifn(void) __attribute__((ifunc("resolve")));
int *ptrs[] = { &ext_data, &ext_data + 1 };
__attribute__((constructor)) static void init(void) { tls_var = 2; }
int api(int x) { return ext_fn(x) + ext_data + tls_var + ifn(); }
C
    cat >"$work/start.c" <<'C'
static int table[4];
int *ptr = &table[1];
static int impl(void) { return 1; }
static void *resolve(void) { return (void *)impl; }
int ifn(void) __attribute__((ifunc("resolve")));
void _start(void) { for (;;) { __asm__ volatile("" ::"r"(ptr), "r"(ifn())); } }
C
    build() { cc "$@" 2>/dev/null || echo "seed: cc $* failed, skipped" >&2; }
    build -O1 -fPIC -shared -nostdlib -o "$out/tiny.so" "$work/lib.c"
    build -O1 -fPIC -shared -nostdlib -Wl,-z,now -o "$out/tiny-now.so" "$work/lib.c"
    build -O1 -fPIC -shared -nostdlib -Wl,-z,pack-relative-relocs -o "$out/tiny-relr.so" "$work/lib.c"
    build -O1 -static -nostdlib -o "$out/tiny-static" "$work/start.c"
    build -O1 -static-pie -nostdlib -fPIE -o "$out/tiny-static-pie" "$work/start.c"
    build -O1 -fPIE -pie -nostdlib -Wl,--dynamic-linker=/lib64/ld-linux-x86-64.so.2 \
        -o "$out/tiny-pie" "$work/start.c"
    # The same library marked aarch64 (e_machine 183): the other machine's relocation names.
    if [ -f "$out/tiny.so" ]; then
        cp "$out/tiny.so" "$out/tiny-aarch64.so"
        printf '\xb7\x00' | dd of="$out/tiny-aarch64.so" bs=1 seek=18 conv=notrunc status=none
    fi
else
    echo "seed: no cc, tiny objects skipped" >&2
fi
# Hand-made: a minimal shared object whose only PT_LOAD sits at the top of the address space
# (vaddr 2^64 - 8192) with its dynamic section, a DT_RELA table ending exactly at 2^64 and a
# DT_JMPREL table: address arithmetic near 2^64 (found src/elf/reloc.rs:187, docs/fuzzing.md).
python3 - "$out/top-of-address-space.so" <<'PY' || echo "seed: no python3, hand-made seeds skipped" >&2
import struct, sys
V = 0xFFFF_FFFF_FFFF_E000
d = bytearray(0x2000)
d[0:7] = b"\x7fELF\x02\x01\x01"
struct.pack_into("<HHIQQQIHHHHHH", d, 16, 3, 62, 1, 0, 64, 0, 0, 64, 56, 2, 64, 0, 0)
for i, (t, fl, off, va, sz) in enumerate([(1, 4, 0, V, 0x2000), (2, 6, 0x400, V + 0x400, 0x100)]):
    struct.pack_into("<IIQQQQQQ", d, 64 + 56 * i, t, fl, off, va, va, sz, sz, 0x1000)
dyn = [(5, V + 0x600), (10, 1), (7, V + 0x1000), (8, 0x1000), (9, 24), (23, V + 0x1800),
       (2, 24), (20, 7), (0, 0)]
for i, (t, v) in enumerate(dyn):
    struct.pack_into("<QQ", d, 0x400 + 16 * i, t, v)
open(sys.argv[1], "wb").write(d)
PY
ls -l "$out" >&2
