//! erik's per-term model: fork cost on VMAs by kind, page-table pages, resident anonymous
//! pages and library count, over every point of every series.
//!
//! In: the measured points. Out: a [`KindModel`] (the terms, which of them the points
//! identify, and one fit per way of leaving × measure, [`super::terms`]), and its tables,
//! findings, check and `data.kind_model` in the section ([`add_to_section`]).
//!
//! The columns are read from each point's footprint as procfs gave it (VMA counts by kind,
//! VmPTE / 4096, RssAnon / 4096), never from the padding asked for. A kind whose count is the
//! same at every point is not in the design (the intercept holds it) and is reported as not
//! identifiable; so is a term that moves only together with others (in series A and B every
//! kind grows with the one padding variable; series C grows one at a time).

use serde_json::Value;

use super::driver::Exit;
use super::report::{values, Measure};
use super::terms::{design, fit_terms, Design, TermFit, NULL_RATIO};
use super::Measured;
use crate::experiment::section::{Check, Finding, Section, Table};
use crate::report::schema::experiment as doc;
use crate::trace::footprint::VmaKind;

/// Bootstrap rounds of every fit.
const ROUNDS: usize = 400;

/// Why a term has no coefficient, or that it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Fitted,
    /// The same at every point: it is in the intercept.
    Constant,
    /// Moves only with other terms over these points.
    Collinear,
    /// procfs gave no figure at some point.
    NotAvailable,
}

impl State {
    pub fn key(self) -> &'static str {
        match self {
            State::Fitted => "identifiable",
            State::Constant => "constant",
            State::Collinear => "collinear",
            State::NotAvailable => "not_available",
        }
    }
    fn text(self) -> &'static str {
        match self {
            State::Fitted => "identifiable",
            State::Constant => "not identifiable (the same at every point)",
            State::Collinear => "not identifiable (no independent variation over these points)",
            State::NotAvailable => "not available (procfs gave no figure at some point)",
        }
    }
}

/// One term of the model.
#[derive(Debug, Clone)]
pub struct Term {
    /// `intercept`, `libraries`, `vmas.KIND`, `page_table_pages`, `anon_pages`.
    pub key: String,
    /// Per what, for the report: "µs per file_text VMA".
    pub unit: String,
    /// Multiplier from µs per unit to the unit shown (1000 for ns per page).
    pub shown: f64,
    pub state: State,
}

/// The fitted per-term model.
#[derive(Debug, Clone)]
pub struct KindModel {
    pub terms: Vec<Term>,
    /// The design of the terms in it (state not Constant or NotAvailable), in `terms` order.
    pub design: Option<Design>,
    /// (way of leaving, measure, fit: one coefficient per term of `terms`).
    pub fits: Vec<(usize, Measure, Option<TermFit>)>,
    pub points: usize,
}

fn columns(m: &Measured) -> Vec<f64> {
    let f = &m.footprint;
    let mut v = vec![1.0, f64::from(m.point.libs)];
    v.extend(VmaKind::ALL.iter().map(|&k| f.vmas.get(k) as f64));
    let pages = |b: Option<u64>| b.map_or(f64::NAN, |b| b as f64 / 4096.0);
    v.push(pages(f.page_table_bytes.value()));
    v.push(pages(f.rss_anon_bytes.value()));
    v
}

fn terms() -> Vec<Term> {
    let t = |key: String, unit: String, shown: f64| Term {
        key,
        unit,
        shown,
        state: State::Fitted,
    };
    let mut v = vec![
        t("intercept".into(), "µs".into(), 1.0),
        t("libraries".into(), "µs per library".into(), 1.0),
    ];
    for k in VmaKind::ALL {
        v.push(t(
            format!("vmas.{}", k.name()),
            format!("µs per {} VMA", k.name()),
            1.0,
        ));
    }
    v.push(t(
        "page_table_pages".into(),
        "µs per page-table page (4 kB of VmPTE)".into(),
        1.0,
    ));
    v.push(t(
        "anon_pages".into(),
        "ns per resident anonymous page".into(),
        1000.0,
    ));
    v
}

/// Fits the model to `points` (all of them).
pub fn kind_model(points: &[Measured]) -> KindModel {
    let rows: Vec<Vec<f64>> = points.iter().map(columns).collect();
    let mut terms = terms();
    for (j, t) in terms.iter_mut().enumerate().skip(1) {
        let col: Vec<f64> = rows.iter().map(|r| r[j]).collect();
        if col.iter().any(|v| !v.is_finite()) {
            t.state = State::NotAvailable;
        } else if col.iter().all(|&v| v == col[0]) {
            t.state = State::Constant;
        }
    }
    let used: Vec<usize> = (0..terms.len())
        .filter(|&j| terms[j].state == State::Fitted)
        .collect();
    let x: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| used.iter().map(|&j| r[j]).collect())
        .collect();
    let d = design(&x);
    if let Some(d) = &d {
        for (i, &j) in used.iter().enumerate() {
            if !d.identifiable[i] {
                terms[j].state = State::Collinear;
            }
        }
    }
    let mut fits = Vec::new();
    for e in 0..Exit::ALL.len() {
        for what in Measure::ALL {
            let samples: Vec<Vec<f64>> = points.iter().map(|m| values(m, e, what)).collect();
            let f = d.as_ref().and_then(|d| fit_terms(&x, d, &samples, ROUNDS));
            // Spread back to one slot per term.
            let f = f.map(|f| {
                let mut coef = vec![None; terms.len()];
                let mut ci = vec![None; terms.len()];
                for (i, &j) in used.iter().enumerate() {
                    coef[j] = f.coef[i];
                    ci[j] = f.ci[i];
                }
                TermFit { coef, ci, r2: f.r2 }
            });
            fits.push((e, what, f));
        }
    }
    KindModel {
        terms,
        design: d,
        fits,
        points: points.len(),
    }
}

impl KindModel {
    /// The fit of `exit` (index into [`Exit::ALL`]) and `what`.
    pub fn fit(&self, exit: usize, what: Measure) -> Option<&TermFit> {
        self.fits
            .iter()
            .find(|(e, m, _)| *e == exit && m.key() == what.key())
            .and_then(|(_, _, f)| f.as_ref())
    }

    /// The term of `key`, with its index.
    pub fn term(&self, key: &str) -> Option<(usize, &Term)> {
        self.terms.iter().enumerate().find(|(_, t)| t.key == key)
    }

    /// The value and interval of `key` in the fit of (`exit`, `what`), µs per unit.
    pub fn coef(&self, key: &str, exit: usize, what: Measure) -> Option<(f64, [f64; 2])> {
        let (j, _) = self.term(key)?;
        let f = self.fit(exit, what)?;
        Some((f.coef[j]?, f.ci[j]?))
    }

    /// `data.kind_model` of results.json (documented in docs/experiment.md).
    pub fn doc(&self) -> doc::ErikKindModel {
        let used = self
            .terms
            .iter()
            .filter(|t| matches!(t.state, State::Fitted | State::Collinear))
            .count();
        doc::ErikKindModel {
            version: 1,
            points: self.points,
            terms: self
                .terms
                .iter()
                .map(|t| doc::ErikTerm {
                    key: t.key.clone(),
                    unit: t.unit.clone(),
                    state: t.state.key().into(),
                })
                .collect(),
            columns_in_design: used,
            rank: self.design.as_ref().map(|d| d.rank),
            condition_number: self
                .design
                .as_ref()
                .map(|d| d.condition)
                .filter(|c| c.is_finite()),
            null_ratio: NULL_RATIO,
            fits: self
                .fits
                .iter()
                .map(|(e, m, f)| doc::ErikTermFit {
                    exit: Exit::ALL[*e].key().into(),
                    measure: m.key().into(),
                    coef_us: f.as_ref().map(|f| f.coef.clone()),
                    ci95_us: f.as_ref().map(|f| f.ci.clone()),
                    r2: f.as_ref().map(|f| f.r2),
                })
                .collect(),
        }
    }

    /// [`KindModel::doc`] as JSON.
    pub fn json(&self) -> Value {
        serde_json::to_value(self.doc()).unwrap_or(Value::Null)
    }
}

fn cell(t: &Term, f: Option<&TermFit>, j: usize) -> String {
    let Some(f) = f else {
        return "not available (no fit)".into();
    };
    match (t.state, f.coef[j], f.ci[j]) {
        (State::Fitted, Some(c), Some([lo, hi])) => {
            let d = if t.shown > 1.0 || t.key == "intercept" {
                1
            } else {
                3
            };
            let s = t.shown;
            format!("{:.d$} [{:.d$}, {:.d$}]", c * s, lo * s, hi * s)
        }
        (st, _, _) => st.text().into(),
    }
}

/// Adds the tables, findings, check and data of `m` to `s`.
pub fn add_to_section(s: &mut Section, m: &KindModel) {
    let constant: Vec<&str> = m
        .terms
        .iter()
        .filter(|t| t.state == State::Constant)
        .map(|t| t.key.as_str())
        .collect();
    let shown: Vec<(usize, &Term)> = m
        .terms
        .iter()
        .enumerate()
        .filter(|(_, t)| t.state != State::Constant)
        .collect();
    let rank = m.design.as_ref().map_or_else(
        || "no design (no points or a figure not finite)".to_string(),
        |d| {
            format!(
                "rank {} of {} columns, condition number {:.0} (columns scaled to unit length; \
                 directions with a singular value below 1e-4 of the largest count as null)",
                d.rank,
                d.identifiable.len(),
                d.condition
            )
        },
    );
    for (e, exit) in Exit::ALL.iter().enumerate() {
        let mut rows: Vec<Vec<String>> = shown
            .iter()
            .map(|&(j, t)| {
                let mut r = vec![t.key.clone(), t.unit.clone()];
                r.extend(Measure::ALL.iter().map(|&w| cell(t, m.fit(e, w), j)));
                r
            })
            .collect();
        let mut r2 = vec!["R²".to_string(), String::new()];
        r2.extend(Measure::ALL.iter().map(|&w| {
            m.fit(e, w)
                .map_or("not available".into(), |f| format!("{:.3}", f.r2))
        }));
        rows.push(r2);
        if !constant.is_empty() {
            let mut r = vec![constant.join(", "), "µs for each VMA of these kinds".into()];
            r.extend(std::iter::repeat_n(State::Constant.text().to_string(), 3));
            rows.push(r);
        }
        s.tables.push(Table {
            title: format!(
                "erik: fork cost by VMA kind, page-table pages, resident anonymous pages and \
                 libraries, child leaving by `{}` (least squares over all {} points, \
                 bootstrap 95%)",
                exit.label(),
                m.points
            ),
            columns: [
                "term",
                "unit",
                "round trip",
                "parent's fork() call",
                "child's life",
            ]
            .map(String::from)
            .to_vec(),
            rows,
            caption: Some(format!(
                "Columns as procfs read them at each point: VMA counts by kind, VmPTE / 4 kB, \
                 RssAnon / 4 kB, and the library count. Fitted to the points' medians; \
                 intervals: {ROUNDS} bootstrap resamples of every point's forks. {rank}. A \
                 term that moves only with others is not identifiable and has no number."
            )),
        });
    }
    // Findings: each identifiable footprint term of the fork proper (`_exit`).
    for (_, t) in &shown {
        if t.key == "intercept" || t.key == "libraries" || t.state != State::Fitted {
            continue;
        }
        for what in Measure::ALL {
            let Some((c, ci)) = m.coef(&t.key, 0, what) else {
                continue;
            };
            let k = t.shown;
            s.findings.push(Finding {
                key: format!("erik.term.{}.{}._exit", t.key, what.key()),
                text: format!(
                    "{}: {:.3} {} [{:.3}, {:.3}] in the {} with `_exit` (per-term model)",
                    t.key,
                    c * k,
                    t.unit,
                    ci[0] * k,
                    ci[1] * k,
                    what.label()
                ),
                value: c * k,
                unit: t.unit.clone(),
                interval: Some([ci[0] * k, ci[1] * k]),
            });
        }
    }
    let kinds: Vec<&Term> = m
        .terms
        .iter()
        .filter(|t| t.key.starts_with("vmas.") && t.state != State::Constant)
        .collect();
    let missing: Vec<String> = m
        .terms
        .iter()
        .filter(|t| {
            (t.key.starts_with("vmas.") && t.state != State::Constant)
                || t.key == "page_table_pages"
                || t.key == "anon_pages"
        })
        .filter(|t| t.state != State::Fitted)
        .map(|t| format!("{} ({})", t.key, t.state.key()))
        .collect();
    s.checks.push(Check {
        claim: "the points identify one term per VMA kind that varies, page-table pages and \
                resident anonymous pages"
            .into(),
        holds: missing.is_empty() && !kinds.is_empty(),
        detail: if missing.is_empty() {
            format!(
                "{} kinds vary ({}); {rank}",
                kinds.len(),
                kinds
                    .iter()
                    .map(|t| t.key.trim_start_matches("vmas."))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            format!("not identified: {}; {rank}", missing.join(", "))
        },
    });
}
