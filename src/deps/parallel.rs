//! Analysing several objects at once, one per core: what `deps` does with the files one
//! object's DT_NEEDED entries name (libLLVM's eleven, rustc's ten), before the walk takes
//! them in ld.so's order. Each analysis maps and reads one file and shares nothing.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::analyze_file;
use crate::elf::{ElfError, ObjectInfo};

/// Analyses every path of `paths` (as [`analyze_file`] with `lazy`) on up to 8 threads and
/// returns (path, result) pairs. With fewer than two paths or one core it returns nothing:
/// the caller analyses those itself, as it does a path whose worker panicked.
pub(super) fn analyze_all(
    paths: Vec<String>,
    lazy: bool,
) -> Vec<(String, Result<ObjectInfo, ElfError>)> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(paths.len());
    if threads < 2 {
        return Vec::new();
    }
    let next = AtomicUsize::new(0);
    let done: Vec<Vec<(usize, Result<ObjectInfo, ElfError>)>> = std::thread::scope(|s| {
        // Each worker takes paths until none is left, so one started worker does them all; a
        // thread the system refuses (ulimit -v, -u) is only parallelism lost, and with none
        // started the caller analyses the paths itself, as with one CPU.
        let workers: Vec<_> = (0..threads)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .spawn_scoped(s, || {
                        let mut mine = Vec::new();
                        loop {
                            let k = next.fetch_add(1, Ordering::Relaxed);
                            let Some(p) = paths.get(k) else { break };
                            mine.push((k, analyze_file(Path::new(p), lazy)));
                        }
                        mine
                    })
                    .ok()
            })
            .collect();
        workers.into_iter().filter_map(|w| w.join().ok()).collect()
    });
    done.into_iter()
        .flatten()
        .filter_map(|(k, r)| paths.get(k).map(|p| (p.clone(), r)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path comes back once, with the result `analyze_file` gives it alone.
    #[test]
    fn same_results_as_one_by_one() {
        let exe = std::env::current_exe()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let paths = vec![
            exe.clone(),
            "/nonexistent/libx.so".to_string(),
            "/".to_string(),
        ];
        let got = analyze_all(paths.clone(), true);
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            assert!(got.is_empty());
            return;
        }
        assert_eq!(got.len(), paths.len());
        for p in &paths {
            let (_, r) = got
                .iter()
                .find(|(q, _)| q == p)
                .expect("every path answered");
            let alone = analyze_file(Path::new(p), true);
            match (r, alone) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.relocations, b.relocations);
                    assert_eq!(a.needed, b.needed);
                    assert_eq!(a.lookup_keys, b.lookup_keys);
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!("{p}: parallel {a:?} vs alone {b:?}"),
            }
        }
    }
}
