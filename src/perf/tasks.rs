//! The live process tree under a pid, read from /proc: the processes the sampler keeps
//! (descendants that existed before it started) and the ones `trace::tree` kills on Ctrl-C.
//!
//! In: a root pid. Out: its descendants' pids, by the ppid field of every /proc/PID/stat.

/// The live descendants of `root`, from the ppid field of every /proc/PID/stat (children
/// before grandchildren).
pub fn descendants(root: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(i32, i32)> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            Some((pid, parse_ppid(&stat)?))
        })
        .collect();
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree.remove(0);
    tree
}

/// The ppid in `/proc/PID/stat` (`pid (comm) state ppid ...`; comm may hold spaces and
/// parentheses, so fields are counted from the last `)`).
pub fn parse_ppid(stat: &str) -> Option<i32> {
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
