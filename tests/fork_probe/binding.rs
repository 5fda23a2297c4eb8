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
