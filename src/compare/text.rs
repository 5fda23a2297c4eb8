//! The human report of `diff` and `compare`: the verdict first, then the factors BASE → HEAD
//! → Δ. In: a [`Comparison`]. Out: text (plain; [`crate::report::color`] may paint it).

use crate::compare::verdict::p_text;
use crate::compare::Comparison;
use crate::report::schema::comparison::{Change, ObjectRow, Row, SideInfo};

/// A count or a size, as an integer when it is one.
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let s = format!("{}", v.abs() as u64);
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        if v < 0.0 {
            format!("-{out}")
        } else {
            out
        }
    } else {
        format!("{v:.1}")
    }
}

pub fn signed(v: f64) -> String {
    if v > 0.0 {
        format!("+{}", num(v))
    } else if v == 0.0 {
        "0".into()
    } else {
        num(v)
    }
}

pub fn opt(v: Option<f64>) -> String {
    v.map_or("—".into(), num)
}

/// A change of ns as signed µs with one decimal, a change that rounds to nothing as "0.0"
/// (never "-0.0", which reads as a loss too small to print).
pub fn delta_us(ns: f64) -> String {
    let v = (ns / 100.0).round() / 10.0;
    if v == 0.0 {
        "0.0".into()
    } else {
        format!("{v:+.1}")
    }
}

/// ns as µs with one decimal.
pub fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1e3)
}

/// The verdict's one-line description of a change.
pub fn change_line(c: &Change) -> String {
    format!(
        "{} → {}  {:+.1}%  [{:+.1}%, {:+.1}%]  p {}  noise floor {:.1}%  n {}/{}",
        us(c.base_median),
        us(c.head_median),
        c.change_pct,
        c.ci95_pct.0,
        c.ci95_pct.1,
        p_text(c.p_value),
        c.noise_floor_pct,
        c.base_n,
        c.head_n
    )
}

/// A row's BASE, HEAD and Δ as printed: `time` rows hold ns and print µs; a row of µs (an
/// object's times after `main`) keeps its one decimal, whole or not; counts print whole.
pub fn cells(r: &Row, time: bool) -> (String, String, String) {
    let micro = !time && r.name.ends_with(" µs");
    let f = |v: Option<f64>| match v {
        Some(v) if time => format!("{:.1}", v / 1e3),
        Some(v) if micro => format!("{v:.1}"),
        v => opt(v),
    };
    let d = match r.delta {
        Some(d) if time => delta_us(d),
        Some(d) if micro => delta_us(d * 1e3),
        Some(d) => signed(d),
        None => String::new(),
    };
    (f(r.base), f(r.head), d)
}

fn rows(out: &mut String, title: &str, rows: &[Row], time: bool) {
    if rows.is_empty() {
        return;
    }
    out.push_str(&format!("\n{title}\n"));
    let w = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    for r in rows {
        let (b, h, d) = cells(r, time);
        let line = format!("  {:<w$}  {b:>12} → {h:<12} {d}", r.name);
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// Where the verdict's figures come from, one line per source: the exec figures from one
/// kind of run, the fork figures from the measured fork loops (never a sentence mixing two);
/// an exec figure from other runs (the own work when ld.so's work after `main` is taken out
/// of it) has a line of its own.
pub fn sources(c: &Comparison) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut apart = Vec::new();
    for (what, fork) in [("exec figures", false), ("fork figures", true)] {
        let ms: Vec<_> = c
            .verdict
            .metrics
            .iter()
            .filter(|m| m.key.starts_with("fork_") == fork && m.change.is_some())
            .filter(|m| m.key != "after_main_libraries")
            .collect();
        if let Some(first) = ms.first().map(|m| m.source.as_str()) {
            out.push(format!("({what} from {first})"));
            apart.extend(
                ms.iter()
                    .filter(|m| m.source != first)
                    .map(|m| format!("({} from {})", m.label, m.source)),
            );
        }
    }
    out.extend(apart);
    // ld.so's CPU after main comes from other runs than the exec figures: a line of its own.
    if let Some(m) = c
        .verdict
        .metrics
        .iter()
        .find(|m| m.key == "after_main_libraries" && m.change.is_some())
    {
        out.push(format!("({} from {})", m.label, m.source));
    }
    out
}

/// The gate's line: "--fail-above 5% (total CPU per exec, start-up CPU): passed", or
/// "FAILED (exit 12): start-up CPU +59.0% > 5%". None without `--fail-above`.
pub fn gate_line(c: &Comparison) -> Option<String> {
    let pct = c.fail_above_pct?;
    let gated: Vec<&str> = c
        .verdict
        .metrics
        .iter()
        .filter(|m| m.gated)
        .map(|m| m.label.as_str())
        .collect();
    let opt = match &c.gate {
        Some(g) => format!("--fail-above {pct}% --gate {g}"),
        None => format!("--fail-above {pct}%"),
    };
    let looks = if gated.is_empty() {
        "nothing measured to gate".to_string()
    } else {
        gated.join(", ")
    };
    Some(if c.failed {
        format!(
            "{opt} ({looks}): FAILED (exit 12){}",
            c.gate_failure
                .as_deref()
                .map_or(String::new(), |w| format!(": {w}"))
        )
    } else {
        format!("{opt} ({looks}): passed")
    })
}

/// One word as a POSIX shell reads it back: as it is when it holds only characters no shell
/// treats specially, else in single quotes.
pub fn shell_word(a: &str) -> String {
    if !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

/// An environment assignment as a shell reads it before a command: the name as it is, the
/// value quoted (a quoted name would make the word a command, not an assignment).
fn env_word(a: &str) -> String {
    match a.split_once('=') {
        Some((k, v))
            if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            format!("{k}={}", shell_word(v))
        }
        _ => shell_word(a),
    }
}

/// One side as the reports' titles name it: its command line (program and arguments, quoted
/// as a POSIX shell would need them), the environment it ran with, and (`diff`) the document
/// it was read from, each passed through `code` (Markdown puts them in backticks): "python3 -S
/// -c pass with LD_BIND_NOW=1". The text's header and the Markdown title both use it, so the
/// two cannot name a side differently.
pub fn side_name(s: &SideInfo, code: impl Fn(&str) -> String) -> String {
    let words = |w: &mut dyn Iterator<Item = &String>| {
        w.map(|a| shell_word(a)).collect::<Vec<_>>().join(" ")
    };
    let mut out = code(&words(&mut std::iter::once(&s.target).chain(&s.args)));
    if !s.env.is_empty() {
        let env: Vec<String> = s.env.iter().map(|a| env_word(a)).collect();
        out.push_str(&format!(" with {}", code(&env.join(" "))));
    }
    if let Some(d) = &s.document {
        out.push_str(&format!(" ({})", code(d)));
    }
    out
}

/// The whole text report.
pub fn comparison(c: &Comparison) -> String {
    comparison_with(c, false)
}

/// The whole text report; `detail` also lists the objects loaded after `main` whose change
/// is within noise.
pub fn comparison_with(c: &Comparison, detail: bool) -> String {
    let mut out = String::new();
    let plain = |t: &str| t.to_string();
    out.push_str(&format!(
        "ldcost {}: BASE {} → HEAD {}\n",
        c.command,
        side_name(&c.base, plain),
        side_name(&c.head, plain)
    ));
    if !c.machine_differences.is_empty() {
        out.push_str(&format!(
            "warning: different machines (--force): {}\n",
            c.machine_differences.join(", ")
        ));
    }
    out.push_str(&format!("\nverdict: {}\n", c.verdict.summary));
    let w = c
        .verdict
        .metrics
        .iter()
        .map(|m| m.label.chars().count())
        .max()
        .unwrap_or(0);
    for m in &c.verdict.metrics {
        match (&m.change, &m.missing) {
            (Some(ch), _) => out.push_str(&format!(
                "  {:<w$}  {}{}\n",
                m.label,
                change_line(ch),
                match (ch.significant, m.judged) {
                    (true, true) => "  significant",
                    (true, false) => "  significant (not judged)",
                    _ => why_not_significant(ch),
                }
            )),
            (None, Some(why)) => out.push_str(&format!("  {:<w$}  {why}\n", m.label)),
            (None, None) => {}
        }
    }
    let sources: Vec<String> = sources(c);
    for s in &sources {
        out.push_str(&format!("  {s}\n"));
    }
    for n in &c.verdict.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    if let Some(l) = one_sided_names(&c.factors.after_main) {
        out.push_str(&format!("  {l}\n"));
    }
    out.push_str(
        "  (median BASE → HEAD; 95% bootstrap interval of the ratio of medians; Mann–Whitney U p;\n   significant = interval excludes 0, p < 0.05 and |change| > the split-half noise floor)\n",
    );
    if let Some(g) = gate_line(c) {
        out.push_str(&format!("  {g}\n"));
    }
    let f = &c.factors;
    rows(
        &mut out,
        "factors (the static model of start-up, BASE → HEAD, Δ):",
        &f.totals,
        false,
    );
    for (title, list) in [
        ("objects added:", &f.objects_added),
        ("objects removed:", &f.objects_removed),
    ] {
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{title}\n"));
        for o in list {
            out.push_str(&format!(
                "  {}  {}  found by {}{}; {} relocations, {} VMAs, {} bytes\n",
                o.name,
                o.path,
                o.found_by,
                if o.needed_by.is_empty() {
                    String::new()
                } else {
                    format!(", needed by {}", o.needed_by.join(", "))
                },
                num(o.relocations as f64),
                o.vmas,
                num(o.file_bytes as f64)
            ));
        }
    }
    let per_object: Vec<(&crate::report::schema::comparison::ObjectRow, Vec<Row>)> = f
        .objects
        .iter()
        .map(|o| {
            let changed: Vec<Row> = o
                .rows
                .iter()
                .filter(|r| r.delta != Some(0.0) && !(r.base.is_none() && r.head == Some(0.0)))
                .cloned()
                .collect();
            (o, changed)
        })
        .filter(|(_, rows)| !rows.is_empty())
        .collect();
    if !per_object.is_empty() {
        out.push_str("\nper object (objects whose figures differ):\n");
        for (o, changed) in per_object {
            let state = match (&o.base_path, &o.head_path) {
                (None, Some(_)) => " (added)",
                (Some(_), None) => " (removed)",
                _ => "",
            };
            out.push_str(&format!("  {}{state}\n", o.name));
            let mut sub = String::new();
            rows(&mut sub, "", &changed, false);
            for l in sub.lines().filter(|l| !l.is_empty()) {
                out.push_str(&format!("  {l}\n"));
            }
        }
    }
    rows(
        &mut out,
        "measured phases (median CPU µs, BASE → HEAD, Δ):",
        &f.phases,
        true,
    );
    rows(
        &mut out,
        "sampled CPU by category (% of samples):",
        &f.categories,
        false,
    );
    after_main(&mut out, f, detail);
    attribution(&mut out, &c.attribution);
    for n in &f.notes {
        out.push_str(&format!("\nnote: {n}\n"));
    }
    out.push_str(&format!("\nreproduce: {}\n", c.command_line));
    out
}

/// The attribution of the start-up change and the what-if predictions.
fn attribution(out: &mut String, a: &crate::report::schema::comparison::Attribution) {
    use crate::compare::explain;
    if !a.parts.is_empty() || a.measured_delta_ns.is_some() {
        out.push_str(&format!(
            "\nattribution of the start-up CPU change{} (unit costs fitted in this run):\n",
            explain::of(a).map_or(String::new(), |m| format!(
                ", {}{}",
                explain::sus(m),
                if a.instrumented_delta_ns.is_some() {
                    " in the per-object runs"
                } else {
                    ""
                }
            ))
        ));
        for p in a.parts.iter().filter(|p| !p.items.is_empty()) {
            out.push_str(&format!("  {}\n", explain::part_head(p, explain::of(a))));
            if p.factor != "search & mapping" {
                for l in explain::items(p, 5) {
                    out.push_str(&format!("    {l}\n"));
                }
            }
        }
        out.push_str(&format!("  {}\n", explain::explained(a)));
    }
    if let Some(r) = &a.reconciliation {
        out.push_str(&format!(
            "\nreconciliation: {}\n",
            explain::reconciliation(r)
        ));
    }
    if !a.unit_costs.is_empty() {
        out.push_str("\nunit costs (95% bootstrap interval over the runs, 200 resamples):\n");
        for l in explain::unit_costs(a).iter().chain(&explain::fits(a)) {
            out.push_str(&format!("  {l}\n"));
        }
    }
    if !a.what_if.is_empty() {
        out.push_str("\nwhat if (predictions from these unit costs, not measured):\n");
        for l in explain::what_if(a) {
            out.push_str(&format!("  {l}\n"));
        }
    }
    for n in &a.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
}

/// The report's line: "152 rounds in 3.0 s (the --min-time budget of 3.0 s)".
pub fn rounds_note(r: &crate::report::schema::comparison::RoundsRun) -> String {
    let budget = r.budget_s.map_or(String::new(), |b| format!("{b:.1} s"));
    let why = match r.stopped_by.as_str() {
        "runs" => format!("-n {}", r.count),
        "budget" => format!("the --min-time budget of {budget}"),
        "minimum" => format!(
            "the minimum of {}, which outlasted the {budget} budget",
            crate::config::MIN_ROUNDS
        ),
        "maximum" => format!(
            "the maximum of {}, reached within the {budget} budget",
            crate::config::MAX_ROUNDS
        ),
        "timeout" => "a run past --timeout ended them".into(),
        other => other.to_string(),
    };
    format!("{} rounds in {:.1} s ({why})", r.count, r.elapsed_s)
}

/// Why a change whose p is under 0.05 is still not significant: the rule needs all three
/// tests, and a reader seeing "p < 0.001" beside "no significant change" needs the one that
/// failed.
fn why_not_significant(ch: &Change) -> &'static str {
    if ch.significant || ch.p_value >= 0.05 {
        ""
    } else if ch.ci95_pct.0 <= 0.0 && ch.ci95_pct.1 >= 0.0 {
        "  not significant: p < 0.05, but the interval reaches 0"
    } else if ch.change_pct.abs() <= ch.noise_floor_pct {
        "  not significant: p < 0.05, but within the noise floor"
    } else {
        ""
    }
}

/// The times of an object loaded after `main` that the one-sided totals add up: ld.so's work
/// on it (search and mapping, relocation, initializers), as its rows name them.
pub const LOADER_ROWS: [&str; 3] = ["search and mapping µs", "relocation µs", "initializers µs"];

/// The objects loaded after `main` on one side only, added up: (count, µs of [`LOADER_ROWS`],
/// medians added) for the removed (BASE only) and the added (HEAD only).
pub fn one_sided(objects: &[ObjectRow]) -> [(usize, f64); 2] {
    let mut out = [(0, 0.0); 2];
    for o in objects {
        let (i, pick): (usize, fn(&Row) -> Option<f64>) = match (&o.base_path, &o.head_path) {
            (Some(_), None) => (0, |r| r.base),
            (None, Some(_)) => (1, |r| r.head),
            _ => continue,
        };
        out[i].0 += 1;
        out[i].1 += o
            .rows
            .iter()
            .filter(|r| LOADER_ROWS.contains(&r.name.as_str()))
            .filter_map(pick)
            .sum::<f64>();
    }
    out
}

/// The lines of the one-sided totals ("removed (BASE only): 3 objects, 412.5 µs …").
pub fn one_sided_lines(objects: &[ObjectRow]) -> Vec<String> {
    let [removed, added] = one_sided(objects);
    [
        ("removed (BASE only)", removed),
        ("added (HEAD only)", added),
    ]
    .into_iter()
    .filter(|(_, (n, _))| *n > 0)
    .map(|(what, (n, us))| {
        format!(
            "{what}: {n} object{}, {us:.1} µs of search and mapping, relocation and \
                 initializers (medians added)",
            if n == 1 { "" } else { "s" }
        )
    })
    .collect()
}

/// Under the verdict: the objects loaded after `main` on one side only, named (the first
/// five of each side, in load order) with the one-sided totals of the section below;
/// None when both sides loaded the same objects.
pub fn one_sided_names(objects: &[ObjectRow]) -> Option<String> {
    const NAMED: usize = 5;
    let [removed, added] = one_sided(objects);
    let names = |base: bool| -> String {
        let all: Vec<&str> = objects
            .iter()
            .filter(|o| {
                if base {
                    o.base_path.is_some() && o.head_path.is_none()
                } else {
                    o.head_path.is_some() && o.base_path.is_none()
                }
            })
            .map(|o| o.name.rsplit('/').next().unwrap_or(&o.name))
            .collect();
        let mut s = all[..all.len().min(NAMED)].join(", ");
        if all.len() > NAMED {
            s.push_str(&format!(", … {} more", all.len() - NAMED));
        }
        s
    };
    let parts: Vec<String> = [
        ("removed (BASE only)", removed, true),
        ("added (HEAD only)", added, false),
    ]
    .into_iter()
    .filter(|(_, (n, _), _)| *n > 0)
    .map(|(what, (_, us), base)| format!("{what} {} ({us:.1} µs)", names(base)))
    .collect();
    (!parts.is_empty()).then(|| format!("after main: {}", parts.join("; ")))
}

/// "N objects unchanged (within noise)", or None when every object is listed.
pub fn unchanged_line(objects: &[ObjectRow], detail: bool) -> Option<String> {
    let n = objects.iter().filter(|o| o.within_noise).count();
    (n > 0).then(|| {
        format!(
            "{n} object{} loaded on both sides unchanged (within noise){}",
            if n == 1 { "" } else { "s" },
            if detail {
                ", listed below"
            } else {
                "; --detail lists them"
            }
        )
    })
}

/// The loader after `main`: ld.so's CPU after `main`, the one-sided objects' totals, then
/// each object loaded after `main` whose figures changed, "(added)" / "(removed)" when one
/// side lacks it; objects within noise are counted, and listed only with `detail`.
fn after_main(out: &mut String, f: &crate::report::schema::comparison::Factors, detail: bool) {
    if f.after_main_cpu.is_none() && f.after_main.is_empty() {
        return;
    }
    out.push_str("\nloaded after main (dlopen; median µs, BASE → HEAD, Δ):\n");
    if let Some(r) = &f.after_main_cpu {
        let mut sub = String::new();
        rows(&mut sub, "", std::slice::from_ref(r), true);
        for l in sub.lines().filter(|l| !l.is_empty()) {
            out.push_str(&format!("{l}\n"));
        }
    }
    for l in one_sided_lines(&f.after_main)
        .into_iter()
        .chain(unchanged_line(&f.after_main, detail))
    {
        out.push_str(&format!("  {l}\n"));
    }
    for o in f.after_main.iter().filter(|o| detail || !o.within_noise) {
        let state = match (&o.base_path, &o.head_path) {
            (None, Some(_)) => " (added)",
            (Some(_), None) => " (removed)",
            _ if o.within_noise => " (within noise)",
            _ => "",
        };
        out.push_str(&format!("  {}{state}\n", o.name));
        let mut sub = String::new();
        rows(&mut sub, "", &o.rows, false);
        for l in sub.lines().filter(|l| !l.is_empty()) {
            out.push_str(&format!("  {l}\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of µs prints one decimal whole or not; a count prints whole; a time row in ns
    /// prints µs.
    #[test]
    fn rows_of_us_keep_their_decimal() {
        let row = |name: &str, b: f64, h: f64| Row {
            name: name.into(),
            base: Some(b),
            head: Some(h),
            delta: Some(h - b),
        };
        let c = |r: &Row, t: bool| {
            let (b, h, d) = cells(r, t);
            format!("{b} → {h} {d}")
        };
        assert_eq!(
            c(&row("initializers µs", 3.0, 1.5), false),
            "3.0 → 1.5 -1.5"
        );
        assert_eq!(
            c(&row("search and mapping µs", 34.0, 34.0), false),
            "34.0 → 34.0 0.0"
        );
        assert_eq!(
            c(&row("relocations", 1339.0, 1340.0), false),
            "1,339 → 1,340 +1"
        );
        assert_eq!(
            c(&row("ld.so's CPU after main", 951_800.0, 2_775_400.0), true),
            "951.8 → 2775.4 +1823.6"
        );
    }

    /// An assignment keeps its name bare, so that a shell still reads it as one; its value
    /// is quoted like any word.
    #[test]
    fn an_environment_value_is_quoted_and_its_name_is_not() {
        assert_eq!(env_word("LD_BIND_NOW=1"), "LD_BIND_NOW=1");
        assert_eq!(env_word("GREETING=hi there"), "GREETING='hi there'");
        assert_eq!(env_word("Q=it's"), r"Q='it'\''s'");
        assert_eq!(
            shell_words::split(&format!("{} x", env_word("Q=it's"))).unwrap(),
            ["Q=it's", "x"]
        );
    }

    /// The verdict's line of one-sided objects names them and gives the section's totals.
    #[test]
    fn one_sided_objects_are_named_under_the_verdict() {
        let obj = |name: &str, base: bool, head: bool, us: f64| ObjectRow {
            name: name.into(),
            base_path: base.then(|| format!("/lib/{name}")),
            head_path: head.then(|| format!("/lib/{name}")),
            rows: LOADER_ROWS
                .iter()
                .map(|r| Row {
                    name: r.to_string(),
                    base: base.then_some(us),
                    head: head.then_some(us),
                    delta: None,
                })
                .collect(),
            within_noise: base && head,
        };
        let mut objects = vec![obj("libz.so.1", true, true, 10.0)];
        assert_eq!(one_sided_names(&objects), None);
        for i in 0..7 {
            objects.push(obj(&format!("libr{i}.so"), true, false, 1.0));
        }
        objects.push(obj("libcrypt.so.1", false, true, 20.0));
        let l = one_sided_names(&objects).unwrap();
        assert_eq!(
            l,
            "after main: removed (BASE only) libr0.so, libr1.so, libr2.so, libr3.so, libr4.so, … 2 more (21.0 µs); added (HEAD only) libcrypt.so.1 (60.0 µs)"
        );
        // The same totals as the section's lines.
        let totals = one_sided_lines(&objects);
        assert!(totals[0].starts_with("removed (BASE only): 7 objects, 21.0 µs"));
        assert!(totals[1].starts_with("added (HEAD only): 1 object, 60.0 µs"));
    }

    /// "no significant change" beside "p < 0.001" says which of the three tests failed.
    #[test]
    fn a_small_p_that_is_not_significant_says_why() {
        let ch = |pct: f64, ci: (f64, f64), p: f64, floor: f64| Change {
            base_n: 20,
            head_n: 20,
            base_median: 100.0,
            head_median: 100.0 + pct,
            change_pct: pct,
            ci95_pct: ci,
            p_value: p,
            noise_floor_pct: floor,
            significant: p < 0.05 && (ci.0 > 0.0 || ci.1 < 0.0) && pct.abs() > floor,
        };
        let reaches = ch(0.1, (-18.6, 13.7), 0.0005, 2.0);
        assert!(why_not_significant(&reaches).contains("interval reaches 0"));
        let floor = ch(3.0, (1.0, 5.0), 0.01, 4.0);
        assert!(why_not_significant(&floor).contains("noise floor"));
        assert_eq!(why_not_significant(&ch(3.0, (-1.0, 5.0), 0.2, 1.0)), "");
        assert_eq!(why_not_significant(&ch(8.0, (5.0, 11.0), 0.001, 2.0)), "");
    }

    /// The text's header and the Markdown title name a side with the same words: its
    /// program and arguments (quoted where a shell needs it) and its environment.
    #[test]
    fn header_and_title_name_each_side_by_its_command_and_environment() {
        let side = |args: &[&str], env: &[&str]| SideInfo {
            target: "/usr/bin/python3".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            document: None,
            env: env.iter().map(|e| e.to_string()).collect(),
            machine: None,
            runs: 0,
            forks: 0,
            left_out: vec![],
        };
        let b = side(&["-c", "import sys"], &[]);
        let h = side(&["-S", "-c", "pass"], &["LD_BIND_NOW=1"]);
        let plain = |t: &str| t.to_string();
        assert_eq!(side_name(&b, plain), "/usr/bin/python3 -c 'import sys'");
        assert_eq!(
            side_name(&h, plain),
            "/usr/bin/python3 -S -c pass with LD_BIND_NOW=1"
        );
        assert_eq!(delta_us(-40.0), "0.0");
        assert_eq!(delta_us(-50.0), "-0.1");
        assert_eq!(delta_us(11_200.0), "+11.2");
        let code = |t: &str| format!("`{t}`");
        assert_eq!(
            side_name(&h, code),
            "`/usr/bin/python3 -S -c pass` with `LD_BIND_NOW=1`"
        );
    }
}
