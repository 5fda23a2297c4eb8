//! `ldcost deps` over a whole tree: unused direct dependencies against `ldd -u -r` on the
//! system's own programs, the ranking, JSON Lines, and bad input counted and skipped.

mod common;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use ldcost::deps::{self, OriginMode, ResolveOptions, SearchRules};

/// The paths `ldd -u -r target` lists as unused direct dependencies; None when ldd does not
/// list dependencies for it (static, not dynamic, refused).
fn ldd_unused(target: &Path) -> Option<BTreeSet<String>> {
    let out = Command::new("ldd")
        .args(["-u", "-r"])
        .arg(target)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .env_remove("LD_PRELOAD")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    if text.contains("not a dynamic executable") || err.contains("not a dynamic executable") {
        return None;
    }
    let mut set = BTreeSet::new();
    let mut inside = false;
    for l in text.lines() {
        if l.starts_with("Unused direct dependencies") {
            inside = true;
        } else if inside && l.starts_with(char::is_whitespace) && !l.trim().is_empty() {
            set.insert(l.trim().to_string());
        } else {
            inside = false;
        }
    }
    Some(set)
}

fn is_elf(p: &Path) -> bool {
    use std::io::Read;
    let mut b = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
        && &b == b"\x7fELF"
}

/// The ELF regular files of /usr/bin (not symlinks, not setuid: ldd refuses to trace those
/// for an ordinary user and they need no special case here), sorted; every one with
/// LDCOST_FULL_SWEEP set, else `n` spread evenly.
fn usr_bin_sample(n: usize) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir("/usr/bin") else {
        return Vec::new();
    };
    let mut all: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            std::fs::symlink_metadata(p)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o6000 == 0)
                && is_elf(p)
        })
        .collect();
    all.sort();
    if std::env::var_os("LDCOST_FULL_SWEEP").is_some() || all.len() <= n {
        return all;
    }
    let step = all.len() / n;
    all.into_iter().step_by(step.max(1)).take(n).collect()
}

/// Unused direct dependencies equal `ldd -u -r`'s on a deterministic sample of /usr/bin (40
/// executables; every one with LDCOST_FULL_SWEEP=1, as scripts/oracle-sweep runs it).
/// Prints "N files, M agree" and every mismatch with its file.
#[test]
fn unused_equal_ldd_over_usr_bin() {
    let name = "unused_equal_ldd_over_usr_bin";
    if !tools(name, &["ldd"]) {
        return;
    }
    let targets = usr_bin_sample(40);
    if targets.is_empty() {
        return skip(name, "no ELF executables in /usr/bin");
    }
    let opts = ResolveOptions {
        ld_library_path: None,
        bind_now: false,
        rules: Some(SearchRules::detect(deps::DEFAULT_INTERP)),
        // ldd runs ld.so on the path as given; compare like with like.
        origin: OriginMode::AsGiven,
        ..ResolveOptions::from_env()
    };
    let (mut files, mut agree, mut mismatches) = (0, 0, Vec::<String>::new());
    for t in &targets {
        let Some(theirs) = ldd_unused(t) else {
            continue;
        };
        let c = match deps::resolve(t, &opts) {
            Ok(c) => c,
            Err(e) => {
                mismatches.push(format!("{}: resolve failed: {e}", t.display()));
                continue;
            }
        };
        if !c.missing.is_empty() {
            // ldd stops at a missing library; there is nothing to compare.
            continue;
        }
        files += 1;
        let ours: BTreeSet<String> = deps::unused_direct_of_target(&c)
            .into_iter()
            .filter_map(|u| u.needed_path.map(|p| p.to_string_lossy().into_owned()))
            .collect();
        if ours == theirs {
            agree += 1;
        } else {
            mismatches.push(format!(
                "{}: ldcost {ours:?} != ldd -u -r {theirs:?}",
                t.display()
            ));
        }
    }
    println!("{files} files, {agree} agree");
    for m in &mismatches {
        println!("MISMATCH {m}");
    }
    assert!(files > 0, "no file of /usr/bin could be compared");
    assert!(
        mismatches.is_empty(),
        "{} of {files} differ from ldd -u -r:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// The JSON Lines of `deps PATHS --json -`, each line parsed on its own: the file records in
/// order, and the summary (which must be the last line).
fn json_lines(args: &[&str]) -> (Vec<serde_json::Value>, serde_json::Value) {
    let mut a = vec!["deps"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--json", "-"]);
    let out = ldcost(&a);
    assert_eq!(out.code, 0, "ldcost {a:?}: {}", out.stderr);
    let mut files = Vec::new();
    let mut summary = None;
    for (i, line) in out.stdout.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("line {} is not one JSON document ({e}): {line}", i + 1));
        match v["record"].as_str() {
            Some("file") => {
                assert!(summary.is_none(), "a file line after the summary: {line}");
                files.push(v);
            }
            Some("summary") => summary = Some(v),
            other => panic!("line {}: record {other:?}", i + 1),
        }
    }
    (files, summary.expect("a summary line"))
}

/// A directory of everything a scan must survive, counted by reason, never aborting: text,
/// a 0-byte .so, a truncated ELF, a foreign-architecture ELF, a broken symlink, a symlink
/// loop, an unreadable file (when run as nobody), and one program reached by its own path and
/// two symlinks (analysed once).
#[test]
fn bad_input_is_counted_and_skipped() {
    let name = "bad_input_is_counted_and_skipped";
    if !tools(name, &["cc"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    write(d, "main.c", "int main(void) { return 0; }\n");
    cc(d, &["-o", "prog", "main.c"]);
    std::fs::write(d.join("notes.txt"), "not an ELF file\n").unwrap();
    std::fs::write(d.join("libempty.so"), b"").unwrap();
    let elf = std::fs::read(d.join("prog")).unwrap();
    std::fs::write(d.join("libtrunc.so"), &elf[..100]).unwrap();
    // e_machine (offset 18) set to EM_ARM (40) on a 64-bit header: another machine's object.
    let mut foreign = elf.clone();
    foreign[18] = 40;
    foreign[19] = 0;
    std::fs::write(d.join("foreign"), &foreign).unwrap();
    std::os::unix::fs::symlink(d.join("nowhere"), d.join("broken")).unwrap();
    std::os::unix::fs::symlink(d.join("loop"), d.join("loop")).unwrap();
    std::os::unix::fs::symlink(d.join("prog"), d.join("alias1")).unwrap();
    std::os::unix::fs::symlink("prog", d.join("alias2")).unwrap();
    let dir = d.to_str().unwrap();
    let (files, summary) = json_lines(&[dir]);
    let real = std::fs::canonicalize(d.join("prog")).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    // Named by the first path the scan reached (entries sorted), with the other two listed.
    assert_eq!(files[0]["path"], d.join("alias1").to_str().unwrap());
    assert_eq!(files[0]["real_path"], real.to_str().unwrap());
    assert_eq!(
        files[0]["aliases"],
        serde_json::json!([d.join("alias2"), d.join("prog")])
    );
    assert_eq!(summary["analysed"], 1);
    assert_eq!(summary["links_merged"], 2);
    let skipped = &summary["skipped"];
    for (reason, n) in [
        ("not ELF", 2), // notes.txt and the fixture's own main.c
        ("empty (0 bytes)", 1),
        ("truncated or malformed ELF", 1),
        ("foreign architecture", 1),
        ("broken symlink", 1),
        ("symlink loop", 1),
    ] {
        assert_eq!(skipped[reason], n, "{reason}: {skipped}");
    }
    // Text too: exit 0 and the reasons listed.
    let out = ldcost(&["deps", dir]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("symlink loop"), "{}", out.stdout);

    // Unreadable: only another user can be refused a file root owns.
    if !running_as_root() || !have("setpriv") {
        return skip(
            name,
            "the unreadable case needs root and setpriv (to scan as nobody)",
        );
    }
    let user = match as_user_binary() {
        Ok(u) => u,
        Err(e) => return skip(name, &e),
    };
    let prog = user.copy(&d.join("prog"), "prog");
    let secret = user.copy(&d.join("prog"), "secret");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    let out = user
        .command()
        .args(["deps", user.path().to_str().unwrap(), "--json", "-"])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["skipped"]["unreadable"], 1, "{text}");
    assert!(text.contains(prog.to_str().unwrap()), "{text}");
}

/// The ranking follows the predicted start-up lookups on programs whose count is set by
/// construction (each calls K functions of one library, linked -z now so every call is a
/// start-up lookup), and the counts differ by exactly what was built in.
#[test]
fn ranking_follows_the_built_in_link_cost() {
    let name = "ranking_follows_the_built_in_link_cost";
    if !tools(name, &["cc"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let mut lib = String::new();
    for i in 0..40 {
        lib.push_str(&format!("int f{i}(int x) {{ return x + {i}; }}\n"));
    }
    write(d, "lib.c", &lib);
    cc(d, &["-shared", "-fPIC", "-o", "libmany.so", "lib.c"]);
    for k in [1usize, 8, 30] {
        let mut src = String::new();
        for i in 0..k {
            src.push_str(&format!("int f{i}(int);\n"));
        }
        src.push_str("int main(int c, char **v) { (void)v; int s = 0;\n");
        for i in 0..k {
            src.push_str(&format!("  s += f{i}(c);\n"));
        }
        src.push_str("  return s == 12345; }\n");
        write(d, &format!("p{k}.c"), &src);
        cc(
            d,
            &[
                "-o",
                &format!("p{k}"),
                &format!("p{k}.c"),
                "-L.",
                "-lmany",
                "-Wl,-z,now",
                "-Wl,-rpath,$ORIGIN",
            ],
        );
    }
    let paths: Vec<String> = [30, 1, 8]
        .iter()
        .map(|k| d.join(format!("p{k}")).to_string_lossy().into_owned())
        .collect();
    let args: Vec<&str> = paths.iter().map(String::as_str).collect();
    let (files, summary) = json_lines(&args);
    assert_eq!(summary["analysed"], 3);
    let order: Vec<String> = files
        .iter()
        .map(|f| {
            Path::new(f["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(order, ["p30", "p8", "p1"]);
    let lookups: Vec<i64> = files
        .iter()
        .map(|f| f["lookups"].as_i64().unwrap())
        .collect();
    assert_eq!(lookups[0] - lookups[1], 22, "{lookups:?}");
    assert_eq!(lookups[1] - lookups[2], 7, "{lookups:?}");
    let ranks: Vec<i64> = files.iter().map(|f| f["rank"].as_i64().unwrap()).collect();
    assert_eq!(ranks, [1, 2, 3]);
    // The text table shows the same order.
    let out = ldcost(&["deps", args[0], args[1], args[2]]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let table = &out.stdout[out.stdout.find("Ranked").expect("the ranked table")..];
    let at = |n: &str| table.find(&format!("/{n} ")).unwrap_or(usize::MAX);
    assert!(
        at("p30") < at("p8") && at("p8") < at("p1"),
        "{}",
        out.stdout
    );
}

/// A bare name is looked up in $PATH as `profile` does: the document's target is the file
/// `which` finds.
#[test]
fn bare_name_is_looked_up_in_path() {
    let name = "bare_name_is_looked_up_in_path";
    if !tools(name, &["which"]) {
        return;
    }
    let want = stdout_of("which", &["true"]).trim().to_string();
    if want.is_empty() {
        return skip(name, "`which true` finds nothing in PATH");
    }
    let out = ldcost(&["deps", "true", "--json", "-"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["target"], want.as_str());
}

/// The valid ELF files that are not programs or shared objects are each counted under their
/// own reason, never as malformed: an object file, a static archive, separate debug-info files
/// (`objcopy --only-keep-debug`, as /usr/lib/debug holds them) of a program and of a library,
/// and a core file. Only the truncated library is "malformed". Oracle: readelf's own reading
/// of each fixture (its type, the executable segment with no bytes in the file, the complaint
/// about the truncated one).
#[test]
fn elf_kinds_are_counted_by_reason_not_as_malformed() {
    let name = "elf_kinds_are_counted_by_reason_not_as_malformed";
    if !tools(name, &["cc", "ar", "objcopy", "readelf"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    let d = t.path().join("scan");
    std::fs::create_dir_all(&d).unwrap();
    write(&src, "lib.c", "int f(int x) { return x + 1; }\n");
    write(&src, "main.c", "int main(void) { return 0; }\n");
    cc(
        &src,
        &["-g", "-shared", "-fPIC", "-o", "../scan/libf.so", "lib.c"],
    );
    cc(&src, &["-g", "-o", "../scan/prog", "main.c"]);
    cc(&src, &["-c", "-fPIC", "-o", "../scan/f.o", "lib.c"]);
    let run = |cmd: &str, args: &[&str]| {
        let out = Command::new(cmd).args(args).output().unwrap();
        assert!(out.status.success(), "{cmd} {args:?}: {out:?}");
    };
    let at = |n: &str| d.join(n).to_string_lossy().into_owned();
    run("ar", &["rcs", &at("libf.a"), &at("f.o")]);
    run(
        "objcopy",
        &["--only-keep-debug", &at("libf.so"), &at("libf.so.debug")],
    );
    run(
        "objcopy",
        &["--only-keep-debug", &at("prog"), &at("prog.debug")],
    );
    let lib = std::fs::read(d.join("libf.so")).unwrap();
    std::fs::write(d.join("libtrunc.so"), &lib[..lib.len() / 2]).unwrap();
    // e_type (offset 16) set to ET_CORE: what a core dump's header says.
    let mut core = std::fs::read(d.join("prog")).unwrap();
    core[16] = 4;
    core[17] = 0;
    std::fs::write(d.join("core"), &core).unwrap();

    // The oracle's reading of each fixture.
    let header = |n: &str| stdout_of("readelf", &["-hW", &at(n)]);
    assert!(header("f.o").contains("REL (Relocatable file)"));
    assert!(header("core").contains("CORE (Core file)"));
    assert!(std::fs::read(d.join("libf.a"))
        .unwrap()
        .starts_with(b"!<arch>\n"));
    for dbg in ["libf.so.debug", "prog.debug"] {
        // "LOAD off vaddr paddr filesz memsz flags align": an R E segment with no file bytes.
        let segs = stdout_of("readelf", &["-lW", &at(dbg)]);
        let empty_code = segs.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.first() == Some(&"LOAD")
                && w.get(4)
                    .is_some_and(|f| u64::from_str_radix(&f[2..], 16) == Ok(0))
                && w.get(6) == Some(&"R")
                && w.get(7) == Some(&"E")
        });
        assert!(
            empty_code,
            "{dbg}: readelf shows no empty code segment:\n{segs}"
        );
    }
    let trunc = Command::new("readelf")
        .args(["-lW", &at("libtrunc.so")])
        .output()
        .unwrap();
    assert!(
        !trunc.stderr.is_empty(),
        "readelf accepts the truncated library"
    );

    let (files, summary) = json_lines(&[d.to_str().unwrap()]);
    let mut analysed: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    analysed.sort();
    assert_eq!(analysed, [at("libf.so"), at("prog")], "{summary}");
    let skipped = summary["skipped"].as_object().unwrap();
    let want = serde_json::json!({
        "relocatable object (.o, .ko)": 1,
        "static archive (ar)": 1,
        "separate debug info (no code in the file)": 2,
        "core dump": 1,
        "truncated or malformed ELF": 1,
    });
    assert_eq!(serde_json::Value::Object(skipped.clone()), want);

    // One debug file on its own: exit 6 (an ELF ldcost does not analyse), not 5 (malformed).
    let out = ldcost(&["deps", &at("libf.so.debug")]);
    assert_eq!(out.code, 6, "{}", out.stderr);
    assert!(
        out.stderr.contains("separate debug-info file"),
        "{}",
        out.stderr
    );
}

/// A tree scan names each file by the path it was scanned under, lists the other paths of the
/// same file (symlinks and hard links) and counts them in the summary, in text and JSON
/// Lines. Oracle: the links made by the test, and `stat`'s device and inode for the hard link.
#[test]
fn links_are_named_as_scanned_and_listed() {
    let name = "links_are_named_as_scanned_and_listed";
    if !tools(name, &["cc", "stat"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    let real = t.path().join("real");
    let bin = t.path().join("bin");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    write(&src, "main.c", "int main(void) { return 0; }\n");
    cc(&src, &["-o", "../real/tool-1.2", "main.c"]);
    cc(&src, &["-o", "../bin/other", "main.c"]);
    // bin/tool -> ../real/tool-1.2 (outside the scanned directory), bin/tool-1 -> tool,
    // bin/zz-hard: a hard link of the real file; bin/other: a file of its own.
    std::os::unix::fs::symlink("../real/tool-1.2", bin.join("tool")).unwrap();
    std::os::unix::fs::symlink("tool", bin.join("tool-1")).unwrap();
    std::fs::hard_link(real.join("tool-1.2"), bin.join("zz-hard")).unwrap();
    for extra in ["a-1", "a-2", "a-3", "a-4"] {
        std::os::unix::fs::symlink("other", bin.join(extra)).unwrap();
    }
    let id = |p: &Path| stdout_of("stat", &["-L", "-c", "%d:%i", p.to_str().unwrap()]);
    assert_eq!(id(&bin.join("zz-hard")), id(&real.join("tool-1.2")));
    assert_ne!(id(&bin.join("other")), id(&real.join("tool-1.2")));

    let b = |n: &str| bin.join(n).to_string_lossy().into_owned();
    let (files, summary) = json_lines(&[bin.to_str().unwrap()]);
    let by_path: std::collections::BTreeMap<&str, &serde_json::Value> = files
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f))
        .collect();
    let names: Vec<&str> = by_path.keys().copied().collect();
    // a-1 sorts before other; tool before tool-1 and zz-hard.
    assert_eq!(names, [b("a-1"), b("tool")], "{files:?}");
    let tool = by_path[b("tool").as_str()];
    assert_eq!(
        tool["aliases"],
        serde_json::json!([b("tool-1"), b("zz-hard")])
    );
    let real_tool = std::fs::canonicalize(real.join("tool-1.2")).unwrap();
    assert_eq!(tool["real_path"], real_tool.to_str().unwrap());
    let a1 = by_path[b("a-1").as_str()];
    assert_eq!(
        a1["aliases"],
        serde_json::json!([b("a-2"), b("a-3"), b("a-4"), b("other")])
    );
    assert_eq!(summary["links_merged"], 6, "{summary}");
    assert_eq!(summary["analysed"], 2, "{summary}");

    // Text: the same names, the aliases listed (or counted past three), and the summary line.
    let out = ldcost(&["deps", bin.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .lines()
            .next()
            .is_some_and(|l| l.contains("2 ELF files analysed") && l.contains("6 links")),
        "{}",
        out.stdout
    );
    let row = |n: &str| {
        out.stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(&b(n)))
            .unwrap_or_else(|| panic!("no row for {n}:\n{}", out.stdout))
            .to_string()
    };
    assert!(
        row("tool").trim_end().ends_with("tool-1, zz-hard"),
        "{}",
        out.stdout
    );
    assert!(row("a-1").trim_end().ends_with("4 links"), "{}", out.stdout);
}
