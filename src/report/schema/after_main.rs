//! The `after_main` part of the `profile` section (schema version 4): the objects `dlopen`
//! loaded after `main`, the calls, `dlclose`, lazy binds and ld.so's CPU after `main`,
//! converted from and back to [`crate::attribute::after_main`]'s own types. What each run
//! recorded is in its raw run (`raw[].after_main`, [`crate::record::after_main`]).

use serde::{Deserialize, Serialize};

use super::common::Summary;
use crate::attribute::after_main as am;

fn all<T, U: From<T>>(v: Vec<T>) -> Vec<U> {
    v.into_iter().map(U::from).collect()
}

fn sum(s: Option<crate::attribute::stats::Summary>) -> Option<Summary> {
    s.map(Into::into)
}

fn back(s: Option<Summary>) -> Option<crate::attribute::stats::Summary> {
    s.map(Into::into)
}

/// How much of ld.so's work after `main` the runs saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "level", content = "why")]
pub enum Seen {
    PerObject,
    Rendezvous(String),
    NotAvailable(String),
}

/// An object file's static model: relocations by class and the lookups its relocation makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticModel {
    pub relative: u64,
    pub symbolic: u64,
    pub plt: u64,
    pub other: u64,
    pub total: u64,
    pub lookups: u64,
}

/// One object loaded after `main`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Object {
    pub object: String,
    pub file: Option<String>,
    pub caller: Option<String>,
    pub mode: i32,
    /// The mode as text (`RTLD_LAZY|RTLD_GLOBAL`): written for readers; `mode` is what is
    /// read back.
    #[serde(default)]
    pub mode_text: String,
    pub runs: usize,
    pub at_ns: Option<Summary>,
    pub mapping_ns: Option<Summary>,
    pub relocation_ns: Option<Summary>,
    pub initializers_ns: Option<Summary>,
    pub threads: u64,
    pub threads_cpu_at_return_ns: Option<Summary>,
    pub threads_cpu_total_ns: Option<Summary>,
    pub lazy_binds: Option<Summary>,
    pub model: Option<StaticModel>,
    /// Its lookups in the scope of the `dlopen` that loaded it (absent when not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeLookups>,
}

/// An object's lookups in the scope of the `dlopen` that loaded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeLookups {
    pub lookups: u64,
    pub probes: u64,
    pub unresolved: u64,
    pub definers: Vec<Definer>,
}

/// An object that answers some of another's lookups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definer {
    pub object: String,
    pub lookups: u64,
}

impl From<am::ScopeLookups> for ScopeLookups {
    fn from(x: am::ScopeLookups) -> Self {
        ScopeLookups {
            lookups: x.lookups,
            probes: x.probes,
            unresolved: x.unresolved,
            definers: x
                .definers
                .into_iter()
                .map(|(object, lookups)| Definer { object, lookups })
                .collect(),
        }
    }
}

impl From<ScopeLookups> for am::ScopeLookups {
    fn from(x: ScopeLookups) -> Self {
        am::ScopeLookups {
            lookups: x.lookups,
            probes: x.probes,
            unresolved: x.unresolved,
            definers: x
                .definers
                .into_iter()
                .map(|d| (d.object, d.lookups))
                .collect(),
        }
    }
}

/// One `dlopen` call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Open {
    pub file: Option<String>,
    pub caller: Option<String>,
    pub mode: i32,
    pub nested: bool,
    pub runs: usize,
    pub failed: usize,
    pub cpu_ns: Option<Summary>,
    pub wall_ns: Option<Summary>,
    pub objects: usize,
    /// The namespace a `dlmopen` asked for (-1: a new one); absent for a `dlopen`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<i64>,
}

/// One object a `dlclose` unloaded, with its finalizers' CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finalizers {
    pub object: String,
    pub cpu_ns: Option<Summary>,
}

/// One `dlclose` call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Close {
    pub object: String,
    pub runs: usize,
    pub cpu_ns: Option<Summary>,
    pub wall_ns: Option<Summary>,
    pub finalizers: Vec<Finalizers>,
}

/// Lazy binds in one object's slots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lazy {
    pub object: String,
    pub count: Option<Summary>,
    pub cpu_ns: Option<Summary>,
}

/// The loader after `main`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AfterMainSection {
    pub seen: Seen,
    pub runs: usize,
    pub objects: Vec<Object>,
    pub opens: Vec<Open>,
    pub closes: Vec<Close>,
    pub lazy: Vec<Lazy>,
    pub loader_cpu_ns: Option<Summary>,
}

impl From<am::Seen> for Seen {
    fn from(x: am::Seen) -> Self {
        match x {
            am::Seen::PerObject => Seen::PerObject,
            am::Seen::Rendezvous(w) => Seen::Rendezvous(w),
            am::Seen::NotAvailable(w) => Seen::NotAvailable(w),
        }
    }
}

impl From<Seen> for am::Seen {
    fn from(x: Seen) -> Self {
        match x {
            Seen::PerObject => am::Seen::PerObject,
            Seen::Rendezvous(w) => am::Seen::Rendezvous(w),
            Seen::NotAvailable(w) => am::Seen::NotAvailable(w),
        }
    }
}

impl From<am::StaticModel> for StaticModel {
    fn from(x: am::StaticModel) -> Self {
        StaticModel {
            relative: x.relative,
            symbolic: x.symbolic,
            plt: x.plt,
            other: x.other,
            total: x.total,
            lookups: x.lookups,
        }
    }
}

impl From<StaticModel> for am::StaticModel {
    fn from(x: StaticModel) -> Self {
        am::StaticModel {
            relative: x.relative,
            symbolic: x.symbolic,
            plt: x.plt,
            other: x.other,
            total: x.total,
            lookups: x.lookups,
        }
    }
}

impl From<am::ObjectRow> for Object {
    fn from(x: am::ObjectRow) -> Self {
        Object {
            mode_text: am::mode_text(x.mode),
            object: x.object,
            file: x.file,
            caller: x.caller,
            mode: x.mode,
            runs: x.runs,
            at_ns: sum(x.at_ns),
            mapping_ns: sum(x.mapping_ns),
            relocation_ns: sum(x.relocation_ns),
            initializers_ns: sum(x.initializers_ns),
            threads: x.threads,
            threads_cpu_at_return_ns: sum(x.threads_cpu_at_return_ns),
            threads_cpu_total_ns: sum(x.threads_cpu_total_ns),
            lazy_binds: sum(x.lazy_binds),
            model: x.model.map(Into::into),
            scope: x.scope.map(Into::into),
        }
    }
}

impl From<Object> for am::ObjectRow {
    fn from(x: Object) -> Self {
        am::ObjectRow {
            object: x.object,
            file: x.file,
            caller: x.caller,
            mode: x.mode,
            runs: x.runs,
            at_ns: back(x.at_ns),
            mapping_ns: back(x.mapping_ns),
            relocation_ns: back(x.relocation_ns),
            initializers_ns: back(x.initializers_ns),
            threads: x.threads,
            threads_cpu_at_return_ns: back(x.threads_cpu_at_return_ns),
            threads_cpu_total_ns: back(x.threads_cpu_total_ns),
            lazy_binds: back(x.lazy_binds),
            model: x.model.map(Into::into),
            scope: x.scope.map(Into::into),
        }
    }
}

impl From<am::OpenRow> for Open {
    fn from(x: am::OpenRow) -> Self {
        Open {
            file: x.file,
            caller: x.caller,
            mode: x.mode,
            nested: x.nested,
            runs: x.runs,
            failed: x.failed,
            cpu_ns: sum(x.cpu_ns),
            wall_ns: sum(x.wall_ns),
            objects: x.objects,
            namespace: x.namespace,
        }
    }
}

impl From<Open> for am::OpenRow {
    fn from(x: Open) -> Self {
        am::OpenRow {
            file: x.file,
            caller: x.caller,
            mode: x.mode,
            nested: x.nested,
            runs: x.runs,
            failed: x.failed,
            cpu_ns: back(x.cpu_ns),
            wall_ns: back(x.wall_ns),
            objects: x.objects,
            namespace: x.namespace,
        }
    }
}

impl From<am::CloseRow> for Close {
    fn from(x: am::CloseRow) -> Self {
        Close {
            object: x.object,
            runs: x.runs,
            cpu_ns: sum(x.cpu_ns),
            wall_ns: sum(x.wall_ns),
            finalizers: x
                .finalizers
                .into_iter()
                .map(|(object, cpu)| Finalizers {
                    object,
                    cpu_ns: sum(cpu),
                })
                .collect(),
        }
    }
}

impl From<Close> for am::CloseRow {
    fn from(x: Close) -> Self {
        am::CloseRow {
            object: x.object,
            runs: x.runs,
            cpu_ns: back(x.cpu_ns),
            wall_ns: back(x.wall_ns),
            finalizers: x
                .finalizers
                .into_iter()
                .map(|f| (f.object, back(f.cpu_ns)))
                .collect(),
        }
    }
}

impl From<am::LazyRow> for Lazy {
    fn from(x: am::LazyRow) -> Self {
        Lazy {
            object: x.object,
            count: sum(x.count),
            cpu_ns: sum(x.cpu_ns),
        }
    }
}

impl From<Lazy> for am::LazyRow {
    fn from(x: Lazy) -> Self {
        am::LazyRow {
            object: x.object,
            count: back(x.count),
            cpu_ns: back(x.cpu_ns),
        }
    }
}

impl From<am::AfterMainSection> for AfterMainSection {
    fn from(x: am::AfterMainSection) -> Self {
        AfterMainSection {
            seen: x.seen.into(),
            runs: x.runs,
            objects: all(x.objects),
            opens: all(x.opens),
            closes: all(x.closes),
            lazy: all(x.lazy),
            loader_cpu_ns: sum(x.loader_cpu_ns),
        }
    }
}

impl From<AfterMainSection> for am::AfterMainSection {
    fn from(x: AfterMainSection) -> Self {
        am::AfterMainSection {
            seen: x.seen.into(),
            runs: x.runs,
            objects: all(x.objects),
            opens: all(x.opens),
            closes: all(x.closes),
            lazy: all(x.lazy),
            loader_cpu_ns: back(x.loader_cpu_ns),
        }
    }
}
