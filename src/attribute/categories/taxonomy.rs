//! The taxonomy itself: the categories a sample can fall in, with their stable names, labels,
//! colours and one line each on what they cover.
//!
//! In: nothing (constants). Out: [`Category`] and its [`Category::name`], [`Category::label`],
//! [`Category::colour`] ([`Rgb`]) and [`Category::about`], used by the classifier, reports,
//! folded files and the flame graph. docs/taxonomy.md mirrors the table (a unit test checks).

use std::fmt;

/// Where the time of a sample went. The names ([`Category::name`], snake_case) are stable:
/// reports, folded files and diffs rely on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    CpuFeatures,
    LdsoOther,
    Application,
    KernelOther,
    Instrumentation,
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
pub(super) struct Info {
    pub(super) category: Category,
    name: &'static str,
    label: &'static str,
    colour: Rgb,
    about: &'static str,
}

use Category::*;

/// The taxonomy, in display order (families together). docs/taxonomy.md mirrors it.
#[rustfmt::skip]
pub(super) const INFO: [Info; 21] = [
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
    Info { category: CpuFeatures, name: "cpu_features", label: "CPU feature detection", colour: Rgb(96, 150, 196),
        about: "glibc's init_cpu_features and cache-info detection (cpuid in loops): in ld.so, or in a static program's libc" },
    Info { category: LdsoOther, name: "ldso_other", label: "ld.so: other", colour: Rgb(176, 220, 168),
        about: "the rest of ld.so: _dl_start, _dl_sysdep_start, dl_main, version checks" },
    Info { category: Application, name: "application", label: "application", colour: Rgb(168, 168, 168),
        about: "the program and its libraries after the entry point" },
    Info { category: KernelOther, name: "kernel_other", label: "kernel: other", colour: Rgb(196, 190, 176),
        about: "kernel work that is not process creation: the program's other syscalls, interrupts" },
    Info { category: Instrumentation, name: "instrumentation", label: "instrumentation", colour: Rgb(112, 112, 112),
        about: "ldcost's own tracing in the target: breakpoint traps (exc_int3), single-steps (exc_debug), ptrace_stop/ptrace_notify; left out of the shares" },
    Info { category: Unknown, name: "unknown", label: "unknown", colour: Rgb(222, 222, 222),
        about: "no usable frame" },
];

impl Category {
    /// Every category, in display order (families together): the order of the table above,
    /// which is also the enum's (checked when this constant is built: a misordered row does
    /// not compile).
    pub const ALL: [Category; 21] = {
        let mut all = [Unknown; 21];
        let mut i = 0;
        while i < all.len() {
            assert!(
                INFO[i].category as usize == i,
                "INFO is in the enum's order"
            );
            all[i] = INFO[i].category;
            i += 1;
        }
        all
    };

    fn info(self) -> &'static Info {
        &INFO[self as usize]
    }

    /// The stable snake_case name, as documents and folded files write it.
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
