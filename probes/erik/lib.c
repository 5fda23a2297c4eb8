/* One tiny shared library of ldcost's erik series (seed 004): a function, initialised data, a
 * bss array (an anonymous mapping of its own; the object spans 16 pages) and a pointer in
 * .data.rel.ro that ld.so relocates, so that it maps like a real small library:
 * r-- (headers, symbols, relocations), r-x (text), r-- (eh_frame), r-- RELRO, rw- (data,
 * .got.plt) and anonymous bss. Built with: cc -O2 -fPIC -shared -o liberik.so lib.c */
int erik_data = 1;
char erik_bss[47104];
int *const erik_relro = &erik_data;

int erik_fn(int i)
{
    erik_bss[i & 32767] = (char)i;
    return i + *erik_relro;
}
