//! The human report of `ldcost deps`: the dependency tree (or flat load order), a table of
//! objects, a table of relocations per object and class, the relocation types, and the reading.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::attribute::link_cost;
use crate::deps::{Closure, FoundBy, RulesSource};

/// How to show the dependencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepsView {
    /// libtree-style tree, each object under the object that loaded it.
    Tree,
    /// ldd-style list in load order.
    Flat,
}

/// A name or path from the file under analysis, safe to print: control characters (a
/// terminal escape sequence hidden in a DT_NEEDED, a newline faking a report line) are shown
/// escaped, as `\u{1b}`.
pub fn clean(s: &str) -> String {
    if s.chars().any(char::is_control) {
        s.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect()
    } else {
        s.to_string()
    }
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().map(|h| h.to_string()));
    t
}

fn right_align(t: &mut Table, from: usize) {
    let n = t.column_count();
    for i in from..n {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// The full `deps` report.
pub fn deps(
    c: &Closure,
    view: DepsView,
    lookups: Option<&crate::attribute::lookups::LookupModel>,
    unused: &[crate::deps::UnusedDependency],
) -> String {
    let mut s = String::new();
    let main = &c.objects[0];
    let _ = writeln!(
        s,
        "ldcost deps {}: {} ({}), {} object{} in the closure",
        clean(&main.path),
        main.info.kind.label(),
        main.info.machine,
        c.objects.len(),
        if c.objects.len() == 1 { "" } else { "s" }
    );
    let rules = &c.rules;
    let _ = writeln!(
        s,
        "search rules: {}{}",
        match rules.source {
            RulesSource::LdSoHelp => format!("from `{} --help`", clean(&rules.interpreter)),
            RulesSource::BuiltIn => format!(
                "built-in defaults ({})",
                clean(
                    rules
                        .fallback
                        .as_deref()
                        .unwrap_or("ld.so could not be asked")
                )
            ),
        },
        if rules.hwcaps.is_empty() {
            String::new()
        } else {
            format!("; glibc-hwcaps: {}", rules.hwcaps.join(", "))
        }
    );
    if let Some(llp) = &c.ld_library_path {
        let _ = writeln!(s, "LD_LIBRARY_PATH={}", clean(llp));
    }
    if c.bind_now_env {
        let _ = writeln!(s, "LD_BIND_NOW is set: every PLT slot is bound at start-up");
    }
    s.push('\n');
    match view {
        DepsView::Tree => tree(c, &mut s),
        DepsView::Flat => flat(c, &mut s),
    }
    s.push('\n');
    objects_table(c, &mut s);
    s.push('\n');
    relocation_table(c, lookups, &mut s);
    s.push('\n');
    types_table(c, &mut s);
    s.push('\n');
    if !unused.is_empty() {
        unused_table(unused, &mut s);
        s.push('\n');
    }
    let _ = writeln!(s, "Reading");
    for line in link_cost::summary(c, lookups)
        .into_iter()
        .chain(link_cost::unused_reading(c, unused))
    {
        let _ = writeln!(s, "  - {line}");
    }
    s
}

/// DT_NEEDED entries no symbol reference binds to, and what dropping each takes out.
fn unused_table(unused: &[crate::deps::UnusedDependency], s: &mut String) {
    let _ = writeln!(
        s,
        "Unused direct dependencies (no symbol binds to them, as `ldd -u -r` reports)"
    );
    let mut t = table(&["object", "DT_NEEDED", "resolved to", "dropping it removes"]);
    for u in unused {
        t.add_row(vec![
            clean(&u.object),
            clean(&u.needed),
            u.needed_path
                .as_deref()
                .map(|p| clean(&p.to_string_lossy()))
                .unwrap_or_default(),
            if u.removes.is_empty() {
                "nothing (still needed elsewhere)".to_string()
            } else {
                clean(&u.removes.join(", "))
            },
        ]);
    }
    let _ = writeln!(s, "{t}");
}

fn tree(c: &Closure, s: &mut String) {
    let _ = writeln!(
        s,
        "Dependency tree (each library under the object that loaded it)"
    );
    let _ = writeln!(s, "{}", c.objects[0].path);
    let mut stack = vec![0usize];
    tree_children(c, 0, "", s, &mut stack);
    for m in &c.missing {
        if !c.objects.iter().any(|o| o.path == m.needed_by) {
            let _ = writeln!(s, "  {} => not found", clean(&m.name));
        }
    }
}

fn tree_children(c: &Closure, idx: usize, prefix: &str, s: &mut String, stack: &mut Vec<usize>) {
    let edges = &c.objects[idx].needed;
    for (k, e) in edges.iter().enumerate() {
        let last = k + 1 == edges.len();
        let branch = if last { "└── " } else { "├── " };
        match e.object {
            None => {
                let why = c
                    .missing
                    .iter()
                    .find(|m| m.name == e.name && m.needed_by == c.objects[idx].path)
                    .and_then(|m| m.reason.clone());
                let _ = writeln!(
                    s,
                    "{prefix}{branch}{} => not found{}",
                    clean(&e.name),
                    why.map(|w| format!(" ({})", clean(&w))).unwrap_or_default()
                );
            }
            Some(o) if !e.first || stack.contains(&o) => {
                let _ = writeln!(s, "{prefix}{branch}{} (already loaded)", clean(&e.name));
            }
            Some(o) => {
                let obj = &c.objects[o];
                let _ = writeln!(
                    s,
                    "{prefix}{branch}{} => {} [{}]",
                    clean(&e.name),
                    clean(&obj.path),
                    obj.found_by.label()
                );
                stack.push(o);
                let child_prefix = format!("{prefix}{}", if last { "    " } else { "│   " });
                tree_children(c, o, &child_prefix, s, stack);
                stack.pop();
            }
        }
    }
}

fn flat(c: &Closure, s: &mut String) {
    let _ = writeln!(s, "Load order (the global symbol lookup scope)");
    let mut t = table(&["#", "needed as", "path", "found by"]);
    for (i, o) in c.objects.iter().enumerate() {
        t.add_row(vec![
            (i + 1).to_string(),
            if matches!(o.found_by, FoundBy::Target) {
                "(target)".to_string()
            } else {
                clean(&o.name)
            },
            clean(&o.path),
            o.found_by.label(),
        ]);
    }
    for m in &c.missing {
        t.add_row(vec![
            "-".to_string(),
            clean(&m.name),
            "not found".to_string(),
            format!("needed by {}", clean(&m.needed_by)),
        ]);
    }
    let _ = writeln!(s, "{t}");
}

fn objects_table(c: &Closure, s: &mut String) {
    let _ = writeln!(s, "Objects (in load order)");
    let mut t = table(&[
        "#", "object", "kind", "file", "text", "rodata", "data+bss", "relro", "VMAs", "dynsym",
        "def", "undef", "hash", "inits", "flags",
    ]);
    for (i, o) in c.objects.iter().enumerate() {
        let info = &o.info;
        let by_kind = |k: crate::elf::SegmentKind| -> u64 {
            info.segments
                .iter()
                .filter(|s| s.kind == k)
                .map(|s| s.mapped)
                .sum()
        };
        let mut flags = Vec::new();
        if info.flags.bind_now {
            flags.push("NOW");
        }
        if info.flags.textrel {
            flags.push("TEXTREL");
        }
        if info.flags.initfirst {
            flags.push("INITFIRST");
        }
        if info.flags.nodeflib {
            flags.push("NODEFLIB");
        }
        t.add_row(vec![
            (i + 1).to_string(),
            clean(o.path.rsplit('/').next().unwrap_or(&o.path)),
            info.kind.label().to_string(),
            human_bytes(info.file_size),
            human_bytes(by_kind(crate::elf::SegmentKind::Text)),
            human_bytes(by_kind(crate::elf::SegmentKind::ReadOnly)),
            human_bytes(by_kind(crate::elf::SegmentKind::Writable)),
            human_bytes(info.relro_size),
            info.vmas.len().to_string(),
            info.symbols.dynsym.to_string(),
            info.symbols.defined.to_string(),
            info.symbols.undefined.to_string(),
            format!("{:?}", info.hash_style).to_lowercase(),
            info.initializers.total.to_string(),
            flags.join(","),
        ]);
    }
    right_align(&mut t, 3);
    let _ = writeln!(s, "{t}");
    for o in &c.objects {
        if let Some(b) = &o.info.build_id {
            let _ = writeln!(s, "  build-id {b}  {}", clean(&o.path));
        }
    }
}

fn relocation_table(
    c: &Closure,
    lookups: Option<&crate::attribute::lookups::LookupModel>,
    s: &mut String,
) {
    let _ = writeln!(
        s,
        "Relocations (sorted by start-up lookups; PLT column: total, of which lazy)"
    );
    let mut t = table(&[
        "object",
        "relative",
        "symbolic",
        "PLT (lazy)",
        "IRELATIVE",
        "TLS",
        "COPY",
        "other",
        "total",
        "lookups",
        "cached",
        "probes",
    ]);
    let mut order: Vec<usize> = (0..c.objects.len()).collect();
    order.sort_by_key(|&i| {
        let r = &c.objects[i].info.relocations;
        std::cmp::Reverse((r.startup_lookups, r.total))
    });
    for i in order {
        let o = &c.objects[i];
        let r = &o.info.relocations;
        let k = &r.by_class;
        t.add_row(vec![
            clean(o.path.rsplit('/').next().unwrap_or(&o.path)),
            k.relative.to_string(),
            k.symbolic.to_string(),
            format!("{} ({})", k.plt, r.lazy_deferred),
            k.irelative.to_string(),
            k.tls.to_string(),
            k.copy.to_string(),
            k.other.to_string(),
            r.total.to_string(),
            r.startup_lookups.to_string(),
            r.cache_hits.to_string(),
            lookups
                .and_then(|m| m.objects.iter().find(|x| x.path == o.path))
                .map(|x| x.probes.to_string())
                .unwrap_or_default(),
        ]);
    }
    let tot = link_cost::totals(c);
    let k = &tot.relocations;
    t.add_row(vec![
        "TOTAL".to_string(),
        k.relative.to_string(),
        k.symbolic.to_string(),
        format!("{} ({})", k.plt, tot.lazy_deferred),
        k.irelative.to_string(),
        k.tls.to_string(),
        k.copy.to_string(),
        k.other.to_string(),
        tot.relocations_total.to_string(),
        tot.startup_lookups.to_string(),
        tot.cache_hits.to_string(),
        lookups.map(|m| m.probes.to_string()).unwrap_or_default(),
    ]);
    right_align(&mut t, 1);
    let _ = writeln!(s, "{t}");
}

fn types_table(c: &Closure, s: &mut String) {
    let _ = writeln!(
        s,
        "Relocation types over the closure (as readelf -r names them)"
    );
    let mut all: BTreeMap<&str, u64> = BTreeMap::new();
    for o in &c.objects {
        for (k, v) in &o.info.relocations.by_type {
            *all.entry(k.as_str()).or_default() += v;
        }
    }
    let mut rows: Vec<(&str, u64)> = all.into_iter().collect();
    rows.sort_by_key(|&(k, v)| (std::cmp::Reverse(v), k));
    let mut t = table(&["type", "count"]);
    for (k, v) in rows {
        t.add_row(vec![k.to_string(), v.to_string()]);
    }
    right_align(&mut t, 1);
    let _ = writeln!(s, "{t}");
}
