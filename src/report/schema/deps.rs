//! The `deps` section: the closure ld.so would load (its objects as the ELF reader sees them),
//! its totals and the lookup model, converted from and back to [`crate::deps`],
//! [`crate::elf`] and [`crate::attribute`]'s own types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::attribute::{link_cost, lookups};
use crate::{deps, elf};

fn all<T, U: From<T>>(v: Vec<T>) -> Vec<U> {
    v.into_iter().map(U::from).collect()
}

/// The `deps` section: the closure, its totals and the reading.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DepsSection {
    #[serde(flatten)]
    pub closure: Closure,
    pub totals: Totals,
    /// Where each start-up lookup is answered and how many objects it probes.
    #[serde(default)]
    pub lookups: Option<LookupModel>,
    /// DT_NEEDED entries no symbol reference binds to (`ldd -u -r`); the key is left out when
    /// there are none (and in documents written before it existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unused_direct: Vec<UnusedDependency>,
    pub summary: Vec<String>,
}

impl DepsSection {
    /// The section of `closure`: its totals and reading computed here.
    pub fn new(closure: deps::Closure, lookups: Option<lookups::LookupModel>) -> DepsSection {
        let totals = link_cost::totals(&closure).into();
        let unused = deps::unused_direct(&closure);
        let mut summary = link_cost::summary(&closure, lookups.as_ref());
        summary.extend(link_cost::unused_reading(&closure, &unused));
        DepsSection {
            closure: closure.into(),
            totals,
            lookups: lookups.map(Into::into),
            unused_direct: all(unused),
            summary,
        }
    }

    /// The unused direct dependencies as the analysis holds them.
    pub fn unused_direct(&self) -> Vec<deps::UnusedDependency> {
        all(self.unused_direct.clone())
    }

    /// The closure as the analysis holds it (what `report` renders and `diff` compares).
    pub fn closure(&self) -> deps::Closure {
        self.closure.clone().into()
    }

    /// The lookup model as the analysis holds it (without the bindings, never saved).
    pub fn lookups(&self) -> Option<lookups::LookupModel> {
        self.lookups.clone().map(Into::into)
    }
}

/// One unused DT_NEEDED entry ([`deps::UnusedDependency`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnusedDependency {
    pub object: String,
    pub object_path: String,
    pub needed: String,
    pub needed_path: Option<String>,
    pub removes: Vec<String>,
}

impl From<deps::UnusedDependency> for UnusedDependency {
    fn from(u: deps::UnusedDependency) -> Self {
        UnusedDependency {
            object: u.object,
            object_path: u.object_path.to_string_lossy().into_owned(),
            needed: u.needed,
            needed_path: u.needed_path.map(|p| p.to_string_lossy().into_owned()),
            removes: u.removes,
        }
    }
}

impl From<UnusedDependency> for deps::UnusedDependency {
    fn from(u: UnusedDependency) -> Self {
        deps::UnusedDependency {
            object: u.object,
            object_path: u.object_path.into(),
            needed: u.needed,
            needed_path: u.needed_path.map(Into::into),
            removes: u.removes,
        }
    }
}

/// The resolved closure ([`deps::Closure`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Closure {
    pub rules: SearchRules,
    /// In load order, which is the global lookup scope order; the target is first.
    pub objects: Vec<Object>,
    pub missing: Vec<Missing>,
    pub ld_library_path: Option<String>,
    pub bind_now_env: bool,
}

impl From<deps::Closure> for Closure {
    fn from(c: deps::Closure) -> Self {
        Closure {
            rules: c.rules.into(),
            objects: all(c.objects),
            missing: all(c.missing),
            ld_library_path: c.ld_library_path,
            bind_now_env: c.bind_now_env,
        }
    }
}

impl From<Closure> for deps::Closure {
    fn from(c: Closure) -> Self {
        deps::Closure {
            rules: c.rules.into(),
            objects: all(c.objects),
            missing: all(c.missing),
            ld_library_path: c.ld_library_path,
            bind_now_env: c.bind_now_env,
        }
    }
}

/// Where the search rules came from ([`deps::rules::RulesSource`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RulesSource {
    LdSoHelp,
    BuiltIn,
}

/// The machine-specific search rules ([`deps::rules::SearchRules`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchRules {
    pub source: RulesSource,
    pub interpreter: String,
    pub system_dirs: Vec<String>,
    pub hwcaps: Vec<String>,
    pub legacy: Vec<String>,
    pub platform: String,
    pub lib: String,
    /// Why the built-in defaults were used; absent when ld.so was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

impl From<deps::rules::SearchRules> for SearchRules {
    fn from(r: deps::rules::SearchRules) -> Self {
        SearchRules {
            source: match r.source {
                deps::rules::RulesSource::LdSoHelp => RulesSource::LdSoHelp,
                deps::rules::RulesSource::BuiltIn => RulesSource::BuiltIn,
            },
            interpreter: r.interpreter,
            system_dirs: r.system_dirs,
            hwcaps: r.hwcaps,
            legacy: r.legacy,
            platform: r.platform,
            lib: r.lib,
            fallback: r.fallback,
        }
    }
}

impl From<SearchRules> for deps::rules::SearchRules {
    fn from(r: SearchRules) -> Self {
        deps::rules::SearchRules {
            source: match r.source {
                RulesSource::LdSoHelp => deps::rules::RulesSource::LdSoHelp,
                RulesSource::BuiltIn => deps::rules::RulesSource::BuiltIn,
            },
            interpreter: r.interpreter,
            system_dirs: r.system_dirs,
            hwcaps: r.hwcaps,
            legacy: r.legacy,
            platform: r.platform,
            lib: r.lib,
            fallback: r.fallback,
        }
    }
}

/// Which rule found an object ([`deps::FoundBy`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "rule")]
pub enum FoundBy {
    Target,
    Interpreter,
    Path,
    Rpath { of: String },
    LdLibraryPath,
    Runpath { of: String },
    LdSoCache,
    DefaultPath,
}

impl From<deps::FoundBy> for FoundBy {
    fn from(f: deps::FoundBy) -> Self {
        use deps::FoundBy as F;
        match f {
            F::Target => FoundBy::Target,
            F::Interpreter => FoundBy::Interpreter,
            F::Path => FoundBy::Path,
            F::Rpath { of } => FoundBy::Rpath { of },
            F::LdLibraryPath => FoundBy::LdLibraryPath,
            F::Runpath { of } => FoundBy::Runpath { of },
            F::LdSoCache => FoundBy::LdSoCache,
            F::DefaultPath => FoundBy::DefaultPath,
        }
    }
}

impl From<FoundBy> for deps::FoundBy {
    fn from(f: FoundBy) -> Self {
        use deps::FoundBy as F;
        match f {
            FoundBy::Target => F::Target,
            FoundBy::Interpreter => F::Interpreter,
            FoundBy::Path => F::Path,
            FoundBy::Rpath { of } => F::Rpath { of },
            FoundBy::LdLibraryPath => F::LdLibraryPath,
            FoundBy::Runpath { of } => F::Runpath { of },
            FoundBy::LdSoCache => F::LdSoCache,
            FoundBy::DefaultPath => F::DefaultPath,
        }
    }
}

/// One DT_NEEDED entry and what it resolved to ([`deps::Edge`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    pub name: String,
    /// Index into [`Closure::objects`]; None when the library was not found.
    pub object: Option<usize>,
    pub first: bool,
}

impl From<deps::Edge> for Edge {
    fn from(e: deps::Edge) -> Self {
        Edge {
            name: e.name,
            object: e.object,
            first: e.first,
        }
    }
}

impl From<Edge> for deps::Edge {
    fn from(e: Edge) -> Self {
        deps::Edge {
            name: e.name,
            object: e.object,
            first: e.first,
        }
    }
}

/// One object of the closure ([`deps::Object`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Object {
    pub path: String,
    pub name: String,
    pub found_by: FoundBy,
    pub loaded_by: Option<usize>,
    pub depth: u32,
    pub needed: Vec<Edge>,
    pub in_scope: bool,
    pub info: ObjectInfo,
}

impl From<deps::Object> for Object {
    fn from(o: deps::Object) -> Self {
        Object {
            path: o.path,
            name: o.name,
            found_by: o.found_by.into(),
            loaded_by: o.loaded_by,
            depth: o.depth,
            needed: all(o.needed),
            in_scope: o.in_scope,
            info: o.info.into(),
        }
    }
}

impl From<Object> for deps::Object {
    fn from(o: Object) -> Self {
        deps::Object {
            path: o.path,
            name: o.name,
            found_by: o.found_by.into(),
            loaded_by: o.loaded_by,
            depth: o.depth,
            needed: all(o.needed),
            in_scope: o.in_scope,
            info: o.info.into(),
        }
    }
}

/// A DT_NEEDED entry ld.so would not find ([`deps::Missing`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Missing {
    pub name: String,
    pub needed_by: String,
    pub reason: Option<String>,
}

impl From<deps::Missing> for Missing {
    fn from(m: deps::Missing) -> Self {
        Missing {
            name: m.name,
            needed_by: m.needed_by,
            reason: m.reason,
        }
    }
}

impl From<Missing> for deps::Missing {
    fn from(m: Missing) -> Self {
        deps::Missing {
            name: m.name,
            needed_by: m.needed_by,
            reason: m.reason,
        }
    }
}

/// What the ELF reader knows about one object ([`elf::ObjectInfo`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectInfo {
    pub file_size: u64,
    pub machine: String,
    pub kind: ObjectKind,
    pub build_id: Option<String>,
    pub interpreter: Option<String>,
    pub soname: Option<String>,
    pub needed: Vec<String>,
    pub rpath: Option<String>,
    pub runpath: Option<String>,
    pub entry: u64,
    pub segments: Vec<Segment>,
    pub relro_vaddr: Option<u64>,
    pub relro_size: u64,
    pub vmas: Vec<Vma>,
    pub symbols: SymbolCounts,
    pub hash_style: HashStyle,
    pub flags: Flags,
    pub initializers: Initializers,
    pub relocations: Relocations,
}

impl From<elf::ObjectInfo> for ObjectInfo {
    fn from(i: elf::ObjectInfo) -> Self {
        ObjectInfo {
            file_size: i.file_size,
            machine: i.machine,
            kind: i.kind.into(),
            build_id: i.build_id,
            interpreter: i.interpreter,
            soname: i.soname,
            needed: i.needed,
            rpath: i.rpath,
            runpath: i.runpath,
            entry: i.entry,
            segments: all(i.segments),
            relro_vaddr: i.relro_vaddr,
            relro_size: i.relro_size,
            vmas: all(i.vmas),
            symbols: SymbolCounts {
                dynsym: i.symbols.dynsym,
                defined: i.symbols.defined,
                undefined: i.symbols.undefined,
            },
            hash_style: i.hash_style.into(),
            flags: Flags {
                bind_now: i.flags.bind_now,
                textrel: i.flags.textrel,
                initfirst: i.flags.initfirst,
                nodeflib: i.flags.nodeflib,
                pie: i.flags.pie,
                static_tls: i.flags.static_tls,
            },
            initializers: Initializers {
                dt_init: i.initializers.dt_init,
                init_array: i.initializers.init_array,
                preinit_array: i.initializers.preinit_array,
                total: i.initializers.total,
            },
            relocations: i.relocations.into(),
        }
    }
}

impl From<ObjectInfo> for elf::ObjectInfo {
    fn from(i: ObjectInfo) -> Self {
        elf::ObjectInfo {
            file_size: i.file_size,
            machine: i.machine,
            kind: i.kind.into(),
            build_id: i.build_id,
            interpreter: i.interpreter,
            soname: i.soname,
            needed: i.needed,
            rpath: i.rpath,
            runpath: i.runpath,
            entry: i.entry,
            segments: all(i.segments),
            relro_vaddr: i.relro_vaddr,
            relro_size: i.relro_size,
            vmas: all(i.vmas),
            symbols: elf::SymbolCounts {
                dynsym: i.symbols.dynsym,
                defined: i.symbols.defined,
                undefined: i.symbols.undefined,
            },
            hash_style: i.hash_style.into(),
            flags: elf::Flags {
                bind_now: i.flags.bind_now,
                textrel: i.flags.textrel,
                initfirst: i.flags.initfirst,
                nodeflib: i.flags.nodeflib,
                pie: i.flags.pie,
                static_tls: i.flags.static_tls,
            },
            initializers: elf::Initializers {
                dt_init: i.initializers.dt_init,
                init_array: i.initializers.init_array,
                preinit_array: i.initializers.preinit_array,
                total: i.initializers.total,
            },
            relocations: i.relocations.into(),
            // Found while reading the file; a saved document does not keep them.
            lookup_keys: None,
            deferred_keys: None,
        }
    }
}

/// Converts a field-less enum both ways, variant by variant.
macro_rules! same_variants {
    ($ours:ident, $theirs:path, $($v:ident),+) => {
        impl From<$theirs> for $ours {
            fn from(x: $theirs) -> Self {
                use $theirs as T;
                match x { $(T::$v => $ours::$v),+ }
            }
        }
        impl From<$ours> for $theirs {
            fn from(x: $ours) -> Self {
                use $theirs as T;
                match x { $($ours::$v => T::$v),+ }
            }
        }
    };
}

/// What kind of object this is ([`elf::ObjectKind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectKind {
    Pie,
    NonPie,
    Static,
    StaticPie,
    SharedObject,
}
same_variants!(
    ObjectKind,
    elf::ObjectKind,
    Pie,
    NonPie,
    Static,
    StaticPie,
    SharedObject
);

/// Symbol hash table style ([`elf::HashStyle`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HashStyle {
    Gnu,
    Sysv,
    Both,
    None,
}
same_variants!(HashStyle, elf::HashStyle, Gnu, Sysv, Both, None);

/// What a PT_LOAD segment holds ([`elf::layout::SegmentKind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SegmentKind {
    Text,
    ReadOnly,
    Writable,
}
same_variants!(
    SegmentKind,
    elf::layout::SegmentKind,
    Text,
    ReadOnly,
    Writable
);

/// Dynamic flags ([`elf::Flags`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flags {
    pub bind_now: bool,
    pub textrel: bool,
    pub initfirst: bool,
    pub nodeflib: bool,
    pub pie: bool,
    pub static_tls: bool,
}

/// Symbol counts of .dynsym ([`elf::SymbolCounts`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SymbolCounts {
    pub dynsym: u64,
    pub defined: u64,
    pub undefined: u64,
}

/// Initializers of one object ([`elf::Initializers`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Initializers {
    pub dt_init: bool,
    pub init_array: u64,
    pub preinit_array: u64,
    pub total: u64,
}

/// One PT_LOAD segment ([`elf::layout::Segment`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub kind: SegmentKind,
    pub perms: String,
    pub vaddr: u64,
    pub offset: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub bss: u64,
    pub mapped: u64,
}

impl From<elf::layout::Segment> for Segment {
    fn from(s: elf::layout::Segment) -> Self {
        Segment {
            kind: s.kind.into(),
            perms: s.perms,
            vaddr: s.vaddr,
            offset: s.offset,
            filesz: s.filesz,
            memsz: s.memsz,
            bss: s.bss,
            mapped: s.mapped,
        }
    }
}

impl From<Segment> for elf::layout::Segment {
    fn from(s: Segment) -> Self {
        elf::layout::Segment {
            kind: s.kind.into(),
            perms: s.perms,
            vaddr: s.vaddr,
            offset: s.offset,
            filesz: s.filesz,
            memsz: s.memsz,
            bss: s.bss,
            mapped: s.mapped,
        }
    }
}

/// One predicted mapping ([`elf::layout::Vma`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    pub perms: String,
    pub file_offset: Option<u64>,
}

impl From<elf::layout::Vma> for Vma {
    fn from(v: elf::layout::Vma) -> Self {
        Vma {
            start: v.start,
            end: v.end,
            perms: v.perms,
            file_offset: v.file_offset,
        }
    }
}

impl From<Vma> for elf::layout::Vma {
    fn from(v: Vma) -> Self {
        elf::layout::Vma {
            start: v.start,
            end: v.end,
            perms: v.perms,
            file_offset: v.file_offset,
        }
    }
}

/// Relocation counts per cost class ([`elf::reloc::ClassCounts`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassCounts {
    pub relative: u64,
    pub symbolic: u64,
    pub plt: u64,
    pub irelative: u64,
    pub tls: u64,
    pub copy: u64,
    pub other: u64,
}

impl From<elf::reloc::ClassCounts> for ClassCounts {
    fn from(c: elf::reloc::ClassCounts) -> Self {
        ClassCounts {
            relative: c.relative,
            symbolic: c.symbolic,
            plt: c.plt,
            irelative: c.irelative,
            tls: c.tls,
            copy: c.copy,
            other: c.other,
        }
    }
}

impl From<ClassCounts> for elf::reloc::ClassCounts {
    fn from(c: ClassCounts) -> Self {
        elf::reloc::ClassCounts {
            relative: c.relative,
            symbolic: c.symbolic,
            plt: c.plt,
            irelative: c.irelative,
            tls: c.tls,
            copy: c.copy,
            other: c.other,
        }
    }
}

/// The relocation facts of one object ([`elf::reloc::Relocations`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relocations {
    pub by_type: BTreeMap<String, u64>,
    pub by_class: ClassCounts,
    pub total: u64,
    pub relr: u64,
    pub relacount: u64,
    pub lazy: bool,
    pub startup_lookups: u64,
    pub cache_hits: u64,
    pub lazy_deferred: u64,
}

impl From<elf::reloc::Relocations> for Relocations {
    fn from(r: elf::reloc::Relocations) -> Self {
        Relocations {
            by_type: r.by_type,
            by_class: r.by_class.into(),
            total: r.total,
            relr: r.relr,
            relacount: r.relacount,
            lazy: r.lazy,
            startup_lookups: r.startup_lookups,
            cache_hits: r.cache_hits,
            lazy_deferred: r.lazy_deferred,
        }
    }
}

impl From<Relocations> for elf::reloc::Relocations {
    fn from(r: Relocations) -> Self {
        elf::reloc::Relocations {
            by_type: r.by_type,
            by_class: r.by_class.into(),
            total: r.total,
            relr: r.relr,
            relacount: r.relacount,
            lazy: r.lazy,
            startup_lookups: r.startup_lookups,
            cache_hits: r.cache_hits,
            lazy_deferred: r.lazy_deferred,
        }
    }
}

/// Totals over the closure ([`link_cost::Totals`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub objects: u64,
    pub missing: u64,
    pub file_bytes: u64,
    pub vmas: u64,
    pub relocations: ClassCounts,
    pub relocations_total: u64,
    pub startup_lookups: u64,
    pub cache_hits: u64,
    pub lazy_deferred: u64,
    pub initializers: u64,
}

impl From<link_cost::Totals> for Totals {
    fn from(t: link_cost::Totals) -> Self {
        Totals {
            objects: t.objects,
            missing: t.missing,
            file_bytes: t.file_bytes,
            vmas: t.vmas,
            relocations: t.relocations.into(),
            relocations_total: t.relocations_total,
            startup_lookups: t.startup_lookups,
            cache_hits: t.cache_hits,
            lazy_deferred: t.lazy_deferred,
            initializers: t.initializers,
        }
    }
}

/// One object's lookups ([`lookups::ObjectLookups`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectLookups {
    pub path: String,
    pub lookups: u64,
    pub probes: u64,
    pub unresolved: u64,
    pub resolved_in: BTreeMap<String, u64>,
}

impl From<lookups::ObjectLookups> for ObjectLookups {
    fn from(o: lookups::ObjectLookups) -> Self {
        ObjectLookups {
            path: o.path,
            lookups: o.lookups,
            probes: o.probes,
            unresolved: o.unresolved,
            resolved_in: o.resolved_in,
        }
    }
}

impl From<ObjectLookups> for lookups::ObjectLookups {
    fn from(o: ObjectLookups) -> Self {
        lookups::ObjectLookups {
            path: o.path,
            lookups: o.lookups,
            probes: o.probes,
            unresolved: o.unresolved,
            resolved_in: o.resolved_in,
        }
    }
}

/// The closure's lookup model ([`lookups::LookupModel`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LookupModel {
    pub lookups: u64,
    pub probes: u64,
    pub unresolved: u64,
    pub answered_by: BTreeMap<String, u64>,
    pub objects: Vec<ObjectLookups>,
}

impl From<lookups::LookupModel> for LookupModel {
    fn from(m: lookups::LookupModel) -> Self {
        LookupModel {
            lookups: m.lookups,
            probes: m.probes,
            unresolved: m.unresolved,
            answered_by: m.answered_by,
            objects: all(m.objects),
        }
    }
}

impl From<LookupModel> for lookups::LookupModel {
    fn from(m: LookupModel) -> Self {
        lookups::LookupModel {
            lookups: m.lookups,
            probes: m.probes,
            unresolved: m.unresolved,
            answered_by: m.answered_by,
            objects: all(m.objects),
            // Kept only for the oracle test of a live resolution; never saved.
            bindings: Vec::new(),
        }
    }
}
