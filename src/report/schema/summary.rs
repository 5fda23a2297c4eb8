//! The `summary` and `fixes` sections of a profile document (schema version 3): what the report
//! opens with ([`crate::attribute::summary`]) and the predicted fixes
//! ([`crate::attribute::fixes`]), converted from and back to the analysis' own types.

use serde::{Deserialize, Serialize};

use crate::attribute::{fixes, summary};

fn all<T, U: From<T>>(v: Vec<T>) -> Vec<U> {
    v.into_iter().map(U::from).collect()
}

/// One part of the CPU per exec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    pub label: String,
    pub made_of: Vec<String>,
    pub ns: f64,
    pub share: f64,
}

/// One of the costliest objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopObject {
    pub object: String,
    pub ns: f64,
    pub dominant_phase: String,
    pub dominant_ns: f64,
    pub relocations: Option<u64>,
    pub lookups: Option<u64>,
}

/// The exec side of the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecSummary {
    pub cpu_ns: f64,
    pub ci95_ns: Option<(f64, f64)>,
    pub runs: usize,
    pub wall_ns: Option<f64>,
    pub parts: Vec<Part>,
    pub top_objects: Vec<TopObject>,
    /// The runs without ptrace: their median CPU (absent when none ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uninstrumented_ns: Option<f64>,
}

/// The fork side of the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkSummary {
    pub spawn: String,
    pub parent_cpu_ns: f64,
    pub child_cpu_ns: f64,
    pub cpu_ns: f64,
    pub round_trip_ns: Option<f64>,
}

/// The `summary` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub exec: Option<ExecSummary>,
    pub fork: Option<ForkSummary>,
}

/// What kind of change a fix is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FixKind {
    UnusedDependency,
    BindNow,
    LazyBinding,
    PackRelativeRelocs,
    SelfBinding,
    Constructor,
    Spawn,
}

/// Which population a saving is per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FixSide {
    Exec,
    Fork,
}

/// One predicted fix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fix {
    pub kind: FixKind,
    pub side: FixSide,
    pub objects: Vec<String>,
    pub saving_ns: f64,
    pub ci95_ns: Option<(f64, f64)>,
    pub share: f64,
    pub change: String,
    pub reason: String,
    pub caveat: Option<String>,
}

impl From<summary::Part> for Part {
    fn from(x: summary::Part) -> Self {
        Part {
            label: x.label,
            made_of: x.made_of,
            ns: x.ns,
            share: x.share,
        }
    }
}

impl From<Part> for summary::Part {
    fn from(x: Part) -> Self {
        summary::Part {
            label: x.label,
            made_of: x.made_of,
            ns: x.ns,
            share: x.share,
        }
    }
}

impl From<summary::TopObject> for TopObject {
    fn from(x: summary::TopObject) -> Self {
        TopObject {
            object: x.object,
            ns: x.ns,
            dominant_phase: x.dominant_phase,
            dominant_ns: x.dominant_ns,
            relocations: x.relocations,
            lookups: x.lookups,
        }
    }
}

impl From<TopObject> for summary::TopObject {
    fn from(x: TopObject) -> Self {
        summary::TopObject {
            object: x.object,
            ns: x.ns,
            dominant_phase: x.dominant_phase,
            dominant_ns: x.dominant_ns,
            relocations: x.relocations,
            lookups: x.lookups,
        }
    }
}

impl From<summary::ExecSummary> for ExecSummary {
    fn from(x: summary::ExecSummary) -> Self {
        ExecSummary {
            cpu_ns: x.cpu_ns,
            ci95_ns: x.ci95_ns,
            runs: x.runs,
            wall_ns: x.wall_ns,
            parts: all(x.parts),
            top_objects: all(x.top_objects),
            uninstrumented_ns: x.uninstrumented_ns,
        }
    }
}

impl From<ExecSummary> for summary::ExecSummary {
    fn from(x: ExecSummary) -> Self {
        summary::ExecSummary {
            cpu_ns: x.cpu_ns,
            ci95_ns: x.ci95_ns,
            runs: x.runs,
            wall_ns: x.wall_ns,
            parts: all(x.parts),
            top_objects: all(x.top_objects),
            uninstrumented_ns: x.uninstrumented_ns,
        }
    }
}

impl From<summary::ForkSummary> for ForkSummary {
    fn from(x: summary::ForkSummary) -> Self {
        ForkSummary {
            spawn: x.spawn,
            parent_cpu_ns: x.parent_cpu_ns,
            child_cpu_ns: x.child_cpu_ns,
            cpu_ns: x.cpu_ns,
            round_trip_ns: x.round_trip_ns,
        }
    }
}

impl From<ForkSummary> for summary::ForkSummary {
    fn from(x: ForkSummary) -> Self {
        summary::ForkSummary {
            spawn: x.spawn,
            parent_cpu_ns: x.parent_cpu_ns,
            child_cpu_ns: x.child_cpu_ns,
            cpu_ns: x.cpu_ns,
            round_trip_ns: x.round_trip_ns,
        }
    }
}

impl From<summary::Summary> for Summary {
    fn from(x: summary::Summary) -> Self {
        Summary {
            exec: x.exec.map(Into::into),
            fork: x.fork.map(Into::into),
        }
    }
}

impl From<Summary> for summary::Summary {
    fn from(x: Summary) -> Self {
        summary::Summary {
            exec: x.exec.map(Into::into),
            fork: x.fork.map(Into::into),
        }
    }
}

impl From<fixes::FixKind> for FixKind {
    fn from(x: fixes::FixKind) -> Self {
        match x {
            fixes::FixKind::UnusedDependency => FixKind::UnusedDependency,
            fixes::FixKind::BindNow => FixKind::BindNow,
            fixes::FixKind::LazyBinding => FixKind::LazyBinding,
            fixes::FixKind::PackRelativeRelocs => FixKind::PackRelativeRelocs,
            fixes::FixKind::SelfBinding => FixKind::SelfBinding,
            fixes::FixKind::Constructor => FixKind::Constructor,
            fixes::FixKind::Spawn => FixKind::Spawn,
        }
    }
}

impl From<FixKind> for fixes::FixKind {
    fn from(x: FixKind) -> Self {
        match x {
            FixKind::UnusedDependency => fixes::FixKind::UnusedDependency,
            FixKind::BindNow => fixes::FixKind::BindNow,
            FixKind::LazyBinding => fixes::FixKind::LazyBinding,
            FixKind::PackRelativeRelocs => fixes::FixKind::PackRelativeRelocs,
            FixKind::SelfBinding => fixes::FixKind::SelfBinding,
            FixKind::Constructor => fixes::FixKind::Constructor,
            FixKind::Spawn => fixes::FixKind::Spawn,
        }
    }
}

impl From<fixes::FixSide> for FixSide {
    fn from(x: fixes::FixSide) -> Self {
        match x {
            fixes::FixSide::Exec => FixSide::Exec,
            fixes::FixSide::Fork => FixSide::Fork,
        }
    }
}

impl From<FixSide> for fixes::FixSide {
    fn from(x: FixSide) -> Self {
        match x {
            FixSide::Exec => fixes::FixSide::Exec,
            FixSide::Fork => fixes::FixSide::Fork,
        }
    }
}

impl From<fixes::Fix> for Fix {
    fn from(x: fixes::Fix) -> Self {
        Fix {
            kind: x.kind.into(),
            side: x.side.into(),
            objects: x.objects,
            saving_ns: x.saving_ns,
            ci95_ns: x.ci95_ns,
            share: x.share,
            change: x.change,
            reason: x.reason,
            caveat: x.caveat,
        }
    }
}

impl From<Fix> for fixes::Fix {
    fn from(x: Fix) -> Self {
        fixes::Fix {
            kind: x.kind.into(),
            side: x.side.into(),
            objects: x.objects,
            saving_ns: x.saving_ns,
            ci95_ns: x.ci95_ns,
            share: x.share,
            change: x.change,
            reason: x.reason,
            caveat: x.caveat,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both sections survive the round trip through JSON and back to the analysis' types.
    #[test]
    fn summary_and_fixes_round_trip() {
        let s = summary::Summary {
            exec: Some(summary::ExecSummary {
                cpu_ns: 750_000.0,
                ci95_ns: Some((700_000.0, 800_000.0)),
                runs: 5,
                wall_ns: Some(900_000.0),
                parts: vec![summary::Part {
                    label: "kernel exec".into(),
                    made_of: vec!["kernel exec".into()],
                    ns: 750_000.0,
                    share: 1.0,
                }],
                top_objects: vec![summary::TopObject {
                    object: "/lib/libc.so.6".into(),
                    ns: 50_000.0,
                    dominant_phase: "relocation".into(),
                    dominant_ns: 47_000.0,
                    relocations: Some(1339),
                    lookups: None,
                }],
                uninstrumented_ns: Some(700_000.0),
            }),
            fork: Some(summary::ForkSummary {
                spawn: "fork".into(),
                parent_cpu_ns: 1.0,
                child_cpu_ns: 2.0,
                cpu_ns: 3.0,
                round_trip_ns: None,
            }),
        };
        let json = serde_json::to_string(&Summary::from(s.clone())).unwrap();
        let back: Summary = serde_json::from_str(&json).unwrap();
        assert_eq!(summary::Summary::from(back), s);
        let f = fixes::Fix {
            kind: fixes::FixKind::PackRelativeRelocs,
            side: fixes::FixSide::Fork,
            objects: vec!["a".into()],
            saving_ns: 1.5,
            ci95_ns: None,
            share: 0.1,
            change: "-Wl,-z,pack-relative-relocs".into(),
            reason: "r".into(),
            caveat: Some("c".into()),
        };
        let json = serde_json::to_string(&Fix::from(f.clone())).unwrap();
        assert!(json.contains("\"kind\":\"pack_relative_relocs\""), "{json}");
        let back: Fix = serde_json::from_str(&json).unwrap();
        assert_eq!(fixes::Fix::from(back), f);
    }
}
