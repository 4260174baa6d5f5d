//! The runtime's API tables as the interposer sees them: checked, saved and patched.
//!
//! `OnLoad` receives the runtime's live tables. Each child table's `minor_id` is its size;
//! an entry is read or written only when the table is large enough to hold it. The saved
//! originals are kept in zero-initialised tables of our own layout into which exactly the
//! entries the runtime's tables hold are copied, so a call through a missing entry finds `None`
//! instead of reading past a shorter table.

use std::ffi::c_void;

use crate::hsa::*;

/// Why the runtime's tables are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// The root table pointer is NULL.
    #[error("the runtime passed no API table")]
    NoTable,
    /// A ROCm release before 6.0 (or an unknown future one).
    #[error("API table version {major}.{step} is not supported (rtl-pmc needs ROCm 6.0 or newer)")]
    RootVersion {
        /// Root major id.
        major: u32,
        /// Root step id.
        step: u32,
    },
    /// A child table is missing or has another major version.
    #[error("{table} table {problem}")]
    Child {
        /// Which table.
        table: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// An entry the interposer needs is absent.
    #[error("the runtime's {table} table has no {entry}")]
    MissingEntry {
        /// Which table.
        table: &'static str,
        /// The entry's function name.
        entry: &'static str,
    },
}

/// Copies every entry of `ENTRIES` that `has_entry` allows from `table` into a zeroed table.
///
/// # Safety
/// `table` must point to a table whose first 16 bytes are an [`ApiTableVersion`] and which
/// holds every entry `has_entry` accepts.
unsafe fn saved_copy<T: Default>(
    table: *const T,
    entries: &[(&str, &str, usize)],
    has_entry: impl Fn(&ApiTableVersion, usize) -> bool,
) -> T {
    let mut copy = T::default();
    // SAFETY: the caller guarantees a readable version header.
    let version = unsafe { *(table as *const ApiTableVersion) };
    for &(_, _, offset) in entries {
        if has_entry(&version, offset) {
            // SAFETY: `has_entry` says the runtime's table holds these 8 bytes; `copy` is our
            // own table of the full layout.
            unsafe {
                let src = (table as *const u8).add(offset) as *const u64;
                let dst = (&mut copy as *mut T as *mut u8).add(offset) as *mut u64;
                dst.write_unaligned(src.read_unaligned());
            }
        }
    }
    // SAFETY: same header.
    unsafe { *(&mut copy as *mut T as *mut ApiTableVersion) = version };
    copy
}

/// The checked tables of the runtime: where to patch, and the saved originals to call.
pub struct Tables {
    core: *mut CoreApiTable,
    amd: *mut AmdExtTable,
    /// The runtime's core entries, as they were before patching.
    pub core_orig: CoreApiTable,
    /// The runtime's AMD extension entries, as they were before patching.
    pub amd_orig: AmdExtTable,
}

// SAFETY: the table pointers are the runtime's process-wide tables; they are written only
// during `OnLoad`/`OnUnload`, which the runtime calls on one thread.
unsafe impl Send for Tables {}
// SAFETY: see `Send`.
unsafe impl Sync for Tables {}

/// Looks an entry up by field name in our layout: (function name, offset).
fn entry_of(
    entries: &'static [(&'static str, &'static str, usize)],
    field: &str,
) -> (&'static str, usize) {
    entries
        .iter()
        .find(|(f, _, _)| *f == field)
        .map(|(_, name, offset)| (*name, *offset))
        .unwrap_or(("?", usize::MAX))
}

/// Core entries the interposer calls or replaces.
const CORE_NEEDED: &[&str] = &[
    "hsa_system_get_info_fn",
    "hsa_iterate_agents_fn",
    "hsa_agent_get_info_fn",
    "hsa_queue_create_fn",
    "hsa_queue_destroy_fn",
    "hsa_signal_create_fn",
    "hsa_signal_destroy_fn",
    "hsa_signal_load_scacquire_fn",
    "hsa_signal_store_relaxed_fn",
    "hsa_signal_subtract_screlease_fn",
    "hsa_signal_wait_scacquire_fn",
    "hsa_executable_destroy_fn",
    "hsa_executable_freeze_fn",
    "hsa_executable_symbol_get_info_fn",
    "hsa_executable_iterate_symbols_fn",
    "hsa_system_get_major_extension_table_fn",
];

/// AMD extension entries the interposer calls.
const AMD_NEEDED: &[&str] = &[
    "hsa_amd_profiling_set_profiler_enabled_fn",
    "hsa_amd_profiling_get_dispatch_time_fn",
    "hsa_amd_queue_intercept_create_fn",
    "hsa_amd_queue_intercept_register_fn",
];

impl Tables {
    /// Checks the root table handed to `OnLoad` and saves the entries the interposer needs.
    ///
    /// # Safety
    /// `root` must be NULL or the runtime's `HsaApiTable`.
    pub unsafe fn check(root: *mut HsaApiTable) -> Result<Tables, TableError> {
        if root.is_null() {
            return Err(TableError::NoTable);
        }
        // SAFETY: the runtime's root table starts with its version.
        let version = unsafe { (*root).version };
        if !(2..=3).contains(&version.major_id) || version.minor_id < 32 {
            return Err(TableError::RootVersion {
                major: version.major_id,
                step: version.step_id,
            });
        }
        // SAFETY: minor_id >= 32 covers core_ at 16 and amd_ext_ at 24.
        let (core, amd) = unsafe { ((*root).core_, (*root).amd_ext_) };
        // SAFETY: non-NULL child tables start with their version.
        let child = |name: &'static str, ptr: *const ApiTableVersion| match unsafe { ptr.as_ref() }
        {
            None => Err(TableError::Child {
                table: name,
                problem: "is missing".into(),
            }),
            Some(v) if v.major_id != 2 => Err(TableError::Child {
                table: name,
                problem: format!("has major version {} (rtl-pmc needs 2)", v.major_id),
            }),
            Some(_) => Ok(()),
        };
        child("core", core as *const ApiTableVersion)?;
        child("AMD extension", amd as *const ApiTableVersion)?;
        // SAFETY: both tables were checked to exist with major 2.
        let (core_orig, amd_orig) = unsafe {
            (
                saved_copy(core, CoreApiTable::ENTRIES, CoreApiTable::has_entry),
                saved_copy(amd, AmdExtTable::ENTRIES, AmdExtTable::has_entry),
            )
        };
        let tables = Tables {
            core,
            amd,
            core_orig,
            amd_orig,
        };
        for field in CORE_NEEDED {
            tables.require("core", CoreApiTable::ENTRIES, &tables.core_orig, field)?;
        }
        for field in AMD_NEEDED {
            tables.require(
                "AMD extension",
                AmdExtTable::ENTRIES,
                &tables.amd_orig,
                field,
            )?;
        }
        Ok(tables)
    }

    fn require<T>(
        &self,
        table: &'static str,
        entries: &'static [(&'static str, &'static str, usize)],
        saved: &T,
        field: &str,
    ) -> Result<(), TableError> {
        let (entry, offset) = entry_of(entries, field);
        // SAFETY: `offset` is an entry offset of our own layout, inside `saved`.
        let value = unsafe {
            ((saved as *const T as *const u8).add(offset) as *const u64).read_unaligned()
        };
        if offset == usize::MAX || value == 0 {
            return Err(TableError::MissingEntry { table, entry });
        }
        Ok(())
    }

    /// Replaces the core entry `field` (a field name of [`CoreApiTable`]) with `function`.
    ///
    /// # Safety
    /// `function` must have the entry's exact C signature.
    pub unsafe fn patch_core(&self, field: &str, function: *const c_void) {
        let (_, offset) = entry_of(CoreApiTable::ENTRIES, field);
        // SAFETY: the runtime's table is valid; `has_entry` checks its size.
        unsafe {
            if CoreApiTable::has_entry(&(*self.core).version, offset) {
                *((self.core as *mut u8).add(offset) as *mut *const c_void) = function;
            }
        }
    }

    /// Puts the saved original of core entry `field` back.
    pub fn restore_core(&self, field: &str) {
        let (_, offset) = entry_of(CoreApiTable::ENTRIES, field);
        // SAFETY: `offset` is inside our saved copy and, by `has_entry`, the runtime's table.
        unsafe {
            if CoreApiTable::has_entry(&(*self.core).version, offset) {
                let saved = *((&self.core_orig as *const CoreApiTable as *const u8).add(offset)
                    as *const *const c_void);
                *((self.core as *mut u8).add(offset) as *mut *const c_void) = saved;
            }
        }
    }

    /// Replaces the AMD extension entry `field` (a field name of [`AmdExtTable`]) with
    /// `function`, if the runtime's table is long enough to hold it.
    ///
    /// # Safety
    /// `function` must have the entry's exact C signature.
    pub unsafe fn patch_amd(&self, field: &str, function: *const c_void) {
        let (_, offset) = entry_of(AmdExtTable::ENTRIES, field);
        if offset == usize::MAX || !self.has_amd(field) {
            return;
        }
        // SAFETY: `has_amd` checked that the runtime's table holds the entry.
        unsafe { *((self.amd as *mut u8).add(offset) as *mut *const c_void) = function };
    }

    /// Puts the saved original of AMD extension entry `field` back.
    pub fn restore_amd(&self, field: &str) {
        let (_, offset) = entry_of(AmdExtTable::ENTRIES, field);
        if offset == usize::MAX || !self.has_amd(field) {
            return;
        }
        // SAFETY: `offset` is inside our saved copy and, by `has_amd`, the runtime's table.
        unsafe {
            let saved = *((&self.amd_orig as *const AmdExtTable as *const u8).add(offset)
                as *const *const c_void);
            *((self.amd as *mut u8).add(offset) as *mut *const c_void) = saved;
        }
    }

    /// Whether the runtime's AMD extension table holds `field`.
    pub fn has_amd(&self, field: &str) -> bool {
        let (_, offset) = entry_of(AmdExtTable::ENTRIES, field);
        // SAFETY: the runtime's table starts with its version.
        offset != usize::MAX && AmdExtTable::has_entry(unsafe { &(*self.amd).version }, offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn fake_status() -> hsa_status_t {
        HSA_STATUS_SUCCESS
    }

    fn fill<T>(table: &mut T, entries: &[(&str, &str, usize)], size: usize) {
        for &(_, _, offset) in entries {
            if offset + 8 <= size {
                // SAFETY: writing a function pointer into an entry slot of our own table.
                unsafe {
                    *((table as *mut T as *mut u8).add(offset) as *mut *const c_void) =
                        fake_status as *const c_void;
                }
            }
        }
    }

    struct Runtime {
        root: HsaApiTable,
        core: Box<CoreApiTable>,
        amd: Box<AmdExtTable>,
    }

    fn runtime(root_major: u32, amd_major: u32, amd_size: u32) -> Runtime {
        let mut core = Box::<CoreApiTable>::default();
        core.version = ApiTableVersion {
            major_id: 2,
            minor_id: std::mem::size_of::<CoreApiTable>() as u32,
            step_id: 0,
            reserved: 0,
        };
        fill(&mut *core, CoreApiTable::ENTRIES, usize::MAX);
        let mut amd = Box::<AmdExtTable>::default();
        amd.version = ApiTableVersion {
            major_id: amd_major,
            minor_id: amd_size,
            step_id: 0,
            reserved: 0,
        };
        fill(&mut *amd, AmdExtTable::ENTRIES, amd_size as usize);
        let root = HsaApiTable {
            version: ApiTableVersion {
                major_id: root_major,
                minor_id: 64,
                step_id: 1,
                reserved: 0,
            },
            core_: &mut *core,
            amd_ext_: &mut *amd,
            ..HsaApiTable::default()
        };
        Runtime { root, core, amd }
    }

    #[test]
    fn rocm_6_and_7_tables_are_accepted_and_shorter_tables_copied_only_as_far_as_they_go() {
        for (major, size) in [(2, 552), (3, 584), (3, 704)] {
            let mut rt = runtime(major, 2, size);
            // SAFETY: a well-formed table set.
            let tables = unsafe { Tables::check(&mut rt.root) }.unwrap();
            assert!(tables
                .amd_orig
                .hsa_amd_queue_intercept_register_fn
                .is_some());
            assert_eq!(tables.amd_orig.version.minor_id, size);
            let past_end = AmdExtTable::ENTRIES
                .iter()
                .filter(|e| e.2 + 8 > size as usize)
                .count();
            let copied_past_end = AmdExtTable::ENTRIES
                .iter()
                .filter(|e| e.2 + 8 > size as usize)
                .filter(|e| {
                    // SAFETY: reading our own saved copy.
                    unsafe {
                        *((&tables.amd_orig as *const AmdExtTable as *const u8).add(e.2)
                            as *const u64)
                            != 0
                    }
                })
                .count();
            assert_eq!(
                copied_past_end, 0,
                "size {size}: {past_end} entries past the end"
            );
        }
    }

    #[test]
    fn older_or_odd_tables_are_refused_with_a_reason() {
        let mut rt = runtime(1, 1, 456);
        // SAFETY: well-formed tables.
        let e = unsafe { Tables::check(&mut rt.root) }.err().unwrap();
        assert_eq!(
            e.to_string(),
            "API table version 1.1 is not supported (rtl-pmc needs ROCm 6.0 or newer)"
        );
        let mut rt = runtime(3, 1, 456);
        // SAFETY: well-formed tables.
        let e = unsafe { Tables::check(&mut rt.root) }.err().unwrap();
        assert_eq!(
            e.to_string(),
            "AMD extension table has major version 1 (rtl-pmc needs 2)"
        );
        // A table too short to hold the intercept entries.
        let mut rt = runtime(3, 2, 300);
        // SAFETY: well-formed tables.
        let e = unsafe { Tables::check(&mut rt.root) }.err().unwrap();
        assert_eq!(
            e.to_string(),
            "the runtime's AMD extension table has no hsa_amd_queue_intercept_create"
        );
        let mut rt = runtime(3, 2, 704);
        rt.root.amd_ext_ = std::ptr::null_mut();
        // SAFETY: NULL child.
        let e = unsafe { Tables::check(&mut rt.root) }.err().unwrap();
        assert_eq!(e.to_string(), "AMD extension table is missing");
        // SAFETY: NULL root.
        assert_eq!(
            unsafe { Tables::check(std::ptr::null_mut()) }.err(),
            Some(TableError::NoTable)
        );
        drop((rt.core, rt.amd));
    }

    #[test]
    fn patches_land_only_inside_the_table_and_restore() {
        let mut rt = runtime(3, 2, 704);
        // SAFETY: a well-formed table set.
        let tables = unsafe { Tables::check(&mut rt.root) }.unwrap();
        unsafe extern "C" fn other() -> hsa_status_t {
            HSA_STATUS_ERROR
        }
        // SAFETY: a test stub; never called through the table.
        unsafe { tables.patch_core("hsa_queue_create_fn", other as *const c_void) };
        assert_eq!(
            rt.core.hsa_queue_create_fn.map(|f| f as *const () as usize),
            Some(other as *const () as usize)
        );
        tables.restore_core("hsa_queue_create_fn");
        assert_eq!(
            rt.core.hsa_queue_create_fn.map(|f| f as *const () as usize),
            Some(fake_status as *const () as usize)
        );
        assert!(tables.has_amd("hsa_amd_memory_pool_allocate_fn"));
        assert!(!tables.has_amd("no_such_entry"));
    }
}
