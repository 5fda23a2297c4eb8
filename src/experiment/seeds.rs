//! The seeds' own programs, built on this machine, and parsers for what they print.
//!
//! In: a [`Seed`], a [`Linkage`] and the libraries to link (as in the seeds' transcripts).
//! Out: an executable in a directory of the caller's choosing, with the exact `cc` command
//! that built it ([`Built`]); and, from the programs' output, the figures they measured
//! ([`parse_forktest_output`], [`parse_forktime_output`], [`parse_spawn_output`]).
//!
//! The C sources are the files of `probes/` (see `probes/README.md`), embedded in the binary
//! with `include_str!` so that ldcost builds them from anywhere. Libraries are passed after
//! `-Wl,--no-as-needed`, so that a library nothing refers to is still a DT_NEEDED entry and is
//! still loaded, as it was with the linkers of 2009 (seed 001); with `-static` the libraries
//! are archives, of which the linker takes only members something refers to, so unused ones
//! add nothing to a static program.

use std::path::{Path, PathBuf};

/// The libraries of seed 001's last build (`-lcurses` there is ncurses here).
///
/// On glibc 2.34 and later (Debian 12 has 2.36) libpthread is part of libc: `-lpthread` links
/// an empty `libpthread.a` and adds no DT_NEEDED, so five of these six are loaded (with
/// libtinfo, which `libncurses.so`, a linker script, adds, and libcrypto, which libssl needs).
/// To load the stub `libpthread.so.0` as 2009's programs loaded libpthread, pass
/// `":libpthread.so.0"` (linked as `-l:libpthread.so.0`).
pub const SEED_LIBS: [&str; 6] = ["m", "ncurses", "pthread", "resolv", "ssl", "readline"];

/// One of the seeds' programs (`probes/*.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Seed {
    /// Seed 000: fork, parent waits, child `_exit(0)`, 1000 times (1989).
    Forktime,
    /// Seed 001: 25000 forks, child `exit(42)`, forks per second by `clock()` (2009).
    Forktest,
    /// Seed 003: fork() + execl() of a child program, per-spawn time.
    ForkExec,
    /// Seed 003's "v" column: the same with vfork().
    VforkExec,
    /// Seed 003's child: `main` returns 0.
    Child,
}

impl Seed {
    pub const ALL: [Seed; 5] = [
        Seed::Forktime,
        Seed::Forktest,
        Seed::ForkExec,
        Seed::VforkExec,
        Seed::Child,
    ];

    /// The program's name (its file is `probes/NAME.c`).
    pub fn name(self) -> &'static str {
        match self {
            Seed::Forktime => "forktime",
            Seed::Forktest => "forktest",
            Seed::ForkExec => "forkexec",
            Seed::VforkExec => "vforkexec",
            Seed::Child => "child",
        }
    }

    /// The C source.
    pub fn source(self) -> &'static str {
        match self {
            Seed::Forktime => include_str!("../../probes/forktime.c"),
            Seed::Forktest => include_str!("../../probes/forktest.c"),
            Seed::ForkExec => include_str!("../../probes/forkexec.c"),
            Seed::VforkExec => include_str!("../../probes/vforkexec.c"),
            Seed::Child => include_str!("../../probes/child.c"),
        }
    }

    /// The seed document it comes from.
    pub fn seed_file(self) -> &'static str {
        match self {
            Seed::Forktime => "000_1b3ec4cf5ab103e9.txt",
            Seed::Forktest => "001_072174e70058038d.txt",
            Seed::ForkExec | Seed::VforkExec | Seed::Child => "003_439cc606f831c39f.txt",
        }
    }
}

/// How a program is linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Linkage {
    /// `cc -static`: no ld.so, no shared objects.
    Static,
    /// The default: ld.so loads libc and every library named.
    Dynamic,
}

impl Linkage {
    pub fn name(self) -> &'static str {
        match self {
            Linkage::Static => "static",
            Linkage::Dynamic => "dynamic",
        }
    }
}

/// A built program and the command that built it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    pub path: PathBuf,
    /// `cc` and its arguments, exactly as run.
    pub command: Vec<String>,
}

impl Built {
    /// The command as one shell-quoted line.
    pub fn command_line(&self) -> String {
        shell_line(&self.command)
    }
}

/// Why a seed program could not be built. Each message says what to install.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("the C compiler `cc` is not installed: install gcc ({command})")]
    CompilerMissing { command: String },
    #[error("the C library's development files are missing: install libc6-dev ({command})")]
    LibcDevMissing { command: String },
    #[error("the static C library (libc.a) is missing: install libc6-dev ({command})")]
    StaticLibcMissing { command: String },
    #[error("library -l{lib} is missing: install {install} ({command})")]
    LibraryMissing {
        lib: String,
        /// The Debian package, or "the package that provides libNAME".
        install: String,
        command: String,
    },
    #[error("cc failed to build {seed}: {detail} ({command})")]
    Compile {
        seed: &'static str,
        detail: String,
        command: String,
    },
    #[error("cannot run cc: {detail} ({command})")]
    Spawn { detail: String, command: String },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl BuildError {
    /// The `cc` command line that failed, if one was run.
    pub fn command(&self) -> Option<&str> {
        match self {
            BuildError::CompilerMissing { command }
            | BuildError::LibcDevMissing { command }
            | BuildError::StaticLibcMissing { command }
            | BuildError::LibraryMissing { command, .. }
            | BuildError::Compile { command, .. }
            | BuildError::Spawn { command, .. } => Some(command),
            BuildError::Write { .. } => None,
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            BuildError::CompilerMissing { .. } => Some("apt-get install gcc".into()),
            BuildError::LibcDevMissing { .. } | BuildError::StaticLibcMissing { .. } => {
                Some("apt-get install libc6-dev".into())
            }
            BuildError::LibraryMissing { lib, .. } => Some(match package_for(lib) {
                Some(p) => format!("apt-get install {p}"),
                None => format!("`apt-file search lib{lib}.so` names the package to install"),
            }),
            _ => None,
        }
    }
}

/// The Debian package that provides `-lNAME` (for shared and static linking).
pub fn package_for(lib: &str) -> Option<&'static str> {
    Some(match lib {
        "c" | "m" | "pthread" | "resolv" | "dl" | "rt" | "util" | "anl" => "libc6-dev",
        "ssl" | "crypto" => "libssl-dev",
        "ncurses" | "ncursesw" | "curses" | "tinfo" | "form" | "menu" | "panel" => "libncurses-dev",
        "readline" | "history" => "libreadline-dev",
        _ => return None,
    })
}

/// Builds `seed` into `out_dir`, returning the executable's path (see [`build_recorded`]).
pub fn build(
    seed: Seed,
    linkage: Linkage,
    libs: &[&str],
    out_dir: &Path,
) -> Result<PathBuf, BuildError> {
    build_recorded(seed, linkage, libs, out_dir).map(|b| b.path)
}

/// Writes `seed`'s source to `out_dir/NAME.c` and compiles it with the system `cc` into
/// `out_dir/NAME-LINKAGE[-LIB...]`. `libs` are library names as for `-l` ("ssl"; a leading
/// "-l" is accepted), linked after `-Wl,--no-as-needed` so that each is loaded even if unused.
pub fn build_recorded(
    seed: Seed,
    linkage: Linkage,
    libs: &[&str],
    out_dir: &Path,
) -> Result<Built, BuildError> {
    build_source(seed.name(), seed.source(), linkage, libs, out_dir)
}

/// Builds any embedded C source as [`build_recorded`] builds a seed's: `name` names the
/// source file and the executable (`out_dir/NAME-LINKAGE[-LIB...]`). For the experiments' own
/// programs in `probes/` (BYTE's loops, the fork+execl matrix's parent).
pub fn build_source(
    name: &'static str,
    source: &str,
    linkage: Linkage,
    libs: &[&str],
    out_dir: &Path,
) -> Result<Built, BuildError> {
    let libs: Vec<&str> = libs
        .iter()
        .map(|l| l.strip_prefix("-l").unwrap_or(l))
        .collect();
    let src = out_dir.join(format!("{name}.c"));
    write_atomically(&src, source)?;
    let mut exe = format!("{name}-{}", linkage.name());
    for l in &libs {
        exe.push('-');
        exe.push_str(l);
    }
    let out = out_dir.join(exe);
    let mut command: Vec<String> = ["cc", "-O2", "-Wall", "-o"].map(String::from).to_vec();
    command.push(out.to_string_lossy().into_owned());
    command.push(src.to_string_lossy().into_owned());
    if linkage == Linkage::Static {
        command.push("-static".into());
    }
    if !libs.is_empty() {
        command.push("-Wl,--no-as-needed".into());
        command.extend(libs.iter().map(|l| format!("-l{l}")));
    }
    let line = shell_line(&command);
    // After SIGINT/SIGTERM nothing new starts: the tree is being killed.
    if crate::trace::interrupted() {
        return Err(BuildError::Spawn {
            detail: "not started: ldcost was interrupted".into(),
            command: line,
        });
    }
    let result = super::compiler(&command[0]).args(&command[1..]).output();
    let output = match result {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(BuildError::CompilerMissing { command: line })
        }
        Err(e) => {
            return Err(BuildError::Spawn {
                detail: e.to_string(),
                command: line,
            })
        }
    };
    if output.status.success() {
        return Ok(Built { path: out, command });
    }
    Err(diagnose_named(
        name,
        linkage,
        &String::from_utf8_lossy(&output.stderr),
        line,
    ))
}

/// Turns cc's complaint into the error that says what to install.
#[cfg(test)]
fn diagnose(seed: Seed, linkage: Linkage, stderr: &str, command: String) -> BuildError {
    diagnose_named(seed.name(), linkage, stderr, command)
}

fn diagnose_named(
    name: &'static str,
    linkage: Linkage,
    stderr: &str,
    command: String,
) -> BuildError {
    for l in stderr.lines() {
        // GNU ld: "/usr/bin/ld: cannot find -lssl: No such file or directory" (older: no colon).
        if let Some((_, rest)) = l.split_once("cannot find -l") {
            let lib: String = rest
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != ':')
                .collect();
            if lib == "c" && linkage == Linkage::Static {
                return BuildError::StaticLibcMissing { command };
            }
            let install = package_for(&lib)
                .map(String::from)
                .unwrap_or_else(|| format!("the package that provides lib{lib}"));
            return BuildError::LibraryMissing {
                lib,
                install,
                command,
            };
        }
        let header = l.contains("fatal error: stdio.h") || l.contains("fatal error: unistd.h");
        if header || l.contains("cannot find crt1.o") || l.contains("cannot find crti.o") {
            return BuildError::LibcDevMissing { command };
        }
    }
    BuildError::Compile {
        seed: name,
        detail: first_error(stderr),
        command,
    }
}

/// The line of a compiler's diagnostics that says what went wrong: the first with "error",
/// else the first line.
pub(crate) fn first_error(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.contains("error"))
        .or_else(|| stderr.lines().next())
        .unwrap_or("no diagnostic")
        .trim()
        .to_string()
}

/// Writes through a temporary name and a rename, so that concurrent builds into one directory
/// never compile a half-written file.
fn write_atomically(path: &Path, text: &str) -> Result<(), BuildError> {
    let tmp = path.with_extension(format!("c.{}.tmp", std::process::id()));
    let err = |source| BuildError::Write {
        path: path.to_path_buf(),
        source,
    };
    std::fs::write(&tmp, text).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

/// `args` as one shell-quoted line (what a user can paste to rebuild).
pub(crate) fn shell_line(args: &[String]) -> String {
    let quote = |a: &String| {
        let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=,+:@%".contains(c);
        if !a.is_empty() && a.chars().all(plain) {
            a.clone()
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    };
    args.iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// forktest's own figure, "N forks per second", from `clock()`: forks per second of the
/// *parent's CPU time*, not of wall time. None if absent, not a number, or not positive.
pub fn parse_forktest_output(text: &str) -> Option<f64> {
    text.lines()
        .filter_map(|l| scan(l.trim(), "{} forks per second"))
        .find_map(|v| positive(v[0]))
}

/// forktest's added line, "wall: N forks per second" (CLOCK_MONOTONIC).
pub fn parse_forktest_wall(text: &str) -> Option<f64> {
    text.lines()
        .filter_map(|l| scan(l.trim(), "wall: {} forks per second"))
        .find_map(|v| positive(v[0]))
}

/// forktime's machine-readable line. Times are microseconds per fork.
#[derive(Debug, Clone, PartialEq)]
pub struct ForktimeLine {
    pub forks: u64,
    /// CLOCK_MONOTONIC around the whole loop, per fork.
    pub wall_us: f64,
    /// getrusage(RUSAGE_SELF): the parent's user + system time per fork. Of each pair only the
    /// sum is exact: the kernel splits precise run time by tick samples, and a side with no
    /// tick gets nothing (the parent's user time often reads 0).
    pub parent_cpu_us: f64,
    pub parent_user_us: f64,
    pub parent_sys_us: f64,
    /// getrusage(RUSAGE_CHILDREN): the reaped children's user + system time per fork. A child
    /// that lives less than a tick is rarely sampled, and then all its time reads as user time.
    pub children_cpu_us: f64,
    pub children_user_us: f64,
    pub children_sys_us: f64,
}

impl From<&ForktimeLine> for crate::report::schema::experiment::ForktimeLine {
    fn from(l: &ForktimeLine) -> Self {
        crate::report::schema::experiment::ForktimeLine {
            forks: l.forks,
            wall_us: l.wall_us,
            parent_cpu_us: l.parent_cpu_us,
            parent_user_us: l.parent_user_us,
            parent_sys_us: l.parent_sys_us,
            children_cpu_us: l.children_cpu_us,
            children_user_us: l.children_user_us,
            children_sys_us: l.children_sys_us,
        }
    }
}

const FORKTIME: &str = "forktime: {} forks, {} us per fork (wall), \
     parent cpu {} us per fork (user {}, sys {}), \
     children cpu {} us per fork (user {}, sys {})";

/// Parses forktime's line (`probes/forktime.c`).
pub fn parse_forktime_output(text: &str) -> Option<ForktimeLine> {
    text.lines().find_map(|l| {
        let v = scan(l.trim(), FORKTIME)?;
        let f = |i: usize| {
            v[i].parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
        };
        Some(ForktimeLine {
            forks: v[0].parse().ok()?,
            wall_us: f(1)?,
            parent_cpu_us: f(2)?,
            parent_user_us: f(3)?,
            parent_sys_us: f(4)?,
            children_cpu_us: f(5)?,
            children_user_us: f(6)?,
            children_sys_us: f(7)?,
        })
    })
}

/// forkexec's or vforkexec's line: "forkexec: N spawns, X us per spawn (wall)".
#[derive(Debug, Clone, PartialEq)]
pub struct SpawnLine {
    /// `Seed::ForkExec` or `Seed::VforkExec`.
    pub seed: Seed,
    /// Spawns whose child exec'd and exited 0.
    pub spawns: u64,
    /// Wall time of fork (or vfork) + execl + wait, per spawn.
    pub us_per_spawn: f64,
}

/// Parses forkexec's or vforkexec's machine-readable line.
pub fn parse_spawn_output(text: &str) -> Option<SpawnLine> {
    text.lines().find_map(|l| {
        [Seed::ForkExec, Seed::VforkExec]
            .into_iter()
            .find_map(|seed| {
                let template = format!("{}: {{}} spawns, {{}} us per spawn (wall)", seed.name());
                let v = scan(l.trim(), &template)?;
                Some(SpawnLine {
                    seed,
                    spawns: v[0].parse().ok()?,
                    us_per_spawn: positive(v[1])?,
                })
            })
    })
}

fn positive(s: &str) -> Option<f64> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x > 0.0)
}

/// Matches `line` against `template`, where each `{}` stands for a non-empty field; returns
/// the fields, or None if the literal text differs.
fn scan<'a>(line: &'a str, template: &str) -> Option<Vec<&'a str>> {
    let mut pieces = template.split("{}");
    let mut rest = line.strip_prefix(pieces.next()?)?;
    let mut fields = Vec::new();
    for lit in pieces {
        let end = if lit.is_empty() {
            rest.len()
        } else {
            rest.find(lit)?
        };
        if end == 0 {
            return None;
        }
        fields.push(&rest[..end]);
        rest = &rest[end + lit.len()..];
    }
    rest.is_empty().then_some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forktest_prints_the_seeds_line_and_a_wall_line() {
        let out = "3293 forks per second\nwall: 962.348 forks per second\n";
        assert_eq!(parse_forktest_output(out), Some(3293.0));
        assert_eq!(parse_forktest_wall(out), Some(962.348));
        // The seed's own transcript lines, %g style.
        assert_eq!(
            parse_forktest_output("30864.1 forks per second"),
            Some(30864.1)
        );
        assert_eq!(
            parse_forktest_output("1.5e+06 forks per second"),
            Some(1.5e6)
        );
        // clock() did not advance: the seed prints inf; that is no measurement.
        assert_eq!(parse_forktest_output("inf forks per second"), None);
        assert_eq!(parse_forktest_output("-nan forks per second"), None);
        assert_eq!(
            parse_forktest_output("fork: Resource temporarily unavailable"),
            None
        );
        assert_eq!(parse_forktest_wall("3293 forks per second"), None);
    }

    #[test]
    fn forktime_line_parses() {
        let out = "forktime: 500 forks, 1123.017 us per fork (wall), parent cpu 493.872 us per \
                   fork (user 15.930, sys 477.942), children cpu 493.298 us per fork (user \
                   413.300, sys 79.998)\n";
        let l = parse_forktime_output(out).unwrap();
        assert_eq!(l.forks, 500);
        assert_eq!(l.wall_us, 1123.017);
        assert_eq!((l.parent_user_us, l.parent_sys_us), (15.930, 477.942));
        assert_eq!((l.children_cpu_us, l.children_sys_us), (493.298, 79.998));
        assert_eq!(parse_forktime_output("forktime: 0 forks\n"), None);
        assert_eq!(parse_forktime_output(&out.replace("(wall)", "(cpu)")), None);
    }

    /// The `printf` format strings of a C source, adjacent literals joined, in order.
    fn printf_formats(source: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (i, _) in source.match_indices("printf(\"") {
            if source[..i].ends_with('f') {
                continue; // fprintf: usage and failure lines, not the figures
            }
            let mut rest = &source[i + "printf(".len()..];
            let mut fmt = String::new();
            while let Some(r) = rest.trim_start().strip_prefix('"') {
                let end = r.find('"').expect("closing quote");
                fmt.push_str(&r[..end]);
                rest = &r[end + 1..];
            }
            out.push(fmt.replace("\\n", "\n"));
        }
        out
    }

    /// `fmt` rendered as C would print it, with `values` for its conversions in order.
    fn render(fmt: &str, values: &[f64]) -> String {
        let mut out = String::new();
        let mut v = values.iter();
        let mut rest = fmt;
        while let Some(i) = rest.find('%') {
            out.push_str(&rest[..i]);
            let spec_end = rest[i..]
                .find(|c: char| c.is_ascii_alphabetic() && c != 'l')
                .expect("a conversion")
                + i;
            let x = *v.next().expect("a value per conversion");
            out.push_str(&match &rest[i..=spec_end] {
                "%ld" | "%d" => format!("{}", x as i64),
                "%.3f" => format!("{x:.3}"),
                "%.2f" => format!("{x:.2}"),
                "%g" => format!("{x}"),
                other => panic!("conversion {other} not rendered by this test"),
            });
            rest = &rest[spec_end + 1..];
        }
        out.push_str(rest);
        assert!(v.next().is_none(), "a value left over for {fmt:?}");
        out
    }

    /// The parsers read what the programs print: each parser's template against the `printf`
    /// of the C source itself (probes/*.c), rendered with known values and read back. A
    /// change of one word on either side fails here.
    #[test]
    fn parsers_read_the_lines_the_sources_print() {
        let f = printf_formats(Seed::Forktest.source());
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(
            parse_forktest_output(&render(&f[0], &[3293.5])),
            Some(3293.5)
        );
        assert_eq!(parse_forktest_wall(&render(&f[1], &[962.25])), Some(962.25));
        assert_eq!(parse_forktest_output(&render(&f[1], &[962.25])), None);

        let f = printf_formats(Seed::Forktime.source());
        let values = [
            500.0, 1123.017, 493.872, 15.93, 477.942, 493.298, 413.3, 79.998,
        ];
        let l = parse_forktime_output(&render(&f[0], &values)).expect("forktime's line");
        assert_eq!(
            [
                l.forks as f64,
                l.wall_us,
                l.parent_cpu_us,
                l.parent_user_us,
                l.parent_sys_us,
                l.children_cpu_us,
                l.children_user_us,
                l.children_sys_us
            ],
            values
        );
        assert_eq!(parse_forktime_output(&render(&f[1], &[])), None, "0 forks");

        for seed in [Seed::ForkExec, Seed::VforkExec] {
            let f = printf_formats(seed.source());
            assert_eq!(f.len(), 2, "{f:?}");
            let text = render(&f[0], &[2.39]) + &render(&f[1], &[300.0, 2391.169]);
            let l = parse_spawn_output(&text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!((l.seed, l.spawns, l.us_per_spawn), (seed, 300, 2391.169));
        }
    }

    #[test]
    fn spawn_lines_parse_for_both_programs() {
        let out = "Avg fork() + execl() time = 2.39 ms\nforkexec: 300 spawns, 2391.169 us per \
                   spawn (wall)\n";
        let l = parse_spawn_output(out).unwrap();
        assert_eq!(
            (l.seed, l.spawns, l.us_per_spawn),
            (Seed::ForkExec, 300, 2391.169)
        );
        let v = parse_spawn_output("vforkexec: 3 spawns, 1.5 us per spawn (wall)").unwrap();
        assert_eq!(v.seed, Seed::VforkExec);
        assert_eq!(
            parse_spawn_output("forkexec: x spawns, 1 us per spawn (wall)"),
            None
        );
    }

    #[test]
    fn missing_libraries_name_their_debian_package() {
        let stderr = "/usr/bin/ld: cannot find -lssl: No such file or directory\n\
                      collect2: error: ld returned 1 exit status\n";
        let e = diagnose(Seed::Forktest, Linkage::Dynamic, stderr, "cc x".into());
        assert!(
            matches!(&e, BuildError::LibraryMissing { lib, .. } if lib == "ssl"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "library -lssl is missing: install libssl-dev (cc x)"
        );
        assert_eq!(e.hint().unwrap(), "apt-get install libssl-dev");
        assert_eq!(e.command(), Some("cc x"));
        let e = diagnose(
            Seed::Child,
            Linkage::Static,
            "ld: cannot find -lc\n",
            "cc".into(),
        );
        assert!(matches!(e, BuildError::StaticLibcMissing { .. }), "{e:?}");
        let e = diagnose(
            Seed::Child,
            Linkage::Dynamic,
            "ld: cannot find -lfoo\n",
            "cc".into(),
        );
        assert!(
            e.to_string().contains("the package that provides libfoo"),
            "{e}"
        );
        let stderr = "x.c:1:10: fatal error: stdio.h: No such file or directory\n";
        let e = diagnose(Seed::Child, Linkage::Dynamic, stderr, "cc".into());
        assert!(e.to_string().contains("install libc6-dev"), "{e}");
        for lib in SEED_LIBS {
            assert!(package_for(lib).is_some(), "{lib}");
        }
        assert_eq!(package_for("readline"), Some("libreadline-dev"));
        assert_eq!(package_for("ncurses"), Some("libncurses-dev"));
    }

    #[test]
    fn every_source_names_its_seed_file() {
        for s in Seed::ALL {
            assert!(s.source().contains(s.seed_file()), "{}", s.name());
            assert!(s.source().contains("main"), "{}", s.name());
        }
    }

    #[test]
    fn command_lines_are_shell_quoted() {
        let cmd = ["cc", "-o", "/tmp/a b/x", "-lm"].map(String::from).to_vec();
        assert_eq!(shell_line(&cmd), "cc -o '/tmp/a b/x' -lm");
    }
}
