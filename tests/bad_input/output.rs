//! The report cannot be written: exit 7.

use crate::common::skip;
use crate::harness::*;

#[test]
fn json_into_missing_directory() {
    let Some(libz) = system_lib("libz.so.1") else {
        return skip(
            "json_into_missing_directory",
            "no libz.so.1 on this machine",
        );
    };
    let dir = tmp();
    let out = dir.path().join("no-such-dir").join("out.json");
    let o = deps(&["--json", out.to_str().unwrap()], &libz);
    assert_robust(&o);
    assert_eq!(o.code, Some(7), "{}", o.describe());
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert!(lines.len() <= 2, "{}", o.describe());
    assert!(
        lines[0].starts_with("ldcost: error:") && lines[0].contains(&out.display().to_string()),
        "{}",
        o.describe()
    );
    // The text report went to stdout before the JSON failed; that is allowed.
    assert!(!out.exists());
    // The same for a --json path that is a directory.
    let o = deps(&["--json", dir.path().to_str().unwrap()], &libz);
    assert_eq!(o.code, Some(7), "{}", o.describe());
    assert!(
        o.stderr
            .lines()
            .next()
            .unwrap_or("")
            .contains(&dir.path().display().to_string()),
        "{}",
        o.describe()
    );
}
