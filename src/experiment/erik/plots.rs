//! erik's three plots: fork cost vs VMAs (series A and B), vs library count at constant
//! footprint (series A), vs footprint at 10 libraries (series B).
//!
//! In: the measured points and the verdict's conclusion sentence. Out: SVG plots (through
//! [`crate::experiment::plot`]) added to the section, or a note naming a plot that could not be
//! drawn. Titles say only what is drawn against what; each caption says what the lines do, from
//! their end points, and the library plot's caption carries the conclusion the fitted
//! intervals chose.

use super::driver::Exit;
use super::report::{med, Measure};
use super::{Measured, SeriesId};
use crate::experiment::plot::{line_chart, Series, XScale};
use crate::experiment::section::{Plot, Section};

/// Draws the plots into `s`.
pub(super) fn plots(s: &mut Section, points: &[Measured], conclusion: Option<&str>) {
    let line = |series: SeriesId, x: &dyn Fn(&Measured) -> f64, e: usize, what: Measure| {
        let mut pts: Vec<(f64, f64)> = points
            .iter()
            .filter(|m| m.point.series == series)
            .map(|m| (x(m), med(m, e, what)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        Series {
            label: format!(
                "series {}: {}, {}",
                series.name(),
                what.label(),
                Exit::ALL[e].label()
            ),
            points: pts,
        }
    };
    let vmas = |m: &Measured| m.footprint.vmas.total as f64;
    let libs = |m: &Measured| f64::from(m.point.libs);
    let specs: Vec<(&str, &str, &str, Vec<Series>)> = vec![
        (
            "erik-vmas.svg",
            "Fork round trip vs VMAs (A: constant footprint, B: 10 libraries)",
            "VMAs in the parent",
            vec![
                line(SeriesId::A, &vmas, 0, Measure::RoundTrip),
                line(SeriesId::A, &vmas, 1, Measure::RoundTrip),
                line(SeriesId::B, &vmas, 0, Measure::RoundTrip),
                line(SeriesId::B, &vmas, 1, Measure::RoundTrip),
            ],
        ),
        (
            "erik-libraries.svg",
            "Fork cost vs library count at constant footprint (series A)",
            "libraries linked (footprint of 100 at every point)",
            vec![
                line(SeriesId::A, &libs, 0, Measure::RoundTrip),
                line(SeriesId::A, &libs, 1, Measure::RoundTrip),
                line(SeriesId::A, &libs, 0, Measure::Parent),
                line(SeriesId::A, &libs, 1, Measure::Child),
                line(SeriesId::A, &libs, 2, Measure::Child),
            ],
        ),
        (
            "erik-footprint.svg",
            "Fork cost vs footprint at 10 libraries (series B)",
            "VMAs in the parent",
            vec![
                line(SeriesId::B, &vmas, 0, Measure::RoundTrip),
                line(SeriesId::B, &vmas, 1, Measure::RoundTrip),
                line(SeriesId::B, &vmas, 0, Measure::Parent),
                line(SeriesId::B, &vmas, 1, Measure::Child),
            ],
        ),
    ];
    for (file, title, x_label, series) in specs {
        let mut caption = ends(&series, x_label);
        if file == "erik-libraries.svg" {
            if let Some(c) = conclusion {
                caption.push(' ');
                caption.push_str(c);
            }
        }
        match line_chart(
            title,
            x_label,
            "µs per fork (median)",
            &series,
            XScale::Linear,
        ) {
            Ok(svg) => s.plots.push(Plot {
                file_name: file.into(),
                title: title.into(),
                caption: Some(caption),
                svg,
            }),
            Err(e) => s.notes.push(format!("plot {file} not drawn: {e}")),
        }
    }
}

/// What each line does between its first and last point: `label: a µs at x0, b µs at x1
/// (×r)`, one clause per line.
pub(super) fn ends(series: &[Series], x_label: &str) -> String {
    let clauses: Vec<String> = series
        .iter()
        .filter_map(|l| {
            let (a, b) = (l.points.first()?, l.points.last()?);
            if a.0 == b.0 {
                // Every point at one x (series A's VMAs): the spread, not a direction.
                let ys = l.points.iter().map(|p| p.1);
                let lo = ys.clone().fold(f64::INFINITY, f64::min);
                let hi = ys.fold(f64::NEG_INFINITY, f64::max);
                return Some(format!(
                    "{}: every point at {}, {lo:.1} to {hi:.1} µs",
                    l.label, a.0
                ));
            }
            let ratio = if a.1 > 0.0 {
                format!("×{:.2}", b.1 / a.1)
            } else {
                "ratio not available".into()
            };
            Some(format!(
                "{}: {:.1} µs at {} to {:.1} µs at {} ({ratio})",
                l.label, a.1, a.0, b.1, b.0
            ))
        })
        .collect();
    format!("Medians per fork, x = {x_label}. {}.", clauses.join("; "))
}
