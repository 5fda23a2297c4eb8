//! Builds erik's series: the tiny library, its copies, the drivers and the per-VMA loop.
//!
//! In: a directory and the library counts the plan needs. Out: [`Programs`]: one driver per
//! library count k (linked, after `-Wl,--no-as-needed`, against `liberik_0.so` …
//! `liberik_{k-1}.so`, found through an RPATH to the directory), the padding files
//! `pad_0.so` … and `pad_warm.so`, and `vmaloop`, with every `cc` command as run.
//!
//! The libraries are byte-for-byte copies of one tiny library built once (probes/erik/lib.c):
//! distinct files and names, so ld.so loads each as an object of its own (it identifies objects
//! by name and by device and inode), and the padding files are copies of the same bytes, so a
//! padded point maps exactly what a library would. One `cc` per library would cost a second
//! each on a loaded 2-core machine, for nothing the experiment measures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::super::section::ExperimentError;
use crate::experiment::seeds::{first_error, BuildError};

const LIB_C: &str = include_str!("../../../probes/erik/lib.c");
const DRIVER_C: &str = include_str!("../../../probes/erik/driver.c");
const VMALOOP_C: &str = include_str!("../../../probes/erik/vmaloop.c");

/// Everything the series runs, built.
#[derive(Debug, Clone)]
pub struct Programs {
    /// Library count → its driver.
    pub drivers: BTreeMap<u32, PathBuf>,
    pub vmaloop: PathBuf,
    /// Every `cc` command, as run (for the report).
    pub commands: Vec<String>,
}

/// Builds into `dir` (created): the library, `max_libs` library copies, `max_pads` pad copies
/// and `pad_warm.so`, one driver per entry of `counts`, and vmaloop.
pub fn build(
    dir: &Path,
    counts: &[u32],
    max_libs: u32,
    max_pads: u32,
) -> Result<Programs, ExperimentError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExperimentError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut commands = Vec::new();
    for (name, text) in [
        ("lib.c", LIB_C),
        ("driver.c", DRIVER_C),
        ("vmaloop.c", VMALOOP_C),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(io(&p))?;
    }
    let path = |n: &str| dir.join(n).to_string_lossy().into_owned();
    let lib = dir.join("liberik.so");
    cc(
        &mut commands,
        &[
            "-O2",
            "-fPIC",
            "-shared",
            "-o",
            &path("liberik.so"),
            &path("lib.c"),
        ],
    )?;
    let copy = |name: String| -> Result<(), ExperimentError> {
        let to = dir.join(name);
        std::fs::copy(&lib, &to).map(|_| ()).map_err(io(&to))
    };
    for i in 0..max_libs {
        copy(format!("liberik_{i}.so"))?;
    }
    for i in 0..max_pads {
        copy(format!("pad_{i}.so"))?;
    }
    copy("pad_warm.so".into())?;
    let mut drivers = BTreeMap::new();
    for &k in counts {
        let out = path(&format!("driver-{k}"));
        let mut args: Vec<String> = ["-O2", "-o", &out, &path("driver.c")]
            .map(String::from)
            .to_vec();
        if k > 0 {
            let d = dir.to_string_lossy();
            args.push(format!("-L{d}"));
            args.push(format!("-Wl,-rpath,{d}"));
            args.push("-Wl,--no-as-needed".into());
            args.extend((0..k).map(|i| format!("-lerik_{i}")));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cc(&mut commands, &args)?;
        drivers.insert(k, PathBuf::from(out));
    }
    let vmaloop = dir.join("vmaloop");
    cc(
        &mut commands,
        &["-O2", "-o", &path("vmaloop"), &path("vmaloop.c")],
    )?;
    Ok(Programs {
        drivers,
        vmaloop,
        commands,
    })
}

/// Runs `cc ARGS`, recording the command; a failure names what to install.
fn cc(commands: &mut Vec<String>, args: &[&str]) -> Result<(), ExperimentError> {
    let line = shorten(&format!("cc {}", args.join(" ")));
    commands.push(line.clone());
    let out = match crate::experiment::compiler("cc").args(args).output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(BuildError::CompilerMissing { command: line }.into())
        }
        Err(e) => {
            return Err(BuildError::Spawn {
                detail: e.to_string(),
                command: line,
            }
            .into())
        }
    };
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("stdio.h") || stderr.contains("elf.h") || stderr.contains("crt1.o") {
        return Err(BuildError::LibcDevMissing { command: line }.into());
    }
    Err(BuildError::Compile {
        seed: "erik",
        detail: first_error(&stderr),
        command: line,
    }
    .into())
}

/// A driver's link line names up to 100 libraries: shown as `-lerik_0 … -lerik_99`.
fn shorten(line: &str) -> String {
    let libs: Vec<&str> = line
        .split(' ')
        .filter(|w| w.starts_with("-lerik_"))
        .collect();
    if libs.len() <= 3 {
        return line.to_string();
    }
    let (first, last) = (libs[0], libs[libs.len() - 1]);
    let rest: Vec<&str> = line
        .split(' ')
        .filter(|w| !w.starts_with("-lerik_"))
        .collect();
    format!("{} {first} … {last}", rest.join(" "))
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_link_lines_are_shortened() {
        let line = "cc -o d d.c -lerik_0 -lerik_1 -lerik_2 -lerik_3";
        assert_eq!(super::shorten(line), "cc -o d d.c -lerik_0 … -lerik_3");
        assert_eq!(super::shorten("cc -o v v.c"), "cc -o v v.c");
    }
}
