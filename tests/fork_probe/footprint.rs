//! 4. The footprint.

use super::harness::*;

/// The footprint read at `--at checkpoint` equals what the target read of itself just before
/// (the probe's own mappings are made after the footprint is read): the VMA count, file text
/// VMAs, heap, stack, loaded objects; VmPTE within 8 KiB. Dynamic and static.
#[test]
fn footprint_matches_the_targets_own_maps() {
    let name = "footprint_matches_the_targets_own_maps";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    let exes = [
        case.build("selfmaps", SELFMAPS, &[]),
        case.build("selfmaps-s", SELFMAPS, &["-static"]),
    ];
    for exe in &exes {
        let (out, fork) = profile(
            &case,
            exe,
            &["--fork", "20", "--at", "checkpoint"],
            &[],
            &[],
        );
        let f = assert_forked(&out, &fork, 20);
        let line = target_part(&out)
            .lines()
            .find(|l| l.starts_with("maps "))
            .expect("the target's own count");
        let v: Vec<i64> = line
            .split_whitespace()
            .skip(1)
            .step_by(2)
            .map(|x| x.parse().unwrap())
            .collect();
        let (maps, text, heap, stack, objects, pte_kb) = (v[0], v[1], v[2], v[3], v[4], v[5]);
        let fp = f
            .footprint
            .unwrap_or_else(|| panic!("no footprint: {:?}", f.footprint_error));
        let what = format!("{}: the target counted {line:?}", exe.display());
        assert_eq!(fp.vmas.total as i64, maps, "{what}");
        assert_eq!(fp.vmas.file_text as i64, text, "{what}");
        assert_eq!(fp.vmas.heap as i64, heap, "{what}");
        assert_eq!(fp.vmas.stack as i64, stack, "{what}");
        assert_eq!(fp.elf_objects as i64, objects, "{what}");
        let pte = fp.page_table_bytes.value().expect("VmPTE") as i64;
        assert!(
            (pte - pte_kb * 1024).abs() <= 8192,
            "{what}: VmPTE {pte} bytes"
        );
    }
    case.finish();
}

/// The probe runs on the target's stack below rsp and leaves it as it found it, page table
/// included: the `[stack]` Rss the target reads of itself after the probe equals the one it
/// read just before (the same in a plain run: the oracle that the program's own two readings
/// agree). Putting the probe's 64 KiB back byte for byte would leave them resident: 76 kB
/// against 8-16 kB, and every later fork of the program copied 16 more
/// page-table entries (its own loop 2-9% slower). Dynamic and static, 20 and 2000 forks.
#[test]
fn the_probe_leaves_the_stack_pages_as_it_found_them() {
    let name = "the_probe_leaves_the_stack_pages_as_it_found_them";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    let exes = [
        case.build("stackrss", STACKRSS, &[]),
        case.build("stackrss-s", STACKRSS, &["-static"]),
    ];
    let reading = |text: &str| -> (i64, i64) {
        let line = text
            .lines()
            .find(|l| l.starts_with("stack rss "))
            .unwrap_or_else(|| panic!("no reading in {text:?}"));
        let v: Vec<i64> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        (v[0], v[1])
    };
    for exe in &exes {
        let alone = plain(exe, &[], &[]);
        assert_eq!(alone.code, Some(0), "{}", alone.stderr);
        let (b, a) = reading(&alone.stdout);
        assert!(
            b > 0 && a == b,
            "{}: plain run {b} then {a} kB",
            exe.display()
        );
        for n in ["20", "2000"] {
            let (out, fork) = profile(&case, exe, &["--fork", n, "--at", "checkpoint"], &[], &[]);
            assert_forked(&out, &fork, n.parse().unwrap());
            let (b, a) = reading(target_part(&out));
            assert_eq!(
                a,
                b,
                "{}: [stack] Rss {b} kB before the probe of {n} forks, {a} kB after",
                exe.display()
            );
        }
    }
    case.finish();
}

/// The target starts with the signal state a program gets from std::process::Command (the
/// oracle: the same fixture run plain from this test, as /proc/self/status reads it): SIGPIPE
/// not ignored (ldcost's Rust runtime ignores it, and an ignored disposition survives
/// execve), no signal blocked. A launcher that passed SIGPIPE's SIG_IGN on would show SigIgn
/// 0x1000.
#[test]
fn the_target_starts_with_a_plain_runs_signal_state() {
    let name = "the_target_starts_with_a_plain_runs_signal_state";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    let exe = case.build("sigstate", SIGSTATE, &[]);
    // (blocked mask, whether SIGPIPE is ignored). The other ignored signals are whatever the
    // launching process had (a handler its libc installed is reset by execve, an ignore is
    // not): not compared.
    let state = |text: &str| -> (u64, bool) {
        let hex = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
                .unwrap_or_else(|| panic!("no {key} in {text:?}"))
        };
        (hex("SigBlk:"), hex("SigIgn:") & (1 << (13 - 1)) != 0)
    };
    let alone = plain(&exe, &[], &[]);
    assert_eq!(alone.code, Some(0), "{}", alone.stderr);
    let want = state(&alone.stdout);
    assert_eq!(want, (0, false), "a plain run: {}", alone.stdout);
    let (out, fork) = profile(
        &case,
        &exe,
        &["--fork", "5", "--at", "checkpoint"],
        &[],
        &[],
    );
    assert_forked(&out, &fork, 5);
    assert_eq!(
        state(target_part(&out)),
        want,
        "under ldcost against plain: {}",
        target_part(&out)
    );
    case.finish();
}
