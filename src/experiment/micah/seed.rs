//! Micah Stetson's table (seed 004, 9fans, February 2009), copied from the seed as he posted it.
//!
//! In: nothing. Out: his rows, for the report to print beside ours. His machine: "my laptop",
//! Linux on x86 (model not given), gcc of early 2009 (no PIE), programs started 1000 times by
//! an `rc` loop under `time`, so each figure is seconds per 1000 runs and includes rc's own
//! fork+exec of each program; a single run of the whole table.

/// The seed file.
pub const SEED_FILE: &str = "004_60f4a88c970056ff.txt";

/// One row of his table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeedRow {
    pub dynamic: bool,
    pub functions: u32,
    pub libraries: u32,
    pub binary_size: u64,
    /// Seconds for 1000 runs.
    pub user: f64,
    pub system: f64,
    pub elapsed: f64,
}

/// His table, verbatim from the seed (the unit test checks it against the seed file).
pub const TABLE: &str = r"Static (functions libraries binary-size user system elapsed)
     1  1  556898 0.24 0.50 0.78
    10  1  557324 0.28 0.44 0.82
    10 10  557913 0.32 0.42 0.81
   100  1  561737 0.24 0.50 0.84
   100 10  562196 0.28 0.46 0.79
  1000  1  609496 0.29 0.47 0.83
  1000 10  606381 0.26 0.48 0.84
 10000  1 1105475 0.30 0.44 0.87
 10000 10 1083834 0.28 0.47 0.82
100000  1 6245494 0.27 0.48 0.88
100000 10 6043871 0.28 0.48 0.81

Dynamic (functions libraries binary-size user system elapsed)
     1  1     6489 0.49 0.86 1.39
    10  1     7322 0.52 0.86 1.45
    10 10     7464 0.83 1.14 2.03
   100  1    16366 0.59 0.78 1.42
   100 10    16177 1.14 1.11 2.35
  1000  1   108268 0.55 0.87 1.47
  1000 10   104496 0.88 1.12 2.07
 10000  1  1077758 0.81 0.98 1.89
 10000 10  1037387 1.12 1.36 2.63
100000  1 10915272 2.79 2.50 6.31
100000 10 10517862 3.13 3.68 7.13
";

/// His rows, parsed from [`TABLE`]: the "Static" block, then the "Dynamic" block.
pub fn rows() -> Vec<SeedRow> {
    let mut dynamic = false;
    let mut out = Vec::new();
    for line in TABLE.lines() {
        if line.starts_with("Static") {
            dynamic = false;
        } else if line.starts_with("Dynamic") {
            dynamic = true;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 6 {
            continue;
        }
        let (Ok(functions), Ok(libraries), Ok(binary_size)) =
            (f[0].parse(), f[1].parse(), f[2].parse())
        else {
            continue;
        };
        let t = |i: usize| f[i].parse::<f64>().ok();
        if let (Some(user), Some(system), Some(elapsed)) = (t(3), t(4), t(5)) {
            out.push(SeedRow {
                dynamic,
                functions,
                libraries,
                binary_size,
                user,
                system,
                elapsed,
            });
        }
    }
    out
}

/// His row for this build, if he had one.
pub fn find(dynamic: bool, functions: u32, libraries: u32) -> Option<SeedRow> {
    rows()
        .into_iter()
        .find(|r| r.dynamic == dynamic && r.functions == functions && r.libraries == libraries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn his_table_parses_into_22_rows() {
        let r = rows();
        assert_eq!(r.len(), 22);
        assert_eq!(r.iter().filter(|r| r.dynamic).count(), 11);
        let last = find(true, 100000, 10).unwrap();
        assert_eq!(
            (last.binary_size, last.user, last.system, last.elapsed),
            (10517862, 3.13, 3.68, 7.13)
        );
        assert_eq!(find(false, 1, 1).unwrap().binary_size, 556898);
        assert!(find(false, 1, 10).is_none());
    }

    /// The table is the seed's text (where the seeds are beside the repository).
    #[test]
    fn table_is_the_seeds_text() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let found = root
            .ancestors()
            .map(|d| d.join("shared/seeds").join(SEED_FILE))
            .find(|p| p.exists());
        let Some(path) = found else {
            return crate::test_skip::skip(
                "table_is_the_seeds_text",
                "the seed file is not beside the repository (../shared/seeds)",
            );
        };
        let seed = std::fs::read_to_string(path).unwrap();
        assert!(seed.contains(TABLE), "TABLE differs from the seed");
    }
}
