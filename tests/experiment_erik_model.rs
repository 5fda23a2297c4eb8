//! erik's per-kind model (`ldcost::experiment::erik::kinds`) on synthetic points with known
//! costs: no machine, no timing.
//!
//! Oracle: the costs the test put in. The points are the full and quick plans'
//! (`erik::plan`), each given the footprint its padding would have (every pad and library adds
//! one VMA of each library kind, two read-only ones, page-table and resident pages; series C's
//! padding adds only its kind), and samples spread around the cost the known per-term prices
//! give. The fitted model must recover every price within a tolerance far below the gaps
//! between them, so fitting a column to the wrong figure (two columns swapped) or dropping a
//! term fails; with series A and B alone, where every kind grows with the one padding
//! variable, no kind may get a number.

use ldcost::experiment::erik::driver::{Padding, Sample, SelfReport};
use ldcost::experiment::erik::kinds::{kind_model, KindModel, State};
use ldcost::experiment::erik::{plan, Measure, Measured, Point, SeriesId};
use ldcost::experiment::section::Section;
use ldcost::trace::footprint::{Figure, Footprint, VmaCounts};

/// Known prices, µs per unit of each term (anon_pages per page).
const PRICES: [(&str, f64); 9] = [
    ("intercept", 40.0),
    ("libraries", 0.7),
    ("vmas.file_text", 0.1),
    ("vmas.file_readonly", 0.2),
    ("vmas.relro", 0.9),
    ("vmas.file_writable", 0.6),
    ("vmas.anon", 0.45),
    ("page_table_pages", 1.5),
    ("anon_pages", 0.03),
];

fn price(key: &str) -> f64 {
    PRICES.iter().find(|(k, _)| *k == key).unwrap().1
}

/// The footprint `p` would have: 10 libraries' worth unpadded, as the quick run measured it.
fn footprint(p: &Point) -> Footprint {
    let Padding {
        pads,
        extra_vmas,
        extra_pages,
        text_vmas,
        ro_vmas,
        relro_pairs,
        data_vmas,
        sparse_pages,
    } = p.pad;
    let objects = u64::from(p.libs + pads) + 3;
    let sparse = u64::from(sparse_pages > 0);
    let vmas = VmaCounts {
        file_text: objects + u64::from(text_vmas),
        file_readonly: 2 * objects + u64::from(ro_vmas),
        relro: objects + u64::from(relro_pairs),
        file_writable: objects + u64::from(relro_pairs + data_vmas),
        anon: objects + u64::from(extra_vmas) + sparse,
        heap: 1,
        stack: 1,
        special: 4,
        other: 1,
        ..VmaCounts::default()
    };
    let total = vmas.file_text
        + vmas.file_readonly
        + vmas.relro
        + vmas.file_writable
        + vmas.anon
        + vmas.heap
        + vmas.stack
        + vmas.special
        + vmas.other;
    // Page tables: 8 pages, one more per object, one per sparse page (linear in the padding,
    // as a padding variable's columns are when nothing else moves them).
    let pte = 8 + objects + u64::from(sparse_pages);
    let anon =
        50 + 12 * objects + u64::from(extra_pages + 2 * relro_pairs + data_vmas + sparse_pages);
    Footprint {
        pid: 1,
        vmas: VmaCounts { total, ..vmas },
        elf_objects: objects,
        object_paths: Vec::new(),
        page_table_bytes: Figure::Measured(pte * 4096),
        rss_bytes: Figure::Measured((anon + 500) * 4096),
        rss_anon_bytes: Figure::Measured(anon * 4096),
        rss_file_bytes: Figure::Measured(500 * 4096),
        rss_shmem_bytes: Figure::Measured(0),
        private_dirty_bytes: Figure::Measured(anon * 4096),
    }
}

/// The cost the prices give for `m`'s footprint (×`f`: the parent's share), with 41 samples
/// spread ±2 µs around it.
fn measured(points: &[Point]) -> Vec<Measured> {
    points
        .iter()
        .map(|p| {
            let f = footprint(p);
            let v = &f.vmas;
            let pages = |x: &Figure| x.value().unwrap() as f64 / 4096.0;
            let cost = price("intercept")
                + price("libraries") * f64::from(p.libs)
                + price("vmas.file_text") * v.file_text as f64
                + price("vmas.file_readonly") * v.file_readonly as f64
                + price("vmas.relro") * v.relro as f64
                + price("vmas.file_writable") * v.file_writable as f64
                + price("vmas.anon") * v.anon as f64
                + price("page_table_pages") * pages(&f.page_table_bytes)
                + price("anon_pages") * pages(&f.rss_anon_bytes);
            let samples: Vec<Sample> = (0..41)
                .map(|j| {
                    let noise = 2.0 * ((j * 17 % 41) as f64 / 20.0 - 1.0);
                    Sample {
                        round_trip: cost + noise,
                        parent: 0.5 * cost + noise,
                        child: 0.25 * cost + noise,
                    }
                })
                .collect();
            Measured {
                point: *p,
                footprint: f,
                own: SelfReport {
                    vmas: 0,
                    pte_kb: 0,
                    anon_kb: 0,
                    file_kb: 0,
                },
                argv: Vec::new(),
                samples: [samples.clone(), samples.clone(), samples],
            }
        })
        .collect()
}

fn state(m: &KindModel, key: &str) -> State {
    m.term(key)
        .unwrap_or_else(|| panic!("no term {key}"))
        .1
        .state
}

#[test]
fn the_plans_recover_known_per_kind_prices() {
    for quick in [true, false] {
        let m = kind_model(&measured(&plan(quick)));
        let d = m.design.as_ref().expect("a design");
        println!(
            "quick {quick}: rank {} condition {:.1}",
            d.rank, d.condition
        );
        for (e, _) in ldcost::experiment::erik::driver::Exit::ALL
            .iter()
            .enumerate()
        {
            for (what, share) in [
                (Measure::RoundTrip, 1.0),
                (Measure::Parent, 0.5),
                (Measure::Child, 0.25),
            ] {
                for (key, want) in PRICES {
                    assert_eq!(state(&m, key), State::Fitted, "quick {quick}: {key}");
                    let (got, [lo, hi]) = m.coef(key, e, what).expect(key);
                    let want = want * share;
                    // ±2 µs of noise on costs of hundreds: within 2% of the price + 0.002.
                    assert!(
                        (got - want).abs() <= 0.02 * want.abs() + 0.002 && lo <= got && got <= hi,
                        "quick {quick} {} {key}: {got} [{lo}, {hi}], put in {want}",
                        what.key()
                    );
                }
                let f = m.fit(e, what).unwrap();
                assert!(f.r2 > 0.999, "{}", f.r2);
            }
        }
        for key in [
            "vmas.heap",
            "vmas.stack",
            "vmas.special",
            "vmas.guard",
            "vmas.other",
        ] {
            assert_eq!(state(&m, key), State::Constant, "{key}");
            assert!(m.coef(key, 0, Measure::RoundTrip).is_none());
        }
    }
}

#[test]
fn series_a_and_b_alone_identify_no_kind() {
    let points: Vec<Point> = plan(false)
        .into_iter()
        .filter(|p| p.series != SeriesId::C)
        .collect();
    let m = kind_model(&measured(&points));
    // Every pad adds every kind in fixed proportion: none has independent variation.
    for key in [
        "vmas.file_text",
        "vmas.file_readonly",
        "vmas.relro",
        "vmas.file_writable",
        "vmas.anon",
        "page_table_pages",
        "anon_pages",
    ] {
        assert_ne!(state(&m, key), State::Fitted, "{key}");
        assert!(m.coef(key, 0, Measure::RoundTrip).is_none(), "{key}");
    }
    // The library count still is (series A holds the footprint while it moves).
    let (lib, _) = m.coef("libraries", 0, Measure::RoundTrip).unwrap();
    assert!((lib - price("libraries")).abs() < 0.02, "{lib}");
    // The report says so in words, with no number, and the check fails.
    let mut s = Section::default();
    ldcost::experiment::erik::kinds::add_to_section(&mut s, &m);
    let table = &s.tables[0];
    let row = table
        .rows
        .iter()
        .find(|r| r[0] == "vmas.relro")
        .expect("a relro row");
    assert!(
        row[2..].iter().all(|c| c.starts_with("not identifiable")),
        "{row:?}"
    );
    let check = s
        .checks
        .iter()
        .find(|c| c.claim.contains("identify"))
        .unwrap();
    assert!(!check.holds, "{}", check.detail);
    assert!(
        check.detail.contains("vmas.relro (collinear)"),
        "{}",
        check.detail
    );
    assert!(!s.findings.iter().any(|f| f.key.contains("vmas.relro")));
    let json = m.json();
    let relro = json["terms"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t["key"] == "vmas.relro")
        .unwrap();
    assert_eq!(json["terms"][relro]["state"], "collinear");
    assert!(json["fits"][0]["coef_us"][relro].is_null());
    assert!(json["fits"][0]["ci95_us"][relro].is_null());
}
