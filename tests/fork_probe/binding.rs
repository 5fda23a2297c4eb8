//! 3. How the children's exit is bound.

use super::harness::*;

/// `--child exit` on the seed forktest: dynamic with a lazily bound JUMP_SLOT (readelf -rW,
/// and no BIND_NOW in readelf -dW) is "lazy", with the A/B measurement and the GOT slot at
/// the relocation's offset plus the load bias; with LD_BIND_NOW=1 in ldcost's (so the
/// target's) environment, or linked -z now, "bound"; static "static"; a program that never
/// names exit (no relocation for it) "direct".
#[test]
fn exit_binding_matches_the_relocations() {
    let name = "exit_binding_matches_the_relocations";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    let Some(dynamic) = case.seed(name, Seed::Forktest, Linkage::Dynamic) else {
        return;
    };
    let Some(stat) = case.seed(name, Seed::Forktest, Linkage::Static) else {
        return;
    };
    let src = case.dir().join("forktest.c");
    let now = case.dir().join("ldcfp-ft-now");
    cc(
        case.dir(),
        &[
            "-O2",
            "-Wl,-z,now",
            "-o",
            now.to_str().unwrap(),
            src.to_str().unwrap(),
        ],
    );
    case.fixtures.push(now.clone());
    let no_exit = case.build("noexit", NO_EXIT, &[]);
    let bind_now = Path::new("1");
    let args = ["--fork", "200", "--child", "exit", "--at", "main"];
    let run = |exe: &Path, env: &[(&str, &Path)]| {
        let (out, fork) = profile(&case, exe, &args, &["20"], env);
        let f = assert_forked(&out, &fork, 200);
        assert_eq!(f.target_ending, Ending::Exited(0));
        f
    };

    let (kind, offset) = exit_reloc(&dynamic).expect("forktest has a relocation for exit");
    assert_eq!(kind, "R_X86_64_JUMP_SLOT", "the oracle");
    assert!(!binds_now(&dynamic), "the oracle: lazy binding allowed");
    let f = run(&dynamic, &[]);
    let bias = f.at_address - symbol_value(&dynamic, "main").expect("main");
    match f.exit_binding {
        Some(ExitBinding::Lazy { got }) => assert_eq!(got, bias + offset, "the GOT slot"),
        other => panic!("dynamic forktest: {other:?}, expected lazy"),
    }
    let lazy = f.lazy_binding.expect("the lazy-binding A/B");
    assert_eq!(lazy.iterations, 200);

    let f = run(&dynamic, &[("LD_BIND_NOW", bind_now)]);
    let bias = f.at_address - symbol_value(&dynamic, "main").expect("main");
    assert_eq!(
        f.exit_binding,
        Some(ExitBinding::Bound { got: bias + offset }),
        "LD_BIND_NOW=1"
    );
    assert!(f.lazy_binding.is_none());

    assert!(binds_now(&now), "the oracle: -z now");
    assert!(matches!(
        run(&now, &[]).exit_binding,
        Some(ExitBinding::Bound { .. })
    ));
    assert_eq!(run(&stat, &[]).exit_binding, Some(ExitBinding::Static));
    assert_eq!(
        exit_reloc(&no_exit),
        None,
        "the oracle: no relocation for exit"
    );
    assert_eq!(run(&no_exit, &[]).exit_binding, Some(ExitBinding::Direct));
    case.finish();
}

/// The leftover check looks at this test's own process tree, grandchildren included, and at
/// nothing else: a child and its child are found while they live (and were found by their
/// pids, not their names), and not after they are reaped; pid 1 never is.
#[test]
fn the_leftover_check_sees_its_own_tree_only() {
    let name = "the_leftover_check_sees_its_own_tree_only";
    let Some(case) = Case::new(name) else {
        return;
    };
    let mut sh = Command::new("sh")
        .args(["-c", "sleep 60 & echo $!; wait"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(sh.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("the grandchild's pid");
    let grandchild: i32 = line.trim().parse().expect("a pid");
    let pids: Vec<i32> = descendants().iter().map(|p| p.pid).collect();
    assert!(pids.contains(&(sh.id() as i32)), "the child: {pids:?}");
    assert!(pids.contains(&grandchild), "the grandchild: {pids:?}");
    assert!(!pids.contains(&1), "init is not ours: {pids:?}");
    let _ = kill(Pid::from_raw(grandchild), Signal::SIGKILL);
    let _ = sh.wait();
    // The grandchild was reparented to us (subreaper) when sh exited, if it outlived sh.
    let _ = nix::sys::wait::waitpid(Pid::from_raw(grandchild), None);
    assert!(descendants().is_empty(), "{:?}", describe(&descendants()));
    case.finish();
}
