//! Hand-made probe records and runs shared by the fork-cost unit tests.

use crate::record::footprint::{Figure, Footprint, VmaCounts};
use crate::record::fork::{
    At, ChildSpec, FaultKinds, ForkRun, ProbeRecord, ProbeResult, Rusage, Spawn,
};
use crate::record::Ending;

pub(super) fn ru(user_us: i64, sys_us: i64, minflt: i64) -> Rusage {
    Rusage {
        utime: [user_us / 1_000_000, user_us % 1_000_000],
        stime: [sys_us / 1_000_000, sys_us % 1_000_000],
        minflt,
        ..Default::default()
    }
}

pub(super) fn result() -> ProbeResult {
    // Three forks: parent CPU grows by 30, 40, 50 µs; faults by 5, 6, 7.
    let mut records = Vec::new();
    let mut t = 1_000_000u64;
    let (mut u, mut s, mut f) = (100, 200, 10);
    for i in 0..3i64 {
        let r0 = t;
        let r1 = t + 50_000 + i as u64 * 1000;
        let r2 = r1 + 80_000;
        u += 10;
        s += 20 + 10 * i;
        f += 5 + i;
        records.push(ProbeRecord {
            t0: r0,
            t1: r1,
            t2: r2,
            pid: 100 + i as u64,
            status: if i == 2 { 9 } else { 0 },
            child: ru(5, 60 + i, 40 + i),
            parent: ru(u, s, f),
            ..Default::default()
        });
        t = r2 + 1000;
    }
    ProbeResult {
        records,
        ru_start: ru(100, 200, 10),
        ru_end: Rusage::default(),
        t_start: 999_000,
        t_end: t,
        error: None,
        page_bytes: 266240,
    }
}

pub(super) fn run(spawn: Spawn) -> ForkRun {
    let vmas = VmaCounts {
        total: 23,
        ..Default::default()
    };
    ForkRun {
        at: At::Main,
        at_address: 0x401000,
        spawn,
        child: ChildSpec::Exit,
        exit_binding: None,
        libc_fork: false,
        vdso_clock: true,
        footprint: Some(Footprint {
            pid: 1,
            vmas,
            elf_objects: 1,
            object_paths: vec![],
            page_table_bytes: Figure::Measured(36 * 1024),
            rss_bytes: Figure::Measured(0),
            rss_anon_bytes: Figure::Measured(0),
            rss_file_bytes: Figure::Measured(0),
            rss_shmem_bytes: Figure::Measured(0),
            private_dirty_bytes: Figure::Measured(0),
        }),
        footprint_error: None,
        main: result(),
        // 1000 children: 4 cow, 2 not present (1 of them file-backed) each.
        faults: Ok((
            FaultKinds {
                all: 1000,
                cow: 1000,
                file: Some(0),
            },
            FaultKinds {
                all: 6000,
                cow: 4000,
                file: Some(1000),
            },
            1000,
        )),
        sampled: None,
        rate: None,
        lazy_ab: None,
        spawn_ab: Vec::new(),
        ending: Ending::Exited(0),
        pid: 1,
    }
}
