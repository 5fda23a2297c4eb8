//! Flame graphs checked by their real consumers: FlameGraph's flamegraph.pl reads our folded
//! file, a real XML parser reads our SVG, and headless Chromium renders it, searches it and
//! zooms it (scripts/check-flamegraph). Each check prints `SKIP` when its tool is missing.
//!
//! The profile is hand-made but realistic: stacks shaped like `perf script` output for a
//! dynamically linked fork loop and its exec, classified by `categories::classify` (so the
//! test also pins each stack's category), with sample counts in the proportions a system-wide
//! sampling of forktest shows. Set LDCOST_KEEP_FLAMEGRAPH=DIR to keep the SVG, folded file and PNG.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use ldcost::attribute::categories::{classify, Category, Frame};
use ldcost::report::flamegraph::{write_folded, write_svg, FlameOptions, FoldedStack};

const LDSO: &str = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const APP: &str = "/tmp/forktest";

/// Kernel frames (leaf first) then user frames given as `name@object`.
fn frames(kernel: &[&str], user: &[&str]) -> Vec<Frame> {
    let mut out: Vec<Frame> = kernel
        .iter()
        .map(|k| Frame {
            name: k.to_string(),
            object: Some("[kernel.kallsyms]".to_string()),
            kernel: true,
        })
        .collect();
    for u in user {
        let (name, obj) = u.split_once('@').unwrap();
        let obj = match obj {
            "ldso" => LDSO,
            "libc" => LIBC,
            "app" => APP,
            other => other,
        };
        out.push(Frame {
            name: name.to_string(),
            object: Some(obj.to_string()),
            kernel: false,
        });
    }
    out
}

const SYSCALL: [&str; 2] = ["do_syscall_64", "entry_SYSCALL_64_after_hwframe"];
const FAULT: [&str; 4] = [
    "__handle_mm_fault",
    "handle_mm_fault",
    "exc_page_fault",
    "asm_exc_page_fault",
];

fn with(a: &[&'static str], b: &[&'static str]) -> Vec<&'static str> {
    a.iter().chain(b).copied().collect()
}

/// (section, expected category, leaf-first stack, samples).
fn profile() -> Vec<(&'static str, Category, Vec<Frame>, u64)> {
    use Category::*;
    let clone = with(
        &["copy_process", "kernel_clone", "__do_sys_clone"],
        &SYSCALL,
    );
    let fork_user = [
        "_Fork@libc",
        "__libc_fork@libc",
        "main@app",
        "__libc_start_call_main@libc",
    ];
    let child = ["child@app", "main@app", "__libc_start_call_main@libc"];
    let exit = with(
        &[
            "exit_mmap",
            "__mmput",
            "exit_mm",
            "do_exit",
            "do_group_exit",
            "__x64_sys_exit_group",
        ],
        &SYSCALL,
    );
    let execve = with(
        &[
            "load_elf_binary",
            "bprm_execve",
            "do_execveat_common.isra.0",
            "__x64_sys_execve",
        ],
        &SYSCALL,
    );
    let rtld = [
        "dl_main@ldso",
        "_dl_sysdep_start@ldso",
        "_dl_start_user@ldso",
    ];
    vec![
        (
            "fork",
            PageTableCopy,
            frames(
                &with(&["copy_pte_range", "copy_page_range", "dup_mmap"], &clone),
                &fork_user,
            ),
            380,
        ),
        (
            "fork",
            PageTableCopy,
            frames(
                &with(&["__pmd_alloc", "copy_page_range", "dup_mmap"], &clone),
                &fork_user,
            ),
            40,
        ),
        (
            "fork",
            VmaDup,
            frames(
                &with(
                    &["kmem_cache_alloc_noprof", "anon_vma_fork", "dup_mmap"],
                    &clone,
                ),
                &fork_user,
            ),
            110,
        ),
        (
            "fork",
            VmaDup,
            frames(
                &with(
                    &["mas_dup_build.constprop.0", "__mt_dup", "dup_mmap"],
                    &clone,
                ),
                &fork_user,
            ),
            50,
        ),
        (
            "fork",
            ForkOther,
            frames(&with(&["_raw_spin_lock"], &clone), &fork_user),
            90,
        ),
        (
            "fork",
            CowFault,
            frames(
                &with(
                    &["copy_mc_enhanced_fast_string", "wp_page_copy", "do_wp_page"],
                    &FAULT,
                ),
                &["main@app"],
            ),
            160,
        ),
        (
            "fork",
            CowFault,
            frames(&with(&["do_wp_page"], &FAULT), &child),
            100,
        ),
        (
            "fork",
            FileFault,
            frames(
                &with(
                    &["next_uptodate_folio", "filemap_map_pages", "do_fault"],
                    &FAULT,
                ),
                &child,
            ),
            210,
        ),
        (
            "fork",
            AnonFault,
            frames(
                &with(&["clear_page_erms", "do_anonymous_page"], &FAULT),
                &child,
            ),
            120,
        ),
        (
            "fork",
            ExitTeardown,
            frames(
                &with(
                    &[
                        "zap_present_ptes.isra.0",
                        "zap_pte_range",
                        "unmap_page_range",
                        "unmap_vmas",
                    ],
                    &exit,
                ),
                &["_exit@libc"],
            ),
            230,
        ),
        (
            "fork",
            ExitTeardown,
            frames(
                &with(&["free_pgd_range", "free_pgtables"], &exit),
                &["_exit@libc"],
            ),
            70,
        ),
        (
            "fork",
            Wait,
            frames(
                &with(
                    &[
                        "release_task",
                        "wait_consider_task",
                        "__do_wait",
                        "do_wait",
                        "kernel_wait4",
                    ],
                    &SYSCALL,
                ),
                &["__GI___wait4@libc", "main@app"],
            ),
            60,
        ),
        (
            "fork",
            LazyBinding,
            frames(
                &[],
                &[
                    "do_lookup_x@ldso",
                    "_dl_lookup_symbol_x@ldso",
                    "_dl_fixup@ldso",
                    "_dl_runtime_resolve_xsavec@ldso",
                    "child@app",
                    "main@app",
                ],
            ),
            70,
        ),
        (
            "fork",
            Application,
            frames(
                &[],
                &["child@app", "main@app", "__libc_start_call_main@libc"],
            ),
            40,
        ),
        (
            "fork",
            KernelOther,
            frames(
                &[
                    "__irq_exit_rcu",
                    "sysvec_apic_timer_interrupt",
                    "asm_sysvec_apic_timer_interrupt",
                ],
                &["main@app"],
            ),
            20,
        ),
        (
            "exec",
            ExecKernel,
            frames(
                &with(
                    &[
                        "vm_normal_page",
                        "unmap_page_range",
                        "unmap_vmas",
                        "exit_mmap",
                        "__mmput",
                        "begin_new_exec",
                    ],
                    &execve,
                ),
                &["__GI___execve@libc"],
            ),
            90,
        ),
        (
            "exec",
            ExecKernel,
            frames(
                &with(
                    &[
                        "__mmap_region",
                        "do_mmap",
                        "vm_mmap_pgoff",
                        "elf_load",
                        "load_elf_interp.constprop.0",
                    ],
                    &execve,
                ),
                &["__GI___execve@libc"],
            ),
            60,
        ),
        (
            "exec",
            LdsoMapping,
            frames(
                &with(
                    &[
                        "__mmap_region",
                        "do_mmap",
                        "vm_mmap_pgoff",
                        "ksys_mmap_pgoff",
                    ],
                    &SYSCALL,
                ),
                &["mmap64@ldso", "_dl_map_segments@ldso"],
            ),
            70,
        ),
        (
            "exec",
            LdsoMapping,
            frames(
                &with(&["do_sys_openat2", "__x64_sys_openat"], &SYSCALL),
                &["__GI___open64_nocancel@ldso", "_dl_map_object@ldso"],
            ),
            50,
        ),
        (
            "exec",
            LdsoRelocation,
            frames(
                &[],
                &[
                    "_dl_relocate_object@ldso",
                    "dl_main@ldso",
                    "_dl_sysdep_start@ldso",
                    "_dl_start_user@ldso",
                ],
            ),
            180,
        ),
        (
            "exec",
            SymbolLookup,
            frames(
                &[],
                &[
                    "check_match@ldso",
                    "do_lookup_x@ldso",
                    "_dl_lookup_symbol_x@ldso",
                    "_dl_relocate_object@ldso",
                    "dl_main@ldso",
                ],
            ),
            90,
        ),
        ("exec", SymbolLookup, frames(&[], &["do_lookup_x@ldso"]), 50),
        (
            "exec",
            FileFault,
            frames(&with(&["filemap_map_pages", "do_fault"], &FAULT), &rtld),
            80,
        ),
        (
            "exec",
            Initializers,
            frames(
                &[],
                &[
                    "std::locale::_Impl::_Impl@/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
                    "_GLOBAL__sub_I_locale_init.cc@/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
                    "call_init@ldso",
                    "_dl_init@ldso",
                ],
            ),
            50,
        ),
        (
            "exec",
            TlsSetup,
            frames(
                &[],
                &[
                    "_dl_allocate_tls_storage@ldso",
                    "init_tls@ldso",
                    "dl_main@ldso",
                ],
            ),
            20,
        ),
        (
            "exec",
            CpuFeatures,
            frames(
                &[],
                &["handle_amd@ldso", "init_cpu_features.constprop.0@ldso"],
            ),
            40,
        ),
        ("exec", LdsoOther, frames(&[], &rtld), 60),
        (
            "exec",
            Instrumentation,
            frames(
                &[
                    "ptrace_stop",
                    "get_signal",
                    "irqentry_exit_to_user_mode",
                    "asm_exc_int3",
                ],
                &rtld,
            ),
            15,
        ),
        ("exec", Unknown, frames(&[], &["[unknown]@[unknown]"]), 5),
    ]
}

/// The profile folded: categories from `classify`, frames root first as perf's callers-first
/// order (`+0x` offsets and clone suffixes kept as a symboliser gives them).
fn folded() -> Vec<FoldedStack> {
    profile()
        .into_iter()
        .map(|(section, want, stack, count)| {
            let got = classify(&stack);
            assert_eq!(
                got,
                want,
                "{section} stack {:?}",
                stack.first().map(|f| &f.name)
            );
            FoldedStack {
                category: got,
                section: section.to_string(),
                frames: stack.iter().rev().map(|f| f.name.clone()).collect(),
                count,
            }
        })
        .collect()
}

struct Outputs {
    _dir: tempfile::TempDir,
    svg: PathBuf,
    folded: PathBuf,
    png: PathBuf,
}

fn render(name: &str) -> Outputs {
    let dir = tempfile::tempdir().unwrap();
    let stacks = folded();
    let present: Vec<Category> = stacks.iter().map(|s| s.category).collect();
    for c in Category::ALL {
        assert!(present.contains(&c), "the test profile lacks {c:?}");
    }
    let svg = dir.path().join(format!("{name}.svg"));
    let folded = dir.path().join(format!("{name}.folded"));
    let total: u64 = stacks.iter().map(|s| s.count).sum();
    let options = FlameOptions {
        title: "forktest: exec and fork, by category".to_string(),
        subtitle: Some(format!(
            "/tmp/forktest (dynamic, -lm -lresolv -lssl -lcrypto), 20 runs, {total} samples at 20 kHz · \
             fork 32 µs in the parent, the child lives 36 µs more; each child takes 8 minor faults \
             (getrusage), 6 of them in user mode (4 copy-on-write, 1 file-backed, 1 new anonymous \
             or other) and 2 in the kernel on its behalf"
        )),
    };
    write_svg(&stacks, &options, std::fs::File::create(&svg).unwrap()).unwrap();
    write_folded(&stacks, std::fs::File::create(&folded).unwrap()).unwrap();
    let png = dir.path().join(format!("{name}.png"));
    Outputs {
        _dir: dir,
        svg,
        folded,
        png,
    }
}

/// Copies the outputs to LDCOST_KEEP_FLAMEGRAPH, when set, for a person to look at.
fn keep(paths: &[&Path]) {
    let Some(dir) = std::env::var_os("LDCOST_KEEP_FLAMEGRAPH") else {
        return;
    };
    std::fs::create_dir_all(&dir).unwrap();
    for p in paths.iter().filter(|p| p.exists()) {
        std::fs::copy(p, Path::new(&dir).join(p.file_name().unwrap())).unwrap();
    }
}

/// FlameGraph's flamegraph.pl (and inferno-flamegraph, where installed) read our folded file
/// and draw every category.
#[test]
fn flamegraph_tools_read_our_folded_file() {
    let name = "flamegraph_tools_read_our_folded_file";
    let tools: Vec<&str> = ["flamegraph.pl", "inferno-flamegraph"]
        .into_iter()
        .filter(|t| common::have(t))
        .collect();
    if tools.is_empty() {
        common::skip(
            name,
            "neither flamegraph.pl nor inferno-flamegraph is installed",
        );
        return;
    }
    let out = render("folded");
    for tool in tools {
        let res = Command::new(tool).arg(&out.folded).output().unwrap();
        let stderr = String::from_utf8_lossy(&res.stderr);
        assert!(res.status.success(), "{tool}: {stderr}");
        assert!(
            !stderr.contains("Ignored"),
            "{tool} ignored lines: {stderr}"
        );
        let svg = String::from_utf8_lossy(&res.stdout);
        for c in Category::ALL {
            let label = c.label().replace('&', "&amp;");
            assert!(svg.contains(&label), "{tool}'s SVG lacks {label}");
        }
    }
}

#[test]
fn svg_is_well_formed_xml() {
    let name = "svg_is_well_formed_xml";
    if !common::tools(name, &["python3"]) {
        return;
    }
    let out = render("xml");
    let res = Command::new("python3")
        .args([
            "-c",
            "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); \
             print(len(d.getElementsByTagName('rect')))",
        ])
        .arg(&out.svg)
        .output()
        .unwrap();
    assert!(
        res.status.success(),
        "not well-formed XML: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    let rects: usize = String::from_utf8_lossy(&res.stdout).trim().parse().unwrap();
    assert!(rects > 40, "{rects} rects");
}

#[test]
fn chromium_renders_searches_and_zooms_it() {
    let name = "chromium_renders_searches_and_zooms_it";
    if !common::have("chromium") {
        common::skip(name, "chromium is not installed (apt-get install chromium)");
        return;
    }
    let out = render("flamegraph");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-flamegraph");
    let res = Command::new(&script)
        .arg(&out.svg)
        .arg(&out.png)
        .arg("--term")
        .arg("do_lookup_x")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    let stderr = String::from_utf8_lossy(&res.stderr);
    keep(&[&out.svg, &out.folded, &out.png]);
    eprintln!("{stdout}");
    assert!(
        res.status.success(),
        "check-flamegraph failed:\n{stdout}\n{stderr}"
    );
    // What the script proved, in its own words.
    for key in ["png:", "search:", "zoom:", "reset:", "legend:", "head:"] {
        assert!(stdout.contains(key), "no `{key}` line in:\n{stdout}");
    }
    // Every category but ldcost's own instrumentation, which is not drawn.
    let entries = format!("legend: {} entries", Category::ALL.len() - 1);
    assert!(stdout.contains(&entries), "{stdout}");
    assert!(std::fs::metadata(&out.png).unwrap().len() > 10_000);
}

// ---------------------------------------------------------------------------------------------
// One graph, one population, the text's numbers; frames that say which library.

/// The SVG's words, read back with regular expressions as a reader would see them.
struct SvgText {
    title: String,
    subtitle: String,
    /// The legend's head line.
    head: String,
    /// (label, share as printed, samples) per legend entry.
    entries: Vec<(String, String, u64)>,
    /// Every frame's title: (name, samples).
    frames: Vec<(String, u64)>,
    width: f64,
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn read_svg(svg: &str) -> SvgText {
    let one = |re: &str| -> String {
        regex::Regex::new(re)
            .unwrap()
            .captures(svg)
            .map(|c| unescape(&c[1]))
            .unwrap_or_default()
    };
    let entry = regex::Regex::new(
        r#"class="ldcost-legend-entry"[^>]*>.*?<text x="30" y="11.5">(.*?)  (\d+\.\d%)  \(([\d,]+)\)</text>"#,
    )
    .unwrap();
    let entries = entry
        .captures_iter(svg)
        .map(|c| {
            (
                unescape(&c[1]),
                c[2].to_string(),
                c[3].replace(',', "").parse().unwrap(),
            )
        })
        .collect();
    let frame =
        regex::Regex::new(r"<title>([^<]*) \(([\d,]+) samples?, [\d.]+%\)</title>").unwrap();
    let frames = frame
        .captures_iter(svg)
        .map(|c| (unescape(&c[1]), c[2].replace(',', "").parse().unwrap()))
        .collect();
    SvgText {
        title: one(r#"<text id="title"[^>]*>([^<]*)</text>"#),
        subtitle: one(r#"<text id="subtitle"[^>]*>([^<]*)</text>"#),
        head: one(r#"<text id="ldcost-legend-head"[^>]*>([^<]*)</text>"#),
        entries,
        frames,
        width: one(r#"<svg [^>]*?width="(\d+)""#).parse().unwrap_or(0.0),
    }
}

/// The hand-made profile's instrumentation (15 samples) is not drawn and the legend says so;
/// its shares are the drawn samples' and add up; a subtitle far wider than the canvas is cut
/// to fit (inferno draws it on one line) and written whole in the legend.
#[test]
fn instrumentation_is_left_out_and_a_long_subtitle_fits() {
    let dir = tempfile::tempdir().unwrap();
    let stacks = folded();
    let own: u64 = stacks
        .iter()
        .filter(|s| s.category == Category::Instrumentation)
        .map(|s| s.count)
        .sum();
    assert_eq!(own, 15);
    let drawn: u64 = stacks.iter().map(|s| s.count).sum::<u64>() - own;
    let long = format!(
        "{drawn} samples over 20 exec runs · {}",
        "each fork copies 36 VMAs and 48 KiB of page tables; ".repeat(8)
    );
    let options = FlameOptions {
        title: "ldcost profile (exec): /tmp/forktest --iterations 20 --mode exit".to_string(),
        subtitle: Some(long.clone()),
    };
    let path = dir.path().join("long.svg");
    write_svg(&stacks, &options, std::fs::File::create(&path).unwrap()).unwrap();
    let raw = std::fs::read_to_string(&path).unwrap();
    let svg = read_svg(&raw);
    assert_eq!(svg.title, options.title, "the title carries the arguments");
    // No frame of ldcost's own: not the category, not its kernel frames.
    for (name, _) in &svg.frames {
        assert!(
            name != "instrumentation" && name != "ptrace_stop",
            "instrumentation drawn: {name}"
        );
    }
    assert!(
        svg.head.contains("left out: 15 samples"),
        "legend head: {}",
        svg.head
    );
    // The legend counts the drawn samples, and `all` is as wide.
    let legend_total: u64 = svg.entries.iter().map(|e| e.2).sum();
    assert_eq!(legend_total, drawn);
    let all = svg
        .frames
        .iter()
        .find(|f| f.0 == "all")
        .expect("an `all` frame");
    assert_eq!(all.1, drawn);
    assert!(
        svg.head.contains(&format!(
            "share of {},{:03} samples",
            drawn / 1000,
            drawn % 1000
        )),
        "{}",
        svg.head
    );
    // Shares printed as samples over the drawn samples (no instrumentation in either).
    for (label, share, n) in &svg.entries {
        let want = format!("{:.1}%", 100.0 * *n as f64 / drawn as f64);
        assert_eq!(share, &want, "{label}");
    }
    // The subtitle fits: cut, with the whole text in the legend.
    assert!(svg.subtitle.ends_with('…'), "{}", svg.subtitle);
    let w = ldcost::report::flamegraph::estimated_width(&svg.subtitle, 12.0);
    assert!(
        w <= svg.width,
        "subtitle {w} px wide on a {} px canvas",
        svg.width
    );
    let about: Vec<String> = regex::Regex::new(r#"class="ldcost-about"[^>]*>([^<]*)<"#)
        .unwrap()
        .captures_iter(&raw)
        .map(|c| unescape(&c[1]))
        .collect();
    assert_eq!(
        about.join(" "),
        long.trim_end(),
        "the whole subtitle, wrapped"
    );
    for line in &about {
        assert!(ldcost::report::flamegraph::estimated_width(line, 12.0) <= svg.width);
    }
}

/// A sampled profile of one program: the SVG, the JSON and the text, or why it cannot run.
struct Sampled {
    dir: tempfile::TempDir,
    json: serde_json::Value,
    text: String,
}

fn sampled_profile(name: &str, extra: &[&str], target: &Path, args: &[&str]) -> Option<Sampled> {
    if !common::running_as_root() {
        common::skip(
            name,
            "sampling needs root (perf_event_open system-wide, ptrace)",
        );
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let out = common::ldcost(
        &[
            &["profile", "--sample", "--quiet-target", "--json"][..],
            &[json.to_str().unwrap()],
            extra,
            &[target.to_str().unwrap(), "--"],
            args,
        ]
        .concat(),
    );
    assert_eq!(out.code, 0, "ldcost profile: {}", out.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    if doc["profile"]["breakdown"].is_null() {
        common::skip(
            name,
            &format!(
                "no sampled breakdown: {}",
                doc["profile"]["breakdown_error"].as_str().unwrap_or("?")
            ),
        );
        return None;
    }
    Some(Sampled {
        dir,
        json: doc,
        text: out.stdout,
    })
}

/// `profile --sample --flamegraph` of /bin/ls: no instrumentation frames; the legend's count and
/// share of every category equal the JSON's and the text's category table, as printed; the
/// subtitle's sample count is the legend's; the instrumentation left out is the JSON's; the
/// title carries the arguments; the subtitle fits the canvas.
#[test]
fn ls_legend_equals_text_and_json() {
    let name = "ls_legend_equals_text_and_json";
    let dir = tempfile::tempdir().unwrap();
    let svg_path = dir.path().join("ls.svg");
    let Some(run) = sampled_profile(
        name,
        &["--flamegraph", svg_path.to_str().unwrap()],
        Path::new("/bin/ls"),
        &["-l", "/"],
    ) else {
        return;
    };
    let raw = std::fs::read_to_string(&svg_path).unwrap();
    keep(&[&svg_path]);
    let svg = read_svg(&raw);
    let b = &run.json["profile"]["breakdown"];
    assert_eq!(svg.title, "ldcost profile (exec): /bin/ls -l /");
    for (name, _) in &svg.frames {
        assert!(
            name != "instrumentation" && !name.starts_with("fork"),
            "drawn: {name}"
        );
    }
    let own = b["instrumentation"]["samples"].as_u64().unwrap();
    if own > 0 {
        assert!(
            svg.head.contains(&format!("left out: {own} samples")),
            "{}",
            svg.head
        );
    }
    let samples = b["samples"].as_u64().unwrap();
    let legend_total: u64 = svg.entries.iter().map(|e| e.2).sum();
    assert_eq!(legend_total, samples, "legend against the JSON's samples");
    assert!(
        svg.subtitle
            .starts_with(&format!("{samples} samples over 10 exec runs")),
        "subtitle: {}",
        svg.subtitle
    );
    assert!(
        svg.head.contains(&format!("exec: {samples} samples")),
        "{}",
        svg.head
    );
    let cats = b["categories"].as_array().unwrap();
    assert_eq!(cats.len(), svg.entries.len(), "{:?}", svg.entries);
    for c in cats {
        let label = c["label"].as_str().unwrap();
        let json_share = format!("{:.1}%", c["share"].as_f64().unwrap() * 100.0);
        let (_, share, n) = svg
            .entries
            .iter()
            .find(|e| e.0 == label)
            .unwrap_or_else(|| panic!("{label} not in the legend"));
        assert_eq!(*n, c["samples"].as_u64().unwrap(), "{label}: samples");
        assert_eq!(share, &json_share, "{label}: legend against JSON");
        // The text's category table: the label, then the share as the first figure.
        let table = &run.text[run
            .text
            .find("exec cost by category")
            .expect("the text's category table")..];
        let row = table
            .lines()
            .map(str::trim_start)
            .find(|l| {
                l.strip_prefix(label)
                    .is_some_and(|r| r.starts_with("  ") && r.trim_start().contains('%'))
            })
            .unwrap_or_else(|| panic!("{label} not in the text:\n{}", run.text));
        let text_share = row[label.len()..].split_whitespace().next().unwrap();
        assert_eq!(share, text_share, "{label}: legend against text: {row}");
    }
    let w = ldcost::report::flamegraph::estimated_width(&svg.subtitle, 12.0);
    assert!(w <= svg.width, "subtitle {w} px on {} px", svg.width);
    drop(run.dir);
}

/// Samples per object frame (`relocation: libfoo.so.1`): the sum of that frame's widths.
fn object_towers(svg: &SvgText, phase: &str) -> Vec<(String, u64)> {
    let mut out: std::collections::BTreeMap<String, u64> = Default::default();
    for (name, n) in &svg.frames {
        if let Some(obj) = name.strip_prefix(&format!("{phase}: ")) {
            *out.entry(obj.to_string()).or_default() += n;
        }
    }
    let mut v: Vec<(String, u64)> = out.into_iter().collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    v
}

/// Two libraries of very different relocation counts (readelf counts them): the exec graph has
/// a `relocation: <library>` frame for each, the one with many symbol relocations the wider
/// tower; the folded file carries the same frames.
#[test]
fn relocation_frames_name_each_library() {
    let name = "relocation_frames_name_each_library";
    if !common::tools(name, &["cc", "readelf"]) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    const BIG: usize = 20_000;
    const SMALL: usize = 20;
    let mut defs = String::new();
    for i in 0..BIG {
        defs.push_str(&format!("void f{i}(void) {{}}\n"));
    }
    common::write(d, "defs.c", &defs);
    let table = |lib: &str, n: usize| {
        let mut s = String::new();
        for i in 0..n {
            s.push_str(&format!("extern void f{i}(void);\n"));
        }
        s.push_str(&format!("void *{lib}_table[] = {{\n"));
        for i in 0..n {
            s.push_str(&format!("  (void *)f{i},\n"));
        }
        s.push_str(&format!("}};\nint {lib}_size(void) {{ return {n}; }}\n"));
        s
    };
    common::write(d, "big.c", &table("big", BIG));
    common::write(d, "small.c", &table("small", SMALL));
    common::write(
        d,
        "main.c",
        "int big_size(void); int small_size(void);\nint main(void) { return big_size() + small_size() > 0 ? 0 : 1; }\n",
    );
    common::cc(d, &["-shared", "-fPIC", "-o", "libdefs.so", "defs.c"]);
    for lib in ["big", "small"] {
        common::cc(
            d,
            &[
                "-shared",
                "-fPIC",
                &format!("-Wl,-soname,lib{lib}.so.1"),
                "-o",
                &format!("lib{lib}.so.1"),
                &format!("{lib}.c"),
                "-L.",
                "-ldefs",
                "-Wl,-rpath,$ORIGIN",
            ],
        );
        std::fs::copy(
            d.join(format!("lib{lib}.so.1")),
            d.join(format!("lib{lib}.so")),
        )
        .unwrap();
    }
    common::cc(
        d,
        &[
            "-o",
            "app",
            "main.c",
            "-L.",
            "-lbig",
            "-lsmall",
            "-Wl,-rpath,$ORIGIN",
        ],
    );
    // The oracle: readelf's relocation counts of the two libraries.
    let relocs = |lib: &str| -> u64 { common::readelf_reloc_counts(&d.join(lib)).values().sum() };
    let (big, small) = (relocs("libbig.so.1"), relocs("libsmall.so.1"));
    assert!(
        big > 50 * small,
        "readelf: libbig {big}, libsmall {small} relocations"
    );

    let svg_path = d.join("app.svg");
    let folded_path = d.join("app.folded");
    let Some(run) = sampled_profile(
        name,
        &[
            "--flamegraph",
            svg_path.to_str().unwrap(),
            "--folded",
            folded_path.to_str().unwrap(),
        ],
        &d.join("app"),
        &[],
    ) else {
        return;
    };
    if run.json["profile"]["detail"]["level"] != "debug-symbols" {
        return common::skip(
            name,
            "ld.so's debug symbols are absent: no per-object relocation windows",
        );
    }
    keep(&[&svg_path, &folded_path]);
    let svg = read_svg(&std::fs::read_to_string(&svg_path).unwrap());
    let towers = object_towers(&svg, "relocation");
    eprintln!("relocation towers (samples): {towers:?}");
    let width = |lib: &str| towers.iter().find(|t| t.0 == lib).map_or(0, |t| t.1);
    let (wb, ws) = (width("libbig.so.1"), width("libsmall.so.1"));
    assert!(wb > 0, "no `relocation: libbig.so.1` frame: {towers:?}");
    assert_eq!(towers[0].0, "libbig.so.1", "the widest: {towers:?}");
    assert!(wb > 4 * ws.max(1), "libbig {wb} samples, libsmall {ws}");
    // The folded file carries the same frames, right above the category.
    let folded = std::fs::read_to_string(&folded_path).unwrap();
    let in_folded: u64 = folded
        .lines()
        .filter(|l| l.split(';').nth(2) == Some("relocation: libbig.so.1"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    let own_in_big: u64 = folded
        .lines()
        .filter(|l| l.starts_with("exec;instrumentation;relocation: libbig.so.1;"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(in_folded - own_in_big, wb, "folded against the SVG");
    drop(run.dir);
}

/// `profile --sample --flamegraph` of rustc (the toolchain's own binary, not rustup's proxy):
/// the two widest relocation towers are librustc_driver's and libLLVM's.
#[test]
fn rustc_relocation_towers_are_driver_and_llvm() {
    let name = "rustc_relocation_towers_are_driver_and_llvm";
    let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output();
    let Some(sysroot) = sysroot
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
    else {
        return common::skip(name, "rustc is not installed");
    };
    let rustc = sysroot.join("bin/rustc");
    let libs: Vec<String> = std::fs::read_dir(sysroot.join("lib"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if !libs.iter().any(|l| l.starts_with("librustc_driver"))
        || !libs.iter().any(|l| l.starts_with("libLLVM"))
    {
        return common::skip(
            name,
            &format!(
                "{} has no librustc_driver and libLLVM shared libraries",
                sysroot.join("lib").display()
            ),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let svg_path = dir.path().join("rustc.svg");
    let Some(run) = sampled_profile(
        name,
        &["--flamegraph", svg_path.to_str().unwrap()],
        &rustc,
        &["--version"],
    ) else {
        return;
    };
    if run.json["profile"]["detail"]["level"] != "debug-symbols" {
        return common::skip(
            name,
            "ld.so's debug symbols are absent: no per-object relocation windows",
        );
    }
    keep(&[&svg_path]);
    let svg = read_svg(&std::fs::read_to_string(&svg_path).unwrap());
    let towers = object_towers(&svg, "relocation");
    eprintln!("rustc relocation towers (samples): {towers:?}");
    assert!(towers.len() >= 2, "{towers:?}");
    let mut top: Vec<&str> = towers[..2].iter().map(|t| t.0.as_str()).collect();
    top.sort();
    assert!(
        top[0].starts_with("libLLVM") && top[1].starts_with("librustc_driver"),
        "the two widest: {towers:?}"
    );
    drop(run.dir);
}

/// A program that `dlopen`s a library whose constructor spins, then spins as long in its own
/// code: the constructor's samples are drawn under `dlopen: libafter.so` → `initializers:
/// libafter.so` in the `initializers` category (the loader's work after main, as a start-up
/// constructor is), the program's own spin under `application` with no dlopen frame; the
/// folded file carries the same frames as the SVG, and the legend's `initializers` count is
/// the JSON's.
#[test]
fn a_constructor_dlopen_runs_is_drawn_under_its_library() {
    let name = "a_constructor_dlopen_runs_is_drawn_under_its_library";
    if !common::tools(name, &["cc"]) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let d = work.path();
    common::write(
        d,
        "after.c",
        "volatile double sink;\n\
         __attribute__((constructor)) static void warm(void) {\n\
           for (int i = 0; i < 3000000; i++) sink += i * 0.5;\n\
         }\n",
    );
    common::cc(
        d,
        &["-O1", "-shared", "-fPIC", "-o", "libafter.so", "after.c"],
    );
    common::write(
        d,
        "opener.c",
        "#include <dlfcn.h>\n\
         volatile double own;\n\
         __attribute__((noinline)) static void spin(void) {\n\
           for (int i = 0; i < 3000000; i++) own += i * 0.5;\n\
         }\n\
         int main(int argc, char **argv) {\n\
           if (!dlopen(argv[1], RTLD_NOW)) return 1;\n\
           spin();\n\
           return 0;\n\
         }\n",
    );
    common::cc(
        d,
        &[
            "-O1",
            "-fno-omit-frame-pointer",
            "-o",
            "opener",
            "opener.c",
            "-ldl",
        ],
    );
    let svg_path = d.join("o.svg");
    let folded_path = d.join("o.folded");
    let lib = d.join("libafter.so");
    let Some(run) = sampled_profile(
        name,
        &[
            "--flamegraph",
            svg_path.to_str().unwrap(),
            "--folded",
            folded_path.to_str().unwrap(),
        ],
        &d.join("opener"),
        &[lib.to_str().unwrap()],
    ) else {
        return;
    };
    let recorded = run.json["profile"]["raw"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["after_main"]["opens"].is_array());
    if !recorded {
        return common::skip(
            name,
            "the runs recorded no dlopen after main (no after_main in the JSON's raw runs)",
        );
    }
    keep(&[&svg_path, &folded_path]);
    let folded = std::fs::read_to_string(&folded_path).unwrap();
    let sum = |pred: &dyn Fn(&str) -> bool| -> u64 {
        folded
            .lines()
            .filter(|l| pred(l))
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    let under_ctor = sum(&|l| {
        l.starts_with("exec;initializers;dlopen: libafter.so;initializers: libafter.so;warm")
    });
    let has = |l: &str, frame: &str| l.rsplit_once(' ').unwrap().0.split(';').any(|f| f == frame);
    let warm_all = sum(&|l| has(l, "warm"));
    let spin_app = sum(&|l| l.starts_with("exec;application;") && has(l, "spin"));
    let spin_in_dlopen = sum(&|l| l.contains("dlopen: ") && has(l, "spin"));
    eprintln!("warm: {under_ctor} of {warm_all} under its dlopen; spin: {spin_app} application");
    assert!(under_ctor > 0, "no constructor tower:\n{folded}");
    // Nearly all of the constructor's samples (a few are the kernel's interrupts in it, or
    // ldcost's stops at its window's ends).
    assert!(
        under_ctor * 10 >= warm_all * 9,
        "{under_ctor} of {warm_all}"
    );
    assert!(
        spin_app > 0,
        "the program's own spin is not the application's:\n{folded}"
    );
    assert_eq!(spin_in_dlopen, 0, "the program's spin drawn under a dlopen");
    // The SVG's frames: as wide as the folded file's lines say.
    let svg = read_svg(&std::fs::read_to_string(&svg_path).unwrap());
    let width = |frame: &str| -> u64 {
        svg.frames
            .iter()
            .filter(|(n, _)| n == frame)
            .map(|(_, c)| *c)
            .sum()
    };
    let drawn_dlopen = sum(&|l| {
        l.split(';').nth(2) == Some("dlopen: libafter.so")
            && !l.starts_with("exec;instrumentation;")
    });
    assert_eq!(width("dlopen: libafter.so"), drawn_dlopen);
    // The legend's initializers are the JSON's, the constructor's samples among them.
    let b = &run.json["profile"]["breakdown"];
    let json_init = b["categories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["label"] == "initializers")
        .and_then(|c| c["samples"].as_u64())
        .expect("an initializers category");
    let legend = svg
        .entries
        .iter()
        .find(|e| e.0 == "initializers")
        .expect("initializers in the legend");
    assert_eq!(legend.2, json_init);
    assert!(json_init >= under_ctor);
    drop(run.dir);
}
