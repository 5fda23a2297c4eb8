//! The machine-specific half of ld.so's search: default directories, glibc-hwcaps and legacy
//! HWCAP subdirectories, and the values of `$LIB` and `$PLATFORM`.
//!
//! These are compiled into each glibc build and depend on the CPU, so we ask ld.so itself:
//! `ld.so --help` (glibc >= 2.33) prints the system search path, the glibc-hwcaps
//! subdirectories it supports in priority order, and the legacy subdirectories it searches.
//! When that is not possible (a non-glibc interpreter, a foreign one) we fall back to built-in
//! defaults and say so in the report ([`RulesSource`]).
//!
//! `$LIB` is not printed by ld.so; glibc builds it from the slibdir it was configured with, which
//! is the first system directory without its leading slash (Debian: `lib/x86_64-linux-gnu`,
//! Fedora: `lib64`), verified in tests against `LD_DEBUG=libs`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where the rules came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RulesSource {
    /// Parsed from `<interpreter> --help`.
    LdSoHelp,
    /// ld.so could not be asked; built-in defaults for this architecture.
    BuiltIn,
}

/// The machine-specific search rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRules {
    pub source: RulesSource,
    /// The interpreter asked (or that would have been).
    pub interpreter: String,
    /// Default directories, searched last.
    pub system_dirs: Vec<String>,
    /// Active glibc-hwcaps subdirectory names, best first (e.g. `x86-64-v3`).
    pub hwcaps: Vec<String>,
    /// Legacy subdirectory names searched (AT_PLATFORM, `tls`, HWCAP bits), as ld.so lists them.
    pub legacy: Vec<String>,
    /// Value of `$PLATFORM`.
    pub platform: String,
    /// Value of `$LIB`.
    pub lib: String,
    /// Why the built-in defaults were used (`ld.so --help` could not be run, failed, or
    /// printed nothing these rules could be read from); absent when ld.so was asked.
    pub fallback: Option<String>,
}

impl SearchRules {
    /// Asks `interpreter --help`; falls back to [`SearchRules::built_in`], saying why in
    /// [`SearchRules::fallback`].
    pub fn detect(interpreter: &str) -> SearchRules {
        let why = match run_help(interpreter) {
            Ok(text) => match parse_help(&text, interpreter) {
                Some(rules) => return rules,
                None => format!(
                    "`{interpreter} --help` printed no search path ldcost can read (glibc \
                     before 2.33, or not glibc's ld.so)"
                ),
            },
            Err(why) => why,
        };
        SearchRules {
            fallback: Some(why),
            ..Self::built_in(interpreter)
        }
    }

    /// The same rules, noted as being for `interpreter` (a non-system ld.so we did not run:
    /// the system one was asked instead, and the report names both).
    pub fn with_interpreter(mut self, interpreter: &str) -> SearchRules {
        if self.interpreter != interpreter {
            self.interpreter = format!("{} (asked instead of {interpreter}, which is not the system's ld.so and is not run)", self.interpreter);
        }
        self
    }

    /// Defaults for the architecture ldcost was built for, without hwcaps subdirectories.
    pub fn built_in(interpreter: &str) -> SearchRules {
        let triplet = if cfg!(target_arch = "aarch64") {
            "aarch64-linux-gnu"
        } else {
            "x86_64-linux-gnu"
        };
        let multiarch = format!("/lib/{triplet}");
        let system_dirs = if Path::new(&multiarch).is_dir() {
            vec![
                multiarch,
                format!("/usr/lib/{triplet}"),
                "/lib".into(),
                "/usr/lib".into(),
            ]
        } else {
            vec!["/lib64".into(), "/usr/lib64".into()]
        };
        let platform = if cfg!(target_arch = "aarch64") {
            "aarch64"
        } else {
            "x86_64"
        };
        SearchRules {
            source: RulesSource::BuiltIn,
            interpreter: interpreter.to_string(),
            lib: lib_from(&system_dirs),
            system_dirs,
            hwcaps: Vec::new(),
            legacy: Vec::new(),
            platform: platform.to_string(),
            fallback: None,
        }
    }

    /// The subdirectories ld.so tries inside every search directory, in order, each ending in
    /// `/`, the directory itself (`""`) last. Matches the "search path=" lines of
    /// `LD_DEBUG=libs`.
    pub fn subdirs(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .hwcaps
            .iter()
            .map(|h| format!("glibc-hwcaps/{h}/"))
            .collect();
        // glibc 2.36 dl-hwcaps.c builds the legacy list as [hwcap bits.., platform, "tls"] and
        // emits every subset, largest first, with the elements in reverse order; ld.so --help
        // lists them as [platform, tls, hwcap bits..].
        if !self.legacy.is_empty() {
            let mut elems: Vec<&str> = Vec::new();
            let (platform, rest): (Vec<&String>, Vec<&String>) = {
                let mut p = Vec::new();
                let mut r = Vec::new();
                for (i, l) in self.legacy.iter().enumerate() {
                    if i == 0 && *l == self.platform {
                        p.push(l)
                    } else {
                        r.push(l)
                    }
                }
                (p, r)
            };
            let tls = rest.iter().any(|l| l.as_str() == "tls");
            if tls {
                elems.push("tls");
            }
            elems.extend(platform.iter().map(|s| s.as_str()));
            let mut bits: Vec<&str> = rest
                .iter()
                .filter(|l| l.as_str() != "tls")
                .map(|s| s.as_str())
                .collect();
            bits.reverse();
            elems.extend(bits);
            let n = elems.len().min(16);
            for mask in (0..(1u32 << n)).rev() {
                let mut s = String::new();
                for (i, e) in elems.iter().take(n).enumerate() {
                    if mask & (1 << (n - 1 - i)) != 0 {
                        s.push_str(e);
                        s.push('/');
                    }
                }
                out.push(s);
            }
        } else {
            out.push(String::new());
        }
        out
    }
}

fn lib_from(system_dirs: &[String]) -> String {
    system_dirs
        .first()
        .map(|d| d.trim_start_matches('/').to_string())
        .unwrap_or_else(|| "lib".into())
}

/// Runs `interpreter --help` with a 5-second limit; None if it is not a glibc ld.so.
/// The text of `interpreter --help`, or why there is none (in words for the report: the
/// resource limit to raise when the system refused one).
fn run_help(interpreter: &str) -> Result<String, String> {
    let cannot = |e: std::io::Error| {
        // The limit to raise, without the hint's gloss on profile's counters.
        let hint = crate::limits::io_resource_hint(&e)
            .and_then(|h| h.split(" (").next())
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        format!("cannot run `{interpreter} --help`: {e}{hint}")
    };
    let mut child = Command::new(interpreter)
        .arg("--help")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(cannot)?;
    let start = Instant::now();
    // ld.so --help answers in well under a millisecond: poll with a short, growing nap so
    // that the answer is not delayed by a fixed 2 ms tick (docs/benchmarks.md, variant A2).
    let mut nap = Duration::from_micros(50);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < Duration::from_secs(5) => {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(2));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("`{interpreter} --help` did not answer within 5 s"));
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(cannot(e));
            }
        }
    }
    let out = child.wait_with_output().map_err(cannot)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("`{interpreter} --help` failed ({})", out.status))
    }
}

/// Parses the text of `ld.so --help` (glibc 2.33+).
pub fn parse_help(text: &str, interpreter: &str) -> Option<SearchRules> {
    #[derive(PartialEq)]
    enum Section {
        None,
        Search,
        Hwcaps,
        Legacy,
    }
    let mut section = Section::None;
    let mut system_dirs = Vec::new();
    let mut hwcaps = Vec::new();
    let mut legacy = Vec::new();
    let mut platform = None;
    for line in text.lines() {
        if line.starts_with("Shared library search path") {
            section = Section::Search;
            continue;
        }
        if line.starts_with("Subdirectories of glibc-hwcaps") {
            section = Section::Hwcaps;
            continue;
        }
        if line.starts_with("Legacy HWCAP subdirectories") {
            section = Section::Legacy;
            continue;
        }
        if !line.starts_with("  ") {
            if !line.trim().is_empty() {
                section = Section::None;
            }
            continue;
        }
        let item = line.trim();
        let (name, note) = match item.find(" (") {
            Some(i) => (&item[..i], &item[i + 2..]),
            None => (item, ""),
        };
        match section {
            Section::Search if note.starts_with("system search path") => {
                system_dirs.push(name.to_string())
            }
            Section::Hwcaps if note.contains("searched") => hwcaps.push(name.to_string()),
            Section::Legacy => {
                if note.contains("AT_PLATFORM") {
                    platform = Some(name.to_string());
                }
                if note.contains("searched") {
                    legacy.push(name.to_string());
                }
            }
            _ => {}
        }
    }
    if system_dirs.is_empty() {
        return None;
    }
    let fallback = SearchRules::built_in(interpreter);
    Some(SearchRules {
        source: RulesSource::LdSoHelp,
        interpreter: interpreter.to_string(),
        lib: lib_from(&system_dirs),
        system_dirs,
        hwcaps,
        legacy,
        platform: platform.unwrap_or(fallback.platform),
        fallback: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN12: &str = "\
Shared library search path:
  (libraries located via /etc/ld.so.cache)
  /lib/x86_64-linux-gnu (system search path)
  /usr/lib/x86_64-linux-gnu (system search path)
  /lib (system search path)
  /usr/lib (system search path)

Subdirectories of glibc-hwcaps directories, in priority order:
  x86-64-v4
  x86-64-v3 (supported, searched)
  x86-64-v2 (supported, searched)

Legacy HWCAP subdirectories under library search path directories:
  x86_64 (AT_PLATFORM; supported, searched)
  tls (supported, searched)
  avx512_1
  x86_64 (supported, searched)
";

    #[test]
    fn parses_debian_12_help() {
        let r = parse_help(DEBIAN12, "/lib64/ld-linux-x86-64.so.2").unwrap();
        assert_eq!(r.system_dirs.len(), 4);
        assert_eq!(r.hwcaps, ["x86-64-v3", "x86-64-v2"]);
        assert_eq!(r.legacy, ["x86_64", "tls", "x86_64"]);
        assert_eq!(r.platform, "x86_64");
        assert_eq!(r.lib, "lib/x86_64-linux-gnu");
    }

    /// The order LD_DEBUG=libs printed on Debian 12 for LD_LIBRARY_PATH=/tmp/lltest.
    #[test]
    fn subdir_order_matches_ld_debug() {
        let r = parse_help(DEBIAN12, "ld.so").unwrap();
        assert_eq!(
            r.subdirs(),
            [
                "glibc-hwcaps/x86-64-v3/",
                "glibc-hwcaps/x86-64-v2/",
                "tls/x86_64/x86_64/",
                "tls/x86_64/",
                "tls/x86_64/",
                "tls/",
                "x86_64/x86_64/",
                "x86_64/",
                "x86_64/",
                "",
            ]
        );
    }

    #[test]
    fn garbage_help_is_refused() {
        assert!(parse_help("Usage: musl ld.so", "x").is_none());
    }
}
