//! The one-line reading of a fork section: what each fork copies, where the child's time
//! goes, which faults it takes, and what binding `exit` lazily costs.

use super::section::ForkSection;
use crate::record::fork::Spawn;

pub(super) fn mib(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{} KiB", b / 1024)
    }
}

/// The one-line reading: what each fork copies and where the child's time goes.
pub fn reading(s: &ForkSection) -> String {
    let mut parts = Vec::new();
    if let Some(f) = &s.footprint {
        let pte = f
            .page_table_bytes
            .value()
            .map(|b| format!(" and {} of page tables", mib(b)))
            .unwrap_or_default();
        parts.push(match s.spawn {
            Spawn::Fork => format!("each fork copies {} VMAs{pte}", f.vmas.total),
            // CLONE_VM: the child runs in the parent's address space until it execs or exits.
            Spawn::Vfork | Spawn::PosixSpawn => format!(
                "each {} shares the parent's {} VMAs{pte} (CLONE_VM: nothing is copied)",
                s.spawn.label(),
                f.vmas.total
            ),
        });
    }
    if let (Some(call), Some(reap)) = (&s.per_fork.spawn_call_ns, &s.per_fork.child_to_reap_ns) {
        parts.push(format!(
            "{} {:.0} µs in the parent, the child lives {:.0} µs more",
            s.spawn.label(),
            call.median / 1e3,
            reap.median / 1e3
        ));
    }
    let minflt = s.per_fork.tails.child_minor_faults.map(|t| t.mean);
    if let Some(f) = &s.faults {
        let user = f.child_not_present + f.child_cow;
        let kinds = match f.child_file {
            Some(file) => format!(
                "{:.0} copy-on-write, {file:.0} file-backed, {:.0} new anonymous or other",
                f.child_cow,
                (f.child_not_present - file).max(0.0)
            ),
            None => format!(
                "{:.0} copy-on-write, {:.0} not present",
                f.child_cow, f.child_not_present
            ),
        };
        parts.push(match minflt {
            // getrusage counts faults in kernel mode too; the tracepoint only user-mode ones.
            Some(m) if m.round() > user.round() => format!(
                "each child takes {m:.0} minor faults (getrusage), {user:.0} of them in user mode ({kinds}) and {:.0} in the kernel on its behalf",
                m.round() - user.round()
            ),
            _ => format!("each child takes {user:.0} faults in user mode ({kinds})"),
        });
    } else if let Some(f) = &s.per_fork.child_minor_faults {
        parts.push(format!("{:.0} page faults per child", f.median));
    }
    if let Some(l) = &s.lazy_binding {
        if let (Some(c), true) = (l.cost_ns, l.significant) {
            parts.push(format!(
                "binding exit lazily costs each child {:.1} µs",
                c / 1e3
            ));
        }
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::run;
    use super::super::section::section;
    use super::*;

    #[test]
    fn only_fork_copies_the_address_space() {
        let fork = section(&run(Spawn::Fork), 3);
        assert!(
            fork.reading
                .starts_with("each fork copies 23 VMAs and 36 KiB of page tables;"),
            "{}",
            fork.reading
        );
        for spawn in [Spawn::Vfork, Spawn::PosixSpawn] {
            let s = section(&run(spawn), 3);
            assert!(!s.reading.contains("copies"), "{}", s.reading);
            assert!(
                s.reading.starts_with(&format!(
                    "each {} shares the parent's 23 VMAs and 36 KiB of page tables (CLONE_VM: nothing is copied);",
                    spawn.label()
                )),
                "{}",
                s.reading
            );
        }
    }

    #[test]
    fn the_child_fault_sentence_adds_up_to_the_numbers_beside_it() {
        // getrusage: 40, 41, 42 minor faults per child (mean 41); the tracepoint: 6 in user
        // mode (4 + 1 + 1), so 35 in the kernel.
        let s = section(&run(Spawn::Fork), 3);
        assert!(
            s.reading.contains(
                "each child takes 41 minor faults (getrusage), 6 of them in user mode \
                 (4 copy-on-write, 1 file-backed, 1 new anonymous or other) and 35 in the kernel on its behalf"
            ),
            "{}",
            s.reading
        );
        // Without more faults in getrusage than in user mode, no kernel part is claimed.
        let mut r = run(Spawn::Fork);
        for rec in &mut r.main.records {
            rec.child.minflt = 6;
        }
        let s = section(&r, 3);
        assert!(
            s.reading.contains(
                "each child takes 6 faults in user mode (4 copy-on-write, 1 file-backed, 1 new anonymous or other)"
            ),
            "{}",
            s.reading
        );
        assert_eq!(s.per_fork.tails.child_minor_faults.unwrap().mean, 6.0);
    }
}
