//! Stage 2: the dependency closure, resolved exactly as glibc's ld.so resolves it.
//!
//! In: a target path and the environment that matters to ld.so (LD_LIBRARY_PATH,
//! LD_BIND_NOW). Out: a [`Closure`]: every object in load order (which is also the global
//! symbol lookup scope), how each DT_NEEDED entry was found, and the [`ObjectInfo`] of each.
//!
//! The algorithm is glibc 2.36 `elf/dl-load.c` `_dl_map_object` driven breadth-first by
//! `elf/dl-deps.c` `_dl_map_object_deps`:
//! 1. a name already loaded (by the name it was asked for, its DT_SONAME, or its path; ld.so
//!    itself answers to its PT_INTERP path and its soname) is not loaded again;
//! 2. a name with a `/` is opened as is, after `$ORIGIN`/`$LIB`/`$PLATFORM` expansion;
//! 3. otherwise, unless the needing object has DT_RUNPATH: the DT_RPATH of the needing object,
//!    then of the object that loaded it, up to the executable (an object's DT_RPATH is ignored
//!    when it also has DT_RUNPATH); then LD_LIBRARY_PATH; then the needing object's own
//!    DT_RUNPATH; then /etc/ld.so.cache; then the default directories (the last two skipped
//!    for an object marked DF_1_NODEFLIB);
//! 4. every search directory is tried with its glibc-hwcaps and legacy subdirectories first
//!    ([`rules`]); a file of the wrong ELF class or machine is skipped, as ld.so skips it;
//! 5. a file found under a new name that is the same file (device and inode) as a loaded
//!    object is that object.
//!
//! A library that cannot be found is recorded ([`Missing`]) the way ldd reports it ("not
//! found"), and the rest of the closure is still resolved.

pub mod cache;
mod error;
mod parallel;
mod resolver;
pub mod rules;
mod unused;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::elf::{self, ElfError, MappedFile, ObjectInfo, ObjectKind};
pub use cache::LdCache;
pub use error::DepsError;
use resolver::{file_id, origin_of, Loaded, Resolver};
pub use rules::{RulesSource, SearchRules};
pub use unused::{
    removed_by_dropping_all, unused_direct, unused_direct_of_target, UnusedDependency,
};

/// Which rule found an object (the "how" column of the tree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoundBy {
    /// The target itself.
    Target,
    /// The program interpreter (PT_INTERP), mapped by the kernel.
    Interpreter,
    /// A DT_NEEDED name containing a slash, opened as a path.
    Path,
    /// DT_RPATH of the named object (the needing object or one of its loaders).
    Rpath {
        of: String,
    },
    LdLibraryPath,
    /// DT_RUNPATH of the needing object.
    Runpath {
        of: String,
    },
    LdSoCache,
    DefaultPath,
}

impl FoundBy {
    pub fn label(&self) -> String {
        match self {
            FoundBy::Target => "target".into(),
            FoundBy::Interpreter => "interpreter".into(),
            FoundBy::Path => "path".into(),
            FoundBy::Rpath { of } => format!("RPATH of {}", short(of)),
            FoundBy::LdLibraryPath => "LD_LIBRARY_PATH".into(),
            FoundBy::Runpath { of } => format!("RUNPATH of {}", short(of)),
            FoundBy::LdSoCache => "ld.so.cache".into(),
            FoundBy::DefaultPath => "default path".into(),
        }
    }
}

fn short(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// One DT_NEEDED entry and what it resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub name: String,
    /// Index into [`Closure::objects`]; None when the library was not found.
    pub object: Option<usize>,
    /// True when this edge is the one that loaded the object (false: already loaded).
    pub first: bool,
}

/// One object of the closure.
#[derive(Debug, Clone)]
pub struct Object {
    /// Path as ld.so names it (`l_name`; what ldd prints after `=>`).
    pub path: String,
    /// The name it was first asked for (DT_NEEDED), or the target path.
    pub name: String,
    pub found_by: FoundBy,
    /// Index of the object whose DT_NEEDED loaded it.
    pub loaded_by: Option<usize>,
    /// Breadth-first depth (target 0).
    pub depth: u32,
    pub needed: Vec<Edge>,
    /// False only for an interpreter nothing names in DT_NEEDED: mapped and relocated, but
    /// not in the symbol lookup scope (rtld.c removes it from the link-map chain; ldd does
    /// not list it).
    pub in_scope: bool,
    pub info: ObjectInfo,
}

/// A DT_NEEDED entry ld.so would not find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub name: String,
    pub needed_by: String,
    /// Why, when it is not simply absent (e.g. a candidate that is not ELF stops ld.so).
    pub reason: Option<String>,
}

/// The resolved closure.
#[derive(Debug, Clone)]
pub struct Closure {
    pub rules: SearchRules,
    /// In load order, which is the global lookup scope order; the target is first.
    pub objects: Vec<Object>,
    pub missing: Vec<Missing>,
    /// Whether LD_LIBRARY_PATH was taken into account, and its value.
    pub ld_library_path: Option<String>,
    pub bind_now_env: bool,
}

/// What the resolver takes from the environment and the system.
#[derive(Debug, Clone)]
pub struct ResolveOptions {
    pub ld_library_path: Option<String>,
    /// LD_BIND_NOW set (non-empty): every object binds eagerly.
    pub bind_now: bool,
    pub cache_path: PathBuf,
    /// None: ask the target's interpreter ([`SearchRules::detect`]).
    pub rules: Option<SearchRules>,
    /// Analyse the target alone, without resolving its dependencies.
    pub object_only: bool,
    /// How the executable's `$ORIGIN` is computed.
    pub origin: OriginMode,
}

/// The directory `$ORIGIN` means for the executable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OriginMode {
    /// As when the kernel starts the program: ld.so reads /proc/self/exe, so symlinks are
    /// resolved (`_dl_get_origin`).
    #[default]
    Exec,
    /// As `ldd PATH` (ld.so run directly on the file): the directory of the path as given.
    /// The two differ for a program reached through a symlink, e.g. /usr/bin/jfr ->
    /// /etc/alternatives/jfr -> /usr/lib/jvm/.../bin/jfr with RUNPATH $ORIGIN/../lib.
    AsGiven,
}

impl ResolveOptions {
    /// The options a process started from this environment would get.
    pub fn from_env() -> ResolveOptions {
        ResolveOptions {
            ld_library_path: std::env::var("LD_LIBRARY_PATH").ok(),
            bind_now: std::env::var_os("LD_BIND_NOW").is_some_and(|v| !v.is_empty()),
            cache_path: PathBuf::from("/etc/ld.so.cache"),
            rules: None,
            object_only: false,
            origin: OriginMode::Exec,
        }
    }
}

/// The interpreter the system uses for native 64-bit programs (what ldd runs).
pub const DEFAULT_INTERP: &str = if cfg!(target_arch = "aarch64") {
    "/lib/ld-linux-aarch64.so.1"
} else {
    "/lib64/ld-linux-x86-64.so.2"
};

const HOST_MACHINE: u16 = if cfg!(target_arch = "aarch64") {
    elf::EM_AARCH64
} else {
    elf::EM_X86_64
};

/// Whether `interp` is the system's own ld.so (the same file as [`DEFAULT_INTERP`]).
fn is_system_interp(interp: &str) -> bool {
    match (
        resolver::file_id(Path::new(interp)),
        resolver::file_id(Path::new(DEFAULT_INTERP)),
    ) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Analyses one file (the `elf` stage on a mapped file). The map is kept until the process
/// exits, for the lookup model's second reading ([`MappedFile::open_kept`] says why).
pub fn analyze_file(path: &Path, lazy: bool) -> Result<ObjectInfo, ElfError> {
    let f = MappedFile::open_kept(path)?;
    elf::analyze(f.bytes(), path, lazy)
}

/// Resolves the closure of `target`.
pub fn resolve(target: &Path, opts: &ResolveOptions) -> Result<Closure, DepsError> {
    let lazy = !opts.bind_now;
    // Asking the system's ld.so for its search rules is a subprocess: ask it on the other
    // core while the target is analysed (almost every target on the host uses that ld.so;
    // when it does not, the answer is dropped and nothing else changes).
    let (main_info, system_rules) = std::thread::scope(|s| {
        // A thread the system refuses (ulimit -v, -u) only loses the overlap: the rules are
        // then asked for after the analysis.
        let detect = (opts.rules.is_none() && !opts.object_only)
            .then(|| {
                std::thread::Builder::new()
                    .spawn_scoped(s, || SearchRules::detect(DEFAULT_INTERP))
                    .ok()
            })
            .flatten();
        let info = analyze_file(target, lazy);
        (info, detect.and_then(|d| d.join().ok()))
    });
    let main_info = main_info?;
    let mut system_rules = system_rules;
    let mut detect_system = |interp: &str| match system_rules.take() {
        Some(r) if interp == DEFAULT_INTERP => r,
        _ => SearchRules::detect(interp),
    };
    let target_str = target.to_string_lossy().into_owned();
    let machine = if main_info.machine == "aarch64" {
        elf::EM_AARCH64
    } else {
        elf::EM_X86_64
    };
    // A shared library has no PT_INTERP of its own; when it is loaded (or inspected with
    // ldd), the system's ld.so is the interpreter, so it joins the closure like one.
    let interp = main_info.interpreter.clone().or_else(|| {
        (main_info.kind == ObjectKind::SharedObject).then(|| DEFAULT_INTERP.to_string())
    });
    let rules = match &opts.rules {
        Some(r) => r.clone(),
        None => match &interp {
            // Only the system's own ld.so is asked: running the PT_INTERP named by the file
            // under analysis would execute a program an untrusted file chooses.
            Some(i) if machine == HOST_MACHINE && !opts.object_only && is_system_interp(i) => {
                detect_system(i)
            }
            Some(i) if machine == HOST_MACHINE && !opts.object_only => {
                detect_system(DEFAULT_INTERP).with_interpreter(i)
            }
            Some(i) => SearchRules::built_in(i),
            None => SearchRules::built_in(DEFAULT_INTERP),
        },
    };
    if machine != HOST_MACHINE && !opts.object_only {
        return Err(DepsError::Target(ElfError::ForeignHost {
            path: target.to_path_buf(),
            machine: main_info.machine.clone(),
            host: if HOST_MACHINE == elf::EM_X86_64 {
                "x86-64".into()
            } else {
                "aarch64".into()
            },
        }));
    }
    let main_origin = match opts.origin {
        OriginMode::Exec => std::fs::canonicalize(target)
            .ok()
            .and_then(|p| p.parent().map(|d| d.to_string_lossy().into_owned())),
        OriginMode::AsGiven => origin_of(&target_str),
    };
    let main = Object {
        path: target_str.clone(),
        name: target_str.clone(),
        found_by: FoundBy::Target,
        loaded_by: None,
        depth: 0,
        needed: Vec::new(),
        in_scope: true,
        info: main_info,
    };
    let mut r = Resolver {
        opts,
        rules,
        machine,
        cache: None,
        cache_loaded: false,
        objects: vec![main],
        loaded: Vec::new(),
        origins: vec![main_origin],
        interp: None,
        missing: Vec::new(),
        prefetched: Vec::new(),
        refused: std::cell::RefCell::new(None),
    };
    r.loaded.push(Loaded {
        names: r.objects[0].info.soname.iter().cloned().collect(),
        file_id: file_id(target),
    });
    let dynamic = matches!(r.objects[0].info.kind, ObjectKind::Pie | ObjectKind::NonPie)
        || (r.objects[0].info.kind == ObjectKind::SharedObject && interp.is_some());
    if !opts.object_only {
        if let Some(i) = &interp {
            r.prepare_interp(i, lazy)?;
        }
        if dynamic || !r.objects[0].info.needed.is_empty() {
            r.walk(lazy);
        }
        r.finish_interp();
    }
    if let Some(e) = r.refused.take() {
        return Err(DepsError::Target(e));
    }
    Ok(Closure {
        rules: r.rules,
        objects: r.objects,
        missing: r.missing,
        ld_library_path: opts.ld_library_path.clone(),
        bind_now_env: opts.bind_now,
    })
}

impl Closure {
    /// Objects by path, for report code that wants to look one up.
    pub fn index_by_path(&self) -> HashMap<&str, usize> {
        self.objects
            .iter()
            .enumerate()
            .map(|(i, o)| (o.path.as_str(), i))
            .collect()
    }

    /// Whether every DT_NEEDED entry was found.
    pub fn complete(&self) -> bool {
        self.missing.is_empty()
    }
}
