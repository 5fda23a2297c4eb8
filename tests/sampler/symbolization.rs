//! Without root: symbolization of hand-built recordings (inheritance at fork, replacement at
//! exec), the recording's JSON, and a million frames.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use ldcost::perf::sampler::{
    read_proc_maps, symbolize, FrameKind, MapRange, MmapEvent, Recording, Sample, Scope,
    Symbolizer, TaskKind,
};
use ldcost::symbolize::default_debug_roots;

use crate::common;
use crate::harness::*;

// ---- Without root: symbolization of hand-built recordings, serde, speed. ----

/// The runtime address of `spin_here` in a mapping of `spin` placed at `base` like the
/// kernel does: the executable PT_LOAD mapped at its page-aligned link address + base.
fn mapped_text(spin: &Path, base: u64) -> (MmapEvent, u64) {
    let nm = common::stdout_of("nm", &[spin.to_str().unwrap()]);
    let value = nm
        .lines()
        .find(|l| l.ends_with(" T spin_here"))
        .and_then(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())
        .expect("nm lists spin_here");
    let ph = common::stdout_of("readelf", &["-lW", spin.to_str().unwrap()]);
    let text = ph
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|c| c.first() == Some(&"LOAD") && c.contains(&"R") && c.contains(&"E"))
        .expect("an executable PT_LOAD");
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let (offset, vaddr, filesz) = (hex(text[1]), hex(text[2]), hex(text[4]));
    let page = 0xfff;
    let start = base + (vaddr & !page);
    let mmap = MmapEvent {
        time_ns: 0,
        pid: 0,
        tid: 0,
        addr: start,
        len: (filesz + (vaddr & page) + page) & !page,
        pgoff: offset & !page,
        path: spin.to_str().unwrap().to_string(),
        prot: 5,
        flags: 2,
    };
    (mmap, start + (value - (vaddr & !page)))
}

#[test]
fn children_inherit_mappings_and_exec_replaces_them() {
    const NAME: &str = "children_inherit_mappings_and_exec_replaces_them";
    if !common::tools(NAME, &["cc", "nm", "readelf"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spin = build(dir.path(), "spin", SPIN_C);
    let (mut mmap, spin_here) = mapped_text(&spin, 0x5555_0000_0000);
    let marker = sampler_test_marker as *const () as usize as u64;
    let me = std::process::id() as i32;
    let mut maps: BTreeMap<i32, Vec<MapRange>> = BTreeMap::new();
    maps.insert(100, read_proc_maps(me).unwrap());

    let mut rec = Recording::empty(100, Scope::SystemWide, 1000, "cpu-clock");
    rec.tasks = vec![
        task(10, TaskKind::Fork, 101, Some(100), None),
        task(30, TaskKind::Exec, 101, None, Some("spin")),
        task(70, TaskKind::Fork, 102, Some(101), None),
    ];
    mmap.time_ns = 50;
    mmap.pid = 101;
    rec.mmaps = vec![mmap];
    rec.samples = vec![
        sample(5, 100, vec![marker]),
        sample(20, 101, vec![marker]), // inherited from 100 at the fork
        sample(40, 101, vec![marker]), // after exec: the old image is gone
        sample(60, 101, vec![spin_here]), // the new image's MMAP2
        sample(60, 100, vec![marker]), // the parent is unchanged
        sample(80, 102, vec![spin_here + 4]), // a child of the exec'd image
        sample(90, 103, vec![marker]), // nobody knows 103
    ];
    let stacks = symbolize(&rec, &maps, &[]);
    let names: Vec<String> = stacks
        .iter()
        .map(|s| s.frames[0].name.to_string())
        .collect();
    assert!(names[0].contains("sampler_test_marker"), "{names:?}");
    assert!(names[1].contains("sampler_test_marker"), "{names:?}");
    assert_eq!(names[2], "[unknown]");
    assert_eq!(names[3], "spin_here");
    assert!(names[4].contains("sampler_test_marker"), "{names:?}");
    assert_eq!(names[5], "spin_here");
    assert_eq!(names[6], "[unknown]");
    assert_eq!(stacks[3].frames[0].object.as_deref(), spin.to_str());
    assert!(stacks
        .iter()
        .all(|s| s.frames.iter().all(|f| f.kind == FrameKind::User)));

    // An address in the mapping but in no symbol: named after the object and its link-time
    // address. The kernel frame of a recording is named from its own table.
    rec.samples = vec![Sample {
        kernel: vec![0xffff_ffff_8100_1234],
        ..sample(60, 101, vec![rec.mmaps[0].addr + 1])
    }];
    rec.kernel_names
        .insert(0xffff_ffff_8100_1234, "exit_mmap".into());
    let st = &symbolize(&rec, &maps, &[])[0];
    assert_eq!(st.frames[0].label(), "exit_mmap_[k]");
    assert!(
        st.frames[1].name.starts_with("[spin+0x") || st.frames[1].name.starts_with('_'),
        "{:?}",
        st.frames[1]
    );
}

fn rich_recording() -> Recording {
    let mut rec = Recording::empty(7, Scope::PerTask, 997, "cpu-clock");
    rec.samples = vec![Sample {
        kernel: vec![0xffff_ffff_8100_0000],
        ..sample(3, 7, vec![0x1000, 0x2000])
    }];
    rec.tasks = vec![task(1, TaskKind::Fork, 8, Some(7), None)];
    rec.mmaps = vec![MmapEvent {
        time_ns: 2,
        pid: 8,
        tid: 8,
        addr: 0x1000,
        len: 0x1000,
        pgoff: 0,
        path: "/bin/true".into(),
        prot: 5,
        flags: 2,
    }];
    rec.lost = 3;
    rec.throttled = 1;
    rec.unthrottled = 1;
    rec.kernel_frames_visible = true;
    rec.cpus = vec![0, 1];
    rec.buffer_pages = 512;
    rec.window_ns = Some((1, 3));
    rec.maps_at_start.insert(
        7,
        ldcost::perf::sampler::parse_proc_maps(
            "00400000-00401000 r-xp 00000000 fe:01 12 /bin/true\n",
        ),
    );
    rec.kernel_names
        .insert(0xffff_ffff_8100_0000, "do_exit".into());
    rec.notes.push("a note".into());
    rec
}

#[test]
fn recordings_round_trip_through_json() {
    let rec = rich_recording();
    let json = serde_json::to_string_pretty(&rec).unwrap();
    let back: Recording = serde_json::from_str(&json).unwrap();
    assert_eq!(back, rec);
    assert!(json.contains("\"scope\": \"per-task\""), "{json}");
    assert!(json.contains("\"kind\": \"fork\""), "{json}");
    // Unknown fields are refused, so a renamed field cannot be silently dropped.
    let bad = json.replacen("\"lost\"", "\"lots\"", 1);
    assert!(serde_json::from_str::<Recording>(&bad).is_err());
}

#[test]
fn a_million_frames_symbolize_quickly() {
    // Real objects of this process (the test binary, libc, ld.so), random addresses in
    // their executable mappings, 50,000 samples of 20 frames. Prints the time; asserts only
    // that names came out, since tests make no wall-clock assertions.
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let me = std::process::id() as i32;
    let maps = read_proc_maps(me).unwrap();
    let exec: Vec<&MapRange> = maps
        .iter()
        .filter(|m| m.is_executable() && m.path.starts_with('/'))
        .collect();
    assert!(!exec.is_empty());
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut rec = Recording::empty(me, Scope::SystemWide, 1000, "cpu-clock");
    let marker = sampler_test_marker as *const () as usize as u64;
    for i in 0..50_000u64 {
        let mut user = Vec::with_capacity(20);
        user.push(marker);
        for _ in 1..20 {
            // Samples cluster on few addresses in real runs: draw from 5,000 spots.
            let m = exec[(next() % exec.len() as u64) as usize];
            let spot = next() % 5000;
            user.push(m.start + spot * (m.end - m.start) / 5000);
        }
        rec.samples.push(sample(i, me, user));
    }
    let mut at_start = BTreeMap::new();
    at_start.insert(me, maps.clone());
    // Cold: objects loaded and names looked up on first use; warm: the same symbolizer again.
    let mut symbolizer = Symbolizer::new(&default_debug_roots());
    let t = Instant::now();
    let stacks = symbolizer.symbolize(&rec, &at_start);
    let cold = t.elapsed();
    let t = Instant::now();
    let again = symbolizer.symbolize(&rec, &at_start);
    let warm = t.elapsed();
    assert_eq!(again, stacks);
    let frames: usize = stacks.iter().map(|s| s.frames.len()).sum();
    let named = stacks
        .iter()
        .flat_map(|s| &s.frames)
        .filter(|f| !f.name.starts_with('['))
        .count();
    eprintln!(
        "a_million_frames_symbolize_quickly: {frames} frames in {:.3} s cold ({} objects \
         loaded), {:.3} s warm ({:.0} ns per frame), {named} named",
        cold.as_secs_f64(),
        exec.len(),
        warm.as_secs_f64(),
        warm.as_nanos() as f64 / frames as f64
    );
    assert_eq!(frames, 1_000_000);
    assert!(stacks
        .iter()
        .all(|s| s.frames[0].name.contains("sampler_test_marker")));
    assert!(named > frames / 2, "{named} of {frames} named");
}
