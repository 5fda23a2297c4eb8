//! The attribution and the what-if predictions as lines of text, shared by the text and the
//! Markdown reports. In: an [`Attribution`]. Out: strings (plain; Markdown adds its markup).

use super::text::{num, signed};
use crate::report::schema::comparison::{Attribution, Item, Part};

/// A duration: "8.1 ns" under a µs, else "12.3 µs".
pub fn dur(ns: f64) -> String {
    if ns.abs() < 1000.0 {
        format!("{ns:.1} ns")
    } else {
        format!("{:.1} µs", ns / 1e3)
    }
}

/// A signed duration in µs: "+301.2 µs".
pub fn sus(ns: f64) -> String {
    let us = (ns / 1e3 * 10.0).round() / 10.0;
    if us == 0.0 {
        "0.0 µs".into()
    } else {
        format!("{us:+.1} µs")
    }
}

/// "libwidgets.so (added): +10,000 lookups × 10.0 ns, … = +290.0 µs (measured +261.7 µs)".
pub fn item(i: &Item) -> String {
    let terms: Vec<String> = i
        .terms
        .iter()
        .map(|t| format!("{} {} × {}", signed(t.delta), t.factor, dur(t.unit_ns)))
        .collect();
    let measured = i
        .measured_ns
        .map_or(String::new(), |m| format!(" (measured {})", sus(m)));
    let state = if i.change == "changed" {
        String::new()
    } else {
        format!(" ({})", i.change)
    };
    format!(
        "{}{state}: {} = {}{measured}",
        i.object,
        terms.join(", "),
        sus(i.ns)
    )
}

/// The head line of a part: "+300.2 µs of +375.4 µs is relocation (measured +310.5 µs)".
pub fn part_head(p: &Part, total: Option<f64>) -> String {
    let of = total.map_or(String::new(), |t| format!(" of {}", sus(t)));
    let what = if p.factor == "search & mapping" {
        match p.items.first().and_then(|i| i.terms.first()) {
            Some(t) => format!(
                "search & mapping of {} {} objects (≈ {} each)",
                num(t.delta.abs()),
                if t.delta > 0.0 { "more" } else { "fewer" },
                dur(t.unit_ns)
            ),
            None => p.factor.clone(),
        }
    } else {
        p.factor.clone()
    };
    let measured = p
        .measured_ns
        .map_or(String::new(), |m| format!(" (measured {})", sus(m)));
    format!("{}{of} is {what}{measured}", sus(p.ns))
}

/// The explained line: "explained +381.2 µs [95% +300.1, +420.3] of +375.4 µs in the same
/// runs (102% [95% 81%, 112%]); unexplained −5.8 µs (the verdict's runs: +360.2 µs)".
pub fn explained(a: &Attribution) -> String {
    let ci = a.explained_ci95_ns.map_or(String::new(), |(l, h)| {
        format!(" [95% {:+.1}, {:+.1}]", l / 1e3, h / 1e3)
    });
    let mut s = format!("explained {}{ci}", sus(a.explained_ns));
    match (a.instrumented_delta_ns, a.measured_delta_ns) {
        (Some(m), _) => s.push_str(&format!(" of {} in the same runs", sus(m))),
        (None, Some(m)) => s.push_str(&format!(" of {}", sus(m))),
        (None, None) => {}
    }
    if let Some(sh) = a.explained_share {
        let ci = a.explained_share_ci95.map_or(String::new(), |(l, h)| {
            format!(" [95% {:.0}%, {:.0}%]", l * 100.0, h * 100.0)
        });
        s.push_str(&format!(" ({:.0}%{ci})", sh * 100.0));
    }
    if let Some(u) = a.unexplained_ns {
        s.push_str(&format!("; unexplained {}", sus(u)));
    }
    if let (Some(_), Some(m)) = (a.instrumented_delta_ns, a.measured_delta_ns) {
        s.push_str(&format!(" (the verdict's runs: {})", sus(m)));
    }
    s
}

/// The change the parts are shares of: the per-object runs' (what the unit costs were fitted
/// on), else (older documents) the verdict's.
pub fn of(a: &Attribution) -> Option<f64> {
    a.instrumented_delta_ns.or(a.measured_delta_ns)
}

/// At most `n` items, then "… N more (+x µs)".
pub fn items(p: &Part, n: usize) -> Vec<String> {
    let mut v: Vec<String> = p.items.iter().take(n).map(item).collect();
    if p.items.len() > n {
        let rest: f64 = p.items[n..].iter().map(|i| i.ns).sum();
        v.push(format!(
            "… {} more objects, {}",
            p.items.len() - n,
            sus(rest)
        ));
    }
    v
}

/// The unit-cost lines: "relocation, per probe: 4.1 ns [3.2, 5.0]".
pub fn unit_costs(a: &Attribution) -> Vec<String> {
    a.unit_costs
        .iter()
        .map(|u| {
            let ci = u
                .ci95_ns
                .map_or(String::new(), |(l, h)| format!(" [{}, {}]", dur(l), dur(h)));
            format!("{}, {}: {}{ci}", u.fit, u.unit, dur(u.ns))
        })
        .collect()
}

/// One line per fit: "relocation: R² 0.98 over 16 points".
pub fn fits(a: &Attribution) -> Vec<String> {
    a.fits
        .iter()
        .map(|f| {
            format!(
                "{}: {}; R² {} over {} points",
                f.fit,
                f.model,
                f.r_squared
                    .map_or("not defined".to_string(), |r| format!("{r:.3}")),
                f.points
            )
        })
        .collect()
}

/// One line per prediction: "without libwidgets.so: −290.0 µs [95% −310.2, −265.0] (…)".
pub fn what_if(a: &Attribution) -> Vec<String> {
    a.what_if
        .iter()
        .map(|w| {
            let ci = w.ci95_ns.map_or(String::new(), |(l, h)| {
                format!(" [95% {:+.1}, {:+.1}]", l / 1e3, h / 1e3)
            });
            let p = match w.predicted_ns {
                Some(ns) if w.bound => format!("at most {}{ci}", sus(ns)),
                Some(ns) => format!("{}{ci}", sus(ns)),
                None => "not predicted".into(),
            };
            format!("{}: {p} ({})", w.change, w.basis)
        })
        .collect()
}

/// " + 17.5 µs" or " − 17.5 µs": a term of a sum, its sign as the operator.
fn term(ns: f64) -> String {
    let us = ns / 1e3;
    if us < 0.0 {
        format!(" − {:.1} µs", -us)
    } else {
        format!(" + {us:.1} µs")
    }
}

/// The reconciliation in one line, every number the JSON's: "verdict +33.1 µs
/// (boundaries-only runs) = +40.0 µs in the per-object phases as counted − 17.5 µs of the
/// stops' correction + 10.6 µs between the kinds of run; of the +22.5 µs per-object change,
/// explained +18.7 µs (relocation +17.4 µs, initializers +1.3 µs), unexplained +3.8 µs".
pub fn reconciliation(r: &crate::report::schema::comparison::Reconciliation) -> String {
    let by: Vec<String> = r
        .by_factor
        .iter()
        .map(|f| format!("{} {:+.1} µs", f.factor, f.ns / 1e3))
        .collect();
    format!(
        "verdict {:+.1} µs ({}) = {:+.1} µs in the per-object phases as counted{} of the stops' correction{} between the kinds of run; of the {:+.1} µs per-object change, explained {:+.1} µs{}, unexplained {:+.1} µs",
        r.verdict_ns / 1e3,
        r.verdict_source,
        r.counted_ns / 1e3,
        term(r.stops_correction_ns),
        term(r.between_runs_ns),
        r.per_object_ns / 1e3,
        r.explained_ns / 1e3,
        if by.is_empty() {
            String::new()
        } else {
            format!(" ({})", by.join(", "))
        },
        r.unexplained_ns / 1e3
    )
}
