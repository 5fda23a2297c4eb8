//! Unit tests of the flame graph: the folded text round-trips, the SVG is well-formed XML with
//! its title, legend and category colours.
//!
//! In: a small hand-made fork+exec profile. Out: pass or fail.

use std::borrow::Cow;
use std::io;

use super::legend::{thousands, xml_escape, LEGEND_ROW};
use super::svg::{attr, drawn_frames, shade, DrawnFrame};
use super::*;
use crate::attribute::categories::{Category, Rgb};

fn stack(category: Category, section: &str, frames: &[&str], count: u64) -> FoldedStack {
    FoldedStack {
        category,
        section: section.to_string(),
        frames: frames.iter().map(|f| f.to_string()).collect(),
        count,
    }
}

/// A small fork+exec profile, root-first frames as a symboliser would give them: one row a
/// stack, frames `;`-separated, `FORK` standing for the path from `main` into `dup_mmap`.
fn profile() -> Vec<FoldedStack> {
    use Category::*;
    const FORK: &str =
        "main;_Fork;entry_SYSCALL_64;__do_sys_clone;kernel_clone;copy_process;dup_mmap";
    #[rustfmt::skip]
    let rows = [
        (PageTableCopy, "fork", "FORK;copy_page_range", 400),
        (PageTableCopy, "fork", "FORK;copy_page_range;__pmd_alloc", 60),
        (VmaDup, "fork", "FORK;anon_vma_fork", 120),
        (CowFault, "fork", "main;asm_exc_page_fault;handle_mm_fault;do_wp_page;wp_page_copy", 200),
        (LazyBinding, "fork",
            "child;_dl_runtime_resolve_xsavec;_dl_fixup;_dl_lookup_symbol_x;do_lookup_x", 50),
        (ExitTeardown, "fork",
            "_exit;do_group_exit;do_exit;exit_mmap;unmap_vmas;zap_pte_range", 220),
        (ExecKernel, "exec",
            "__execve;__x64_sys_execve;bprm_execve;load_elf_binary;begin_new_exec", 90),
        (SymbolLookup, "exec", "_dl_start_user;dl_main;_dl_relocate_object;do_lookup_x", 140),
        (LdsoRelocation, "exec", "_dl_start_user;dl_main;_dl_relocate_object", 160),
        (Application, "exec", "_start;__libc_start_main;main;compute", 30),
    ];
    rows.iter()
        .map(|&(category, section, frames, count)| {
            let frames = frames.replace("FORK", FORK);
            let frames: Vec<&str> = frames.split(';').collect();
            stack(category, section, &frames, count)
        })
        .collect()
}

#[test]
fn folded_round_trips() {
    let mut stacks = profile();
    stacks.push(stack(
        Category::Application,
        "exec",
        &["_start", "__libc_start_main", "main", "compute"],
        5,
    ));
    stacks.push(stack(Category::Wait, "fork", &["main", "wait4"], 0));
    let mut out = Vec::new();
    write_folded(&stacks, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text
        .lines()
        .all(|l| l.starts_with("exec;") || l.starts_with("fork;")));
    assert!(
        text.contains("fork;fork: page-table copy;main;_Fork;"),
        "{text}"
    );
    assert!(!text.contains("wait4"), "zero counts are dropped");
    let back = read_folded(text.as_bytes()).unwrap();
    // Duplicates merge: the two `compute` stacks become one line of 35.
    assert_eq!(back.len(), profile().len());
    for s in profile() {
        let want = if s.frames.last().unwrap() == "compute" {
            35
        } else {
            s.count
        };
        let got = back
            .iter()
            .find(|b| b.frames == s.frames && b.category == s.category)
            .unwrap_or_else(|| panic!("{:?} did not come back", s.frames));
        assert_eq!(got.count, want);
        assert_eq!(got.section, s.section);
    }
    // Lines are sorted (inferno and flamegraph.pl merge adjacent lines).
    let lines: Vec<&str> = text.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
}

#[test]
fn read_folded_names_the_bad_line() {
    let err = read_folded("fork;fork: other;a 1\nfork;nonsense;b 2\n".as_bytes()).unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
    let err = read_folded("fork;fork: other;a x\n".as_bytes()).unwrap_err();
    assert!(err.to_string().contains("not a number"), "{err}");
    // Stable names are accepted too.
    let ok = read_folded("exec;symbol_lookup;do_lookup_x 3\n".as_bytes()).unwrap();
    assert_eq!(ok[0].category, Category::SymbolLookup);
}

#[test]
fn frame_names_are_cleaned_for_folded_lines() {
    assert_eq!(
        clean_frame("core::ptr::drop<[u8; 8]>"),
        "core::ptr::drop<[u8: 8]>"
    );
    assert_eq!(clean_frame("two\nlines\tand tab"), "two lines and tab");
    assert_eq!(clean_frame("  trailing   "), "trailing");
    assert_eq!(clean_frame(""), "[unknown]");
    assert_eq!(clean_frame(" \n "), "[unknown]");
    assert_eq!(clean_frame("frame 12"), "frame_12");
    assert_eq!(clean_frame("v 1.5"), "v_1.5");
    assert_eq!(clean_frame("# comment-like"), "_# comment-like");
    assert!(matches!(clean_frame("do_lookup_x"), Cow::Borrowed(_)));
    // Mangled names read as their source names, as `c++filt` prints them.
    assert_eq!(
        clean_frame("_ZN6ldcost5trace6launch10child_main17h0123456789abcdefE"),
        "ldcost::trace::launch::child_main"
    );
    assert_eq!(
        clean_frame("_ZN4llvm2cl6parserIbE5parseERNS_6OptionENS_9StringRefES5_Rb"),
        "llvm::cl::parser<bool>::parse(llvm::Option&, llvm::StringRef, llvm::StringRef, bool&)"
    );
    assert_eq!(clean_frame("_Zfoo_not_mangled"), "_Zfoo_not_mangled");
    // A cleaned leaf is read back as a frame, not as a differential count.
    let s = [stack(
        Category::Application,
        "exec",
        &["main", "frame 12"],
        7,
    )];
    let mut out = Vec::new();
    write_folded(&s, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "exec;application;main;frame_12 7\n"
    );
}

fn svg_of(stacks: &[FoldedStack], options: &FlameOptions) -> String {
    let mut out = Vec::new();
    write_svg(stacks, options, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn svg_has_title_legend_and_category_colours() {
    let options = FlameOptions {
        title: "forktest: fork + exec".to_string(),
        subtitle: Some("./forktest, 20 runs, fork 183 µs".to_string()),
    };
    let svg = svg_of(&profile(), &options);
    assert!(svg.contains("forktest: fork + exec"));
    assert!(svg.contains("./forktest, 20 runs, fork 183 µs"));
    let totals = category_totals(&profile());
    assert_eq!(
        svg.matches("class=\"ldcost-legend-entry\"").count(),
        totals.len()
    );
    for (c, n) in &totals {
        let entry = format!("data-category=\"{}\"><title>", c.name());
        assert!(svg.contains(&entry), "legend entry for {c:?}");
        let text = format!(
            "{}  {:.1}%",
            xml_escape(c.label()),
            100.0 * *n as f64 / 1470.0
        );
        assert!(svg.contains(&text), "legend text {text}");
    }
    // Each category's root frame carries the category's colour; every frame above a root
    // carries a shade of it.
    let frames = drawn_frames(&svg).unwrap();
    let roots: Vec<&DrawnFrame> = frames.iter().filter(|f| f.category.is_some()).collect();
    assert_eq!(roots.len(), totals.len());
    for r in &roots {
        let c = r.category.unwrap();
        assert_eq!(
            &svg[r.fill.0..r.fill.1],
            c.colour().to_string(),
            "{c:?} root"
        );
        for f in frames
            .iter()
            .filter(|f| f.y < r.y && f.x >= r.x && f.x < r.x + r.w)
        {
            assert_eq!(
                &svg[f.fill.0..f.fill.1],
                shade(c.colour(), f.name).to_string()
            );
        }
    }
    // inferno's interactivity is intact and the legend is outside #frames.
    for js in [
        "onload=\"init(evt)\"",
        "function search(",
        "function zoom(",
        "function unzoom(",
        "id=\"unzoom\"",
        "id=\"search\"",
    ] {
        assert!(svg.contains(js), "{js}");
    }
    let frames_at = svg.find("<svg id=\"frames\"").unwrap();
    let legend_at = svg.find("<g id=\"ldcost-legend\"").unwrap();
    assert!(
        svg[frames_at..legend_at].contains("</svg>"),
        "legend after #frames closes"
    );
    well_formed(&svg).unwrap();
}

#[test]
fn the_image_grows_to_hold_the_legend() {
    let svg = svg_of(&profile(), &FlameOptions::default());
    let root = &svg[svg.find("<svg ").unwrap()..];
    let root = &root[..root.find('>').unwrap()];
    let h: usize = attr(root, "height").unwrap().parse().unwrap();
    assert_eq!(attr(root, "viewBox").unwrap(), format!("0 0 1200 {h}"));
    // Deepest stack: all + section + category + 9 frames = 12 rows of 16 px, plus pads.
    let legend_top: usize = {
        let l = &svg[svg.find("<g id=\"ldcost-legend\"").unwrap()..];
        attr(l, "y1").unwrap().parse().unwrap()
    };
    assert!(
        legend_top >= 12 * 16,
        "legend starts below the frames ({legend_top})"
    );
    assert!(
        h > legend_top + 3 * LEGEND_ROW,
        "image holds the legend ({h})"
    );
}

#[test]
fn awkward_frame_names_stay_well_formed() {
    let stacks = vec![
        stack(
            Category::Application,
            "exec",
            &[
                "main",
                "std::vector<int, A&B>::push_back",
                "a;b \"quoted\" 'x'",
            ],
            10,
        ),
        stack(
            Category::Initializers,
            "exec",
            &["_dl_init", "call_init", "_GLOBAL__sub_I_x<&>"],
            10,
        ),
    ];
    let options = FlameOptions {
        title: "a <title> & more".to_string(),
        subtitle: Some("<b>".to_string()),
    };
    let svg = svg_of(&stacks, &options);
    well_formed(&svg).unwrap();
    assert!(svg.contains("std::vector&lt;int, A&amp;B&gt;::push_back"));
    assert!(
        svg.contains("a:b"),
        "the separator inside a name was replaced"
    );
    assert!(svg.contains("a &lt;title&gt; &amp; more"));
}

#[test]
fn no_samples_is_an_error_not_an_empty_picture() {
    let err = write_svg(&[], &FlameOptions::default(), Vec::new()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn shades_stay_near_their_base() {
    let base = Category::SymbolLookup.colour();
    for name in [
        "do_lookup_x",
        "check_match",
        "_dl_lookup_symbol_x",
        "strcmp",
    ] {
        let Rgb(r, g, b) = shade(base, name);
        assert!(g > r && g > b, "{name}: still green ({r},{g},{b})");
    }
    assert_eq!(shade(base, "x"), shade(base, "x"), "deterministic");
    assert_eq!(thousands(1234567), "1,234,567");
    assert_eq!(thousands(12), "12");
}

/// A small XML well-formedness check (tags balance, attributes quoted, entities valid), so
/// the test needs no XML crate; tests/flamegraph.rs checks with a real parser too.
fn well_formed(xml: &str) -> Result<(), String> {
    let mut open: Vec<&str> = Vec::new();
    let mut i = 0;
    let skip = |i: usize, end: &str| xml[i..].find(end).map(|j| i + j + end.len());
    while i < xml.len() {
        let rest = &xml[i..];
        if rest.starts_with("<?") {
            i = skip(i, "?>").ok_or("unclosed <?")?;
        } else if rest.starts_with("<!--") {
            i = skip(i, "-->").ok_or("unclosed comment")?;
        } else if rest.starts_with("<![CDATA[") {
            i = skip(i, "]]>").ok_or("unclosed CDATA")?;
        } else if rest.starts_with("<!") {
            i = skip(i, ">").ok_or("unclosed <!")?;
        } else if let Some(close) = rest.strip_prefix("</") {
            let end = close.find('>').ok_or("unclosed end tag")?;
            let name = &close[..end];
            match open.pop() {
                Some(o) if o == name => {}
                o => return Err(format!("</{name}> closes {o:?} at {i}")),
            }
            i += 2 + end + 1;
        } else if rest.starts_with('<') {
            let mut in_quote = false;
            let mut end = None;
            for (j, c) in rest.char_indices().skip(1) {
                match c {
                    '"' => in_quote = !in_quote,
                    '<' if in_quote => return Err(format!("raw < in an attribute at {i}")),
                    '>' if !in_quote => {
                        end = Some(j);
                        break;
                    }
                    _ => {}
                }
            }
            let end = end.ok_or("unclosed tag")?;
            let tag = &rest[1..end];
            let name = tag.split_whitespace().next().ok_or("empty tag")?;
            check_entities(tag)?;
            if !tag.ends_with('/') {
                open.push(name);
            }
            i += end + 1;
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            check_entities(&rest[..end])?;
            i += end;
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed elements {open:?}"))
    }
}

fn check_entities(text: &str) -> Result<(), String> {
    for (j, _) in text.match_indices('&') {
        let rest = &text[j + 1..];
        let end = rest
            .find(';')
            .ok_or_else(|| format!("bare & in {text:?}"))?;
        let ent = &rest[..end];
        let ok = matches!(ent, "lt" | "gt" | "amp" | "quot" | "apos")
            || ent.strip_prefix('#').is_some_and(|n| {
                n.parse::<u32>().is_ok()
                    || n.strip_prefix('x')
                        .is_some_and(|h| u32::from_str_radix(h, 16).is_ok())
            });
        if !ok {
            return Err(format!("bad entity &{ent}; in {text:?}"));
        }
    }
    Ok(())
}

/// The SVG's `height` attribute (of the root `<svg>` element), in pixels.
fn svg_height(svg: &str) -> f64 {
    let tag = &svg[svg.find("<svg").expect("an <svg> element")..];
    let tag = &tag[..tag.find('>').expect("a closed <svg> tag")];
    attr(tag, "height")
        .and_then(|h| h.parse().ok())
        .expect("a numeric height")
}

#[test]
fn a_runaway_chain_is_folded_and_the_subtitle_counts_it() {
    use Category::*;
    let loop_frame = "_RNv_div";
    let mut frames = vec!["main", "compute"];
    frames.extend(std::iter::repeat_n(loop_frame, 125));
    frames.extend(["leaf_a", "leaf_b"]);
    let mut stacks = profile();
    stacks.push(stack(Application, "exec", &frames, 7));
    let capped = cap_stacks(&stacks);
    assert_eq!((capped.stacks_cut, capped.samples_cut), (1, 7));
    let last = capped.stacks.last().unwrap();
    assert_eq!(
        last.frames,
        ["main", "compute", loop_frame, "[×125]", "leaf_a", "leaf_b"]
    );
    // Every other stack is drawn as sampled, and no sample is lost.
    assert_eq!(
        capped.stacks[..stacks.len() - 1],
        stacks[..stacks.len() - 1]
    );
    let total = |s: &[FoldedStack]| s.iter().map(|s| s.count).sum::<u64>();
    assert_eq!(total(&capped.stacks), total(&stacks));
    // Runs up to MAX_REPEAT stay as they are.
    let short: Vec<&str> = std::iter::repeat_n("f", MAX_REPEAT).collect();
    assert_eq!(
        cap_stacks(&[stack(Application, "exec", &short, 1)]).stacks_cut,
        0
    );

    // The drawn graph is as tall as the capped stacks drawn directly, far below the runaway's.
    let options = FlameOptions::default();
    let svg = svg_of(&stacks, &options);
    let total_samples = total(&stacks);
    let note = format!("1 stack (7 of {total_samples} samples) cut");
    assert!(svg.contains(&note), "the subtitle says what was cut");
    // Drawn directly, the capped stacks (with a one-line subtitle too) are as tall.
    let with_subtitle = FlameOptions {
        subtitle: Some(note),
        ..FlameOptions::default()
    };
    let direct = svg_of(&capped.stacks, &with_subtitle);
    assert_eq!(svg_height(&svg), svg_height(&direct));
    assert!(svg_height(&svg) < 1000.0, "height {}", svg_height(&svg));
    let plain = svg_of(&capped.stacks, &options);
    assert!(!plain.contains("samples) cut"), "nothing cut, nothing said");
}

#[test]
fn a_deep_stack_keeps_its_leaf_most_frames() {
    let names: Vec<String> = (0..100).map(|i| format!("f{i}")).collect();
    let frames: Vec<&str> = names.iter().map(String::as_str).collect();
    let capped = cap_stacks(&[stack(Category::Application, "exec", &frames, 3)]);
    let f = &capped.stacks[0].frames;
    assert_eq!(f.len(), MAX_DEPTH);
    assert_eq!(
        f[0],
        format!("[{} outer frames cut]", 100 - (MAX_DEPTH - 1))
    );
    assert_eq!(f[1..], names[100 - (MAX_DEPTH - 1)..]);
    assert_eq!((capped.stacks_cut, capped.samples_cut), (1, 3));
}

#[test]
fn a_deep_stack_keeps_its_object_frame() {
    let mut names: Vec<String> = vec!["relocation: libLLVM.so.22.1".to_string()];
    names.extend((0..100).map(|i| format!("f{i}")));
    let frames: Vec<&str> = names.iter().map(String::as_str).collect();
    let capped = cap_stacks(&[stack(Category::FileFault, "exec", &frames, 2)]);
    let f = &capped.stacks[0].frames;
    assert_eq!(f.len(), MAX_DEPTH);
    assert_eq!(f[0], "relocation: libLLVM.so.22.1");
    // 100 own frames, MAX_DEPTH - 2 of them kept.
    assert_eq!(
        f[1],
        format!("[{} outer frames cut]", 100 - (MAX_DEPTH - 2))
    );
    assert_eq!(f[2..], names[names.len() - (MAX_DEPTH - 2)..]);
}

#[test]
fn a_deep_stack_after_main_keeps_its_dlopen_and_object_frames() {
    let mut names: Vec<String> = vec![
        "dlopen: libfoo.so.1".to_string(),
        "relocation: libfoo.so.1".to_string(),
    ];
    names.extend((0..100).map(|i| format!("f{i}")));
    let frames: Vec<&str> = names.iter().map(String::as_str).collect();
    let capped = cap_stacks(&[stack(Category::LdsoRelocation, "exec", &frames, 2)]);
    let f = &capped.stacks[0].frames;
    assert_eq!(f.len(), MAX_DEPTH);
    assert_eq!(f[..2], names[..2]);
    assert_eq!(
        f[2],
        format!("[{} outer frames cut]", 100 - (MAX_DEPTH - 3))
    );
    assert_eq!(f[3..], names[names.len() - (MAX_DEPTH - 3)..]);
}

#[test]
fn head_lines_wrap_at_spaces_within_the_width() {
    let text = "one two three four five six seven eight nine ten eleven";
    let lines = super::svg::wrap(text, 12);
    assert!(lines.iter().all(|l| l.chars().count() <= 12), "{lines:?}");
    assert_eq!(lines.join(" "), text);
    let long = "x".repeat(30);
    assert_eq!(super::svg::wrap(&long, 12).concat(), long);
}
