//! erik's series (seed 004): does a library cost fork() anything once its footprint is paid?
//!
//! In: [`Settings`] (a work directory, `--quick`, `--runs`). Out: a [`Section`] with every
//! point's measured footprint, its fork costs with the child leaving by `_exit` and by `exit()`,
//! a least-squares model of fork cost on footprint and library count with bootstrap intervals,
//! an independent per-VMA measurement to check the model against, three plots, and the
//! differential flame graphs of k = 100 against k = 0 at equal footprint ([`diff`]).
//!
//! erik's hypothesis: "you may be measuring the performance of memory management more than the
//! performance of dynamic linking … the hard bit would be keeping the memory footprint the same
//! while increasing the number of shared libraries". So:
//!
//! - **Series A** links k = 0 … 100 tiny libraries and pads every point up to the footprint of
//!   k = 100: one library-shaped padding file per missing library, mapped as ld.so maps an
//!   object (r--, r-x, r--, RELRO written then protected, rw- written, anonymous bss), plus the
//!   anonymous mappings and pages ld.so allocates per library, calibrated against the k = 100
//!   point's measured footprint (see [`driver`] and probes/erik/driver.c). Every point's
//!   footprint is then read through procfs while the driver waits, and any figure more than 2%
//!   from the k = 100 point is named.
//! - **Series B** keeps k = 10 and grows the padding, every kind of VMA in a library's
//!   proportions. **Series C** keeps k = 10 and no padding and grows one thing at a time
//!   ([`Vary`]: written anonymous pages, anonymous VMAs, file text, read-only file, RELRO, file
//!   data VMAs, page-table pages), so that what moves together in A and B can be told apart:
//!   fork copies page-table entries only for VMAs with an anon_vma, so the kinds differ. The
//!   per-term model ([`kinds`]) fits one term per kind that varies, and says which terms the
//!   points cannot identify.
//!
//! All drivers run at once, paused, and are forked in turn in small blocks, so that the load of
//! a shared machine falls on every point alike rather than on whichever ran last.

mod build;
pub mod diff;
pub mod driver;
pub mod fit;
mod independent;
pub mod kinds;
mod plots;
mod report;
pub mod terms;
pub mod verdict;

pub use report::Measure;

use super::section::{ExperimentError, Progress, Section, Settings};
use crate::report::schema::experiment as doc;
use crate::trace::footprint::Footprint;
use driver::{Driver, Exit, Padding, Sample, SelfReport, VmaLoop};

/// The library count every point of series A is padded up to.
pub const MAX_LIBS: u32 = 100;
/// The library count of series B and C.
pub const B_LIBS: u32 = 10;
/// VMAs of the independent per-VMA loop.
pub const LOOP_VMAS: u32 = 1000;

/// Which series a point belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesId {
    /// Library count grows, footprint held at k = 100's.
    A,
    /// Library count 10, padding grows.
    B,
    /// Library count 10, only written anonymous pages grow.
    C,
}

impl SeriesId {
    pub fn name(self) -> &'static str {
        match self {
            SeriesId::A => "A",
            SeriesId::B => "B",
            SeriesId::C => "C",
        }
    }
}

/// What a series-C point grows, alone (its padding, [`Vary::pad`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vary {
    /// Written anonymous pages in the program's bss (one VMA).
    AnonPages,
    /// Anonymous VMAs of one written page each.
    AnonVmas,
    /// One-page r-x file VMAs, read.
    FileText,
    /// One-page r--p file VMAs, read.
    FileReadonly,
    /// RELRO pairs (a RELRO VMA and a file-data VMA, both written).
    Relro,
    /// One-page rw-p file VMAs, written.
    FileData,
    /// Written anonymous pages 2 MiB apart: page-table pages.
    PageTables,
}

impl Vary {
    /// How results.json names it.
    pub fn key(self) -> &'static str {
        match self {
            Vary::AnonPages => "anon_pages",
            Vary::AnonVmas => "anon_vmas",
            Vary::FileText => "file_text",
            Vary::FileReadonly => "file_readonly",
            Vary::Relro => "relro",
            Vary::FileData => "file_data",
            Vary::PageTables => "page_tables",
        }
    }

    pub const ALL: [Vary; 7] = [
        Vary::AnonPages,
        Vary::AnonVmas,
        Vary::FileText,
        Vary::FileReadonly,
        Vary::Relro,
        Vary::FileData,
        Vary::PageTables,
    ];

    /// The padding that adds `n` of it.
    pub fn pad(self, n: u32) -> Padding {
        let mut p = Padding::default();
        match self {
            Vary::AnonPages => p.extra_pages = n,
            Vary::AnonVmas => (p.extra_vmas, p.extra_pages) = (n, n),
            Vary::FileText => p.text_vmas = n,
            Vary::FileReadonly => p.ro_vmas = n,
            Vary::Relro => p.relro_pairs = n,
            Vary::FileData => p.data_vmas = n,
            Vary::PageTables => p.sparse_pages = n,
        }
        p
    }

    /// The sizes of the plan (`--quick`: one).
    fn sizes(self, quick: bool) -> &'static [u32] {
        match (self, quick) {
            (Vary::AnonPages, true) => &[2048],
            (Vary::AnonPages, false) => &[1024, 4096],
            (Vary::Relro | Vary::PageTables, true) => &[128],
            (_, true) => &[256],
            (Vary::FileText | Vary::FileReadonly, false) => &[256, 1024],
            (_, false) => &[128, 512],
        }
    }
}

/// One planned point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub series: SeriesId,
    pub libs: u32,
    pub pad: Padding,
    /// Series C: what grows.
    pub vary: Option<Vary>,
}

/// One measured point.
#[derive(Debug, Clone)]
pub struct Measured {
    pub point: Point,
    /// Read through procfs from outside while the driver waited on its stdin.
    pub footprint: Footprint,
    /// What the driver read from /proc/self just before.
    pub own: SelfReport,
    /// The driver's command line (run it to see the same footprint: ASLR is off in it).
    pub argv: Vec<String>,
    /// Samples with `_exit`, `exit()` and pre-bound `exit()`, in [`Exit::ALL`] order.
    pub samples: [Vec<Sample>; 3],
}

/// results.json's form of a point: the schema's types, field for field.
impl From<&Measured> for doc::ErikPoint {
    fn from(m: &Measured) -> Self {
        let p = &m.point.pad;
        let sample = |s: &Sample| doc::ErikSample {
            round_trip: s.round_trip,
            parent: s.parent,
            child: s.child,
        };
        doc::ErikPoint {
            point: doc::ErikPlan {
                series: m.point.series.name().into(),
                libs: m.point.libs,
                pad: doc::ErikPadding {
                    pads: p.pads,
                    extra_vmas: p.extra_vmas,
                    extra_pages: p.extra_pages,
                    text_vmas: p.text_vmas,
                    ro_vmas: p.ro_vmas,
                    relro_pairs: p.relro_pairs,
                    data_vmas: p.data_vmas,
                    sparse_pages: p.sparse_pages,
                },
                vary: m.point.vary.map(|v| v.key().into()),
            },
            footprint: m.footprint.clone(),
            own: doc::ErikSelfReport {
                vmas: m.own.vmas,
                pte_kb: m.own.pte_kb,
                anon_kb: m.own.anon_kb,
                file_kb: m.own.file_kb,
            },
            argv: m.argv.clone(),
            samples: m.samples.each_ref().map(|v| v.iter().map(sample).collect()),
        }
    }
}

impl From<&VmaLoop> for doc::ErikVmaLoop {
    fn from(v: &VmaLoop) -> Self {
        doc::ErikVmaLoop {
            regions: v.regions,
            merged_vmas: v.merged_vmas,
            split_vmas: v.split_vmas,
            merged: v.merged.clone(),
            split: v.split.clone(),
            command: v.command.clone(),
        }
    }
}

/// The points of a run: series A's library counts, series B's pads, series C's kinds.
pub fn plan(quick: bool) -> Vec<Point> {
    let (a, b): (&[u32], &[u32]) = if quick {
        (&[0, 10, 100], &[0, 40])
    } else {
        (&[0, 1, 2, 5, 10, 20, 50, 100], &[0, 10, 20, 40, 70, 90])
    };
    let mut v: Vec<Point> = a
        .iter()
        .map(|&k| Point {
            series: SeriesId::A,
            libs: k,
            pad: Padding {
                pads: MAX_LIBS - k,
                ..Padding::default()
            },
            vary: None,
        })
        .collect();
    v.extend(b.iter().map(|&p| Point {
        series: SeriesId::B,
        libs: B_LIBS,
        pad: Padding {
            pads: p,
            ..Padding::default()
        },
        vary: None,
    }));
    for kind in Vary::ALL {
        v.extend(kind.sizes(quick).iter().map(|&n| Point {
            series: SeriesId::C,
            libs: B_LIBS,
            pad: kind.pad(n),
            vary: Some(kind),
        }));
    }
    v
}

/// Runs erik's series (see the module docs).
pub fn run(settings: &Settings, progress: &dyn Progress) -> Result<Section, ExperimentError> {
    let points = plan(settings.quick);
    let n = settings.runs_or(100, 600);
    let block = if settings.quick { 50 } else { 100 }.min(n);
    progress.step("erik: building the libraries and drivers");
    let mut counts: Vec<u32> = points.iter().map(|p| p.libs).collect();
    counts.sort_unstable();
    counts.dedup();
    let max_pads = points.iter().map(|p| p.pad.pads).max().unwrap_or(0);
    let dir = settings.work_dir.join("erik");
    let programs = build::build(&dir, &counts, MAX_LIBS, max_pads)?;
    let exe = |k: u32| {
        programs
            .drivers
            .get(&k)
            .cloned()
            .ok_or(ExperimentError::Run {
                what: "erik".into(),
                detail: format!("no driver was built for {k} libraries"),
            })
    };

    // The k = 100 point defines series A's footprint: launch it first.
    progress.step("erik: setting up and calibrating the padding");
    let mut drivers: Vec<(Point, Driver, Footprint)> = Vec::new();
    let top = Point {
        series: SeriesId::A,
        libs: MAX_LIBS,
        pad: Padding::default(),
        vary: None,
    };
    let d = Driver::launch(&exe(MAX_LIBS)?, &dir, top.pad, block)?;
    let target = d.footprint()?;
    let mut top_driver = Some((top, d, target.clone()));
    for p in points {
        if p == top {
            if let Some(t) = top_driver.take() {
                drivers.push(t);
            }
            continue;
        }
        let (point, d, f) = if p.series == SeriesId::A {
            calibrate(p, &exe(p.libs)?, &dir, block, &target)?
        } else {
            let d = Driver::launch(&exe(p.libs)?, &dir, p.pad, block)?;
            let f = d.footprint()?;
            (p, d, f)
        };
        drivers.push((point, d, f));
    }
    if let Some(t) = top_driver.take() {
        drivers.push(t);
    }

    let rounds = n.div_ceil(block);
    let mut samples: Vec<[Vec<Sample>; 3]> = vec![Default::default(); drivers.len()];
    for r in 0..rounds {
        progress.step(&format!("erik: forking, round {} of {rounds}", r + 1));
        let len = drivers.len();
        for i in 0..len {
            // Rotate the order of points and of the exits from round to round.
            let j = (i + r as usize) % len;
            for e in 0..Exit::ALL.len() {
                let e = (e + r as usize) % Exit::ALL.len();
                let got = drivers[j].1.run(Exit::ALL[e], block)?;
                samples[j][e].extend(got);
            }
        }
    }
    // The differential flame graphs: k = 100 against k = 0 of series A, sampled after the
    // measured rounds (sampling costs the forks CPU; these loops' timings are not used).
    let mut graphs = Vec::new();
    let find = |libs: u32| {
        drivers
            .iter()
            .position(|(p, _, _)| p.series == SeriesId::A && p.libs == libs)
    };
    if let (Some(b), Some(h)) = (find(0), find(MAX_LIBS)) {
        let blocks = if settings.quick { 6 } else { 10 };
        let cfg = diff::sampler_config();
        let mut symbolizer =
            crate::perf::sampler::Symbolizer::new(&[std::path::PathBuf::from("/usr/lib/debug")]);
        for exit in [Exit::Libc, Exit::Underscore] {
            progress.step(&format!(
                "erik: sampling k = 0 and k = {MAX_LIBS} with {} for the differential flame graph",
                exit.label()
            ));
            let mut side = |i: usize| {
                let libs = drivers[i].0.libs;
                diff::sample_side(
                    &mut drivers[i].1,
                    libs,
                    exit,
                    blocks,
                    block,
                    &cfg,
                    &mut symbolizer,
                )
            };
            let g = side(b)
                .and_then(|base| side(h).map(|head| (base, head)))
                .and_then(|(base, head)| diff::graph(exit, cfg.frequency_hz, base, head));
            graphs.push((exit, g));
        }
    }
    let mut measured = Vec::new();
    for ((point, d, footprint), samples) in drivers.into_iter().zip(samples) {
        let (own, argv) = (d.own, d.argv.clone());
        d.quit()?;
        measured.push(Measured {
            point,
            footprint,
            own,
            argv,
            samples,
        });
    }

    progress.step("erik: the independent per-VMA loop");
    let (forks, blocks) = if settings.quick { (40, 2) } else { (100, 6) };
    let vmaloop: VmaLoop = driver::vma_loop(&programs.vmaloop, LOOP_VMAS, forks, blocks)?;
    progress.step("erik: fitting");
    let mut s = report::section(settings, &measured, &vmaloop, &programs.commands);
    let rounds = |libs: u32, exit: Exit| {
        let e = Exit::ALL.iter().position(|x| *x == exit)?;
        measured
            .iter()
            .find(|m| m.point.series == SeriesId::A && m.point.libs == libs)
            .map(|m| report::med(m, e, Measure::RoundTrip))
    };
    diff::add_to_section(&mut s, &graphs, &rounds);
    s.notes.push(ANCHOR.into());
    Ok(s)
}

/// A published figure to hold the per-VMA cost against, from the series that last changed how
/// fork() copies VMAs. Derived from its table of fork()s per 10 s (BYTE spawn, CPU-bound, 21
/// and 821 VMAs): 10 s / 20195 − 10 s / 112100 over 800 VMAs before, 28751 and 114558 after.
pub const ANCHOR: &str = "For scale: Peng Zhang's maple-tree `__mt_dup()` series for fork() \
     (linux-mm, October 2023, v5 cover letter) counted BYTE spawn's forks with 21 and 821 VMAs; \
     from its table, 0.51 µs per VMA per fork round trip before the series and 0.33 after, on \
     a machine it does not name.";

/// Launches a series-A point with its pads, then adds the anonymous mappings and pages ld.so
/// allocates for the libraries it lacks, measured against `target` (the k = 100 point), and
/// corrects once more by what is still missing.
fn calibrate(
    p: Point,
    exe: &std::path::Path,
    dir: &std::path::Path,
    block: u32,
    target: &Footprint,
) -> Result<(Point, Driver, Footprint), ExperimentError> {
    let anon_pages = |f: &Footprint| f.rss_anon_bytes.value().map(|b| (b / 4096) as i64);
    let mut pad = p.pad;
    let mut d = Driver::launch(exe, dir, pad, block)?;
    let mut f = d.footprint()?;
    for _ in 0..2 {
        let dv = target.vmas.anon as i64 - f.vmas.anon as i64;
        let dp = match (anon_pages(target), anon_pages(&f)) {
            (Some(t), Some(g)) => t - g,
            _ => 0,
        };
        if dv == 0 && dp == 0 {
            break;
        }
        let vmas = (i64::from(pad.extra_vmas) + dv).max(0);
        let pages = (i64::from(pad.extra_pages) + dp).max(vmas);
        let next = Padding {
            extra_vmas: vmas as u32,
            extra_pages: pages as u32,
            ..pad
        };
        if next == pad {
            break;
        }
        pad = next;
        drop(d);
        d = Driver::launch(exe, dir, pad, block)?;
        f = d.footprint()?;
    }
    Ok((Point { pad, ..p }, d, f))
}
