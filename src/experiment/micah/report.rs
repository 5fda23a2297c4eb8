//! Micah's matrix as a report section: his table's shape with his figures beside ours, the size
//! explanation, ldcost's attribution, the plots and the seed's direction checked.
//!
//! In: the measured [`Data`]. Out: a [`Section`] whose every sentence is derived from the
//! numbers in it (the size crossover from a least-squares fit of the built files' sizes, the
//! direction from the medians of the runs).

use super::measure::Runs;
use super::sizes::GROUPS;
use super::{seed, Build, Data};
use crate::experiment::plot::{self, Series, XScale};
use crate::experiment::section::{Check, ExperimentError, Finding, Plot, Section, Table};
use crate::report::schema::experiment as doc;
use crate::stats::{mean, median};

/// Seconds per 1000 runs (= milliseconds per run) from microseconds per run.
fn per_1000(us: Option<f64>) -> String {
    us.map_or("n/a".into(), |v| format!("{:.2}", v / 1000.0))
}

fn group_label(g: &str) -> &'static str {
    match g {
        "code" => ".text",
        "unwind" => ".eh_frame(+hdr)",
        "symtab" => ".symtab+.strtab",
        "plt_got_reloc" => "PLT/GOT/relocations",
        "dynamic_symbols" => "dynamic symbols",
        _ => "other",
    }
}

/// Builds the section from the measurements.
pub fn section(data: Data) -> Result<Section, ExperimentError> {
    let mut s = Section {
        name: "micah".into(),
        title: "Micah's matrix (seed 004, 2009)".into(),
        seed: Some(seed::SEED_FILE.into()),
        ..Section::default()
    };
    let fs: Vec<u32> = {
        let mut v: Vec<u32> = data.builds.iter().map(|b| b.functions).collect();
        v.dedup();
        v
    };
    s.intro.push(format!(
        "His generator rewritten: F functions `int aF_k(int i) {{ return i+k; }}` in L libraries \
         (F/L each), and a main that would call them all but returns at once when run without \
         arguments, built with `cc` (gcc -O0, the default) static against archives and dynamic \
         against shared libraries (`ld -shared`, found through RPATH $ORIGIN). F = {}; each \
         of the {} programs run {} times, interleaved, each run reaped by wait4 with its own \
         rusage. Building took {:.0} s.{}",
        fs.iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        data.builds.len(),
        data.rounds,
        data.build_seconds,
        if data.quick {
            " --quick: three function counts and 50 runs, not his six and 1000."
        } else {
            ""
        }
    ));
    for dynamic in [false, true] {
        s.tables.push(matrix_table(&data, dynamic));
    }
    s.tables.push(size_table(&data));
    let (model_table, findings, sentence) = size_model(&data);
    s.tables.push(model_table);
    s.findings.extend(findings);
    if let Some(t) = sentence {
        s.notes.push(t);
    }
    s.tables.push(attribution_table(&data));
    s.checks.extend(checks(&data));
    s.plots.extend(plots(&data)?);
    s.notes.extend([
        "User and system times are the kernel's split of each child's run time, made by timer \
         ticks: a run shorter than a tick that no tick lands in is counted entirely as user \
         time, so the split is coarse; their sum is exact. His figures come from `time` over \
         an rc loop and include rc's own fork and exec of each program."
            .to_string(),
        "Today's gcc builds position-independent executables by default (his of 2009 did not) \
         and static glibc is larger; his dynamic programs found their libraries through \
         LD_LIBRARY_PATH, ours through RPATH $ORIGIN (the same search cost: one directory)."
            .to_string(),
        "Phase timing of the start-up itself (ld.so mapping, relocation, lookups) is \
         `ldcost profile`'s job; run it on a kept build (`ldcost experiment micah --keep`) as \
         root. Here the attribution is ldcost's static model and glibc's own count."
            .to_string(),
    ]);
    s.data =
        serde_json::to_value(doc::MicahData::from(data)).map_err(|e| ExperimentError::Run {
            what: "micah".into(),
            detail: format!("cannot serialise the results: {e}"),
        })?;
    Ok(s)
}

fn matrix_table(data: &Data, dynamic: bool) -> Table {
    let mut columns: Vec<String> = ["functions", "libraries", "binary size"]
        .map(String::from)
        .to_vec();
    if dynamic {
        columns.push("libraries' size".into());
    }
    columns.extend(
        [
            "user",
            "system",
            "elapsed",
            "elapsed (median)",
            "minor faults/run",
            "his binary size",
            "his user",
            "his system",
            "his elapsed",
        ]
        .map(String::from),
    );
    let mut rows = Vec::new();
    for b in data.builds.iter().filter(|b| b.dynamic == dynamic) {
        let mut r = vec![
            b.functions.to_string(),
            b.libraries.to_string(),
            b.executable.size.to_string(),
        ];
        if dynamic {
            let libs: u64 = b.shared_libraries.iter().map(|l| l.size).sum();
            r.push(libs.to_string());
        }
        r.push(per_1000(mean(&b.runs.user_us)));
        r.push(per_1000(mean(&b.runs.sys_us)));
        r.push(per_1000(mean(&b.runs.elapsed_us)));
        r.push(per_1000(median(&b.runs.elapsed_us)));
        r.push(
            b.runs
                .mean_faults()
                .map_or("n/a".into(), |f| format!("{f:.0}")),
        );
        match seed::find(dynamic, b.functions, b.libraries) {
            Some(h) => r.extend([
                h.binary_size.to_string(),
                format!("{:.2}", h.user),
                format!("{:.2}", h.system),
                format!("{:.2}", h.elapsed),
            ]),
            None => r.extend(["-"; 4].map(String::from)),
        }
        rows.push(r);
    }
    let kind = if dynamic { "Dynamic" } else { "Static" };
    Table {
        title: format!(
            "Micah's matrix: {kind} (functions libraries binary-size user system elapsed)"
        ),
        columns,
        rows,
        caption: Some(format!(
            "Times in seconds per 1000 runs (= ms per run; mean of {} runs here, and the median \
             elapsed, which a loaded machine's stalls move less). Sizes in bytes. \
             His: a laptop running Linux (x86, model not given), February 2009, one run of 1000 \
             under rc and `time`.",
            data.rounds
        )),
    }
}

fn size_table(data: &Data) -> Table {
    let mut columns: Vec<String> = ["functions", "libraries", "linkage", "file size"]
        .map(String::from)
        .to_vec();
    columns.extend(GROUPS.iter().map(|g| group_label(g).to_string()));
    let rows = data
        .builds
        .iter()
        .map(|b| {
            let mut r = vec![
                b.functions.to_string(),
                b.libraries.to_string(),
                b.linkage().to_string(),
                b.executable.size.to_string(),
            ];
            r.extend(GROUPS.iter().map(|g| {
                b.executable
                    .groups
                    .get(*g)
                    .copied()
                    .unwrap_or(0)
                    .to_string()
            }));
            r
        })
        .collect();
    Table {
        title: "Micah's matrix: what is in the executables (bytes by section group)".into(),
        columns,
        rows,
        caption: Some(
            "Section sizes read from the built files (goblin); `other` is the file size less the \
             named groups (headers, data, padding, libc's other sections)."
                .into(),
        ),
    }
}

/// Bytes per function and the intercept, for one linkage, over the one-library builds.
fn fit_of(data: &Data, dynamic: bool, value: impl Fn(&Build) -> u64) -> Option<(f64, f64)> {
    let pts: Vec<(f64, f64)> = data
        .builds
        .iter()
        .filter(|b| b.dynamic == dynamic && b.libraries == 1)
        .map(|b| (b.functions as f64, value(b) as f64))
        .collect();
    crate::stats::line(&pts)
}

fn size_model(data: &Data) -> (Table, Vec<Finding>, Option<String>) {
    let mut columns: Vec<String> = ["linkage", "bytes at F=0", "bytes per function"]
        .map(String::from)
        .to_vec();
    columns.extend(
        GROUPS
            .iter()
            .map(|g| format!("{} per function", group_label(g))),
    );
    let mut rows = Vec::new();
    let mut fits = Vec::new();
    for dynamic in [false, true] {
        let total = fit_of(data, dynamic, |b| b.executable.size);
        let mut r = vec![if dynamic { "dynamic" } else { "static" }.to_string()];
        match total {
            Some((a, b)) => r.extend([format!("{a:.0}"), format!("{b:.1}")]),
            None => r.extend(["n/a".to_string(), "n/a".to_string()]),
        }
        for g in GROUPS {
            let f = fit_of(data, dynamic, |b| {
                b.executable.groups.get(g).copied().unwrap_or(0)
            });
            r.push(f.map_or("n/a".into(), |(_, slope)| format!("{slope:.1}")));
        }
        rows.push(r);
        fits.push(total);
    }
    let table = Table {
        title: "Micah's matrix: executable size model (least squares over the 1-library builds)"
            .into(),
        columns,
        rows,
        caption: Some(
            "size = bytes at F=0 + bytes per function × F, fitted to the built files.".into(),
        ),
    };
    let mut findings = Vec::new();
    let mut sentence = None;
    if let (Some((a_s, b_s)), Some((a_d, b_d))) = (fits[0], fits[1]) {
        findings.push(Finding {
            key: "micah.bytes_per_function.static".into(),
            text: format!("the static executable grows by {b_s:.1} bytes per function"),
            value: b_s,
            unit: "bytes per function".into(),
            interval: None,
        });
        findings.push(Finding {
            key: "micah.bytes_per_function.dynamic".into(),
            text: format!("the dynamic executable grows by {b_d:.1} bytes per function"),
            value: b_d,
            unit: "bytes per function".into(),
            interval: None,
        });
        let slope = |g: &str| {
            fit_of(data, true, |b| {
                b.executable.groups.get(g).copied().unwrap_or(0)
            })
            .map_or(0.0, |f| f.1)
        };
        let (plt, dsym) = (slope("plt_got_reloc"), slope("dynamic_symbols"));
        if b_d > b_s {
            let cross = (a_s - a_d) / (b_d - b_s);
            findings.push(Finding {
                key: "micah.size_crossover_functions".into(),
                text: format!(
                    "the dynamic executable is larger than the static one above about {cross:.0} functions"
                ),
                value: cross,
                unit: "functions".into(),
                interval: None,
            });
            sentence = Some(format!(
                "Why his dynamic binaries are bigger above 10000 functions: each function the \
                 program calls through the PLT costs the dynamic executable {b_d:.1} bytes \
                 ({plt:.1} in PLT/GOT slots and JUMP_SLOT relocations, {dsym:.1} in dynamic \
                 symbols, names, hash and version entries), more than the {b_s:.1} bytes the \
                 function's own code, unwind entry and symbol cost the static one; the static \
                 one starts {:.0} bytes larger (its share of libc), so the lines cross at about \
                 {cross:.0} functions (his: between 10000 and 100000).",
                a_s - a_d
            ));
        } else {
            sentence = Some(format!(
                "Here the dynamic executable grows by {b_d:.1} bytes per function and the static \
                 one by {b_s:.1}: the dynamic one does not overtake the static one."
            ));
        }
    }
    (table, findings, sentence)
}

fn attribution_table(data: &Data) -> Table {
    let columns = [
        "functions",
        "libraries",
        "objects",
        "relative",
        "symbolic",
        "PLT (lazy)",
        "lookups at start-up",
        "glibc: relocations",
        "glibc: relative",
        "minor faults/run dynamic",
        "minor faults/run static",
    ]
    .map(String::from)
    .to_vec();
    let faults = |dynamic: bool, f: u32, l: u32| {
        data.builds
            .iter()
            .find(|b| b.dynamic == dynamic && b.functions == f && b.libraries == l)
            .and_then(|b| b.runs.mean_faults())
            .map_or("n/a".into(), |v| format!("{v:.0}"))
    };
    let opt = |v: Option<u64>| v.map_or("not available".into(), |v| v.to_string());
    let rows = data
        .attribution
        .iter()
        .map(|a| {
            vec![
                a.functions.to_string(),
                a.libraries.to_string(),
                a.objects.to_string(),
                a.relative.to_string(),
                a.symbolic.to_string(),
                a.plt.to_string(),
                a.startup_lookups.to_string(),
                opt(a.glibc_relocations),
                opt(a.glibc_relative),
                faults(true, a.functions, a.libraries),
                faults(false, a.functions, a.libraries),
            ]
        })
        .collect();
    Table {
        title: "Micah's matrix: what ldcost attributes to the largest dynamic builds".into(),
        columns,
        rows,
        caption: Some(
            "Relocations by class and start-up lookups: ldcost's model of the whole closure \
             (`ldcost deps`); glibc's own count from one run with LD_DEBUG=statistics; faults \
             from wait4's rusage. glibc's \"relative\" leaves out the relative relocations packed in \
             DT_RELR (libc's, on Debian 12); ldcost's includes them. With lazy binding each JUMP_SLOT costs a store at start-up, \
             not a lookup; the lookups wait for a call that never comes."
                .into(),
        ),
    }
}

fn checks(data: &Data) -> Vec<Check> {
    let mut out = Vec::new();
    let max_f = data.builds.iter().map(|b| b.functions).max().unwrap_or(0);
    for l in [1, 10] {
        let runs = |dynamic: bool, pick: fn(&Runs) -> Vec<f64>| {
            data.builds
                .iter()
                .find(|b| b.dynamic == dynamic && b.functions == max_f && b.libraries == l)
                .map(|b| pick(&b.runs))
        };
        let cpu = |d| runs(d, |r| r.cpu_us());
        let wall = |d| runs(d, |r| r.elapsed_us.clone());
        if let (Some(sc), Some(dc), Some(sw), Some(dw)) =
            (cpu(false), cpu(true), wall(false), wall(true))
        {
            let claim =
                format!("dynamic {max_f}-function programs ({l} lib) slower to start than static");
            out.push(Check::decided_by(
                claim.clone(),
                Check::ranked(
                    claim.clone(),
                    ("CPU (user+sys) static", &sc),
                    ("dynamic", &dc),
                    "µs",
                    "run",
                ),
                Check::ranked(
                    claim,
                    ("elapsed static", &sw),
                    ("dynamic", &dw),
                    "µs",
                    "run",
                ),
            ));
        }
    }
    let sizes = |f: u32| {
        let s = data
            .builds
            .iter()
            .find(|b| !b.dynamic && b.functions == f && b.libraries == 1)?;
        let d = data
            .builds
            .iter()
            .find(|b| b.dynamic && b.functions == f && b.libraries == 1)?;
        Some((s.executable.size, d.executable.size))
    };
    let small: Vec<(u32, u64, u64)> = data
        .builds
        .iter()
        .filter(|b| !b.dynamic && b.libraries == 1 && b.functions <= 10000)
        .filter_map(|b| sizes(b.functions).map(|(s, d)| (b.functions, s, d)))
        .collect();
    let detail = |v: &[(u32, u64, u64)]| {
        v.iter()
            .map(|(f, s, d)| format!("F={f}: static {s}, dynamic {d}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    out.push(Check {
        claim: "dynamic executables smaller than static up to 10000 functions".into(),
        holds: !small.is_empty() && small.iter().all(|(_, s, d)| d < s),
        detail: detail(&small),
    });
    if let Some((s, d)) = sizes(100000) {
        out.push(Check {
            claim: "dynamic executables bigger than static at 100000 functions".into(),
            holds: d > s,
            detail: detail(&[(100000, s, d)]),
        });
    }
    out
}

/// Which of a program's runs' figures a plot shows.
type Pick = fn(&Runs) -> &Vec<f64>;

fn plots(data: &Data) -> Result<Vec<Plot>, ExperimentError> {
    let mut out = Vec::new();
    let which: [(&str, &str, Pick); 2] = [
        ("user", "micah-user.svg", |r| &r.user_us),
        ("system", "micah-sys.svg", |r| &r.sys_us),
    ];
    for (name, file, pick) in which {
        let mut series = Vec::new();
        for dynamic in [false, true] {
            for l in [1, 10] {
                let points: Vec<(f64, f64)> = data
                    .builds
                    .iter()
                    .filter(|b| b.dynamic == dynamic && b.libraries == l)
                    .filter_map(|b| Some((b.functions as f64, mean(pick(&b.runs))? / 1000.0)))
                    .collect();
                if !points.is_empty() {
                    series.push(Series {
                        label: format!("{} {l} lib", if dynamic { "dynamic" } else { "static" }),
                        points,
                    });
                }
            }
        }
        let title = format!("Micah's matrix: {name} time per run");
        let svg = plot::line_chart(
            &title,
            "functions (log scale)",
            &format!("{name} ms per run (= s per 1000 runs)"),
            &series,
            XScale::Log,
        )
        .map_err(|e| ExperimentError::Run {
            what: "micah".into(),
            detail: format!("plot {file}: {e}"),
        })?;
        out.push(Plot {
            file_name: file.into(),
            title,
            caption: None,
            svg,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(dynamic: bool, libraries: u32, cpu: &[f64], elapsed: &[f64]) -> Build {
        Build {
            functions: 1000,
            libraries,
            dynamic,
            runs: Runs {
                elapsed_us: elapsed.to_vec(),
                user_us: cpu.iter().map(|c| c / 2.0).collect(),
                sys_us: cpu.iter().map(|c| c / 2.0).collect(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn start_checks(builds: Vec<Build>) -> Vec<Check> {
        let data = Data {
            quick: false,
            rounds: 3,
            build_seconds: 0.0,
            build_commands: Vec::new(),
            builds,
            attribution: Vec::new(),
        };
        checks(&data)
            .into_iter()
            .filter(|c| c.claim.contains("slower to start"))
            .collect()
    }

    #[test]
    fn slower_to_start_is_decided_by_cpu_and_contradicted_by_elapsed() {
        let c = start_checks(vec![
            // 1 library: both apart, dynamic slower.
            build(false, 1, &[100.0, 110.0], &[200.0, 210.0]),
            build(true, 1, &[300.0, 310.0], &[400.0, 420.0]),
            // 10 libraries: CPU apart, elapsed overlapping (a busy machine's waits).
            build(false, 10, &[100.0, 110.0], &[200.0, 500.0]),
            build(true, 10, &[300.0, 310.0], &[400.0, 420.0]),
        ]);
        assert_eq!(c.len(), 2, "{c:?}");
        assert!(c[0].holds && c[0].decided(), "{c:?}");
        assert!(
            c[0].detail
                .starts_with("CPU (user+sys) static 105.0 µs (range 100.0–110.0 over 2 runs)"),
            "{c:?}"
        );
        assert!(c[1].holds && c[1].decided(), "{c:?}");
        assert!(c[1].detail.contains("noisy, the ranges overlap"), "{c:?}");
        // CPU overlapping: open, whatever the elapsed time says.
        let c = start_checks(vec![
            build(false, 1, &[100.0, 350.0], &[200.0, 210.0]),
            build(true, 1, &[300.0, 310.0], &[400.0, 420.0]),
        ]);
        assert!(!c[0].holds && !c[0].decided(), "{c:?}");
        // Static slower, apart: NO.
        let c = start_checks(vec![
            build(false, 1, &[500.0, 510.0], &[600.0, 610.0]),
            build(true, 1, &[300.0, 310.0], &[400.0, 420.0]),
        ]);
        assert!(!c[0].holds && c[0].decided(), "{c:?}");
        // CPU apart but elapsed apart the other way: NO.
        let c = start_checks(vec![
            build(false, 1, &[100.0, 110.0], &[600.0, 610.0]),
            build(true, 1, &[300.0, 310.0], &[400.0, 420.0]),
        ]);
        assert!(!c[0].holds && c[0].decided(), "{c:?}");
    }
}
