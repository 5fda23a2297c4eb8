//! Tests against the system: `/etc/ld.so.cache` against `ldconfig -p`, caches `ldconfig`
//! builds in a temp root, and the real ld.so in a chroot. In: this machine's tools. Out: pass,
//! fail, or a printed SKIP (a failure under LDCOST_REQUIRE_ALL) when a tool is missing.

use super::*;

/// The system's /etc/ld.so.cache, parsed, and what `ldconfig -p` prints of it; or why a test
/// against them cannot run here.
fn system_cache() -> Result<(LdCache, LdconfigListing), &'static str> {
    let ldconfig = ldconfig().ok_or("ldconfig not found")?;
    let path = Path::new("/etc/ld.so.cache");
    if !path.is_file() {
        return Err("/etc/ld.so.cache does not exist");
    }
    let cache = LdCache::load(path).expect("the system cache parses");
    Ok((cache, ldconfig_p(&ldconfig, None)))
}

/// Test 1: the real cache parses to exactly what `ldconfig -p` prints.
#[test]
fn real_cache_matches_ldconfig_p() {
    const TEST: &str = "real_cache_matches_ldconfig_p";
    let (cache, listing) = match system_cache() {
        Ok(found) => found,
        Err(why) => return skip(TEST, why),
    };
    assert!(!listing.lines.is_empty());
    assert_matches_ldconfig(&cache, &listing);
    // Field by field too (the split of ldconfig's line).
    for (entry, line) in cache.entries().iter().zip(&listing.lines) {
        let (key, descr, p) = split_line(line);
        assert_eq!((entry.key.as_str(), entry.path.as_str()), (key, p));
        assert_eq!(cache.describe(entry), descr);
    }
    // ldconfig sorted the file with the same comparison we search with.
    for pair in cache.entries().windows(2) {
        assert!(
            dl_cache_libcmp(pair[0].key.as_bytes(), pair[1].key.as_bytes()) >= 0,
            "{} before {}",
            pair[0].key,
            pair[1].key
        );
    }
}

/// Test 2: every key of the real cache is looked up as ld.so would.
#[test]
fn real_cache_lookup_matches_ldconfig_oracle() {
    const TEST: &str = "real_cache_lookup_matches_ldconfig_oracle";
    if !cfg!(target_arch = "x86_64") {
        return skip(TEST, "the oracle is written for x86-64 flags");
    }
    let (cache, listing) = match system_cache() {
        Ok(found) => found,
        Err(why) => return skip(TEST, why),
    };
    // The active subdirectories as the system's ld.so reports them.
    let interp = Path::new("/lib64/ld-linux-x86-64.so.2");
    let active: Vec<String> = if interp.is_file() {
        let help = run(Command::new(interp).arg("--help").env("LC_ALL", "C"));
        active_hwcaps(&String::from_utf8_lossy(&help))
    } else {
        eprintln!(
            "{TEST}: no {}, assuming no active glibc-hwcaps",
            interp.display()
        );
        Vec::new()
    };
    let active_refs: Vec<&str> = active.iter().map(String::as_str).collect();

    // Oracle from ldconfig's text: per key, among ",x86-64" lines, the hwcaps line
    // with the best active subdirectory, else the first line without hwcap.  (The
    // text does not show ISA levels; a stock system cache has no hwcaps entries, and
    // the chroot test below covers them with the real ld.so.)
    let mut order = Vec::new();
    let mut by_key: HashMap<&str, Vec<(&str, &str)>> = HashMap::new();
    for line in &listing.lines {
        let (key, descr, p) = split_line(line);
        if !by_key.contains_key(key) {
            order.push(key);
        }
        by_key.entry(key).or_default().push((descr, p));
    }
    let mut checked = 0;
    for key in order {
        let candidates = &by_key[key];
        let hwcaps_pick = candidates
            .iter()
            .filter(|(d, _)| d.starts_with("libc6,x86-64, hwcap: \""))
            .filter_map(|(d, p)| {
                let name = d.split('"').nth(1)?;
                let rank = active_refs.iter().position(|a| *a == name)?;
                Some((rank, *p))
            })
            .min_by_key(|(rank, _)| *rank)
            .map(|(_, p)| p);
        let expected = hwcaps_pick.or_else(|| {
            candidates
                .iter()
                .find(|(d, _)| *d == "libc6,x86-64")
                .map(|(_, p)| *p)
        });
        assert_eq!(
            cache.lookup(key, FLAGS_X86_64_LIBC6, &active_refs),
            expected,
            "lookup of {key}"
        );
        checked += 1;
    }
    assert!(checked > 0, "no keys in the system cache");
}

/// Files for a temp root: `d/libfoo.so.1` in plain, v2 and v3 flavours.
fn build_hwcaps_libs(cc: &Path, root: &Path) {
    let src = root.join("foo.c");
    std::fs::write(&src, "int foo(void) { return 1; }\n").unwrap();
    for dir in ["d", "d/glibc-hwcaps/x86-64-v2", "d/glibc-hwcaps/x86-64-v3"] {
        let dir = root.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        run(Command::new(cc)
            .args(["-shared", "-fPIC", "-Wl,-soname,libfoo.so.1", "-o"])
            .arg(dir.join("libfoo.so.1"))
            .arg(&src));
    }
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(root.join("etc/ld.so.conf"), "/d\n").unwrap();
}

/// Test 3: a cache built by ldconfig over glibc-hwcaps subdirectories.
#[test]
fn ldconfig_built_cache_selects_hwcaps_subdirs() {
    const TEST: &str = "ldconfig_built_cache_selects_hwcaps_subdirs";
    let Some(ldconfig) = ldconfig() else {
        return skip(TEST, "ldconfig not found");
    };
    let Some(cc) = cc() else {
        return skip(TEST, "cc not found");
    };
    let tmp = TempDir::new("hwcaps");
    let root = tmp.path();
    build_hwcaps_libs(&cc, root);
    // `-r` keeps everything (also ldconfig's aux cache) inside the temp root.
    for (format, file) in [
        ("new", "new.cache"),
        ("compat", "compat.cache"),
        ("old", "old.cache"),
    ] {
        run(Command::new(&ldconfig)
            .arg("-r")
            .arg(root)
            .args(["-X", "-c", format, "-C"])
            .arg(format!("/etc/{file}")));
    }
    let (v2_path, v3_path, plain_path) = (
        "/d/glibc-hwcaps/x86-64-v2/libfoo.so.1",
        "/d/glibc-hwcaps/x86-64-v3/libfoo.so.1",
        "/d/libfoo.so.1",
    );
    let (v2, v3, plain) = (Some(v2_path), Some(v3_path), Some(plain_path));

    let new_path = root.join("etc/new.cache");
    let new = LdCache::load(&new_path).unwrap();
    assert_eq!(new.format(), CacheFormat::New);
    let foo: Vec<(&str, Option<&str>)> = new
        .entries()
        .iter()
        .filter(|e| e.key == "libfoo.so.1")
        .map(|e| (e.path.as_str(), new.hwcaps_subdir(e)))
        .collect();
    assert_eq!(
        foo,
        [
            (v2_path, Some("x86-64-v2")),
            (v3_path, Some("x86-64-v3")),
            (plain_path, None),
        ]
    );
    assert_eq!(
        new.lookup("libfoo.so.1", X, &["x86-64-v3", "x86-64-v2"]),
        v3
    );
    assert_eq!(new.lookup("libfoo.so.1", X, &["x86-64-v2"]), v2);
    assert_eq!(new.lookup("libfoo.so.1", X, &[]), plain);
    assert_matches_ldconfig(&new, &ldconfig_p(&ldconfig, Some(&new_path)));

    // Compat: ld.so and ldconfig -p read the hwcaps names from the wrong base.
    let compat_path = root.join("etc/compat.cache");
    let compat = LdCache::load(&compat_path).unwrap();
    assert_eq!(compat.format(), CacheFormat::Compat);
    assert_matches_ldconfig(&compat, &ldconfig_p(&ldconfig, Some(&compat_path)));
    assert_eq!(
        compat.lookup("libfoo.so.1", X, &["x86-64-v3", "x86-64-v2"]),
        plain
    );

    // Old: no hwcap information survives; file order decides.
    let old_path = root.join("etc/old.cache");
    let old = LdCache::load(&old_path).unwrap();
    assert_eq!(old.format(), CacheFormat::Old);
    assert_matches_ldconfig(&old, &ldconfig_p(&ldconfig, Some(&old_path)));
    assert_eq!(old.lookup("libfoo.so.1", X, &["x86-64-v3"]), v2);

    // Test 4b: every prefix of these real files that lacks needed data is malformed.
    for file in [&new_path, &compat_path, &old_path] {
        let bytes = std::fs::read(file).unwrap();
        assert_prefixes_malformed(&bytes, &file.display().to_string());
    }
}

/// Test 4: prefixes of the real system cache.
#[test]
fn truncated_system_cache_is_malformed() {
    const TEST: &str = "truncated_system_cache_is_malformed";
    let path = Path::new("/etc/ld.so.cache");
    let Ok(bytes) = std::fs::read(path) else {
        return skip(TEST, "/etc/ld.so.cache cannot be read");
    };
    parse(&bytes).expect("the full system cache parses");
    for len in 0..bytes.len().min(4096) {
        assert_malformed(&bytes[..len], &format!("system cache cut at {len}"));
    }
    // Cuts spread over the rest of the file, and just before the end.
    let mut len = 4096;
    while len < bytes.len() {
        assert_malformed(&bytes[..len], &format!("system cache cut at {len}"));
        len += 97;
    }
    for len in bytes.len().saturating_sub(64)..bytes.len() {
        assert_malformed(&bytes[..len], &format!("system cache cut at {len}"));
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// The `x86 ISA needed:` property of `file`, as `readelf -nW` prints it; `None` when readelf
/// is missing or the file has no such note.
fn isa_needed(file: &Path) -> Option<String> {
    let readelf = find_tool("readelf", &["/usr/bin/readelf"])?;
    let out = Command::new(readelf).arg("-nW").arg(file).output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| Some(l.split_once("x86 ISA needed:")?.1.trim().to_string()))
}

/// The first line a tool prints about its version, for a skip message. With `via_cc`, `cmd`
/// prints the path of the tool (`cc -print-prog-name=ld`), which is then asked `--version`.
fn tool_version(cmd: &mut Command, via_cc: bool) -> String {
    let first_line = |cmd: &mut Command| -> Option<String> {
        let out = cmd.output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        Some(text.lines().next()?.trim().to_string())
    };
    let line = if via_cc {
        first_line(cmd).and_then(|tool| first_line(Command::new(tool).arg("--version")))
    } else {
        first_line(cmd)
    };
    line.unwrap_or_else(|| format!("{cmd:?}: no version"))
}

/// Test 5: the real ld.so, in a chroot whose /etc/ld.so.cache we built, picks what
/// `lookup_with` picks, for the three layouts and several `--glibc-hwcaps-mask`s,
/// including a v3 library that needs ISA level x86-64-v4.
#[test]
fn ld_so_in_chroot_agrees_with_lookup() {
    const TEST: &str = "ld_so_in_chroot_agrees_with_lookup";
    if !cfg!(target_arch = "x86_64") {
        return skip(TEST, "written for x86-64");
    }
    let Some(ldconfig) = ldconfig() else {
        return skip(TEST, "ldconfig not found");
    };
    let Some(cc) = cc() else {
        return skip(TEST, "cc not found");
    };
    let Some(chroot) = find_tool("chroot", &["/usr/sbin/chroot", "/sbin/chroot"]) else {
        return skip(TEST, "chroot not found");
    };
    if !is_root() {
        return skip(TEST, "chroot needs root");
    }
    let interp = Path::new("/lib64/ld-linux-x86-64.so.2");
    let system = match LdCache::load(Path::new("/etc/ld.so.cache")) {
        Ok(cache) => cache,
        Err(e) => return skip(TEST, &format!("no system cache to find libc: {e}")),
    };
    let Some(libc) = system.lookup("libc.so.6", X, &[]).map(PathBuf::from) else {
        return skip(TEST, "libc.so.6 is not in the system cache");
    };
    if !interp.is_file() {
        return skip(TEST, "no /lib64/ld-linux-x86-64.so.2");
    }

    let tmp = TempDir::new("chroot");
    let root = tmp.path();
    build_hwcaps_libs(&cc, root);
    // libbar: the v3 flavour is marked as needing x86-64-v4.
    let bar = root.join("bar.c");
    std::fs::write(&bar, "int bar(void) { return 2; }\n").unwrap();
    for (dir, extra) in [
        ("d", None),
        ("d/glibc-hwcaps/x86-64-v2", None),
        ("d/glibc-hwcaps/x86-64-v3", Some("-Wl,-z,x86-64-v4")),
    ] {
        let mut cmd = Command::new(&cc);
        cmd.args(["-shared", "-fPIC", "-Wl,-soname,libbar.so.1"]);
        cmd.args(extra);
        run(cmd
            .arg("-o")
            .arg(root.join(dir).join("libbar.so.1"))
            .arg(&bar));
    }
    // `-z x86-64-v4` is a recent linker option (an older ld ignores or rejects it): ask the
    // built file whether the marker is there rather than assuming a binutils version.
    let v3_bar = root.join("d/glibc-hwcaps/x86-64-v3/libbar.so.1");
    match isa_needed(&v3_bar) {
        Some(isa) if isa.contains("x86-64-v4") => {}
        found => {
            let ld = tool_version(Command::new(&cc).arg("-print-prog-name=ld"), true);
            return skip(
                TEST,
                &format!("the linker ({ld}) did not mark libbar x86-64-v4 (readelf -n: {found:?})"),
            );
        }
    }
    let main = root.join("main.c");
    std::fs::write(
        &main,
        "int foo(void); int bar(void);\nint main(void) { return foo() + bar() - 3; }\n",
    )
    .unwrap();
    run(Command::new(&cc)
        .arg("-o")
        .arg(root.join("prog"))
        .arg(&main)
        .arg("-L")
        .arg(root.join("d"))
        .args(["-l:libfoo.so.1", "-l:libbar.so.1"]));
    let copy_in = |host: &Path| {
        let inside = root.join(host.strip_prefix("/").unwrap());
        std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
        std::fs::copy(host, &inside).unwrap();
    };
    copy_in(interp);
    copy_in(&libc);

    let ld_so = |args: &[&str]| -> String {
        let mut cmd = Command::new(&chroot);
        cmd.env_clear()
            .env("LC_ALL", "C")
            .arg(root)
            .arg("/lib64/ld-linux-x86-64.so.2");
        String::from_utf8_lossy(&run(cmd.args(args))).into_owned()
    };
    // `--list-diagnostics` and `--glibc-hwcaps-mask` are options of recent ld.so builds: ask
    // this one rather than assuming a glibc version.
    let probe = Command::new(interp)
        .args(["--list-diagnostics"])
        .env("LC_ALL", "C")
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        let version = tool_version(Command::new(interp).arg("--version"), false);
        return skip(TEST, &format!("{version} has no --list-diagnostics"));
    }
    // The CPU facts of this ld.so (not affected by the hwcaps mask).
    let diagnostics = ld_so(&["--list-diagnostics"]);
    let diag = |name: &str| -> Option<u64> {
        diagnostics.lines().find_map(|l| {
            let v = l.strip_prefix(name)?.strip_prefix('=')?;
            u64::from_str_radix(v.trim_start_matches("0x"), 16).ok()
        })
    };
    let isa_1 = diag("x86.cpu_features.isa_1").map(|v| v as u32);
    let hwcap = diag("dl_hwcap").unwrap_or(X86_HWCAP_X86_64)
        & diag("dl_hwcap_important").unwrap_or(X86_64_HWCAP_IMPORTANT);
    let platform = match diag("dl_string_platform") {
        Some(p) if p < 64 => 1u64 << p,
        _ => PLATFORM_UNKNOWN,
    };

    let mut compared = 0;
    for format in ["new", "compat", "old"] {
        run(Command::new(&ldconfig)
            .arg("-r")
            .arg(root)
            .args(["-X", "-c", format]));
        let cache = LdCache::load(&root.join("etc/ld.so.cache")).unwrap();
        for mask in [None, Some("x86-64-v2"), Some("x86-64-v3"), Some("")] {
            let mut prefix: Vec<&str> = Vec::new();
            if let Some(mask) = mask {
                prefix.extend(["--glibc-hwcaps-mask", mask]);
            }
            let help = ld_so(&[prefix.as_slice(), &["--help"]].concat());
            let active = active_hwcaps(&help);
            let active_refs: Vec<&str> = active.iter().map(String::as_str).collect();
            let listing = ld_so(&[prefix.as_slice(), &["--list", "/prog"]].concat());
            let options = LookupOptions {
                isa_1: isa_1.or(Some(x86_isa_1_for_hwcaps(&active_refs))),
                hwcap,
                platform,
                ..LookupOptions::x86_64(&active_refs)
            };
            for lib in ["libfoo.so.1", "libbar.so.1"] {
                let loaded = listing
                    .lines()
                    .find_map(|l| l.trim().strip_prefix(lib)?.strip_prefix(" => "))
                    .and_then(|rest| rest.split(" (0x").next())
                    .unwrap_or_else(|| panic!("{lib} not in ld.so --list:\n{listing}"));
                assert_eq!(
                    cache.lookup_with(lib, &options),
                    Some(loaded),
                    "{lib}, {format} cache, mask {mask:?}, active {active:?}"
                );
                if mask.is_none() {
                    // The simple API derives isa_1 from the list; unmasked, that is
                    // the CPU's.
                    assert_eq!(cache.lookup(lib, X, &active_refs), Some(loaded));
                }
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 24);
}
