//! Benchmark: how fast `categories::classify` sorts stacks into the cost taxonomy.
//!
//! Run with `cargo bench --bench classify_speed` (release profile). The goal (the module
//! documentation of src/attribute/categories/): a million stacks classified in under half a
//! second, so classification never matters beside symbolisation. The stacks are the unit
//! tests' fixtures (src/attribute/categories/fixtures.txt, realistic `perf script` stacks of 1
//! to 12 frames), borrowed ([`FrameRef`]) as `breakdown` passes them, cycled in file order.
//!
//! Rounds: 1 warm-up (builds the rules table) + `LDCOST_BENCH_ROUNDS` timed (default 5); the
//! best round is compared with the bound (the machine is shared, so the best is the least
//! disturbed), the median is printed beside it.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ldcost::attribute::categories::{classify, Category, Frame, FrameRef};

/// The fixtures and their parser, shared with the unit tests (it names `Category` and `Frame`
/// through `super::`, here this file's imports).
#[path = "../src/attribute/categories/fixtures.rs"]
mod fixtures;

const STACKS: usize = 1_000_000;
const BOUND: Duration = Duration::from_millis(500);
const DEFAULT_ROUNDS: usize = 5;

fn main() {
    let all = fixtures::fixtures();
    let borrowed: Vec<Vec<FrameRef>> = all
        .iter()
        .map(|f| f.2.iter().map(Frame::borrowed).collect())
        .collect();
    let frames: usize = borrowed.iter().map(Vec::len).sum::<usize>() * STACKS / borrowed.len();
    let rounds = std::env::var("LDCOST_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(DEFAULT_ROUNDS);

    // Correctness once, outside the timing: every fixture gets its documented category.
    let wrong = all.iter().filter(|f| classify(&f.2) != f.1).count();

    let mut times = Vec::with_capacity(rounds);
    for round in 0..=rounds {
        let start = Instant::now();
        let mut counts = [0u64; Category::ALL.len()];
        for i in 0..STACKS {
            counts[classify(black_box(&borrowed[i % borrowed.len()])) as usize] += 1;
        }
        let took = start.elapsed();
        black_box(counts);
        if round > 0 {
            times.push(took);
        }
    }
    times.sort();
    let best = times[0];
    let median = times[times.len() / 2];

    println!("classify_speed");
    println!(
        "stacks:   {STACKS} ({frames} frames), cycling {} fixtures; {rounds} timed rounds",
        borrowed.len()
    );
    println!("| round | time | ns/stack | ns/frame |");
    println!("|---|---:|---:|---:|");
    for (what, t) in [("best", best), ("median", median)] {
        println!(
            "| {what} | {:.1} ms | {:.0} | {:.1} |",
            t.as_secs_f64() * 1e3,
            t.as_nanos() as f64 / STACKS as f64,
            t.as_nanos() as f64 / frames as f64
        );
    }
    println!(
        "fixtures classified as documented: {}/{}: {}",
        all.len() - wrong,
        all.len(),
        if wrong == 0 { "PASS" } else { "FAIL" }
    );
    println!(
        "best of {rounds} = {:.1} ms for {STACKS} stacks (goal < {} ms): {}",
        best.as_secs_f64() * 1e3,
        BOUND.as_millis(),
        if best < BOUND { "PASS" } else { "FAIL" }
    );
}
