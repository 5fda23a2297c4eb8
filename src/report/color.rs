//! Colour for the human reports: on a terminal only, never with NO_COLOR (<https://no-color.org>)
//! or TERM=dumb, never when piped. The reports are built as plain text; [`paint`] adds ANSI
//! styles to what a reader looks for first: section titles, verdicts, missing libraries.

use std::io::IsTerminal;

const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";

/// Section titles of the `deps` and `profile` reports.
const TITLES: &[&str] = &[
    "Dependency tree",
    "Load order",
    "Objects",
    "Relocations (",
    "Relocation types",
    "Reading",
    "Phases (start-up order; ld.so start and ld.so other run in pieces between the others)",
    "Instrumentation's own cost",
    "Cross-check with glibc",
    "Whole process",
    "Threads and child processes",
];

/// Whether standard output should get colour.
pub fn wanted() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
        && std::io::stdout().is_terminal()
}

/// Adds ANSI styles to a plain report.
pub fn paint(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if TITLES.iter().any(|t| body.starts_with(t)) || body.starts_with("ldcost ") {
            out.push_str(&format!("{BOLD}{body}{RESET}{nl}"));
        } else if body.contains("NOT within 10%") || body.contains("=> not found") {
            out.push_str(&format!("{RED}{body}{RESET}{nl}"));
        } else if body.contains("(within 10%") {
            out.push_str(&format!("{GREEN}{body}{RESET}{nl}"));
        } else if body.starts_with("not available on this machine") || body.contains("TEXTREL") {
            out.push_str(&format!("{YELLOW}{body}{RESET}{nl}"));
        } else {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_and_verdicts_are_styled_and_nothing_else_changes() {
        let plain = "ldcost profile /bin/ls: 5 runs\nPhases (start-up order; ld.so start and ld.so other run in pieces between the others)\n kernel exec 0.1\n  x = 1.2 (NOT within 10%)\n  y = 1.0 (within 10%)\n";
        let p = paint(plain);
        assert!(p.contains("\x1b[1mPhases (start-up order; ld.so start and ld.so other run in pieces between the others)\x1b[0m\n"));
        assert!(p.contains("\x1b[31m  x = 1.2 (NOT within 10%)\x1b[0m"));
        assert!(p.contains("\x1b[32m  y = 1.0 (within 10%)\x1b[0m"));
        assert!(p.contains("\n kernel exec 0.1\n"));
        // Removing the escapes gives the plain text back.
        let stripped: String = p
            .replace(BOLD, "")
            .replace(RED, "")
            .replace(GREEN, "")
            .replace(YELLOW, "")
            .replace(RESET, "");
        assert_eq!(stripped, plain);
    }
}
