#!/usr/bin/env python3
"""classify_perf_script.py: an independent classifier of `perf script` samples into ldcost's
cost taxonomy, used as an oracle by tests/sampling_proofs.rs.

Independence. This file was written from docs/taxonomy.md (its table and its section "How a
stack is classified") ONLY. Its author did not read or import src/attribute/categories.rs or any
other part of ldcost's classifier: where the prose is ambiguous, the choice made here is written
down beside the rule (search for "CHOICE"), so a disagreement with ldcost points at either a
bug or an ambiguity of the document, never at shared code.

Input (stdin): the text of

    perf script --show-task-events -F pid,tid,time,ip,sym,dso --ns

on a recording made with `perf record -a -g -k mono` (so times are CLOCK_MONOTONIC). Each sample
is a header line `PID/TID SECONDS.NANOS:` followed by one line per frame, leaf first:
`ADDRESS SYMBOL (DSO)`, kernel frames before user frames. `--show-task-events` adds
`PERF_RECORD_FORK(pid:tid):(ppid:ptid)` lines, from which the process tree is followed.

Options:
    --root-pid PID          keep only samples of PID and of the processes it (transitively)
                            forks, as PERF_RECORD_FORK lines show them (a pid later created by
                            a process outside the tree leaves it: pid reuse)
    --window START END      keep only samples whose time, in ns, is in [START, END]
    --explain N             print the N most frequent (category, stack) pairs to stderr

Output (stdout): one JSON object {category: samples}, category names as in docs/taxonomy.md's
first column, plus "_kept" and "_dropped" (samples kept and filtered out).

How one stack is classified (docs/taxonomy.md, "How a stack is classified"):
  1. Kernel frames, leaf first: the innermost frame that a rule names decides (ldcost's own
     traps, ptrace stops and the sampler's side-band records are `instrumentation`), except that
     teardown frames, on-behalf (mapping and file syscall) frames and in-fork frames look at the
     frames outside them (see kernel_category). Faults are their own category whoever took them;
     interrupt entry frames are kernel: other.
  2. Otherwise the user frames decide (see user_category): the innermost *enclosing* frame
     (lazy binding, initializers, exit), else the innermost *named* frame, else any frame in
     ld.so's object (ld.so: other), else application. For a kernel sample an application answer
     becomes kernel: other.
  3. Nothing usable: unknown.

Run `classify_perf_script.py --self-test` to check the rules on hand-written stacks.
"""

import collections
import json
import re
import sys

# ---------------------------------------------------------------------------------------------
# Names. "Names are compared after removing what perf and compilers add (+0x1f offsets, @plt,
# @@GLIBC_2.2.5, .isra.0/.constprop.0/.part.0/.cold, glibc's __GI_ prefix)."

_SUFFIX = re.compile(r"\.(isra|constprop|part|cold|lto_priv|llvm)(\.\d+)?$")


def normalize(name):
    name = name.strip()
    name = re.sub(r"\+0x[0-9a-fA-F]+$", "", name)
    name = name.split("@", 1)[0]
    while True:
        stripped = _SUFFIX.sub("", name)
        if stripped == name:
            break
        name = stripped
    if name.startswith("__GI_"):
        name = name[len("__GI_"):]
    return name


# Syscall entry points as the kernel names them: __x64_sys_mmap, __do_sys_mmap, __se_sys_mmap,
# ksys_mmap_pgoff. Returns the syscall's name, or None.
_SYSCALL = re.compile(r"^(?:__x64_sys_|__ia32_sys_|__do_sys_|__se_sys_|__arm64_sys_|sys_)(\w+)$")


def syscall_of(name):
    m = _SYSCALL.match(name)
    return m.group(1) if m else None


def is_ldso(dso):
    base = dso.rsplit("/", 1)[-1] if dso else ""
    return base.startswith("ld-linux") or base.startswith("ld-musl")


# ---------------------------------------------------------------------------------------------
# Kernel rules, from the table's "what frames" column.

KERNEL_NAMED = {}


def _kernel(category, names):
    for n in names:
        KERNEL_NAMED[n] = category


_kernel("page_table_copy", [
    "copy_page_range", "copy_p4d_range", "copy_pud_range", "copy_pmd_range", "copy_pte_range",
    "copy_present_pte", "copy_present_ptes", "copy_huge_pmd",
])
_kernel("vma_dup", ["dup_mmap", "dup_mm", "copy_mm", "anon_vma_fork", "__mt_dup"])
_kernel("fork_other", [
    "copy_process", "kernel_clone", "ret_from_fork", "ret_from_fork_asm", "schedule_tail",
])
_kernel("cow_fault", [
    "do_wp_page", "wp_page_copy", "wp_page_reuse", "do_cow_fault", "do_huge_pmd_wp_page",
])
_kernel("file_fault", [
    "do_fault", "do_read_fault", "do_shared_fault", "filemap_fault", "filemap_map_pages",
    "do_fault_around", "next_uptodate_folio", "wp_page_shared",
])
_kernel("anon_fault", [
    "do_anonymous_page", "do_swap_page", "handle_mm_fault", "__handle_mm_fault",
    "do_user_addr_fault", "exc_page_fault", "asm_exc_page_fault",
])
# CHOICE: do_group_exit is exit_group's own implementation (it calls do_exit).
_kernel("exit_teardown", ["do_exit", "exit_mm", "do_group_exit"])
_kernel("wait", [
    "do_wait", "__do_wait", "kernel_wait4", "kernel_waitid", "wait_consider_task",
    "wait_task_zombie",
])
_kernel("exec_kernel", [
    "do_execveat_common", "do_execve", "do_execveat", "bprm_execve", "load_elf_binary",
    "begin_new_exec", "exec_mmap", "setup_arg_pages", "copy_strings", "load_elf_interp",
    "elf_map", "elf_load", "create_elf_tables",
])

SYSCALL_CATEGORY = {
    "clone": "fork_other", "clone3": "fork_other", "fork": "fork_other", "vfork": "fork_other",
    "exit": "exit_teardown", "exit_group": "exit_teardown",
    "wait4": "wait", "waitid": "wait", "waitpid": "wait",
    "execve": "exec_kernel", "execveat": "exec_kernel",
}

# Teardown frames: their meaning depends on what is outside them.
TEARDOWN = {
    "unmap_vmas", "unmap_page_range", "free_pgtables", "tlb_finish_mmu", "release_pages",
    "exit_mmap", "mmput", "__mmput",
}

# On-behalf syscalls (and their internals named in the prose).
ON_BEHALF_SYSCALLS = {
    "mmap", "mprotect", "munmap", "mremap", "brk", "openat", "read", "pread64", "fstat",
    "newfstat", "newfstatat", "close", "access", "faccessat", "faccessat2", "readlink",
    "readlinkat",
}
ON_BEHALF_INTERNALS = {
    "do_mmap", "__mmap_region", "mmap_region", "vm_mmap_pgoff", "ksys_mmap_pgoff",
    "do_mprotect_pkey", "__vm_munmap", "do_vmi_munmap", "do_sys_openat2", "ksys_read",
}

# Interrupt entry frames: kernel: other, even when they interrupt a fork.
INTERRUPT_PREFIXES = ("asm_sysvec_", "sysvec_", "asm_common_interrupt", "common_interrupt")
INTERRUPT_NAMES = {
    "__irq_exit_rcu", "irq_exit_rcu", "handle_softirqs", "__do_softirq", "do_softirq",
    "run_ksoftirqd",
}

# ldcost's own instrumentation (the table's `instrumentation` row): the breakpoint and single-step
# traps, every ptrace stop, and the sampler's side-band records, which the kernel writes from
# inside the target's own mmap, exec and fork. A perf record of a shell loop has no ptrace stop,
# but perf record asks for the same side-band records, so its samples show them too.
# CHOICE: the row says ldcost's sampler; the records are the same whoever asked for them, and
# the doc's precedence says a fixed rule, innermost, beats exec's and exit's frames outside it
# (`begin_new_exec -> perf_event_exec` is instrumentation, not exec).
INSTRUMENTATION = {
    "asm_exc_int3", "exc_int3", "do_int3", "do_int3_user", "asm_exc_debug", "exc_debug",
    "exc_debug_user", "noist_exc_debug", "ptrace_stop", "ptrace_notify", "ptrace_do_notify",
    "ptrace_signal", "ptrace_event", "ptrace_trap_notify", "arch_ptrace_stop",
    "perf_event_mmap", "perf_event_mmap_output", "perf_event_exec", "perf_event_comm",
    "perf_event_comm_output", "perf_event_task", "perf_event_task_output", "perf_event_fork",
    "perf_event_namespaces", "perf_event_namespaces_output", "perf_iterate_sb",
    "perf_iterate_ctx",
}

# In-fork frames: VMA duplication only under dup_mmap, otherwise transparent.
IN_FORK_NAMES = {"vm_area_dup", "anon_vma_clone"}


def is_teardown(n):
    return n in TEARDOWN or n.startswith("zap_")


def is_on_behalf(n):
    return syscall_of(n) in ON_BEHALF_SYSCALLS or n in ON_BEHALF_INTERNALS


def is_interrupt(n):
    return n in INTERRUPT_NAMES or n.startswith(INTERRUPT_PREFIXES)


def is_in_fork(n):
    return n in IN_FORK_NAMES or n.startswith("mas_") or n.startswith("mt_")


def is_exec(n):
    return KERNEL_NAMED.get(n) == "exec_kernel" or SYSCALL_CATEGORY.get(syscall_of(n)) == "exec_kernel"


def is_exit(n):
    return KERNEL_NAMED.get(n) == "exit_teardown" or syscall_of(n) in ("exit", "exit_group")


def on_behalf(user):
    """An on-behalf frame outside exec: ld.so's category when the user side is ld.so, otherwise
    kernel: other (the program's own syscall).

    CHOICE: "the user side is ld.so" = the user frames classify (step 2) to an ld.so category
    (mapping, relocation, symbol lookup, lazy binding, TLS, initializers, other); ld.so's
    anonymous syscall wrappers (an ld.so frame no rule names, i.e. "ld.so: other") count as
    search & mapping, as the prose says."""
    u = user_category(user)
    if u == "ldso_other":
        return "ldso_mapping"
    if u in ("ldso_mapping", "ldso_relocation", "symbol_lookup", "lazy_binding", "tls_setup",
             "initializers", "cpu_features"):
        return u
    return "kernel_other"


def kernel_category(kernel, user):
    """Step 1: the innermost kernel frame a rule names decides; None when no rule does."""
    names = [normalize(f[0]) for f in kernel]
    for i, n in enumerate(names):
        outer = names[i + 1:]
        if n in INSTRUMENTATION:
            return "instrumentation"
        if is_interrupt(n):
            return "kernel_other"
        if is_in_fork(n):
            if "dup_mmap" in outer:
                return "vma_dup"
            continue  # transparent: the next rule outwards decides
        if is_teardown(n):
            # Who asked for the unmapping: the first context frame outwards.
            for o in outer:
                if is_exec(o):
                    return "exec_kernel"
                if is_exit(o):
                    return "exit_teardown"
                if is_on_behalf(o):
                    return on_behalf(user)
            return "exit_teardown"  # no context: their usual caller
        if is_on_behalf(n):
            if any(is_exec(o) for o in outer):
                return "exec_kernel"
            return on_behalf(user)
        if n in KERNEL_NAMED:
            return KERNEL_NAMED[n]
        sc = syscall_of(n)
        if sc in SYSCALL_CATEGORY:
            return SYSCALL_CATEGORY[sc]
    return None


# ---------------------------------------------------------------------------------------------
# User rules.

ENCLOSING = {
    "_dl_fixup": "lazy_binding", "_dl_profile_fixup": "lazy_binding",
    "_dl_init": "initializers", "call_init": "initializers", "_init": "initializers",
    "__libc_csu_init": "initializers", "frame_dummy": "initializers",
    # CHOICE: the table says libc's exit and _exit "and what they run" are exit teardown, so
    # they enclose like __run_exit_handlers and _dl_fini.
    "__run_exit_handlers": "exit_teardown", "_dl_fini": "exit_teardown",
    "exit": "exit_teardown", "_exit": "exit_teardown",
}


def enclosing(n):
    if n.startswith("_dl_runtime_resolve"):
        return "lazy_binding"
    if n.startswith("_GLOBAL__sub_I_"):
        return "initializers"
    return ENCLOSING.get(n)


USER_NAMED = {}


def _user(category, names):
    for n in names:
        USER_NAMED[n] = category


_user("ldso_mapping", [
    "_dl_map_segments", "_dl_new_object", "open_verify", "open_path", "_dl_load_cache_lookup",
    "_dl_init_paths", "_dl_important_hwcaps", "dlopen",
])
_user("ldso_relocation", ["_dl_relocate_object", "_dl_protect_relro", "_dl_relocate_static_pie"])
_user("symbol_lookup", [
    "do_lookup_x", "_dl_lookup_symbol_x", "check_match", "_dl_name_match_p", "dl_new_hash",
    "_dl_elf_hash", "do_lookup_unique", "dlsym",
])
_user("tls_setup", [
    "init_tls", "__libc_setup_tls", "_dl_determine_tlsoffset", "allocate_dtv", "__tls_get_addr",
    "_dl_update_slotinfo",
])
_user("ldso_other", ["_dl_start", "_dl_sysdep_start", "dl_main", "_dl_start_user"])
_user("cpu_features", [
    "init_cpu_features", "_dl_x86_init_cpu_features", "__x86_cpu_features",
    "__x86_cpu_features_ifunc", "__init_cpu_features", "dl_init_cacheinfo", "init_cacheinfo",
    "handle_intel", "intel_check_word", "handle_amd", "handle_zhaoxin", "get_common_cache_info",
    "get_common_indices", "get_extended_indices", "update_active", "update_usable",
    "get_cet_status", "get_midr_from_mcpu",
])
_user("fork_other", ["_Fork", "__libc_fork", "__run_fork_handlers"])
# CHOICE: the libc wrappers of wait4/waitid/waitpid, under their glibc names too.
_user("wait", ["wait", "wait4", "waitpid", "waitid", "__wait", "__wait4", "__waitpid",
               "__waitid", "__libc_wait"])


def named(n):
    if n.startswith("_dl_map_object"):
        return "ldso_mapping"
    if n.startswith("elf_dynamic_do_Rel") or n.startswith("elf_machine_"):
        return "ldso_relocation"
    if n.startswith("_dl_allocate_tls") or n.startswith("_dl_tlsdesc_"):
        return "tls_setup"
    return USER_NAMED.get(n)


def usable(frame):
    name, dso = frame
    return not (normalize(name) in ("", "[unknown]") and dso in ("", "[unknown]"))


def user_category(user):
    """Step 2 for user frames (leaf first): enclosing, then named, then ld.so, then application;
    None when no user frame is usable."""
    names = [normalize(f[0]) for f in user]
    for n in names:
        c = enclosing(n)
        if c:
            return c
    for n in names:
        c = named(n)
        if c:
            return c
    if any(is_ldso(dso) for _, dso in user):
        return "ldso_other"
    if any(usable(f) for f in user):
        return "application"
    return None


def classify(frames):
    """frames: [(symbol, dso, is_kernel)], leaf first. Returns a category name."""
    kernel = [(s, d) for s, d, k in frames if k]
    user = [(s, d) for s, d, k in frames if not k]
    if kernel:
        c = kernel_category(kernel, user)
        if c:
            return c
    u = user_category(user)
    if kernel:
        if u is None or u == "application":
            # CHOICE: a kernel stack no rule names, with no usable user frame, is kernel work
            # that is not process creation.
            return "kernel_other" if any(usable(f) for f in kernel) or u else "unknown"
        return u
    return u or "unknown"


# ---------------------------------------------------------------------------------------------
# Reading `perf script`.

_HEADER = re.compile(r"^\s*(?:\S.*?\s+)?(-?\d+)/(-?\d+)\s+(\d+)\.(\d+):\s*(.*)$")
_FORK = re.compile(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)")
_FRAME = re.compile(r"^\s*([0-9a-fA-F]+)\s+(.*?)\s+\((.*)\)\s*$")


def is_kernel_frame(addr, dso):
    """Kernel frames: perf names their object [kernel.kallsyms] (or [module]); their addresses
    are in the upper half."""
    return dso.startswith("[kernel") or int(addr, 16) >= 0xFFFF800000000000


def read_samples(lines):
    """Yields ("fork", child_pid, parent_pid) and ("sample", pid, time_ns, frames)."""
    cur = None
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if cur:
                yield cur
                cur = None
            continue
        if line[0] in " 0123456789" and not line.startswith("\t"):
            m = _HEADER.match(line)
            if m:
                if cur:
                    yield cur
                    cur = None
                pid, secs, nanos, rest = int(m.group(1)), m.group(3), m.group(4), m.group(5)
                t = int(secs) * 1_000_000_000 + int(nanos.ljust(9, "0")[:9])
                fm = _FORK.search(rest)
                if fm:
                    yield ("fork", int(fm.group(1)), int(fm.group(3)))
                elif "PERF_RECORD_" not in rest:
                    cur = ("sample", pid, t, [])
                continue
        fm = _FRAME.match(line)
        if fm and cur:
            addr, sym, dso = fm.group(1), fm.group(2), fm.group(3)
            cur[3].append((sym, dso, is_kernel_frame(addr, dso)))
    if cur:
        yield cur


def main(argv):
    root, window, explain = None, None, 0
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--root-pid":
            root = int(argv[i + 1])
            i += 2
        elif a == "--window":
            window = (int(argv[i + 1]), int(argv[i + 2]))
            i += 3
        elif a == "--explain":
            explain = int(argv[i + 1])
            i += 2
        elif a == "--self-test":
            return self_test()
        else:
            sys.stderr.write(__doc__)
            return 2
    tree = {root} if root is not None else None
    counts = collections.Counter()
    stacks = collections.Counter()
    dropped = 0
    for ev in read_samples(sys.stdin):
        if ev[0] == "fork":
            _, child, parent = ev
            if tree is not None:
                if parent in tree:
                    tree.add(child)
                elif child != root:
                    tree.discard(child)  # a pid reused outside the tree
            continue
        _, pid, t, frames = ev
        if (tree is not None and pid not in tree) or (window and not window[0] <= t <= window[1]):
            dropped += 1
            continue
        c = classify(frames)
        counts[c] += 1
        if explain:
            stacks[(c, ";".join(normalize(s) for s, _, _ in frames[:12]))] += 1
    out = dict(sorted(counts.items(), key=lambda kv: -kv[1]))
    out["_kept"] = sum(counts.values())
    out["_dropped"] = dropped
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    for (c, s), n in stacks.most_common(explain):
        sys.stderr.write(f"{n:7d} {c:16s} {s}\n")
    return 0


# ---------------------------------------------------------------------------------------------
# Hand-written stacks, leaf first: "k:" kernel frames, "name@dso" user frames.

def _stack(spec):
    frames = []
    for f in spec.split():
        if f.startswith("k:"):
            frames.append((f[2:], "[kernel.kallsyms]", True))
        else:
            name, dso = f.split("@")
            dso = {"ldso": "/lib/ld-linux-x86-64.so.2", "libc": "/lib/libc.so.6",
                   "app": "/tmp/app"}.get(dso, dso)
            frames.append((name, dso, False))
    return frames


SELF_TEST = [
    ("k:copy_pte_range k:copy_page_range k:dup_mmap k:copy_process k:kernel_clone", "page_table_copy"),
    ("k:kmem_cache_alloc k:anon_vma_fork k:dup_mmap k:copy_process", "vma_dup"),
    ("k:mas_store k:mas_wr_store_entry k:dup_mmap k:copy_process", "vma_dup"),
    ("k:mas_walk k:lock_vma_under_rcu k:exc_page_fault _dl_fixup@ldso", "anon_fault"),
    ("k:mas_find k:unmap_vmas k:exit_mmap k:__mmput k:exit_mm k:do_exit", "exit_teardown"),
    ("k:_raw_spin_lock k:copy_process k:kernel_clone _Fork@libc main@app", "fork_other"),
    ("k:clear_page k:wp_page_copy k:do_wp_page k:__handle_mm_fault k:handle_mm_fault _dl_relocate_object@ldso", "cow_fault"),
    ("k:next_uptodate_folio k:filemap_map_pages k:do_read_fault k:do_fault k:__handle_mm_fault", "file_fault"),
    ("k:zap_pte_range k:unmap_page_range k:unmap_vmas k:exit_mmap k:__mmput k:begin_new_exec k:load_elf_binary", "exec_kernel"),
    ("k:zap_pte_range k:unmap_vmas k:do_vmi_munmap k:__x64_sys_munmap __munmap@ldso", "ldso_mapping"),
    ("k:zap_pte_range k:unmap_vmas k:do_vmi_munmap k:__x64_sys_munmap munmap@libc main@app", "kernel_other"),
    ("k:zap_pte_range k:unmap_vmas", "exit_teardown"),
    ("k:change_protection k:do_mprotect_pkey k:__x64_sys_mprotect __mprotect@ldso _dl_protect_relro@ldso", "ldso_relocation"),
    ("k:kfree k:handle_softirqs k:__irq_exit_rcu k:sysvec_apic_timer_interrupt k:copy_pte_range k:copy_page_range", "kernel_other"),
    ("k:release_task k:wait_task_zombie k:wait_consider_task k:__do_wait k:do_wait k:kernel_wait4 __wait4@libc main@app", "wait"),
    ("k:arch_prctl_common k:__x64_sys_arch_prctl init_cpu_features@ldso", "cpu_features"),
    ("handle_amd@ldso [unknown]@[unknown]", "cpu_features"),
    ("k:ksys_write k:__x64_sys_write write@libc main@app", "kernel_other"),
    ("do_lookup_x@ldso _dl_lookup_symbol_x@ldso _dl_fixup@ldso _dl_runtime_resolve_xsavec@ldso main@app", "lazy_binding"),
    ("do_lookup_x@ldso _dl_relocate_object@ldso dl_main@ldso", "symbol_lookup"),
    ("strcmp@ldso [unknown]@[unknown]", "ldso_other"),
    ("_IO_cleanup@libc __run_exit_handlers@libc exit@libc main@app", "exit_teardown"),
    ("_dl_fixup@ldso __run_exit_handlers@libc", "lazy_binding"),
    ("ctor@app call_init@ldso _dl_init@ldso", "initializers"),
    ("[unknown]@app", "application"),
    ("[unknown]@[unknown]", "unknown"),
    ("", "unknown"),
    ("k:perf_output_copy k:perf_event_mmap_output k:perf_iterate_sb k:perf_event_mmap k:__mmap_region k:do_mmap k:vm_mmap_pgoff k:elf_load k:load_elf_binary k:bprm_execve", "instrumentation"),
    ("k:perf_event_mmap k:_install_special_mapping k:map_vdso k:load_elf_binary", "instrumentation"),
    ("k:perf_event_comm k:__set_task_comm k:begin_new_exec k:load_elf_binary", "instrumentation"),
    ("k:perf_event_exec k:begin_new_exec k:load_elf_binary k:bprm_execve", "instrumentation"),
    ("k:perf_event_mmap k:__mmap_region k:do_mmap k:vm_mmap_pgoff k:ksys_mmap_pgoff __mmap@ldso _dl_map_object_from_fd@ldso", "instrumentation"),
    ("k:ptrace_stop k:ptrace_notify k:bprm_execve k:do_execveat_common", "instrumentation"),
    ("k:ret_from_fork_asm", "fork_other"),
    ("k:schedule_tail k:ret_from_fork k:ret_from_fork_asm", "fork_other"),
]


def self_test():
    bad = 0
    for spec, want in SELF_TEST:
        got = classify(_stack(spec))
        if got != want:
            bad += 1
            print(f"FAIL {spec!r}: got {got}, want {want}")
    assert normalize("__GI___libc_fork+0x12") == "__libc_fork"
    assert normalize("do_execveat_common.isra.0") == "do_execveat_common"
    assert normalize("exit@plt") == "exit"
    print(f"self-test: {len(SELF_TEST) - bad}/{len(SELF_TEST)} stacks as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
