//! The cost taxonomy of process creation, as one table, and the rules that put a sampled call
//! stack into exactly one of its categories.
//!
//! In: a call stack, leaf first, as [`Frame`]s (or anything that is a [`StackFrame`]). Out: a
//! [`Category`]. The same table is written for people in docs/taxonomy.md; a test below keeps
//! the two from drifting. Each category has a fixed [`Category::colour`] that the flame graph
//! and its legend share: fork in reds and oranges, faults in yellows and browns, exit and wait
//! in purples, exec and ld.so in blues and greens, the rest in greys.
//!
//! # How a stack is classified
//!
//! Every rule of [`RULES`] (and of [`SYSCALLS`], for the kernel's syscall entry points) names a
//! frame by exact name or by prefix, for kernel frames, user frames, or only user frames in
//! ld.so's own object, and has a *kind* that says how it decides. Names are compared after
//! dropping what compilers and perf add: `+0x1f` offsets, `@plt`/`@@GLIBC_2.2.5` versions,
//! `.isra.0`/`.constprop.0`/`.part.0`/`.cold` clones, and glibc's `__GI_` alias prefix.
//!
//! 1. **Kernel frames decide first, innermost (leaf-most) rule wins.** A sample in
//!    `copy_pte_range` under `dup_mmap` is [`Category::PageTableCopy`]; one in `anon_vma_fork`
//!    (no `copy_page_range` below it) is [`Category::VmaDup`]. Context can only change what the
//!    innermost rule means, in three kinds of rule:
//!    - *teardown* frames (`zap_*`, `unmap_vmas`, `free_pgtables`, `tlb_finish_mmu`,
//!      `exit_mmap`, ...) are [`Category::ExecKernel`] when exec is in the stack (the old image
//!      is torn down by `begin_new_exec`), [`Category::ExitTeardown`] when exit is, and
//!      otherwise belong to whoever asked for the unmapping (a `munmap`/`mmap(MAP_FIXED)` from
//!      ld.so is [`Category::LdsoMapping`], from the application [`Category::KernelOther`]);
//!      with no context at all they count as exit teardown, their usual caller.
//!    - *on-behalf* frames (the mapping and file syscalls ld.so makes: mmap, mprotect, munmap,
//!      openat, read, fstat, close, and their kernel internals such as `do_mmap`) are
//!      [`Category::ExecKernel`] under exec (`load_elf_binary` maps the interpreter), ld.so's
//!      category when the user side is ld.so (its generic code counts as
//!      [`Category::LdsoMapping`]), and [`Category::KernelOther`] for the application.
//!    - *in-fork* frames (maple-tree `mas_*`/`mt_*` work, `vm_area_dup`, `anon_vma_clone`) are
//!      [`Category::VmaDup`] only when `dup_mmap` is in the stack; elsewhere (mmap, munmap, exit)
//!      they are transparent and the next rule outwards decides.
//!
//!    **Faults are their own category whoever triggered them**: a copy-on-write fault taken while
//!    `_dl_relocate_object` writes the GOT, or while `_dl_fixup` patches a PLT slot, is
//!    [`Category::CowFault`], not relocation or lazy binding; the flame graph still shows the
//!    user frames above it. (`do_cow_fault` inlined into `do_fault` counts as a file fault.)
//!    Interrupt entry frames (`asm_sysvec_*`, softirqs) are [`Category::KernelOther`].
//! 2. **User frames decide when no kernel rule did** (a user-mode sample, or a kernel sample in
//!    a syscall no rule names). ld.so and libc keep no frame pointers, so the leaf alone must
//!    be enough and outer frames may be missing or garbage:
//!    - an *enclosing* frame claims everything called below it, and the innermost enclosing
//!      frame wins: `_dl_fixup`/`_dl_runtime_resolve*` ([`Category::LazyBinding`], so
//!      `do_lookup_x` reached from `_dl_fixup` is lazy binding, not start-up symbol lookup),
//!      `_dl_init`/`call_init`/`_GLOBAL__sub_I_*` ([`Category::Initializers`], whatever a
//!      constructor runs, except the lazy binding it triggers), `__run_exit_handlers`/`_dl_fini`
//!      ([`Category::ExitTeardown`]);
//!    - else the innermost named frame (`do_lookup_x` → [`Category::SymbolLookup`] even as a
//!      lone leaf, `_dl_relocate_object` → [`Category::LdsoRelocation`], libc's `_Fork` →
//!      [`Category::ForkOther`]);
//!    - else any frame in ld.so's object (`ld-linux-x86-64.so.2`, ...) →
//!      [`Category::LdsoOther`];
//!    - else, when some user frame names a function or an object, [`Category::Application`].
//!
//!    For a kernel sample decided here, an application answer becomes
//!    [`Category::KernelOther`]: kernel work on the program's behalf that is not process
//!    creation.
//! 3. Nothing usable at all (empty, or only `[unknown]` frames with no object):
//!    [`Category::Unknown`].
//!
//! Classification allocates nothing: the table is compiled once into two hash maps (kernel and
//! user names) and two short prefix lists; a unit test checks a million stacks take well under
//! a second in a release build.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// Where the time of a sample went. The serialised names (snake_case) are stable: reports,
/// folded files and diffs rely on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    PageTableCopy,
    VmaDup,
    ForkOther,
    CowFault,
    FileFault,
    AnonFault,
    ExitTeardown,
    Wait,
    ExecKernel,
    LdsoMapping,
    LdsoRelocation,
    SymbolLookup,
    LazyBinding,
    Initializers,
    TlsSetup,
    LdsoOther,
    Application,
    KernelOther,
    Unknown,
}

/// A colour as red, green, blue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

impl fmt::Display for Rgb {
    /// `rgb(r,g,b)`, as SVG and inferno write fills.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rgb({},{},{})", self.0, self.1, self.2)
    }
}

/// One row of the taxonomy: name, label, colour, and what it covers.
struct Info {
    category: Category,
    name: &'static str,
    label: &'static str,
    colour: Rgb,
    about: &'static str,
}

use Category::*;

/// The taxonomy, in display order (families together). docs/taxonomy.md mirrors it.
#[rustfmt::skip]
const INFO: [Info; 19] = [
    Info { category: PageTableCopy, name: "page_table_copy", label: "fork: page-table copy", colour: Rgb(226, 86, 66),
        about: "copy_page_range and below: the parent's page tables copied into the child" },
    Info { category: VmaDup, name: "vma_dup", label: "fork: VMA & mm duplication", colour: Rgb(238, 124, 62),
        about: "dup_mmap, anon_vma_fork, vm_area_dup, maple-tree copies (__mt_dup, mas_*)" },
    Info { category: ForkOther, name: "fork_other", label: "fork: other", colour: Rgb(247, 178, 112),
        about: "the rest of copy_process, kernel_clone, the clone/fork syscalls, libc's fork" },
    Info { category: CowFault, name: "cow_fault", label: "fault: copy-on-write", colour: Rgb(214, 160, 20),
        about: "do_wp_page, wp_page_copy, do_cow_fault: writes to pages shared after fork or mapped private" },
    Info { category: FileFault, name: "file_fault", label: "fault: file-backed", colour: Rgb(240, 214, 92),
        about: "filemap_map_pages, do_read_fault, filemap_fault, fault-around: mapping file pages in" },
    Info { category: AnonFault, name: "anon_fault", label: "fault: anonymous & other", colour: Rgb(190, 146, 96),
        about: "do_anonymous_page and the rest of handle_mm_fault / exc_page_fault" },
    Info { category: ExitTeardown, name: "exit_teardown", label: "exit: teardown", colour: Rgb(150, 112, 200),
        about: "exit_mmap, unmap_vmas, zap_*, free_pgtables, do_exit; libc's exit handlers" },
    Info { category: Wait, name: "wait", label: "wait & reap", colour: Rgb(200, 162, 222),
        about: "do_wait, wait4/waitid, release_task of a reaped child" },
    Info { category: ExecKernel, name: "exec_kernel", label: "exec: kernel", colour: Rgb(74, 132, 214),
        about: "execve: load_elf_binary, begin_new_exec (old image torn down), interpreter mapped" },
    Info { category: LdsoMapping, name: "ldso_mapping", label: "ld.so: search & mapping", colour: Rgb(112, 172, 232),
        about: "_dl_map_object*, _dl_map_segments, open_verify, ld.so.cache; ld.so's mmap/openat" },
    Info { category: LdsoRelocation, name: "ldso_relocation", label: "ld.so: relocation", colour: Rgb(62, 166, 104),
        about: "_dl_relocate_object, elf_dynamic_do_Rela, _dl_protect_relro, static-PIE relocation" },
    Info { category: SymbolLookup, name: "symbol_lookup", label: "ld.so: symbol lookup", colour: Rgb(126, 200, 112),
        about: "do_lookup_x, _dl_lookup_symbol_x, check_match, dl_new_hash at start-up" },
    Info { category: LazyBinding, name: "lazy_binding", label: "ld.so: lazy binding", colour: Rgb(44, 180, 172),
        about: "_dl_runtime_resolve*, _dl_fixup and the lookups they make, after start-up" },
    Info { category: Initializers, name: "initializers", label: "initializers", colour: Rgb(150, 212, 196),
        about: "_dl_init, call_init, constructors and everything they run" },
    Info { category: TlsSetup, name: "tls_setup", label: "ld.so: TLS setup", colour: Rgb(160, 196, 240),
        about: "_dl_allocate_tls*, init_tls, __libc_setup_tls, __tls_get_addr" },
    Info { category: LdsoOther, name: "ldso_other", label: "ld.so: other", colour: Rgb(176, 220, 168),
        about: "the rest of ld.so: _dl_start, _dl_sysdep_start, dl_main, version checks" },
    Info { category: Application, name: "application", label: "application", colour: Rgb(168, 168, 168),
        about: "the program and its libraries after the entry point" },
    Info { category: KernelOther, name: "kernel_other", label: "kernel: other", colour: Rgb(196, 190, 176),
        about: "kernel work that is not process creation: the program's other syscalls, interrupts" },
    Info { category: Unknown, name: "unknown", label: "unknown", colour: Rgb(222, 222, 222),
        about: "no usable frame" },
];

impl Category {
    /// Every category, in display order (families together).
    pub const ALL: [Category; 19] = [
        PageTableCopy,
        VmaDup,
        ForkOther,
        CowFault,
        FileFault,
        AnonFault,
        ExitTeardown,
        Wait,
        ExecKernel,
        LdsoMapping,
        LdsoRelocation,
        SymbolLookup,
        LazyBinding,
        Initializers,
        TlsSetup,
        LdsoOther,
        Application,
        KernelOther,
        Unknown,
    ];

    fn info(self) -> &'static Info {
        &INFO[self as usize]
    }

    /// The stable snake_case name, as serde writes it.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Human text for reports, flame graphs and the legend.
    pub fn label(self) -> &'static str {
        self.info().label
    }

    /// The fixed colour of the flame graph and its legend.
    pub fn colour(self) -> Rgb {
        self.info().colour
    }

    /// One line on what the category covers.
    pub fn about(self) -> &'static str {
        self.info().about
    }

    /// The category whose [`Category::name`] is `name`.
    pub fn from_name(name: &str) -> Option<Category> {
        INFO.iter().find(|i| i.name == name).map(|i| i.category)
    }

    /// The category whose [`Category::label`] is `label`.
    pub fn from_label(label: &str) -> Option<Category> {
        INFO.iter().find(|i| i.label == label).map(|i| i.category)
    }

    /// Whether the category is ld.so's work (start-up or lazy binding).
    pub fn is_ldso(self) -> bool {
        matches!(
            self,
            LdsoMapping | LdsoRelocation | SymbolLookup | LazyBinding | TlsSetup | LdsoOther
        )
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One frame of a call stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The function, as symbolised (`[unknown]` or empty when not).
    pub name: String,
    /// The object's path or basename (`/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2`).
    pub object: Option<String>,
    /// Whether the frame is in the kernel.
    pub kernel: bool,
}

/// A borrowed frame, for classifying without copying names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRef<'a> {
    pub name: &'a str,
    pub object: Option<&'a str>,
    pub kernel: bool,
}

/// What [`classify`] needs of a frame.
pub trait StackFrame {
    fn name(&self) -> &str;
    fn object(&self) -> Option<&str>;
    fn is_kernel(&self) -> bool;
}

impl StackFrame for Frame {
    fn name(&self) -> &str {
        &self.name
    }
    fn object(&self) -> Option<&str> {
        self.object.as_deref()
    }
    fn is_kernel(&self) -> bool {
        self.kernel
    }
}

impl StackFrame for FrameRef<'_> {
    fn name(&self) -> &str {
        self.name
    }
    fn object(&self) -> Option<&str> {
        self.object
    }
    fn is_kernel(&self) -> bool {
        self.kernel
    }
}

/// How a rule's pattern is compared with a frame's (cleaned) name or object basename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    Exact,
    Prefix,
}

/// Which frames a rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Kernel,
    /// Any user frame.
    User,
    /// User frames in ld.so's object only (its private syscall wrappers).
    Ldso,
}

/// How a matching frame decides; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The category, where this is the innermost deciding frame.
    Fixed,
    /// Kernel unmapping work: exec's, exit's, or that of whoever asked for the unmap.
    Teardown,
    /// Kernel mapping/file work: exec's, ld.so's, or (for the application) kernel-other.
    OnBehalf,
    /// VMA duplication only under `dup_mmap`; transparent elsewhere.
    InFork,
    /// User frame that claims everything below it; the innermost one wins.
    Encloses,
}

/// One rule of the taxonomy.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub pattern: &'static str,
    pub how: Match,
    pub scope: Scope,
    pub kind: Kind,
    /// For `Teardown`, `OnBehalf` and `InFork` the category they usually mean.
    pub category: Category,
}

const fn r(
    pattern: &'static str,
    how: Match,
    scope: Scope,
    kind: Kind,
    category: Category,
) -> Rule {
    Rule {
        pattern,
        how,
        scope,
        kind,
        category,
    }
}
const fn k(p: &'static str, c: Category) -> Rule {
    r(p, Match::Exact, Scope::Kernel, Kind::Fixed, c)
}
const fn kp(p: &'static str, c: Category) -> Rule {
    r(p, Match::Prefix, Scope::Kernel, Kind::Fixed, c)
}
const fn teardown(p: &'static str) -> Rule {
    r(p, Match::Exact, Scope::Kernel, Kind::Teardown, ExitTeardown)
}
const fn on_behalf(p: &'static str) -> Rule {
    r(p, Match::Exact, Scope::Kernel, Kind::OnBehalf, KernelOther)
}
const fn in_fork(p: &'static str, how: Match) -> Rule {
    r(p, how, Scope::Kernel, Kind::InFork, VmaDup)
}
const fn u(p: &'static str, c: Category) -> Rule {
    r(p, Match::Exact, Scope::User, Kind::Fixed, c)
}
const fn up(p: &'static str, c: Category) -> Rule {
    r(p, Match::Prefix, Scope::User, Kind::Fixed, c)
}
const fn encl(p: &'static str, how: Match, c: Category) -> Rule {
    r(p, how, Scope::User, Kind::Encloses, c)
}
const fn ldso(p: &'static str) -> Rule {
    r(p, Match::Exact, Scope::Ldso, Kind::Fixed, LdsoMapping)
}

/// The frame rules. Exact names are looked up in a hash map, prefixes tried in order after.
#[rustfmt::skip]
pub const RULES: &[Rule] = &[
    // fork: page tables
    k("copy_page_range", PageTableCopy), k("copy_p4d_range", PageTableCopy),
    k("copy_pud_range", PageTableCopy), k("copy_pmd_range", PageTableCopy),
    k("copy_pte_range", PageTableCopy), k("copy_present_pte", PageTableCopy),
    k("copy_present_ptes", PageTableCopy), k("__copy_present_ptes", PageTableCopy),
    k("copy_present_page", PageTableCopy), k("copy_nonpresent_pte", PageTableCopy),
    k("copy_huge_pmd", PageTableCopy), k("copy_huge_pud", PageTableCopy),
    k("copy_hugetlb_page_range", PageTableCopy),
    // fork: VMAs and the mm
    k("dup_mmap", VmaDup), k("dup_mm", VmaDup), k("copy_mm", VmaDup), k("anon_vma_fork", VmaDup),
    k("__mt_dup", VmaDup), k("ksm_fork", VmaDup), k("khugepaged_fork", VmaDup),
    k("uprobe_dup_mmap", VmaDup), k("dup_userfaultfd", VmaDup),
    in_fork("anon_vma_clone", Match::Exact), in_fork("vm_area_dup", Match::Exact),
    in_fork("mas_", Match::Prefix), in_fork("__mas_", Match::Prefix), in_fork("mt_", Match::Prefix),
    in_fork("mtree_", Match::Prefix), in_fork("mab_", Match::Prefix), in_fork("vma_iter_", Match::Prefix),
    // fork: the rest
    k("copy_process", ForkOther), k("kernel_clone", ForkOther), k("wake_up_new_task", ForkOther),
    k("ret_from_fork", ForkOther), k("ret_from_fork_asm", ForkOther), k("schedule_tail", ForkOther),
    // faults
    k("do_wp_page", CowFault), k("wp_page_copy", CowFault), k("wp_page_reuse", CowFault),
    k("do_cow_fault", CowFault), k("do_huge_pmd_wp_page", CowFault),
    k("wp_can_reuse_anon_folio", CowFault),
    k("do_fault", FileFault), k("do_read_fault", FileFault), k("do_shared_fault", FileFault),
    k("__do_fault", FileFault), k("filemap_fault", FileFault), k("filemap_map_pages", FileFault),
    k("do_fault_around", FileFault), k("next_uptodate_folio", FileFault),
    k("next_uptodate_page", FileFault), k("filemap_map_folio_range", FileFault),
    k("filemap_map_pmd", FileFault), k("wp_page_shared", FileFault), k("do_page_mkwrite", FileFault),
    k("do_anonymous_page", AnonFault), k("alloc_anon_folio", AnonFault),
    k("do_huge_pmd_anonymous_page", AnonFault), k("do_swap_page", AnonFault),
    k("handle_pte_fault", AnonFault), k("__handle_mm_fault", AnonFault), k("handle_mm_fault", AnonFault),
    k("lock_vma_under_rcu", AnonFault), k("lock_mm_and_find_vma", AnonFault),
    k("do_user_addr_fault", AnonFault), k("exc_page_fault", AnonFault),
    k("asm_exc_page_fault", AnonFault),
    // exit
    k("do_exit", ExitTeardown), k("do_group_exit", ExitTeardown), k("exit_mm", ExitTeardown),
    teardown("exit_mmap"), teardown("__mmput"), teardown("mmput"), teardown("mmput_async"),
    teardown("unmap_vmas"), teardown("unmap_single_vma"), teardown("unmap_page_range"),
    teardown("unmap_region"), teardown("vms_clear_ptes"), teardown("free_pgtables"),
    teardown("free_pgd_range"), teardown("free_p4d_range"), teardown("free_pud_range"),
    teardown("free_pmd_range"), teardown("free_pte_range"), teardown("tlb_finish_mmu"),
    teardown("tlb_flush_mmu"), teardown("tlb_batch_pages_flush"),
    teardown("__tlb_batch_free_encoded_pages"), teardown("free_pages_and_swap_cache"),
    teardown("release_pages"), teardown("remove_vma"),
    r("zap_", Match::Prefix, Scope::Kernel, Kind::Teardown, ExitTeardown),
    // wait
    k("do_wait", Wait), k("__do_wait", Wait), k("kernel_wait4", Wait), k("kernel_waitid", Wait),
    k("wait_consider_task", Wait), k("wait_task_zombie", Wait),
    // exec
    k("do_execveat_common", ExecKernel), k("bprm_execve", ExecKernel), k("exec_binprm", ExecKernel),
    k("search_binary_handler", ExecKernel), k("load_elf_binary", ExecKernel),
    k("begin_new_exec", ExecKernel), k("exec_mmap", ExecKernel), k("setup_new_exec", ExecKernel),
    k("setup_arg_pages", ExecKernel), k("copy_strings", ExecKernel),
    k("copy_string_kernel", ExecKernel), k("load_elf_interp", ExecKernel), k("elf_load", ExecKernel),
    k("elf_map", ExecKernel), k("load_elf_phdrs", ExecKernel), k("create_elf_tables", ExecKernel),
    k("alloc_bprm", ExecKernel), k("free_bprm", ExecKernel), k("kernel_execve", ExecKernel),
    k("finalize_exec", ExecKernel), k("de_thread", ExecKernel), k("open_exec", ExecKernel),
    k("do_open_execat", ExecKernel), k("bprm_mm_init", ExecKernel),
    // mapping and file work done for someone else
    on_behalf("do_mmap"), on_behalf("mmap_region"), on_behalf("__mmap_region"),
    on_behalf("vm_mmap_pgoff"), on_behalf("vm_mmap"), on_behalf("do_mprotect_pkey"),
    on_behalf("mprotect_fixup"), on_behalf("__vm_munmap"), on_behalf("vm_munmap"),
    on_behalf("do_vmi_munmap"), on_behalf("do_vmi_align_munmap"), on_behalf("do_sys_openat2"),
    on_behalf("do_sys_open"), on_behalf("do_filp_open"), on_behalf("path_openat"),
    on_behalf("vfs_read"), on_behalf("vfs_fstatat"), on_behalf("vfs_statx"),
    // interrupts
    kp("asm_sysvec_", KernelOther), kp("sysvec_", KernelOther), kp("__sysvec_", KernelOther),
    k("asm_common_interrupt", KernelOther), k("common_interrupt", KernelOther),
    k("irq_exit_rcu", KernelOther), k("__irq_exit_rcu", KernelOther),
    k("handle_softirqs", KernelOther), k("__do_softirq", KernelOther),

    // user: what encloses everything below it
    encl("_dl_fixup", Match::Exact, LazyBinding), encl("_dl_profile_fixup", Match::Exact, LazyBinding),
    encl("_dl_runtime_resolve", Match::Prefix, LazyBinding),
    encl("_dl_runtime_profile", Match::Prefix, LazyBinding),
    encl("_dl_init", Match::Exact, Initializers), encl("call_init", Match::Exact, Initializers),
    encl("_init", Match::Exact, Initializers), encl("__libc_csu_init", Match::Exact, Initializers),
    encl("frame_dummy", Match::Exact, Initializers),
    encl("_GLOBAL__sub_I_", Match::Prefix, Initializers),
    encl("__run_exit_handlers", Match::Exact, ExitTeardown),
    encl("_dl_fini", Match::Exact, ExitTeardown), encl("_fini", Match::Exact, ExitTeardown),
    // user: ld.so search and mapping (also dlopen)
    up("_dl_map_object", LdsoMapping), u("_dl_map_segments", LdsoMapping),
    u("_dl_map_segment", LdsoMapping), u("_dl_new_object", LdsoMapping), u("open_verify", LdsoMapping),
    u("open_path", LdsoMapping), u("_dl_load_cache_lookup", LdsoMapping),
    u("_dl_cache_libcmp", LdsoMapping), u("search_cache", LdsoMapping), u("_dl_init_paths", LdsoMapping),
    u("_dl_important_hwcaps", LdsoMapping), u("_dl_dst_count", LdsoMapping),
    u("_dl_dst_substitute", LdsoMapping), u("_dl_get_origin", LdsoMapping),
    u("fillin_rpath", LdsoMapping), u("decompose_rpath", LdsoMapping), u("cache_rpath", LdsoMapping),
    u("expand_dynamic_string_token", LdsoMapping), u("_dl_add_to_namespace_list", LdsoMapping),
    u("_dl_setup_hash", LdsoMapping), u("_dl_process_pt_note", LdsoMapping),
    u("_dl_process_pt_gnu_property", LdsoMapping), u("_dl_process_gnu_property", LdsoMapping),
    u("_dl_sysdep_read_whole_file", LdsoMapping), u("openaux", LdsoMapping),
    u("dlopen", LdsoMapping), u("__dlopen", LdsoMapping), u("dlopen_doit", LdsoMapping),
    u("dl_open_worker", LdsoMapping), u("dl_open_worker_begin", LdsoMapping), u("_dl_open", LdsoMapping),
    // user: relocation
    u("_dl_relocate_object", LdsoRelocation), u("_dl_relocate_object_no_relro", LdsoRelocation),
    u("_dl_relocate_static_pie", LdsoRelocation), u("_dl_protect_relro", LdsoRelocation),
    u("_dl_reloc_bad_type", LdsoRelocation), u("_dl_resolve_conflicts", LdsoRelocation),
    up("elf_dynamic_do_", LdsoRelocation), up("elf_machine_", LdsoRelocation),
    // user: symbol lookup
    u("do_lookup_x", SymbolLookup), u("do_lookup_unique", SymbolLookup),
    u("_dl_lookup_symbol_x", SymbolLookup), u("_dl_lookup_direct", SymbolLookup),
    u("check_match", SymbolLookup), u("_dl_name_match_p", SymbolLookup), u("dl_new_hash", SymbolLookup),
    u("_dl_elf_hash", SymbolLookup), u("enter_unique_sym", SymbolLookup), u("do_sym", SymbolLookup),
    u("_dl_sym", SymbolLookup), u("_dl_vsym", SymbolLookup), u("dlsym", SymbolLookup),
    // user: TLS
    up("_dl_allocate_tls", TlsSetup), u("init_tls", TlsSetup), u("__libc_setup_tls", TlsSetup),
    u("_dl_determine_tlsoffset", TlsSetup), u("_dl_tls_static_surplus_init", TlsSetup),
    u("allocate_dtv", TlsSetup), u("__tls_init_tp", TlsSetup), u("__tls_get_addr", TlsSetup),
    u("__tls_get_addr_slow", TlsSetup), u("_dl_update_slotinfo", TlsSetup),
    u("update_get_addr", TlsSetup), u("tls_get_addr_tail", TlsSetup), u("_dl_add_to_slotinfo", TlsSetup),
    u("_dl_get_tls_static_info", TlsSetup), up("_dl_tlsdesc_", TlsSetup),
    // user: the rest of ld.so
    u("_dl_start", LdsoOther), u("_dl_start_final", LdsoOther), u("_dl_start_user", LdsoOther),
    u("_dl_sysdep_start", LdsoOther), u("dl_main", LdsoOther), u("_dl_sysdep_parse_arguments", LdsoOther),
    u("_dl_aux_init", LdsoOther), u("_dl_non_dynamic_init", LdsoOther), u("init_cpu_features", LdsoOther),
    u("_dl_discover_osversion", LdsoOther), u("_dl_debug_state", LdsoOther),
    u("_dl_debug_initialize", LdsoOther), u("_dl_call_libc_early_init", LdsoOther),
    u("__libc_early_init", LdsoOther), u("_dl_check_all_versions", LdsoOther),
    u("_dl_check_map_versions", LdsoOther), u("match_symbol", LdsoOther),
    u("_dl_find_object_init", LdsoOther), u("version_check_doit", LdsoOther),
    // user: libc's side of fork, wait, exec and exit
    u("fork", ForkOther), u("__fork", ForkOther), u("__libc_fork", ForkOther), u("_Fork", ForkOther),
    u("__run_fork_handlers", ForkOther), u("vfork", ForkOther), u("__vfork", ForkOther),
    u("__reclaim_stacks", ForkOther), u("__malloc_fork_lock_parent", ForkOther),
    u("__malloc_fork_unlock_parent", ForkOther), u("__malloc_fork_unlock_child", ForkOther),
    u("wait", Wait), u("__wait", Wait), u("__libc_wait", Wait), u("wait4", Wait), u("__wait4", Wait),
    u("waitpid", Wait), u("__waitpid", Wait), u("waitid", Wait), u("__waitid", Wait),
    u("execve", ExecKernel), u("__execve", ExecKernel), u("execv", ExecKernel), u("execvp", ExecKernel),
    u("execvpe", ExecKernel), u("__execvpe", ExecKernel), u("fexecve", ExecKernel),
    u("exit", ExitTeardown), u("_exit", ExitTeardown), u("_Exit", ExitTeardown),
    // ld.so's private syscall wrappers (libc's of the same name are the application's)
    ldso("mmap"), ldso("mmap64"), ldso("__mmap"), ldso("__mmap64"), ldso("mprotect"),
    ldso("__mprotect"), ldso("munmap"), ldso("__munmap"), ldso("__open64_nocancel"),
    ldso("__open_nocancel"), ldso("__read_nocancel"), ldso("__pread64_nocancel"),
    ldso("__close_nocancel"), ldso("__fstat64"), ldso("__fstatat64"), ldso("__access"),
];

/// Kernel syscall entry points, by syscall name once the `__x64_sys_`, `__do_sys_`, `ksys_`
/// ... prefix ([`SYSCALL_PREFIXES`]) is dropped.
#[rustfmt::skip]
pub const SYSCALLS: &[(&str, Category, Kind)] = &[
    ("clone", ForkOther, Kind::Fixed), ("clone3", ForkOther, Kind::Fixed),
    ("fork", ForkOther, Kind::Fixed), ("vfork", ForkOther, Kind::Fixed),
    ("execve", ExecKernel, Kind::Fixed), ("execveat", ExecKernel, Kind::Fixed),
    ("wait4", Wait, Kind::Fixed), ("waitid", Wait, Kind::Fixed), ("waitpid", Wait, Kind::Fixed),
    ("exit", ExitTeardown, Kind::Fixed), ("exit_group", ExitTeardown, Kind::Fixed),
    ("mmap", KernelOther, Kind::OnBehalf), ("mmap_pgoff", KernelOther, Kind::OnBehalf),
    ("munmap", KernelOther, Kind::OnBehalf), ("mprotect", KernelOther, Kind::OnBehalf),
    ("mremap", KernelOther, Kind::OnBehalf), ("brk", KernelOther, Kind::OnBehalf),
    ("openat", KernelOther, Kind::OnBehalf), ("openat2", KernelOther, Kind::OnBehalf),
    ("open", KernelOther, Kind::OnBehalf), ("read", KernelOther, Kind::OnBehalf),
    ("pread64", KernelOther, Kind::OnBehalf), ("close", KernelOther, Kind::OnBehalf),
    ("fstat", KernelOther, Kind::OnBehalf), ("newfstat", KernelOther, Kind::OnBehalf),
    ("newfstatat", KernelOther, Kind::OnBehalf), ("statx", KernelOther, Kind::OnBehalf),
    ("access", KernelOther, Kind::OnBehalf), ("faccessat", KernelOther, Kind::OnBehalf),
    ("faccessat2", KernelOther, Kind::OnBehalf), ("readlink", KernelOther, Kind::OnBehalf),
    ("readlinkat", KernelOther, Kind::OnBehalf),
];

/// Prefixes of the kernel's syscall entry symbols (x86-64, i386, arm64; wrappers and bodies).
pub const SYSCALL_PREFIXES: &[&str] = &[
    "__x64_sys_",
    "__ia32_sys_",
    "__arm64_sys_",
    "__se_sys_",
    "__do_sys_",
    "ksys_",
    "sys_",
];

/// Basenames of dynamic loaders: glibc's on each architecture, and musl's.
pub const LDSO_OBJECTS: &[(&str, Match)] = &[
    ("ld-linux", Match::Prefix),
    ("ld64.so.", Match::Prefix),
    ("ld-musl-", Match::Prefix),
    ("ld.so.1", Match::Exact),
    ("ld.so", Match::Exact),
];

/// A word-at-a-time multiplicative hash (FxHash's): the keys are short, trusted symbol names,
/// and SipHash or byte-wise FNV cost more than the rest of a lookup.
#[derive(Default)]
struct WordHash(u64);

impl Hasher for WordHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        self.0 = h;
    }
}

type FastMap<V> = HashMap<&'static str, V, BuildHasherDefault<WordHash>>;

/// What a kernel prefix leads to.
#[derive(Clone, Copy)]
enum Prefixed {
    Rule(Category, Kind),
    /// A syscall entry point: look the rest up in [`SYSCALLS`].
    Syscall,
}

/// Prefix patterns bucketed by their first byte after any leading underscores, so a name is
/// compared only with the few prefixes that could match it.
struct Prefixes<T> {
    buckets: Vec<Vec<(&'static str, T)>>,
}

impl<T: Copy> Prefixes<T> {
    fn new() -> Self {
        Prefixes {
            buckets: (0..128).map(|_| Vec::new()).collect(),
        }
    }
    fn key(s: &str) -> usize {
        usize::from(s.bytes().find(|&b| b != b'_').unwrap_or(b'_') & 0x7f)
    }
    fn add(&mut self, pattern: &'static str, target: T) {
        self.buckets[Self::key(pattern)].push((pattern, target));
    }
    fn find(&self, name: &str) -> Option<(&'static str, T)> {
        self.buckets[Self::key(name)]
            .iter()
            .copied()
            .find(|(p, _)| name.starts_with(p))
    }
}

/// The rules compiled for lookup.
struct Table {
    kernel: FastMap<(Category, Kind)>,
    kernel_prefix: Prefixes<Prefixed>,
    /// User and ld.so-only rules (their names do not overlap).
    user: FastMap<&'static Rule>,
    user_prefix: Prefixes<&'static Rule>,
    syscalls: FastMap<(Category, Kind)>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table {
            kernel: FastMap::default(),
            kernel_prefix: Prefixes::new(),
            user: FastMap::default(),
            user_prefix: Prefixes::new(),
            syscalls: SYSCALLS.iter().map(|&(n, c, k)| (n, (c, k))).collect(),
        };
        for p in SYSCALL_PREFIXES {
            t.kernel_prefix.add(p, Prefixed::Syscall);
        }
        for rule in RULES {
            match (rule.scope, rule.how) {
                (Scope::Kernel, Match::Exact) => {
                    t.kernel.insert(rule.pattern, (rule.category, rule.kind));
                }
                (Scope::Kernel, Match::Prefix) => t
                    .kernel_prefix
                    .add(rule.pattern, Prefixed::Rule(rule.category, rule.kind)),
                (_, Match::Exact) => {
                    let old = t.user.insert(rule.pattern, rule);
                    debug_assert!(old.is_none(), "{} is in RULES twice", rule.pattern);
                }
                (_, Match::Prefix) => t.user_prefix.add(rule.pattern, rule),
            }
        }
        t
    })
}

/// Compiler clone suffixes, after a `.`.
const CLONE_SUFFIXES: &[&[u8]] = &[
    b"isra",
    b"constprop",
    b"part",
    b"cold",
    b"lto_priv",
    b"llvm",
    b"localalias",
];

/// A frame's name without perf's `+0x..` offset, `@plt`/`@@VERSION`, compiler clone suffixes
/// (`.isra.0`, `.constprop.0`, `.part.0`, `.cold`, `.lto_priv.0`, `.llvm.123`) and glibc's
/// `__GI_` alias prefix. Borrows; never allocates; one pass over the bytes.
pub fn clean_name(name: &str) -> &str {
    let name = name.trim_ascii();
    let b = name.as_bytes();
    let mut end = b.len();
    for (i, &c) in b.iter().enumerate() {
        let cut = match c {
            b'+' => b[i + 1..].starts_with(b"0x"),
            b'@' => i > 0,
            b'.' => CLONE_SUFFIXES.iter().any(|s| b[i + 1..].starts_with(s)),
            _ => false,
        };
        if cut {
            end = i;
            break;
        }
    }
    // The cut is at an ASCII byte, so a char boundary.
    let s = &name[..end];
    s.strip_prefix("__GI_").unwrap_or(s)
}

/// Whether `object` (a path or basename) is a dynamic loader.
pub fn is_ldso_object(object: &str) -> bool {
    let base = object.rsplit('/').next().unwrap_or(object);
    base.starts_with("ld")
        && LDSO_OBJECTS.iter().any(|&(p, how)| match how {
            Match::Exact => base == p,
            Match::Prefix => base.starts_with(p),
        })
}

/// The rule a kernel frame matches: exact name, then syscall entry or prefix.
fn kernel_rule(t: &Table, name: &str) -> Option<(Category, Kind)> {
    if let Some(&hit) = t.kernel.get(name) {
        return Some(hit);
    }
    match t.kernel_prefix.find(name)? {
        (_, Prefixed::Rule(c, k)) => Some((c, k)),
        (p, Prefixed::Syscall) => t.syscalls.get(&name[p.len()..]).copied(),
    }
}

fn user_rule(t: &Table, name: &str, in_ldso: bool) -> Option<&'static Rule> {
    match t.user.get(name) {
        Some(rule) if rule.scope == Scope::Ldso && !in_ldso => None,
        Some(rule) => Some(rule),
        None => t.user_prefix.find(name).map(|(_, r)| r),
    }
}

/// What the user part of a stack says, or None when there is no user frame.
fn classify_user<F: StackFrame>(t: &Table, stack: &[F]) -> Option<Category> {
    let mut any_user = false;
    let mut named = None;
    let mut in_ldso = false;
    let mut known = false;
    for f in stack.iter().filter(|f| !f.is_kernel()) {
        any_user = true;
        let ldso = f.object().is_some_and(is_ldso_object);
        let name = clean_name(f.name());
        if let Some(rule) = user_rule(t, name, ldso) {
            if rule.kind == Kind::Encloses {
                return Some(rule.category);
            }
            named = named.or(Some(rule.category));
        }
        in_ldso |= ldso;
        known |= f
            .object()
            .is_some_and(|o| !o.is_empty() && o != "[unknown]")
            || !(name.is_empty() || name == "[unknown]");
    }
    if !any_user {
        return None;
    }
    Some(match named {
        Some(c) => c,
        None if in_ldso => LdsoOther,
        None if known => Application,
        None => Unknown,
    })
}

/// The category of a call stack, leaf first. See the module documentation for the precedence.
pub fn classify<F: StackFrame>(stack: &[F]) -> Category {
    let t = table();
    // One pass over the kernel frames: the innermost deciding rule, the innermost in-fork rule,
    // and the context that gives teardown, on-behalf and in-fork frames their meaning.
    let mut first: Option<(usize, Category, Kind)> = None;
    let mut first_in_fork: Option<usize> = None;
    let (mut exec, mut exit, mut dup_mmap, mut any_kernel) = (false, false, false, false);
    for (i, f) in stack.iter().enumerate() {
        if !f.is_kernel() {
            continue;
        }
        any_kernel = true;
        let name = clean_name(f.name());
        let Some((cat, kind)) = kernel_rule(t, name) else {
            continue;
        };
        if kind == Kind::InFork {
            first_in_fork = first_in_fork.or(Some(i));
        } else if first.is_none() {
            // A fixed rule decides alone unless an in-fork frame below it waits for dup_mmap.
            if kind == Kind::Fixed && first_in_fork.is_none() {
                return cat;
            }
            first = Some((i, cat, kind));
        }
        if kind == Kind::Fixed {
            exec |= cat == ExecKernel;
            exit |= cat == ExitTeardown;
            dup_mmap |= cat == VmaDup;
        }
        exit |= name == "exit_mmap";
    }
    // Kernel work someone asked for: exec's, or the user side's.
    let on_behalf = |exec: bool| -> Category {
        if exec {
            return ExecKernel;
        }
        match classify_user(t, stack) {
            Some(LdsoOther) => LdsoMapping,
            Some(Application) | Some(Unknown) | None => KernelOther,
            Some(c) => c,
        }
    };
    if let Some(j) = first_in_fork.filter(|_| dup_mmap) {
        if first.is_none_or(|(i, _, _)| j < i) {
            return VmaDup;
        }
    }
    match first {
        Some((_, cat, Kind::Fixed)) => cat,
        Some((_, _, Kind::Teardown)) if exec => ExecKernel,
        Some((_, _, Kind::Teardown)) if exit => ExitTeardown,
        Some((i, _, Kind::Teardown)) => {
            // Unmapping inside a syscall made for someone (munmap, mmap over a reservation).
            let asked = stack[i..].iter().filter(|f| f.is_kernel()).any(|f| {
                kernel_rule(t, clean_name(f.name())).is_some_and(|(_, k)| k == Kind::OnBehalf)
            });
            if asked {
                on_behalf(false)
            } else {
                ExitTeardown
            }
        }
        Some((_, _, _)) => on_behalf(exec),
        None => match classify_user(t, stack) {
            Some(Application) | Some(Unknown) | None if any_kernel => KernelOther,
            Some(c) => c,
            None => Unknown,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames from `perf script` text, one per line: `[ADDR] NAME[+0xOFF] (OBJECT)`.
    fn perf(text: &str) -> Vec<Frame> {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (sym, obj) = l.rsplit_once(" (").expect("perf line has an object");
                let obj = obj.trim_end_matches(')');
                let mut words = sym.splitn(2, ' ');
                let first = words.next().unwrap();
                let name = match words.next() {
                    Some(rest) if first.chars().all(|c| c.is_ascii_hexdigit()) => rest,
                    _ => sym,
                };
                Frame {
                    name: name.to_string(),
                    object: (obj != "[unknown]").then(|| obj.to_string()),
                    kernel: obj == "[kernel.kallsyms]",
                }
            })
            .collect()
    }

    const LDSO: &str = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";

    /// Realistic stacks in `perf script` form, most copied from `perf record -a -g` on these
    /// machines (a shell loop forking and exec'ing), each headed by `# category: why`.
    const FIXTURES: &str = "
# page_table_copy: fork: copy_page_range under dup_mmap
    ffffffff815e85cc copy_page_range+0xd5c ([kernel.kallsyms])
    ffffffff815f3540 dup_mmap+0x3d0 ([kernel.kallsyms])
    ffffffff81355977 copy_process+0x1107 ([kernel.kallsyms])
    kernel_clone+0x94 ([kernel.kallsyms])
    __do_sys_clone+0x65 ([kernel.kallsyms])
    do_syscall_64+0x71 ([kernel.kallsyms])
    entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])
    _Fork+0x23 (/usr/lib/x86_64-linux-gnu/libc.so.6)

# page_table_copy: fork: page-table allocation below copy_page_range
    __memcg_kmem_charge_page+0x5 ([kernel.kallsyms])
    __alloc_frozen_pages_noprof+0x1a2 ([kernel.kallsyms])
    alloc_pages_noprof+0x4c ([kernel.kallsyms])
    __pmd_alloc+0x2e ([kernel.kallsyms])
    copy_page_range+0x180f ([kernel.kallsyms])
    dup_mmap+0x3d0 ([kernel.kallsyms])
    copy_process+0x1107 ([kernel.kallsyms])
    _Fork+0x23 (/usr/lib/x86_64-linux-gnu/libc.so.6)

# page_table_copy: fork: copy_pte_range.isra clone
    copy_pte_range.isra.0+0x21 ([kernel.kallsyms])
    copy_page_range+0x5db ([kernel.kallsyms])

# vma_dup: fork: anon_vma_fork
    __memcg_slab_post_alloc_hook+0x16a ([kernel.kallsyms])
    kmem_cache_alloc_noprof+0x434 ([kernel.kallsyms])
    anon_vma_fork+0xa8 ([kernel.kallsyms])
    dup_mmap+0x577 ([kernel.kallsyms])
    copy_process+0x1107 ([kernel.kallsyms])
    kernel_clone+0x94 ([kernel.kallsyms])
    __do_sys_clone+0x65 ([kernel.kallsyms])
    _Fork+0x23 (/usr/lib/x86_64-linux-gnu/libc.so.6)

# vma_dup: fork: maple-tree copy under dup_mmap
    mas_dup_build.constprop.0+0x120 ([kernel.kallsyms])
    __mt_dup+0x4d ([kernel.kallsyms])
    dup_mmap+0xf1 ([kernel.kallsyms])
    copy_process+0x1107 ([kernel.kallsyms])

# fork_other: fork: the rest of copy_process
    _raw_spin_lock+0x1c ([kernel.kallsyms])
    copy_process+0x211 ([kernel.kallsyms])
    kernel_clone+0x94 ([kernel.kallsyms])
    __do_sys_clone+0x65 ([kernel.kallsyms])
    _Fork+0x23 (/usr/lib/x86_64-linux-gnu/libc.so.6)

# fork_other: fork: the child's first return
    finish_task_switch.isra.0+0x93 ([kernel.kallsyms])
    schedule_tail+0x11 ([kernel.kallsyms])
    ret_from_fork+0x2b ([kernel.kallsyms])
    ret_from_fork_asm+0x1a ([kernel.kallsyms])
    _Fork+0x3a (/usr/lib/x86_64-linux-gnu/libc.so.6)

# fork_other: fork: libc's fork handlers, user side
    __run_fork_handlers+0x40 (/usr/lib/x86_64-linux-gnu/libc.so.6)
    __libc_fork+0x55 (/usr/lib/x86_64-linux-gnu/libc.so.6)
    main+0x31 (/tmp/forktest)

# cow_fault: COW fault in the application
    native_write_msr+0xd ([kernel.kallsyms])
    flush_tlb_mm_range+0x1c3 ([kernel.kallsyms])
    ptep_clear_flush+0x51 ([kernel.kallsyms])
    do_wp_page+0x6c1 ([kernel.kallsyms])
    __handle_mm_fault+0x9fa ([kernel.kallsyms])
    handle_mm_fault+0xd0 ([kernel.kallsyms])
    exc_page_fault+0x176 ([kernel.kallsyms])
    asm_exc_page_fault+0x22 ([kernel.kallsyms])
    LLVMBuildAlloca+0xc4 (/usr/lib/libLLVM.so.19)

# cow_fault: COW fault while relocating: faults are their own category
    do_wp_page+0x5df ([kernel.kallsyms])
    __handle_mm_fault+0x9fa ([kernel.kallsyms])
    handle_mm_fault+0xd0 ([kernel.kallsyms])
    exc_page_fault+0x176 ([kernel.kallsyms])
    asm_exc_page_fault+0x22 ([kernel.kallsyms])
    _dl_relocate_object+0x187 ($LDSO)
    dl_main+0x1e79 ($LDSO)
    _dl_sysdep_start+0x7f ($LDSO)

# cow_fault: COW fault while _dl_fixup patches the GOT
    copy_mc_enhanced_fast_string+0x10 ([kernel.kallsyms])
    wp_page_copy+0x8e ([kernel.kallsyms])
    do_wp_page+0x3c1 ([kernel.kallsyms])
    __handle_mm_fault+0x9fa ([kernel.kallsyms])
    asm_exc_page_fault+0x22 ([kernel.kallsyms])
    _dl_fixup+0x190 ($LDSO)
    _dl_runtime_resolve_xsavec+0x79 ($LDSO)

# file_fault: file fault-around under dl_main
    __lruvec_stat_mod_folio+0x64 ([kernel.kallsyms])
    folio_add_file_rmap_ptes+0x47 ([kernel.kallsyms])
    set_pte_range+0xf1 ([kernel.kallsyms])
    filemap_map_pages+0x1ce ([kernel.kallsyms])
    do_fault+0x2ec ([kernel.kallsyms])
    __handle_mm_fault+0x7fc ([kernel.kallsyms])
    handle_mm_fault+0xd0 ([kernel.kallsyms])
    exc_page_fault+0x176 ([kernel.kallsyms])
    asm_exc_page_fault+0x22 ([kernel.kallsyms])
    dl_main+0x6e8 ($LDSO)

# file_fault: next_uptodate_folio in the ld.so.cache lookup
    next_uptodate_folio+0xc1 ([kernel.kallsyms])
    filemap_map_pages+0x1fd ([kernel.kallsyms])
    do_fault+0x2ec ([kernel.kallsyms])
    asm_exc_page_fault+0x22 ([kernel.kallsyms])
    _dl_load_cache_lookup+0x148 ($LDSO)
    _dl_map_object+0x333 ($LDSO)
    [unknown] ([unknown])

# anon_fault: anonymous fault zeroing a TLS block
    clear_page_erms+0x7 ([kernel.kallsyms])
    get_page_from_freelist+0x1668 ([kernel.kallsyms])
    vma_alloc_folio_noprof+0x61 ([kernel.kallsyms])
    do_anonymous_page+0x31e ([kernel.kallsyms])
    __handle_mm_fault+0xa1e ([kernel.kallsyms])
    handle_mm_fault+0xd0 ([kernel.kallsyms])
    exc_page_fault+0x176 ([kernel.kallsyms])
    asm_exc_page_fault+0x22 ([kernel.kallsyms])
    _dl_allocate_tls_storage+0x56 ($LDSO)

# anon_fault: a fault only seen at its entry
    asm_exc_page_fault+0x22 ([kernel.kallsyms])
    main+0x10 (/tmp/a.out)

# exit_teardown: child exit: zap_pte_range under exit_mmap
    zap_present_ptes.isra.0+0x1a2 ([kernel.kallsyms])
    zap_pte_range+0x21f ([kernel.kallsyms])
    unmap_page_range+0x64d ([kernel.kallsyms])
    unmap_vmas+0x94 ([kernel.kallsyms])
    exit_mmap+0xd5 ([kernel.kallsyms])
    __mmput+0x41 ([kernel.kallsyms])
    do_exit+0x2c1 ([kernel.kallsyms])
    do_group_exit+0x35 ([kernel.kallsyms])
    __x64_sys_exit_group+0x18 ([kernel.kallsyms])
    do_syscall_64+0x71 ([kernel.kallsyms])
    entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])
    _exit+0x2c (/usr/lib/x86_64-linux-gnu/libc.so.6)

# exit_teardown: child exit: maple-tree walk in exit_mmap is not VMA dup
    mas_walk+0x114 ([kernel.kallsyms])
    mas_find+0xc9 ([kernel.kallsyms])
    exit_mmap+0x8c ([kernel.kallsyms])
    __mmput+0x41 ([kernel.kallsyms])
    exit_mm+0xb6 ([kernel.kallsyms])
    do_exit+0x2c1 ([kernel.kallsyms])

# exit_teardown: free_pgtables with no context still counts as exit
    free_pgd_range+0x2a1 ([kernel.kallsyms])
    free_pgtables+0x11c ([kernel.kallsyms])

# exit_teardown: libc's exit handlers
    _IO_cleanup+0x2f (/usr/lib/x86_64-linux-gnu/libc.so.6)
    __run_exit_handlers+0x1d1 (/usr/lib/x86_64-linux-gnu/libc.so.6)
    exit+0x1e (/usr/lib/x86_64-linux-gnu/libc.so.6)

# wait: wait: reaping the child
    _raw_spin_unlock_irq+0x11 ([kernel.kallsyms])
    release_task+0x80 ([kernel.kallsyms])
    wait_consider_task+0x550 ([kernel.kallsyms])
    __do_wait+0xa0 ([kernel.kallsyms])
    do_wait+0x65 ([kernel.kallsyms])
    kernel_wait4+0x9c ([kernel.kallsyms])
    do_syscall_64+0x71 ([kernel.kallsyms])
    entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])
    __GI___wait4+0x13 (/usr/lib/x86_64-linux-gnu/libc.so.6)

# wait: wait: rescheduled on the way back from wait4
    __schedule+0x3d4 ([kernel.kallsyms])
    schedule+0x23 ([kernel.kallsyms])
    exit_to_user_mode_loop+0x9a ([kernel.kallsyms])
    do_syscall_64+0x71 ([kernel.kallsyms])
    __GI___wait4+0x13 (/usr/lib/x86_64-linux-gnu/libc.so.6)

# exec_kernel: exec: begin_new_exec
    membarrier_exec_mmap+0x5 ([kernel.kallsyms])
    begin_new_exec+0x374 ([kernel.kallsyms])
    load_elf_binary+0x31c ([kernel.kallsyms])
    bprm_execve+0x2bf ([kernel.kallsyms])
    do_execveat_common.isra.0+0x1a6 ([kernel.kallsyms])
    __x64_sys_execve+0x34 ([kernel.kallsyms])
    do_syscall_64+0x71 ([kernel.kallsyms])
    entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])
    __GI___execve+0x7 (/usr/lib/x86_64-linux-gnu/libc.so.6)
    [unknown] (/usr/bin/env)

# exec_kernel: exec: the old image torn down is exec's
    vm_normal_page+0x1f ([kernel.kallsyms])
    unmap_page_range+0x4c9 ([kernel.kallsyms])
    unmap_vmas+0x94 ([kernel.kallsyms])
    exit_mmap+0xd5 ([kernel.kallsyms])
    __mmput+0x41 ([kernel.kallsyms])
    begin_new_exec+0x519 ([kernel.kallsyms])
    load_elf_binary+0x31c ([kernel.kallsyms])
    bprm_execve+0x2bf ([kernel.kallsyms])
    __x64_sys_execve+0x34 ([kernel.kallsyms])
    __GI___execve+0x7 (/usr/lib/x86_64-linux-gnu/libc.so.6)

# exec_kernel: exec: maple-tree walk in the old image's exit_mmap
    mas_walk+0x114 ([kernel.kallsyms])
    mas_find+0xc9 ([kernel.kallsyms])
    exit_mmap+0x8c ([kernel.kallsyms])
    __mmput+0x41 ([kernel.kallsyms])
    begin_new_exec+0x519 ([kernel.kallsyms])
    load_elf_binary+0x31c ([kernel.kallsyms])

# exec_kernel: exec: mapping the interpreter
    __mmap_region+0x628 ([kernel.kallsyms])
    do_mmap+0x494 ([kernel.kallsyms])
    vm_mmap_pgoff+0x124 ([kernel.kallsyms])
    elf_load+0x5b ([kernel.kallsyms])
    load_elf_interp.constprop.0+0x1c0 ([kernel.kallsyms])
    load_elf_binary+0xaf1 ([kernel.kallsyms])
    bprm_execve+0x2bf ([kernel.kallsyms])

# ldso_mapping: ld.so: its mmap, kernel side
    uprobe_mmap+0x0 ([kernel.kallsyms])
    __mmap_region+0x628 ([kernel.kallsyms])
    do_mmap+0x494 ([kernel.kallsyms])
    vm_mmap_pgoff+0x124 ([kernel.kallsyms])
    ksys_mmap_pgoff+0x158 ([kernel.kallsyms])
    do_syscall_64+0x71 ([kernel.kallsyms])
    entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])
    mmap64+0x13 ($LDSO)
    [unknown] ([unknown])

# ldso_mapping: ld.so: its openat
    kmem_cache_free+0x1a2 ([kernel.kallsyms])
    do_sys_openat2+0x88 ([kernel.kallsyms])
    __x64_sys_openat+0x5d ([kernel.kallsyms])
    do_syscall_64+0x71 ([kernel.kallsyms])
    entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])
    __GI___open64_nocancel+0x2d ($LDSO)
    _dl_map_object+0x37a ($LDSO)

# ldso_mapping: ld.so: a VMA split by its mmap is not fork's VMA dup
    mas_wr_bnode+0xf53 ([kernel.kallsyms])
    mas_store_prealloc+0x1b9 ([kernel.kallsyms])
    vma_complete+0x299 ([kernel.kallsyms])
    __split_vma+0x27f ([kernel.kallsyms])
    vms_gather_munmap_vmas+0xc2 ([kernel.kallsyms])
    __mmap_region+0x28d ([kernel.kallsyms])
    do_mmap+0x494 ([kernel.kallsyms])
    vm_mmap_pgoff+0x124 ([kernel.kallsyms])
    ksys_mmap_pgoff+0x158 ([kernel.kallsyms])
    mmap64+0x13 ($LDSO)

# ldso_mapping: ld.so: MAP_FIXED over its reservation unmaps pages
    zap_pte_range+0x11f ([kernel.kallsyms])
    unmap_page_range+0x64d ([kernel.kallsyms])
    unmap_vmas+0x94 ([kernel.kallsyms])
    vms_clear_ptes+0xd0 ([kernel.kallsyms])
    vms_complete_munmap_vmas+0x8b ([kernel.kallsyms])
    __mmap_region+0x3a1 ([kernel.kallsyms])
    do_mmap+0x494 ([kernel.kallsyms])
    vm_mmap_pgoff+0x124 ([kernel.kallsyms])
    mmap64+0x13 ($LDSO)

# ldso_mapping: ld.so: user side, mapping an object
    _dl_map_segments+0x1c4 ($LDSO)
    _dl_map_object_from_fd+0x9a1 ($LDSO)
    _dl_map_object+0x1f2 ($LDSO)

# ldso_mapping: ld.so: strlen inside the search-path set-up
    strlen+0x34 ($LDSO)
    _dl_init_paths+0x32 ($LDSO)
    dl_main+0x1831 ($LDSO)
    _dl_sysdep_start+0x7f ($LDSO)
    _dl_start_user+0x0 ($LDSO)

# ldso_relocation: ld.so: relocation
    _dl_relocate_object+0x739 ($LDSO)
    dl_main+0x1e79 ($LDSO)
    _dl_sysdep_start+0x7f ($LDSO)
    _dl_start_user+0x0 ($LDSO)

# ldso_relocation: ld.so: inlined RELA loop
    elf_dynamic_do_Rela+0x2f0 ($LDSO)

# symbol_lookup: ld.so: lone do_lookup_x (no frame pointers)
    do_lookup_x+0x76 ($LDSO)

# symbol_lookup: ld.so: start-up lookup under relocation
    check_match+0x3e ($LDSO)
    do_lookup_x+0x360 ($LDSO)
    _dl_lookup_symbol_x+0x58 ($LDSO)
    _dl_relocate_object+0x61a ($LDSO)
    dl_main+0x1e79 ($LDSO)

# lazy_binding: ld.so: lone _dl_fixup
    _dl_fixup+0x55 ($LDSO)

# lazy_binding: ld.so: lookup reached from _dl_fixup is lazy binding
    do_lookup_x+0x360 ($LDSO)
    _dl_lookup_symbol_x+0x58 ($LDSO)
    _dl_fixup+0xd7 ($LDSO)
    _dl_runtime_resolve_xsavec+0x79 ($LDSO)
    child+0x12 (/tmp/forktest)
    main+0x45 (/tmp/forktest)

# lazy_binding: ld.so: _dl_fixup under a garbage outer frame
    _dl_fixup+0x2 ($LDSO)
    _dl_sysdep_start+0x7f ($LDSO)
    _dl_start_user+0x0 ($LDSO)

# initializers: initializers: _dl_init
    _dl_init+0x20 ($LDSO)

# initializers: initializers: a constructor's own code
    std::locale::_Impl::_Impl+0x99 (/usr/lib/x86_64-linux-gnu/libstdc++.so.6)
    _GLOBAL__sub_I_locale_init.cc+0x2a (/usr/lib/x86_64-linux-gnu/libstdc++.so.6)
    call_init+0xa1 ($LDSO)
    _dl_init+0x7c ($LDSO)

# initializers: initializers: a constructor that dlopens
    _dl_map_object+0x1f2 ($LDSO)
    dl_open_worker_begin+0xac ($LDSO)
    dlopen+0x4e (/usr/lib/x86_64-linux-gnu/libc.so.6)
    plugin_ctor+0x1e (/usr/lib/libplugin.so)
    call_init+0xa1 ($LDSO)
    _dl_init+0x7c ($LDSO)

# lazy_binding: initializers: the lazy binding a constructor triggers is lazy binding
    do_lookup_x+0x360 ($LDSO)
    _dl_fixup+0xd7 ($LDSO)
    _dl_runtime_resolve_xsavec+0x79 ($LDSO)
    plugin_ctor+0x1e (/usr/lib/libplugin.so)
    call_init+0xa1 ($LDSO)
    _dl_init+0x7c ($LDSO)

# tls_setup: TLS: allocation
    memset+0x3d ($LDSO)
    _dl_allocate_tls_init+0x80 ($LDSO)
    init_tls+0xd2 ($LDSO)
    dl_main+0x2b3c ($LDSO)

# tls_setup: TLS: static binary
    __libc_setup_tls+0x7a (/tmp/static)

# ldso_other: ld.so: dl_main itself
    dl_main+0x6e8 ($LDSO)
    _dl_sysdep_start+0x7f ($LDSO)

# ldso_other: ld.so: an unnamed helper alone
    strlen+0x34 ($LDSO)

# ldso_other: ld.so: stripped, unsymbolised
    [unknown] ($LDSO)

# ldso_other: ld.so: a syscall no rule names (arch_prctl)
    do_arch_prctl_64+0x31 ([kernel.kallsyms])
    __do_sys_arch_prctl+0x1e ([kernel.kallsyms])
    do_syscall_64+0x71 ([kernel.kallsyms])
    init_cpu_features+0x8a0 ($LDSO)

# application: application code
    hash_insert+0x2e (/tmp/app)
    main+0x91 (/tmp/app)
    __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)

# application: application: libc's malloc is the program's
    malloc+0x36 (/usr/lib/x86_64-linux-gnu/libc.so.6)

# application: application: unsymbolised but in the program
    [unknown] (/usr/bin/env)

# kernel_other: kernel: the program's own mmap
    do_mmap+0x494 ([kernel.kallsyms])
    vm_mmap_pgoff+0x124 ([kernel.kallsyms])
    ksys_mmap_pgoff+0x158 ([kernel.kallsyms])
    mmap64+0x13 (/usr/lib/x86_64-linux-gnu/libc.so.6)
    sysmalloc+0x5d2 (/usr/lib/x86_64-linux-gnu/libc.so.6)

# kernel_other: kernel: the program's munmap unmaps pages
    zap_pte_range+0x11f ([kernel.kallsyms])
    unmap_page_range+0x64d ([kernel.kallsyms])
    unmap_vmas+0x94 ([kernel.kallsyms])
    do_vmi_align_munmap+0x1b2 ([kernel.kallsyms])
    __vm_munmap+0xb2 ([kernel.kallsyms])
    __x64_sys_munmap+0x1b ([kernel.kallsyms])
    munmap+0xb (/usr/lib/x86_64-linux-gnu/libc.so.6)

# kernel_other: kernel: an interrupt while the program ran
    finish_task_switch.isra.0+0x93 ([kernel.kallsyms])
    __schedule+0x3d4 ([kernel.kallsyms])
    schedule+0x23 ([kernel.kallsyms])
    irqentry_exit_to_user_mode+0x110 ([kernel.kallsyms])
    asm_sysvec_apic_timer_interrupt+0x16 ([kernel.kallsyms])
    llvm::X86RegisterInfo::eliminateFrameIndex+0x320 (/usr/lib/libLLVM.so.19)

# kernel_other: kernel: an interrupt during the page-table copy is not fork's
    __do_softirq+0xc8 ([kernel.kallsyms])
    __irq_exit_rcu+0x7a ([kernel.kallsyms])
    sysvec_apic_timer_interrupt+0x6e ([kernel.kallsyms])
    asm_sysvec_apic_timer_interrupt+0x16 ([kernel.kallsyms])
    copy_pte_range+0x5db ([kernel.kallsyms])
    copy_page_range+0x5db ([kernel.kallsyms])
    dup_mmap+0x3d0 ([kernel.kallsyms])

# kernel_other: kernel: only kernel frames, nothing named
    _raw_spin_lock+0x1c ([kernel.kallsyms])

# unknown: unknown: nothing usable
    [unknown] ([unknown])
    [unknown] ([unknown])
";

    /// The fixtures as (what, category, frames).
    fn fixtures() -> Vec<(String, Category, Vec<Frame>)> {
        FIXTURES
            .split("\n# ")
            .filter(|p| !p.trim().is_empty())
            .map(|p| {
                let (head, body) = p.split_once('\n').unwrap();
                let (name, what) = head.trim_start_matches("# ").split_once(": ").unwrap();
                let category = Category::from_name(name).expect(name);
                (
                    what.to_string(),
                    category,
                    perf(&body.replace("$LDSO", LDSO)),
                )
            })
            .collect()
    }

    #[test]
    fn fixtures_classify_as_documented() {
        let mut failures = Vec::new();
        for (what, want, stack) in fixtures() {
            let got = classify(&stack);
            if got != want {
                failures.push(format!("{what}: got {got:?}, want {want:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn every_category_has_a_fixture() {
        let covered: Vec<Category> = fixtures().iter().map(|f| f.1).collect();
        for c in Category::ALL {
            assert!(covered.contains(&c), "no fixture for {c:?}");
        }
    }

    #[test]
    fn empty_stack_is_unknown() {
        assert_eq!(classify::<Frame>(&[]), Unknown);
    }

    #[test]
    fn borrowed_frames_classify_like_owned_ones() {
        let owned = perf(&format!(
            "do_lookup_x+0x76 ({LDSO})\n_dl_fixup+0xd7 ({LDSO})"
        ));
        let borrowed: Vec<FrameRef> = owned
            .iter()
            .map(|f| FrameRef {
                name: &f.name,
                object: f.object.as_deref(),
                kernel: f.kernel,
            })
            .collect();
        assert_eq!(classify(&borrowed), LazyBinding);
        assert_eq!(classify(&owned), LazyBinding);
    }

    #[test]
    fn ldso_wrappers_only_count_in_ldso() {
        let in_libc = perf("mmap64+0x13 (/usr/lib/x86_64-linux-gnu/libc.so.6)");
        let in_ldso = perf(&format!("mmap64+0x13 ({LDSO})"));
        assert_eq!(classify(&in_libc), Application);
        assert_eq!(classify(&in_ldso), LdsoMapping);
    }

    #[test]
    fn names_are_cleaned_without_allocating() {
        assert_eq!(
            clean_name("do_execveat_common.isra.0"),
            "do_execveat_common"
        );
        assert_eq!(clean_name("copy_page_range+0xd5c"), "copy_page_range");
        assert_eq!(clean_name("__GI___wait4"), "__wait4");
        assert_eq!(clean_name("memcpy@@GLIBC_2.14"), "memcpy");
        assert_eq!(clean_name("puts@plt"), "puts");
        assert_eq!(
            clean_name("zap_pte_range.constprop.0.cold"),
            "zap_pte_range"
        );
        assert_eq!(
            clean_name("_GLOBAL__sub_I_locale_init.cc"),
            "_GLOBAL__sub_I_locale_init.cc"
        );
        assert_eq!(clean_name("[unknown]"), "[unknown]");
    }

    #[test]
    fn ldso_objects_are_recognised() {
        assert!(is_ldso_object(LDSO));
        assert!(is_ldso_object("ld-linux-aarch64.so.1"));
        assert!(is_ldso_object("/lib/ld-musl-x86_64.so.1"));
        assert!(is_ldso_object("/lib64/ld64.so.2"));
        assert!(!is_ldso_object("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(!is_ldso_object("/usr/bin/ld"));
    }

    #[test]
    fn names_labels_and_serde_agree() {
        for (i, c) in Category::ALL.into_iter().enumerate() {
            assert_eq!(INFO[i].category, c, "INFO is in ALL's order");
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.name()));
            assert_eq!(serde_json::from_str::<Category>(&json).unwrap(), c);
            assert_eq!(Category::from_name(c.name()), Some(c));
            assert_eq!(Category::from_label(c.label()), Some(c));
            assert!(!c.label().contains(';') && !c.label().contains('\t'));
        }
        let mut labels: Vec<_> = Category::ALL.iter().map(|c| c.label()).collect();
        let mut colours: Vec<_> = Category::ALL.iter().map(|c| c.colour().hex()).collect();
        labels.sort();
        labels.dedup();
        colours.sort();
        colours.dedup();
        assert_eq!(labels.len(), Category::ALL.len(), "labels are distinct");
        assert_eq!(colours.len(), Category::ALL.len(), "colours are distinct");
    }

    /// The families stay visually grouped: fork red/orange, faults yellow/brown, exit and wait
    /// purple, exec and ld.so blue/green, the rest grey; and black frame text stays readable.
    #[test]
    fn colour_families() {
        for c in Category::ALL {
            let Rgb(r, g, b) = c.colour();
            let (r, g, b) = (i32::from(r), i32::from(g), i32::from(b));
            let ok = match c {
                PageTableCopy | VmaDup | ForkOther => r > g + 40 && g > b,
                CowFault | FileFault | AnonFault => r >= g && g > b + 40,
                ExitTeardown | Wait => b > g + 20 && r > g,
                ExecKernel | LdsoMapping | LdsoRelocation | SymbolLookup | LazyBinding
                | Initializers | TlsSetup | LdsoOther => r < g.max(b) - 30,
                Application | KernelOther | Unknown => (r - g).abs() < 25 && (g - b).abs() < 25,
            };
            assert!(ok, "{c:?} {:?} is out of its family", c.colour());
            // Relative luminance (approximate) high enough for black 12px text.
            let lum = (299 * r + 587 * g + 114 * b) / 1000;
            assert!(lum >= 110, "{c:?} is too dark for black text ({lum})");
        }
    }

    /// docs/taxonomy.md's table and this module list the same categories, labels and colours.
    #[test]
    fn taxonomy_doc_matches_code() {
        let doc = include_str!("../../docs/taxonomy.md");
        let mut rows = Vec::new();
        for line in doc.lines() {
            let cells: Vec<&str> = line
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            if cells.len() < 4 || !cells[0].starts_with('`') {
                continue;
            }
            let name = cells[0].trim_matches('`');
            let colour = cells[3]
                .split_whitespace()
                .find(|w| w.starts_with("`#"))
                .unwrap_or("");
            rows.push((
                name.to_string(),
                cells[1].to_string(),
                colour.trim_matches('`').to_string(),
            ));
        }
        for c in Category::ALL {
            let row = rows.iter().find(|r| r.0 == c.name());
            let Some(row) = row else {
                panic!("docs/taxonomy.md has no row for `{}`", c.name());
            };
            assert_eq!(
                row.1,
                c.label(),
                "label of {} in docs/taxonomy.md",
                c.name()
            );
            assert_eq!(
                row.2,
                c.colour().hex(),
                "colour of {} in docs/taxonomy.md",
                c.name()
            );
        }
        for row in &rows {
            assert!(
                Category::from_name(&row.0).is_some(),
                "docs/taxonomy.md lists `{}`, which the code does not have",
                row.0
            );
        }
        assert_eq!(rows.len(), Category::ALL.len(), "one row per category");
    }

    /// A million stacks must classify well under a second (release build).
    #[test]
    fn a_million_stacks_classify_fast() {
        let stacks: Vec<Vec<Frame>> = fixtures().into_iter().map(|f| f.2).collect();
        let borrowed: Vec<Vec<FrameRef>> = stacks
            .iter()
            .map(|s| {
                s.iter()
                    .map(|f| FrameRef {
                        name: &f.name,
                        object: f.object.as_deref(),
                        kernel: f.kernel,
                    })
                    .collect()
            })
            .collect();
        let n = if cfg!(debug_assertions) {
            100_000
        } else {
            1_000_000
        };
        // Best of three rounds: the machine may be busy with other work.
        let mut took = std::time::Duration::MAX;
        for _ in 0..3 {
            let start = std::time::Instant::now();
            let mut counts = [0u64; 19];
            for i in 0..n {
                counts[classify(&borrowed[i % borrowed.len()]) as usize] += 1;
            }
            took = took.min(start.elapsed());
            assert_eq!(counts.iter().sum::<u64>(), n as u64);
        }
        let frames: usize = borrowed.iter().map(Vec::len).sum::<usize>() * n / borrowed.len();
        eprintln!(
            "classified {n} stacks ({frames} frames) in {took:?}: {:.0} ns/stack",
            took.as_nanos() as f64 / n as f64
        );
        if !cfg!(debug_assertions) {
            assert!(took.as_secs_f64() < 0.5, "{n} stacks took {took:?}");
        }
    }
}
