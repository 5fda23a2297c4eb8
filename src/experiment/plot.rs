//! The experiments' plots, as standalone SVG documents (plotters' SVG backend).
//!
//! In: series of (x, y) points or grouped bar values, with titles and axis labels that carry
//! their units. Out: SVG text, 800 px wide, with a legend. Every experiment draws through these
//! two functions so that all plots of a report look alike. plotters is used rather than hand-
//! written SVG: axes, tick placement, log scales and legends are its job, not ours.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width and height of every plot, in pixels.
pub const SIZE: (u32, u32) = (800, 500);

/// One line of a line chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// Which x axis a line chart uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XScale {
    Linear,
    /// Logarithmic (for counts spanning decades: 1 … 100000 functions). x must be > 0.
    Log,
}

/// A line chart with a marker at each point. y starts at 0 so that slopes read honestly.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    x_scale: XScale,
) -> Result<String, String> {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (x0, x1) = bounds(xs).ok_or("a plot needs at least one point")?;
    let (_, y1) = bounds(ys).ok_or("a plot needs at least one point")?;
    let y_range = 0.0..(y1.max(f64::MIN_POSITIVE) * 1.1);
    match x_scale {
        XScale::Linear => {
            let pad = ((x1 - x0) * 0.03).max(0.5);
            draw_lines(
                title,
                x_label,
                y_label,
                series,
                (x0 - pad)..(x1 + pad),
                y_range,
            )
        }
        XScale::Log => {
            if x0 <= 0.0 {
                return Err(format!("a log-scale x axis needs x > 0, got {x0}"));
            }
            draw_lines(
                title,
                x_label,
                y_label,
                series,
                (x0 / 1.5..x1 * 1.5).log_scale(),
                y_range,
            )
        }
    }
}

fn draw_lines<X>(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    x_range: X,
    y_range: std::ops::Range<f64>,
) -> Result<String, String>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let mut chart = chart_builder(&root, title)?
            .build_cartesian_2d(x_range, y_range)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, s) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?
                .label(s.label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|e| e.to_string())?;
        }
        legend(&mut chart)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// A grouped bar chart: one group of bars per category (x), one bar per group label, in
/// the order given; `values[c][g]` is category `c`'s bar for group `g` (None: not measured,
/// no bar drawn).
pub fn bar_chart(
    title: &str,
    y_label: &str,
    categories: &[String],
    groups: &[String],
    values: &[Vec<Option<f64>>],
) -> Result<String, String> {
    if categories.is_empty() || groups.is_empty() {
        return Err("a bar chart needs at least one category and one group".into());
    }
    let y1 = values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let n = categories.len();
    let width = 0.8 / groups.len() as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        let mut chart = chart_builder(&root, title)?
            // Headroom above the tallest bar for the legend (upper left), so it hides no bar.
            .build_cartesian_2d(0.0..n as f64, 0.0..y1 * 1.45)
            .map_err(|e| e.to_string())?;
        let label_of = |x: &f64| {
            let i = (x - 0.5).round();
            if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                categories[i as usize].clone()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(2 * n + 1)
            .x_label_formatter(&label_of)
            .y_desc(y_label)
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(|e| e.to_string())?;
        for (g, name) in groups.iter().enumerate() {
            let color = Palette99::pick(g).to_rgba();
            let bars = values.iter().enumerate().filter_map(|(c, row)| {
                let v = row.get(g).copied().flatten()?;
                let x0 = c as f64 + 0.1 + g as f64 * width;
                Some(Rectangle::new(
                    [(x0, 0.0), (x0 + width * 0.9, v)],
                    color.filled(),
                ))
            });
            chart
                .draw_series(bars)
                .map_err(|e| e.to_string())?
                .label(name.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
        }
        legend(&mut chart)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// The chart of one SVG: a white background, the title, and room for the axes' labels.
fn chart_builder<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
) -> Result<ChartBuilder<'a, 'b, SVGBackend<'b>>, String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70);
    Ok(builder)
}

/// The legend every plot has: upper left, on a nearly opaque white box with a border.
fn legend<'a, DB, CT>(chart: &mut ChartContext<'a, DB, CT>) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())
}

fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether one of the SVG's `<text>` elements reads exactly `t`.
    fn has_text(svg: &str, t: &str) -> bool {
        svg.split("<text").skip(1).any(|e| {
            e.split_once('>')
                .and_then(|(_, rest)| rest.split_once("</text>"))
                .is_some_and(|(inner, _)| inner.trim() == t)
        })
    }

    #[test]
    fn a_line_chart_carries_its_labels_and_one_path_per_series() {
        let s = vec![
            Series {
                label: "static".into(),
                points: vec![(1.0, 2.0), (10.0, 3.0), (100.0, 9.0)],
            },
            Series {
                label: "dynamic".into(),
                points: vec![(1.0, 4.0), (10.0, 5.0), (100.0, 12.0)],
            },
        ];
        for scale in [XScale::Linear, XScale::Log] {
            let svg = line_chart("fork", "functions", "µs per fork", &s, scale).unwrap();
            assert!(svg.starts_with("<svg"), "{}", &svg[..60]);
            for text in ["fork", "functions", "µs per fork", "static", "dynamic"] {
                assert!(has_text(&svg, text), "no label {text}");
            }
            let lines = svg
                .split("<polyline")
                .skip(1)
                .filter(|e| {
                    e.split_once('>')
                        .is_some_and(|(a, _)| a.contains("stroke-width=\"2\""))
                })
                .count();
            assert_eq!(lines, 2, "one 2-px line per series");
        }
        assert!(line_chart("x", "x", "y", &s, XScale::Log).is_ok());
        let zero = vec![Series {
            label: "z".into(),
            points: vec![(0.0, 1.0)],
        }];
        assert!(line_chart("x", "x", "y", &zero, XScale::Log).is_err());
        assert!(line_chart("x", "x", "y", &[], XScale::Linear).is_err());
    }

    #[test]
    fn a_bar_chart_draws_a_bar_per_measured_value() {
        let cats = vec!["static parent".to_string(), "dynamic parent".to_string()];
        let groups = vec!["fork".to_string(), "vfork".to_string()];
        let values = vec![vec![Some(1.0), Some(0.5)], vec![Some(2.0), None]];
        let svg = bar_chart("fork+execl", "ms per spawn", &cats, &groups, &values).unwrap();
        for text in [
            "static parent",
            "dynamic parent",
            "fork",
            "vfork",
            "ms per spawn",
        ] {
            assert!(has_text(&svg, text), "no label {text}");
        }
        // Three bars and two legend swatches, plus the background rectangles.
        let with = svg.matches("<rect").count();
        let values = vec![vec![Some(1.0), Some(0.5)], vec![Some(2.0), Some(1.0)]];
        let svg4 = bar_chart("fork+execl", "ms per spawn", &cats, &groups, &values).unwrap();
        assert_eq!(
            svg4.matches("<rect").count(),
            with + 1,
            "a None draws no bar"
        );
    }
}
