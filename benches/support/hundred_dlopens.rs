//! The program the after-main benches measure (after_main_overhead, after_main_perf): it
//! dlopens [`LIBS`] generated libraries one after the other (`RTLD_NOW | RTLD_LOCAL`), finds
//! one function in each with `dlsym` and calls it, then exits 0. Each library has
//! [`RELATIVE`] relative relocations (a table of its own static functions), [`OWN`] symbolic
//! ones to its own exported functions and [`LIBC`] to libc's (each a symbol lookup), and a
//! small constructor (a loop of [`CTOR_LOOP`] additions), so every object has all three of
//! ld.so's phases after `main`: search and mapping, relocation, initializers. A second
//! argument N loads the first N libraries only (0: the same start-up, nothing after `main`).
//! Built with cc from C source in a temporary directory.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Libraries the program loads after `main`.
pub const LIBS: usize = 100;
/// Relative relocations per library.
pub const RELATIVE: usize = 150;
/// Symbolic relocations per library to its own exported functions.
pub const OWN: usize = 100;
/// Symbolic relocations per library to libc's functions.
pub const LIBC: usize = 50;
/// Iterations of each constructor's loop.
pub const CTOR_LOOP: usize = 2000;

/// libc functions the libraries point to (each twice over [`LIBC`] = 50).
const LIBC_SYMS: [&str; 25] = [
    "strlen", "strcmp", "strncmp", "strchr", "strrchr", "strstr", "strdup", "strtol", "strtoul",
    "memcpy", "memmove", "memset", "memcmp", "malloc", "calloc", "realloc", "free", "qsort",
    "bsearch", "snprintf", "fopen", "fclose", "fread", "fwrite", "getenv",
];

/// The built program and its libraries (kept while this lives).
pub struct Hundred {
    pub dir: tempfile::TempDir,
    pub prog: PathBuf,
}

impl Hundred {
    /// The library numbered `i` (0-based).
    #[allow(dead_code)]
    pub fn lib(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("libg{i:03}.so"))
    }
}

fn library(i: usize) -> String {
    library_with(&format!("g{i:03}"), OWN, LIBC, CTOR_LOOP)
}

/// The C source of one library whose exported names start with `p` (`{p}_entry`, …): with
/// `own` symbolic relocations to its own functions, `libc` to libc's and a constructor loop
/// of `ctor` additions (and [`RELATIVE`] relative relocations).
pub fn library_with(p: &str, own: usize, libc: usize, ctor: usize) -> String {
    let mut s = String::from("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n");
    for k in 0..RELATIVE {
        s += &format!("static int s{k}(int x) {{ return x + {k}; }}\n");
    }
    for k in 0..own {
        s += &format!("int {p}_f{k}(int x) {{ return x * {k}; }}\n");
    }
    let rel: Vec<String> = (0..RELATIVE).map(|k| format!("s{k}")).collect();
    let own_v: Vec<String> = (0..own).map(|k| format!("{p}_f{k}")).collect();
    let libc_v: Vec<String> = (0..libc)
        .map(|k| format!("(void *){}", LIBC_SYMS[k % LIBC_SYMS.len()]))
        .collect();
    s += &format!("int (*const {p}_rel[])(int) = {{ {} }};\n", rel.join(", "));
    s += &format!(
        "int (*const {p}_own[])(int) = {{ {} }};\n",
        own_v.join(", ")
    );
    s += &format!("void *const {p}_libc[] = {{ {} }};\n", libc_v.join(", "));
    s += &format!(
        "volatile int {p}_ctor;\n\
         __attribute__((constructor)) static void init(void) {{\n\
         for (int k = 0; k < {ctor}; k++) {p}_ctor += k;\n}}\n\
         int {p}_entry(int x) {{\n\
         return {p}_rel[x % {RELATIVE}](x) + {p}_own[x % {own}](x) + ({p}_libc[x % {libc}] != 0);\n}}\n"
    );
    s
}

const PROG: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    int n = argc > 2 ? atoi(argv[2]) : LIBS;
    long sum = 0;
    for (int i = 0; i < n; i++) {
        char path[4096], name[64];
        snprintf(path, sizeof path, "%s/libg%03d.so", dir, i);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) { fprintf(stderr, "dlopen %s: %s\n", path, dlerror()); return 1; }
        snprintf(name, sizeof name, "g%03d_entry", i);
        int (*f)(int) = (int (*)(int))dlsym(h, name);
        if (!f) { fprintf(stderr, "dlsym %s: %s\n", name, dlerror()); return 1; }
        sum += f(i);
    }
    return n > 0 && sum == 0 ? 1 : 0;
}
"#;

pub fn cc(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("cc")
        .current_dir(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cc: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cc {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Builds the program and its [`LIBS`] libraries in a new temporary directory; the program
/// takes that directory as its one argument ([`Hundred::argv`]).
pub fn build() -> Result<Hundred, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let d = dir.path();
    for i in 0..LIBS {
        let src = format!("libg{i:03}.c");
        std::fs::write(d.join(&src), library(i)).map_err(|e| e.to_string())?;
        let out = format!("libg{i:03}.so");
        cc(d, &["-shared", "-fPIC", "-O1", "-o", &out, &src])?;
    }
    std::fs::write(d.join("prog.c"), PROG.replace("LIBS", &LIBS.to_string()))
        .map_err(|e| e.to_string())?;
    cc(d, &["-O1", "-o", "prog", "prog.c", "-ldl"])?;
    let prog = d.join("prog");
    Ok(Hundred { dir, prog })
}

impl Hundred {
    /// The command line: the program and the directory of its libraries.
    pub fn argv(&self) -> Vec<String> {
        vec![
            self.prog.display().to_string(),
            self.dir.path().display().to_string(),
        ]
    }
}

/// The runs per side: `LDCOST_BENCH_RUNS`, or `default`.
pub fn runs(default: usize) -> usize {
    std::env::var("LDCOST_BENCH_RUNS")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

/// The program built, or None with the reason printed as a SKIP line (cc or perf missing, or
/// the build failed). `have` tells whether a tool is installed.
pub fn ready(have: impl Fn(&str) -> bool) -> Option<Hundred> {
    for tool in ["cc", "perf"] {
        if !have(tool) {
            println!("SKIP: {tool} not installed");
            return None;
        }
    }
    build()
        .map_err(|e| println!("SKIP: cannot build the program: {e}"))
        .ok()
}

/// `perf stat -x, -e task-clock -r N`: the mean task-clock in ns and its relative stddev.
#[allow(dead_code)]
pub fn perf_stat(argv: &[String], runs: usize) -> Result<(f64, String), String> {
    perf_stat_in(argv, runs, &[])
}

/// [`perf_stat`] in an environment of its own: `env` set, `LD_LIBRARY_PATH` only from it.
#[allow(dead_code)]
pub fn perf_stat_in(
    argv: &[String],
    runs: usize,
    env: &[(String, String)],
) -> Result<(f64, String), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("stat.csv");
    let st = std::process::Command::new("perf")
        .args(["stat", "-x,", "-o"])
        .arg(&file)
        .args(["-e", "task-clock", "-r", &runs.to_string(), "--"])
        .args(argv)
        .env_remove("LD_LIBRARY_PATH")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("perf: {e}"))?;
    if !st.success() {
        return Err(format!("perf stat exited with {st}"));
    }
    let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
    // CSV: value,unit,event,stddev%,...
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 4 || !f[2].starts_with("task-clock") {
                return None;
            }
            let unit = if f[1] == "msec" { 1e6 } else { 1.0 };
            Some((f[0].parse::<f64>().ok()? * unit, f[3].to_string()))
        })
        .ok_or_else(|| format!("cannot read perf stat's output:\n{text}"))
}

/// The profile section of a document `ldcost profile --json` wrote.
#[allow(dead_code)]
pub fn profile_of(json: &[u8]) -> Result<ldcost::profile::ProfileSection, String> {
    let doc: ldcost::report::Document = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    doc.profile
        .map(Into::into)
        .ok_or_else(|| "no profile section".into())
}

/// The load averages, for a bench's header: what else the machine was doing.
#[allow(dead_code)]
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// A new temporary directory, or None with a SKIP line saying why.
#[allow(dead_code)]
pub fn scratch() -> Option<tempfile::TempDir> {
    tempfile::tempdir()
        .map_err(|e| println!("SKIP: no temporary directory: {e}"))
        .ok()
}
