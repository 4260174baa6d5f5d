//! Code-object readers, executables, executable symbols, the deprecated `hsa_code_object_*`
//! functions and the AMD loader extension (`hsa_ven_amd_loader_1_03_pfn_t`), with ROCr's
//! semantics.
//!
//! Each HSA function here has the C signature and the name of the API function; the runtime puts
//! them into its API tables and the loader-extension table. The loader keeps one process-wide
//! state behind a mutex; callbacks of the iteration functions run without it held, so they may
//! call back into any function here.
//!
//! Handles are small integers, never zero, unique across every kind of object.

#![allow(non_camel_case_types)]

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CStr};
use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::os::unix::fs::FileExt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::code_object::{isa_compatible, CodeObject, KernelMeta, LoadedImage, SymbolClass};
use crate::hsa::*;

/// What the loader asks the runtime about its agents and ISAs; installed by [`open`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct RuntimeHooks {
    /// The ISA name of a GPU agent (e.g. `amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`); `None`
    /// if the handle is not a GPU agent.
    pub agent_isa_name: fn(hsa_agent_t) -> Option<String>,
    /// The ISA of that name, as `hsa_isa_from_name` finds it; `None` if unknown.
    pub isa_from_name: fn(&str) -> Option<hsa_isa_t>,
}

/// Makes the loader usable: called by `hsa_init` once agents exist. Until then, and after
/// [`close`], every function here returns `HSA_STATUS_ERROR_NOT_INITIALIZED`, as ROCr does.
pub(crate) fn open(hooks: RuntimeHooks) {
    state().hooks = Some(hooks);
}

/// Destroys every executable, reader and code object (`hsa_shut_down` of the last reference).
pub(crate) fn close() {
    // Dropped outside the lock: dropping images takes the kernel registry's lock.
    let old = std::mem::take(&mut *state());
    drop(old);
}

/// `hsa_file_t`.
type hsa_file_t = i32;
/// `hsa_executable_state_t`.
type hsa_executable_state_t = u32;
const HSA_EXECUTABLE_STATE_UNFROZEN: hsa_executable_state_t = 0;
const HSA_EXECUTABLE_STATE_FROZEN: hsa_executable_state_t = 1;
/// `hsa_executable_info_t`.
type hsa_executable_info_t = u32;
const HSA_EXECUTABLE_INFO_PROFILE: hsa_executable_info_t = 1;
const HSA_EXECUTABLE_INFO_STATE: hsa_executable_info_t = 2;
const HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE: hsa_executable_info_t = 3;
const HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT: hsa_default_float_rounding_mode_t = 0;
const HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME_LENGTH: hsa_executable_symbol_info_t = 3;
const HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME: hsa_executable_symbol_info_t = 4;
const HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE: hsa_executable_symbol_info_t = 5;
const HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION: hsa_executable_symbol_info_t = 6;
const HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT: hsa_executable_symbol_info_t = 7;
const HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALIGNMENT: hsa_executable_symbol_info_t = 8;
const HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE: hsa_executable_symbol_info_t = 9;
const HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_IS_CONST: hsa_executable_symbol_info_t = 10;
const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK: hsa_executable_symbol_info_t = 15;
const HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION: hsa_executable_symbol_info_t = 17;
const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_CALL_CONVENTION: hsa_executable_symbol_info_t = 18;
/// `hsa_symbol_linkage_t`.
const HSA_SYMBOL_LINKAGE_PROGRAM: u32 = 1;
/// `hsa_variable_allocation_t`.
const HSA_VARIABLE_ALLOCATION_AGENT: u32 = 0;
const HSA_VARIABLE_ALLOCATION_PROGRAM: u32 = 1;
/// `hsa_variable_segment_t`.
const HSA_VARIABLE_SEGMENT_GLOBAL: u32 = 0;
const HSA_VARIABLE_SEGMENT_READONLY: u32 = 1;
/// `hsa_code_object_info_t`.
type hsa_code_object_info_t = u32;
const HSA_CODE_OBJECT_INFO_VERSION: hsa_code_object_info_t = 0;
const HSA_CODE_OBJECT_INFO_TYPE: hsa_code_object_info_t = 1;
const HSA_CODE_OBJECT_INFO_ISA: hsa_code_object_info_t = 2;
const HSA_CODE_OBJECT_INFO_MACHINE_MODEL: hsa_code_object_info_t = 3;
const HSA_CODE_OBJECT_INFO_PROFILE: hsa_code_object_info_t = 4;
const HSA_CODE_OBJECT_INFO_DEFAULT_FLOAT_ROUNDING_MODE: hsa_code_object_info_t = 5;
const HSA_CODE_OBJECT_TYPE_PROGRAM: u32 = 0;
/// `hsa_code_symbol_info_t` (same values as the executable-symbol attributes it shares).
type hsa_code_symbol_info_t = u32;
/// `hsa_ven_amd_loader_loaded_code_object_info_t`.
type hsa_ven_amd_loader_loaded_code_object_info_t = u32;
/// `hsa_ven_amd_loader_loaded_code_object_kind_t`.
const LOADED_CODE_OBJECT_KIND_PROGRAM: u32 = 1;
const LOADED_CODE_OBJECT_KIND_AGENT: u32 = 2;
/// `hsa_ven_amd_loader_code_object_storage_type_t`: memory.
const CODE_OBJECT_STORAGE_TYPE_MEMORY: u32 = 2;

type SymbolCallback = Option<
    unsafe extern "C" fn(hsa_executable_t, hsa_executable_symbol_t, *mut c_void) -> hsa_status_t,
>;
type AgentSymbolCallback = Option<
    unsafe extern "C" fn(
        hsa_executable_t,
        hsa_agent_t,
        hsa_executable_symbol_t,
        *mut c_void,
    ) -> hsa_status_t,
>;
type LoadedCodeObjectCallback = Option<
    unsafe extern "C" fn(hsa_executable_t, hsa_loaded_code_object_t, *mut c_void) -> hsa_status_t,
>;
type ExecutableCallback =
    Option<unsafe extern "C" fn(hsa_executable_t, *mut c_void) -> hsa_status_t>;
type CodeSymbolCallback =
    Option<unsafe extern "C" fn(hsa_code_object_t, hsa_code_symbol_t, *mut c_void) -> hsa_status_t>;
type AllocCallback =
    Option<unsafe extern "C" fn(usize, hsa_callback_data_t, *mut *mut c_void) -> hsa_status_t>;

/// A code object read by a reader or deserialized, with the URI ROCr would give it.
#[derive(Debug)]
struct Source {
    code_object: Arc<CodeObject>,
    uri: String,
}

#[derive(Debug)]
struct Executable {
    profile: hsa_profile_t,
    rounding: hsa_default_float_rounding_mode_t,
    frozen: bool,
    /// Loaded code objects, in load order.
    loaded: Vec<u64>,
    /// Symbols, in definition order.
    symbols: Vec<u64>,
}

#[derive(Debug)]
struct LoadedCodeObject {
    executable: u64,
    /// Zero for a program code object.
    agent: hsa_agent_t,
    image: LoadedImage,
    uri: String,
}

/// What a symbol is, with the attributes of its kind.
#[derive(Debug, Clone)]
enum SymbolKind {
    Kernel(KernelMeta),
    Variable {
        allocation: u32,
        segment: u32,
        size: u32,
        alignment: u32,
    },
}

/// A symbol of an executable (loaded or defined) or of a deprecated code object.
#[derive(Debug, Clone)]
struct Symbol {
    /// The executable; for a code symbol, the deprecated code object.
    executable: u64,
    /// Zero for program symbols.
    agent: hsa_agent_t,
    /// The ELF symbol name (`vadd.kd` for a kernel).
    name: String,
    kind: SymbolKind,
    /// Kernel object or variable address; `None` for symbols of a code object not loaded.
    address: Option<u64>,
}

#[derive(Debug, Default)]
struct State {
    hooks: Option<RuntimeHooks>,
    readers: BTreeMap<u64, Source>,
    code_objects: BTreeMap<u64, Source>,
    executables: BTreeMap<u64, Executable>,
    loaded: BTreeMap<u64, LoadedCodeObject>,
    symbols: BTreeMap<u64, Symbol>,
    code_symbols: BTreeMap<u64, Symbol>,
}

static STATE: Mutex<State> = Mutex::new(State {
    hooks: None,
    readers: BTreeMap::new(),
    code_objects: BTreeMap::new(),
    executables: BTreeMap::new(),
    loaded: BTreeMap::new(),
    symbols: BTreeMap::new(),
    code_symbols: BTreeMap::new(),
});

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn next_handle() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Runs the body of a C entry point: no panic crosses the FFI boundary, and nothing runs before
/// `hsa_init`.
fn entry(body: impl FnOnce() -> hsa_status_t) -> hsa_status_t {
    std::panic::catch_unwind(AssertUnwindSafe(|| {
        if state().hooks.is_none() {
            return HSA_STATUS_ERROR_NOT_INITIALIZED;
        }
        body()
    }))
    .unwrap_or(HSA_STATUS_ERROR)
}

/// Like `?` for statuses.
macro_rules! check {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(status) => return status,
        }
    };
}

/// Writes `v` to the caller's `value` pointer.
///
/// # Safety
/// `value` must be valid for writing a `T` (the attribute's C type), as the API requires.
unsafe fn put<T>(value: *mut c_void, v: T) {
    // SAFETY: guaranteed by the caller; unaligned writes tolerate any C buffer.
    unsafe { value.cast::<T>().write_unaligned(v) }
}

/// Writes exactly `bytes` (no NUL) to the caller's buffer.
///
/// # Safety
/// `value` must be valid for writing `bytes.len()` bytes.
unsafe fn put_bytes(value: *mut c_void, bytes: &[u8]) {
    // SAFETY: guaranteed by the caller; the source is a distinct Rust buffer.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), value.cast::<u8>(), bytes.len()) }
}

/// A C string argument; `None` for null or non-UTF-8.
///
/// # Safety
/// A non-null `s` must point to a NUL-terminated string.
unsafe fn c_str<'a>(s: *const c_char) -> Option<&'a str> {
    if s.is_null() {
        return None;
    }
    // SAFETY: guaranteed by the caller.
    unsafe { CStr::from_ptr(s) }.to_str().ok()
}

fn parse(bytes: Vec<u8>, uri: String) -> Result<Source, hsa_status_t> {
    let code_object = CodeObject::parse(bytes).map_err(|_| HSA_STATUS_ERROR_INVALID_CODE_OBJECT)?;
    Ok(Source {
        code_object: Arc::new(code_object),
        uri,
    })
}

/// Reads `size` bytes at `offset` of `file` (the whole file when `size` is 0), without closing
/// the caller's descriptor.
fn read_file(file: hsa_file_t, offset: u64, size: u64) -> Result<(Vec<u8>, String), hsa_status_t> {
    if file < 0 {
        return Err(HSA_STATUS_ERROR_INVALID_FILE);
    }
    // SAFETY: the descriptor stays the caller's: ManuallyDrop never closes it.
    let handle = ManuallyDrop::new(unsafe { File::from_raw_fd(file) });
    let len = handle
        .metadata()
        .map_err(|_| HSA_STATUS_ERROR_INVALID_FILE)?
        .len();
    let size = if size == 0 {
        len.saturating_sub(offset)
    } else {
        size
    };
    let mut bytes = vec![0u8; usize::try_from(size).map_err(|_| HSA_STATUS_ERROR_INVALID_FILE)?];
    handle
        .read_exact_at(&mut bytes, offset)
        .map_err(|_| HSA_STATUS_ERROR_INVALID_FILE)?;
    let path = std::fs::read_link(format!("/proc/self/fd/{file}"))
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    Ok((bytes, format!("file://{path}#offset={offset}&size={size}")))
}

/// Stores a new reader and returns its handle.
fn add_reader(source: Source, out: *mut hsa_code_object_reader_t) -> hsa_status_t {
    let handle = next_handle();
    state().readers.insert(handle, source);
    // SAFETY: `out` was checked non-null by the caller and points to a reader handle.
    unsafe { put(out.cast(), hsa_code_object_reader_t { handle }) };
    HSA_STATUS_SUCCESS
}

/// `hsa_code_object_reader_create_from_file`: reads the whole file behind `file`.
pub(crate) unsafe extern "C" fn hsa_code_object_reader_create_from_file(
    file: hsa_file_t,
    code_object_reader: *mut hsa_code_object_reader_t,
) -> hsa_status_t {
    entry(|| {
        if code_object_reader.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let (bytes, uri) = check!(read_file(file, 0, 0));
        add_reader(check!(parse(bytes, uri)), code_object_reader)
    })
}

/// `hsa_code_object_reader_create_from_memory`.
pub(crate) unsafe extern "C" fn hsa_code_object_reader_create_from_memory(
    code_object: *const c_void,
    size: usize,
    code_object_reader: *mut hsa_code_object_reader_t,
) -> hsa_status_t {
    entry(|| {
        if code_object.is_null() || size == 0 || code_object_reader.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: the caller promises `size` readable bytes at `code_object`.
        let bytes = unsafe { std::slice::from_raw_parts(code_object.cast::<u8>(), size) };
        let uri = format!(
            "memory://{}#offset=0x{:x}&size={size}",
            std::process::id(),
            code_object as u64
        );
        add_reader(check!(parse(bytes.to_vec(), uri)), code_object_reader)
    })
}

/// `hsa_code_object_reader_destroy`.
pub(crate) unsafe extern "C" fn hsa_code_object_reader_destroy(
    code_object_reader: hsa_code_object_reader_t,
) -> hsa_status_t {
    entry(
        || match state().readers.remove(&code_object_reader.handle) {
            Some(_) => HSA_STATUS_SUCCESS,
            None => HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER,
        },
    )
}

fn create_executable(
    profile: hsa_profile_t,
    rounding: hsa_default_float_rounding_mode_t,
    executable: *mut hsa_executable_t,
) -> hsa_status_t {
    if executable.is_null()
        || profile > HSA_PROFILE_FULL
        || rounding > HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR
    {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let handle = next_handle();
    state().executables.insert(
        handle,
        Executable {
            profile,
            rounding,
            frozen: false,
            loaded: Vec::new(),
            symbols: Vec::new(),
        },
    );
    // SAFETY: checked non-null; points to an executable handle.
    unsafe { put(executable.cast(), hsa_executable_t { handle }) };
    HSA_STATUS_SUCCESS
}

/// `hsa_executable_create` (deprecated): the state argument is ignored, as in ROCr.
pub(crate) unsafe extern "C" fn hsa_executable_create(
    profile: hsa_profile_t,
    _executable_state: hsa_executable_state_t,
    _options: *const c_char,
    executable: *mut hsa_executable_t,
) -> hsa_status_t {
    entry(|| create_executable(profile, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, executable))
}

/// `hsa_executable_create_alt`.
pub(crate) unsafe extern "C" fn hsa_executable_create_alt(
    profile: hsa_profile_t,
    default_float_rounding_mode: hsa_default_float_rounding_mode_t,
    _options: *const c_char,
    executable: *mut hsa_executable_t,
) -> hsa_status_t {
    entry(|| create_executable(profile, default_float_rounding_mode, executable))
}

/// `hsa_executable_destroy`: unloads its code objects (their kernel objects become invalid).
pub(crate) unsafe extern "C" fn hsa_executable_destroy(
    executable: hsa_executable_t,
) -> hsa_status_t {
    entry(|| {
        let mut st = state();
        let Some(exec) = st.executables.remove(&executable.handle) else {
            return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
        };
        for symbol in &exec.symbols {
            st.symbols.remove(symbol);
        }
        let images: Vec<LoadedCodeObject> = exec
            .loaded
            .iter()
            .filter_map(|lco| st.loaded.remove(lco))
            .collect();
        drop(st);
        drop(images);
        HSA_STATUS_SUCCESS
    })
}

/// Loads `source` into `executable` for `agent` (zero for a program code object).
fn load(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    source: &Source,
    loaded_code_object: *mut hsa_loaded_code_object_t,
) -> hsa_status_t {
    let mut guard = state();
    let st = &mut *guard;
    let Some(exec) = st.executables.get_mut(&executable.handle) else {
        return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
    };
    if exec.frozen {
        return HSA_STATUS_ERROR_FROZEN_EXECUTABLE;
    }
    let code_object = &source.code_object;
    if agent.handle != 0 {
        let hooks = st.hooks.expect("entry checked the loader is open");
        let Some(isa) = (hooks.agent_isa_name)(agent) else {
            return HSA_STATUS_ERROR_INVALID_AGENT;
        };
        if !isa_compatible(&code_object.target_id, &isa) {
            return HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS;
        }
    }
    let taken = |name: &str| {
        exec.symbols.iter().any(|h| {
            st.symbols
                .get(h)
                .is_some_and(|s| s.name == name && s.agent == agent)
        })
    };
    if code_object
        .symbols
        .iter()
        .any(|s| s.class != SymbolClass::Code && taken(&s.name))
    {
        return HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED;
    }
    let image = match LoadedImage::load(Arc::clone(code_object)) {
        Ok(image) => image,
        Err(_) => return HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
    };
    for symbol in symbols_of(code_object) {
        let handle = next_handle();
        let address = code_object
            .symbol(&symbol.name)
            .map(|s| image.address_of(s.address));
        exec.symbols.push(handle);
        st.symbols.insert(
            handle,
            Symbol {
                executable: executable.handle,
                agent,
                address,
                ..symbol
            },
        );
    }
    let handle = next_handle();
    exec.loaded.push(handle);
    st.loaded.insert(
        handle,
        LoadedCodeObject {
            executable: executable.handle,
            agent,
            image,
            uri: source.uri.clone(),
        },
    );
    if !loaded_code_object.is_null() {
        // SAFETY: non-null; points to a loaded-code-object handle.
        unsafe {
            put(
                loaded_code_object.cast(),
                hsa_loaded_code_object_t { handle },
            )
        };
    }
    HSA_STATUS_SUCCESS
}

/// The symbols a code object defines, as ROCr exposes them: kernel descriptors as kernels
/// (named `<kernel>.kd`) and global variables; machine-code symbols are not exposed.
fn symbols_of(code_object: &CodeObject) -> Vec<Symbol> {
    let mut symbols = Vec::new();
    for symbol in &code_object.symbols {
        let kind = match symbol.class {
            SymbolClass::KernelDescriptor => {
                match code_object.kernels.iter().find(|k| k.symbol == symbol.name) {
                    Some(meta) => SymbolKind::Kernel(meta.clone()),
                    None => continue,
                }
            }
            // v3+ sections carry no SHF_AMDGPU_HSA_AGENT flag, so ROCr calls these program
            // allocations.
            SymbolClass::Variable => SymbolKind::Variable {
                allocation: HSA_VARIABLE_ALLOCATION_PROGRAM,
                segment: HSA_VARIABLE_SEGMENT_GLOBAL,
                size: u32::try_from(symbol.size).unwrap_or(u32::MAX),
                alignment: 0,
            },
            SymbolClass::Code => continue,
        };
        symbols.push(Symbol {
            executable: 0,
            agent: hsa_agent_t::default(),
            name: symbol.name.clone(),
            kind,
            address: None,
        });
    }
    symbols
}

/// The source behind a reader handle (cloned, so the state lock is not held while loading).
fn reader_source(reader: hsa_code_object_reader_t) -> Result<Source, hsa_status_t> {
    let st = state();
    let source = st
        .readers
        .get(&reader.handle)
        .ok_or(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER)?;
    Ok(Source {
        code_object: Arc::clone(&source.code_object),
        uri: source.uri.clone(),
    })
}

/// `hsa_executable_load_agent_code_object`: the code object's target must suit the agent's ISA
/// (`HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS` otherwise, as ROCr).
pub(crate) unsafe extern "C" fn hsa_executable_load_agent_code_object(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    code_object_reader: hsa_code_object_reader_t,
    _options: *const c_char,
    loaded_code_object: *mut hsa_loaded_code_object_t,
) -> hsa_status_t {
    entry(|| {
        if agent.handle == 0 {
            return HSA_STATUS_ERROR_INVALID_AGENT;
        }
        let source = check!(reader_source(code_object_reader));
        load(executable, agent, &source, loaded_code_object)
    })
}

/// `hsa_executable_load_program_code_object`: symbols become program symbols (no agent).
pub(crate) unsafe extern "C" fn hsa_executable_load_program_code_object(
    executable: hsa_executable_t,
    code_object_reader: hsa_code_object_reader_t,
    _options: *const c_char,
    loaded_code_object: *mut hsa_loaded_code_object_t,
) -> hsa_status_t {
    entry(|| {
        let source = check!(reader_source(code_object_reader));
        load(
            executable,
            hsa_agent_t::default(),
            &source,
            loaded_code_object,
        )
    })
}

/// `hsa_executable_freeze`.
pub(crate) unsafe extern "C" fn hsa_executable_freeze(
    executable: hsa_executable_t,
    _options: *const c_char,
) -> hsa_status_t {
    entry(|| match state().executables.get_mut(&executable.handle) {
        None => HSA_STATUS_ERROR_INVALID_EXECUTABLE,
        Some(exec) if exec.frozen => HSA_STATUS_ERROR_FROZEN_EXECUTABLE,
        Some(exec) => {
            exec.frozen = true;
            HSA_STATUS_SUCCESS
        }
    })
}

/// `hsa_executable_get_info`.
pub(crate) unsafe extern "C" fn hsa_executable_get_info(
    executable: hsa_executable_t,
    attribute: hsa_executable_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        let st = state();
        let Some(exec) = st.executables.get(&executable.handle) else {
            return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
        };
        if value.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let v = match attribute {
            HSA_EXECUTABLE_INFO_PROFILE => exec.profile,
            HSA_EXECUTABLE_INFO_STATE if exec.frozen => HSA_EXECUTABLE_STATE_FROZEN,
            HSA_EXECUTABLE_INFO_STATE => HSA_EXECUTABLE_STATE_UNFROZEN,
            HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE => exec.rounding,
            _ => return HSA_STATUS_ERROR_INVALID_ARGUMENT,
        };
        // SAFETY: non-null; every attribute here is a 32-bit enum.
        unsafe { put(value, v) };
        HSA_STATUS_SUCCESS
    })
}

/// `(hsa_variable_allocation_t, hsa_variable_segment_t)` of each kind of defined variable.
const PROGRAM_GLOBAL: (u32, u32) = (HSA_VARIABLE_ALLOCATION_PROGRAM, HSA_VARIABLE_SEGMENT_GLOBAL);
const AGENT_GLOBAL: (u32, u32) = (HSA_VARIABLE_ALLOCATION_AGENT, HSA_VARIABLE_SEGMENT_GLOBAL);
const AGENT_READONLY: (u32, u32) = (HSA_VARIABLE_ALLOCATION_AGENT, HSA_VARIABLE_SEGMENT_READONLY);

/// Defines an external variable (the three `*_variable_define` functions).
fn define_variable(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    name: *const c_char,
    address: *mut c_void,
    (allocation, segment): (u32, u32),
) -> hsa_status_t {
    // SAFETY: a non-null name is a C string, as the API requires.
    let Some(name) = (unsafe { c_str(name) }) else {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    };
    let mut guard = state();
    let st = &mut *guard;
    if agent.handle != 0 && st.hooks.and_then(|h| (h.agent_isa_name)(agent)).is_none() {
        return HSA_STATUS_ERROR_INVALID_AGENT;
    }
    let Some(exec) = st.executables.get_mut(&executable.handle) else {
        return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
    };
    if exec.frozen {
        return HSA_STATUS_ERROR_FROZEN_EXECUTABLE;
    }
    let exists = exec.symbols.iter().any(|h| {
        st.symbols
            .get(h)
            .is_some_and(|s| s.name == name && s.agent == agent)
    });
    if exists {
        return HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED;
    }
    let handle = next_handle();
    exec.symbols.push(handle);
    st.symbols.insert(
        handle,
        Symbol {
            executable: executable.handle,
            agent,
            name: name.to_string(),
            kind: SymbolKind::Variable {
                allocation,
                segment,
                size: 0,
                alignment: 0,
            },
            address: Some(address as u64),
        },
    );
    HSA_STATUS_SUCCESS
}

/// `hsa_executable_global_variable_define`: a program variable.
pub(crate) unsafe extern "C" fn hsa_executable_global_variable_define(
    executable: hsa_executable_t,
    variable_name: *const c_char,
    address: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        define_variable(
            executable,
            hsa_agent_t::default(),
            variable_name,
            address,
            PROGRAM_GLOBAL,
        )
    })
}

/// `hsa_executable_agent_global_variable_define`.
pub(crate) unsafe extern "C" fn hsa_executable_agent_global_variable_define(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    variable_name: *const c_char,
    address: *mut c_void,
) -> hsa_status_t {
    entry(|| define_variable(executable, agent, variable_name, address, AGENT_GLOBAL))
}

/// `hsa_executable_readonly_variable_define`.
pub(crate) unsafe extern "C" fn hsa_executable_readonly_variable_define(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    variable_name: *const c_char,
    address: *mut c_void,
) -> hsa_status_t {
    entry(|| define_variable(executable, agent, variable_name, address, AGENT_READONLY))
}

/// `hsa_executable_validate`: every loaded executable is valid (result 0).
pub(crate) unsafe extern "C" fn hsa_executable_validate(
    executable: hsa_executable_t,
    result: *mut u32,
) -> hsa_status_t {
    entry(|| {
        if !state().executables.contains_key(&executable.handle) {
            return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
        }
        if result.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: non-null pointer to a u32.
        unsafe { put(result.cast(), 0u32) };
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_executable_validate_alt`.
pub(crate) unsafe extern "C" fn hsa_executable_validate_alt(
    executable: hsa_executable_t,
    _options: *const c_char,
    result: *mut u32,
) -> hsa_status_t {
    // SAFETY: same contract.
    unsafe { hsa_executable_validate(executable, result) }
}

/// Finds a symbol by ELF name: an agent symbol when `agent` is given, a program symbol otherwise.
fn find_symbol(
    executable: hsa_executable_t,
    name: *const c_char,
    agent: Option<hsa_agent_t>,
    symbol: *mut hsa_executable_symbol_t,
) -> hsa_status_t {
    // SAFETY: a non-null name is a C string, as the API requires.
    let Some(name) = (unsafe { c_str(name) }) else {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    };
    if symbol.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let st = state();
    let Some(exec) = st.executables.get(&executable.handle) else {
        return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
    };
    let agent = agent.unwrap_or_default();
    let found = exec.symbols.iter().copied().find(|h| {
        st.symbols
            .get(h)
            .is_some_and(|s| s.name == name && s.agent == agent)
    });
    match found {
        Some(handle) => {
            // SAFETY: non-null; points to a symbol handle.
            unsafe { put(symbol.cast(), hsa_executable_symbol_t { handle }) };
            HSA_STATUS_SUCCESS
        }
        None => HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
    }
}

/// `hsa_executable_get_symbol` (deprecated): the module name and call convention are ignored.
pub(crate) unsafe extern "C" fn hsa_executable_get_symbol(
    executable: hsa_executable_t,
    _module_name: *const c_char,
    symbol_name: *const c_char,
    agent: hsa_agent_t,
    _call_convention: i32,
    symbol: *mut hsa_executable_symbol_t,
) -> hsa_status_t {
    entry(|| {
        let agent = (agent.handle != 0).then_some(agent);
        find_symbol(executable, symbol_name, agent, symbol)
    })
}

/// `hsa_executable_get_symbol_by_name`: `symbol_name` is the ELF name (`vadd.kd`).
pub(crate) unsafe extern "C" fn hsa_executable_get_symbol_by_name(
    executable: hsa_executable_t,
    symbol_name: *const c_char,
    agent: *const hsa_agent_t,
    symbol: *mut hsa_executable_symbol_t,
) -> hsa_status_t {
    entry(|| {
        // SAFETY: a non-null agent pointer points to an agent handle.
        let agent = (!agent.is_null()).then(|| unsafe { agent.read_unaligned() });
        find_symbol(executable, symbol_name, agent, symbol)
    })
}

/// Writes one attribute of a symbol; shared by executable and code symbols.
///
/// # Safety
/// `value` must be valid for the attribute's C type (or `NAME_LENGTH` bytes for names).
unsafe fn symbol_info(symbol: &Symbol, attribute: u32, value: *mut c_void) -> hsa_status_t {
    let kernel = match &symbol.kind {
        SymbolKind::Kernel(meta) => Some(meta),
        SymbolKind::Variable { .. } => None,
    };
    let variable = match symbol.kind {
        SymbolKind::Variable {
            allocation,
            segment,
            size,
            alignment,
        } => Some((allocation, segment, size, alignment)),
        SymbolKind::Kernel(_) => None,
    };
    // SAFETY (every `put` below): guaranteed by the caller for the attribute being written.
    unsafe {
        match (attribute, kernel, variable) {
            (HSA_EXECUTABLE_SYMBOL_INFO_TYPE, Some(_), _) => put(value, HSA_SYMBOL_KIND_KERNEL),
            (HSA_EXECUTABLE_SYMBOL_INFO_TYPE, None, _) => put(value, HSA_SYMBOL_KIND_VARIABLE),
            (HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, ..) => put(value, symbol.name.len() as u32),
            (HSA_EXECUTABLE_SYMBOL_INFO_NAME, ..) => put_bytes(value, symbol.name.as_bytes()),
            (HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME_LENGTH, ..) => put(value, 0u32),
            (HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME, ..) => {}
            (HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE, ..) => put(value, HSA_SYMBOL_LINKAGE_PROGRAM),
            (HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION, ..) => put(value, true),
            (HSA_EXECUTABLE_SYMBOL_INFO_AGENT, ..) if symbol.address.is_some() => {
                put(value, symbol.agent)
            }
            (HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, Some(_), _)
            | (HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS, None, _) => match symbol.address {
                Some(address) => put(value, address),
                None => return HSA_STATUS_ERROR_INVALID_ARGUMENT,
            },
            (HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, Some(k), _) => {
                put(value, k.kernarg_segment_size)
            }
            (HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT, Some(k), _) => {
                put(value, k.kernarg_segment_align)
            }
            (HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, Some(k), _) => {
                put(value, k.group_segment_fixed_size)
            }
            (HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, Some(k), _) => {
                put(value, k.private_segment_fixed_size)
            }
            (HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK, Some(k), _) => {
                put(value, k.uses_dynamic_stack)
            }
            (HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_CALL_CONVENTION, Some(_), _) => put(value, 0u32),
            (HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION, _, Some(v)) => put(value, v.0),
            (HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT, _, Some(v)) => put(value, v.1),
            (HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE, _, Some(v)) => put(value, v.2),
            (HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALIGNMENT, _, Some(v)) => put(value, v.3),
            (HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_IS_CONST, _, Some(v)) => {
                put(value, v.1 == HSA_VARIABLE_SEGMENT_READONLY)
            }
            _ => return HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
    }
    HSA_STATUS_SUCCESS
}

/// `hsa_executable_symbol_get_info`. `NAME` is the ELF symbol (`vadd.kd` for kernels of code
/// object v3+, as ROCr), exactly `NAME_LENGTH` bytes with no NUL.
pub(crate) unsafe extern "C" fn hsa_executable_symbol_get_info(
    executable_symbol: hsa_executable_symbol_t,
    attribute: hsa_executable_symbol_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        let handle = executable_symbol.handle;
        let invalid = HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL;
        // SAFETY: the caller passes a buffer for the attribute.
        unsafe { get_symbol_info(|st| &st.symbols, handle, invalid, attribute, value) }
    })
}

/// The body of both symbol `get_info` functions: `table` picks the symbols, `invalid` is the
/// status for an unknown handle.
///
/// # Safety
/// A non-null `value` must be valid for the attribute's C type.
unsafe fn get_symbol_info(
    table: fn(&State) -> &BTreeMap<u64, Symbol>,
    handle: u64,
    invalid: hsa_status_t,
    attribute: u32,
    value: *mut c_void,
) -> hsa_status_t {
    let Some(symbol) = table(&state()).get(&handle).cloned() else {
        return invalid;
    };
    if value.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null, and valid for the attribute by the caller's contract.
    unsafe { symbol_info(&symbol, attribute, value) }
}

/// The executable's symbols (handle, agent) matching `filter`, collected so the callbacks run
/// without the lock.
fn symbols_where(
    executable: hsa_executable_t,
    filter: impl Fn(&Symbol) -> bool,
) -> Result<Vec<(u64, hsa_agent_t)>, hsa_status_t> {
    let st = state();
    let exec = st
        .executables
        .get(&executable.handle)
        .ok_or(HSA_STATUS_ERROR_INVALID_EXECUTABLE)?;
    Ok(exec
        .symbols
        .iter()
        .filter_map(|h| {
            st.symbols
                .get(h)
                .filter(|s| filter(s))
                .map(|s| (*h, s.agent))
        })
        .collect())
}

/// Calls `call` for each item until it returns something other than success.
fn each<T>(items: Vec<T>, mut call: impl FnMut(T) -> hsa_status_t) -> hsa_status_t {
    for item in items {
        let status = call(item);
        if status != HSA_STATUS_SUCCESS {
            return status;
        }
    }
    HSA_STATUS_SUCCESS
}

/// `hsa_executable_iterate_symbols` (deprecated): program symbols, then agent symbols.
pub(crate) unsafe extern "C" fn hsa_executable_iterate_symbols(
    executable: hsa_executable_t,
    callback: SymbolCallback,
    data: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        let mut symbols = check!(symbols_where(executable, |_| true));
        symbols.sort_by_key(|(_, agent)| agent.handle != 0);
        // SAFETY: the application's callback, with its own data.
        each(symbols, |(handle, _)| unsafe {
            callback(executable, hsa_executable_symbol_t { handle }, data)
        })
    })
}

/// `hsa_executable_iterate_agent_symbols`.
pub(crate) unsafe extern "C" fn hsa_executable_iterate_agent_symbols(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    callback: AgentSymbolCallback,
    data: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        let symbols =
            check!(symbols_where(executable, |s| s.agent.handle != 0 && s.agent == agent));
        // SAFETY: the application's callback, with its own data.
        each(symbols, |(handle, _)| unsafe {
            callback(executable, agent, hsa_executable_symbol_t { handle }, data)
        })
    })
}

/// `hsa_executable_iterate_program_symbols`.
pub(crate) unsafe extern "C" fn hsa_executable_iterate_program_symbols(
    executable: hsa_executable_t,
    callback: SymbolCallback,
    data: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        let symbols = check!(symbols_where(executable, |s| s.agent.handle == 0));
        // SAFETY: the application's callback, with its own data.
        each(symbols, |(handle, _)| unsafe {
            callback(executable, hsa_executable_symbol_t { handle }, data)
        })
    })
}

// ---- Deprecated HSA 1.0 code objects ----------------------------------------------------------

/// `hsa_code_object_serialize` (deprecated): copies the ELF into memory from `alloc_callback`.
pub(crate) unsafe extern "C" fn hsa_code_object_serialize(
    code_object: hsa_code_object_t,
    alloc_callback: AllocCallback,
    callback_data: hsa_callback_data_t,
    _options: *const c_char,
    serialized_code_object: *mut *mut c_void,
    serialized_code_object_size: *mut usize,
) -> hsa_status_t {
    entry(|| {
        let Some(alloc) = alloc_callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        if serialized_code_object.is_null() || serialized_code_object_size.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let Some(co) = state()
            .code_objects
            .get(&code_object.handle)
            .map(|s| Arc::clone(&s.code_object))
        else {
            return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
        };
        let mut buffer = std::ptr::null_mut();
        // SAFETY: the application's allocator callback.
        let status = unsafe { alloc(co.bytes.len(), callback_data, &mut buffer) };
        if status != HSA_STATUS_SUCCESS || buffer.is_null() {
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
        }
        // SAFETY: the allocator returned `len` writable bytes; the out pointers are non-null.
        unsafe {
            put_bytes(buffer, &co.bytes);
            put(serialized_code_object.cast(), buffer);
            put(serialized_code_object_size.cast(), co.bytes.len());
        }
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_code_object_deserialize` (deprecated): parses an AMDGPU code object from memory.
pub(crate) unsafe extern "C" fn hsa_code_object_deserialize(
    serialized_code_object: *mut c_void,
    serialized_code_object_size: usize,
    _options: *const c_char,
    code_object: *mut hsa_code_object_t,
) -> hsa_status_t {
    entry(|| {
        if serialized_code_object.is_null()
            || serialized_code_object_size == 0
            || code_object.is_null()
        {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: the caller promises that many readable bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                serialized_code_object.cast::<u8>(),
                serialized_code_object_size,
            )
        };
        let uri = format!(
            "memory://{}#offset=0x{:x}&size={serialized_code_object_size}",
            std::process::id(),
            serialized_code_object as u64
        );
        let source = check!(parse(bytes.to_vec(), uri));
        let handle = next_handle();
        state().code_objects.insert(handle, source);
        // SAFETY: non-null; points to a code object handle.
        unsafe { put(code_object.cast(), hsa_code_object_t { handle }) };
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_code_object_destroy` (deprecated).
pub(crate) unsafe extern "C" fn hsa_code_object_destroy(
    code_object: hsa_code_object_t,
) -> hsa_status_t {
    entry(|| {
        let mut st = state();
        if st.code_objects.remove(&code_object.handle).is_none() {
            return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
        }
        st.code_symbols
            .retain(|_, s| s.executable != code_object.handle);
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_code_object_get_info` (deprecated).
pub(crate) unsafe extern "C" fn hsa_code_object_get_info(
    code_object: hsa_code_object_t,
    attribute: hsa_code_object_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        let st = state();
        let Some(source) = st.code_objects.get(&code_object.handle) else {
            return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
        };
        if value.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let co = &source.code_object;
        // SAFETY (each `put`): non-null, buffer of the attribute's type as the API requires.
        unsafe {
            match attribute {
                HSA_CODE_OBJECT_INFO_VERSION => {
                    let mut version = [0u8; 64];
                    let text = co.version.to_string();
                    version[..text.len()].copy_from_slice(text.as_bytes());
                    put(value, version)
                }
                HSA_CODE_OBJECT_INFO_TYPE => put(value, HSA_CODE_OBJECT_TYPE_PROGRAM),
                HSA_CODE_OBJECT_INFO_ISA => {
                    let hooks = st.hooks.expect("entry checked the loader is open");
                    match (hooks.isa_from_name)(&co.target_id) {
                        Some(isa) => put(value, isa),
                        None => return HSA_STATUS_ERROR_INVALID_ISA_NAME,
                    }
                }
                HSA_CODE_OBJECT_INFO_MACHINE_MODEL => put(value, HSA_MACHINE_MODEL_LARGE),
                HSA_CODE_OBJECT_INFO_PROFILE => put(value, HSA_PROFILE_FULL),
                HSA_CODE_OBJECT_INFO_DEFAULT_FLOAT_ROUNDING_MODE => {
                    put(value, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR)
                }
                _ => return HSA_STATUS_ERROR_INVALID_ARGUMENT,
            }
        }
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_executable_load_code_object` (deprecated): loads a deserialized code object.
pub(crate) unsafe extern "C" fn hsa_executable_load_code_object(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    code_object: hsa_code_object_t,
    _options: *const c_char,
) -> hsa_status_t {
    entry(|| {
        let source = {
            let st = state();
            let Some(source) = st.code_objects.get(&code_object.handle) else {
                return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
            };
            Source {
                code_object: Arc::clone(&source.code_object),
                uri: source.uri.clone(),
            }
        };
        load(executable, agent, &source, std::ptr::null_mut())
    })
}

/// The code symbols of a deprecated code object, registered on first use; `(handle, name)`.
fn code_symbols(code_object: hsa_code_object_t) -> Result<Vec<(u64, String)>, hsa_status_t> {
    let mut guard = state();
    let st = &mut *guard;
    let source = st
        .code_objects
        .get(&code_object.handle)
        .ok_or(HSA_STATUS_ERROR_INVALID_CODE_OBJECT)?;
    let mut existing: Vec<(u64, String)> = st
        .code_symbols
        .iter()
        .filter(|(_, s)| s.executable == code_object.handle)
        .map(|(h, s)| (*h, s.name.clone()))
        .collect();
    if existing.is_empty() {
        for symbol in symbols_of(&source.code_object) {
            let handle = next_handle();
            existing.push((handle, symbol.name.clone()));
            let symbol = Symbol {
                executable: code_object.handle,
                ..symbol
            };
            st.code_symbols.insert(handle, symbol);
        }
    }
    existing.sort();
    Ok(existing)
}

fn code_object_symbol(
    code_object: hsa_code_object_t,
    symbol_name: *const c_char,
    symbol: *mut hsa_code_symbol_t,
) -> hsa_status_t {
    // SAFETY: a non-null name is a C string.
    let Some(name) = (unsafe { c_str(symbol_name) }) else {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    };
    if symbol.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let symbols = check!(code_symbols(code_object));
    match symbols.into_iter().find(|(_, n)| n == name) {
        Some((handle, _)) => {
            // SAFETY: non-null; points to a code symbol handle.
            unsafe { put(symbol.cast(), hsa_code_symbol_t { handle }) };
            HSA_STATUS_SUCCESS
        }
        None => HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
    }
}

/// `hsa_code_object_get_symbol` (deprecated).
pub(crate) unsafe extern "C" fn hsa_code_object_get_symbol(
    code_object: hsa_code_object_t,
    symbol_name: *const c_char,
    symbol: *mut hsa_code_symbol_t,
) -> hsa_status_t {
    entry(|| code_object_symbol(code_object, symbol_name, symbol))
}

/// `hsa_code_object_get_symbol_from_name` (deprecated): module names are empty in v3+.
pub(crate) unsafe extern "C" fn hsa_code_object_get_symbol_from_name(
    code_object: hsa_code_object_t,
    _module_name: *const c_char,
    symbol_name: *const c_char,
    symbol: *mut hsa_code_symbol_t,
) -> hsa_status_t {
    entry(|| code_object_symbol(code_object, symbol_name, symbol))
}

/// `hsa_code_symbol_get_info` (deprecated): the attributes of a symbol not loaded.
pub(crate) unsafe extern "C" fn hsa_code_symbol_get_info(
    code_symbol: hsa_code_symbol_t,
    attribute: hsa_code_symbol_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        let (handle, invalid) = (code_symbol.handle, HSA_STATUS_ERROR_INVALID_CODE_SYMBOL);
        // SAFETY: the caller passes a buffer for the attribute.
        unsafe { get_symbol_info(|st| &st.code_symbols, handle, invalid, attribute, value) }
    })
}

/// `hsa_code_object_iterate_symbols` (deprecated).
pub(crate) unsafe extern "C" fn hsa_code_object_iterate_symbols(
    code_object: hsa_code_object_t,
    callback: CodeSymbolCallback,
    data: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        let symbols = check!(code_symbols(code_object));
        // SAFETY: the application's callback, with its own data.
        each(symbols, |(handle, _)| unsafe {
            callback(code_object, hsa_code_symbol_t { handle }, data)
        })
    })
}

// ---- The AMD loader extension -----------------------------------------------------------------

/// The loaded code object whose image contains `address`: (its handle, its executable).
fn loaded_containing(address: u64) -> Option<(u64, u64)> {
    let st = state();
    st.loaded
        .iter()
        .find(|(_, lco)| {
            let base = lco.image.base();
            (base..base + lco.image.size()).contains(&address)
        })
        .map(|(handle, lco)| (*handle, lco.executable))
}

/// `hsa_ven_amd_loader_query_host_address`: the simulated GPU shares the host's memory, so a
/// device address inside a loaded image is its own host address.
pub(crate) unsafe extern "C" fn hsa_ven_amd_loader_query_host_address(
    device_address: *const c_void,
    host_address: *mut *const c_void,
) -> hsa_status_t {
    entry(|| {
        if device_address.is_null() || host_address.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        if loaded_containing(device_address as u64).is_none() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: non-null pointer to a pointer.
        unsafe { put(host_address.cast(), device_address) };
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_ven_amd_loader_query_segment_descriptors`: one descriptor per loaded code object, in
/// executable and load order; called with `*num == 0` it reports the count.
pub(crate) unsafe extern "C" fn hsa_ven_amd_loader_query_segment_descriptors(
    segment_descriptors: *mut hsa_ven_amd_loader_segment_descriptor_t,
    num_segment_descriptors: *mut usize,
) -> hsa_status_t {
    entry(|| {
        if num_segment_descriptors.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: non-null pointer to a size_t.
        let requested = unsafe { num_segment_descriptors.read_unaligned() };
        if (requested == 0) != segment_descriptors.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let st = state();
        let descriptors: Vec<hsa_ven_amd_loader_segment_descriptor_t> = st
            .executables
            .iter()
            .flat_map(|(handle, exec)| exec.loaded.iter().map(move |lco| (*handle, lco)))
            .filter_map(|(executable, lco)| st.loaded.get(lco).map(|lco| (executable, lco)))
            .map(|(executable, lco)| {
                let co = lco.image.code_object();
                hsa_ven_amd_loader_segment_descriptor_t {
                    agent: lco.agent,
                    executable: hsa_executable_t { handle: executable },
                    code_object_storage_type: CODE_OBJECT_STORAGE_TYPE_MEMORY,
                    code_object_storage_base: co.bytes.as_ptr().cast(),
                    code_object_storage_size: co.bytes.len(),
                    code_object_storage_offset: co.segments.first().map_or(0, |s| s.file_offset)
                        as usize,
                    segment_base: lco.image.base() as *const c_void,
                    segment_size: co.image_size() as usize,
                }
            })
            .collect();
        if requested == 0 {
            // SAFETY: non-null pointer to a size_t.
            unsafe { put(num_segment_descriptors.cast(), descriptors.len()) };
            return HSA_STATUS_SUCCESS;
        }
        if requested != descriptors.len() {
            return HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS;
        }
        // SAFETY: the caller provides room for `requested` descriptors.
        unsafe {
            std::ptr::copy_nonoverlapping(
                descriptors.as_ptr(),
                segment_descriptors,
                descriptors.len(),
            )
        };
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_ven_amd_loader_query_executable`: the executable whose loaded image holds the address.
pub(crate) unsafe extern "C" fn hsa_ven_amd_loader_query_executable(
    device_address: *const c_void,
    executable: *mut hsa_executable_t,
) -> hsa_status_t {
    entry(|| {
        if device_address.is_null() || executable.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        match loaded_containing(device_address as u64) {
            Some((_, handle)) => {
                // SAFETY: non-null pointer to an executable handle.
                unsafe { put(executable.cast(), hsa_executable_t { handle }) };
                HSA_STATUS_SUCCESS
            }
            None => HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
    })
}

/// `hsa_ven_amd_loader_executable_iterate_loaded_code_objects`, in load order.
pub(crate) unsafe extern "C" fn hsa_ven_amd_loader_executable_iterate_loaded_code_objects(
    executable: hsa_executable_t,
    callback: LoadedCodeObjectCallback,
    data: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        let Some(loaded) = state()
            .executables
            .get(&executable.handle)
            .map(|e| e.loaded.clone())
        else {
            return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
        };
        // SAFETY: the application's callback, with its own data.
        each(loaded, |handle| unsafe {
            callback(executable, hsa_loaded_code_object_t { handle }, data)
        })
    })
}

/// `hsa_ven_amd_loader_loaded_code_object_get_info`, with ROCr's answers (storage is always
/// memory; `CODE_OBJECT_STORAGE_FILE` is refused; the URI has no NUL).
pub(crate) unsafe extern "C" fn hsa_ven_amd_loader_loaded_code_object_get_info(
    loaded_code_object: hsa_loaded_code_object_t,
    attribute: hsa_ven_amd_loader_loaded_code_object_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        if value.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let st = state();
        let Some(lco) = st.loaded.get(&loaded_code_object.handle) else {
            return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
        };
        let co = lco.image.code_object();
        let base = lco.image.base();
        // SAFETY (each `put`): non-null, buffer of the attribute's type as the API requires.
        unsafe {
            match attribute {
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_EXECUTABLE => put(
                    value,
                    hsa_executable_t {
                        handle: lco.executable,
                    },
                ),
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_KIND if lco.agent.handle == 0 => {
                    put(value, LOADED_CODE_OBJECT_KIND_PROGRAM)
                }
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_KIND => {
                    put(value, LOADED_CODE_OBJECT_KIND_AGENT)
                }
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_AGENT if lco.agent.handle == 0 => {
                    return HSA_STATUS_ERROR_INVALID_ARGUMENT
                }
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_AGENT => put(value, lco.agent),
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_TYPE => {
                    put(value, CODE_OBJECT_STORAGE_TYPE_MEMORY)
                }
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_BASE => {
                    put(value, co.bytes.as_ptr() as u64)
                }
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_SIZE => {
                    put(value, co.bytes.len() as u64)
                }
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_FILE => {
                    return HSA_STATUS_ERROR_INVALID_ARGUMENT
                }
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_DELTA => put(value, base as i64),
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE => put(value, base),
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_SIZE => put(value, co.image_size()),
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI_LENGTH => {
                    put(value, lco.uri.len() as u32)
                }
                HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI => {
                    put_bytes(value, lco.uri.as_bytes())
                }
                _ => return HSA_STATUS_ERROR_INVALID_ARGUMENT,
            }
        }
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size`.
pub(crate) unsafe extern "C" fn hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size(
    file: hsa_file_t,
    offset: usize,
    size: usize,
    code_object_reader: *mut hsa_code_object_reader_t,
) -> hsa_status_t {
    entry(|| {
        if code_object_reader.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        if size == 0 {
            return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
        }
        let (bytes, uri) = check!(read_file(file, offset as u64, size as u64));
        add_reader(check!(parse(bytes, uri)), code_object_reader)
    })
}

/// `hsa_ven_amd_loader_iterate_executables`, in creation order.
pub(crate) unsafe extern "C" fn hsa_ven_amd_loader_iterate_executables(
    callback: ExecutableCallback,
    data: *mut c_void,
) -> hsa_status_t {
    entry(|| {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        let executables: Vec<u64> = state().executables.keys().copied().collect();
        // SAFETY: the application's callback, with its own data.
        each(executables, |handle| unsafe {
            callback(hsa_executable_t { handle }, data)
        })
    })
}

/// The loader extension table (`HSA_EXTENSION_AMD_LOADER`, version 1.03), for
/// `hsa_system_get_major_extension_table`.
pub(crate) fn loader_extension_table() -> hsa_ven_amd_loader_1_03_pfn_t {
    hsa_ven_amd_loader_1_03_pfn_t {
        hsa_ven_amd_loader_query_host_address: Some(hsa_ven_amd_loader_query_host_address),
        hsa_ven_amd_loader_query_segment_descriptors: Some(
            hsa_ven_amd_loader_query_segment_descriptors,
        ),
        hsa_ven_amd_loader_query_executable: Some(hsa_ven_amd_loader_query_executable),
        hsa_ven_amd_loader_executable_iterate_loaded_code_objects: Some(
            hsa_ven_amd_loader_executable_iterate_loaded_code_objects,
        ),
        hsa_ven_amd_loader_loaded_code_object_get_info: Some(
            hsa_ven_amd_loader_loaded_code_object_get_info,
        ),
        hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size: Some(
            hsa_ven_amd_loader_code_object_reader_create_from_file_with_offset_size,
        ),
        hsa_ven_amd_loader_iterate_executables: Some(hsa_ven_amd_loader_iterate_executables),
    }
}

#[cfg(test)]
mod tests;
