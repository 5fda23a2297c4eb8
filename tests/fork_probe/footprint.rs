//! 4. The footprint.

use super::harness::*;

/// The footprint read at `--at checkpoint` equals what the target read of itself just before
/// (the probe's own mappings are made after the footprint is read): the VMA count, file text
/// VMAs, heap, stack, loaded objects; VmPTE within 8 KiB. Dynamic and static.
#[test]
fn footprint_matches_the_targets_own_maps() {
    let name = "footprint_matches_the_targets_own_maps";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    let exes = [
        case.build("selfmaps", SELFMAPS, &[]),
        case.build("selfmaps-s", SELFMAPS, &["-static"]),
    ];
    for exe in &exes {
        let (out, fork) = profile(
            &case,
            exe,
            &["--fork", "20", "--at", "checkpoint"],
            &[],
            &[],
        );
        let f = assert_forked(&out, &fork, 20);
        let line = target_part(&out)
            .lines()
            .find(|l| l.starts_with("maps "))
            .expect("the target's own count");
        let v: Vec<i64> = line
            .split_whitespace()
            .skip(1)
            .step_by(2)
            .map(|x| x.parse().unwrap())
            .collect();
        let (maps, text, heap, stack, objects, pte_kb) = (v[0], v[1], v[2], v[3], v[4], v[5]);
        let fp = f
            .footprint
            .unwrap_or_else(|| panic!("no footprint: {:?}", f.footprint_error));
        let what = format!("{}: the target counted {line:?}", exe.display());
        assert_eq!(fp.vmas.total as i64, maps, "{what}");
        assert_eq!(fp.vmas.file_text as i64, text, "{what}");
        assert_eq!(fp.vmas.heap as i64, heap, "{what}");
        assert_eq!(fp.vmas.stack as i64, stack, "{what}");
        assert_eq!(fp.elf_objects as i64, objects, "{what}");
        let pte = fp.page_table_bytes.value().expect("VmPTE") as i64;
        assert!(
            (pte - pte_kb * 1024).abs() <= 8192,
            "{what}: VmPTE {pte} bytes"
        );
    }
    case.finish();
}
