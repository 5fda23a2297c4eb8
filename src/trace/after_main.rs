//! The loader after `main`, in per-object runs: every `dlopen`/`dlmopen` and `dlclose`, the
//! objects each one mapped with ld.so's phases for each, the threads their initializers
//! started, and lazy PLT binding per object (see [`crate::record::after_main`]).
//!
//! In: the target stopped at `main`, ld.so's run-time addresses ([`LdsoPoints`]), and then
//! every stop of any of its threads at the breakpoints planted here. Out: an [`AfterMain`].
//!
//! Windows: libc's exported `dlopen`/`dlmopen`/`dlclose`, and with libc's debug symbols its
//! internal `__libc_dlopen_mode`/`__libc_dlclose` (its own loads), entry to return. A failing
//! `dlopen` longjmps out of ld.so's `_dl_open`, but libc's `dlopen` catches that and returns
//! NULL, so its return always comes. With ld.so's debug symbols, inside a window: `_dl_map_object`
//! (its return's rax is the link_map found or mapped: new when it was in no namespace's list
//! at the call's entry), `_dl_relocate_object` and `call_init` (rdi: the link_map), and
//! `_dl_call_fini` (rdi: the link_map; planted at the first `dlclose`) inside a `dlclose`; each charged to the innermost open
//! window of the same thread. ld.so's own work runs under its load lock, but libc's entry does
//! not: windows are kept per thread, and a return breakpoint is matched by the thread and its
//! stack pointer (a return address repeats: a `dlopen` nested in a constructor returns to the
//! same `call_init` site, two threads share a call site).
//!
//! Every entry breakpoint here is persistent (threads run while we handle one of them): an
//! entry whose first instruction the tracer can run itself (a `push`, a `cmp` or `mov` with a
//! simple memory operand: [`Breakpoints::insert_emulated`]) is emulated in place, one stop;
//! any other is single-stepped, two. A return breakpoint is an int3 planted at the window's
//! entry and counted per return address over all threads: the return that leaves no open
//! window there takes it out (one stop, and nothing left at a return site that other calls
//! pass: call_init's, for the objects a dlopen did not map); while another window still
//! returns there, it is stepped over and kept (two). A thread already trapped on an int3 that
//! another thread's stop took out is moved back onto the instruction, so that trap never
//! reaches the program as a SIGTRAP of its own. Debug registers would make a return one stop
//! too, but a stop of a thread with one armed costs the target more than the int3 replay
//! measures, and the windows read higher than with these int3s.
//!
//! Without ld.so's debug symbols only libc's windows are seen; the objects a `dlopen` mapped
//! are the difference of the namespaces' lists (r_debug's `r_map` and those chained from it,
//! walked at entry and return).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use nix::sys::ptrace;
use nix::unistd::Pid;

use super::breakpoint::{read_cstring, Breakpoints};
use crate::record::after_main::{
    AfterMain, AfterMainSeen, Cost, Dlclose, Dlopen, LazyBinds, LoadedObject, Outcome,
    StartedThread,
};

/// ld.so's run-time addresses the loader's work after `main` is seen at.
#[derive(Debug, Clone, Default)]
pub(super) struct LdsoPoints {
    pub map: Option<u64>,
    pub reloc: Option<u64>,
    pub init: Option<u64>,
    pub fini: Option<u64>,
    pub fixup: Option<u64>,
    /// `_r_debug`: its `r_map` (offset 8) heads the base namespace's link_map list.
    pub r_debug: Option<u64>,
    /// Why there is no per-object detail (no debug symbols), or None when there is.
    pub coarse_why: Option<String>,
    /// Where libc's debug symbols are looked for: its internal `__libc_dlopen_mode` and
    /// `__libc_dlclose` are in no dynamic symbol table.
    pub debug_roots: Vec<std::path::PathBuf>,
}

const TAG_OPEN: u32 = 40;
const TAG_MOPEN: u32 = 41;
const TAG_CLOSE: u32 = 42;
const TAG_MAP: u32 = 43;
const TAG_RELOC: u32 = 44;
const TAG_INIT: u32 = 45;
const TAG_FINI: u32 = 46;
const TAG_FIXUP: u32 = 47;
const TAG_RET: u32 = 48;

/// Longest link_map list walked (a corrupt list must not loop forever).
const MAX_MAPS: usize = 100_000;

/// A thread's CPU, the monotonic clock, and that thread's own bookkeeping, at one stop.
#[derive(Debug, Clone, Copy)]
struct Stamp {
    cpu: Option<u64>,
    mono: u64,
    held: u64,
    stops: u64,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Open(usize),
    Close(usize),
    Map(usize),
    Reloc(usize, usize),
    Init(usize, usize),
    Fini(usize, usize),
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Open(_) => "dlopen",
            Kind::Close(_) => "dlclose",
            Kind::Map(_) => "_dl_map_object",
            Kind::Reloc(..) => "_dl_relocate_object",
            Kind::Init(..) => "call_init",
            Kind::Fini(..) => "_dl_call_fini",
        }
    }
}

/// What a stop at a breakpoint of `tag` marked; `closed`: for a return, the kind of window
/// it closed ("" for none).
fn tag_name(tag: u32, closed: &'static str) -> &'static str {
    match tag {
        TAG_OPEN => "dlopen",
        TAG_MOPEN => "dlmopen",
        TAG_CLOSE => "dlclose",
        TAG_MAP => "_dl_map_object",
        TAG_RELOC => "_dl_relocate_object",
        TAG_INIT => "call_init",
        TAG_FINI => "_dl_call_fini",
        TAG_FIXUP => "_dl_fixup",
        _ => match closed {
            "" => "return of no open window",
            "dlopen" => "return of dlopen",
            "dlclose" => "return of dlclose",
            "_dl_map_object" => "return of _dl_map_object",
            "_dl_relocate_object" => "return of _dl_relocate_object",
            "call_init" => "return of call_init",
            _ => "return of _dl_call_fini",
        },
    }
}

/// An open window on one thread: where and at which stack pointer its function returns.
#[derive(Debug)]
struct Frame {
    kind: Kind,
    ret: u64,
    rsp_after: u64,
    start: Stamp,
}

/// What ldcost did to one thread: the time it held it stopped, the stops it cost.
#[derive(Debug, Default, Clone, Copy)]
struct Clock {
    held: u64,
    stops: u64,
}

/// A thread started inside an object's initializers.
#[derive(Debug)]
struct Started {
    tid: i32,
    open: usize,
    object: usize,
}

/// The tracing of the loader after `main` (module doc).
pub(super) struct Tracer {
    pid: Pid,
    main_name: String,
    per_object: bool,
    coarse_why: Option<String>,
    r_debug: Option<u64>,
    tags: HashMap<u64, u32>,
    opens: Vec<Dlopen>,
    /// Per open: the link_maps in the namespace list at its entry, and those it mapped.
    known: Vec<HashSet<u64>>,
    mapped: Vec<Vec<u64>>,
    closes: Vec<Dlclose>,
    lazy: Vec<LazyBinds>,
    lazy_ix: HashMap<String, usize>,
    names: HashMap<u64, String>,
    /// Per link_map of the base namespace: the names ld.so matches a request against
    /// (`l_name` and the `l_libname` list), as last read.
    libnames: HashMap<u64, Vec<String>>,
    frames: HashMap<i32, Vec<Frame>>,
    /// Open windows per return address, over all threads: its int3 stays while any needs it.
    ret_refs: HashMap<u64, usize>,
    /// Every address a return int3 was ever planted at (a thread may be trapped on one
    /// that has since been taken out).
    ret_sites: HashSet<u64>,
    clocks: HashMap<i32, Clock>,
    threads: HashSet<i32>,
    started: Vec<Started>,
    stops: u64,
    /// Stops by what they marked and how they were taken, for [`Tracer::finish`] to print in
    /// debug builds.
    tally: std::collections::BTreeMap<(&'static str, &'static str), u64>,
    /// `_dl_call_fini`, planted at the first `dlclose`: before, its only calls are the exit's
    /// finalizers, which no window holds.
    fini: Option<u64>,
    /// The kind of window the last return breakpoint closed ("" for none).
    last_return: &'static str,
}

use super::segments::mono_now as monotonic_ns;

/// A thread's CPU by the scheduler (ns): `/proc/PID/task/TID/schedstat`'s first field.
fn thread_cpu(pid: Pid, tid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    s.split_whitespace().next()?.parse().ok()
}

impl Tracer {
    /// Plants the breakpoints after `main` (the target stopped there, every start-up
    /// breakpoint removed). Err: why nothing after `main` can be seen.
    pub(super) fn arm(
        pid: Pid,
        bps: &mut Breakpoints,
        ldso: &LdsoPoints,
        main_name: &Path,
    ) -> Result<Tracer, String> {
        let Some(r_debug) = ldso.r_debug else {
            return Err("ld.so's _r_debug was not found".into());
        };
        // Every window's CPU is its thread's by the scheduler: without it nothing after main
        // could be given a CPU figure, so nothing is recorded rather than zeros.
        if thread_cpu(pid, pid.as_raw()).is_none() {
            return Err(format!(
                "per-thread CPU cannot be read (/proc/{pid}/task/{pid}/schedstat: a kernel without CONFIG_SCHED_INFO?)"
            ));
        }
        let Some((base, libc)) = super::inspect::libc_base(pid) else {
            return Err("no libc.so mapped (not a glibc program)".into());
        };
        let syms = super::inspect::symbols_of(Path::new(&libc), &[])
            .map_err(|e| format!("cannot read {libc}'s symbols: {e}"))?;
        let mut t = Tracer {
            pid,
            main_name: main_name.display().to_string(),
            per_object: ldso.coarse_why.is_none(),
            coarse_why: ldso.coarse_why.clone(),
            r_debug: Some(r_debug),
            tags: HashMap::new(),
            opens: Vec::new(),
            known: Vec::new(),
            mapped: Vec::new(),
            closes: Vec::new(),
            lazy: Vec::new(),
            lazy_ix: HashMap::new(),
            names: HashMap::new(),
            libnames: HashMap::new(),
            frames: HashMap::new(),
            ret_refs: HashMap::new(),
            ret_sites: HashSet::new(),
            clocks: HashMap::new(),
            threads: HashSet::from([pid.as_raw()]),
            started: Vec::new(),
            stops: 0,
            tally: Default::default(),
            last_return: "",
            fini: ldso.fini.filter(|_| ldso.coarse_why.is_none()),
        };
        let mut planted = 0;
        for (name, tag) in [
            ("dlopen", TAG_OPEN),
            ("dlmopen", TAG_MOPEN),
            ("dlclose", TAG_CLOSE),
        ] {
            if let Some(s) = syms.lookup(name).filter(|s| s.value != 0) {
                t.plant(bps, pid, base + s.value, tag);
                planted += 1;
            }
        }
        if planted == 0 {
            return Err(format!("{libc} exports no dlopen (not glibc)"));
        }
        // libc's own loads (NSS modules, iconv's gconv modules, libgcc_s for unwinding) go
        // through its internal entries, not `dlopen`: same arguments (rdi the file, rsi the
        // mode; rdi the handle), so the same windows. Only libc's debug symbols name them;
        // without those such loads are not seen.
        if !ldso.debug_roots.is_empty() {
            if let Ok(dbg) = super::inspect::symbols_of(Path::new(&libc), &ldso.debug_roots) {
                for (name, tag) in [
                    ("__libc_dlopen_mode", TAG_OPEN),
                    ("__libc_dlclose", TAG_CLOSE),
                ] {
                    if let Some(s) = dbg.lookup(name).filter(|s| s.value != 0) {
                        t.plant(bps, pid, base + s.value, tag);
                    }
                }
            }
        }
        if t.per_object {
            for (a, tag) in [
                (ldso.map, TAG_MAP),
                (ldso.reloc, TAG_RELOC),
                (ldso.init, TAG_INIT),
                (ldso.fixup, TAG_FIXUP),
            ] {
                if let Some(a) = a {
                    t.plant(bps, pid, a, tag);
                }
            }
        }
        Ok(t)
    }

    /// A word of the target's memory, through /proc/PID/mem: any of its threads may be the
    /// one stopped (ptrace's PEEKDATA needs the task it names to be in a stop).
    fn peek(&self, addr: u64) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::open(format!("/proc/{}/mem", self.pid)).ok()?;
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, addr).ok()?;
        Some(u64::from_le_bytes(b))
    }

    /// Plants a breakpoint through `tid`, the thread in a stop.
    fn plant(&mut self, bps: &mut Breakpoints, tid: Pid, addr: u64, tag: u32) {
        if self.tags.contains_key(&addr) {
            return;
        }
        if bps.insert_emulated(tid, addr, tag).is_ok() {
            self.tags.insert(addr, tag);
        }
    }

    /// Whether `tid` is one of the target's threads (not a forked child sharing its memory).
    fn is_thread(&mut self, tid: i32) -> bool {
        if self.threads.contains(&tid) {
            return true;
        }
        let ours =
            super::inspect::process::thread_group(Pid::from_raw(tid)) == Some(self.pid.as_raw());
        if ours {
            self.threads.insert(tid);
        }
        ours
    }

    /// A SIGTRAP of thread `tid`: when it is at one of the breakpoints planted here, records
    /// what it marks and moves the thread past it (left stopped, for the caller to resume);
    /// returns the stops it cost. None: not ours.
    pub(super) fn on_trap(
        &mut self,
        tid: Pid,
        bps: &mut Breakpoints,
        seen: Instant,
    ) -> Option<nix::Result<u64>> {
        let regs = match ptrace::getregs(tid) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let t = tid.as_raw();
        let addr = regs.rip.wrapping_sub(1);
        if self.ret_sites.contains(&addr) {
            return Some(self.on_return_trap(tid, addr, &regs, bps, seen));
        }
        let tag = *self.tags.get(&addr)?;
        let stepped = !bps.emulated(addr);
        let thread = self.is_thread(t);
        if thread {
            self.clocks.entry(t).or_default().stops += 1;
            self.stops += 1;
            let stamp = self.stamp(t);
            self.record(t, tag, &regs, stamp, bps);
        }
        let r = bps.hit(tid).map(|_| ());
        let cost = if stepped { 2 } else { 1 };
        if thread {
            let what = tag_name(tag, self.last_return);
            let how = if stepped { "stepped" } else { "emulated" };
            *self.tally.entry((what, how)).or_default() += cost;
        }
        if thread {
            if stepped {
                self.clocks.entry(t).or_default().stops += 1;
                self.stops += 1;
            }
            self.clocks.entry(t).or_default().held += seen.elapsed().as_nanos() as u64;
        }
        Some(r.map(|_| cost))
    }

    fn stamp(&self, tid: i32) -> Stamp {
        let c = self.clocks.get(&tid).copied().unwrap_or_default();
        Stamp {
            cpu: thread_cpu(self.pid, tid),
            mono: monotonic_ns(),
            held: c.held,
            stops: c.stops,
        }
    }

    /// The cost of a window from `start` to `end` on one thread, before the stops' cost is
    /// taken out (in [`Tracer::finish`]).
    fn cost(start: &Stamp, end: &Stamp) -> Cost {
        Cost {
            cpu_ns: match (start.cpu, end.cpu) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => 0,
            },
            wall_ns: end
                .mono
                .saturating_sub(start.mono)
                .saturating_sub(end.held.saturating_sub(start.held)),
            stops: end.stops.saturating_sub(start.stops),
            span_ns: (start.mono, end.mono),
        }
    }

    fn push_frame(
        &mut self,
        tid: i32,
        kind: Kind,
        regs: &nix::libc::user_regs_struct,
        start: Stamp,
        bps: &mut Breakpoints,
    ) {
        let Some(ret) = self.peek(regs.rsp) else {
            return;
        };
        *self.ret_refs.entry(ret).or_default() += 1;
        if !bps.planted(ret) && bps.insert(Pid::from_raw(tid), ret, TAG_RET, false).is_ok() {
            self.ret_sites.insert(ret);
        }
        self.frames.entry(tid).or_default().push(Frame {
            kind,
            ret,
            rsp_after: regs.rsp + 8,
            start,
        });
    }

    /// The innermost open `dlopen` (or `dlclose`) window of a thread.
    fn innermost_open(&self, tid: i32) -> Option<usize> {
        self.frames
            .get(&tid)?
            .iter()
            .rev()
            .find_map(|f| match f.kind {
                Kind::Open(i) => Some(i),
                _ => None,
            })
    }

    fn innermost_close(&self, tid: i32) -> Option<usize> {
        let f = self
            .frames
            .get(&tid)?
            .iter()
            .rev()
            .find(|f| matches!(f.kind, Kind::Open(_) | Kind::Close(_)))?;
        match f.kind {
            Kind::Close(i) => Some(i),
            _ => None,
        }
    }

    /// The object a thread's open windows mapped at link_map `lm`: (open, object).
    fn object_of(&self, tid: i32, lm: u64) -> Option<(usize, usize)> {
        let frames = self.frames.get(&tid)?;
        frames.iter().rev().find_map(|f| match f.kind {
            Kind::Open(i) => self.mapped[i].iter().position(|&m| m == lm).map(|j| (i, j)),
            _ => None,
        })
    }

    /// ld.so's name for the link_map at `lm` (`l_name`; "" is the executable).
    fn map_name(&self, lm: u64) -> String {
        let name = self
            .peek(lm + 8)
            .and_then(|p| read_cstring(self.pid, p))
            .unwrap_or_default();
        if name.is_empty() {
            self.main_name.clone()
        } else {
            name
        }
    }

    /// The base namespace's link_maps in list order.
    fn link_maps(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let mut lm = self.r_debug.and_then(|r| self.peek(r + 8)).unwrap_or(0);
        while lm != 0 && out.len() < MAX_MAPS {
            out.push(lm);
            lm = self.peek(lm + 24).unwrap_or(0);
        }
        out
    }

    /// The link_maps of every namespace: the base one's list, then those of the namespaces
    /// `dlmopen` made, which glibc chains from `_r_debug` (`r_next` of `r_debug_extended`,
    /// offset 40, valid when `r_version` is 2 or more). A call into a namespace that maps
    /// nothing new must not list the objects that namespace already holds, and a link_map
    /// address is new only when no namespace held it at the call's entry.
    fn all_link_maps(&self) -> Vec<u64> {
        let mut out = self.link_maps();
        let Some(base) = self.r_debug else {
            return out;
        };
        let version = self.peek(base).map_or(0, |w| w as u32);
        if version < 2 {
            return out;
        }
        let mut r = self.peek(base + 40).unwrap_or(0);
        let mut namespaces = 0;
        while r != 0 && namespaces < 64 {
            let mut lm = self.peek(r + 8).unwrap_or(0);
            while lm != 0 && out.len() < MAX_MAPS {
                out.push(lm);
                lm = self.peek(lm + 24).unwrap_or(0);
            }
            r = self.peek(r + 40).unwrap_or(0);
            namespaces += 1;
        }
        out
    }

    /// Whether `_dl_map_object` asked for the name at `name` finds it in the base namespace
    /// without mapping anything: a link_map there whose `l_name` or one of whose `l_libname`
    /// names is that string (`_dl_name_match_p`). A request it would match only by DT_SONAME
    /// is not seen here and keeps its window, as does anything that cannot be read.
    ///
    /// `struct link_map`'s head (`l_real` at 40, `l_libname` at 56; `struct libname_list`
    /// { name, next }) has kept these offsets since glibc 2.3; a link_map whose `l_real` is
    /// not itself is not trusted.
    fn already_loaded(&mut self, name: u64) -> bool {
        let Some(name) = read_cstring(self.pid, name) else {
            return false;
        };
        for lm in self.link_maps() {
            if !self.libnames.contains_key(&lm) {
                if self.peek(lm + 40) != Some(lm) {
                    continue;
                }
                let mut names = self.libname_list(lm);
                if let Some(n) = self.peek(lm + 8).and_then(|p| read_cstring(self.pid, p)) {
                    names.push(n);
                }
                self.libnames.insert(lm, names);
            }
            if self.libnames[&lm].contains(&name) {
                // Read again before it decides: a link_map freed by a close we did not see
                // (libc's internal one) may be another object now.
                self.libnames.remove(&lm);
                let fresh = self.peek(lm + 40) == Some(lm)
                    && (self
                        .peek(lm + 8)
                        .and_then(|p| read_cstring(self.pid, p))
                        .as_ref()
                        == Some(&name)
                        || self.libname_list(lm).contains(&name));
                if fresh {
                    return true;
                }
            }
        }
        false
    }

    /// The names on a link_map's `l_libname` list (at most 64).
    fn libname_list(&self, lm: u64) -> Vec<String> {
        let mut names = Vec::new();
        let mut l = self.peek(lm + 56).unwrap_or(0);
        while l != 0 && names.len() < 64 {
            match self.peek(l).and_then(|p| read_cstring(self.pid, p)) {
                Some(n) => names.push(n),
                None => break,
            }
            l = self.peek(l + 8).unwrap_or(0);
        }
        names
    }

    /// ld.so's name for the object whose code holds `addr` (by /proc/PID/maps, matched to
    /// the link_map list by the file itself).
    fn caller_of(&self, addr: u64) -> Option<String> {
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", self.pid)).ok()?;
        let path = maps.lines().find_map(|l| {
            let mut f = l.split_whitespace();
            let (a, b) = f.next()?.split_once('-')?;
            let (a, b) = (
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            );
            let p = f.nth(4)?;
            (a <= addr && addr < b && p.starts_with('/')).then(|| p.to_string())
        })?;
        let want = std::fs::canonicalize(&path).ok()?;
        if std::fs::canonicalize(&self.main_name).ok().as_ref() == Some(&want)
            || std::fs::read_link(format!("/proc/{}/exe", self.pid)).ok() == Some(want.clone())
        {
            return Some(self.main_name.clone());
        }
        for lm in self.link_maps() {
            let name = self.map_name(lm);
            if std::fs::canonicalize(&name).ok().as_ref() == Some(&want) {
                return Some(name);
            }
        }
        Some(path)
    }

    /// One stop at an entry or return: what it marks.
    fn record(
        &mut self,
        tid: i32,
        tag: u32,
        regs: &nix::libc::user_regs_struct,
        now: Stamp,
        bps: &mut Breakpoints,
    ) {
        match tag {
            TAG_OPEN | TAG_MOPEN => {
                let (ns, file, mode) = if tag == TAG_MOPEN {
                    (Some(regs.rdi as i64), regs.rsi, regs.rdx)
                } else {
                    (None, regs.rdi, regs.rsi)
                };
                let ret = self.peek(regs.rsp).unwrap_or(0);
                let i = self.opens.len();
                self.opens.push(Dlopen {
                    tid,
                    file: read_cstring(self.pid, file),
                    mode: mode as i32,
                    namespace: ns,
                    caller: self.caller_of(ret),
                    parent: self.innermost_open(tid),
                    cost: Self::cost(&now, &now),
                    outcome: Outcome::Failed,
                    objects: Vec::new(),
                });
                self.known.push(self.all_link_maps().into_iter().collect());
                self.mapped.push(Vec::new());
                self.push_frame(tid, Kind::Open(i), regs, now, bps);
            }
            TAG_CLOSE => {
                if let Some(a) = self.fini.take() {
                    self.plant(bps, Pid::from_raw(tid), a, TAG_FINI);
                }
                let i = self.closes.len();
                self.closes.push(Dlclose {
                    tid,
                    object: self.map_name(regs.rdi),
                    cost: Self::cost(&now, &now),
                    finalizers: Vec::new(),
                });
                self.push_frame(tid, Kind::Close(i), regs, now, bps);
            }
            TAG_MAP => {
                // A request for an object the base namespace already holds under that name
                // (libc for each library that needs it) maps nothing: no window, no stop at
                // its return. _dl_map_object(loader, name, type, trace_mode, mode, nsid).
                let found = regs.r9 == 0 && self.already_loaded(regs.rsi);
                if let Some(i) = self.innermost_open(tid).filter(|_| !found) {
                    self.push_frame(tid, Kind::Map(i), regs, now, bps);
                }
            }
            TAG_RELOC | TAG_INIT => {
                if let Some((i, j)) = self.object_of(tid, regs.rdi) {
                    let kind = if tag == TAG_RELOC {
                        Kind::Reloc(i, j)
                    } else {
                        Kind::Init(i, j)
                    };
                    self.push_frame(tid, kind, regs, now, bps);
                }
            }
            TAG_FINI => {
                if let Some(c) = self.innermost_close(tid) {
                    let name = self.map_name(regs.rdi);
                    let j = self.closes[c].finalizers.len();
                    self.closes[c]
                        .finalizers
                        .push((name, Self::cost(&now, &now)));
                    self.push_frame(tid, Kind::Fini(c, j), regs, now, bps);
                }
            }
            TAG_FIXUP => {
                let name = match self.names.get(&regs.rdi) {
                    Some(n) => n.clone(),
                    None => {
                        let n = self.map_name(regs.rdi);
                        self.names.insert(regs.rdi, n.clone());
                        n
                    }
                };
                let i = *self.lazy_ix.entry(name.clone()).or_insert_with(|| {
                    self.lazy.push(LazyBinds {
                        object: name,
                        count: 0,
                        cpu_ns: None,
                    });
                    self.lazy.len() - 1
                });
                self.lazy[i].count += 1;
            }
            _ => {}
        }
    }

    /// A SIGTRAP at a return breakpoint's address: the window it closes (for one of the
    /// target's threads), then the int3 taken out when no open window of any thread returns
    /// there (one stop), or stepped over and kept (two). A thread trapped on an int3 that
    /// another thread's stop has taken out since is moved back onto the instruction.
    fn on_return_trap(
        &mut self,
        tid: Pid,
        addr: u64,
        regs: &nix::libc::user_regs_struct,
        bps: &mut Breakpoints,
        seen: Instant,
    ) -> nix::Result<u64> {
        let t = tid.as_raw();
        let thread = self.is_thread(t);
        if thread {
            self.clocks.entry(t).or_default().stops += 1;
            self.stops += 1;
            let stamp = self.stamp(t);
            self.on_return(t, addr, regs, stamp);
        }
        let needed = self.ret_refs.get(&addr).is_some_and(|n| *n > 0);
        let (cost, how) = if !bps.planted(addr) {
            let mut r = *regs;
            r.rip = addr;
            ptrace::setregs(tid, r)?;
            (1, "taken out before")
        } else if needed || !thread {
            // A forked child sharing our memory (vfork) passes it too: it stays for us.
            bps.step_over(tid)?;
            (2, "stepped")
        } else {
            bps.hit(tid)?;
            (1, "taken out")
        };
        if thread {
            if cost == 2 {
                self.clocks.entry(t).or_default().stops += 1;
                self.stops += 1;
            }
            *self
                .tally
                .entry((tag_name(TAG_RET, self.last_return), how))
                .or_default() += cost;
            self.clocks.entry(t).or_default().held += seen.elapsed().as_nanos() as u64;
        }
        Ok(cost)
    }

    /// A return breakpoint at `addr`: the thread's window that returns there at this stack
    /// pointer ends (windows inside it that never returned were left by a longjmp: dropped).
    /// The windows that end no longer hold their return addresses.
    fn on_return(&mut self, tid: i32, addr: u64, regs: &nix::libc::user_regs_struct, now: Stamp) {
        self.last_return = "";
        let Some(frames) = self.frames.get_mut(&tid) else {
            return;
        };
        let Some(k) = frames
            .iter()
            .rposition(|f| f.ret == addr && f.rsp_after == regs.rsp)
        else {
            return;
        };
        let f = frames.swap_remove(k);
        self.last_return = f.kind.name();
        for ended in frames[k..].iter().chain(std::iter::once(&f)) {
            if let Some(n) = self.ret_refs.get_mut(&ended.ret) {
                *n = n.saturating_sub(1);
            }
        }
        frames.truncate(k);
        let cost = Self::cost(&f.start, &now);
        match f.kind {
            Kind::Open(i) => {
                let handle = regs.rax;
                self.opens[i].cost = cost;
                self.opens[i].outcome = if handle == 0 {
                    Outcome::Failed
                } else {
                    Outcome::Loaded(self.map_name(handle))
                };
                if !self.per_object {
                    let known = &self.known[i];
                    let new: Vec<u64> = self
                        .all_link_maps()
                        .into_iter()
                        .filter(|m| !known.contains(m))
                        .collect();
                    for lm in new {
                        let name = self.map_name(lm);
                        self.mapped[i].push(lm);
                        self.opens[i].objects.push(LoadedObject {
                            name,
                            mapping: None,
                            relocation: None,
                            initializers: None,
                            threads: Vec::new(),
                        });
                    }
                }
                for s in self.started.iter().filter(|s| s.open == i) {
                    let cpu = thread_cpu(self.pid, s.tid);
                    if let Some(t) = self.opens[i].objects[s.object]
                        .threads
                        .iter_mut()
                        .find(|t| t.tid == s.tid)
                    {
                        t.cpu_at_return_ns = cpu;
                    }
                }
                self.known[i] = HashSet::new();
            }
            Kind::Close(i) => {
                self.closes[i].cost = cost;
                // Link_map addresses may be reused by later loads.
                self.names.clear();
                self.libnames.clear();
                self.libnames.clear();
            }
            Kind::Map(i) => {
                let lm = regs.rax;
                // ld.so asked for in a namespace other than the base one is a proxy, a
                // link_map whose `l_real` is the base namespace's ld.so: nothing is mapped,
                // relocated or initialized for it (glibc does not "generate" its link map), so
                // it is no loaded object; its search stays in the call's own time.
                let proxy = lm != 0 && self.peek(lm + 40).is_some_and(|real| real != lm);
                if lm != 0
                    && !proxy
                    && !self.known[i].contains(&lm)
                    && !self.mapped[i].contains(&lm)
                {
                    let name = self.map_name(lm);
                    self.mapped[i].push(lm);
                    self.opens[i].objects.push(LoadedObject {
                        name,
                        mapping: Some(cost),
                        relocation: None,
                        initializers: None,
                        threads: Vec::new(),
                    });
                }
            }
            Kind::Reloc(i, j) => self.opens[i].objects[j].relocation = Some(cost),
            Kind::Init(i, j) => self.opens[i].objects[j].initializers = Some(cost),
            Kind::Fini(c, j) => self.closes[c].finalizers[j].1 = cost,
        }
    }

    /// PTRACE_EVENT_CLONE of thread `tid`: a thread started inside an object's initializers
    /// belongs to that object.
    pub(super) fn on_clone(&mut self, tid: Pid) {
        let Ok(new) = ptrace::getevent(tid) else {
            return;
        };
        let new = new as i32;
        self.threads.insert(new);
        let init = self.frames.get(&tid.as_raw()).and_then(|fs| {
            fs.iter().rev().find_map(|f| match f.kind {
                Kind::Init(i, j) => Some((i, j)),
                _ => None,
            })
        });
        if let Some((i, j)) = init {
            self.started.push(Started {
                tid: new,
                open: i,
                object: j,
            });
            self.opens[i].objects[j].threads.push(StartedThread {
                tid: new,
                cpu_at_return_ns: None,
                cpu_total_ns: None,
            });
        }
    }

    /// A thread's exit stop (PTRACE_EVENT_EXIT), or with `None` the run's: the CPU of the
    /// started threads ending there.
    pub(super) fn on_exit(&mut self, tid: Option<Pid>) {
        for s in &self.started {
            if tid.is_some_and(|t| t.as_raw() != s.tid) {
                continue;
            }
            let t = self.opens[s.open].objects[s.object]
                .threads
                .iter_mut()
                .find(|t| t.tid == s.tid);
            if let Some(t) = t.filter(|t| t.cpu_total_ns.is_none()) {
                t.cpu_total_ns = thread_cpu(self.pid, s.tid);
            }
        }
    }

    /// Handles a stop of a thread other than the first (its traps, clones and exit) when it
    /// concerns the loader after main; false leaves it to the usual handling.
    pub(super) fn on_other(
        &mut self,
        tid: Pid,
        st: &nix::sys::wait::WaitStatus,
        bps: &mut Breakpoints,
        seen: Instant,
    ) -> bool {
        use nix::sys::signal::Signal;
        use nix::sys::wait::WaitStatus;
        match st {
            WaitStatus::Stopped(_, Signal::SIGTRAP) => match self.on_trap(tid, bps, seen) {
                Some(_) => {
                    let _ = ptrace::cont(tid, None);
                    true
                }
                None => false,
            },
            WaitStatus::PtraceEvent(_, _, ev)
                if *ev == ptrace::Event::PTRACE_EVENT_CLONE as i32 =>
            {
                self.on_clone(tid);
                let _ = ptrace::cont(tid, None);
                true
            }
            WaitStatus::PtraceEvent(_, _, ev) if *ev == ptrace::Event::PTRACE_EVENT_EXIT as i32 => {
                self.on_exit(Some(tid));
                let _ = ptrace::cont(tid, None);
                true
            }
            _ => false,
        }
    }

    /// The target exec'd another image: no breakpoint of ours is left in it, and windows
    /// still open never close.
    pub(super) fn forget_image(&mut self) {
        self.tags.clear();
        self.frames.clear();
        self.ret_refs.clear();
        self.ret_sites.clear();
        self.fini = None;
        self.names.clear();
    }

    /// Stops on the target's threads other than the first (counted in the run's stops at
    /// the end: the first thread's are counted as they come).
    pub(super) fn other_stops(&self) -> u64 {
        let main = self.pid.as_raw();
        self.clocks
            .iter()
            .filter(|(t, _)| **t != main)
            .map(|(_, c)| c.stops)
            .sum()
    }

    /// The recording: every window's CPU less `stop_ns` per stop inside it.
    pub(super) fn finish(mut self, stop_ns: u64) -> AfterMain {
        self.on_exit(None);
        // A development aid: where a run's stops after main come from.
        if cfg!(debug_assertions) && std::env::var_os("LDCOST_DEBUG_STOPS").is_some() {
            for ((what, how), n) in &self.tally {
                eprintln!("ldcost: debug: stops after main: {what} ({how}): {n}");
            }
        }
        let fix = |c: &mut Cost| c.cpu_ns = c.cpu_ns.saturating_sub(stop_ns * c.stops);
        for o in &mut self.opens {
            fix(&mut o.cost);
            for l in &mut o.objects {
                for c in [&mut l.mapping, &mut l.relocation, &mut l.initializers]
                    .into_iter()
                    .flatten()
                {
                    fix(c);
                }
            }
        }
        for c in &mut self.closes {
            fix(&mut c.cost);
            for (_, f) in &mut c.finalizers {
                fix(f);
            }
        }
        AfterMain {
            seen: match self.coarse_why {
                None => AfterMainSeen::PerObject,
                Some(why) => AfterMainSeen::Rendezvous(why),
            },
            opens: self.opens,
            closes: self.closes,
            lazy: self.lazy,
            stops: self.stops,
        }
    }
}
