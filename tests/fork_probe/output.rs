//! 1. The target's output and exit status are unchanged.

use super::harness::*;

/// The REGS fixture (dynamic and static) run plainly and under `--fork 200 --at AT` for each
/// injection point: the target's stdout is byte-for-byte the plain run's (every register,
/// the x87 and SSE values, the stack buffer, argc/argv/envp, the atexit handler), its exit
/// status is 7 both ways, and all 200 children exited 0. The injection address agrees with
/// `readelf` (the symbol, or the ELF entry point).
#[test]
fn output_and_exit_status_unchanged_at_every_injection_point() {
    let name = "output_and_exit_status_unchanged_at_every_injection_point";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    let dynamic = case.build("regs", REGS, &["-mno-red-zone"]);
    let stat = case.build("regs-s", REGS, &["-mno-red-zone", "-static"]);
    for exe in [&dynamic, &stat] {
        let want = plain(exe, &[], &[]);
        assert_eq!(want.code, Some(7), "plain run: {}", want.stderr);
        assert!(
            want.stdout.contains("all values intact\n") && !want.stdout.contains("MISMATCH"),
            "the fixture checks itself:\n{}",
            want.stdout
        );
        for at in ["checkpoint", "main", "entry", "exit"] {
            let (out, fork) = profile(&case, exe, &["--fork", "200", "--at", at], &[], &[]);
            let f = assert_forked(&out, &fork, 200);
            let what = format!("{} --at {at}", exe.display());
            assert_eq!(target_part(&out), want.stdout, "{what}: stdout changed");
            assert_eq!(f.target_ending, Ending::Exited(7), "{what}");
            assert_eq!(f.at, at);
            assert!(!out.stderr.contains("error"), "{what}: {}", out.stderr);
            let sym = match at {
                "entry" => Some(elf_entry(exe)),
                "exit" if !is_pie(exe) => symbol_value(exe, "exit"),
                "exit" => None, // libc's exit, in another object
                s => symbol_value(exe, s),
            };
            if let Some(v) = sym {
                assert_at_symbol(exe, f.at_address, v, &what);
            }
        }
    }
    case.finish();
}

/// `--child exit` at a point where the target has output in its stdio buffer (REGS printed
/// its first line into a pipe before `checkpoint`) and an atexit handler that prints: the
/// children's exit() must not add to the target's output (it once repeated the first line
/// and the handler's line once per child, lazy-binding A/B children included).
#[test]
fn child_exit_does_not_repeat_the_targets_buffered_output() {
    let name = "child_exit_does_not_repeat_the_targets_buffered_output";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    let exe = case.build("regs", REGS, &["-mno-red-zone"]);
    let want = plain(&exe, &[], &[]);
    let args = ["--fork", "5", "--at", "checkpoint", "--child", "exit"];
    let (out, fork) = profile(&case, &exe, &args, &[], &[]);
    assert_forked(&out, &fork, 5);
    assert_eq!(target_part(&out), want.stdout);
    case.finish();
}
