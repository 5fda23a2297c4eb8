//! Names for a [`Recording`]'s frames: user addresses through the process's address space at
//! the time of the sample, kernel addresses through kallsyms.
//!
//! The address spaces are replayed in time order (`spaces.rs`): `/proc/PID/maps` from before
//! the run, a copy of the parent's at each fork (the kernel sends no MMAP records for
//! inherited mappings), emptied at exec, and each MMAP2 record mapped in. A user address then
//! becomes (object, file offset), the file offset a link-time address through the object's
//! PT_LOAD headers, and that a function through [`ObjectSymbols`] (build-id debug file,
//! `.symtab`, `.dynsym`).
//!
//! Every caller frame is looked up at its return address minus one, so that a call that is
//! the last instruction of a function (a call to a `noreturn` function such as `_exit`) is
//! named after its caller and not after whatever follows it; the leaf is looked up as is.
//!
//! Speed: objects are loaded once, when a frame first lands in them, and names are cached
//! per (object, file offset) and per kernel address, so a million frames cost a million
//! binary searches in a small mapping table and hash lookups (the `sampler` integration
//! test prints the figure).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::spaces::{Mapped, Space, Spaces};
use super::{KernelSymbols, ObjectSymbols};
use crate::record::samples::{MapRange, Recording, Sample, TaskEvent, TaskKind};

/// Whether a frame ran in the kernel or in user space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    Kernel,
    User,
}

/// One named frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: FrameKind,
    /// The function; `[object+0xVADDR]` when the object has no symbol there (the link-time
    /// address, as `nm` prints it; the file offset if the object could not be read);
    /// `[unknown]` outside any known mapping.
    pub name: Arc<str>,
    /// The object's path as mapped (user frames inside a mapping).
    pub object: Option<Arc<str>>,
    /// The address as sampled.
    pub addr: u64,
}

impl Frame {
    pub fn is_kernel(&self) -> bool {
        self.kind == FrameKind::Kernel
    }

    /// The name as flame graphs show it: kernel frames end in `_[k]` (the FlameGraph
    /// convention, which colours them as kernel code).
    pub fn label(&self) -> String {
        match self.kind {
            FrameKind::Kernel => format!("{}_[k]", self.name),
            FrameKind::User => self.name.to_string(),
        }
    }
}

/// The named call chain of one sample, leaf first: kernel frames, then user frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolizedStack {
    /// Index into [`Recording::samples`].
    pub sample: usize,
    pub pid: i32,
    pub tid: i32,
    pub time_ns: u64,
    pub weight_ns: u64,
    pub frames: Vec<Frame>,
}

impl SymbolizedStack {
    /// The frame the CPU was executing.
    pub fn leaf(&self) -> Option<&Frame> {
        self.frames.first()
    }

    /// The innermost user frame (the system-call site when the sample hit the kernel).
    pub fn user_leaf(&self) -> Option<&Frame> {
        self.frames.iter().find(|f| f.kind == FrameKind::User)
    }

    /// Whether any frame of `kind` is the function `name`.
    pub fn contains(&self, kind: FrameKind, name: &str) -> bool {
        self.frames
            .iter()
            .any(|f| f.kind == kind && &*f.name == name)
    }

    /// The stack as a folded line's frames (root first, `;`-separated), for flame graphs.
    pub fn folded(&self) -> String {
        let labels: Vec<String> = self.frames.iter().rev().map(Frame::label).collect();
        labels.join(";")
    }
}

/// Symbolizes every sample of `rec` (one [`SymbolizedStack`] per sample, in order), with the
/// address spaces of `maps_at_start` (normally `&rec.maps_at_start`) and build-id debug files
/// from `debug_roots`.
pub fn symbolize(
    rec: &Recording,
    maps_at_start: &BTreeMap<i32, Vec<MapRange>>,
    debug_roots: &[PathBuf],
) -> Vec<SymbolizedStack> {
    Symbolizer::new(debug_roots).symbolize(rec, maps_at_start)
}

/// The lookup address of a frame: the leaf as is, callers at their return address minus one.
fn lookup_addr(addr: u64, is_leaf: bool) -> u64 {
    if is_leaf {
        addr
    } else {
        addr.saturating_sub(1)
    }
}

/// The kernel function of every kernel frame in `samples`, by lookup address (what
/// [`Recording::kernel_names`] holds).
pub(crate) fn kernel_names(samples: &[Sample], ks: &KernelSymbols) -> BTreeMap<u64, String> {
    let mut seen = HashSet::new();
    let mut out = BTreeMap::new();
    for s in samples {
        for (i, &a) in s.kernel.iter().enumerate() {
            let key = lookup_addr(a, i == 0);
            if seen.insert(key) {
                if let Some(name) = ks.symbolize(key) {
                    out.insert(key, name.to_string());
                }
            }
        }
    }
    out
}

/// FxHash (rustc's hasher): the cache keys are small integers, SipHash would dominate.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A PT_LOAD header: file bytes `[offset, offset + filesz)` are at link-time `vaddr`.
#[derive(Debug, Clone, Copy)]
struct Load {
    offset: u64,
    filesz: u64,
    vaddr: u64,
}

enum Loaded {
    /// Not looked at yet.
    No,
    /// Not a file (`[vdso]`, anonymous) or unreadable.
    Failed,
    Yes {
        symbols: Option<Box<ObjectSymbols>>,
        loads: Vec<Load>,
    },
}

struct Object {
    path: Arc<str>,
    /// What `[...]` labels call it: the file name, or the kernel's label without brackets.
    short: String,
    loaded: Loaded,
}

/// A symbolizer with its caches; reuse it for several recordings of the same machine.
pub struct Symbolizer {
    debug_roots: Vec<PathBuf>,
    objects: Vec<Object>,
    object_ids: HashMap<Arc<str>, u32>,
    user_cache: FastMap<(u32, u64), Arc<str>>,
    kernel_cache: FastMap<u64, Arc<str>>,
    kernel: Option<KernelSymbols>,
    kernel_tried: bool,
    unknown: Arc<str>,
    problems: Vec<String>,
}

impl Symbolizer {
    pub fn new(debug_roots: &[PathBuf]) -> Symbolizer {
        Symbolizer {
            debug_roots: debug_roots.to_vec(),
            objects: Vec::new(),
            object_ids: HashMap::new(),
            user_cache: FastMap::default(),
            kernel_cache: FastMap::default(),
            kernel: None,
            kernel_tried: false,
            unknown: Arc::from("[unknown]"),
            problems: Vec::new(),
        }
    }

    /// Uses these kernel symbols for kernel frames a recording does not name itself
    /// (otherwise /proc/kallsyms is read when first needed).
    pub fn with_kernel_symbols(mut self, ks: KernelSymbols) -> Symbolizer {
        self.kernel = Some(ks);
        self.kernel_tried = true;
        self
    }

    /// What could not be read (objects, kallsyms), one line each, for a report.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// See [`symbolize()`].
    pub fn symbolize(
        &mut self,
        rec: &Recording,
        maps_at_start: &BTreeMap<i32, Vec<MapRange>>,
    ) -> Vec<SymbolizedStack> {
        let mut spaces = Spaces::default();
        for (&pid, maps) in maps_at_start {
            let mut space = Space::default();
            for m in maps.iter().filter(|m| m.is_executable()) {
                let obj = self.intern(&m.path);
                space.insert(Mapped {
                    start: m.start,
                    end: m.end,
                    pgoff: m.pgoff,
                    obj,
                });
            }
            spaces.set(pid, space);
        }

        let mut order: Vec<usize> = (0..rec.samples.len()).collect();
        if !rec.samples.is_sorted_by_key(|s| s.time_ns) {
            order.sort_by_key(|&i| rec.samples[i].time_ns);
        }
        let (mut ti, mut mi) = (0, 0);
        let mut out = Vec::with_capacity(rec.samples.len());
        for i in order {
            let s = &rec.samples[i];
            // Apply every task and mmap record up to this sample, in time order (a task
            // record first on a tie: the exec comes before the new image's mappings).
            loop {
                let t = rec
                    .tasks
                    .get(ti)
                    .map(|t| t.time_ns)
                    .filter(|&t| t <= s.time_ns);
                let m = rec
                    .mmaps
                    .get(mi)
                    .map(|m| m.time_ns)
                    .filter(|&m| m <= s.time_ns);
                match (t, m) {
                    (Some(t), Some(m)) if t <= m => {
                        apply_task(&mut spaces, &rec.tasks[ti]);
                        ti += 1;
                    }
                    (Some(_), None) => {
                        apply_task(&mut spaces, &rec.tasks[ti]);
                        ti += 1;
                    }
                    (_, Some(_)) => {
                        let e = &rec.mmaps[mi];
                        let obj = self.intern(&e.path);
                        spaces.map(
                            e.pid,
                            Mapped {
                                start: e.addr,
                                end: e.addr.saturating_add(e.len),
                                pgoff: e.pgoff,
                                obj,
                            },
                        );
                        mi += 1;
                    }
                    (None, None) => break,
                }
            }
            let mut frames = Vec::with_capacity(s.kernel.len() + s.user.len());
            for (k, &a) in s.kernel.iter().enumerate() {
                let name = self.kernel_name(rec, lookup_addr(a, k == 0));
                frames.push(Frame {
                    kind: FrameKind::Kernel,
                    name,
                    object: None,
                    addr: a,
                });
            }
            let space = spaces.get(s.pid);
            for (u, &a) in s.user.iter().enumerate() {
                let is_leaf = u == 0 && s.kernel.is_empty();
                frames.push(self.user_frame(space, a, lookup_addr(a, is_leaf)));
            }
            out.push(SymbolizedStack {
                sample: i,
                pid: s.pid,
                tid: s.tid,
                time_ns: s.time_ns,
                weight_ns: s.weight_ns,
                frames,
            });
        }
        out.sort_by_key(|st| st.sample);
        out
    }

    fn intern(&mut self, path: &str) -> u32 {
        if let Some(&id) = self.object_ids.get(path) {
            return id;
        }
        let id = self.objects.len() as u32;
        let path: Arc<str> = Arc::from(path);
        let short = if path.starts_with('/') {
            Path::new(&*path)
                .file_name()
                .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
        } else {
            path.trim_start_matches('[')
                .trim_end_matches(']')
                .to_string()
        };
        self.objects.push(Object {
            path: Arc::clone(&path),
            short,
            loaded: Loaded::No,
        });
        self.object_ids.insert(path, id);
        id
    }

    fn user_frame(&mut self, space: Option<&Space>, addr: u64, lookup: u64) -> Frame {
        let Some(m) = space.and_then(|s| s.find(lookup)) else {
            return Frame {
                kind: FrameKind::User,
                name: Arc::clone(&self.unknown),
                object: None,
                addr,
            };
        };
        let offset = lookup - m.start + m.pgoff;
        let key = (m.obj, offset);
        let name = match self.user_cache.get(&key) {
            Some(n) => Arc::clone(n),
            None => {
                let n = self.name_in_object(m.obj, offset);
                self.user_cache.insert(key, Arc::clone(&n));
                n
            }
        };
        let obj = &self.objects[m.obj as usize];
        let object = (!obj.path.is_empty()).then(|| Arc::clone(&obj.path));
        Frame {
            kind: FrameKind::User,
            name,
            object,
            addr,
        }
    }

    /// The function at file offset `offset` of object `id`, or a `[object+0x...]` label.
    fn name_in_object(&mut self, id: u32, offset: u64) -> Arc<str> {
        let roots = &self.debug_roots;
        let problems = &mut self.problems;
        let obj = &mut self.objects[id as usize];
        if obj.path.is_empty() || obj.path.starts_with("//anon") {
            return Arc::clone(&self.unknown);
        }
        if matches!(obj.loaded, Loaded::No) {
            obj.loaded = load_object(&obj.path, roots, problems);
        }
        match &obj.loaded {
            Loaded::Yes { symbols, loads } => {
                let vaddr = file_to_vaddr(loads, offset);
                match symbols.as_ref().and_then(|s| s.symbolize(vaddr)) {
                    Some((name, _)) => Arc::from(name),
                    None => Arc::from(format!("[{}+{vaddr:#x}]", obj.short)),
                }
            }
            _ => Arc::from(format!("[{}+{offset:#x}]", obj.short)),
        }
    }

    fn kernel_name(&mut self, rec: &Recording, lookup: u64) -> Arc<str> {
        if let Some(n) = self.kernel_cache.get(&lookup) {
            return Arc::clone(n);
        }
        let name = if !rec.kernel_names.is_empty() {
            rec.kernel_names.get(&lookup).map(|n| Arc::from(n.as_str()))
        } else {
            if !self.kernel_tried {
                self.kernel_tried = true;
                match KernelSymbols::load() {
                    Ok(ks) if ks.hidden() => {
                        self.problems.push(ks.hidden_reason().unwrap_or_default())
                    }
                    Ok(ks) => self.kernel = Some(ks),
                    Err(e) => self
                        .problems
                        .push(format!("kernel frames are not named: {e}")),
                }
            }
            self.kernel
                .as_ref()
                .and_then(|k| k.symbolize(lookup))
                .map(Arc::from)
        };
        let name = name.unwrap_or_else(|| Arc::clone(&self.unknown));
        self.kernel_cache.insert(lookup, Arc::clone(&name));
        name
    }
}

fn apply_task(spaces: &mut Spaces, t: &TaskEvent) {
    match t.kind {
        TaskKind::Fork => {
            if let Some(ppid) = t.ppid.filter(|&p| p != t.pid) {
                spaces.fork(ppid, t.pid);
            }
        }
        TaskKind::Exec => spaces.exec(t.pid),
        TaskKind::Exit | TaskKind::Comm => {}
    }
}

/// The link-time address of a file offset: through the PT_LOAD that holds it, else as is.
fn file_to_vaddr(loads: &[Load], offset: u64) -> u64 {
    loads
        .iter()
        .find(|l| offset >= l.offset && offset - l.offset < l.filesz)
        .map_or(offset, |l| offset - l.offset + l.vaddr)
}

fn load_object(path: &str, roots: &[PathBuf], problems: &mut Vec<String>) -> Loaded {
    if !path.starts_with('/') {
        return Loaded::Failed;
    }
    let p = Path::new(path);
    let loads = match read_loads(p) {
        Ok(l) => l,
        Err(e) => {
            problems.push(format!("{path}: {e}; its frames are not named"));
            return Loaded::Failed;
        }
    };
    let symbols = match ObjectSymbols::load(p, roots) {
        Ok(s) => Some(Box::new(s)),
        Err(e) => {
            problems.push(format!("{path}: {e}; its frames are not named"));
            None
        }
    };
    Loaded::Yes { symbols, loads }
}

/// The PT_LOAD headers of an ELF file.
fn read_loads(path: &Path) -> Result<Vec<Load>, String> {
    use goblin::container::{Container, Ctx, Endian};
    use goblin::elf::{program_header::PT_LOAD, Elf, ProgramHeader};
    let file = crate::elf::MappedFile::open(path).map_err(|e| e.to_string())?;
    let bytes = file.bytes();
    crate::elf::precheck(bytes, path).map_err(|e| e.to_string())?;
    let header = Elf::parse_header(bytes).map_err(|e| e.to_string())?;
    let fits = u64::from(header.e_phnum)
        .checked_mul(56)
        .and_then(|n| n.checked_add(header.e_phoff))
        .is_some_and(|end| end <= bytes.len() as u64);
    if header.e_phentsize != 56 || !fits {
        return Err("program header table does not fit in the file".into());
    }
    let ctx = Ctx::new(Container::Big, Endian::Little);
    let phdrs = ProgramHeader::parse(bytes, header.e_phoff as usize, header.e_phnum as usize, ctx)
        .map_err(|e| e.to_string())?;
    Ok(phdrs
        .iter()
        .filter(|p| p.p_type == PT_LOAD)
        .map(|p| Load {
            offset: p.p_offset,
            filesz: p.p_filesz,
            vaddr: p.p_vaddr,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_offsets_to_link_time_addresses() {
        // Like a PIE: text at offset 0x1000 linked at 0x1000, data at 0x2de8 linked 0x3de8.
        let loads = [
            Load {
                offset: 0,
                filesz: 0x628,
                vaddr: 0,
            },
            Load {
                offset: 0x1000,
                filesz: 0x1a5,
                vaddr: 0x1000,
            },
            Load {
                offset: 0x2de8,
                filesz: 0x248,
                vaddr: 0x3de8,
            },
        ];
        assert_eq!(file_to_vaddr(&loads, 0x1139), 0x1139);
        assert_eq!(file_to_vaddr(&loads, 0x2df0), 0x3df0);
        assert_eq!(file_to_vaddr(&loads, 0x9000), 0x9000, "outside: as is");
    }

    #[test]
    fn leaf_and_callers() {
        assert_eq!(lookup_addr(0x1000, true), 0x1000);
        assert_eq!(lookup_addr(0x1000, false), 0xfff);
        assert_eq!(lookup_addr(0, false), 0);
    }

    #[test]
    fn fx_hasher_spreads_small_keys() {
        let h = |k: (u32, u64)| {
            let mut s = FxHasher::default();
            std::hash::Hash::hash(&k, &mut s);
            s.finish()
        };
        assert_ne!(h((0, 1)), h((1, 0)));
        assert_ne!(h((0, 1)), h((0, 2)));
    }

    #[test]
    fn labels_and_folding() {
        let f = |kind, name: &str| Frame {
            kind,
            name: Arc::from(name),
            object: None,
            addr: 0,
        };
        let st = SymbolizedStack {
            sample: 0,
            pid: 1,
            tid: 1,
            time_ns: 0,
            weight_ns: 1,
            frames: vec![
                f(FrameKind::Kernel, "zap_pte_range"),
                f(FrameKind::Kernel, "exit_mmap"),
                f(FrameKind::User, "_exit"),
                f(FrameKind::User, "main"),
            ],
        };
        assert_eq!(st.folded(), "main;_exit;exit_mmap_[k];zap_pte_range_[k]");
        assert_eq!(st.user_leaf().map(|f| &*f.name), Some("_exit"));
        assert_eq!(st.leaf().map(|f| &*f.name), Some("zap_pte_range"));
        assert!(st.contains(FrameKind::Kernel, "exit_mmap"));
        assert!(!st.contains(FrameKind::User, "exit_mmap"));
    }
}
