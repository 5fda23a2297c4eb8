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
//! Every rule of the table (rules.txt, read by [`rules`] and, for the kernel's syscall entry
//! points, [`syscalls`]) names a frame by exact name or by prefix, for kernel frames, user
//! frames, or only user frames in ld.so's own object, and has a *kind* that says how it
//! decides. Names are compared after dropping what compilers and perf add: `+0x1f` offsets,
//! `@plt`/`@@GLIBC_2.2.5` versions, `.isra.0`/`.constprop.0`/`.part.0`/`.cold` clones, and
//! glibc's `__GI_` alias prefix.
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
//! 4. (The breakdown's) the fork loop's context: a lookup in a forked child is lazy binding.
//! 5. (The breakdown's, [`in_phase`]) a user-mode sample that rule 2 left at
//!    [`Category::Application`] or [`Category::LdsoOther`] takes its phase's category:
//!    [`Category::Initializers`] in a `call_init` span, [`Category::LdsoRelocation`] in a
//!    `_dl_relocate_object` span. Faults, kernel samples and named frames keep theirs.
//!
//! Classification allocates nothing: the table (rules.txt, data) is compiled once into two hash
//! maps (kernel and user names) and two short prefix lists; benches/classify_speed.rs measures
//! a million stacks against a bound of half a second in a release build.
//!
//! # Where things are
//!
//! - `taxonomy.rs`: the categories, their names, labels and colours.
//! - `rules.txt`: the rules table, as data; `table.rs` reads and compiles it, and cleans frame
//!   names.
//! - `precedence.rs`: [`classify`], which rule decides.
//! - fixtures.txt / `fixtures.rs` and `tests.rs`: realistic stacks and the unit tests.

mod precedence;
mod table;
mod taxonomy;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;

pub use precedence::{classify, in_phase};
pub use table::{
    clean_name, is_ldso_object, rules, syscalls, Kind, Match, Rule, Scope, SyscallRule,
    LDSO_OBJECTS, SYSCALL_PREFIXES,
};
pub use taxonomy::{Category, Rgb};

/// One frame of a call stack.
#[derive(Debug, Clone, PartialEq, Eq)]
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

impl Frame {
    /// The frame borrowed, names not copied.
    pub fn borrowed(&self) -> FrameRef<'_> {
        FrameRef {
            name: &self.name,
            object: self.object.as_deref(),
            kernel: self.kernel,
        }
    }
}

impl StackFrame for Frame {
    fn name(&self) -> &str {
        self.borrowed().name
    }
    fn object(&self) -> Option<&str> {
        self.borrowed().object
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
