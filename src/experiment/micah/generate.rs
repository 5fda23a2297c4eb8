//! Micah's generator (seed 004's `mklibs`, `mkprog`, `mkprogs`), rewritten in Rust.
//!
//! In: the function counts F and library counts L to build. Out: in a directory of the
//! caller's choosing, for each (F, L) a program `testF-L-s` (static, linked against archives)
//! and `testF-L-d` (dynamic, against shared libraries found through `RPATH=$ORIGIN`), and the
//! exact commands that built them ([`Builds`]).
//!
//! As in his scripts: library `lib{letter}{n}` defines `{letter}{n}_k(int i) { return i+k; }`
//! for k = 1..n, compiled once with `cc -c` (gcc's default -O0) into an object that is both
//! archived (`ar rcs`) and linked into a shared library (`ld -shared`); the program's `main`
//! returns at once when run without arguments, after code that *would* call every function,
//! so what a run measures is start-up, not the calls. F functions in L libraries are L
//! libraries of F/L functions each (letters a, b, … j). Compiling 100000 functions takes gcc
//! tens of seconds, so the independent compilations of each phase run on every core.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::experiment::seeds::{first_error, shell_line, BuildError};

/// The library letters of his `mklibs`.
pub const LETTERS: [char; 10] = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'];

/// One of his programs: F functions spread over L libraries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Shape {
    pub functions: u32,
    pub libraries: u32,
}

impl Shape {
    /// His program name: `test100-10`.
    pub fn name(self) -> String {
        format!("test{}-{}", self.functions, self.libraries)
    }

    /// The libraries it links, as `-l` names (`a10`, `b10`, …).
    pub fn libs(self) -> Vec<String> {
        let per = self.functions / self.libraries;
        LETTERS[..self.libraries as usize]
            .iter()
            .map(|l| format!("{l}{per}"))
            .collect()
    }
}

/// His table's rows for these function counts: (F, 1) for every F, and (F, 10) where F ≥ 10.
pub fn shapes(functions: &[u32]) -> Vec<Shape> {
    let mut v = Vec::new();
    for &f in functions {
        v.push(Shape {
            functions: f,
            libraries: 1,
        });
        if f >= 10 && f % 10 == 0 {
            v.push(Shape {
                functions: f,
                libraries: 10,
            });
        }
    }
    v
}

/// The C source of library `lib` (e.g. `a100`): `int a100_k(int i) { return i+k; }`.
pub fn library_source(lib: &str, n: u32) -> String {
    let mut s = String::with_capacity(n as usize * 40);
    for k in 1..=n {
        s.push_str(&format!("int {lib}_{k}(int i) {{ return i+{k}; }}\n"));
    }
    s
}

/// Its header: one prototype per function.
pub fn library_header(lib: &str, n: u32) -> String {
    let mut s = String::with_capacity(n as usize * 24);
    for k in 1..=n {
        s.push_str(&format!("int {lib}_{k}(int);\n"));
    }
    s
}

/// His `mkprog`: includes the headers; `main` returns 0 when run without arguments, and
/// otherwise calls every function in turn.
pub fn program_source(shape: Shape) -> String {
    let libs = shape.libs();
    let per = shape.functions / shape.libraries;
    let mut s = String::new();
    for l in &libs {
        s.push_str(&format!("#include \"lib{l}.h\"\n"));
    }
    s.push_str(
        "\nint\nmain(int argc, char **argv)\n{\n\tint i = 0;\n\tif(argc == 1)\n\t\treturn 0;\n",
    );
    for l in &libs {
        for k in 1..=per {
            s.push_str(&format!("\ti += {l}_{k}(i);\n"));
        }
    }
    s.push_str("\n\treturn i;\n}\n");
    s
}

/// The built programs and the commands that built them.
#[derive(Debug, Clone, Default)]
pub struct Builds {
    pub dir: PathBuf,
    /// Every command run, in order, shell-quoted.
    pub commands: Vec<String>,
    /// Wall time of the whole build, seconds.
    pub seconds: f64,
}

impl Builds {
    pub fn program(&self, shape: Shape, dynamic: bool) -> PathBuf {
        let suffix = if dynamic { "d" } else { "s" };
        self.dir.join(format!("{}-{suffix}", shape.name()))
    }

    pub fn shared_library(&self, lib: &str) -> PathBuf {
        self.dir.join(format!("lib{lib}.so"))
    }

    pub fn archive(&self, lib: &str) -> PathBuf {
        self.dir.join(format!("lib{lib}.a"))
    }
}

/// One command of a build phase.
struct Job {
    args: Vec<String>,
    /// Shown in a failure ("libA100.o").
    what: String,
}

/// Writes every source and builds every program of `shapes` in `dir` (which must exist and
/// be empty of earlier builds: nothing is reused).
pub fn build_all(dir: &Path, shapes: &[Shape], step: &dyn Fn(&str)) -> Result<Builds, BuildError> {
    let started = std::time::Instant::now();
    let mut builds = Builds {
        dir: dir.to_path_buf(),
        ..Builds::default()
    };
    let libs: BTreeSet<(String, u32)> = shapes
        .iter()
        .flat_map(|s| {
            let per = s.functions / s.libraries;
            s.libs().into_iter().map(move |l| (l, per))
        })
        .collect();
    let path = |name: String| dir.join(name).to_string_lossy().into_owned();
    let mut compile = Vec::new();
    for (lib, n) in &libs {
        write(&dir.join(format!("lib{lib}.c")), &library_source(lib, *n))?;
        write(&dir.join(format!("lib{lib}.h")), &library_header(lib, *n))?;
        compile.push(Job {
            args: args(
                &["cc", "-c", "-o"],
                &[path(format!("lib{lib}.o")), path(format!("lib{lib}.c"))],
            ),
            what: format!("lib{lib}.o"),
        });
    }
    for s in shapes {
        write(&dir.join(format!("{}.c", s.name())), &program_source(*s))?;
        compile.push(Job {
            args: args(
                &["cc", "-c", "-o"],
                &[
                    path(format!("{}.o", s.name())),
                    path(format!("{}.c", s.name())),
                ],
            ),
            what: format!("{}.o", s.name()),
        });
    }
    // The biggest first, so that the two cores finish together.
    compile.sort_by_key(|j| std::cmp::Reverse(weight(&j.what, &libs, shapes)));
    step(&format!(
        "micah: compiling {} sources (F up to {})",
        compile.len(),
        shapes.iter().map(|s| s.functions).max().unwrap_or(0)
    ));
    run_parallel(compile, &mut builds.commands)?;
    let mut archive = Vec::new();
    for (lib, _) in &libs {
        let obj = path(format!("lib{lib}.o"));
        archive.push(Job {
            args: args(&["ar", "rcs"], &[path(format!("lib{lib}.a")), obj.clone()]),
            what: format!("lib{lib}.a"),
        });
        archive.push(Job {
            args: args(
                &["ld", "-shared", "-o"],
                &[path(format!("lib{lib}.so")), obj],
            ),
            what: format!("lib{lib}.so"),
        });
    }
    step("micah: archiving and linking the libraries");
    run_parallel(archive, &mut builds.commands)?;
    let mut link = Vec::new();
    for s in shapes {
        let mut tail = vec![
            path(format!("{}.o", s.name())),
            format!("-L{}", dir.display()),
        ];
        tail.extend(s.libs().iter().map(|l| format!("-l{l}")));
        let mut st = args(&["cc", "-static", "-o"], &[path(format!("{}-s", s.name()))]);
        st.extend(tail.iter().cloned());
        link.push(Job {
            args: st,
            what: format!("{}-s", s.name()),
        });
        let mut dy = args(&["cc", "-o"], &[path(format!("{}-d", s.name()))]);
        dy.extend(tail);
        dy.push("-Wl,-rpath,$ORIGIN".into());
        link.push(Job {
            args: dy,
            what: format!("{}-d", s.name()),
        });
    }
    step("micah: linking the programs, static and dynamic");
    run_parallel(link, &mut builds.commands)?;
    builds.seconds = started.elapsed().as_secs_f64();
    Ok(builds)
}

/// Roughly how long a job takes: the number of functions in its source.
fn weight(what: &str, libs: &BTreeSet<(String, u32)>, shapes: &[Shape]) -> u32 {
    libs.iter()
        .find(|(l, _)| what == format!("lib{l}.o"))
        .map(|(_, n)| *n)
        .or_else(|| {
            shapes
                .iter()
                .find(|s| what == format!("{}.o", s.name()))
                .map(|s| s.functions)
        })
        .unwrap_or(0)
}

fn args(head: &[&str], tail: &[String]) -> Vec<String> {
    head.iter()
        .map(|s| s.to_string())
        .chain(tail.iter().cloned())
        .collect()
}

fn write(path: &Path, text: &str) -> Result<(), BuildError> {
    std::fs::write(path, text).map_err(|source| BuildError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Runs `jobs` on as many threads as there are cores; the first failure is returned (the
/// other threads finish the job they hold and stop).
fn run_parallel(jobs: Vec<Job>, log: &mut Vec<String>) -> Result<(), BuildError> {
    log.extend(jobs.iter().map(|j| shell_line(&j.args)));
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len().max(1));
    let queue = Mutex::new(jobs.into_iter());
    let first_error: Mutex<Option<BuildError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                if first_error.lock().map(|e| e.is_some()).unwrap_or(true) {
                    return;
                }
                let next = match queue.lock() {
                    Ok(mut q) => q.next(),
                    Err(_) => return,
                };
                let Some(job) = next else { return };
                if let Err(e) = run_job(&job) {
                    if let Ok(mut slot) = first_error.lock() {
                        slot.get_or_insert(e);
                    }
                }
            });
        }
    });
    match first_error.into_inner() {
        Ok(Some(e)) => Err(e),
        _ => Ok(()),
    }
}

fn run_job(job: &Job) -> Result<(), BuildError> {
    let line = shell_line(&job.args);
    let out = match crate::experiment::compiler(&job.args[0])
        .args(&job.args[1..])
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && job.args[0] == "cc" => {
            return Err(BuildError::CompilerMissing { command: line })
        }
        Err(e) => {
            return Err(BuildError::Spawn {
                detail: format!("{}: {e} (install binutils for ar and ld)", job.args[0]),
                command: line,
            })
        }
    };
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("cannot find -lc") {
        return Err(BuildError::StaticLibcMissing { command: line });
    }
    Err(BuildError::Compile {
        seed: "micah",
        detail: format!("{}: {}", job.what, first_error(&stderr)),
        command: line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_his_rows() {
        let s = shapes(&[1, 10, 100]);
        let names: Vec<String> = s.iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            [
                "test1-1",
                "test10-1",
                "test10-10",
                "test100-1",
                "test100-10"
            ]
        );
        assert_eq!(s[4].libs()[9], "j10");
        assert_eq!(s[2].libs(), LETTERS.map(|l| format!("{l}1")).to_vec());
    }

    #[test]
    fn sources_match_his_scripts() {
        assert_eq!(
            library_source("a2", 2),
            "int a2_1(int i) { return i+1; }\nint a2_2(int i) { return i+2; }\n"
        );
        assert_eq!(library_header("b1", 1), "int b1_1(int);\n");
        let p = program_source(Shape {
            functions: 20,
            libraries: 10,
        });
        assert!(p.starts_with("#include \"liba2.h\"\n"));
        assert_eq!(p.matches("i += ").count(), 20);
        assert!(p.contains("\ti += j2_2(i);\n"));
        assert!(p.contains("if(argc == 1)\n\t\treturn 0;"));
    }
}
