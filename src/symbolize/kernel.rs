//! Kernel symbols from /proc/kallsyms, for the kernel frames of sampled call chains
//! (copy_page_range, dup_mmap, exit_mmap, load_elf_binary, ...).
//!
//! kallsyms gives no sizes, so an address belongs to the last symbol at or below it, as in
//! `perf report`; an address whose nearest symbol is data (types other than t/T/w/W) is not
//! named. When `kernel.kptr_restrict` hides addresses from us, the kernel still lists every
//! symbol, with address 0: [`KernelSymbols::hidden`] says so and
//! [`KernelSymbols::hidden_reason`] says what to do, and no address is resolved.
//!
//! The file (about 5 MB, 120k lines here) is read once; names stay in that one string.
//! Benchmark (measured once, not a test; release build, a 2-core VM): loading takes about
//! 0.1 s, and 1,000,000 lookups of random addresses in the first 16 MiB of kernel text
//! about 0.23 s (random addresses miss the cache every time; real samples cluster).

use std::path::{Path, PathBuf};

use super::SymbolizeError;

/// Where the kernel lists its symbols.
pub const KALLSYMS_PATH: &str = "/proc/kallsyms";
/// The sysctl that hides kernel addresses (0: shown, 1: shown with CAP_SYSLOG, 2: never).
pub const KPTR_RESTRICT_PATH: &str = "/proc/sys/kernel/kptr_restrict";

/// Kernel and module symbols by address.
#[derive(Debug, Clone)]
pub struct KernelSymbols {
    source: PathBuf,
    text: String,
    /// Every line, sorted by address; at one address the best alias comes last, where the
    /// binary search lands.
    syms: Vec<KSym>,
    /// The addresses of `syms`, contiguous for the binary search.
    addrs: Vec<u64>,
    hidden: bool,
}

#[derive(Debug, Clone, Copy)]
struct KSym {
    addr: u64,
    /// Line number, for file order.
    line: u32,
    name: (u32, u32),
    /// `(0, 0)`: in the kernel image, not a module.
    module: (u32, u32),
    ty: u8,
}

/// A resolved kernel address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelFrame<'a> {
    pub name: &'a str,
    /// `addr` minus the symbol's address.
    pub offset: u64,
    /// The module (`ext4`), or None for the kernel image.
    pub module: Option<&'a str>,
}

fn is_text(ty: u8) -> bool {
    matches!(ty, b't' | b'T' | b'w' | b'W')
}

impl KernelSymbols {
    /// Reads /proc/kallsyms.
    pub fn load() -> Result<KernelSymbols, SymbolizeError> {
        Self::load_from(Path::new(KALLSYMS_PATH))
    }

    /// Reads a file in kallsyms format (a saved copy, a test fixture).
    pub fn load_from(path: &Path) -> Result<KernelSymbols, SymbolizeError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| SymbolizeError::KallsymsRead {
                path: path.to_path_buf(),
                source,
            })?;
        Self::parse(text, path)
    }

    /// Parses kallsyms text: `ADDRESS TYPE NAME [\t[MODULE]]` per line. `source` names the
    /// file in errors.
    pub fn parse(text: String, source: &Path) -> Result<KernelSymbols, SymbolizeError> {
        let mut all = Vec::new();
        let mut at = 0usize;
        for (n, line) in text.split_inclusive('\n').enumerate() {
            let line_start = at;
            at += line.len();
            let bad = || SymbolizeError::KallsymsMalformed {
                path: source.to_path_buf(),
                line: n + 1,
                text: line.trim_end().chars().take(200).collect(),
            };
            let content = line.trim_end_matches(['\n', '\r']);
            if content.trim().is_empty() {
                continue;
            }
            let mut fields = content.split_ascii_whitespace();
            let (Some(addr), Some(ty), Some(name)) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(bad());
            };
            let module = fields.next();
            if fields.next().is_some() || ty.len() != 1 {
                return Err(bad());
            }
            let addr = u64::from_str_radix(addr, 16).map_err(|_| bad())?;
            // Offsets into `text` of the name and module, which are subslices of `line`.
            let span = |s: &str| -> Option<(u32, u32)> {
                let off = s.as_ptr() as usize - line.as_ptr() as usize + line_start;
                Some((u32::try_from(off).ok()?, u32::try_from(s.len()).ok()?))
            };
            let module = match module {
                Some(m) => {
                    let inner = m
                        .strip_prefix('[')
                        .and_then(|m| m.strip_suffix(']'))
                        .ok_or_else(bad)?;
                    span(inner).ok_or_else(bad)?
                }
                None => (0, 0),
            };
            all.push(KSym {
                addr,
                line: n as u32,
                name: span(name).ok_or_else(bad)?,
                module,
                ty: ty.as_bytes()[0],
            });
        }
        let hidden = !all.is_empty() && all.iter().all(|s| s.addr == 0);
        let str_of = |(off, len): (u32, u32)| text.get(off as usize..off as usize + len as usize);
        // At one address, the best alias last: text over data, global over local, fewer
        // leading underscores (`srso_alias_untrain_ret` over `_stext`), then file order.
        all.sort_by_cached_key(|s| {
            let underscores =
                str_of(s.name).map_or(0, |n| n.bytes().take_while(|&b| b == b'_').count());
            (
                s.addr,
                std::cmp::Reverse((
                    !is_text(s.ty),
                    s.ty.is_ascii_lowercase(),
                    underscores,
                    s.line,
                )),
            )
        });
        let addrs = all.iter().map(|s| s.addr).collect();
        let out = KernelSymbols {
            source: source.to_path_buf(),
            text,
            syms: all,
            addrs,
            hidden,
        };
        Ok(out)
    }

    /// True when every address is 0: kptr_restrict hides them from this process, and
    /// nothing can be resolved.
    pub fn hidden(&self) -> bool {
        self.hidden
    }

    /// When [`KernelSymbols::hidden`], the reason and what to do, in words.
    pub fn hidden_reason(&self) -> Option<String> {
        if !self.hidden {
            return None;
        }
        let level = std::fs::read_to_string(KPTR_RESTRICT_PATH)
            .ok()
            .and_then(|s| s.trim().parse::<u8>().ok());
        let head = format!(
            "{} lists every kernel address as 0, so kernel frames cannot be named",
            self.source.display()
        );
        Some(match level {
            Some(2) => format!(
                "{head}: kernel.kptr_restrict = 2 hides them even from root; \
                 run `sudo sysctl kernel.kptr_restrict=1` and run ldcost as root"
            ),
            Some(l) => format!(
                "{head}: kernel.kptr_restrict = {l} hides them from processes without \
                 CAP_SYSLOG; run ldcost as root, or `sudo sysctl kernel.kptr_restrict=0`"
            ),
            None => format!(
                "{head}: kernel.kptr_restrict hides them; run ldcost as root, or \
                 `sudo sysctl kernel.kptr_restrict=0`"
            ),
        })
    }

    /// The kernel function containing `addr`, or None (hidden addresses, below the first
    /// symbol, or nearest symbol not code).
    pub fn symbolize(&self, addr: u64) -> Option<&str> {
        self.resolve(addr).map(|f| f.name)
    }

    /// [`KernelSymbols::symbolize`] with the offset into the function and its module.
    pub fn resolve(&self, addr: u64) -> Option<KernelFrame<'_>> {
        if self.hidden {
            return None;
        }
        let i = self.addrs.partition_point(|&a| a <= addr);
        let s = self.syms.get(i.checked_sub(1)?)?;
        if !is_text(s.ty) {
            return None;
        }
        Some(KernelFrame {
            name: self.str_of(s.name),
            offset: addr - s.addr,
            module: (s.module.1 > 0).then(|| self.str_of(s.module)),
        })
    }

    /// The address of the first symbol named `name` (a linear scan: for the few names a
    /// report asks about, not per sample). None when hidden.
    pub fn lookup(&self, name: &str) -> Option<u64> {
        self.lookup_all(name).into_iter().next()
    }

    /// The addresses of every symbol named `name`, in file order (static functions can
    /// repeat: `load_elf_binary` is in binfmt_elf and its compat copy).
    pub fn lookup_all(&self, name: &str) -> Vec<u64> {
        if self.hidden {
            return Vec::new();
        }
        let mut found: Vec<(u32, u64)> = self
            .syms
            .iter()
            .filter(|s| self.str_of(s.name) == name)
            .map(|s| (s.line, s.addr))
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, a)| a).collect()
    }

    /// Number of symbols listed.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    fn str_of(&self, (off, len): (u32, u32)) -> &str {
        self.text
            .get(off as usize..off as usize + len as usize)
            .unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = "\
ffffffff81000000 T _stext
ffffffff81000000 T srso_alias_untrain_ret
ffffffff81000000 T _text
ffffffff81001000 t __pfx_copy_page_range
ffffffff81001010 T copy_page_range
ffffffff81002000 T dup_mmap
ffffffff81003000 D init_task
ffffffff81004000 t load_elf_binary
ffffffff81005000 t load_elf_binary
ffffffffc0001000 t ext4_fill_super\t[ext4]
";

    fn parse(text: &str) -> KernelSymbols {
        KernelSymbols::parse(text.to_string(), Path::new("kallsyms")).unwrap()
    }

    #[test]
    fn resolves_text_and_refuses_data() {
        let k = parse(FIXTURE);
        assert!(!k.hidden());
        assert_eq!(k.hidden_reason(), None);
        assert_eq!(k.len(), 10);
        assert_eq!(k.symbolize(0xffffffff80ffffff), None);
        assert_eq!(
            k.symbolize(0xffffffff81000010),
            Some("srso_alias_untrain_ret")
        );
        assert_eq!(k.symbolize(0xffffffff81001010), Some("copy_page_range"));
        assert_eq!(
            k.resolve(0xffffffff81001234),
            Some(KernelFrame {
                name: "copy_page_range",
                offset: 0x224,
                module: None
            })
        );
        assert_eq!(k.symbolize(0xffffffff81003008), None);
        assert_eq!(
            k.resolve(0xffffffffc0001004),
            Some(KernelFrame {
                name: "ext4_fill_super",
                offset: 4,
                module: Some("ext4")
            })
        );
        assert_eq!(k.lookup("dup_mmap"), Some(0xffffffff81002000));
        assert_eq!(
            k.lookup_all("load_elf_binary"),
            vec![0xffffffff81004000, 0xffffffff81005000]
        );
        assert_eq!(k.lookup("nope"), None);
    }

    #[test]
    fn all_zero_addresses_are_hidden_and_say_why() {
        let text: String = FIXTURE
            .lines()
            .map(|l| format!("0000000000000000{}\n", &l[16..]))
            .collect();
        let k = parse(&text);
        assert!(k.hidden());
        let why = k.hidden_reason().unwrap();
        assert!(
            why.contains("kptr_restrict") && why.contains("kallsyms"),
            "{why}"
        );
        assert_eq!(k.symbolize(0), None);
        assert_eq!(k.lookup("dup_mmap"), None);
    }

    #[test]
    fn malformed_lines_are_errors_with_file_and_line() {
        for bad in [
            "zzzz T foo\n",
            "ffff T\n",
            "ffff TT foo\n",
            "ffff t foo ext4\n",
            "ffff t foo [a] b\n",
        ] {
            let text = format!("ffffffff81000000 T _text\n{bad}");
            let e = KernelSymbols::parse(text, Path::new("/x/kallsyms")).unwrap_err();
            assert!(e.to_string().starts_with("/x/kallsyms:2:"), "{e}");
        }
        let empty = parse("");
        assert!(empty.is_empty() && !empty.hidden());
        assert_eq!(empty.symbolize(1), None);
    }

    #[test]
    fn unreadable_file_is_an_error_naming_it() {
        let e = KernelSymbols::load_from(Path::new("/nonexistent/kallsyms")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/kallsyms"), "{e}");
    }
}
