//! Tools loading as ROCr does it: `HSA_TOOLS_LIB` (split on spaces, with quotes and backslash
//! escapes) names libraries that are `dlopen`ed (`RTLD_LAZY`) in order at the end of the first
//! `hsa_init`; each must define `OnLoad` itself, which is called with the live root table, the
//! root table's major id and the names of the tools that failed so far. A library that fails to
//! open, lacks `OnLoad` or returns false is closed and added to that list
//! (`HSA_TOOLS_REPORT_LOAD_FAILURE` prints `Tool lib "<name>" failed to load.`). `OnUnload` runs
//! in reverse order at the last `hsa_shut_down`, or at exit if the application never shuts down.
//! Libraries already in the process that export `uint32_t HSA_AMD_TOOL_PRIORITY` are loaded too,
//! after the `HSA_TOOLS_LIB` ones, ordered by that priority.
//!
//! Before those, as ROCr built with rocprofiler-register does, the runtime hands its API table
//! to `rocprofiler_register_library_api_table("hsa", import, version, &table, 1, &id)`, which is
//! how rocprofiler-sdk tools (rocprofv3) receive it. ROCr links `librocprofiler-register.so.0`;
//! the simulated runtime, which must start where no ROCm is installed, takes the function from
//! the process when the application or a preloaded library brought it, else from
//! `librocprofiler-register.so.0` when the loader finds one (on `LD_LIBRARY_PATH`, as an
//! installed ROCm's is), else registers nothing. ROCr's switches apply:
//! `HSA_TOOLS_DISABLE_REGISTER=1` skips the registration, `HSA_TOOLS_REPORT_REGISTER_FAILURE=1`
//! prints a status other than success, and a successful registration means the tools of
//! `HSA_TOOLS_LIB` and the preloaded ones are not loaded unless `HSA_TOOLS_ROCPROFILER_V1_TOOLS`
//! is set to anything but `0`, `off`, `false`, `no`, `n` or `f` (any case). The runtime registers
//! as ROCr 1.18.0, the release whose tables it presents by default, and not at all with the
//! tables of ROCm 5 (`RTL_SIM_ROCM=5.x`), which had no rocprofiler-register.

use crate::api;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::Mutex;

type OnLoadFn =
    unsafe extern "C" fn(*mut crate::hsa::HsaApiTable, u64, u64, *const *const c_char) -> bool;
type OnUnloadFn = unsafe extern "C" fn();

struct Tool {
    handle: usize,
}

static TOOLS: Mutex<Vec<Tool>> = Mutex::new(Vec::new());

/// Splits `HSA_TOOLS_LIB` into library names: spaces separate, `"…"`/`'…'` quote, `\` escapes.
pub fn split_tool_list(list: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = String::new();
    let mut has_token = false;
    let mut quote: Option<char> = None;
    let mut chars = list.chars();
    while let Some(c) = chars.next() {
        match (c, quote) {
            ('\\', _) => {
                if let Some(next) = chars.next() {
                    current.push(next);
                    has_token = true;
                }
            }
            (q, None) if q == '"' || q == '\'' => {
                quote = Some(q);
                has_token = true;
            }
            (q, Some(open)) if q == open => quote = None,
            (c, None) if c.is_whitespace() => {
                if has_token {
                    names.push(std::mem::take(&mut current));
                    has_token = false;
                }
            }
            (c, _) => {
                current.push(c);
                has_token = true;
            }
        }
    }
    if has_token {
        names.push(current);
    }
    names
}

/// Minimal `struct link_map` (glibc `<link.h>`).
#[repr(C)]
struct LinkMap {
    l_addr: usize,
    l_name: *const c_char,
    l_ld: *mut c_void,
    l_next: *mut LinkMap,
    l_prev: *mut LinkMap,
}

/// Whether `symbol` is defined in the library `handle` itself (not in one it depends on).
fn defined_in(handle: *mut c_void, symbol: *mut c_void) -> bool {
    let mut map: *mut LinkMap = std::ptr::null_mut();
    let mut info: libc::Dl_info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: `handle` is a live dlopen handle; both out-pointers are valid.
    unsafe {
        if libc::dlinfo(
            handle,
            libc::RTLD_DI_LINKMAP,
            &mut map as *mut *mut LinkMap as *mut c_void,
        ) != 0
            || map.is_null()
        {
            return false;
        }
        if libc::dladdr(symbol, &mut info) == 0
            || info.dli_fname.is_null()
            || (*map).l_name.is_null()
        {
            return false;
        }
        CStr::from_ptr(info.dli_fname) == CStr::from_ptr((*map).l_name)
    }
}

fn report_failure(name: &str) {
    let report =
        std::env::var("HSA_TOOLS_REPORT_LOAD_FAILURE").is_ok_and(|v| !matches!(v.trim(), "" | "0"));
    if report {
        eprintln!("Tool lib \"{name}\" failed to load.");
    }
}

/// Libraries already in the process (preloaded or linked) that define `HSA_AMD_TOOL_PRIORITY`,
/// with that priority.
fn loaded_tools() -> Vec<(String, u32)> {
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info; `data` is the Vec of names.
        unsafe {
            let name = (*info).dlpi_name;
            if !name.is_null() && *name != 0 {
                (*(data as *mut Vec<CString>)).push(CStr::from_ptr(name).to_owned());
            }
        }
        0
    }
    let mut names: Vec<CString> = Vec::new();
    // SAFETY: the callback only reads the info it is given.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut names as *mut Vec<CString> as *mut c_void) };
    let mut found = Vec::new();
    for name in names {
        // SAFETY: RTLD_NOLOAD only returns a handle to an object already loaded.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            continue;
        }
        // SAFETY: dlsym on a live handle.
        let symbol = unsafe { libc::dlsym(handle, c"HSA_AMD_TOOL_PRIORITY".as_ptr()) };
        if !symbol.is_null() && defined_in(handle, symbol) {
            // SAFETY: the exported object is a uint32_t.
            let priority = unsafe { *(symbol as *const u32) };
            found.push((name.to_string_lossy().into_owned(), priority));
        }
        // SAFETY: drops the reference RTLD_NOLOAD took.
        unsafe { libc::dlclose(handle) };
    }
    found
}

/// The tools to load, in load order: `HSA_TOOLS_LIB` entry `i` has order `i`, an already-loaded
/// library with `HSA_AMD_TOOL_PRIORITY = p` order `p + (number of HSA_TOOLS_LIB entries)`; a
/// library named twice keeps its lowest order.
fn tool_order(env: Vec<String>, loaded: Vec<(String, u32)>) -> Vec<String> {
    let n = env.len() as u64;
    let mut all: Vec<(u64, String)> = env
        .into_iter()
        .enumerate()
        .map(|(i, name)| (i as u64, name))
        .collect();
    all.extend(
        loaded
            .into_iter()
            .map(|(name, priority)| (u64::from(priority) + n, name)),
    );
    all.sort_by_key(|(order, _)| *order);
    let mut seen = std::collections::HashSet::new();
    all.into_iter()
        .filter(|(_, name)| seen.insert(name.clone()))
        .map(|(_, name)| name)
        .collect()
}

/// ROCr's version as rocprofiler-register encodes it: 10000 × major + 100 × minor + patch.
const ROCR_VERSION: u32 = 10000 + 18 * 100;

/// rocprofiler-register's import function for "hsa": identifies the registering library and
/// returns its version (local to the library, as ROCr's is).
#[no_mangle]
extern "C" fn rocprofiler_register_import_hsa() -> u32 {
    ROCR_VERSION
}

/// `rocprofiler_register_library_api_table`.
type RegisterFn = unsafe extern "C" fn(
    *const c_char,
    extern "C" fn() -> u32,
    u32,
    *mut *mut c_void,
    u64,
    *mut u64,
) -> libc::c_int;
/// `rocprofiler_register_error_string`.
type ErrorStringFn = unsafe extern "C" fn(libc::c_int) -> *const c_char;

/// rocprofiler-register's success status.
const ROCP_REG_SUCCESS: libc::c_int = 0;

/// rocprofiler-register's function `name`: from the process, else from
/// `librocprofiler-register.so.0` if the loader finds it (kept loaded, as a linked library is).
fn register_symbol(name: &CStr) -> *mut c_void {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
    let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if !found.is_null() {
        return found;
    }
    // SAFETY: dlopen of a NUL-terminated soname; the handle is never closed.
    let handle = unsafe { libc::dlopen(c"librocprofiler-register.so.0".as_ptr(), libc::RTLD_LAZY) };
    if handle.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: dlsym on a live handle.
    unsafe { libc::dlsym(handle, name.as_ptr()) }
}

fn env_is(name: &str, value: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == value)
}

/// Whether `HSA_TOOLS_ROCPROFILER_V1_TOOLS` asks for `HSA_TOOLS_LIB` tools beside
/// rocprofiler-register: set (even empty) means yes, except a number equal to 0 or one of
/// `off`, `false`, `no`, `n`, `f` in any case.
fn v1_tools_allowed(value: Option<&str>) -> bool {
    match value {
        None => false,
        Some(v) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
            v.bytes().any(|b| b != b'0')
        }
        Some(v) => !["off", "false", "no", "n", "f"]
            .iter()
            .any(|no| v.eq_ignore_ascii_case(no)),
    }
}

/// Hands the API table to rocprofiler-register when it is there; true when the tools of
/// `HSA_TOOLS_LIB` are to be loaded too.
fn register_with_rocprofiler() -> bool {
    if env_is("HSA_TOOLS_DISABLE_REGISTER", "1") {
        return true;
    }
    let root = api::root_table();
    // SAFETY: the root table is live for the life of the runtime.
    if unsafe { (*root).version.major_id } < 2 {
        return true;
    }
    let register = register_symbol(c"rocprofiler_register_library_api_table");
    if register.is_null() {
        return true;
    }
    // SAFETY: the symbol has rocprofiler-register's signature (its public header).
    let register = unsafe { std::mem::transmute::<*mut c_void, RegisterFn>(register) };
    let mut tables = [root as *mut c_void];
    let mut id = 0u64;
    // SAFETY: every pointer is valid for the call; rocprofiler-register copies the table pointers.
    let status = unsafe {
        register(
            c"hsa".as_ptr(),
            rocprofiler_register_import_hsa,
            ROCR_VERSION,
            tables.as_mut_ptr(),
            1,
            &mut id,
        )
    };
    if status != ROCP_REG_SUCCESS && env_is("HSA_TOOLS_REPORT_REGISTER_FAILURE", "1") {
        let describe = register_symbol(c"rocprofiler_register_error_string");
        let text = if describe.is_null() {
            String::new()
        } else {
            // SAFETY: the symbol has rocprofiler-register's signature; it returns a static
            // string or null.
            let text =
                unsafe { std::mem::transmute::<*mut c_void, ErrorStringFn>(describe)(status) };
            if text.is_null() {
                String::new()
            } else {
                // SAFETY: a NUL-terminated string from rocprofiler-register.
                unsafe { CStr::from_ptr(text) }
                    .to_string_lossy()
                    .into_owned()
            }
        };
        eprintln!(
            "rtl-sim[{}]: rocprofiler-register returned status {status}: {text}",
            std::process::id()
        );
    }
    status != ROCP_REG_SUCCESS
        || v1_tools_allowed(
            std::env::var("HSA_TOOLS_ROCPROFILER_V1_TOOLS")
                .ok()
                .as_deref(),
        )
}

/// Registers with rocprofiler-register, then loads the tools of `HSA_TOOLS_LIB` and the
/// already-loaded tools unless the registration succeeded (first `hsa_init`, after agents exist).
pub fn load() {
    if !register_with_rocprofiler() {
        return;
    }
    let env = std::env::var("HSA_TOOLS_LIB")
        .map(|list| split_tool_list(&list))
        .unwrap_or_default();
    let mut failed: Vec<CString> = Vec::new();
    for name in tool_order(env, loaded_tools()) {
        let Ok(c_name) = CString::new(name.clone()) else {
            report_failure(&name);
            continue;
        };
        // SAFETY: dlopen of a NUL-terminated path.
        let handle = unsafe { libc::dlopen(c_name.as_ptr(), libc::RTLD_LAZY) };
        if handle.is_null() {
            report_failure(&name);
            failed.push(c_name);
            continue;
        }
        // SAFETY: dlsym on a live handle.
        let on_load = unsafe { libc::dlsym(handle, c"OnLoad".as_ptr()) };
        if on_load.is_null() || !defined_in(handle, on_load) {
            // SAFETY: closing the handle we opened.
            unsafe { libc::dlclose(handle) };
            report_failure(&name);
            failed.push(c_name);
            continue;
        }
        // SAFETY: `OnLoad` has the tools-library signature.
        let on_load: OnLoadFn = unsafe { std::mem::transmute::<*mut c_void, OnLoadFn>(on_load) };
        let names: Vec<*const c_char> = failed.iter().map(|n| n.as_ptr()).collect();
        let root = api::root_table();
        // SAFETY: the root table is live; the names outlive the call.
        let ok = unsafe {
            on_load(
                root,
                u64::from((*root).version.major_id),
                names.len() as u64,
                names.as_ptr(),
            )
        };
        if ok {
            TOOLS.lock().unwrap_or_else(|p| p.into_inner()).push(Tool {
                handle: handle as usize,
            });
        } else {
            // SAFETY: closing the handle we opened.
            unsafe { libc::dlclose(handle) };
            report_failure(&name);
            failed.push(c_name);
        }
    }
}

/// Calls `OnUnload` of every loaded tool in reverse order, then (if `close`) dlcloses them.
pub fn unload(close: bool) {
    let tools = std::mem::take(&mut *TOOLS.lock().unwrap_or_else(|p| p.into_inner()));
    for tool in tools.iter().rev() {
        // SAFETY: a live dlopen handle.
        let on_unload = unsafe { libc::dlsym(tool.handle as *mut c_void, c"OnUnload".as_ptr()) };
        if !on_unload.is_null() {
            // SAFETY: `OnUnload` has the tools-library signature.
            unsafe { std::mem::transmute::<*mut c_void, OnUnloadFn>(on_unload)() };
        }
    }
    if close {
        for tool in tools.iter().rev() {
            // SAFETY: closing handles we opened.
            unsafe { libc::dlclose(tool.handle as *mut c_void) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{split_tool_list, tool_order, v1_tools_allowed};

    #[test]
    fn v1_tools_follow_rocr_spellings() {
        for (value, allowed) in [
            (None, false),
            (Some(""), true),
            (Some("1"), true),
            (Some("10"), true),
            (Some("0"), false),
            (Some("00"), false),
            (Some("OFF"), false),
            (Some("False"), false),
            (Some("no"), false),
            (Some("N"), false),
            (Some("f"), false),
            (Some("yes"), true),
            (Some("-1"), true),
        ] {
            assert_eq!(v1_tools_allowed(value), allowed, "{value:?}");
        }
    }

    #[test]
    fn tool_lists_split_like_rocr() {
        assert_eq!(split_tool_list("a.so  b.so"), vec!["a.so", "b.so"]);
        assert_eq!(
            split_tool_list(r#""/x y/a.so" b\ c.so 'q.so'"#),
            vec!["/x y/a.so", "b c.so", "q.so"]
        );
        assert_eq!(split_tool_list("   "), Vec::<String>::new());
        assert_eq!(split_tool_list(r#""""#), vec![""]);
    }

    #[test]
    fn preloaded_tools_follow_the_environment_by_priority() {
        let env = vec!["a.so".to_string(), "b.so".to_string()];
        let loaded = vec![
            ("p25.so".to_string(), 25),
            ("p0.so".to_string(), 0),
            ("a.so".to_string(), 7),
        ];
        assert_eq!(
            tool_order(env, loaded),
            vec!["a.so", "b.so", "p0.so", "p25.so"]
        );
    }
}
