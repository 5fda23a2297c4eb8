//! Where glibc's CPU feature detection can be cut into a phase of its own.
//!
//! In: ld.so's symbols (its build-id debug file) or a static executable's symbol table. Out:
//! the breakpoint addresses (file offsets, before the load bias) that bracket the detection,
//! or why there are none ([`CpuFeatureCut`]).
//!
//! Why: `init_cpu_features` and its cache-info detection (`dl_init_cacheinfo` → `handle_intel`
//! / `intel_check_word` / `handle_amd` / `get_common_cache_info`, `update_active`, ...) run
//! `cpuid` in loops, and on a virtual machine every `cpuid` is a hypervisor exit: most of a
//! trivial program's start-up on these VMs. What this glibc (Debian 12, 2.36) looks like,
//! checked with gdb and objdump on this machine:
//! * dynamic: `_dl_sysdep_start` → `dl_platform_init` (inlined) → `_dl_x86_init_cpu_features`
//!   → `jmp init_cpu_features.constprop.0` (a local function of ld.so's debug file; the later
//!   IRELATIVE resolver `__x86_cpu_features_ifunc` finds the work done). A breakpoint at its
//!   entry and one at the return address read from `[rsp]` there bracket it exactly.
//! * static: `init_cpu_features` is inlined into `__libc_start_main`, between the call of
//!   `__tunables_init` and that of `_dl_relocate_static_pie` (glibc's csu/libc-start.c:
//!   `__tunables_init (__environ); ARCH_INIT_CPU_FEATURES (); _dl_relocate_static_pie ();`);
//!   its helpers (`get_common_indices`, `update_active`, `handle_amd`, ...) stay functions of
//!   the executable's .symtab and show that this layout is the one in the binary. The phase
//!   runs from `__tunables_init`'s return to `_dl_relocate_static_pie`'s entry.

use crate::record::CpuFeatureCut;
use crate::symbolize::ObjectSymbols;

/// The x86 detection helpers glibc keeps out of line (also in rules.txt's `cpu_features`).
const HELPERS: [&str; 8] = [
    "update_active",
    "get_common_indices",
    "get_extended_indices",
    "get_common_cache_info",
    "handle_intel",
    "handle_amd",
    "handle_zhaoxin",
    "intel_check_word",
];

/// `name`, or the clone GCC made of it (`name.constprop.0`, `name.isra.0`, ...).
fn find(syms: &ObjectSymbols, name: &str) -> Option<(u64, String)> {
    let clones = ["", ".constprop.0", ".isra.0", ".part.0", ".constprop.1"];
    clones.iter().find_map(|c| {
        let n = format!("{name}{c}");
        syms.lookup(&n)
            .filter(|s| s.value != 0)
            .map(|s| (s.value, n))
    })
}

/// ld.so's `init_cpu_features` entry (its symbol value) and name, or why it cannot be cut.
pub(in crate::trace) fn ldso_entry(
    syms: Option<&ObjectSymbols>,
    have_debug: bool,
) -> Result<(u64, String), CpuFeatureCut> {
    let not_cut = |why: &str| {
        CpuFeatureCut::NotCut(format!(
            "{why}; its time is inside \"ld.so start, search and mapping\""
        ))
    };
    let Some(syms) = syms.filter(|_| have_debug) else {
        return Err(not_cut(
            "no debug symbols for ld.so (init_cpu_features is a local function: install libc6-dbg)",
        ));
    };
    find(syms, "init_cpu_features").ok_or_else(|| {
        not_cut("ld.so's debug symbols have no init_cpu_features (not glibc on x86?)")
    })
}

/// A static executable's cut points: `__tunables_init` (whose return starts the phase) and
/// `_dl_relocate_static_pie` (whose entry ends it), symbol values; or why there are none.
pub(in crate::trace) fn static_points(
    syms: Option<&ObjectSymbols>,
) -> Result<(u64, u64), CpuFeatureCut> {
    let Some(syms) = syms else {
        return Err(CpuFeatureCut::Absent(
            "the executable's symbol table cannot be read".into(),
        ));
    };
    if !HELPERS.iter().any(|h| find(syms, h).is_some()) {
        return Err(CpuFeatureCut::Absent(
            "no glibc CPU-feature code in the executable's symbol table (stripped, or not glibc on x86)"
                .into(),
        ));
    }
    match (
        find(syms, "__tunables_init"),
        find(syms, "_dl_relocate_static_pie"),
    ) {
        (Some((t, _)), Some((r, _))) => Ok((t, r)),
        _ => Err(CpuFeatureCut::NotCut(
            "the executable has glibc's CPU-feature helpers but not __tunables_init and \
             _dl_relocate_static_pie, around the inlined init_cpu_features; its time is inside \
             \"entry to main\""
                .into(),
        )),
    }
}

/// Whether this machine is a virtual machine, and the evidence: the `hypervisor` flag of
/// /proc/cpuinfo (set by the CPU's cpuid leaf 1, ECX bit 31) and the DMI system vendor.
/// None when neither says so.
pub fn virtual_machine() -> Option<String> {
    let flag = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .is_some_and(|s| {
            s.lines()
                .filter(|l| l.starts_with("flags"))
                .any(|l| l.split_whitespace().any(|w| w == "hypervisor"))
        });
    let vendor = std::fs::read_to_string("/sys/class/dmi/id/sys_vendor")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let known = [
        "QEMU",
        "KVM",
        "VMware",
        "Xen",
        "Microsoft",
        "innotek",
        "Amazon EC2",
        "Google",
    ];
    let by_vendor = known.iter().any(|k| vendor.contains(k));
    let mut why = Vec::new();
    if flag {
        why.push("/proc/cpuinfo has the hypervisor flag".to_string());
    }
    if by_vendor || (flag && !vendor.is_empty()) {
        why.push(format!("/sys/class/dmi/id/sys_vendor is \"{vendor}\""));
    }
    (flag || by_vendor).then(|| why.join("; "))
}
