//! erik's three plots: fork cost vs VMAs (series A and B), vs library count at constant
//! footprint (series A: flat means erik is right), vs footprint at 10 libraries (series B).
//!
//! In: the measured points. Out: SVG plots (through [`crate::experiment::plot`]) added to the
//! section, or a note naming a plot that could not be drawn.

use super::driver::Exit;
use super::report::{med, Measure};
use super::{Measured, SeriesId};
use crate::experiment::plot::{line_chart, Series, XScale};
use crate::experiment::section::{Plot, Section};

/// Draws the plots into `s`.
pub(super) fn plots(s: &mut Section, points: &[Measured]) {
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
            "Fork cost vs library count at constant footprint (flat: erik is right)",
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
                svg,
            }),
            Err(e) => s.notes.push(format!("plot {file} not drawn: {e}")),
        }
    }
}
