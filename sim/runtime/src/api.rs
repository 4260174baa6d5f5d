//! The live API tables and the exported `hsa_*` functions.
//!
//! As in ROCr, every exported function is a trampoline that calls through the live table, so a
//! tool that patches an entry in `OnLoad` intercepts the application's calls. The tables start
//! as copies of the defaults (the implementations named in [`crate::entry`]) and are reset to
//! them after tools unload. `RTL_SIM_ROCM` decides which versions and sizes the tables claim;
//! for ROCm ≤ 5.5 the AMD extension table is laid out as those releases did (intercept
//! functions at 296/304), and the trampolines follow that layout.

#![allow(clippy::unused_unit, clippy::too_many_arguments)]

use crate::entry;
use crate::hsa::*;
use crate::settings::settings;
use core::ffi::{c_char, c_int, c_void};
use std::cell::UnsafeCell;

/// What an exported function returns when its table entry is empty.
pub trait Fallback {
    /// The value.
    fn fallback() -> Self;
}
impl Fallback for u32 {
    fn fallback() -> u32 {
        HSA_STATUS_ERROR_NOT_INITIALIZED
    }
}
impl Fallback for u64 {
    fn fallback() -> u64 {
        0
    }
}
impl Fallback for i64 {
    fn fallback() -> i64 {
        0
    }
}
impl Fallback for () {
    fn fallback() {}
}

/// Every table the runtime owns, in one block whose address never changes.
#[repr(C)]
struct Tables {
    root: HsaApiTable,
    core: CoreApiTable,
    amd_ext: AmdExtTable,
    /// The ROCm ≤ 5.5 layout of the AMD extension table (used when the release says so).
    amd_ext_old: [usize; 2 + 51],
    finalizer: FinalizerExtTable,
    image: ImageExtTable,
    tools: ToolsApiTable,
    pc_sampling: PcSamplingExtTable,
    /// Whether `root.amd_ext_` points at `amd_ext_old`.
    old_layout: bool,
}

struct LiveTables(UnsafeCell<Tables>);
// SAFETY: like ROCr's tables, the block is written only by `reset` (under the runtime's init lock,
// while no tool runs) and by tools patching entries in `OnLoad`; trampolines read entries with
// volatile pointer-sized loads.
unsafe impl Sync for LiveTables {}

static TABLES: LiveTables = LiveTables(UnsafeCell::new(Tables {
    // SAFETY (all zeroed): plain integers, null pointers and `None` entries.
    root: unsafe { core::mem::zeroed() },
    core: unsafe { core::mem::zeroed() },
    amd_ext: unsafe { core::mem::zeroed() },
    amd_ext_old: [0; 53],
    finalizer: unsafe { core::mem::zeroed() },
    image: unsafe { core::mem::zeroed() },
    tools: unsafe { core::mem::zeroed() },
    pc_sampling: unsafe { core::mem::zeroed() },
    old_layout: false,
}));

fn tables() -> *mut Tables {
    TABLES.0.get()
}

/// Hands out the root table (what `OnLoad` receives).
pub fn root_table() -> *mut HsaApiTable {
    // SAFETY: `tables()` points at the static block; taking a field address creates no reference.
    unsafe { core::ptr::addr_of_mut!((*tables()).root) }
}

/// Generates a module of default (unsupported) implementations for a table: each returns
/// `HSA_STATUS_ERROR` (or 0).
macro_rules! unsupported_impls {
    ($(#[$doc:meta])* $table:ident: $( $field:ident = $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty; )*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: not supported by the simulator.")]
            #[allow(unused_variables)]
            pub(crate) unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                <$ret as Unsupported>::unsupported()
            }
        )*
    };
}

/// What an unsupported function returns.
pub trait Unsupported {
    /// The value.
    fn unsupported() -> Self;
}
impl Unsupported for u32 {
    fn unsupported() -> u32 {
        HSA_STATUS_ERROR
    }
}
impl Unsupported for u64 {
    fn unsupported() -> u64 {
        0
    }
}
impl Unsupported for i64 {
    fn unsupported() -> i64 {
        0
    }
}
impl Unsupported for () {
    fn unsupported() {}
}

/// Stubs for every table entry; [`crate::entry`] overrides them with real implementations.
#[allow(dead_code)]
pub mod unsupported {
    use super::Unsupported;
    use crate::hsa::*;
    use core::ffi::{c_char, c_int, c_void};
    core_api_table!(unsupported_impls);
    amd_ext_table!(unsupported_impls);
    finalizer_ext_table!(unsupported_impls);
    image_ext_table!(unsupported_impls);
}

/// Generates `pub fn defaults() -> Table` from the implementations in [`crate::entry`].
macro_rules! default_table {
    ($(#[$doc:meta])* $table:ident: $( $field:ident = $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty; )*) => {
        /// The table with every entry set to the runtime's implementation.
        pub fn defaults() -> $table {
            $table { version: ApiTableVersion::default(), $( $field: Some(entry::$name), )* }
        }
    };
}

mod core_defaults {
    use super::*;
    core_api_table!(default_table);
}
mod amd_ext_defaults {
    use super::*;
    amd_ext_table!(default_table);
}
mod finalizer_defaults {
    use super::*;
    finalizer_ext_table!(default_table);
}
mod image_defaults {
    use super::*;
    image_ext_table!(default_table);
}

/// Resets every table to the defaults with the versions of the configured ROCm release.
///
/// # Safety
/// No other thread may be reading or patching the tables (runtime init/shutdown only).
pub unsafe fn reset() {
    let release = settings().release;
    let t = tables();
    let version = |major: u32, size: usize, step: u32| ApiTableVersion {
        major_id: major,
        minor_id: size as u32,
        step_id: step,
        reserved: 0,
    };
    // SAFETY: the caller guarantees exclusive access; every pointer below points into the
    // static block.
    unsafe {
        let mut core = core_defaults::defaults();
        core.version = version(release.core_major, core::mem::size_of::<CoreApiTable>(), 0);
        (*t).core = core;
        let mut amd = amd_ext_defaults::defaults();
        amd.version = version(
            release.amd_ext_major,
            release.amd_ext_size as usize,
            release.amd_ext_step,
        );
        (*t).amd_ext = amd;
        let mut fin = finalizer_defaults::defaults();
        fin.version = version(
            release.ext_major,
            core::mem::size_of::<FinalizerExtTable>(),
            0,
        );
        (*t).finalizer = fin;
        let mut image = image_defaults::defaults();
        let image_size = if release.image_step >= 1 {
            16 + 14 * 8
        } else {
            16 + 13 * 8
        };
        image.version = version(release.ext_major, image_size, release.image_step);
        (*t).image = image;
        (*t).tools = ToolsApiTable {
            version: version(1, core::mem::size_of::<ToolsApiTable>(), 0),
            ..Default::default()
        };
        (*t).pc_sampling = PcSamplingExtTable {
            version: version(1, core::mem::size_of::<PcSamplingExtTable>(), 0),
            entries: [Some(pc_sampling_unsupported); 7],
        };
        let old_layout = release.amd_ext_major < 2 && release.amd_ext_size < 456;
        (*t).old_layout = old_layout;
        (*t).amd_ext_old = [0; 53];
        if old_layout {
            let old = core::ptr::addr_of_mut!((*t).amd_ext_old) as *mut u8;
            core::ptr::write(old as *mut ApiTableVersion, amd.version);
            let new = core::ptr::addr_of!((*t).amd_ext) as *const u8;
            for (_, _, offset) in AmdExtTable::ENTRIES {
                if let Some(mapped) = AmdExtTable::offset_in(&amd.version, *offset) {
                    let entry = core::ptr::read(new.add(*offset) as *const usize);
                    core::ptr::write(old.add(mapped) as *mut usize, entry);
                }
            }
        }
        let root = &mut (*t).root;
        root.version = version(
            release.root_major,
            release.root_size as usize,
            release.root_step,
        );
        root.core_ = core::ptr::addr_of_mut!((*t).core);
        root.amd_ext_ = if old_layout {
            core::ptr::addr_of_mut!((*t).amd_ext_old) as *mut AmdExtTable
        } else {
            core::ptr::addr_of_mut!((*t).amd_ext)
        };
        root.finalizer_ext_ = core::ptr::addr_of_mut!((*t).finalizer);
        root.image_ext_ = core::ptr::addr_of_mut!((*t).image);
        root.tools_ = if release.root_size > 48 {
            core::ptr::addr_of_mut!((*t).tools)
        } else {
            core::ptr::null_mut()
        };
        root.pc_sampling_ext_ = if release.root_size > 56 {
            core::ptr::addr_of_mut!((*t).pc_sampling)
        } else {
            core::ptr::null_mut()
        };
    }
}

/// Fills the tables with the defaults the first time an exported function finds them empty.
pub fn ensure_defaults() {
    static DEFAULTS: std::sync::Once = std::sync::Once::new();
    // SAFETY: runs once, before any tool can have been loaded (tools load in `hsa_init`, which
    // itself comes through a trampoline that gets here first).
    DEFAULTS.call_once(|| unsafe { reset() });
}

/// Every `hsa_ven_amd_pcs_*` function: PC sampling is not simulated.
unsafe extern "C" fn pc_sampling_unsupported(
    _: u64,
    _: u64,
    _: u64,
    _: u64,
    _: u64,
    _: u64,
) -> hsa_status_t {
    HSA_STATUS_ERROR
}

/// Reads the live entry at `offset` (ROCm 7 layout) of the AMD extension table.
///
/// # Safety
/// `F` must be the `Option<fn>` type of the entry at `offset`.
unsafe fn amd_ext_entry<F: Copy>(offset: usize) -> F {
    let t = tables();
    // SAFETY: the offsets come from `AmdExtTable::ENTRIES`-equivalent `offset_of!`; the old-layout
    // buffer holds every entry `offset_in` maps to; reads are pointer-sized and aligned.
    unsafe {
        if (*t).old_layout {
            let version = (*t).amd_ext.version;
            if let Some(mapped) = AmdExtTable::offset_in(&version, offset) {
                let old = core::ptr::addr_of!((*t).amd_ext_old) as *const u8;
                return core::ptr::read_volatile(old.add(mapped) as *const F);
            }
        }
        let new = core::ptr::addr_of!((*t).amd_ext) as *const u8;
        core::ptr::read_volatile(new.add(offset) as *const F)
    }
}

/// Exported trampolines through the core table.
macro_rules! core_trampolines {
    ($(#[$doc:meta])* $table:ident: $( $field:ident = $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty; )*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: calls the live core table.")]
            #[doc = ""]
            #[doc = "# Safety"]
            #[doc = "The caller upholds the HSA API contract of this function."]
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                // SAFETY: a pointer-sized volatile read of an entry of the static table block.
                let read = || unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*tables()).core.$field)) };
                let entry = read().or_else(|| {
                    ensure_defaults();
                    read()
                });
                match entry {
                    // SAFETY: the entry has the exported function's C signature.
                    Some(f) => unsafe { f($($arg),*) },
                    None => <$ret as Fallback>::fallback(),
                }
            }
            core::arch::global_asm!(concat!(".symver ", stringify!($name), ",", stringify!($name), "@@ROCR_1"));
        )*
    };
}

/// Exported trampolines through another table, read with [`amd_ext_entry`]-like accessors.
macro_rules! ext_trampolines {
    ($reader:ident; $(#[$doc:meta])* $table:ident: $( $field:ident = $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty; )*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: calls the live ", stringify!($table), ".")]
            #[doc = ""]
            #[doc = "# Safety"]
            #[doc = "The caller upholds the HSA API contract of this function."]
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                // SAFETY: the reader is given the entry's own offset and type.
                let read = || -> Option<unsafe extern "C" fn($($ty),*) -> $ret> {
                    unsafe { $reader(core::mem::offset_of!($table, $field)) }
                };
                let entry = read().or_else(|| {
                    ensure_defaults();
                    read()
                });
                match entry {
                    // SAFETY: the entry has the exported function's C signature.
                    Some(f) => unsafe { f($($arg),*) },
                    None => <$ret as Fallback>::fallback(),
                }
            }
            core::arch::global_asm!(concat!(".symver ", stringify!($name), ",", stringify!($name), "@@ROCR_1"));
        )*
    };
}

macro_rules! amd_ext_trampolines {
    ($($t:tt)*) => { ext_trampolines!(amd_ext_entry; $($t)*); };
}

/// Reads an entry of the finalizer table.
///
/// # Safety
/// `F` must be the type of the entry at `offset`.
unsafe fn finalizer_entry<F: Copy>(offset: usize) -> F {
    // SAFETY: offset of a field of the static finalizer table.
    unsafe {
        core::ptr::read_volatile(
            (core::ptr::addr_of!((*tables()).finalizer) as *const u8).add(offset) as *const F,
        )
    }
}

/// Reads an entry of the image table.
///
/// # Safety
/// `F` must be the type of the entry at `offset`.
unsafe fn image_entry<F: Copy>(offset: usize) -> F {
    // SAFETY: offset of a field of the static image table.
    unsafe {
        core::ptr::read_volatile(
            (core::ptr::addr_of!((*tables()).image) as *const u8).add(offset) as *const F,
        )
    }
}

macro_rules! finalizer_trampolines {
    ($($t:tt)*) => { ext_trampolines!(finalizer_entry; $($t)*); };
}
macro_rules! image_trampolines {
    ($($t:tt)*) => { ext_trampolines!(image_entry; $($t)*); };
}

/// The exported functions (one per table entry, plus the HSA 1.0 memory-order aliases).
pub mod exports {
    use super::*;
    core_api_table!(core_trampolines);
    amd_ext_table!(amd_ext_trampolines);
    finalizer_ext_table!(finalizer_trampolines);
    image_ext_table!(image_trampolines);

    /// Exported aliases of HSA 1.0 memory-order names for the HSA 1.1 entries.
    macro_rules! aliases {
        ($( $alias:ident = $target:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty; )*) => {$(
            #[doc = concat!("`", stringify!($alias), "`: same as `", stringify!($target), "`.")]
            #[doc = ""]
            #[doc = "# Safety"]
            #[doc = "As for the target function."]
            #[no_mangle]
            pub unsafe extern "C" fn $alias($($arg: $ty),*) -> $ret {
                // SAFETY: same signature as the target trampoline.
                unsafe { $target($($arg),*) }
            }
            core::arch::global_asm!(concat!(".symver ", stringify!($alias), ",", stringify!($alias), "@@ROCR_1"));
        )*};
    }

    aliases! {
        hsa_signal_load_acquire = hsa_signal_load_scacquire(s: hsa_signal_t) -> hsa_signal_value_t;
        hsa_signal_store_release = hsa_signal_store_screlease(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_wait_acquire = hsa_signal_wait_scacquire(s: hsa_signal_t, c: hsa_signal_condition_t, v: hsa_signal_value_t, t: u64, w: hsa_wait_state_t) -> hsa_signal_value_t;
        hsa_signal_exchange_acq_rel = hsa_signal_exchange_scacq_screl(s: hsa_signal_t, v: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_exchange_acquire = hsa_signal_exchange_scacquire(s: hsa_signal_t, v: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_exchange_release = hsa_signal_exchange_screlease(s: hsa_signal_t, v: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_cas_acq_rel = hsa_signal_cas_scacq_screl(s: hsa_signal_t, e: hsa_signal_value_t, v: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_cas_acquire = hsa_signal_cas_scacquire(s: hsa_signal_t, e: hsa_signal_value_t, v: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_cas_release = hsa_signal_cas_screlease(s: hsa_signal_t, e: hsa_signal_value_t, v: hsa_signal_value_t) -> hsa_signal_value_t;
        hsa_signal_add_acq_rel = hsa_signal_add_scacq_screl(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_add_acquire = hsa_signal_add_scacquire(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_add_release = hsa_signal_add_screlease(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_subtract_acq_rel = hsa_signal_subtract_scacq_screl(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_subtract_acquire = hsa_signal_subtract_scacquire(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_subtract_release = hsa_signal_subtract_screlease(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_and_acq_rel = hsa_signal_and_scacq_screl(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_and_acquire = hsa_signal_and_scacquire(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_and_release = hsa_signal_and_screlease(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_or_acq_rel = hsa_signal_or_scacq_screl(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_or_acquire = hsa_signal_or_scacquire(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_or_release = hsa_signal_or_screlease(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_xor_acq_rel = hsa_signal_xor_scacq_screl(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_xor_acquire = hsa_signal_xor_scacquire(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_signal_xor_release = hsa_signal_xor_screlease(s: hsa_signal_t, v: hsa_signal_value_t) -> ();
        hsa_queue_load_read_index_acquire = hsa_queue_load_read_index_scacquire(q: *const hsa_queue_t) -> u64;
        hsa_queue_load_write_index_acquire = hsa_queue_load_write_index_scacquire(q: *const hsa_queue_t) -> u64;
        hsa_queue_store_write_index_release = hsa_queue_store_write_index_screlease(q: *const hsa_queue_t, v: u64) -> ();
        hsa_queue_store_read_index_release = hsa_queue_store_read_index_screlease(q: *const hsa_queue_t, v: u64) -> ();
        hsa_queue_cas_write_index_acq_rel = hsa_queue_cas_write_index_scacq_screl(q: *const hsa_queue_t, e: u64, v: u64) -> u64;
        hsa_queue_cas_write_index_acquire = hsa_queue_cas_write_index_scacquire(q: *const hsa_queue_t, e: u64, v: u64) -> u64;
        hsa_queue_cas_write_index_release = hsa_queue_cas_write_index_screlease(q: *const hsa_queue_t, e: u64, v: u64) -> u64;
        hsa_queue_add_write_index_acq_rel = hsa_queue_add_write_index_scacq_screl(q: *const hsa_queue_t, v: u64) -> u64;
        hsa_queue_add_write_index_acquire = hsa_queue_add_write_index_scacquire(q: *const hsa_queue_t, v: u64) -> u64;
        hsa_queue_add_write_index_release = hsa_queue_add_write_index_screlease(q: *const hsa_queue_t, v: u64) -> u64;
    }

    /// Exported PC-sampling functions (ROCm ≥ 6.2), trampolines through `PcSamplingExtTable`.
    macro_rules! pc_sampling_exports {
        ($($name:ident = $index:expr;)*) => {$(
            #[doc = concat!("`", stringify!($name), "`: calls the live PC sampling table.")]
            #[doc = ""]
            #[doc = "# Safety"]
            #[doc = "The caller upholds the HSA API contract of this function."]
            #[no_mangle]
            pub unsafe extern "C" fn $name(a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> hsa_status_t {
                ensure_defaults();
                // SAFETY: a pointer-sized volatile read of an entry of the static table block.
                let entry = unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*tables()).pc_sampling.entries[$index])) };
                match entry {
                    // SAFETY: the entries take up to six integer arguments, forwarded unchanged.
                    Some(f) => unsafe { f(a0, a1, a2, a3, a4, a5) },
                    None => HSA_STATUS_ERROR,
                }
            }
            core::arch::global_asm!(concat!(".symver ", stringify!($name), ",", stringify!($name), "@@ROCR_1"));
        )*};
    }

    pc_sampling_exports! {
        hsa_ven_amd_pcs_iterate_configuration = 0;
        hsa_ven_amd_pcs_create = 1;
        hsa_ven_amd_pcs_create_from_id = 2;
        hsa_ven_amd_pcs_destroy = 3;
        hsa_ven_amd_pcs_start = 4;
        hsa_ven_amd_pcs_stop = 5;
        hsa_ven_amd_pcs_flush = 6;
    }

    /// `hsa_amd_image_get_info_max_dim`: images are not supported.
    ///
    /// # Safety
    /// None needed; the arguments are ignored.
    #[no_mangle]
    pub unsafe extern "C" fn hsa_amd_image_get_info_max_dim(
        _agent: hsa_agent_t,
        _attribute: hsa_agent_info_t,
        _value: *mut c_void,
    ) -> hsa_status_t {
        HSA_STATUS_ERROR
    }
    core::arch::global_asm!(
        ".symver hsa_amd_image_get_info_max_dim,hsa_amd_image_get_info_max_dim@@ROCR_1"
    );
}
