//! What an interrupted ldcost must remove: the temporary files of reports being written and
//! ldcost's temp directories. An interrupt ends the process from the watcher thread
//! (`trace::tree`), so their owners' destructors never run; the owners register them here and
//! the watcher removes what is still listed. A leaf module: the output writer (report) and the
//! live side (trace, experiment) both register without importing each other.

use std::path::PathBuf;
use std::sync::Mutex;

/// Reports being written now: removed if ldcost stops before they are complete.
static PARTIAL: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Marks `path` as being written: a temporary file that an interrupt removes (`-`, standard
/// output, is ignored).
pub fn writing(path: &std::path::Path) {
    if path == std::path::Path::new("-") {
        return;
    }
    if let Ok(mut v) = PARTIAL.lock() {
        v.push(path.to_path_buf());
    }
}

/// Marks `path` as complete.
pub fn written(path: &std::path::Path) {
    if let Ok(mut v) = PARTIAL.lock() {
        v.retain(|p| p != path);
    }
}

/// Removes every report still being written (their temporary files: the reports they would
/// replace stay as they were), and ldcost's temp directories.
pub fn remove_partial() {
    let paths = PARTIAL
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default();
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
    // Kept registered: a process killed a moment ago may have written into one after it was
    // removed, and the interrupt watcher removes them again after its last kill.
    for t in temp_paths() {
        let _ = std::fs::remove_dir_all(t);
    }
}

/// ldcost's temp directories that exist now (the LD_DEBUG runs' output directory): an
/// interrupt ends the process from another thread, so their owners' destructors never run.
static TEMP: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Marks `path` as a temp directory of ldcost's, removed if ldcost is interrupted.
pub fn temp_made(path: &std::path::Path) {
    if let Ok(mut v) = TEMP.lock() {
        v.push(path.to_path_buf());
    }
}

/// Marks `path` as removed by its owner.
pub fn temp_gone(path: &std::path::Path) {
    if let Ok(mut v) = TEMP.lock() {
        v.retain(|p| p != path);
    }
}

/// The temp directories ldcost has made and not removed yet.
pub fn temp_paths() -> Vec<PathBuf> {
    TEMP.lock().map(|v| v.clone()).unwrap_or_default()
}
