//! Unit tests of the classifier: the fixtures classify as documented, the table reads, names are
//! cleaned, and the taxonomy agrees with itself and docs/taxonomy.md.
//!
//! In: fixtures.txt (through `fixtures.rs`), rules.txt, docs/taxonomy.md. Out: pass or fail.

use super::fixtures::{fixtures, perf, LDSO};
use super::taxonomy::INFO;
use super::*;
use Category::*;

#[test]
fn fixtures_classify_as_documented() {
    let mut failures = Vec::new();
    for (what, want, stack) in fixtures() {
        let got = classify(&stack);
        if got != want {
            failures.push(format!("{what}: got {got:?}, want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_category_has_a_fixture() {
    let covered: Vec<Category> = fixtures().iter().map(|f| f.1).collect();
    for c in Category::ALL {
        assert!(covered.contains(&c), "no fixture for {c:?}");
    }
}

#[test]
fn empty_stack_is_unknown() {
    assert_eq!(classify::<Frame>(&[]), Unknown);
}

#[test]
fn borrowed_frames_classify_like_owned_ones() {
    let owned = perf(&format!(
        "do_lookup_x+0x76 ({LDSO})\n_dl_fixup+0xd7 ({LDSO})"
    ));
    let borrowed: Vec<FrameRef> = owned
        .iter()
        .map(|f| FrameRef {
            name: &f.name,
            object: f.object.as_deref(),
            kernel: f.kernel,
        })
        .collect();
    assert_eq!(classify(&borrowed), LazyBinding);
    assert_eq!(classify(&owned), LazyBinding);
}

#[test]
fn ldso_wrappers_only_count_in_ldso() {
    let in_libc = perf("mmap64+0x13 (/usr/lib/x86_64-linux-gnu/libc.so.6)");
    let in_ldso = perf(&format!("mmap64+0x13 ({LDSO})"));
    assert_eq!(classify(&in_libc), Application);
    assert_eq!(classify(&in_ldso), LdsoMapping);
}

#[test]
fn names_are_cleaned_without_allocating() {
    let cases = [
        ("do_execveat_common.isra.0", "do_execveat_common"),
        ("copy_page_range+0xd5c", "copy_page_range"),
        ("__GI___wait4", "__wait4"),
        ("memcpy@@GLIBC_2.14", "memcpy"),
        ("puts@plt", "puts"),
        ("zap_pte_range.constprop.0.cold", "zap_pte_range"),
        (
            "_GLOBAL__sub_I_locale_init.cc",
            "_GLOBAL__sub_I_locale_init.cc",
        ),
        ("[unknown]", "[unknown]"),
    ];
    for (name, clean) in cases {
        assert_eq!(clean_name(name), clean, "{name}");
    }
}

#[test]
fn ldso_objects_are_recognised() {
    assert!(is_ldso_object(LDSO));
    assert!(is_ldso_object("ld-linux-aarch64.so.1"));
    assert!(is_ldso_object("/lib/ld-musl-x86_64.so.1"));
    assert!(is_ldso_object("/lib64/ld64.so.2"));
    assert!(!is_ldso_object("/usr/lib/x86_64-linux-gnu/libc.so.6"));
    assert!(!is_ldso_object("/usr/bin/ld"));
}

#[test]
fn names_and_labels_agree() {
    for (i, c) in Category::ALL.into_iter().enumerate() {
        assert_eq!(INFO[i].category, c, "INFO is in ALL's order");
        assert_eq!(Category::from_name(c.name()), Some(c));
        assert_eq!(Category::from_label(c.label()), Some(c));
        assert!(!c.label().contains(';') && !c.label().contains('\t'));
    }
    let mut labels: Vec<_> = Category::ALL.iter().map(|c| c.label()).collect();
    let mut colours: Vec<_> = Category::ALL.iter().map(|c| c.colour().hex()).collect();
    labels.sort();
    labels.dedup();
    colours.sort();
    colours.dedup();
    assert_eq!(labels.len(), Category::ALL.len(), "labels are distinct");
    assert_eq!(colours.len(), Category::ALL.len(), "colours are distinct");
}

/// The families stay visually grouped: fork red/orange, faults yellow/brown, exit and wait
/// purple, exec and ld.so blue/green, the rest grey; and black frame text stays readable.
#[test]
fn colour_families() {
    for c in Category::ALL {
        let Rgb(r, g, b) = c.colour();
        let (r, g, b) = (i32::from(r), i32::from(g), i32::from(b));
        let ok = match c {
            PageTableCopy | VmaDup | ForkOther => r > g + 40 && g > b,
            CowFault | FileFault | AnonFault => r >= g && g > b + 40,
            ExitTeardown | Wait => b > g + 20 && r > g,
            ExecKernel | LdsoMapping | LdsoRelocation | SymbolLookup | LazyBinding
            | Initializers | TlsSetup | CpuFeatures | LdsoOther => r < g.max(b) - 30,
            Application | KernelOther | Instrumentation | Unknown => {
                (r - g).abs() < 25 && (g - b).abs() < 25
            }
        };
        assert!(ok, "{c:?} {:?} is out of its family", c.colour());
        // Relative luminance (approximate) high enough for black 12px text.
        let lum = (299 * r + 587 * g + 114 * b) / 1000;
        assert!(lum >= 110, "{c:?} is too dark for black text ({lum})");
    }
}

/// docs/taxonomy.md's table and this module list the same categories, labels and colours.
#[test]
fn taxonomy_doc_matches_code() {
    let doc = include_str!("../../../docs/taxonomy.md");
    let mut rows = Vec::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        if cells.len() < 4 || !cells[0].starts_with('`') {
            continue;
        }
        let name = cells[0].trim_matches('`');
        let colour = cells[3]
            .split_whitespace()
            .find(|w| w.starts_with("`#"))
            .unwrap_or("");
        rows.push((
            name.to_string(),
            cells[1].to_string(),
            colour.trim_matches('`').to_string(),
        ));
    }
    for c in Category::ALL {
        let row = rows.iter().find(|r| r.0 == c.name());
        let Some(row) = row else {
            panic!("docs/taxonomy.md has no row for `{}`", c.name());
        };
        assert_eq!(
            row.1,
            c.label(),
            "label of {} in docs/taxonomy.md",
            c.name()
        );
        assert_eq!(
            row.2,
            c.colour().hex(),
            "colour of {} in docs/taxonomy.md",
            c.name()
        );
    }
    for row in &rows {
        assert!(
            Category::from_name(&row.0).is_some(),
            "docs/taxonomy.md lists `{}`, which the code does not have",
            row.0
        );
    }
    assert_eq!(rows.len(), Category::ALL.len(), "one row per category");
}

/// Classifying the fixtures over and over gives each one its category every time (the speed of
/// this loop is measured in benches/classify_speed.rs, not here).
#[test]
fn a_million_stacks_classify_fast() {
    let all = fixtures();
    let borrowed: Vec<Vec<FrameRef>> = all
        .iter()
        .map(|f| f.2.iter().map(Frame::borrowed).collect())
        .collect();
    let n = if cfg!(debug_assertions) {
        100_000
    } else {
        1_000_000
    };
    let mut counts = [0u64; Category::ALL.len()];
    for i in 0..n {
        counts[classify(&borrowed[i % borrowed.len()]) as usize] += 1;
    }
    assert_eq!(counts.iter().sum::<u64>(), n as u64);
    let mut want = [0u64; Category::ALL.len()];
    for i in 0..n {
        want[all[i % all.len()].1 as usize] += 1;
    }
    assert_eq!(counts, want, "per category, as fixtures.txt says");
}

/// rules.txt reads whole: every line is used, user names are not listed twice, and each kind
/// sits in a scope it can decide in.
#[test]
fn rules_table_parses() {
    let rules = rules();
    assert!(rules.len() > 250, "{} frame rules", rules.len());
    assert!(syscalls().len() > 30, "{} syscall rules", syscalls().len());
    let mut user: Vec<&str> = rules
        .iter()
        .filter(|r| r.scope != Scope::Kernel && r.how == Match::Exact)
        .map(|r| r.pattern)
        .collect();
    user.sort_unstable();
    let before = user.len();
    user.dedup();
    assert_eq!(user.len(), before, "a user name is in rules.txt twice");
    for r in rules {
        let ok = match r.kind {
            Kind::Teardown | Kind::OnBehalf | Kind::InFork => r.scope == Scope::Kernel,
            Kind::Encloses => r.scope == Scope::User,
            Kind::Fixed => true,
        };
        assert!(ok, "{} is {:?} in scope {:?}", r.pattern, r.kind, r.scope);
        assert!(!r.pattern.is_empty());
    }
}
