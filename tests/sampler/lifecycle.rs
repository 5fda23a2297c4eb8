//! What a sampler holds and releases (fds, its drain thread), and the message a refused
//! system-wide sampler gives.

use std::time::{Duration, Instant};

use ldcost::perf::sampler::{Sampler, SamplerConfig, SamplerError};

use crate::common;
use crate::harness::*;

#[test]
fn drop_without_stop_releases_everything() {
    const NAME: &str = "drop_without_stop_releases_everything";
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !privileged(NAME) {
        return;
    }
    // Only perf events: another test of this binary may spawn cc meanwhile (pipes, files),
    // but none opens perf events without holding MACHINE.
    let fds = || {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|l| l.to_str() == Some("anon_inode:[perf_event]"))
            .count()
    };
    let threads = || {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter(|t| {
                let p = t.as_ref().unwrap().path().join("comm");
                std::fs::read_to_string(p).is_ok_and(|c| c.trim() == "ldcost-sampler")
            })
            .count()
    };
    let before = fds();
    let mut s = match Sampler::start(&SamplerConfig::default(), std::process::id() as i32) {
        Ok(s) => s,
        Err(e) => return common::skip(NAME, &e.to_string()),
    };
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let online = online_cpus(&cpus);
    assert!(
        fds() >= before + online,
        "at least one perf fd per CPU ({cpus}): {} before, {} now",
        before,
        fds()
    );
    // The thread names itself once it runs; wait for that (bounded), not for a fixed time.
    let t = Instant::now();
    while threads() == 0 && t.elapsed() < Duration::from_secs(10) {
        std::thread::yield_now();
    }
    assert_eq!(threads(), 1);
    s.drain();
    drop(s);
    assert_eq!(threads(), 0, "the drain thread was joined");
    assert_eq!(fds(), before, "every perf fd was closed");
}

#[test]
fn refused_system_wide_error_says_what_is_lost() {
    // The message a non-root user sees (built here; running unprivileged needs another user).
    let e = SamplerError::SystemWideDenied {
        cpu: 0,
        errno: nix::errno::Errno::EACCES,
        paranoid: Some(2),
        privileged: false,
    };
    assert!(e.to_string().contains("exit teardown"), "{e}");
    assert!(e.hint().unwrap().contains("per-task"));
}

/// The number of CPUs in a list like `0-3,6,8-9` (/sys/devices/system/cpu/online).
fn online_cpus(list: &str) -> usize {
    list.trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum()
}
