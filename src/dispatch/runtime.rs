//! Calls into the runtime through the saved original table entries (never through exported
//! `hsa_*` symbols, which are trampolines back into the patched tables).

use std::ffi::c_void;

use crate::hsa::*;

/// The runtime's original entries, callable.
pub struct Hsa {
    core: CoreApiTable,
    amd: AmdExtTable,
}

// SAFETY: plain copies of function pointers into a thread-safe runtime.
unsafe impl Send for Hsa {}
// SAFETY: see `Send`.
unsafe impl Sync for Hsa {}

/// Calls an entry returning `hsa_status_t`; a missing entry is `HSA_STATUS_ERROR`.
macro_rules! status_call {
    ($entry:expr $(, $arg:expr)* $(,)?) => {
        match $entry {
            // SAFETY: an original runtime entry with its C signature, called with valid
            // arguments as each caller documents.
            Some(f) => unsafe { f($($arg),*) },
            None => HSA_STATUS_ERROR,
        }
    };
}

impl Hsa {
    /// Wraps saved originals.
    pub fn new(core: CoreApiTable, amd: AmdExtTable) -> Hsa {
        Hsa { core, amd }
    }

    /// The saved core table.
    pub fn core(&self) -> &CoreApiTable {
        &self.core
    }

    /// The saved AMD extension table.
    pub fn amd(&self) -> &AmdExtTable {
        &self.amd
    }

    /// Every agent the runtime knows, in its order.
    pub fn agents(&self) -> Vec<hsa_agent_t> {
        unsafe extern "C" fn push(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t {
            // SAFETY: `data` is the Vec passed below, alive for the iteration.
            unsafe { (*(data as *mut Vec<hsa_agent_t>)).push(agent) };
            HSA_STATUS_SUCCESS
        }
        let mut agents: Vec<hsa_agent_t> = Vec::new();
        let data = &mut agents as *mut Vec<hsa_agent_t> as *mut c_void;
        status_call!(self.core.hsa_iterate_agents_fn, Some(push), data);
        agents
    }

    /// A plain-data agent attribute.
    pub fn agent_info<T: Copy + Default>(
        &self,
        agent: hsa_agent_t,
        attribute: hsa_agent_info_t,
    ) -> Option<T> {
        self.agent_info_into(agent, attribute, T::default())
    }

    /// An agent attribute written over `value`.
    fn agent_info_into<T: Copy>(
        &self,
        agent: hsa_agent_t,
        attribute: hsa_agent_info_t,
        mut value: T,
    ) -> Option<T> {
        let status = status_call!(
            self.core.hsa_agent_get_info_fn,
            agent,
            attribute,
            &mut value as *mut T as *mut c_void
        );
        (status == HSA_STATUS_SUCCESS).then_some(value)
    }

    /// The agent's name (`gfx942`, or a CPU's name), NUL-terminated in a 64-byte field.
    pub fn agent_name(&self, agent: hsa_agent_t) -> String {
        let name: [u8; 64] = self
            .agent_info_into(agent, HSA_AGENT_INFO_NAME, [0u8; 64])
            .unwrap_or([0; 64]);
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        String::from_utf8_lossy(&name[..end]).into_owned()
    }

    /// The runtime's system clock (`HSA_SYSTEM_INFO_TIMESTAMP`, the domain of dispatch
    /// timestamps) in ns, or `None`.
    pub fn system_time_ns(&self) -> Option<u64> {
        let mut ticks = 0u64;
        let mut frequency = 0u64;
        let read = |attribute, value: &mut u64| {
            status_call!(
                self.core.hsa_system_get_info_fn,
                attribute,
                value as *mut u64 as *mut c_void
            ) == HSA_STATUS_SUCCESS
        };
        if !read(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &mut frequency)
            || !read(HSA_SYSTEM_INFO_TIMESTAMP, &mut ticks)
            || frequency == 0
        {
            return None;
        }
        Some((u128::from(ticks) * 1_000_000_000 / u128::from(frequency)) as u64)
    }

    /// A new signal with `value`, or `None`.
    pub fn signal_create(&self, value: i64) -> Option<hsa_signal_t> {
        let mut signal = hsa_signal_t::default();
        let status = status_call!(
            self.core.hsa_signal_create_fn,
            value,
            0,
            std::ptr::null(),
            &mut signal
        );
        (status == HSA_STATUS_SUCCESS && signal.handle != 0).then_some(signal)
    }

    /// Destroys a signal.
    pub fn signal_destroy(&self, signal: hsa_signal_t) {
        status_call!(self.core.hsa_signal_destroy_fn, signal);
    }

    /// The signal's value (acquire).
    pub fn signal_load(&self, signal: hsa_signal_t) -> i64 {
        match self.core.hsa_signal_load_scacquire_fn {
            // SAFETY: an original entry called with a signal we own or the application gave.
            Some(f) => unsafe { f(signal) },
            None => 0,
        }
    }

    /// Sets the signal's value (relaxed).
    pub fn signal_store(&self, signal: hsa_signal_t, value: i64) {
        if let Some(f) = self.core.hsa_signal_store_relaxed_fn {
            // SAFETY: an original entry called with a signal we own.
            unsafe { f(signal, value) }
        }
    }

    /// Adds to the signal's value (release).
    pub fn signal_add(&self, signal: hsa_signal_t, value: i64) {
        if let Some(f) = self.core.hsa_signal_add_screlease_fn {
            // SAFETY: an original entry called with a signal we own.
            unsafe { f(signal, value) }
        }
    }

    /// Subtracts from the signal's value (release), waking its waiters.
    pub fn signal_subtract(&self, signal: hsa_signal_t, value: i64) {
        if let Some(f) = self.core.hsa_signal_subtract_screlease_fn {
            // SAFETY: an original entry called with the application's completion signal.
            unsafe { f(signal, value) }
        }
    }

    /// Waits until the signal's value is below `value` or about `timeout_ns` passed; returns
    /// the value last observed.
    pub fn signal_wait_below(&self, signal: hsa_signal_t, value: i64, timeout_ns: u64) -> i64 {
        match self.core.hsa_signal_wait_scacquire_fn {
            // SAFETY: an original entry called with a signal we own.
            Some(f) => unsafe {
                f(
                    signal,
                    HSA_SIGNAL_CONDITION_LT,
                    value,
                    timeout_ns,
                    HSA_WAIT_STATE_BLOCKED,
                )
            },
            None => self.signal_load(signal),
        }
    }

    /// Waits until any `(signal, condition, value)` holds or about `timeout_ns` passed. False
    /// (without waiting) if the runtime has no `hsa_amd_signal_wait_any`.
    pub fn wait_any(
        &self,
        waits: &[(hsa_signal_t, hsa_signal_condition_t, i64)],
        timeout_ns: u64,
    ) -> bool {
        let Some(wait_any) = self.amd.hsa_amd_signal_wait_any_fn else {
            return false;
        };
        let mut signals: Vec<hsa_signal_t> = waits.iter().map(|w| w.0).collect();
        let mut conditions: Vec<hsa_signal_condition_t> = waits.iter().map(|w| w.1).collect();
        let mut values: Vec<i64> = waits.iter().map(|w| w.2).collect();
        let mut satisfying = 0i64;
        // SAFETY: an original entry with three arrays of `waits.len()` elements.
        unsafe {
            wait_any(
                waits.len() as u32,
                signals.as_mut_ptr(),
                conditions.as_mut_ptr(),
                values.as_mut_ptr(),
                timeout_ns,
                HSA_WAIT_STATE_BLOCKED,
                &mut satisfying,
            )
        };
        true
    }

    /// Whether the host reaches memory of `region` directly
    /// (`HSA_AMD_REGION_INFO_HOST_ACCESSIBLE`); `None` when the runtime does not say.
    pub fn region_host_accessible(&self, region: hsa_region_t) -> Option<bool> {
        // A C bool, read as a byte: any value the runtime writes is one.
        let mut accessible = 0u8;
        let status = status_call!(
            self.core.hsa_region_get_info_fn,
            region,
            HSA_AMD_REGION_INFO_HOST_ACCESSIBLE,
            &mut accessible as *mut u8 as *mut c_void
        );
        (status == HSA_STATUS_SUCCESS).then_some(accessible != 0)
    }

    /// How `pool` is open to `agent` by default (`HSA_AMD_MEMORY_POOL_ACCESS_*`).
    pub fn pool_access(&self, agent: hsa_agent_t, pool: hsa_amd_memory_pool_t) -> Option<u32> {
        let mut access = 0u32;
        let status = status_call!(
            self.amd.hsa_amd_agent_memory_pool_get_info_fn,
            agent,
            pool,
            HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS,
            &mut access as *mut u32 as *mut c_void
        );
        (status == HSA_STATUS_SUCCESS).then_some(access)
    }

    /// `size` bytes of `pool`, allocated through the original entry (so the interposer's own
    /// memory is never tracked as the application's).
    pub fn pool_allocate(&self, pool: hsa_amd_memory_pool_t, size: usize) -> Option<*mut c_void> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        let status = status_call!(
            self.amd.hsa_amd_memory_pool_allocate_fn,
            pool,
            size,
            0,
            &mut ptr
        );
        (status == HSA_STATUS_SUCCESS && !ptr.is_null()).then_some(ptr)
    }

    /// Frees memory of [`Hsa::pool_allocate`].
    ///
    /// # Safety
    /// `ptr` must come from [`Hsa::pool_allocate`] and not be used afterwards.
    pub unsafe fn pool_free(&self, ptr: *mut c_void) {
        status_call!(self.amd.hsa_amd_memory_pool_free_fn, ptr);
    }

    /// `hsa_memory_copy`: whether the `len` bytes were copied.
    ///
    /// # Safety
    /// `src` must be valid for reading and `dst` for writing `len` bytes, in memory the runtime
    /// knows (allocated through it, or host memory it can copy).
    pub unsafe fn memory_copy(&self, dst: *mut c_void, src: *const c_void, len: usize) -> bool {
        status_call!(self.core.hsa_memory_copy_fn, dst, src, len) == HSA_STATUS_SUCCESS
    }

    /// Start and end (ns, system domain) of the dispatch that completed `signal` on `agent`.
    pub fn dispatch_time(&self, agent: hsa_agent_t, signal: hsa_signal_t) -> Option<(u64, u64)> {
        let mut time = hsa_amd_profiling_dispatch_time_t::default();
        let status = status_call!(
            self.amd.hsa_amd_profiling_get_dispatch_time_fn,
            agent,
            signal,
            &mut time
        );
        (status == HSA_STATUS_SUCCESS).then_some((time.start, time.end))
    }

    /// `hsa_system_get_major_extension_table` into `table`.
    pub fn extension_table<T: Default>(&self, extension: u16, major: u16) -> Option<T> {
        let mut table = T::default();
        let status = status_call!(
            self.core.hsa_system_get_major_extension_table_fn,
            extension,
            major,
            std::mem::size_of::<T>(),
            &mut table as *mut T as *mut c_void
        );
        (status == HSA_STATUS_SUCCESS).then_some(table)
    }

    /// Calls `hsa_executable_iterate_symbols` and collects `(kernel_object, symbol name,
    /// agent)` for every kernel symbol.
    pub fn kernel_symbols(&self, executable: hsa_executable_t) -> Vec<(u64, String, hsa_agent_t)> {
        unsafe extern "C" fn visit(
            _exec: hsa_executable_t,
            symbol: hsa_executable_symbol_t,
            data: *mut c_void,
        ) -> hsa_status_t {
            // SAFETY: `data` is the SymbolWalk passed below, alive for the iteration.
            unsafe { visit_symbol(symbol, data) }
        }
        let mut walk = SymbolWalk {
            hsa: self,
            out: Vec::new(),
        };
        status_call!(
            self.core.hsa_executable_iterate_symbols_fn,
            executable,
            Some(visit),
            &mut walk as *mut SymbolWalk as *mut c_void
        );
        walk.out
    }

    /// The kernel symbols of `executable` as rocprofiler-sdk walks them when it is frozen: each
    /// loaded code object in the loader's order (those without storage left out), then the
    /// kernel symbols of that code object's agent, `(kernel_object, symbol name, agent)` in
    /// `hsa_executable_iterate_agent_symbols`' order. `None` when the loader cannot list the
    /// code objects.
    pub fn kernel_symbols_by_code_object(
        &self,
        executable: hsa_executable_t,
        loader: &hsa_ven_amd_loader_1_03_pfn_t,
    ) -> Option<Vec<(u64, String, hsa_agent_t)>> {
        let (Some(iterate), Some(info)) = (
            loader.hsa_ven_amd_loader_executable_iterate_loaded_code_objects,
            loader.hsa_ven_amd_loader_loaded_code_object_get_info,
        ) else {
            return None;
        };
        unsafe extern "C" fn each_code_object(
            _exec: hsa_executable_t,
            code_object: hsa_loaded_code_object_t,
            data: *mut c_void,
        ) -> hsa_status_t {
            // SAFETY: `data` is the Vec passed below, alive for the iteration.
            let found = unsafe { &mut *(data as *mut Vec<hsa_loaded_code_object_t>) };
            found.push(code_object);
            HSA_STATUS_SUCCESS
        }
        let mut code_objects: Vec<hsa_loaded_code_object_t> = Vec::new();
        // SAFETY: the loader's entry with a callback that only appends to `code_objects`.
        let status = unsafe {
            iterate(
                executable,
                Some(each_code_object),
                &mut code_objects as *mut Vec<hsa_loaded_code_object_t> as *mut c_void,
            )
        };
        if status != HSA_STATUS_SUCCESS {
            return None;
        }
        unsafe extern "C" fn visit(
            _exec: hsa_executable_t,
            _agent: hsa_agent_t,
            symbol: hsa_executable_symbol_t,
            data: *mut c_void,
        ) -> hsa_status_t {
            // SAFETY: `data` is the SymbolWalk passed below, alive for the iteration.
            unsafe { visit_symbol(symbol, data) }
        }
        let mut walk = SymbolWalk {
            hsa: self,
            out: Vec::new(),
        };
        for code_object in code_objects {
            let mut storage: u32 = 0;
            let mut agent = hsa_agent_t::default();
            // SAFETY: the loader's entry; each attribute's value is the type given.
            let known = unsafe {
                info(
                    code_object,
                    HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_TYPE,
                    &mut storage as *mut u32 as *mut c_void,
                ) == HSA_STATUS_SUCCESS
                    && info(
                        code_object,
                        HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_AGENT,
                        &mut agent as *mut hsa_agent_t as *mut c_void,
                    ) == HSA_STATUS_SUCCESS
            };
            if !known || storage == 0 {
                continue;
            }
            status_call!(
                self.core.hsa_executable_iterate_agent_symbols_fn,
                executable,
                agent,
                Some(visit),
                &mut walk as *mut SymbolWalk as *mut c_void
            );
        }
        Some(walk.out)
    }

    fn symbol_info<T: Copy + Default>(
        &self,
        symbol: hsa_executable_symbol_t,
        attribute: u32,
    ) -> Option<T> {
        let mut value = T::default();
        let status = status_call!(
            self.core.hsa_executable_symbol_get_info_fn,
            symbol,
            attribute,
            &mut value as *mut T as *mut c_void
        );
        (status == HSA_STATUS_SUCCESS).then_some(value)
    }

    fn add_kernel_symbol(
        &self,
        symbol: hsa_executable_symbol_t,
        out: &mut Vec<(u64, String, hsa_agent_t)>,
    ) {
        const KERNEL: u32 = 1;
        if self.symbol_info::<u32>(symbol, HSA_EXECUTABLE_SYMBOL_INFO_TYPE) != Some(KERNEL) {
            return;
        }
        let (Some(length), Some(object)) = (
            self.symbol_info::<u32>(symbol, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH),
            self.symbol_info::<u64>(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT),
        ) else {
            return;
        };
        // The name is exactly `length` bytes, without a NUL; leave room for one anyway.
        let mut name = vec![0u8; length as usize + 1];
        let status = status_call!(
            self.core.hsa_executable_symbol_get_info_fn,
            symbol,
            HSA_EXECUTABLE_SYMBOL_INFO_NAME,
            name.as_mut_ptr() as *mut c_void
        );
        if status != HSA_STATUS_SUCCESS {
            return;
        }
        name.truncate(length as usize);
        let agent = self
            .symbol_info::<hsa_agent_t>(symbol, HSA_EXECUTABLE_SYMBOL_INFO_AGENT)
            .unwrap_or_default();
        out.push((object, String::from_utf8_lossy(&name).into_owned(), agent));
    }
}

/// The kernel symbols found so far by a symbol iteration.
struct SymbolWalk<'a> {
    hsa: &'a Hsa,
    out: Vec<(u64, String, hsa_agent_t)>,
}

/// Adds `symbol` to the [`SymbolWalk`] at `data` when it is a kernel; a panic stops the walk.
///
/// # Safety
/// `data` must point to a live `SymbolWalk` no one else uses during the call.
unsafe fn visit_symbol(symbol: hsa_executable_symbol_t, data: *mut c_void) -> hsa_status_t {
    let visited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the caller's promise.
        let walk = unsafe { &mut *(data as *mut SymbolWalk) };
        walk.hsa.add_kernel_symbol(symbol, &mut walk.out);
    }));
    if visited.is_err() {
        return HSA_STATUS_INFO_BREAK;
    }
    HSA_STATUS_SUCCESS
}
