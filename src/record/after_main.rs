//! The loader after main: every `dlopen`/`dlmopen` and `dlclose` a run made after `main`, the
//! objects each one loaded with ld.so's phases for each (search and mapping, relocation,
//! initializers), the threads those initializers started, and lazy PLT binding per object.
//!
//! Recorded by per-object runs only (the breakpoints that see it stay armed after `main`
//! there; coarse runs clear theirs at `main` and stay the reference for the program's time).
//! Times are the calling thread's own: after `main` a program may have many threads, and
//! ld.so's work runs in whichever thread called `dlopen`, so CPU is that thread's by the
//! scheduler (`/proc/PID/task/TID/schedstat`) less what ldcost's stops cost it, and wall is
//! the time it ran between the stops that bound the window.

use serde::{Deserialize, Serialize};

/// What one run saw of the loader after `main`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AfterMain {
    /// How much of ld.so's work after `main` could be seen, or why none.
    pub seen: AfterMainSeen,
    /// Every `dlopen`/`dlmopen` call in the order the calls started (a `dlopen` made by a
    /// constructor inside another `dlopen` comes after it and names it as `parent`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opens: Vec<Dlopen>,
    /// Every `dlclose` call, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub closes: Vec<Dlclose>,
    /// Lazy PLT bindings resolved after `main`, per object whose slot was bound, in order of
    /// first binding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lazy: Vec<LazyBinds>,
    /// The ptrace stops these cost the run (also counted in the run's `stops`).
    pub stops: u64,
}

/// How much of ld.so's work after `main` a run saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "level", content = "why")]
pub enum AfterMainSeen {
    /// ld.so's debug symbols: each `dlopen`'s window (`_dl_open`'s worker, under ld.so's
    /// load lock) and, inside it, each object's search and mapping, relocation and
    /// initializers; `dlclose` and lazy binding.
    PerObject,
    /// Only what every glibc exports: each `dlopen` call (libc's `dlopen` entry to return)
    /// and its mapping by the r_debug rendezvous (`_dl_debug_state`, RT_ADD to
    /// RT_CONSISTENT); relocation and initializers are not told apart. The reason the debug
    /// symbols were not there.
    Rendezvous(String),
    /// Nothing after `main` was measured: why (a static program, a libc that is not glibc,
    /// `main` never reached, a coarse run).
    NotAvailable(String),
}

/// One `dlopen`/`dlmopen` call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dlopen {
    /// The thread that called.
    pub tid: i32,
    /// The file as the caller named it; None for `dlopen(NULL)` (the main program).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The mode argument (`RTLD_LAZY` 0x1, `RTLD_NOW` 0x2, `RTLD_NOLOAD` 0x4,
    /// `RTLD_GLOBAL` 0x100, `RTLD_NODELETE` 0x1000, `RTLD_DEEPBIND` 0x8).
    pub mode: i32,
    /// The namespace a `dlmopen` asked for (None: plain `dlopen`, the base namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<i64>,
    /// The object the call came from (ld.so's name for the object holding the return
    /// address; the executable's path for the main program). None when it could not be told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// Index into [`AfterMain::opens`] of the `dlopen` this one was made inside (from a
    /// constructor it ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<usize>,
    /// The whole call.
    pub cost: Cost,
    /// What it returned.
    pub outcome: Outcome,
    /// The objects the call mapped (itself and its DT_NEEDED closure), in the order ld.so
    /// mapped them (`LD_DEBUG=files`' order); objects already loaded are not listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<LoadedObject>,
}

/// What a `dlopen` returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "how", content = "object")]
pub enum Outcome {
    /// A handle to this object (ld.so's name for it), newly loaded or not.
    Loaded(String),
    /// NULL: the load failed (missing file, bad ELF, unresolved symbol under RTLD_NOW, or
    /// RTLD_NOLOAD of an object not loaded).
    Failed,
}

/// One object a `dlopen` mapped, with ld.so's phases for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadedObject {
    /// ld.so's name for it (`l_name`: the path it was found at).
    pub name: String,
    /// Its search and mapping (`_dl_map_object`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping: Option<Cost>,
    /// Its relocation (`_dl_relocate_object`), with symbol lookups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relocation: Option<Cost>,
    /// Its initializers (`call_init`: DT_INIT and DT_INIT_ARRAY).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializers: Option<Cost>,
    /// Threads its initializers started (the thread that called `clone` was inside them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<StartedThread>,
}

/// A thread an object's initializers started, and the CPU it spent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartedThread {
    pub tid: i32,
    /// Its CPU when the `dlopen` that ran the initializers returned (ns, by the scheduler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_at_return_ns: Option<u64>,
    /// Its CPU by its end or the end of the run, whichever came first (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_total_ns: Option<u64>,
}

/// One `dlclose` call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dlclose {
    pub tid: i32,
    /// ld.so's name for the object whose handle was closed.
    pub object: String,
    /// The whole call.
    pub cost: Cost,
    /// Finalizers run (DT_FINI_ARRAY, DT_FINI) per object unloaded, in order; empty when the
    /// close only dropped a reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<(String, Cost)>,
}

/// Lazy PLT bindings resolved after `main` in one object's slots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LazyBinds {
    /// ld.so's name for the object whose PLT slot was bound (the executable's path for the
    /// main program).
    pub object: String,
    /// How many slots `_dl_fixup` bound.
    pub count: u64,
    /// Their CPU, when it was measured (entry to return of `_dl_fixup`, less the stops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
}

/// What one window cost the thread it ran in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    /// The thread's CPU by the scheduler between the stops that bound the window, less the
    /// measured cost of the stops inside it (ns).
    pub cpu_ns: u64,
    /// The time it ran between those stops, ldcost's own time at stops left out (ns).
    pub wall_ns: u64,
    /// ptrace stops inside the window (including the one that ends it).
    pub stops: u64,
    /// CLOCK_MONOTONIC (ns) at its start and end, as [`super::Segment::span_ns`]: samples
    /// of the same thread taken between fall in it.
    pub span_ns: (u64, u64),
}

impl AfterMain {
    /// Nothing seen, and why.
    pub fn not_available(why: impl Into<String>) -> AfterMain {
        AfterMain {
            seen: AfterMainSeen::NotAvailable(why.into()),
            opens: Vec::new(),
            closes: Vec::new(),
            lazy: Vec::new(),
            stops: 0,
        }
    }

    /// The objects loaded after `main`, in load order, with the call that loaded each.
    pub fn loaded(&self) -> impl Iterator<Item = (&Dlopen, &LoadedObject)> {
        self.opens
            .iter()
            .flat_map(|o| o.objects.iter().map(move |l| (o, l)))
    }

    /// ld.so's CPU after `main` (ns): every top-level `dlopen` and `dlclose` call whole, and
    /// lazy binding where its CPU was measured. A nested `dlopen` is inside its parent's.
    pub fn loader_cpu_ns(&self) -> u64 {
        let opens: u64 = self
            .opens
            .iter()
            .filter(|o| o.parent.is_none())
            .map(|o| o.cost.cpu_ns)
            .sum();
        let closes: u64 = self.closes.iter().map(|c| c.cost.cpu_ns).sum();
        let lazy: u64 = self.lazy.iter().filter_map(|l| l.cpu_ns).sum();
        opens + closes + lazy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(cpu: u64) -> Cost {
        Cost {
            cpu_ns: cpu,
            wall_ns: cpu,
            stops: 2,
            span_ns: (0, cpu),
        }
    }

    #[test]
    fn a_nested_dlopen_is_counted_once_in_the_loader_s_cpu() {
        let open = |parent, cpu| Dlopen {
            tid: 1,
            file: Some("libx.so".into()),
            mode: 2,
            namespace: None,
            caller: None,
            parent,
            cost: cost(cpu),
            outcome: Outcome::Failed,
            objects: Vec::new(),
        };
        let a = AfterMain {
            seen: AfterMainSeen::PerObject,
            opens: vec![open(None, 1000), open(Some(0), 400), open(None, 50)],
            closes: Vec::new(),
            lazy: vec![LazyBinds {
                object: "a".into(),
                count: 3,
                cpu_ns: Some(7),
            }],
            stops: 0,
        };
        assert_eq!(a.loader_cpu_ns(), 1057);
        let json = serde_json::to_string(&a).unwrap();
        let back: AfterMain = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
    }
}
