//! The rules table, read from its data file and compiled for lookup.
//!
//! In: rules.txt (which frame names mean which category, and how they decide), compiled into
//! the binary. Out: [`rules`] and [`syscalls`] (the table as read), and for the classifier the
//! table compiled into hash maps and prefix lists, with [`clean_name`] (a frame's name as the
//! rules compare it) and [`is_ldso_object`]. The file is read once, at the first lookup.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

use super::Category;

/// How a rule's pattern is compared with a frame's (cleaned) name or object basename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    Exact,
    Prefix,
}

/// Which frames a rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Kernel,
    /// Any user frame.
    User,
    /// User frames in ld.so's object only (its private syscall wrappers).
    Ldso,
}

/// How a matching frame decides; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The category, where this is the innermost deciding frame.
    Fixed,
    /// Kernel unmapping work: exec's, exit's, or that of whoever asked for the unmap.
    Teardown,
    /// Kernel mapping/file work: exec's, ld.so's, or (for the application) kernel-other.
    OnBehalf,
    /// VMA duplication only under `dup_mmap`; transparent elsewhere.
    InFork,
    /// User frame that claims everything below it; the innermost one wins.
    Encloses,
}

/// One rule of the taxonomy.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub pattern: &'static str,
    pub how: Match,
    pub scope: Scope,
    pub kind: Kind,
    /// For `Teardown`, `OnBehalf` and `InFork` the category they usually mean.
    pub category: Category,
}

/// A syscall entry rule: the syscall's name (no prefix), its category and kind.
pub type SyscallRule = (&'static str, Category, Kind);

/// The table as data. Its grammar is at the file's head.
const RULES_TEXT: &str = include_str!("rules.txt");

/// rules.txt, read.
struct Parsed {
    frames: Vec<Rule>,
    syscalls: Vec<SyscallRule>,
}

fn parsed() -> &'static Parsed {
    static PARSED: OnceLock<Parsed> = OnceLock::new();
    PARSED.get_or_init(|| {
        parse(RULES_TEXT).unwrap_or_else(|e| panic!("src/attribute/categories/rules.txt: {e}"))
    })
}

/// The frame rules, in the file's order. Exact names are looked up in a hash map, prefixes
/// tried in order after.
pub fn rules() -> &'static [Rule] {
    &parsed().frames
}

/// Kernel syscall entry points, by syscall name once the `__x64_sys_`, `__do_sys_`, `ksys_`
/// ... prefix ([`SYSCALL_PREFIXES`]) is dropped.
pub fn syscalls() -> &'static [SyscallRule] {
    &parsed().syscalls
}

/// Reads the table; an error names the line.
fn parse(text: &'static str) -> Result<Parsed, String> {
    let mut out = Parsed {
        frames: Vec::new(),
        syscalls: Vec::new(),
    };
    // The head in force: scope (None for `syscall`), kind, category.
    let mut head: Option<(Option<Scope>, Kind, Category)> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |what: String| format!("line {}: {what}", i + 1);
        if let Some(h) = line.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            let words: Vec<&str> = h.split_whitespace().collect();
            let &[scope, kind, category] = &words[..] else {
                return Err(at(format!("`[{h}]` is not `[SCOPE KIND CATEGORY]`")));
            };
            let scope = match scope {
                "kernel" => Some(Scope::Kernel),
                "user" => Some(Scope::User),
                "ldso" => Some(Scope::Ldso),
                "syscall" => None,
                _ => return Err(at(format!("unknown scope `{scope}`"))),
            };
            let kind = match kind {
                "fixed" => Kind::Fixed,
                "teardown" => Kind::Teardown,
                "on_behalf" => Kind::OnBehalf,
                "in_fork" => Kind::InFork,
                "encloses" => Kind::Encloses,
                _ => return Err(at(format!("unknown kind `{kind}`"))),
            };
            let category = Category::from_name(category)
                .ok_or_else(|| at(format!("unknown category `{category}`")))?;
            head = Some((scope, kind, category));
            continue;
        }
        let Some((scope, kind, category)) = head else {
            return Err(at(
                "names before any `[SCOPE KIND CATEGORY]` head".to_string()
            ));
        };
        for word in line.split_whitespace() {
            let (pattern, how) = match word.strip_suffix('*') {
                Some(p) => (p, Match::Prefix),
                None => (word, Match::Exact),
            };
            match scope {
                Some(scope) => out.frames.push(Rule {
                    pattern,
                    how,
                    scope,
                    kind,
                    category,
                }),
                None if how == Match::Exact => out.syscalls.push((pattern, category, kind)),
                None => return Err(at(format!("a syscall is named exactly, not `{word}`"))),
            }
        }
    }
    Ok(out)
}

/// Prefixes of the kernel's syscall entry symbols (x86-64, i386, arm64; wrappers and bodies).
pub const SYSCALL_PREFIXES: &[&str] = &[
    "__x64_sys_",
    "__ia32_sys_",
    "__arm64_sys_",
    "__se_sys_",
    "__do_sys_",
    "ksys_",
    "sys_",
];

/// Basenames of dynamic loaders: glibc's on each architecture, and musl's.
pub const LDSO_OBJECTS: &[(&str, Match)] = &[
    ("ld-linux", Match::Prefix),
    ("ld64.so.", Match::Prefix),
    ("ld-musl-", Match::Prefix),
    ("ld.so.1", Match::Exact),
    ("ld.so", Match::Exact),
];

/// A word-at-a-time multiplicative hash (FxHash's): the keys are short, trusted symbol names,
/// and SipHash or byte-wise FNV cost more than the rest of a lookup.
#[derive(Default)]
struct WordHash(u64);

impl Hasher for WordHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        self.0 = h;
    }
}

type FastMap<V> = HashMap<&'static str, V, BuildHasherDefault<WordHash>>;

/// What a kernel prefix leads to.
#[derive(Clone, Copy)]
enum Prefixed {
    Rule(Category, Kind),
    /// A syscall entry point: look the rest up in [`syscalls`].
    Syscall,
}

/// Prefix patterns bucketed by their first byte after any leading underscores, so a name is
/// compared only with the few prefixes that could match it.
struct Prefixes<T> {
    buckets: Vec<Vec<(&'static str, T)>>,
}

impl<T: Copy> Prefixes<T> {
    fn new() -> Self {
        Prefixes {
            buckets: (0..128).map(|_| Vec::new()).collect(),
        }
    }
    fn key(s: &str) -> usize {
        usize::from(s.bytes().find(|&b| b != b'_').unwrap_or(b'_') & 0x7f)
    }
    fn add(&mut self, pattern: &'static str, target: T) {
        self.buckets[Self::key(pattern)].push((pattern, target));
    }
    fn find(&self, name: &str) -> Option<(&'static str, T)> {
        self.buckets[Self::key(name)]
            .iter()
            .copied()
            .find(|(p, _)| name.starts_with(p))
    }
}

/// The rules compiled for lookup.
pub(super) struct Table {
    kernel: FastMap<(Category, Kind)>,
    kernel_prefix: Prefixes<Prefixed>,
    /// User and ld.so-only rules (their names do not overlap).
    user: FastMap<&'static Rule>,
    user_prefix: Prefixes<&'static Rule>,
    syscalls: FastMap<(Category, Kind)>,
}

pub(super) fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table {
            kernel: FastMap::default(),
            kernel_prefix: Prefixes::new(),
            user: FastMap::default(),
            user_prefix: Prefixes::new(),
            syscalls: syscalls().iter().map(|&(n, c, k)| (n, (c, k))).collect(),
        };
        for p in SYSCALL_PREFIXES {
            t.kernel_prefix.add(p, Prefixed::Syscall);
        }
        for rule in rules() {
            match (rule.scope, rule.how) {
                (Scope::Kernel, Match::Exact) => {
                    t.kernel.insert(rule.pattern, (rule.category, rule.kind));
                }
                (Scope::Kernel, Match::Prefix) => t
                    .kernel_prefix
                    .add(rule.pattern, Prefixed::Rule(rule.category, rule.kind)),
                (_, Match::Exact) => {
                    let old = t.user.insert(rule.pattern, rule);
                    debug_assert!(old.is_none(), "{} is in rules.txt twice", rule.pattern);
                }
                (_, Match::Prefix) => t.user_prefix.add(rule.pattern, rule),
            }
        }
        t
    })
}

/// Compiler clone suffixes, after a `.`.
const CLONE_SUFFIXES: &[&[u8]] = &[
    b"isra",
    b"constprop",
    b"part",
    b"cold",
    b"lto_priv",
    b"llvm",
    b"localalias",
];

/// A frame's name without perf's `+0x..` offset, `@plt`/`@@VERSION`, compiler clone suffixes
/// (`.isra.0`, `.constprop.0`, `.part.0`, `.cold`, `.lto_priv.0`, `.llvm.123`) and glibc's
/// `__GI_` alias prefix. Borrows; never allocates; one pass over the bytes.
pub fn clean_name(name: &str) -> &str {
    let name = name.trim_ascii();
    let b = name.as_bytes();
    let mut end = b.len();
    for (i, &c) in b.iter().enumerate() {
        let cut = match c {
            b'+' => b[i + 1..].starts_with(b"0x"),
            b'@' => i > 0,
            b'.' => CLONE_SUFFIXES.iter().any(|s| b[i + 1..].starts_with(s)),
            _ => false,
        };
        if cut {
            end = i;
            break;
        }
    }
    // The cut is at an ASCII byte, so a char boundary.
    let s = &name[..end];
    s.strip_prefix("__GI_").unwrap_or(s)
}

/// Whether `object` (a path or basename) is a dynamic loader.
pub fn is_ldso_object(object: &str) -> bool {
    let base = object.rsplit('/').next().unwrap_or(object);
    base.starts_with("ld")
        && LDSO_OBJECTS.iter().any(|&(p, how)| match how {
            Match::Exact => base == p,
            Match::Prefix => base.starts_with(p),
        })
}

/// The rule a kernel frame matches: exact name, then syscall entry or prefix.
pub(super) fn kernel_rule(t: &Table, name: &str) -> Option<(Category, Kind)> {
    if let Some(&hit) = t.kernel.get(name) {
        return Some(hit);
    }
    match t.kernel_prefix.find(name)? {
        (_, Prefixed::Rule(c, k)) => Some((c, k)),
        (p, Prefixed::Syscall) => t.syscalls.get(&name[p.len()..]).copied(),
    }
}

pub(super) fn user_rule(t: &Table, name: &str, in_ldso: bool) -> Option<&'static Rule> {
    match t.user.get(name) {
        Some(rule) if rule.scope == Scope::Ldso && !in_ldso => None,
        Some(rule) => Some(rule),
        None => t.user_prefix.find(name).map(|(_, r)| r),
    }
}
