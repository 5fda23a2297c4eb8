//! Address spaces: `/proc/PID/maps` read before a run, and the mapping table the symbolizer
//! replays from a recording's fork, exec and MMAP2 records.
//!
//! The kernel reports no MMAP records for mappings a child inherits at fork, so a child's
//! table starts as a copy of its parent's (shared until one of them maps something: the
//! tables are reference-counted and copied on write), an exec empties it, and each MMAP2
//! record replaces whatever it overlaps, as `mmap(MAP_FIXED)` would. `munmap` is not reported,
//! which matters only for addresses that were reused.

use std::io;

pub use crate::record::samples::MapRange;

/// Parses `/proc/PID/maps` text: `START-END PERMS OFFSET DEV INODE [PATH]`. Lines that do not
/// parse are skipped (the format has not changed since Linux 2.6, but a truncated read can
/// end mid-line).
pub fn parse_proc_maps(text: &str) -> Vec<MapRange> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<MapRange> {
    let mut rest = line;
    let mut field = || {
        let t = rest.trim_start();
        let end = t.find(' ').unwrap_or(t.len());
        let (f, r) = t.split_at(end);
        rest = r;
        f
    };
    let range = field();
    let perms = field().to_string();
    let offset = field();
    let _dev = field();
    let _inode = field();
    let path = rest.trim().to_string();
    let (start, end) = range.split_once('-')?;
    Some(MapRange {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        pgoff: u64::from_str_radix(offset, 16).ok()?,
        perms,
        path,
    })
}

/// Reads `/proc/PID/maps` (the process must still exist).
pub fn read_proc_maps(pid: i32) -> io::Result<Vec<MapRange>> {
    std::fs::read_to_string(format!("/proc/{pid}/maps")).map(|t| parse_proc_maps(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c2a00000-55d0c2a01000 r--p 00000000 fe:01 1835260                    /tmp/spin
55d0c2a01000-55d0c2a02000 r-xp 00001000 fe:01 1835260                    /tmp/spin
7f1e4c828000-7f1e4c9a0000 r-xp 00028000 fe:01 1573063                    /usr/lib/x86_64-linux-gnu/libc.so.6
7f1e4c9f0000-7f1e4c9f4000 rw-p 00000000 00:00 0 
7ffd1b5f2000-7ffd1b5f4000 r-xp 00000000 00:00 0                          [vdso]
7f00 garbage line
";

    #[test]
    fn proc_maps_lines() {
        let m = parse_proc_maps(MAPS);
        assert_eq!(m.len(), 5);
        assert_eq!(
            m[2],
            MapRange {
                start: 0x7f1e4c828000,
                end: 0x7f1e4c9a0000,
                pgoff: 0x28000,
                perms: "r-xp".into(),
                path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
            }
        );
        assert!(m[1].is_executable() && !m[0].is_executable());
        assert_eq!(m[3].path, "");
        assert_eq!(m[4].path, "[vdso]");
    }

    #[test]
    fn own_maps_are_readable() {
        let m = read_proc_maps(std::process::id() as i32).unwrap();
        let exe = std::env::current_exe().unwrap();
        assert!(
            m.iter()
                .any(|r| r.is_executable() && std::path::Path::new(&r.path) == exe),
            "{m:?}"
        );
    }
}
