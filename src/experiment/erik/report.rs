//! erik's series as a [`Section`]: footprint and fork tables, the fitted model, findings and
//! checks (the plots are drawn in `plots`).
//!
//! In: the measured points, the independent per-VMA loop and the `cc` commands. Out: the
//! section every report format is rendered from. The model is fork cost (round trip, the
//! parent's fork() call, the child's life) = intercept + per library × libraries + per VMA ×
//! VMAs + per page × resident anonymous pages, fitted to the points' medians over all series
//! (see [`super::fit`]), over the points where VMAs come in a library's mix. VMAs by kind and
//! page-table pages are the per-kind model's ([`super::kinds`]), over every point.

use super::driver::{Exit, Sample, VmaLoop};
use super::fit::{fit, Fit};
use super::{Measured, SeriesId, Vary, MAX_LIBS};
use crate::experiment::section::{Check, Finding, Section, Settings, Table};
use crate::report::schema::experiment as doc;
use crate::stats::median_mut;
use crate::trace::footprint::{Footprint, VmaKind};

/// Bootstrap rounds of every fit.
const ROUNDS: usize = 400;

/// Which figure of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    RoundTrip,
    Parent,
    Child,
}

impl Measure {
    pub const ALL: [Measure; 3] = [Measure::RoundTrip, Measure::Parent, Measure::Child];
    fn of(self, s: &Sample) -> f64 {
        match self {
            Measure::RoundTrip => s.round_trip,
            Measure::Parent => s.parent,
            Measure::Child => s.child,
        }
    }
    pub fn key(self) -> &'static str {
        match self {
            Measure::RoundTrip => "round_trip",
            Measure::Parent => "parent",
            Measure::Child => "child",
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Measure::RoundTrip => "round trip",
            Measure::Parent => "parent's fork() call",
            Measure::Child => "child's life",
        }
    }
}

pub(super) fn values(m: &Measured, e: usize, what: Measure) -> Vec<f64> {
    m.samples[e].iter().map(|s| what.of(s)).collect()
}

pub(super) fn med(m: &Measured, e: usize, what: Measure) -> f64 {
    median_mut(&mut values(m, e, what))
}

fn anon_pages(f: &Footprint) -> f64 {
    f.rss_anon_bytes
        .value()
        .map_or(f64::NAN, |b| b as f64 / 4096.0)
}

/// The figures of a footprint compared between points: (name, value).
fn figures(f: &Footprint) -> Vec<(String, Option<u64>)> {
    let mut v = vec![("VMAs".to_string(), Some(f.vmas.total))];
    for k in VmaKind::ALL {
        v.push((format!("{} VMAs", k.name()), Some(f.vmas.get(k))));
    }
    v.push(("VmPTE".into(), f.page_table_bytes.value()));
    v.push(("RssAnon".into(), f.rss_anon_bytes.value()));
    v.push(("RssFile".into(), f.rss_file_bytes.value()));
    v
}

/// The figures of `f` more than 2% away from `target`'s (or unreadable in either).
pub fn off_figures(f: &Footprint, target: &Footprint) -> Vec<String> {
    figures(f)
        .into_iter()
        .zip(figures(target))
        .filter_map(|((name, v), (_, t))| match (v, t) {
            (Some(v), Some(t)) if (v as f64 - t as f64).abs() <= 0.02 * t as f64 => None,
            (Some(v), Some(t)) => Some(format!("{name} {v} vs {t}")),
            _ => Some(format!("{name} not available")),
        })
        .collect()
}

fn kb(f: &crate::trace::footprint::Figure) -> String {
    f.value()
        .map_or_else(|| "not available".into(), |b| (b / 1024).to_string())
}

fn us(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "not available".into()
    }
}

fn interval(v: f64, ci: [f64; 2], digits: usize) -> String {
    format!("{v:.digits$} [{:.digits$}, {:.digits$}]", ci[0], ci[1])
}

/// Builds the section.
pub fn section(
    settings: &Settings,
    points: &[Measured],
    vmaloop: &VmaLoop,
    commands: &[String],
) -> Section {
    let mut s = Section {
        name: "erik".into(),
        title: "erik's series: library count at constant footprint (seed 004, 2009)".into(),
        seed: Some("004_60f4a88c970056ff.txt".into()),
        ..Section::default()
    };
    let n = points.first().map_or(0, |m| m.samples[0].len());
    s.intro = vec![
        "erik (9fans, 2009): \"i wonder if you may be measuring the performance of memory \
         management more than the performance of dynamic linking … the hard bit would be \
         keeping the memory footprint the same while increasing the number of shared \
         libraries.\" Series A links k tiny libraries and maps library-shaped padding files \
         (r--, r-x, r--, RELRO written then protected, rw- written, anonymous bss) plus the \
         anonymous memory ld.so allocates per library, so that every point has the footprint \
         of k = 100; series B keeps 10 libraries and grows the padding (every kind of VMA \
         in a library's proportions); series C keeps 10 libraries and grows one thing at a \
         time: written anonymous pages, anonymous VMAs, file text, read-only file, RELRO or \
         written file-data VMAs (one page each, apart), or page-table pages (written pages \
         2 MiB apart)."
            .into(),
        format!(
            "Each point: {n} forks with the child leaving by `_exit` (bound at start-up), {n} \
             with `exit()` (bound lazily in each child, then `_dl_fini` over every object) and \
             {n} with `exit()` bound before the fork (`_dl_fini` alone); the parent waits. \
             All drivers run at once and are forked in turn in blocks. Footprints are read \
             through procfs while each driver waits on a pipe.{}",
            if settings.quick {
                " --quick: fewer points and forks."
            } else {
                ""
            }
        ),
    ];
    let target = points
        .iter()
        .find(|m| m.point.series == SeriesId::A && m.point.libs == MAX_LIBS)
        .map(|m| m.footprint.clone());
    footprint_table(&mut s, points, target.as_ref());
    fork_table(&mut s, points);
    // The overall model is fitted where VMAs come in a library's mix (A, B, and C's
    // anonymous pages, which add no VMA); the per-kind model over every point.
    let mixed: Vec<Measured> = points
        .iter()
        .filter(|m| m.point.vary.is_none_or(|v| v == Vary::AnonPages))
        .cloned()
        .collect();
    let (fits, conclusion) = model(&mut s, &mixed);
    let kinds = super::kinds::kind_model(points);
    super::kinds::add_to_section(&mut s, &kinds);
    let independent = super::independent::independent(&mut s, vmaloop);
    checks(&mut s, points, &fits, independent);
    super::plots::plots(&mut s, points, conclusion.as_deref());
    s.notes.push(
        "The drivers run with address-space randomisation off (they re-execute themselves as \
         `setarch -R` would), so every point has the same layout and the same page-table pages; \
         with it on, VmPTE moves by a page or two between runs. Every page of the C library, \
         ld.so and the driver is read at every point (fault-around would otherwise map a \
         different share of them depending on where they land); fork() does not copy the \
         page-table entries of such read-only file mappings."
            .into(),
    );
    s.notes.push(
        "The overall model's VMA term (\"µs per VMA\") is the cost of a library-shaped mix of \
         VMAs: it is fitted to series A, B and C's anonymous-page points, where every kind \
         grows in a library's proportions. The per-kind model separates them with series C's \
         one-kind points, over every point."
            .into(),
    );
    let data = doc::ErikData {
        points: points.iter().map(Into::into).collect(),
        vmaloop: vmaloop.into(),
        commands: commands.to_vec(),
        fits: fits
            .iter()
            .map(|(e, m, f, fo)| doc::ErikFit {
                exit: Exit::ALL[*e].key().into(),
                measure: m.key().into(),
                columns: ["intercept", "libraries", "vmas", "anon_pages"]
                    .map(String::from)
                    .to_vec(),
                coef: f.as_ref().map(|f| f.coef.clone()),
                ci95: f.as_ref().map(|f| f.ci.clone()),
                r2: f.as_ref().map(|f| f.r2),
                footprint_only_r2: *fo,
            })
            .collect(),
        kind_model: kinds.doc(),
        // The differential graphs are made apart from the fits and added by
        // `diff::add_to_section`.
        diff: Vec::new(),
    };
    s.data = serde_json::to_value(data).unwrap_or(serde_json::Value::Null);
    s
}

fn footprint_table(s: &mut Section, points: &[Measured], target: Option<&Footprint>) {
    let mut rows = Vec::new();
    for m in points {
        let f = &m.footprint;
        let off = match (m.point.series, target) {
            (SeriesId::A, Some(t)) => {
                let off = off_figures(f, t);
                if off.is_empty() {
                    "within 2%".into()
                } else {
                    off.join("; ")
                }
            }
            (SeriesId::A, None) => "no k = 100 point".into(),
            _ => "".into(),
        };
        rows.push(vec![
            m.point.series.name().into(),
            m.point.libs.to_string(),
            m.point.pad.describe(),
            f.vmas.total.to_string(),
            f.vmas.file_text.to_string(),
            f.vmas.file_readonly.to_string(),
            f.vmas.relro.to_string(),
            f.vmas.file_writable.to_string(),
            f.vmas.anon.to_string(),
            kb(&f.page_table_bytes),
            kb(&f.rss_anon_bytes),
            kb(&f.rss_file_bytes),
            off,
        ]);
    }
    s.tables.push(Table {
        title: "erik: achieved footprint of every point (procfs, read while the driver waits)"
            .into(),
        columns: [
            "series",
            "libraries",
            "pads / extra VMAs / extra pages",
            "VMAs",
            "file text",
            "file r--",
            "RELRO",
            "file data",
            "anon",
            "VmPTE kB",
            "RssAnon kB",
            "RssFile kB",
            "series A: vs k = 100",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        caption: Some(
            "VMA kinds as `ldcost profile` classifies /proc/PID/maps; heap, stack, vdso and \
             the shared timing page are in the total. A figure more than 2% from the k = 100 \
             point is named in the last column."
                .into(),
        ),
    });
}

fn fork_table(s: &mut Section, points: &[Measured]) {
    let mut rows = Vec::new();
    for m in points {
        let mut r = vec![
            m.point.series.name().into(),
            m.point.libs.to_string(),
            m.footprint.vmas.total.to_string(),
            kb(&m.footprint.rss_anon_bytes),
        ];
        for e in 0..Exit::ALL.len() {
            for what in Measure::ALL {
                r.push(us(med(m, e, what)));
            }
        }
        r.push(m.samples[0].len().to_string());
        rows.push(r);
    }
    let mut columns: Vec<String> = ["series", "libraries", "VMAs", "RssAnon kB"]
        .map(String::from)
        .to_vec();
    for e in Exit::ALL {
        for what in Measure::ALL {
            columns.push(format!("{} {} µs", e.label(), what.label()));
        }
    }
    columns.push("forks each".into());
    s.tables.push(Table {
        title: "erik: fork cost per point (medians, µs)".into(),
        columns,
        rows,
        caption: Some(
            "Round trip: before fork() to waitpid()'s return. Parent: the fork() call. Child: \
             from the child's first instruction to waitpid()'s return (its exit, teardown and \
             the parent's wake-up)."
                .into(),
        ),
    });
}

type FitRow = (usize, Measure, Option<Fit>, Option<f64>);

fn model(s: &mut Section, points: &[Measured]) -> (Vec<FitRow>, Option<String>) {
    let x: Vec<Vec<f64>> = points
        .iter()
        .map(|m| {
            vec![
                1.0,
                f64::from(m.point.libs),
                m.footprint.vmas.total as f64,
                anon_pages(&m.footprint),
            ]
        })
        .collect();
    let x_fp: Vec<Vec<f64>> = x.iter().map(|r| vec![r[0], r[2], r[3]]).collect();
    let mut out = Vec::new();
    let mut rows = Vec::new();
    for e in 0..Exit::ALL.len() {
        for what in Measure::ALL {
            let samples: Vec<Vec<f64>> = points.iter().map(|m| values(m, e, what)).collect();
            let f = fit(&x, &samples, ROUNDS);
            let fo = fit(&x_fp, &samples, 1).map(|f| f.r2);
            let label = format!("{}, {}", what.label(), Exit::ALL[e].label());
            rows.push(match &f {
                Some(f) => vec![
                    label,
                    interval(f.coef[1], f.ci[1], 2),
                    interval(f.coef[2], f.ci[2], 3),
                    interval(
                        f.coef[3] * 1000.0,
                        [f.ci[3][0] * 1000.0, f.ci[3][1] * 1000.0],
                        1,
                    ),
                    format!("{:.1}", f.coef[0]),
                    format!("{:.3}", f.r2),
                    fo.map_or("not available".into(), |r| format!("{r:.3}")),
                ],
                None => {
                    let mut r = vec![label];
                    r.extend(std::iter::repeat_n(
                        "not available (the points do not identify the model)".to_string(),
                        6,
                    ));
                    r
                }
            });
            out.push((e, what, f, fo));
        }
    }
    s.tables.push(Table {
        title: "erik: fitted model of fork cost over series A, B and C's anonymous-page points (least squares, bootstrap 95%)"
            .into(),
        columns: [
            "fork cost",
            "µs per library",
            "µs per VMA",
            "ns per resident anonymous page",
            "intercept µs",
            "R²",
            "R² without the library term",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        caption: Some(format!(
            "Fitted to the points' medians; intervals: {ROUNDS} bootstrap resamples of every \
             point's forks."
        )),
    });
    for (e, what, f, fo) in &out {
        let Some(f) = f else { continue };
        let ex = Exit::ALL[*e];
        let tail = format!("{}.{}", what.key(), ex.key());
        let lib = f.coef[1];
        s.findings.push(Finding {
            key: format!("erik.per_library_us.{tail}"),
            text: format!(
                "holding the footprint constant, each library adds {} µs per library to the \
                 {} with `{}` ({})",
                interval(lib, f.ci[1], 2),
                what.label(),
                ex.label(),
                super::verdict::judged(f.ci[1])
            ),
            value: lib,
            unit: "µs per library".into(),
            interval: Some(f.ci[1]),
        });
        s.findings.push(Finding {
            key: format!("erik.per_vma_us.{tail}"),
            text: format!(
                "each VMA costs {} µs per VMA in the {} with `{}`",
                interval(f.coef[2], f.ci[2], 3),
                what.label(),
                ex.label()
            ),
            value: f.coef[2],
            unit: "µs per VMA".into(),
            interval: Some(f.ci[2]),
        });
        if let (Measure::RoundTrip, Some(r2)) = (what, fo) {
            s.findings.push(Finding {
                key: format!("erik.footprint_r2.{}", ex.key()),
                text: format!(
                    "footprint alone (VMAs and resident anonymous pages) explains {:.0}% of the \
                     variance of the round trip with `{}` across the points; with the library \
                     count, {:.0}%",
                    r2 * 100.0,
                    ex.label(),
                    f.r2 * 100.0
                ),
                value: *r2,
                unit: "R²".into(),
                interval: None,
            });
        }
    }
    let child = |e: usize| {
        out.iter()
            .find(|(x, m, _, _)| *x == e && matches!(m, Measure::Child))
            .and_then(|(_, _, f, _)| f.as_ref())
            .map(|f| f.coef[1])
    };
    if let (Some(u), Some(l), Some(b)) = (child(0), child(1), child(2)) {
        s.findings.push(Finding {
            key: "erik.residue_us.child".into(),
            text: format!(
                "where the per-library residue lives: each library adds {l:.2} µs per library \
                 to the child's life with `exit()` and {u:.2} with `_exit`; of the difference, \
                 {:.2} µs remain when exit is bound before the fork (`_dl_fini` and the \
                 destructors it runs in every object, with the page faults on their pages, \
                 which fork did not copy) and {:.2} µs is the lazy binding of exit through \
                 every library of the scope",
                b - u,
                l - b
            ),
            value: l - u,
            unit: "µs per library".into(),
            interval: None,
        });
    }
    let mut conclusion = None;
    if let Some((v, c)) = verdict(&out, vmas_per_lib(points)) {
        // First among the findings: the Summary opens with it.
        s.findings.insert(0, v);
        conclusion = Some(c);
    }
    (out, conclusion)
}

/// VMAs one library brings: between the unpadded points with the fewest and the most
/// libraries, the VMAs gained per library gained. None without two such points.
fn vmas_per_lib(points: &[Measured]) -> Option<f64> {
    let unpadded = || {
        points
            .iter()
            .filter(|m| m.point.pad.pads == 0 && m.point.vary.is_none())
    };
    let few = unpadded().min_by_key(|m| m.point.libs)?;
    let many = unpadded().max_by_key(|m| m.point.libs)?;
    let dl = f64::from(many.point.libs) - f64::from(few.point.libs);
    (dl > 0.0).then(|| (many.footprint.vmas.total as f64 - few.footprint.vmas.total as f64) / dl)
}

/// The verdict paragraph as a finding (`erik.verdict`, valued at the per-library effect on the
/// parent's fork() call), with its conclusion sentence; None when a fit it needs is missing.
fn verdict(fits: &[FitRow], vmas_per_lib: Option<f64>) -> Option<(Finding, String)> {
    use super::verdict::{conclusion, paragraph, Effect, Inputs};
    let get = |e: usize, m: Measure| {
        fits.iter()
            .find(|(x, w, _, _)| *x == e && *w == m)
            .and_then(|(_, _, f, _)| f.as_ref())
    };
    let effect = |f: &Fit, c: usize| Effect {
        value: f.coef[c],
        ci: f.ci[c],
    };
    let fork = get(0, Measure::Parent)?;
    let child = |e: usize| get(e, Measure::Child).map(|f| f.coef[1]);
    let inputs = Inputs {
        per_vma_fork: effect(fork, 2),
        lib_fork: effect(fork, 1),
        lib_round_trip: effect(get(0, Measure::RoundTrip)?, 1),
        lib_round_trip_exit: effect(get(1, Measure::RoundTrip)?, 1),
        exit_part: match (child(0), child(1), child(2)) {
            (Some(u), Some(l), Some(b)) => Some((l - u, b - u, l - b)),
            _ => None,
        },
        vmas_per_lib,
    };
    let chosen = conclusion(
        inputs.per_vma_fork.side(),
        inputs.lib_fork.side(),
        inputs.lib_round_trip.side(),
        inputs.lib_round_trip_exit.side(),
    );
    Some((
        Finding {
            key: "erik.verdict".into(),
            text: paragraph(&inputs),
            value: inputs.lib_fork.value,
            unit: "µs per library".into(),
            interval: Some(inputs.lib_fork.ci),
        },
        chosen,
    ))
}

fn checks(s: &mut Section, points: &[Measured], fits: &[FitRow], independent: Option<(f64, f64)>) {
    let find = |series: SeriesId, libs: u32, pads: u32| {
        points
            .iter()
            .find(|m| m.point.series == series && m.point.libs == libs && m.point.pad.pads == pads)
    };
    if let (Some(few), Some(many)) = (find(SeriesId::B, 10, 0), find(SeriesId::A, MAX_LIBS, 0)) {
        let (a, b) = (med(few, 0, Measure::Parent), med(many, 0, Measure::Parent));
        s.checks.push(Check {
            claim: "more libraries, slower fork (unpadded: 100 libraries vs 10)".into(),
            holds: b > a,
            detail: format!(
                "parent's fork() call {a:.1} µs with 10 libraries ({} VMAs), {b:.1} µs with 100 \
                 ({} VMAs); round trip {:.1} vs {:.1} µs",
                few.footprint.vmas.total,
                many.footprint.vmas.total,
                med(few, 0, Measure::RoundTrip),
                med(many, 0, Measure::RoundTrip)
            ),
        });
    }
    let target = find(SeriesId::A, MAX_LIBS, 0).map(|m| m.footprint.clone());
    if let Some(t) = target {
        let off: Vec<String> = points
            .iter()
            .filter(|m| m.point.series == SeriesId::A)
            .filter_map(|m| {
                let o = off_figures(&m.footprint, &t);
                (!o.is_empty()).then(|| format!("k = {}: {}", m.point.libs, o.join(", ")))
            })
            .collect();
        s.checks.push(Check {
            claim: "series A: every point's footprint within 2% of k = 100's on every figure"
                .into(),
            holds: off.is_empty(),
            detail: if off.is_empty() {
                "all within 2%".into()
            } else {
                format!("off: {}", off.join("; "))
            },
        });
    }
    let mismatched: Vec<String> = points
        .iter()
        .filter(|m| {
            m.own.vmas != m.footprint.vmas.total
                || Some(m.own.pte_kb * 1024) != m.footprint.page_table_bytes.value()
        })
        .map(|m| {
            format!(
                "{} k = {}: itself {} VMAs {} kB, procfs {} VMAs {} kB",
                m.point.series.name(),
                m.point.libs,
                m.own.vmas,
                m.own.pte_kb,
                m.footprint.vmas.total,
                kb(&m.footprint.page_table_bytes)
            )
        })
        .collect();
    s.checks.push(Check {
        claim: "each driver's own /proc/self figures equal ldcost's procfs reading (VMAs, VmPTE)"
            .into(),
        holds: mismatched.is_empty(),
        detail: if mismatched.is_empty() {
            format!("{} points agree", points.len())
        } else {
            mismatched.join("; ")
        },
    });
    let fitted = fits.iter().find_map(|(e, m, f, _)| match (e, m, f) {
        (0, Measure::RoundTrip, Some(f)) => Some(f.coef[2]),
        _ => None,
    });
    match (fitted, independent) {
        (Some(f), Some((rt, _))) => s.checks.push(Check {
            claim: "the fitted per-VMA cost is within a factor of two of the independent one"
                .into(),
            holds: rt > 0.0 && f / rt >= 0.5 && f / rt <= 2.0,
            detail: format!(
                "fitted {f:.3} µs per VMA (round trip, `_exit`), independent {rt:.3} µs per \
                 VMA: ratio {:.2}",
                f / rt
            ),
        }),
        _ => s.checks.push(Check {
            claim: "the fitted per-VMA cost is within a factor of two of the independent one"
                .into(),
            holds: false,
            detail: "not available: the model or the independent loop could not be computed".into(),
        }),
    }
}
