//! Bounds-checked decoding of the cache file formats (split from the lookup logic in mod.rs).

use super::*;

/// Bounds-checked decoding of one file.
pub(super) struct Parser<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) path: &'a Path,
}

impl Parser<'_> {
    fn malformed(&self, what: String) -> CacheError {
        CacheError::Malformed {
            path: self.path.to_path_buf(),
            what,
        }
    }

    fn array<const N: usize>(&self, offset: usize, field: &str) -> Result<[u8; N], CacheError> {
        offset
            .checked_add(N)
            .and_then(|end| self.bytes.get(offset..end))
            .and_then(|slice| <[u8; N]>::try_from(slice).ok())
            .ok_or_else(|| {
                self.malformed(format!(
                    "{field} at offset {offset:#x} is beyond the end of the file ({} bytes)",
                    self.bytes.len()
                ))
            })
    }

    fn u32_at(&self, offset: usize, field: &str) -> Result<u32, CacheError> {
        self.array(offset, field).map(u32::from_le_bytes)
    }

    fn i32_at(&self, offset: usize, field: &str) -> Result<i32, CacheError> {
        self.array(offset, field).map(i32::from_le_bytes)
    }

    fn u64_at(&self, offset: usize, field: &str) -> Result<u64, CacheError> {
        self.array(offset, field).map(u64::from_le_bytes)
    }

    /// The NUL-terminated string at `table + offset`.
    fn cstr(
        &self,
        table: usize,
        offset: u32,
        what: &dyn Fn() -> String,
    ) -> Result<&[u8], CacheError> {
        let len = self.bytes.len();
        let start = table
            .checked_add(offset as usize)
            .filter(|&start| start < len)
            .ok_or_else(|| {
                self.malformed(format!(
                    "{}: string offset {offset:#x} (from the string table at {table:#x}) is \
                     beyond the end of the file ({len} bytes)",
                    what()
                ))
            })?;
        let tail = &self.bytes[start..];
        let nul = tail.iter().position(|&b| b == 0).ok_or_else(|| {
            self.malformed(format!(
                "{}: the string at file offset {start:#x} is not NUL-terminated before the \
                 end of the file",
                what()
            ))
        })?;
        Ok(&tail[..nul])
    }

    pub(super) fn parse(&self) -> Result<LdCache, CacheError> {
        let len = self.bytes.len();
        if len == 0 {
            return Err(self.malformed("the file is empty".to_string()));
        }
        // elf/dl-cache.c checks the new format first, then the old one.
        if self.bytes.starts_with(CACHEMAGIC_VERSION_NEW) {
            // `cachesize > sizeof *cache_new` and, avoiding overflow,
            // `(cachesize - sizeof *cache_new) / sizeof (struct file_entry_new) >= nlibs`.
            if len <= NEW_HEADER_SIZE {
                return Err(self.malformed(format!(
                    "the file is {len} bytes long; ld.so needs more than the \
                     {NEW_HEADER_SIZE}-byte header of the new format"
                )));
            }
            self.check_new_header(0)?;
            return self.parse_new(0, CacheFormat::New);
        }
        if self.bytes.starts_with(CACHEMAGIC) {
            if len <= OLD_HEADER_SIZE {
                return Err(self.malformed(format!(
                    "the file is {len} bytes long; ld.so needs more than the \
                     {OLD_HEADER_SIZE}-byte header of the old format"
                )));
            }
            let nlibs = self.u32_at(OLD_NLIBS_OFFSET, "old-format nlibs")? as usize;
            let fit = (len - OLD_HEADER_SIZE) / OLD_ENTRY_SIZE;
            if nlibs > fit {
                return Err(self.malformed(format!(
                    "the old-format header claims {nlibs} entries, but at most {fit} fit in \
                     the {len}-byte file"
                )));
            }
            // Cannot overflow: nlibs * 12 <= len.
            let old_end = OLD_HEADER_SIZE + nlibs * OLD_ENTRY_SIZE;
            // ALIGN_CACHE: the new header, if any, starts at the old table's end rounded
            // up to the alignment of struct cache_file_new (it is "string[0]" of the old
            // format, so old readers never see it).
            let new_base = old_end.next_multiple_of(NEW_HEADER_ALIGN);
            // ld.so: `cachesize < offset + sizeof (struct cache_file_new)` means no new
            // format (ldconfig -p asks for one byte more; it never matters in practice).
            if new_base
                .checked_add(NEW_HEADER_SIZE)
                .is_some_and(|end| end <= len)
                && self.bytes[new_base..].starts_with(CACHEMAGIC_VERSION_NEW)
            {
                self.check_new_header(new_base)?;
                return self.parse_new(new_base, CacheFormat::Compat);
            }
            return self.parse_old(nlibs, old_end);
        }
        let shown = &self.bytes[..len.min(CACHEMAGIC_VERSION_NEW.len())];
        Err(self.malformed(format!(
            "it starts with neither \"glibc-ld.so.cache1.1\" nor \"ld.so-1.7.0\" but with \
             \"{}\"",
            shown.escape_ascii()
        )))
    }

    /// Entry count and byte-order checks of a new-format header at `base`.
    fn check_new_header(&self, base: usize) -> Result<(), CacheError> {
        let len = self.bytes.len();
        let nlibs = self.u32_at(base + NEW_NLIBS_OFFSET, "new-format nlibs")? as usize;
        // The caller made sure the header fits.  For a compat file ld.so does not check
        // the new count at all and would read past the end; we refuse such files.
        let fit = (len - base - NEW_HEADER_SIZE) / NEW_ENTRY_SIZE;
        if nlibs > fit {
            return Err(self.malformed(format!(
                "the new-format header at offset {base:#x} claims {nlibs} entries, but at \
                 most {fit} fit in the {len}-byte file"
            )));
        }
        // cache_file_new_matches_endian: flags == 0 (written by an ldconfig without
        // endianness support) or its low two bits say little-endian (2).  We read
        // little-endian values, as x86-64 and aarch64 ld.so do.
        let flags = self.bytes[base + NEW_FLAGS_OFFSET];
        if flags != 0 && (flags & 3) != 2 {
            let what = match flags & 3 {
                1 => "invalid",
                3 => "big-endian",
                _ => "of unset endianness (with other flag bits set)",
            };
            return Err(self.malformed(format!(
                "the header flags {flags:#04x} mark the cache as {what}; a little-endian \
                 ld.so ignores it"
            )));
        }
        Ok(())
    }

    fn parse_new(&self, base: usize, format: CacheFormat) -> Result<LdCache, CacheError> {
        let nlibs = self.u32_at(base + NEW_NLIBS_OFFSET, "new-format nlibs")? as usize;
        // Bounded by the file size (check_new_header).
        let mut entries = Vec::with_capacity(nlibs);
        let mut keys = Vec::with_capacity(nlibs);
        for i in 0..nlibs {
            let at = base + NEW_HEADER_SIZE + i * NEW_ENTRY_SIZE;
            let flags = self.i32_at(at, "entry flags")?;
            let key = self.u32_at(at + 4, "entry key")?;
            let value = self.u32_at(at + 8, "entry value")?;
            let osversion = self.u32_at(at + 12, "entry osversion")?;
            let hwcap = self.u64_at(at + 16, "entry hwcap")?;
            // New-format string offsets are relative to the new header ("the string
            // table always begins at the beginning of the new cache struct", cache.c),
            // which is the start of the file unless there is an old table in front.
            let key_bytes = self.cstr(base, key, &|| format!("entry {i} key"))?;
            let path_bytes = self.cstr(base, value, &|| format!("entry {i} path"))?;
            entries.push(CacheEntry {
                key: String::from_utf8_lossy(key_bytes).into_owned(),
                path: String::from_utf8_lossy(path_bytes).into_owned(),
                flags,
                osversion,
                hwcap,
            });
            keys.push(key_bytes.to_vec());
        }
        let (hwcaps, generator) = self.parse_extensions(base)?;
        Ok(LdCache {
            format,
            entries,
            keys,
            hwcaps,
            generator,
        })
    }

    fn parse_old(&self, nlibs: usize, string_table: usize) -> Result<LdCache, CacheError> {
        // Bounded by the file size (checked by the caller).
        let mut entries = Vec::with_capacity(nlibs);
        let mut keys = Vec::with_capacity(nlibs);
        for i in 0..nlibs {
            let at = OLD_HEADER_SIZE + i * OLD_ENTRY_SIZE;
            let flags = self.i32_at(at, "entry flags")?;
            let key = self.u32_at(at + 4, "entry key")?;
            let value = self.u32_at(at + 8, "entry value")?;
            // Old-format offsets are relative to the end of the entry table
            // (`&cache->libs[cache->nlibs]`).
            let key_bytes = self.cstr(string_table, key, &|| format!("entry {i} key"))?;
            let path_bytes = self.cstr(string_table, value, &|| format!("entry {i} path"))?;
            entries.push(CacheEntry {
                key: String::from_utf8_lossy(key_bytes).into_owned(),
                path: String::from_utf8_lossy(path_bytes).into_owned(),
                flags,
                osversion: 0,
                hwcap: 0,
            });
            keys.push(key_bytes.to_vec());
        }
        Ok(LdCache {
            format: CacheFormat::Old,
            entries,
            keys,
            hwcaps: Vec::new(),
            generator: None,
        })
    }

    /// `cache_extension_load` + `cache_extension_verify`.  All offsets in the extension
    /// directory are from the start of the file (`file_base` is the mapping's start, also
    /// for compat files).  Failures that make `cache_extension_load` return false are
    /// errors here, as in `ldconfig -p` (ld.so would just ignore the hwcaps entries).
    #[allow(clippy::type_complexity)]
    fn parse_extensions(
        &self,
        new_base: usize,
    ) -> Result<(Vec<HwcapsName>, Option<String>), CacheError> {
        let len = self.bytes.len();
        let ext = self.u32_at(
            new_base + NEW_EXTENSION_OFFSET_OFFSET,
            "new-format extension_offset",
        )? as usize;
        if ext == 0 {
            // No extensions present; not a format error.
            return Ok((Vec::new(), None));
        }
        if ext % 4 != 0 {
            return Err(self.malformed(format!(
                "the extension directory offset {ext:#x} is not a multiple of 4"
            )));
        }
        if ext
            .checked_add(EXTENSION_HEADER_SIZE)
            .is_none_or(|end| end > len)
        {
            return Err(self.malformed(format!(
                "the extension directory at {ext:#x} extends beyond the end of the file \
                 ({len} bytes)"
            )));
        }
        let magic = self.u32_at(ext, "extension magic")?;
        if magic != CACHE_EXTENSION_MAGIC {
            return Err(self.malformed(format!(
                "the extension directory at {ext:#x} has magic {magic:#010x}, expected \
                 {CACHE_EXTENSION_MAGIC:#010x}"
            )));
        }
        let count = self.u32_at(ext + 4, "extension count")? as usize;
        let table_end = count
            .checked_mul(EXTENSION_SECTION_SIZE)
            .and_then(|size| size.checked_add(ext + EXTENSION_HEADER_SIZE));
        if table_end.is_none_or(|end| end > len) {
            return Err(self.malformed(format!(
                "the extension directory at {ext:#x} claims {count} sections, which extend \
                 beyond the end of the file ({len} bytes)"
            )));
        }
        // (offset, size) per known tag; a later section of the same tag wins, as in C.
        let mut sections: [Option<(usize, usize)>; CACHE_EXTENSION_COUNT as usize] =
            [None; CACHE_EXTENSION_COUNT as usize];
        for i in 0..count {
            let at = ext + EXTENSION_HEADER_SIZE + i * EXTENSION_SECTION_SIZE;
            let tag = self.u32_at(at, "extension section tag")?;
            let offset = self.u32_at(at + 8, "extension section offset")? as usize;
            let size = self.u32_at(at + 12, "extension section size")? as usize;
            if offset.checked_add(size).is_none_or(|end| end > len) {
                return Err(self.malformed(format!(
                    "extension section {i} (tag {tag}) at {offset:#x} with {size} bytes \
                     extends beyond the end of the file ({len} bytes)"
                )));
            }
            if tag >= CACHE_EXTENSION_COUNT {
                // Unknown tag: ignored, for forward compatibility.
                continue;
            }
            sections[tag as usize] = Some((offset, size));
        }
        // cache_extension_verify: a hwcaps section must be non-empty, 4-byte aligned and
        // a multiple of 4 long; otherwise it is silently dropped.
        let hwcaps_section = sections[CACHE_EXTENSION_TAG_GLIBC_HWCAPS as usize]
            .filter(|&(offset, size)| size != 0 && offset % 4 == 0 && size % 4 == 0);
        let mut hwcaps = Vec::new();
        if let Some((offset, size)) = hwcaps_section {
            // size <= len, so this allocation is bounded by the file.
            hwcaps.reserve(size / 4);
            for j in 0..size / 4 {
                let index = self.u32_at(offset + 4 * j, "glibc-hwcaps section element")?;
                // `*left < cachesize`: the name is at that offset from the start of the
                // *file*.  It is read up to its NUL; strlen in ld.so would run past the
                // end of an unterminated one, here the end of the file stops it.
                let raw = usize::try_from(index)
                    .ok()
                    .filter(|&start| start < len)
                    .map(|start| {
                        let tail = &self.bytes[start..];
                        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
                        tail[..end].to_vec()
                    });
                let text = raw
                    .as_ref()
                    .and_then(|raw| String::from_utf8(raw.clone()).ok());
                hwcaps.push(HwcapsName { raw, text });
            }
        }
        let generator = sections[CACHE_EXTENSION_TAG_GENERATOR as usize].map(|(offset, size)| {
            String::from_utf8_lossy(&self.bytes[offset..offset + size]).into_owned()
        });
        Ok((hwcaps, generator))
    }
}
