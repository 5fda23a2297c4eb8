//! The documentation stays in step with the repository and with `--help`.
//!
//! - Every relative link and image in README.md, CONTRIBUTING.md and docs/*.md names a file or
//!   directory that exists, and a `#fragment` names a heading of the Markdown file it points at
//!   (anchors as GitHub makes them from the heading text).
//! - Every subcommand `ldcost --help` lists has a guide, and every long option that
//!   `ldcost <sub> --help` lists appears in that guide.
//! - README.md is at most 400 lines and shows the exact test command `.ci/run` runs.
//!
//! The Markdown is parsed by pulldown-cmark, so links inside code blocks are not links and
//! reference-style links are resolved. The checkers are run on fixtures first, so the test can
//! fail: a broken link, a broken anchor and a missing option must each be reported.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The anchor GitHub gives a heading: lower case, spaces to hyphens, and every character but
/// letters, digits, `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings; a repeated heading gets `-1`, `-2`, ….
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut current: Option<String> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::Heading { .. }) => current = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => {
                if let Some(text) = current.take() {
                    let base = slug(&text);
                    let mut anchor = base.clone();
                    let mut n = 1;
                    while out.contains(&anchor) {
                        anchor = format!("{base}-{n}");
                        n += 1;
                    }
                    out.insert(anchor);
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = current.as_mut() {
                    h.push_str(&t);
                }
            }
            _ => {}
        }
    }
    out
}

/// The destinations of every link and image in a Markdown text.
fn destinations(markdown: &str) -> Vec<String> {
    Parser::new(markdown)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => Some(dest_url.to_string()),
            _ => None,
        })
        .collect()
}

/// The broken relative links of `file` (a Markdown file), each as `file: dest (why)`.
fn broken_links(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut broken = Vec::new();
    for dest in destinations(&text) {
        if dest.contains("://") || dest.starts_with("mailto:") {
            continue;
        }
        let (path, fragment) = match dest.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (dest.as_str(), None),
        };
        let target: PathBuf = if path.is_empty() {
            file.to_path_buf()
        } else {
            dir.join(path)
        };
        if !target.exists() {
            broken.push(format!("{}: {dest} (no such file)", file.display()));
            continue;
        }
        let Some(fragment) = fragment else { continue };
        if target.extension().is_some_and(|e| e == "md") {
            let body = std::fs::read_to_string(&target).unwrap_or_default();
            if !anchors(&body).contains(fragment) {
                broken.push(format!("{}: {dest} (no such heading)", file.display()));
            }
        }
    }
    broken
}

/// README.md, CONTRIBUTING.md and every docs/*.md.
fn markdown_files() -> Vec<PathBuf> {
    let root = Path::new(ROOT);
    let mut files = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The long options a `--help` text defines: the `--name` words at the start of its option
/// lines (descriptions that wrap are indented further and are not read).
fn long_options(help: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        if indent > 8 || !trimmed.starts_with('-') {
            continue;
        }
        let head = trimmed.split("  ").next().unwrap_or("");
        for word in head.split([' ', ',']) {
            if let Some(name) = word.strip_prefix("--") {
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                if !name.is_empty() {
                    out.insert(format!("--{name}"));
                }
            }
        }
    }
    out
}

/// The subcommands a `--help` text lists under "Commands:".
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter(|l| l.len() - l.trim_start().len() == 2)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The options of `help` that `guide` never mentions (`--help` and `--version` aside). An
/// option is mentioned when `--name` appears followed by anything but a name character.
fn undocumented(help: &str, guide: &str) -> Vec<String> {
    long_options(help)
        .into_iter()
        .filter(|o| o != "--help" && o != "--version")
        .filter(|o| {
            !guide.match_indices(o.as_str()).any(|(i, _)| {
                guide[i + o.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-'))
            })
        })
        .collect()
}

fn ldcost_help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ldcost"))
        .args(args)
        .arg("--help")
        .output()
        .expect("run ldcost --help");
    assert!(out.status.success(), "ldcost {args:?} --help: {out:?}");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

#[test]
fn checkers_report_what_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("other.md"),
        "# Other page\n\n## A `code` part: yes\n",
    )
    .unwrap();
    let page = dir.path().join("page.md");
    std::fs::write(
        &page,
        "# Page\n\n[fine](other.md) [fine anchor](other.md#a-code-part-yes) [here](#page)\n\
         [gone](missing.md) [bad anchor](other.md#nowhere) [web](https://example.org/x)\n\n\
         ```\n[in code](not-a-link.md)\n```\n",
    )
    .unwrap();
    let broken = broken_links(&page);
    let p = page.display();
    assert_eq!(
        broken,
        vec![
            format!("{p}: missing.md (no such file)"),
            format!("{p}: other.md#nowhere (no such heading)"),
        ]
    );

    let help = "Usage: x\n\nOptions:\n  -n, --runs <RUNS>  Runs, see --not-an-option\n          \
                --wrapped text\n      --fork[=<N>]  Fork\n  -h, --help  Print help\n";
    assert_eq!(
        long_options(help).into_iter().collect::<Vec<_>>(),
        vec!["--fork", "--help", "--runs"]
    );
    assert_eq!(
        undocumented(help, "use `--runs N`; --fork-x"),
        vec!["--fork"]
    );
    assert_eq!(
        subcommands("Commands:\n  deps  What\n               more\n  man   Page\n\nOptions:\n"),
        vec!["deps", "man"]
    );
    assert_eq!(
        slug("Fork: `ldcost profile TARGET --fork[=N]`"),
        "fork-ldcost-profile-target---forkn"
    );
}

#[test]
fn relative_links_point_at_files_and_headings_that_exist() {
    let broken: Vec<String> = markdown_files()
        .iter()
        .flat_map(|f| broken_links(f))
        .collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_subcommand_and_option_is_in_its_guide() {
    let guide_of = |sub: &str| -> Option<&str> {
        Some(match sub {
            "deps" => "docs/deps.md",
            "profile" => "docs/profile.md",
            "compare" | "diff" => "docs/compare.md",
            "report" => "docs/report.md",
            "experiment" => "docs/experiment.md",
            "completions" | "man" => "README.md",
            _ => return None,
        })
    };
    let top = ldcost_help(&[]);
    let subs = subcommands(&top);
    assert!(subs.len() >= 8, "subcommands of ldcost --help: {subs:?}");
    let mut missing = Vec::new();
    for sub in subs.iter().filter(|s| *s != "help") {
        let Some(guide) = guide_of(sub) else {
            missing.push(format!(
                "`ldcost {sub}` has no guide in docs/ (add it to this test)"
            ));
            continue;
        };
        let text = std::fs::read_to_string(Path::new(ROOT).join(guide)).unwrap();
        if !text.contains(&format!("ldcost {sub}")) {
            missing.push(format!("{guide} never names `ldcost {sub}`"));
        }
        for option in undocumented(&ldcost_help(&[sub]), &text) {
            missing.push(format!("{guide} does not mention `ldcost {sub} {option}`"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn readme_is_short_and_shows_the_ci_test_command() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 400, "README.md has {lines} lines (at most 400)");

    let ci = std::fs::read_to_string(Path::new(ROOT).join(".ci/run")).unwrap();
    let commands: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("cargo test"))
        .collect();
    assert!(!commands.is_empty(), ".ci/run runs no `cargo test`");
    // The README's command lines, comments cut: `cargo test   # what it does` shows `cargo test`.
    let shown: BTreeSet<&str> = readme
        .lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim())
        .collect();
    for command in commands {
        assert!(
            shown.contains(command),
            "README.md does not show .ci/run's test command `{command}` on a line of its own"
        );
    }
}
