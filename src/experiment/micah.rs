//! Micah's matrix (seed 004): 1 … 100000 functions in 1 or 10 libraries, static and dynamic.
//!
//! In: [`Settings`] (quick: F ∈ {1, 100, 10000}, 50 runs; full: F ∈ {1, 10, 100, 1000, 10000,
//! 100000}, 1000 runs, his count). Out: a [`Section`] with his table's shape beside his figures
//! (binary size, user, system, elapsed, in seconds per 1000 runs), the bytes that make the
//! dynamic executables bigger than the static ones above ~10000 functions (section groups from
//! the built files, a least-squares size model and the crossover it predicts), what ldcost's
//! static model attributes to the largest dynamic builds (relocations by class, symbol lookups)
//! beside glibc's own count (LD_DEBUG=statistics) and the measured minor faults, two plots, and
//! the seed's direction checked. The stages: [`generate`] (his scripts, in Rust), [`measure`]
//! (spawn + wait4), [`sizes`] (goblin), [`report`] (tables, findings, plots); [`seed`] holds
//! his table.

pub mod generate;
pub mod measure;
mod report;
pub mod seed;
pub mod sizes;

use std::path::{Path, PathBuf};

use super::section::{ExperimentError, Progress, Section, Settings};
use crate::report::schema::experiment as doc;
use generate::Shape;
use measure::Runs;
use sizes::FileFacts;

/// The function counts of his table, and of `--quick`.
pub const FULL_FUNCTIONS: [u32; 6] = [1, 10, 100, 1000, 10000, 100000];
pub const QUICK_FUNCTIONS: [u32; 3] = [1, 100, 10000];

/// The raw results (`results.json`'s `data` of this section).
#[derive(Debug, Clone, Default)]
pub struct Data {
    pub quick: bool,
    /// Runs of each program.
    pub rounds: u32,
    pub build_seconds: f64,
    /// Every command that built the programs, in order.
    pub build_commands: Vec<String>,
    pub builds: Vec<Build>,
    /// For the dynamic builds with the most functions.
    pub attribution: Vec<Attribution>,
}

/// One program: F functions in L libraries, static or dynamic.
#[derive(Debug, Clone, Default)]
pub struct Build {
    pub functions: u32,
    pub libraries: u32,
    pub dynamic: bool,
    pub executable: FileFacts,
    /// The shared libraries it loads (dynamic), each with its facts.
    pub shared_libraries: Vec<FileFacts>,
    /// The archives it was linked from (static): path and bytes.
    pub archives: Vec<(PathBuf, u64)>,
    /// Generator functions defined by the files that make up the program (the executable for
    /// a static build, its shared libraries for a dynamic one).
    pub functions_defined: u64,
    pub runs: Runs,
}

impl Build {
    pub fn linkage(&self) -> &'static str {
        if self.dynamic {
            "dynamic"
        } else {
            "static"
        }
    }
}

/// What ldcost's static model says ld.so does for one dynamic build, beside glibc's count.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    pub functions: u32,
    pub libraries: u32,
    /// Objects ld.so loads (executable, libraries, libc, ld.so).
    pub objects: usize,
    pub relative: u64,
    pub symbolic: u64,
    /// JUMP_SLOT relocations (bound lazily: each set to its PLT stub at start-up).
    pub plt: u64,
    pub irelative: u64,
    /// Every relocation entry of the closure, of all classes (TLS, COPY, … too).
    pub total: u64,
    /// Symbol lookups ld.so makes at start-up (lazy binding: the PLT ones wait for a call).
    pub startup_lookups: u64,
    pub lazy_deferred: u64,
    /// LD_DEBUG=statistics: "number of relocations", "… relative relocations".
    pub glibc_relocations: Option<u64>,
    pub glibc_relative: Option<u64>,
    /// Why glibc's count is missing, if it is.
    pub glibc_note: Option<String>,
}

/// results.json's form of the data: the schema's types, field for field.
impl From<Data> for doc::MicahData {
    fn from(d: Data) -> Self {
        doc::MicahData {
            quick: d.quick,
            rounds: d.rounds,
            build_seconds: d.build_seconds,
            build_commands: d.build_commands,
            builds: d.builds.into_iter().map(Into::into).collect(),
            attribution: d.attribution.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<Build> for doc::MicahBuild {
    fn from(b: Build) -> Self {
        doc::MicahBuild {
            functions: b.functions,
            libraries: b.libraries,
            dynamic: b.dynamic,
            executable: b.executable.into(),
            shared_libraries: b.shared_libraries.into_iter().map(Into::into).collect(),
            archives: b.archives,
            functions_defined: b.functions_defined,
            runs: b.runs.into(),
        }
    }
}

impl From<FileFacts> for doc::FileFacts {
    fn from(f: FileFacts) -> Self {
        doc::FileFacts {
            path: f.path,
            size: f.size,
            sections: f.sections,
            groups: f.groups,
            relocations: f.relocations,
            relocations_by_class: f.relocations_by_class,
            functions: f.functions,
        }
    }
}

impl From<Runs> for doc::MicahRuns {
    fn from(r: Runs) -> Self {
        doc::MicahRuns {
            path: r.path,
            elapsed_us: r.elapsed_us,
            user_us: r.user_us,
            sys_us: r.sys_us,
            minor_faults: r.minor_faults,
        }
    }
}

impl From<Attribution> for doc::MicahAttribution {
    fn from(a: Attribution) -> Self {
        doc::MicahAttribution {
            functions: a.functions,
            libraries: a.libraries,
            objects: a.objects,
            relative: a.relative,
            symbolic: a.symbolic,
            plt: a.plt,
            irelative: a.irelative,
            total: a.total,
            startup_lookups: a.startup_lookups,
            lazy_deferred: a.lazy_deferred,
            glibc_relocations: a.glibc_relocations,
            glibc_relative: a.glibc_relative,
            glibc_note: a.glibc_note,
        }
    }
}

/// Runs the experiment: builds in `settings.work_dir/micah` (emptied first: nothing is reused
/// from an earlier run), measures, explains.
pub fn run(settings: &Settings, progress: &dyn Progress) -> Result<Section, ExperimentError> {
    let functions: &[u32] = if settings.quick {
        &QUICK_FUNCTIONS
    } else {
        &FULL_FUNCTIONS
    };
    let rounds = settings.runs_or(50, 1000);
    let dir = settings.work_dir.join("micah");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExperimentError::Io { path, source }
    };
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let shapes = generate::shapes(functions);
    let step = |s: &str| progress.step(s);
    let built = generate::build_all(&dir, &shapes, &step)?;

    let fail = |detail: String| ExperimentError::Run {
        what: "micah".into(),
        detail,
    };
    let mut builds = Vec::new();
    for s in &shapes {
        for dynamic in [false, true] {
            builds.push(describe(&built, *s, dynamic).map_err(fail)?);
        }
    }
    let programs: Vec<PathBuf> = builds.iter().map(|b| b.executable.path.clone()).collect();
    let runs = measure::run_all(&programs, rounds, &step).map_err(fail)?;
    for (b, r) in builds.iter_mut().zip(runs) {
        b.runs = r;
    }
    progress.step("micah: what ldcost attributes to the largest dynamic builds");
    let max_f = shapes.iter().map(|s| s.functions).max().unwrap_or(0);
    let mut attribution = Vec::new();
    for s in shapes.iter().filter(|s| s.functions == max_f) {
        attribution.push(attribute(&built.program(*s, true), *s).map_err(fail)?);
    }
    let data = Data {
        quick: settings.quick,
        rounds,
        build_seconds: built.seconds,
        build_commands: built.commands.clone(),
        builds,
        attribution,
    };
    report::section(data)
}

/// The facts of one built program and the files it is made of.
fn describe(built: &generate::Builds, s: Shape, dynamic: bool) -> Result<Build, String> {
    let executable = sizes::facts(&built.program(s, dynamic))?;
    let mut b = Build {
        functions: s.functions,
        libraries: s.libraries,
        dynamic,
        ..Build::default()
    };
    if dynamic {
        for l in s.libs() {
            b.shared_libraries
                .push(sizes::facts(&built.shared_library(&l))?);
        }
        b.functions_defined = b.shared_libraries.iter().map(|f| f.functions).sum();
    } else {
        for l in s.libs() {
            let p = built.archive(&l);
            let size = std::fs::metadata(&p)
                .map_err(|e| format!("{}: {e}", p.display()))?
                .len();
            b.archives.push((p, size));
        }
        b.functions_defined = executable.functions;
    }
    b.executable = executable;
    Ok(b)
}

/// ldcost's static model of the program's start-up (the `deps` closure, as `ldcost deps`
/// computes it), and glibc's own relocation count from one run under LD_DEBUG=statistics.
fn attribute(exe: &Path, s: Shape) -> Result<Attribution, String> {
    let mut opts = crate::deps::ResolveOptions::from_env();
    opts.ld_library_path = None;
    opts.bind_now = false;
    let closure = crate::deps::resolve(exe, &opts).map_err(|e| e.to_string())?;
    let mut a = Attribution {
        functions: s.functions,
        libraries: s.libraries,
        objects: closure.objects.len(),
        ..Attribution::default()
    };
    for o in &closure.objects {
        let r = &o.info.relocations;
        a.relative += r.by_class.relative;
        a.symbolic += r.by_class.symbolic;
        a.plt += r.by_class.plt;
        a.irelative += r.by_class.irelative;
        a.total += r.total;
        a.startup_lookups += r.startup_lookups;
        a.lazy_deferred += r.lazy_deferred;
    }
    let out = std::process::Command::new(exe)
        .env("LD_DEBUG", "statistics")
        .env_remove("LD_BIND_NOW")
        .env_remove("LD_LIBRARY_PATH")
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) => {
            let st = crate::profile::parse_ld_debug(&String::from_utf8_lossy(&o.stderr));
            a.glibc_relocations = st.relocations;
            a.glibc_relative = st.relative_relocations;
            if st.relocations.is_none() {
                a.glibc_note = Some("LD_DEBUG=statistics printed no relocation count".into());
            }
        }
        Err(e) => a.glibc_note = Some(format!("cannot run {}: {e}", exe.display())),
    }
    Ok(a)
}
