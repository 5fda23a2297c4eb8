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
            "/tmp/forktest (dynamic, -lm -lresolv -lssl -lcrypto), 20 runs, {total} samples at 20 kHz"
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
    for key in ["png:", "search:", "zoom:", "reset:", "legend:"] {
        assert!(stdout.contains(key), "no `{key}` line in:\n{stdout}");
    }
    let entries = format!("legend: {} entries", Category::ALL.len());
    assert!(stdout.contains(&entries), "{stdout}");
    assert!(std::fs::metadata(&out.png).unwrap().len() > 10_000);
}
