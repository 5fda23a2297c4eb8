//! Address -> symbol: a table of address ranges sorted by start, searched by binary search.
//!
//! Ranges may nest (an assembler label inside a sized function, two aliases of different
//! sizes at one address) and zero-size symbols (hand-written assembly such as ld.so's
//! `_dl_start_user`) have no end of their own. The rules, the same as `perf`'s
//! (`symbols__fixup_end`, `choose_best_symbol` in tools/perf/util/symbol.c):
//!
//! - a sized symbol covers `[value, value + size)`;
//! - a zero-size symbol covers up to the next symbol's start, never past the end of its
//!   section;
//! - an address belongs to the *innermost* range that contains it (the one starting last);
//!   among ranges with the same start, to the best-ranked one that contains it.
//!
//! A lookup is one binary search plus a short walk back over ranges that might still contain
//! the address, cut off by a running maximum of the ends (`max_end`), so it stays O(log n)
//! unless ranges nest deeply.

/// One symbol offered to the index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate<R> {
    pub start: u64,
    /// 0: no size of its own (covers up to the next symbol, see the module docs).
    pub size: u64,
    /// The end of the symbol's section, which a zero-size symbol never extends past.
    pub limit: Option<u64>,
    /// What the caller wants back (an index into its own symbol list).
    pub id: u32,
    /// Preference among symbols at the same start: lower is better.
    pub rank: R,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    start: u64,
    end: u64,
    id: u32,
}

/// The sorted ranges and the running maximum of their ends.
#[derive(Debug, Clone, Default)]
pub(crate) struct AddrIndex {
    ranges: Vec<Range>,
    /// `max_end[i]` = the largest `end` among `ranges[..=i]`.
    max_end: Vec<u64>,
}

impl AddrIndex {
    pub fn build<R: Ord + Copy>(mut candidates: Vec<Candidate<R>>) -> AddrIndex {
        // Sorted by start; at one start the best candidate comes *last*, because lookups walk
        // backwards from the last range starting at or below the address.
        candidates.sort_unstable_by(|a, b| {
            a.start
                .cmp(&b.start)
                .then(b.rank.cmp(&a.rank))
                .then(b.id.cmp(&a.id))
        });
        let mut ranges = Vec::with_capacity(candidates.len());
        // The next start strictly above each candidate's start, found walking backwards.
        let mut next_start: Option<u64> = None;
        let mut ends = vec![0u64; candidates.len()];
        let mut i = candidates.len();
        while i > 0 {
            // One group of equal starts at a time.
            let start = candidates[i - 1].start;
            let mut j = i;
            while j > 0 && candidates[j - 1].start == start {
                j -= 1;
            }
            for k in j..i {
                let c = &candidates[k];
                ends[k] = if c.size > 0 {
                    c.start.saturating_add(c.size)
                } else {
                    let end = match (next_start, c.limit) {
                        (Some(n), Some(l)) => n.min(l),
                        (Some(n), None) => n,
                        (None, Some(l)) => l,
                        (None, None) => c.start.saturating_add(1),
                    };
                    end.max(c.start)
                };
            }
            next_start = Some(start);
            i = j;
        }
        let mut max_end = Vec::with_capacity(candidates.len());
        let mut running = 0u64;
        for (c, end) in candidates.iter().zip(ends) {
            running = running.max(end);
            max_end.push(running);
            ranges.push(Range {
                start: c.start,
                end,
                id: c.id,
            });
        }
        AddrIndex { ranges, max_end }
    }

    /// The id of the range containing `addr` and the offset of `addr` into it.
    pub fn lookup(&self, addr: u64) -> Option<(u32, u64)> {
        let mut i = self.ranges.partition_point(|r| r.start <= addr);
        while i > 0 {
            i -= 1;
            if self.max_end[i] <= addr {
                return None;
            }
            let r = &self.ranges[i];
            if addr < r.end {
                return Some((r.id, addr - r.start));
            }
        }
        None
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }
}

/// A small deterministic generator for tests (no `rand` dependency).
#[cfg(test)]
pub(crate) struct XorShift(pub u64);

#[cfg(test)]
impl XorShift {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(start: u64, size: u64, id: u32, rank: u8) -> Candidate<u8> {
        Candidate {
            start,
            size,
            limit: None,
            id,
            rank,
        }
    }

    #[test]
    fn sized_unsized_and_nested() {
        let idx = AddrIndex::build(vec![
            c(0x100, 0x100, 0, 0), // f: [0x100, 0x200)
            c(0x180, 0, 1, 0),     // label inside f: up to the next start (0x300)
            c(0x300, 0x10, 2, 0),  // g
            c(0x300, 0x40, 3, 1),  // g's longer alias, ranked worse
        ]);
        assert_eq!(idx.lookup(0xff), None);
        assert_eq!(idx.lookup(0x100), Some((0, 0)));
        assert_eq!(idx.lookup(0x17f), Some((0, 0x7f)));
        assert_eq!(idx.lookup(0x180), Some((1, 0)));
        assert_eq!(idx.lookup(0x2ff), Some((1, 0x17f)));
        assert_eq!(idx.lookup(0x305), Some((2, 5)));
        // Outside the better alias but inside the worse one.
        assert_eq!(idx.lookup(0x320), Some((3, 0x20)));
        assert_eq!(idx.lookup(0x340), None);
    }

    #[test]
    fn zero_size_stops_at_section_end_and_gaps_are_misses() {
        let mut last = c(0x500, 0, 0, 0);
        last.limit = Some(0x520);
        let idx = AddrIndex::build(vec![c(0x400, 0x10, 1, 0), last, c(0x1000, 8, 2, 0)]);
        assert_eq!(idx.lookup(0x410), None);
        assert_eq!(idx.lookup(0x51f), Some((0, 0x1f)));
        assert_eq!(idx.lookup(0x520), None);
        assert_eq!(idx.lookup(0x1007), Some((2, 7)));
        assert_eq!(idx.lookup(0x1008), None);
        assert_eq!(idx.lookup(u64::MAX), None);
        assert_eq!(AddrIndex::build::<u8>(Vec::new()).lookup(5), None);
    }

    #[test]
    fn outer_function_found_past_a_nested_sized_symbol() {
        let idx = AddrIndex::build(vec![c(0x100, 0x100, 0, 0), c(0x120, 0x10, 1, 0)]);
        assert_eq!(idx.lookup(0x125), Some((1, 5)));
        assert_eq!(idx.lookup(0x150), Some((0, 0x50)));
    }

    /// The index against a brute-force scan of every candidate, on a million lookups over a
    /// random symbol table with aliases, nesting, gaps and zero-size labels. This checks
    /// correctness only; the speed figure is in `ObjectSymbols::symbolize`'s docs.
    #[test]
    fn million_lookups_match_a_linear_scan() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut cands = Vec::new();
        let mut at = 0x1000u64;
        for id in 0..2000u32 {
            at += rng.below(64);
            let size = match rng.below(10) {
                0 => 0,
                1 => 4 + rng.below(400), // may overlap what follows
                _ => 1 + rng.below(48),
            };
            cands.push(Candidate {
                start: at,
                size,
                limit: Some(0x1000 + 64 * 2000 + 100),
                id,
                rank: (rng.below(3) as u8, id),
            });
        }
        let idx = AddrIndex::build(cands.clone());
        // The oracle: each candidate's range computed independently, then the containing
        // range with the largest start and, among those, the smallest rank.
        let range_of = |c: &Candidate<(u8, u32)>| -> (u64, u64) {
            if c.size > 0 {
                return (c.start, c.start + c.size);
            }
            let next = cands
                .iter()
                .map(|o| o.start)
                .filter(|&s| s > c.start)
                .min()
                .unwrap_or(u64::MAX);
            (c.start, next.min(c.limit.unwrap()))
        };
        let ranges: Vec<(u64, u64, (u8, u32), u32)> = cands
            .iter()
            .map(|c| {
                let (s, e) = range_of(c);
                (s, e, c.rank, c.id)
            })
            .collect();
        let max_addr = at + 500;
        let queries: Vec<u64> = (0..1_000_000).map(|_| rng.below(max_addr)).collect();
        // Brute force on a sample; the index on all of them (every answer must be a range
        // that contains the address).
        for (n, &q) in queries.iter().enumerate() {
            let got = idx.lookup(q);
            if let Some((id, off)) = got {
                let r = ranges[id as usize];
                assert!(r.0 <= q && q < r.1, "{q:#x} -> {id} {r:x?}");
                assert_eq!(off, q - r.0);
            }
            if n % 50 == 0 {
                let want = ranges
                    .iter()
                    .filter(|r| r.0 <= q && q < r.1)
                    .max_by(|a, b| a.0.cmp(&b.0).then(b.2.cmp(&a.2)))
                    .map(|r| (r.3, q - r.0));
                assert_eq!(got, want, "address {q:#x}");
            }
        }
        assert_eq!(idx.len(), 2000);
    }
}
