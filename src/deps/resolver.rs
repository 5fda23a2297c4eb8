//! The search itself: `_dl_map_object` for one name, driven breadth-first over the closure.
//! Split from mod.rs, which holds the data model and the entry point ([`super::resolve`]).

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::DepsError;
use super::{
    analyze_file, cache, Edge, FoundBy, LdCache, Missing, Object, ResolveOptions, SearchRules,
};
use crate::elf::{self, layout, ObjectInfo};

/// An object known to the namespace: the names it answers to and its file identity.
pub(super) struct Loaded {
    pub(super) names: Vec<String>,
    pub(super) file_id: Option<(u64, u64)>,
}

pub(super) struct PendingInterp {
    path: String,
    info: Option<ObjectInfo>,
    names: Vec<String>,
    file_id: Option<(u64, u64)>,
    index: Option<usize>,
}

pub(super) struct Resolver<'a> {
    pub(super) opts: &'a ResolveOptions,
    pub(super) rules: SearchRules,
    pub(super) machine: u16,
    pub(super) cache: Option<LdCache>,
    pub(super) cache_loaded: bool,
    pub(super) objects: Vec<Object>,
    pub(super) loaded: Vec<Loaded>,
    pub(super) origins: Vec<Option<String>>,
    pub(super) interp: Option<PendingInterp>,
    pub(super) missing: Vec<Missing>,
    /// Analyses done ahead, on all cores, of the files an object's DT_NEEDED entries name
    /// ([`Resolver::prefetch`]): (path, result), taken by [`Resolver::load`].
    pub(super) prefetched: Vec<(String, Result<ObjectInfo, elf::ElfError>)>,
    /// The first file that could not be opened, mapped or read because the system refused a
    /// resource (EMFILE, ENOMEM: [`crate::limits::resource_hint`]). The resolution is then
    /// the error: that library is not missing, and ld.so under the same limits is not asked.
    pub(super) refused: std::cell::RefCell<Option<elf::ElfError>>,
}

impl Resolver<'_> {
    /// Notes `source` as the run's refusal if it is one; true when it is.
    fn refusal(&self, path: &str, source: std::io::Error) -> bool {
        if crate::limits::io_resource_hint(&source).is_none() {
            return false;
        }
        let mut r = self.refused.borrow_mut();
        if r.is_none() {
            *r = Some(elf::ElfError::Io {
                path: path.into(),
                source,
            });
        }
        true
    }
}

enum Lookup {
    Existing(usize),
    Interp,
    Found { path: String, how: FoundBy },
    NotFound(Option<String>),
}

impl Resolver<'_> {
    pub(super) fn prepare_interp(&mut self, path: &str, lazy: bool) -> Result<(), DepsError> {
        // The kernel maps the interpreter; ld.so then knows itself by its PT_INTERP path and
        // its DT_SONAME. An interpreter we cannot read still answers to those names.
        // rtld.c relocates ld.so itself with lazy = 0 whatever LD_BIND_NOW says, so its PLT
        // slots (calls into libc such as _dl_catch_exception) are start-up lookups.
        let _ = lazy;
        if file_id(Path::new(path)).is_some() && file_id(Path::new(path)) == self.loaded[0].file_id
        {
            // The target is ld.so itself.
            return Ok(());
        }
        let info = analyze_file(Path::new(path), false).ok().map(|mut i| {
            i.vmas = layout::predict_vmas(
                &i.segments,
                i.relro_vaddr.map(|v| (v, i.relro_size)),
                layout::Loader::Kernel,
            );
            i
        });
        let mut names = vec![path.to_string()];
        if let Some(s) = info.as_ref().and_then(|i| i.soname.clone()) {
            names.push(s);
        }
        self.interp = Some(PendingInterp {
            path: path.to_string(),
            info,
            names,
            file_id: file_id(Path::new(path)),
            index: None,
        });
        Ok(())
    }

    /// Appends the interpreter at the end of the load order if nothing needed it by name
    /// (rtld.c keeps ld.so last in that case, as ldd shows).
    pub(super) fn finish_interp(&mut self) {
        let Some(p) = self.interp.take() else { return };
        if p.index.is_some() {
            return;
        }
        if let Some(info) = p.info {
            self.objects.push(Object {
                path: p.path.clone(),
                name: p.path,
                found_by: FoundBy::Interpreter,
                loaded_by: None,
                depth: 1,
                needed: Vec::new(),
                in_scope: false,
                info,
            });
        }
    }

    pub(super) fn walk(&mut self, lazy: bool) {
        let mut i = 0;
        while i < self.objects.len() {
            self.prefetch(i, lazy);
            let needed = self.objects[i].info.needed.clone();
            let mut edges = Vec::with_capacity(needed.len());
            for name in needed {
                let edge = match self.lookup(&name, i) {
                    Lookup::Existing(idx) => {
                        self.add_name(idx, &name);
                        Edge {
                            name,
                            object: Some(idx),
                            first: false,
                        }
                    }
                    Lookup::Interp => {
                        let idx = self.place_interp(i, &name);
                        Edge {
                            name,
                            object: idx.map(|(x, _)| x),
                            first: idx.is_some_and(|(_, first)| first),
                        }
                    }
                    Lookup::Found { path, how } => {
                        let (idx, first) = self.load(&name, path, how, i, lazy);
                        Edge {
                            name,
                            object: idx,
                            first,
                        }
                    }
                    Lookup::NotFound(reason) => {
                        self.missing.push(Missing {
                            name: name.clone(),
                            needed_by: self.objects[i].path.clone(),
                            reason,
                        });
                        Edge {
                            name,
                            object: None,
                            first: false,
                        }
                    }
                };
                edges.push(edge);
            }
            self.objects[i].needed = edges;
            i += 1;
        }
    }

    /// Analyses the files object `i`'s DT_NEEDED entries resolve to, in parallel, before
    /// [`Resolver::walk`] takes them one by one in ld.so's order. Analysis is a function of the
    /// path alone, so the walk's result is the same; a file a sibling turns out to provide
    /// (same soname) was analysed for nothing. `lookup` only reads (and loads the cache once).
    fn prefetch(&mut self, i: usize, lazy: bool) {
        let needed = self.objects[i].info.needed.clone();
        let mut paths: Vec<String> = Vec::new();
        for name in &needed {
            let Lookup::Found { path, .. } = self.lookup(name, i) else {
                continue;
            };
            let fid = file_id(Path::new(&path));
            let known = fid.is_some()
                && (self.loaded.iter().any(|l| l.file_id == fid)
                    || self.interp.as_ref().is_some_and(|p| p.file_id == fid));
            if !known && !paths.contains(&path) && !self.prefetched.iter().any(|(p, _)| *p == path)
            {
                paths.push(path);
            }
        }
        self.prefetched
            .extend(super::parallel::analyze_all(paths, lazy));
    }

    fn add_name(&mut self, idx: usize, name: &str) {
        if let Some(l) = self.loaded.get_mut(idx) {
            if !l.names.iter().any(|n| n == name) {
                l.names.push(name.to_string());
            }
        }
    }

    /// Puts the interpreter into the load order at this point (it is already mapped).
    fn place_interp(&mut self, by: usize, name: &str) -> Option<(usize, bool)> {
        let p = self.interp.as_mut()?;
        if let Some(idx) = p.index {
            return Some((idx, false));
        }
        let info = p.info.clone()?;
        let idx = self.objects.len();
        p.index = Some(idx);
        let path = p.path.clone();
        let names = p.names.clone();
        let fid = p.file_id;
        self.push(path, name, FoundBy::Interpreter, by, info, names, fid);
        Some((idx, true))
    }

    /// Appends a newly loaded object (load order = lookup scope order).
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        path: String,
        name: &str,
        how: FoundBy,
        by: usize,
        info: ObjectInfo,
        names: Vec<String>,
        file_id: Option<(u64, u64)>,
    ) {
        self.origins.push(origin_of(&path));
        self.objects.push(Object {
            path,
            name: name.to_string(),
            found_by: how,
            loaded_by: Some(by),
            depth: self.objects[by].depth + 1,
            needed: Vec::new(),
            in_scope: true,
            info,
        });
        self.loaded.push(Loaded { names, file_id });
    }

    fn load(
        &mut self,
        name: &str,
        path: String,
        how: FoundBy,
        by: usize,
        lazy: bool,
    ) -> (Option<usize>, bool) {
        let fid = file_id(Path::new(&path));
        if let Some(fid) = fid {
            if let Some(idx) = self.loaded.iter().position(|l| l.file_id == Some(fid)) {
                self.add_name(idx, name);
                return (Some(idx), false);
            }
            if self.interp.as_ref().is_some_and(|p| p.file_id == Some(fid)) {
                return match self.place_interp(by, name) {
                    Some((i, first)) => (Some(i), first),
                    None => (None, false),
                };
            }
        }
        let analysed = match self.prefetched.iter().position(|(p, _)| *p == path) {
            Some(k) => self.prefetched.swap_remove(k).1,
            None => analyze_file(Path::new(&path), lazy),
        };
        match analysed {
            Ok(info) => {
                let idx = self.objects.len();
                let mut names = vec![name.to_string()];
                if let Some(s) = &info.soname {
                    names.push(s.clone());
                }
                self.push(path, name, how, by, info, names, fid);
                (Some(idx), true)
            }
            Err(elf::ElfError::Io { source, .. }) if self.refusal(&path, clone_io(&source)) => {
                (None, false)
            }
            Err(e) => {
                self.missing.push(Missing {
                    name: name.to_string(),
                    needed_by: self.objects[by].path.clone(),
                    reason: Some(format!("found {path} but ld.so cannot load it: {e}")),
                });
                (None, false)
            }
        }
    }

    fn lookup(&mut self, name: &str, loader: usize) -> Lookup {
        // 1. Already loaded under this name, soname or path.
        for (idx, l) in self.loaded.iter().enumerate() {
            let obj = &self.objects[idx];
            if l.names.iter().any(|n| n == name) || (idx > 0 && obj.path == name) {
                return Lookup::Existing(idx);
            }
        }
        if let Some(p) = &self.interp {
            if p.index.is_none() && p.names.iter().any(|n| n == name) {
                return Lookup::Interp;
            }
        }
        // 2. A path.
        if name.contains('/') {
            return match self.expand(name, loader) {
                Some(p) => match self.verify(&p) {
                    Verify::Ok => Lookup::Found {
                        path: p,
                        how: FoundBy::Path,
                    },
                    Verify::Skip => Lookup::NotFound(None),
                    Verify::Fatal(why) => Lookup::NotFound(Some(why)),
                },
                None => {
                    Lookup::NotFound(Some("a dynamic string token could not be expanded".into()))
                }
            };
        }
        // 3. RPATH chain, unless the loader has RUNPATH.
        if self.objects[loader].info.runpath.is_none() {
            let mut l = Some(loader);
            while let Some(cur) = l {
                let o = &self.objects[cur];
                if o.info.runpath.is_none() {
                    if let Some(rp) = o.info.rpath.clone() {
                        let dirs = self.path_list(&rp, cur);
                        let of = o.path.clone();
                        if let Some(r) = self.search_dirs(&dirs, name) {
                            return r.map_found(|p| Lookup::Found {
                                path: p,
                                how: FoundBy::Rpath { of },
                            });
                        }
                    }
                }
                l = o.loaded_by;
            }
        }
        if let Some(llp) = self.opts.ld_library_path.clone() {
            let dirs = self.path_list(&llp, 0);
            if let Some(r) = self.search_dirs(&dirs, name) {
                return r.map_found(|p| Lookup::Found {
                    path: p,
                    how: FoundBy::LdLibraryPath,
                });
            }
        }
        if let Some(rp) = self.objects[loader].info.runpath.clone() {
            let dirs = self.path_list(&rp, loader);
            let of = self.objects[loader].path.clone();
            if let Some(r) = self.search_dirs(&dirs, name) {
                return r.map_found(|p| Lookup::Found {
                    path: p,
                    how: FoundBy::Runpath { of },
                });
            }
        }
        let nodeflib = self.objects[loader].info.flags.nodeflib;
        if let Some(p) = self.cache_lookup(name) {
            let in_system = self
                .rules
                .system_dirs
                .iter()
                .any(|d| Path::new(&p).parent() == Some(Path::new(d)));
            if !(nodeflib && in_system) {
                match self.verify(&p) {
                    Verify::Ok => {
                        return Lookup::Found {
                            path: p,
                            how: FoundBy::LdSoCache,
                        }
                    }
                    Verify::Fatal(why) => return Lookup::NotFound(Some(why)),
                    Verify::Skip => {}
                }
            }
        }
        if !nodeflib {
            let dirs = self.rules.system_dirs.clone();
            if let Some(r) = self.search_dirs(&dirs, name) {
                return r.map_found(|p| Lookup::Found {
                    path: p,
                    how: FoundBy::DefaultPath,
                });
            }
        }
        Lookup::NotFound(None)
    }

    fn cache_lookup(&mut self, name: &str) -> Option<String> {
        if !self.cache_loaded {
            self.cache_loaded = true;
            // ld.so silently ignores a missing or unreadable cache, and so do we.
            self.cache = LdCache::load(&self.opts.cache_path).ok();
        }
        let flags = if self.machine == elf::EM_AARCH64 {
            cache::FLAGS_AARCH64_LIBC6
        } else {
            cache::FLAGS_X86_64_LIBC6
        };
        let hw: Vec<&str> = self.rules.hwcaps.iter().map(String::as_str).collect();
        self.cache
            .as_ref()
            .and_then(|c| c.lookup(name, flags, &hw))
            .map(str::to_owned)
    }

    /// Splits a colon/semicolon path list the way `fillin_rpath` does: DSTs expanded (an
    /// element whose DST cannot be expanded is dropped), trailing slashes removed, an empty
    /// element meaning the current directory, duplicates dropped.
    fn path_list(&self, list: &str, owner: usize) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for elem in list.split([':', ';']) {
            let Some(expanded) = self.expand(elem, owner) else {
                continue;
            };
            let mut d = expanded.trim_end_matches('/').to_string();
            if d.is_empty() {
                d = if expanded.starts_with('/') {
                    "/".into()
                } else {
                    ".".into()
                };
            }
            let d = if d == "/" { String::new() } else { d };
            if !out.contains(&d) {
                out.push(d);
            }
        }
        out
    }

    /// Expands $ORIGIN, $LIB, $PLATFORM (and the ${...} forms) in `s` for object `owner`.
    fn expand(&self, s: &str, owner: usize) -> Option<String> {
        if !s.contains('$') {
            return Some(s.to_string());
        }
        let mut out = String::with_capacity(s.len() + 32);
        let mut rest = s;
        while let Some(pos) = rest.find('$') {
            out.push_str(&rest[..pos]);
            let after = &rest[pos + 1..];
            let (token, len) = dst_token(after);
            match token {
                Some("ORIGIN") => out.push_str(self.origins.get(owner)?.as_deref()?),
                Some("LIB") => out.push_str(&self.rules.lib),
                Some("PLATFORM") => out.push_str(&self.rules.platform),
                _ => {
                    out.push('$');
                    rest = after;
                    continue;
                }
            }
            rest = &after[len..];
        }
        out.push_str(rest);
        Some(out)
    }

    fn search_dirs(&self, dirs: &[String], name: &str) -> Option<SearchResult> {
        let subdirs = self.rules.subdirs();
        for d in dirs {
            let base = if d.is_empty() {
                String::from("/")
            } else {
                format!("{d}/")
            };
            for sub in &subdirs {
                let cand = format!("{base}{sub}{name}");
                match self.verify(&cand) {
                    Verify::Ok => return Some(SearchResult::Found(cand)),
                    Verify::Skip => {}
                    Verify::Fatal(why) => return Some(SearchResult::Fatal(why)),
                }
            }
        }
        None
    }

    /// ld.so's `open_verify`: a file that is not there, or of another ELF class or machine, is
    /// skipped; a file that is there but is not ELF stops the search with an error.
    fn verify(&self, path: &str) -> Verify {
        // Look before opening: open(2) on a FIFO would block forever.
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => {}
            _ => return Verify::Skip,
        }
        let mut f = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) => {
                self.refusal(path, e);
                return Verify::Skip;
            }
        };
        let mut hdr = [0u8; 64];
        let mut got = 0;
        while got < hdr.len() {
            match f.read(&mut hdr[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => {
                    self.refusal(path, e);
                    return Verify::Skip;
                }
            }
        }
        if got < hdr.len() {
            return Verify::Fatal(format!("{path}: file too short"));
        }
        if &hdr[..4] != b"\x7fELF" {
            return Verify::Fatal(format!("{path}: invalid ELF header"));
        }
        if hdr[4] != 2 {
            return Verify::Skip;
        }
        let machine = u16::from_le_bytes([hdr[18], hdr[19]]);
        if hdr[5] != 1 || machine != self.machine {
            return Verify::Skip;
        }
        Verify::Ok
    }
}

enum Verify {
    Ok,
    Skip,
    Fatal(String),
}

enum SearchResult {
    Found(String),
    Fatal(String),
}

impl SearchResult {
    fn map_found(self, f: impl FnOnce(String) -> Lookup) -> Lookup {
        match self {
            SearchResult::Found(p) => f(p),
            SearchResult::Fatal(why) => Lookup::NotFound(Some(why)),
        }
    }
}

/// Recognises a DST after a `$`: the name and how many bytes it spans.
fn dst_token(s: &str) -> (Option<&str>, usize) {
    for name in ["ORIGIN", "PLATFORM", "LIB"] {
        if let Some(rest) = s.strip_prefix(name) {
            // $ORIGINX is not $ORIGIN: the name must end at a non-identifier character.
            if rest
                .chars()
                .next()
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
            {
                return (Some(name), name.len());
            }
        }
        if let Some(rest) = s.strip_prefix('{').and_then(|r| r.strip_prefix(name)) {
            if rest.starts_with('}') {
                return (Some(name), name.len() + 2);
            }
        }
    }
    (None, 0)
}

/// `_dl_new_object`'s l_origin: the directory of the name ld.so opened (made absolute with
/// the current directory, not resolved through symlinks).
pub(super) fn origin_of(path: &str) -> Option<String> {
    let abs = if path.starts_with('/') {
        PathBuf::from(path)
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    let s = abs.to_string_lossy().into_owned();
    let cut = s.rfind('/')?;
    Some(if cut == 0 {
        "/".into()
    } else {
        s[..cut].to_string()
    })
}

pub(super) fn file_id(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// An errno-carrying copy of `e` (io::Error is not Clone; a refusal is always an OS error).
fn clone_io(e: &std::io::Error) -> std::io::Error {
    match e.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(e.kind(), e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dst_tokens() {
        assert_eq!(dst_token("ORIGIN/../lib"), (Some("ORIGIN"), 6));
        assert_eq!(dst_token("{ORIGIN}/x"), (Some("ORIGIN"), 8));
        assert_eq!(dst_token("ORIGINAL"), (None, 0));
        assert_eq!(dst_token("LIB"), (Some("LIB"), 3));
        assert_eq!(dst_token("PLATFORM/x"), (Some("PLATFORM"), 8));
    }

    #[test]
    fn origins_are_not_normalised() {
        assert_eq!(origin_of("/a/b/../lib/libx.so").unwrap(), "/a/b/../lib");
        assert_eq!(origin_of("/libx.so").unwrap(), "/");
    }
}
