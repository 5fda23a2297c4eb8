//! Kernel exec in parts, and ldcost's own ptrace stops set apart: two refinements of the
//! category breakdown ([`super::breakdown`]).
//!
//! In: a call stack (leaf first) that the taxonomy put in
//! [`ExecKernel`](super::categories::Category::ExecKernel). Out: its [`ExecPart`]: the old
//! image's teardown (`exec_mmap` → `mmput` → `exit_mmap` under
//! `begin_new_exec`), the ELF and interpreter mapping (`load_elf_binary` → `elf_map`/`elf_load`/
//! `vm_mmap`, `load_elf_interp`), the arguments and stack (`copy_strings`, `setup_arg_pages`,
//! `create_elf_tables`), or the rest. The **outermost** marker frame decides, because the parts
//! nest into shared kernel code: `elf_map` unmaps the tail of its reservation
//! (`vm_munmap` → `zap_*`), which is mapping, not the old image's teardown.
//!
//! The parts add up to the category exactly: they are counted from the same samples, with the
//! same estimator (pooled share × the measured CPU), so their samples sum to the category's
//! and their times to its time. The exec stop's own `ptrace_notify` (under `bprm_execve`) is
//! not exec's at all: the taxonomy's `instrumentation` rule takes it first.

use std::collections::BTreeMap;

use super::categories::{clean_name, StackFrame};

/// A part of the kernel's exec work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExecPart {
    /// `begin_new_exec` → `exec_mmap` → `mmput` → `exit_mmap`: the image exec replaces.
    OldImageTeardown,
    /// `load_elf_binary`'s `elf_map`/`elf_load`/`vm_mmap`/`vm_brk_flags`, `load_elf_interp`,
    /// `load_elf_phdrs`, the vDSO's mapping.
    ElfMapping,
    /// `count` and `strnlen_user` (counting argv and envp), `copy_strings`, `setup_arg_pages`,
    /// `bprm_mm_init`/`create_init_stack_vma`, `create_elf_tables` (or its `__put_user_*`
    /// stores where inlined): argv, envp and the new stack.
    ArgumentsAndStack,
    /// The rest: opening the file, credentials, `de_thread`, the syscall's own frames.
    Other,
}

impl ExecPart {
    /// Every part, in report order when sizes tie.
    pub const ALL: [ExecPart; 4] = [
        ExecPart::OldImageTeardown,
        ExecPart::ElfMapping,
        ExecPart::ArgumentsAndStack,
        ExecPart::Other,
    ];

    /// Human text for the report.
    pub fn label(self) -> &'static str {
        match self {
            ExecPart::OldImageTeardown => "old image teardown",
            ExecPart::ElfMapping => "ELF & interpreter mapping",
            ExecPart::ArgumentsAndStack => "arguments & stack set-up",
            ExecPart::Other => "other",
        }
    }
}

/// Kernel frames that mark a part (after [`clean_name`]).
const TEARDOWN: &[&str] = &[
    "exec_mmap",
    "mmput",
    "__mmput",
    "exit_mmap",
    "unmap_vmas",
    "free_pgtables",
    "tlb_finish_mmu",
];
const MAPPING: &[&str] = &[
    "elf_map",
    "elf_load",
    "load_elf_interp",
    "load_elf_phdrs",
    "vm_mmap",
    "vm_mmap_pgoff",
    "do_mmap",
    "vm_brk_flags",
    "vm_brk",
    "set_brk",
    "map_vdso",
    "arch_setup_additional_pages",
];
const ARGUMENTS: &[&str] = &[
    "copy_strings",
    "copy_string_kernel",
    "copy_strings_kernel",
    "strnlen_user",
    "count",
    "count_strings_kernel",
    "setup_arg_pages",
    "bprm_mm_init",
    "__bprm_mm_init",
    "create_init_stack_vma",
    "create_elf_tables",
];

/// The part of an exec-kernel stack (leaf first): the outermost kernel frame that marks one.
pub fn exec_part<F: StackFrame>(stack: &[F]) -> ExecPart {
    for f in stack.iter().rev().filter(|f| f.is_kernel()) {
        let name = clean_name(f.name());
        if TEARDOWN.contains(&name) || name.starts_with("zap_") {
            return ExecPart::OldImageTeardown;
        }
        if MAPPING.contains(&name) {
            return ExecPart::ElfMapping;
        }
        // `create_elf_tables` inlined into load_elf_binary leaves its stores to the new stack:
        // `load_elf_binary → __put_user_8` (6.18).
        if ARGUMENTS.contains(&name) || name.starts_with("__put_user_") {
            return ExecPart::ArgumentsAndStack;
        }
    }
    ExecPart::Other
}

/// One part of `exec: kernel` in a breakdown.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecPartShare {
    pub part: ExecPart,
    pub label: String,
    pub samples: u64,
    /// Of all the breakdown's samples (pooled), as the category's own share.
    pub share: f64,
    /// `share` × the measured CPU per exec (or the pooled sample weight per exec), as the
    /// category's.
    pub ns_per_exec_or_fork: f64,
}

/// The parts, largest first (ties in [`ExecPart::ALL`]'s order), from (samples, weight ns) per
/// part; `total` is the breakdown's sample count, `covered` the execs its units cover.
pub fn part_shares(
    counts: &BTreeMap<ExecPart, (u64, u64)>,
    total: u64,
    covered: f64,
) -> Vec<ExecPartShare> {
    let mut v: Vec<ExecPartShare> = ExecPart::ALL
        .iter()
        .filter_map(|p| {
            let &(n, w) = counts.get(p)?;
            Some(ExecPartShare {
                part: *p,
                label: p.label().to_string(),
                samples: n,
                share: n as f64 / total.max(1) as f64,
                ns_per_exec_or_fork: w as f64 / covered.max(1.0),
            })
        })
        .collect();
    v.sort_by_key(|p| std::cmp::Reverse(p.samples));
    v
}

/// ldcost's own ptrace stops in the target ([`super::categories::Category::Instrumentation`]): counted, and left
/// out of every share and time of the breakdown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Instrumentation {
    /// Samples in the units classified `instrumentation`.
    pub samples: u64,
    /// `samples` over all the units' samples, the target's and these (the sampled CPU).
    pub share_of_sampled: f64,
    /// Samples by phase (span label).
    pub phases: BTreeMap<String, u64>,
}

#[cfg(test)]
mod tests {
    use super::super::categories::{classify, Category, FrameRef};
    use super::*;

    fn k(names: &[&'static str]) -> Vec<FrameRef<'static>> {
        // Root first here, leaf first in the stack.
        names
            .iter()
            .rev()
            .map(|n| FrameRef {
                name: n,
                object: None,
                kernel: true,
            })
            .collect()
    }

    #[test]
    fn outermost_marker_decides_the_part() {
        let base = [
            "__x64_sys_execve",
            "do_execveat_common.isra.0",
            "bprm_execve",
        ];
        let with = |rest: &[&'static str]| {
            let mut v = base.to_vec();
            v.extend_from_slice(rest);
            k(&v)
        };
        let cases: [(&[&'static str], ExecPart); 9] = [
            (
                &[
                    "load_elf_binary",
                    "begin_new_exec",
                    "__mmput",
                    "exit_mmap",
                    "zap_pte_range",
                ],
                ExecPart::OldImageTeardown,
            ),
            (
                &["load_elf_binary", "elf_load", "vm_mmap_pgoff", "do_mmap"],
                ExecPart::ElfMapping,
            ),
            // elf_map trims its reservation: unmapping there is mapping.
            (
                &[
                    "load_elf_binary",
                    "elf_map",
                    "vm_munmap",
                    "do_vmi_munmap",
                    "unmap_vmas",
                ],
                ExecPart::ElfMapping,
            ),
            (
                &["load_elf_binary", "load_elf_interp.constprop.0", "elf_map"],
                ExecPart::ElfMapping,
            ),
            (
                &["copy_strings.isra.0", "strnlen_user"],
                ExecPart::ArgumentsAndStack,
            ),
            (
                &["load_elf_binary", "setup_arg_pages", "relocate_vma_down"],
                ExecPart::ArgumentsAndStack,
            ),
            (&["prepare_exec_creds", "prepare_creds"], ExecPart::Other),
            (
                &["count.constprop.0.isra.0", "__get_user_8"],
                ExecPart::ArgumentsAndStack,
            ),
            (
                &["load_elf_binary", "__put_user_8"],
                ExecPart::ArgumentsAndStack,
            ),
        ];
        for (rest, want) in cases {
            let s = with(rest);
            assert_eq!(classify(&s), Category::ExecKernel, "{rest:?}");
            assert_eq!(exec_part(&s), want, "{rest:?}");
        }
    }

    #[test]
    fn parts_are_largest_first_and_add_up() {
        let mut counts = BTreeMap::new();
        counts.insert(ExecPart::OldImageTeardown, (2, 200));
        counts.insert(ExecPart::ArgumentsAndStack, (5, 500));
        counts.insert(ExecPart::Other, (1, 100));
        let v = part_shares(&counts, 16, 2.0);
        let order: Vec<ExecPart> = v.iter().map(|p| p.part).collect();
        assert_eq!(
            order,
            [
                ExecPart::ArgumentsAndStack,
                ExecPart::OldImageTeardown,
                ExecPart::Other
            ]
        );
        assert_eq!(v.iter().map(|p| p.samples).sum::<u64>(), 8);
        assert!((v.iter().map(|p| p.share).sum::<f64>() - 0.5).abs() < 1e-12);
        assert!((v[0].ns_per_exec_or_fork - 250.0).abs() < 1e-12);
    }
}
