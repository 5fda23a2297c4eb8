//! The classifier's fixtures: realistic `perf script` stacks, each with the category it must
//! get. In: fixtures.txt (data). Out: `(what, category, frames)` triples.
//!
//! Shared by the unit tests (`tests.rs`) and by benches/classify_speed.rs, which includes this
//! file by path; so it names its types through `super::` (the categories module here, the
//! bench's own imports there).

use super::{Category, Frame};

/// The path `$LDSO` stands for in fixtures.txt.
pub const LDSO: &str = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";

/// The stacks, headed by `# category: why` (see the file's head).
const FIXTURES: &str = include_str!("fixtures.txt");

/// Frames from `perf script` text, one per line: `[ADDR] NAME[+0xOFF] (OBJECT)`.
pub fn perf(text: &str) -> Vec<Frame> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (sym, obj) = l.rsplit_once(" (").expect("perf line has an object");
            let obj = obj.trim_end_matches(')');
            let mut words = sym.splitn(2, ' ');
            let first = words.next().unwrap();
            let name = match words.next() {
                Some(rest) if first.chars().all(|c| c.is_ascii_hexdigit()) => rest,
                _ => sym,
            };
            Frame {
                name: name.to_string(),
                object: (obj != "[unknown]").then(|| obj.to_string()),
                kernel: obj == "[kernel.kallsyms]",
            }
        })
        .collect()
}

/// The fixtures as (what, category, frames).
pub fn fixtures() -> Vec<(String, Category, Vec<Frame>)> {
    // The file's head (comments) ends at the first blank line.
    let body = FIXTURES.split_once("\n\n").map_or("", |(_, b)| b);
    format!("\n{body}")
        .split("\n# ")
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (head, body) = p.split_once('\n').unwrap();
            let (name, what) = head.trim_start_matches("# ").split_once(": ").unwrap();
            let category = Category::from_name(name).expect(name);
            (
                what.to_string(),
                category,
                perf(&body.replace("$LDSO", LDSO)),
            )
        })
        .collect()
}
