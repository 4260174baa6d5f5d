//! roctx annotations (`--roctx`), through ROCm's `libroctx64.so.4` opened at run time by its
//! soname and its functions looked up in it, as applications that make roctx optional do. When
//! no roctx library can be opened the demo runs without annotations.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::OnceLock;

type Text = unsafe extern "C" fn(*const c_char) -> c_int;
type Mark = unsafe extern "C" fn(*const c_char);
type Pop = unsafe extern "C" fn() -> c_int;

/// The roctx functions the demo calls.
pub struct Roctx {
    push: Text,
    pop: Pop,
    mark: Mark,
    name_thread: Text,
}

static ROCTX: OnceLock<Option<Roctx>> = OnceLock::new();

fn open() -> Option<Roctx> {
    // SAFETY: dlopen and dlsym with NUL-terminated names; the library stays loaded.
    unsafe {
        let handle = libc::dlopen(
            c"libroctx64.so.4".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_LOCAL,
        );
        if handle.is_null() {
            return None;
        }
        let symbol = |name: &std::ffi::CStr| -> Option<*mut c_void> {
            let f = libc::dlsym(handle, name.as_ptr());
            (!f.is_null()).then_some(f)
        };
        Some(Roctx {
            push: std::mem::transmute::<*mut c_void, Text>(symbol(c"roctxRangePushA")?),
            pop: std::mem::transmute::<*mut c_void, Pop>(symbol(c"roctxRangePop")?),
            mark: std::mem::transmute::<*mut c_void, Mark>(symbol(c"roctxMarkA")?),
            name_thread: std::mem::transmute::<*mut c_void, Text>(symbol(c"roctxNameOsThread")?),
        })
    }
}

/// Opens the library once; later calls annotate when it opened.
pub fn enable() {
    ROCTX.get_or_init(open);
}

fn with(call: impl FnOnce(&Roctx)) {
    if let Some(Some(roctx)) = ROCTX.get() {
        call(roctx);
    }
}

fn text(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// `roctxRangePushA(name)`.
pub fn push(name: &str) {
    // SAFETY: the library's function with a NUL-terminated message.
    with(|r| unsafe {
        (r.push)(text(name).as_ptr());
    });
}

/// `roctxRangePop()`.
pub fn pop() {
    // SAFETY: the library's function, no arguments.
    with(|r| unsafe {
        (r.pop)();
    });
}

/// `roctxMarkA(message)`.
pub fn mark(message: &str) {
    // SAFETY: the library's function with a NUL-terminated message.
    with(|r| unsafe { (r.mark)(text(message).as_ptr()) });
}

/// `roctxNameOsThread(name)`.
pub fn name_thread(name: &str) {
    // SAFETY: the library's function with a NUL-terminated name.
    with(|r| unsafe {
        (r.name_thread)(text(name).as_ptr());
    });
}
