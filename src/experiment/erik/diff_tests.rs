//! Tests of [`super`]: the growth and fall of frames, the sentences under the graphs, the
//! file names.

use super::*;

#[test]
fn growth_sums_own_samples_by_leaf_and_category() {
    let t = "fork;lazy binding;_dl_fixup;do_lookup_x 10 300\n\
             fork;lazy binding;do_lookup_x 0 50\n\
             fork;exit teardown;exit_mmap 400 390\n\
             fork;exit teardown;zap_pte_range 20 25\n";
    let (f, c) = growth(t);
    assert_eq!(
        f,
        vec![
            ("do_lookup_x".to_string(), 340),
            ("zap_pte_range".into(), 5)
        ]
    );
    assert_eq!(c, vec![("lazy binding".to_string(), 340)]);
}

#[test]
fn growth_is_split_into_the_exit_walk_and_the_lookup() {
    let lazy = crate::attribute::categories::Category::LazyBinding.label();
    let t = format!(
        "fork;ld.so: other;__run_exit_handlers;_dl_fini 10 110\n\
         fork;fault: copy-on-write;[unknown];__do_global_dtors_aux;do_wp_page_[k] 0 50\n\
         fork;{lazy};[ld-linux-x86-64.so.2+0x1234] 5 45\n\
         fork;fault: file-backed;check_match;filemap_map_pages_[k] 0 10\n\
         fork;exit: teardown;exit_mmap_[k] 100 95\n"
    );
    // Total 100 + 50 + 40 + 10 - 5 = 195; walk 150; lookup 50.
    assert_eq!(growth_where(&t), (195, 150, 50));
    assert_eq!(totals(&t), (115, 310));
}

fn graph_of(folded: &str) -> DiffGraph {
    let side = |libs| Side {
        libs,
        stacks: Vec::new(),
        samples: 0,
        forks: 1000,
        wall_ns: 0,
        notes: Vec::new(),
    };
    let (red, red_categories) = growth(folded);
    DiffGraph {
        exit: Exit::Libc,
        file_name: file_name(Exit::Libc),
        frequency_hz: 10_000,
        base: side(0),
        head: side(100),
        folded: folded.into(),
        svg: String::new(),
        negated_file_name: negated_file_name(Exit::Libc),
        negated_svg: String::new(),
        red,
        red_categories,
        blue: shrinkage(folded),
    }
}

#[test]
fn the_sentence_gives_both_totals_and_splits_only_a_growth() {
    let up = graph_of("fork;ld.so: other;_dl_fini 10 110\nfork;exit: teardown;zap_[k] 50 50\n");
    let t = what_is_red(&up);
    assert!(
        t.contains("take 160 samples per 1000 forks and 0 take 60 at the same footprint (+100)"),
        "{t}"
    );
    assert!(
        t.contains("of the growth, 100% is in stacks through the walk"),
        "{t}"
    );
    assert!(t.contains("by frame: `_dl_fini` +100."), "{t}");
    let down = graph_of("fork;exit: teardown;zap_[k] 50 40\nfork;fork: other;dup_[k] 1 2\n");
    let t = what_is_red(&down);
    assert!(t.contains("(-9)") && !t.contains("of the growth"), "{t}");
    assert!(t.contains("`dup (kernel)` +1"), "{t}");
}

#[test]
fn file_names_follow_the_exit_keys() {
    assert_eq!(file_name(Exit::Libc), "erik-diff-exit.svg");
    assert_eq!(file_name(Exit::Underscore), "erik-diff-_exit.svg");
    assert_eq!(negated_file_name(Exit::Libc), "erik-diff-exit-k0.svg");
    assert_eq!(
        negated_file_name(Exit::Underscore),
        "erik-diff-_exit-k0.svg"
    );
}

#[test]
fn the_blue_sentence_names_what_only_k0_has() {
    // k = 0 spends more in zap (50 -> 40) and has `only0` that k = 100 lacks.
    let g = graph_of(
        "fork;exit: teardown;zap_[k] 50 40\nfork;fork: other;only0 7 0\n\
         fork;ld.so: other;_dl_fini 10 110\n",
    );
    assert_eq!(
        g.blue,
        vec![("zap_[k]".to_string(), 10), ("only0".into(), 7)]
    );
    let t = what_is_blue(&g);
    assert!(
        t.contains("blue by frame: `zap (kernel)` -10, `only0` -7; only k = 0 has `only0`"),
        "{t}"
    );
    let none = what_is_blue(&graph_of("fork;ld.so: other;_dl_fini 10 110\n"));
    assert!(none.contains("Nothing is blue"), "{none}");
}
