//! Counter packets from aqlprofile: the v2 API when the library has it, the legacy
//! `hsa_ven_amd_aqlprofile_*` table (HSA extension 0x202) otherwise.
//!
//! For every GPU and event group the interposer keeps a pool of packet sets. A set is three
//! PM4-IB AQL packets (start, read, stop) with their command and output buffers; it is taken
//! from the pool when a dispatch is wrapped and returned once its values have been read, so
//! aqlprofile builds command buffers once per concurrently pending dispatch, not per dispatch.
//!
//! AMD's library keeps every v2 packet set a tool has not deleted in a static table whose
//! destructor returns the buffers through the tool's `dealloc_cb` at process exit, by which time
//! the runtime has unloaded the tool. So at unload every set is deleted and the library released
//! ([`GpuCounters::close`], [`Aqlprofile::close`]); whatever cannot be released keeps this library
//! loaded instead.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::agents::{Agents, Gpu};
use super::records::Counters;
use super::rewrite::{CounterPackets, CounterTemplate};
use super::runtime::Hsa;
use crate::hsa::*;
use crate::passes::plan_file::PlanEvent;

/// Why counters cannot be collected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CounterError {
    /// Neither API could be loaded.
    #[error("aqlprofile is not available: {0}")]
    Unavailable(String),
    /// A call failed.
    #[error("aqlprofile {call} failed on {arch} (status 0x{status:x}){detail}")]
    Call {
        /// The function.
        call: &'static str,
        /// The GPU.
        arch: String,
        /// Its status.
        status: hsa_status_t,
        /// `: <message>` from the library when it gave one.
        detail: String,
    },
    /// A block name of the plan is unknown to aqlprofile.
    #[error("aqlprofile does not know block {block} on {arch}")]
    UnknownBlock {
        /// The block.
        block: String,
        /// The GPU.
        arch: String,
    },
    /// No host memory for the buffers.
    #[error("no host memory pool for aqlprofile buffers")]
    NoMemory,
    /// The library was released at unload.
    #[error("aqlprofile was released at unload")]
    Released,
    /// The v2 API would serve this GPU with the block tables and topology of the first GPU
    /// registered (AMD's library caches them under a key it never sets).
    #[error("aqlprofile's v2 API would program this GPU with the block tables and topology of the first GPU registered ({first}) instead of its own ({this})")]
    SharedTables {
        /// The first registered GPU.
        first: AgentShape,
        /// This GPU.
        this: AgentShape,
    },
}

/// What aqlprofile's v2 API knows of a GPU: its architecture and topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentShape {
    /// gfx target.
    pub arch: String,
    /// XCCs.
    pub xcc: u32,
    /// Shader engines.
    pub se: u32,
    /// Compute units.
    pub cu: u32,
    /// Shader arrays per shader engine.
    pub sa_per_se: u32,
}

impl AgentShape {
    fn of(gpu: &Gpu) -> AgentShape {
        AgentShape {
            arch: gpu.arch.clone(),
            xcc: gpu.xcc,
            se: gpu.se,
            cu: gpu.cu,
            sa_per_se: gpu.sa_per_se,
        }
    }
}

impl std::fmt::Display for AgentShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} XCC, {} SE, {} CU, {} SA per SE",
            self.arch, self.xcc, self.se, self.cu, self.sa_per_se
        )
    }
}

struct V2 {
    /// The `dlopen` handle, closed by [`Aqlprofile::close`].
    library: usize,
    register_agent: aqlprofile_register_agent_fn,
    get_pmc_info: aqlprofile_get_pmc_info_fn,
    create_packets: aqlprofile_pmc_create_packets_fn,
    delete_packets: aqlprofile_pmc_delete_packets_fn,
    iterate_data: aqlprofile_pmc_iterate_data_fn,
}

enum Library {
    V2(V2),
    Legacy(hsa_ven_amd_aqlprofile_1_00_pfn_t),
}

/// Which aqlprofile API is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKind {
    /// `aqlprofile_*`.
    V2,
    /// `hsa_ven_amd_aqlprofile_*`.
    Legacy,
}

/// The loaded aqlprofile.
pub struct Aqlprofile {
    library: Library,
    /// False once released: every call into the library holds this for reading, so none runs
    /// after [`Aqlprofile::close`].
    open: RwLock<bool>,
    /// Packet sets created and not deleted yet, over every GPU.
    live: AtomicUsize,
    /// A v2 packet creation failed: AMD's library keeps whatever buffer it had allocated for it
    /// until process exit.
    creation_failed: AtomicBool,
    /// The first GPU registered with the v2 API, whose tables serve every later one.
    first_agent: Mutex<Option<AgentShape>>,
}

/// Looks a symbol up in `lib`.
fn symbol<T: Copy>(lib: *mut c_void, name: &std::ffi::CStr) -> Option<T> {
    // SAFETY: dlsym on a handle from dlopen with a NUL-terminated name.
    let sym = unsafe { libc::dlsym(lib, name.as_ptr()) };
    if sym.is_null() {
        return None;
    }
    debug_assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: `T` is the function pointer type of the symbol, as aqlprofile's header declares it.
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&sym) })
}

impl Aqlprofile {
    /// Loads the v2 API from `libhsa-amd-aqlprofile64.so`, or the legacy table through the
    /// runtime. `prefer` forces one of them (`RTL_PMC_AQLPROFILE_API`).
    pub fn load(hsa: &Hsa, prefer: Option<ApiKind>) -> Result<Aqlprofile, CounterError> {
        if prefer != Some(ApiKind::Legacy) {
            match Self::load_v2() {
                Ok(v2) => return Ok(Self::new(Library::V2(v2))),
                Err(e) if prefer == Some(ApiKind::V2) => return Err(CounterError::Unavailable(e)),
                Err(_) => {}
            }
        }
        let table: hsa_ven_amd_aqlprofile_1_00_pfn_t = hsa
            .extension_table(HSA_EXTENSION_AMD_AQLPROFILE, 1)
            .ok_or_else(|| {
                CounterError::Unavailable("the runtime has no aqlprofile extension (0x202)".into())
            })?;
        let complete = table.hsa_ven_amd_aqlprofile_start.is_some()
            && table.hsa_ven_amd_aqlprofile_stop.is_some()
            && table.hsa_ven_amd_aqlprofile_get_info.is_some()
            && table.hsa_ven_amd_aqlprofile_iterate_data.is_some();
        if !complete {
            return Err(CounterError::Unavailable(
                "the aqlprofile extension table is incomplete".into(),
            ));
        }
        Ok(Self::new(Library::Legacy(table)))
    }

    fn new(library: Library) -> Aqlprofile {
        Aqlprofile {
            library,
            open: RwLock::new(true),
            live: AtomicUsize::new(0),
            creation_failed: AtomicBool::new(false),
            first_agent: Mutex::new(None),
        }
    }

    /// Registers `gpu` with the v2 API (the legacy API names GPUs by their HSA agent). A GPU
    /// that differs from the first one registered is refused: the library would program and
    /// decode it with the first one's tables.
    fn register_agent(&self, gpu: &Gpu) -> Result<aqlprofile_agent_handle_t, CounterError> {
        let mut handle = aqlprofile_agent_handle_t::default();
        let mut first = self.first_agent.lock().unwrap_or_else(|p| p.into_inner());
        let this = AgentShape::of(gpu);
        let status = self.call(|library| {
            let Library::V2(v2) = library else {
                return Ok(HSA_STATUS_SUCCESS);
            };
            if let Some(first) = first.as_ref().filter(|f| **f != this) {
                return Err(CounterError::SharedTables {
                    first: first.clone(),
                    this: this.clone(),
                });
            }
            let name = CString::new(gpu.arch.clone()).unwrap_or_default();
            let info = aqlprofile_agent_info_t {
                agent_gfxip: name.as_ptr(),
                xcc_num: gpu.xcc,
                se_num: gpu.se,
                cu_num: gpu.cu,
                shader_arrays_per_se: gpu.sa_per_se,
            };
            // SAFETY: a valid info struct whose name outlives the call.
            let status = unsafe { (v2.register_agent)(&mut handle, &info) };
            if status == HSA_STATUS_SUCCESS && first.is_none() {
                *first = Some(this.clone());
            }
            Ok(status)
        });
        match status.unwrap_or(Err(CounterError::Released))? {
            HSA_STATUS_SUCCESS => Ok(handle),
            status => Err(CounterError::Call {
                call: "aqlprofile_register_agent",
                arch: gpu.arch.clone(),
                status,
                detail: String::new(),
            }),
        }
    }

    /// Runs `f` with the library, unless it was released.
    fn call<R>(&self, f: impl FnOnce(&Library) -> R) -> Option<R> {
        let open = self.open.read().unwrap_or_else(|p| p.into_inner());
        (*open).then(|| f(&self.library))
    }

    /// Releases the library (v2: `dlclose`; the legacy table belongs to the runtime), after
    /// every GPU's [`GpuCounters::close`]. Returns whether nothing of ours can be left in it:
    /// no packet set undeleted and no failed creation whose buffer it may keep.
    pub fn close(&self) -> bool {
        let mut open = self.open.write().unwrap_or_else(|p| p.into_inner());
        if *open {
            *open = false;
            if let Library::V2(v2) = &self.library {
                // SAFETY: our handle from dlopen, closed once; no call can run any more.
                unsafe { libc::dlclose(v2.library as *mut c_void) };
            }
        }
        self.live.load(Ordering::SeqCst) == 0 && !self.creation_failed.load(Ordering::SeqCst)
    }

    fn load_v2() -> Result<V2, String> {
        // SAFETY: dlopen with a NUL-terminated name.
        let lib = unsafe {
            libc::dlopen(
                c"libhsa-amd-aqlprofile64.so".as_ptr(),
                libc::RTLD_NOW | libc::RTLD_LOCAL,
            )
        };
        if lib.is_null() {
            return Err("cannot load libhsa-amd-aqlprofile64.so".into());
        }
        let missing = |name: &str| format!("libhsa-amd-aqlprofile64.so has no {name}");
        let v2 = (|| {
            Ok(V2 {
                library: lib as usize,
                register_agent: symbol(lib, c"aqlprofile_register_agent")
                    .ok_or_else(|| missing("aqlprofile_register_agent"))?,
                get_pmc_info: symbol(lib, c"aqlprofile_get_pmc_info")
                    .ok_or_else(|| missing("aqlprofile_get_pmc_info"))?,
                create_packets: symbol(lib, c"aqlprofile_pmc_create_packets")
                    .ok_or_else(|| missing("aqlprofile_pmc_create_packets"))?,
                delete_packets: symbol(lib, c"aqlprofile_pmc_delete_packets")
                    .ok_or_else(|| missing("aqlprofile_pmc_delete_packets"))?,
                iterate_data: symbol(lib, c"aqlprofile_pmc_iterate_data")
                    .ok_or_else(|| missing("aqlprofile_pmc_iterate_data"))?,
            })
        })();
        if v2.is_err() {
            // SAFETY: our handle, unused.
            unsafe { libc::dlclose(lib) };
        }
        v2
    }

    /// The API in use.
    pub fn kind(&self) -> ApiKind {
        match self.library {
            Library::V2(_) => ApiKind::V2,
            Library::Legacy(_) => ApiKind::Legacy,
        }
    }

    fn legacy_error(&self) -> String {
        let Library::Legacy(table) = &self.library else {
            return String::new();
        };
        let Some(error_string) = table.hsa_ven_amd_aqlprofile_error_string else {
            return String::new();
        };
        let mut text: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: the library writes a pointer to its own NUL-terminated message.
        if unsafe { error_string(&mut text) } != HSA_STATUS_SUCCESS || text.is_null() {
            return String::new();
        }
        // SAFETY: a NUL-terminated string owned by the library.
        format!(
            ": {}",
            unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy()
        )
    }
}

/// Host memory given to aqlprofile for one GPU: a host pool the GPU is allowed to access.
/// Never freed: aqlprofile may call back with it until the process exits.
struct Memory {
    hsa: Arc<Hsa>,
    pool: hsa_amd_memory_pool_t,
    gpu: hsa_agent_t,
    /// Set when packet sets the GPU may still write are deleted: their buffers are kept.
    keep: AtomicBool,
}

impl Memory {
    fn allocate(&self, size: usize) -> *mut c_void {
        let (Some(allocate), Some(allow)) = (
            self.hsa.amd().hsa_amd_memory_pool_allocate_fn,
            self.hsa.amd().hsa_amd_agents_allow_access_fn,
        ) else {
            return std::ptr::null_mut();
        };
        let size = size.max(64);
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: original entries; `ptr` receives the allocation.
        unsafe {
            if allocate(self.pool, size, 0, &mut ptr) != HSA_STATUS_SUCCESS || ptr.is_null() {
                return std::ptr::null_mut();
            }
            allow(1, &self.gpu, std::ptr::null(), ptr);
            std::ptr::write_bytes(ptr as *mut u8, 0, size);
        }
        ptr
    }

    fn free(&self, ptr: *mut c_void) {
        if self.keep.load(Ordering::SeqCst) {
            return;
        }
        if let Some(free) = self.hsa.amd().hsa_amd_memory_pool_free_fn {
            // SAFETY: memory from `allocate`.
            unsafe { free(ptr) };
        }
    }
}

unsafe extern "C" fn alloc_cb(
    ptr: *mut *mut c_void,
    size: u64,
    _flags: u32,
    userdata: *mut c_void,
) -> hsa_status_t {
    let result = std::panic::catch_unwind(|| {
        // SAFETY: `userdata` is the GPU's Memory, never freed.
        let memory = unsafe { &*(userdata as *const Memory) };
        memory.allocate(size as usize)
    });
    match result {
        Ok(p) if !p.is_null() => {
            // SAFETY: aqlprofile passes a writable pointer slot.
            unsafe { *ptr = p };
            HSA_STATUS_SUCCESS
        }
        _ => HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    }
}

unsafe extern "C" fn dealloc_cb(ptr: *mut c_void, userdata: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: as in `alloc_cb`.
        let memory = unsafe { &*(userdata as *const Memory) };
        memory.free(ptr);
    });
}

unsafe extern "C" fn memcpy_cb(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    _userdata: *mut c_void,
) -> hsa_status_t {
    // SAFETY: host-accessible buffers of at least `size` bytes, as aqlprofile asks.
    unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, size) };
    HSA_STATUS_SUCCESS
}

/// The events of a group, expanded to every instance of their blocks.
#[derive(Debug)]
struct GroupEvents {
    /// Every event on every instance of its block, in programming order, as the v2 API takes
    /// and reports them (the legacy API ignores the flags).
    events: Vec<aqlprofile_pmc_event_t>,
    /// The plan event of each entry of `events`.
    plan_event: Vec<usize>,
    /// The first entry of `events` for each event.
    by_event: HashMap<aqlprofile_pmc_event_t, usize>,
    /// The first entry of `events` for each (block, event, instance), for the legacy API,
    /// which reports no flags.
    by_legacy_event: HashMap<(u32, u32, u32), usize>,
    /// Samples each plan event had last time: the next read reserves as much.
    sizes: Vec<AtomicUsize>,
    /// How the v2 API reported the samples last time, and where their values go.
    reader: Mutex<Option<Reader>>,
}

/// How the v2 API reported a group's samples, and where each value goes in the record: a read
/// whose samples come as the layout says has the data callback store each value straight into
/// its place among the record's values (plan events laid end to end), so nothing is matched,
/// sorted or copied per sample afterwards.
///
/// Every read of a group's packet sets reports the same samples in the same order (the library
/// decodes the same events the same way), so a read checks the layout by its count and by the
/// event and sample id of its first and last sample, in the callback's rare path; a read that
/// differs in any of these is read again and matched sample by sample.
#[derive(Debug)]
struct Reader {
    /// Owns the values of the last read: per plan event, its samples, laid end to end. Only
    /// reached through `base`, which the slots point into.
    values: Vec<u64>,
    /// `values`' first element.
    base: *mut u64,
    /// Samples per plan event.
    sizes: Vec<usize>,
    /// For each sample in reported order, where its value goes (into `values`).
    slots: Box<[*mut u64]>,
    /// Positions in reported order checked (the first and the last), with the event and sample
    /// id expected there, as [`sample_key`] packs them.
    checks: Box<[(usize, [u64; 3])]>,
}

// SAFETY: the pointers point into the reader's own `values`, whose heap buffer never moves (it
// is never resized); the reader is used by one thread at a time, behind its group's mutex.
unsafe impl Send for Reader {}

impl Reader {
    /// The reader of samples reported as `reported`, whose plan event each is of `plan_event`
    /// (entries of `group.events`), the samples of each plan event in order.
    fn new(reported: &V2Samples, plan_event: &[usize], plan_events: usize) -> Reader {
        let mut sizes = vec![0; plan_events];
        for &p in plan_event {
            sizes[p] += 1;
        }
        let mut values = vec![0u64; plan_event.len()];
        let base = values.as_mut_ptr();
        let mut next: Vec<usize> = sizes
            .iter()
            .scan(0, |offset, &n| {
                let first = *offset;
                *offset += n;
                Some(first)
            })
            .collect();
        let mut checks = Vec::new();
        let mut slots = Vec::with_capacity(plan_event.len());
        for (i, &p) in plan_event.iter().enumerate() {
            let (event, id, _) = reported[i];
            if i == 0 || i + 1 == plan_event.len() {
                checks.push((i, sample_key(event, id)));
            }
            // SAFETY: `next[p]` < the end of plan event p's values, within `values`.
            slots.push(unsafe { base.add(next[p]) });
            next[p] += 1;
        }
        Reader {
            values,
            base,
            sizes,
            slots: slots.into(),
            checks: checks.into(),
        }
    }

    /// Reads a v2 packet set's values into place: whether the library reported the samples
    /// the layout expects (else the values are not those of this read).
    fn read(
        &mut self,
        iterate: aqlprofile_pmc_iterate_data_fn,
        handle: aqlprofile_handle_t,
    ) -> bool {
        let slots = self.slots.as_ptr_range();
        let checks = self.checks.as_ptr_range();
        let mut filling = Filling {
            next: slots.start,
            stop: slots.end,
            slots: slots.start,
            end: slots.end,
            checks: checks.start,
            checks_end: checks.end,
            wrong: false,
        };
        filling.stop = filling.next_stop();
        let data = &mut filling as *mut Filling as *mut c_void;
        // SAFETY: a live handle; `filling` and the slots and values it points into outlive the
        // call.
        unsafe { iterate(handle, Some(v2_slotted_sample), data) };
        !filling.wrong && filling.next == slots.end && filling.checks == checks.end
    }

    /// The values of the last read.
    fn counters(&self) -> Counters<'_> {
        // SAFETY: `base` is `values`' buffer, of `values.len()` elements, not written while
        // the returned view lives (reads take `&mut self`).
        let values = unsafe { std::slice::from_raw_parts(self.base, self.values.len()) };
        Counters::new(values, &self.sizes)
    }
}

/// What the v2 data callback of [`Reader::read`] goes through: pointers into the reader's slots
/// and checks, and whether a sample was not the one expected.
struct Filling {
    /// The slot of the next sample.
    next: *const *mut u64,
    /// Where the callback looks closer: the next checked position, or the end of the slots.
    stop: *const *mut u64,
    /// The slots.
    slots: *const *mut u64,
    /// Their end.
    end: *const *mut u64,
    /// The next check.
    checks: *const (usize, [u64; 3]),
    /// The end of the checks.
    checks_end: *const (usize, [u64; 3]),
    /// A sample was not the one the layout has at its position, or came after the last.
    wrong: bool,
}

impl Filling {
    /// The slot of the next check, or the end.
    fn next_stop(&self) -> *const *mut u64 {
        if self.checks == self.checks_end {
            return self.end;
        }
        // SAFETY: `checks` is before `checks_end`; a checked position is within the slots.
        unsafe { self.slots.add((*self.checks).0) }
    }

    /// A sample at a checked position, or beyond the last: stored when it is the one expected,
    /// else the iteration stops.
    #[cold]
    #[inline(never)]
    fn look_closer(
        &mut self,
        event: aqlprofile_pmc_event_t,
        sample: u64,
        value: u64,
    ) -> hsa_status_t {
        let expected = match self.wrong || self.checks == self.checks_end || self.next == self.end {
            true => None,
            // SAFETY: `checks` is before `checks_end`.
            false => Some(unsafe { *self.checks }),
        };
        let at = (self.next as usize - self.slots as usize) / std::mem::size_of::<*mut u64>();
        match expected {
            Some((position, key)) if position == at && key == sample_key(event, sample) => {
                // SAFETY: `next` is before the end of the slots, each pointing into the values;
                // `checks` before its end.
                unsafe {
                    **self.next = value;
                    self.next = self.next.add(1);
                    self.checks = self.checks.add(1);
                }
                self.stop = self.next_stop();
                HSA_STATUS_SUCCESS
            }
            _ => {
                self.wrong = true;
                HSA_STATUS_INFO_BREAK
            }
        }
    }
}

/// Stores one sample of a [`Reader::read`]: a comparison, a store through its slot, and the
/// next slot; the rest (checked positions, samples beyond the last) in
/// [`Filling::look_closer`]. Nothing allocates or panics.
unsafe extern "C" fn v2_slotted_sample(
    event: aqlprofile_pmc_event_t,
    sample: u64,
    value: u64,
    data: *mut c_void,
) -> hsa_status_t {
    // SAFETY: `data` is the Filling of `Reader::read`, alive for the iteration.
    let filling = unsafe { &mut *(data as *mut Filling) };
    if filling.next == filling.stop {
        return filling.look_closer(event, sample, value);
    }
    // SAFETY: `next` is before `stop`, at most the end of the slots; each slot points into the
    // reader's values.
    unsafe {
        **filling.next = value;
        filling.next = filling.next.add(1);
    }
    HSA_STATUS_SUCCESS
}

impl GroupEvents {
    /// `events` with the index of its plan event each, in programming order.
    fn new(events: Vec<(usize, aqlprofile_pmc_event_t)>, plan_events: usize) -> GroupEvents {
        let mut by_event = HashMap::new();
        let mut by_legacy_event = HashMap::new();
        for (i, (_, e)) in events.iter().enumerate() {
            by_event.entry(*e).or_insert(i);
            by_legacy_event
                .entry((e.block_name, e.event_id, e.block_index))
                .or_insert(i);
        }
        GroupEvents {
            plan_event: events.iter().map(|&(plan, _)| plan).collect(),
            events: events.into_iter().map(|(_, e)| e).collect(),
            by_event,
            by_legacy_event,
            sizes: (0..plan_events).map(|_| AtomicUsize::new(0)).collect(),
            reader: Mutex::new(None),
        }
    }

    /// Remembers how v2 samples that arrived in order were reported; samples of events the
    /// group does not have leave nothing to remember.
    fn remember_v2_layout(&self, reported: &V2Samples) {
        let mut samples = Samples::new(self, false);
        let mut plan_event = Vec::with_capacity(reported.len());
        for (event, ..) in reported {
            let Some(entry) = samples.entry(event) else {
                return;
            };
            plan_event.push(self.plan_event[entry]);
        }
        let reader = Reader::new(reported, &plan_event, self.sizes.len());
        *self.reader.lock().unwrap_or_else(|p| p.into_inner()) = Some(reader);
    }
}

/// Three AQL packets and the buffers behind them, reusable after their values were read.
pub struct PacketSet {
    /// Start packet (header and completion signal still to be set).
    pub start: hsa_ext_amd_aql_pm4_packet_t,
    /// Read packet, when the library has one.
    pub read: Option<hsa_ext_amd_aql_pm4_packet_t>,
    /// Stop packet (header and completion signal still to be set).
    pub stop: hsa_ext_amd_aql_pm4_packet_t,
    owner: Owner,
    /// Which group of the GPU it programs.
    pub group: usize,
    /// The packets of a dispatch counted with it, built once.
    pub template: CounterTemplate,
}

impl PacketSet {
    /// aqlprofile's packets.
    pub fn packets(&self) -> CounterPackets {
        CounterPackets {
            start: self.start,
            read: self.read,
            stop: self.stop,
        }
    }

    /// The set with its template built from its packets.
    fn templated(mut self) -> PacketSet {
        self.template = CounterTemplate::new(&self.packets());
        self
    }
}

enum Owner {
    V2(aqlprofile_handle_t),
    Legacy {
        profile: hsa_ven_amd_aqlprofile_profile_t,
        events: Vec<hsa_ven_amd_aqlprofile_event_t>,
    },
}

// SAFETY: the raw pointers are host buffers owned by the set; it is used by one thread at a
// time (taken from and returned to a pool).
unsafe impl Send for PacketSet {}

/// Counter collection on one GPU: its event groups and packet set pools.
pub struct GpuCounters {
    aqlprofile: Arc<Aqlprofile>,
    arch: String,
    agent: hsa_agent_t,
    v2_agent: aqlprofile_agent_handle_t,
    memory: &'static Memory,
    groups: Vec<GroupEvents>,
    pools: Mutex<Pools>,
}

/// The packet sets a GPU is not using, boxed: each moves between the pool, the dispatch path
/// and the completion worker as a pointer.
#[derive(Default)]
#[allow(clippy::vec_box)]
struct Pools {
    /// Per group, sets ready for a dispatch.
    ready: Vec<Vec<Box<PacketSet>>>,
    /// Sets of dispatches that never completed: the GPU may still write their buffers.
    abandoned: Vec<Box<PacketSet>>,
    /// After [`GpuCounters::close`]: sets given back are deleted at once.
    closed: bool,
    /// Per group, how many dispatches found no set ready since the worker last made spares:
    /// the worker makes as many more, so that the dispatch path makes sets only while the
    /// pool grows to what is in flight.
    short: Vec<usize>,
}

// SAFETY: the pools are behind a mutex; the rest is read-only after construction.
unsafe impl Send for GpuCounters {}
// SAFETY: see `Send`.
unsafe impl Sync for GpuCounters {}

/// What the counter catalog knows of `gpu`'s blocks, for capping the legacy API's instance
/// counts: the catalog and `gpu`'s topology in its terms.
fn catalog_blocks(gpu: &Gpu) -> Option<(rtl_pmc_counters::Catalog, rtl_pmc_counters::Topology)> {
    let catalog = rtl_pmc_counters::Catalog::builtin(&gpu.arch).ok()?;
    let properties = [
        ("simd_count", gpu.cu),
        ("simd_per_cu", 1),
        ("array_count", gpu.se * gpu.sa_per_se),
        ("simd_arrays_per_engine", gpu.sa_per_se),
        ("num_xcc", gpu.xcc),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_string(), u64::from(value)))
    .collect();
    let topology = rtl_pmc_counters::Topology::new(properties).ok()?;
    Some((catalog, topology))
}

impl GpuCounters {
    /// Registers `gpu` with aqlprofile and expands `groups` (plan events) to every block
    /// instance. Creates the first packet set of each group to surface errors now.
    pub fn new(
        aqlprofile: Arc<Aqlprofile>,
        hsa: Arc<Hsa>,
        agents: &Agents,
        gpu: &Gpu,
        groups: &[Vec<PlanEvent>],
    ) -> Result<GpuCounters, CounterError> {
        let pool = *agents.host_pools.first().ok_or(CounterError::NoMemory)?;
        let v2_agent = aqlprofile.register_agent(gpu)?;
        let memory: &'static Memory = Box::leak(Box::new(Memory {
            hsa,
            pool,
            gpu: gpu.agent,
            keep: AtomicBool::new(false),
        }));
        let mut counters = GpuCounters {
            aqlprofile,
            arch: gpu.arch.clone(),
            agent: gpu.agent,
            v2_agent,
            memory,
            groups: Vec::new(),
            pools: Mutex::new(Pools::default()),
        };
        let accumulates = groups.iter().flatten().any(|e| e.flags != 0);
        if accumulates && counters.aqlprofile.kind() == ApiKind::Legacy {
            super::warn_once(
                "legacy-flags",
                "the legacy aqlprofile API cannot accumulate SQ events; accumulated counters read their plain events",
            );
        }
        let legacy = if counters.aqlprofile.kind() == ApiKind::Legacy {
            catalog_blocks(gpu)
        } else {
            None
        };
        let mut instance_counts: HashMap<String, u32> = HashMap::new();
        for group in groups {
            let mut instances = Vec::new();
            for (i, event) in group.iter().enumerate() {
                let count = match instance_counts.get(&event.block) {
                    Some(&n) => n,
                    None => {
                        let n = counters.instances(&event.block)?;
                        // AMD's legacy API reports the table count of the blocks whose
                        // instances follow the CU count (TA, TD, TCP: 16), where its v2 API and
                        // the catalog count the instances the GPU has.
                        let catalog_count = legacy.as_ref().and_then(|(catalog, topology)| {
                            catalog.block(&event.block).map(|b| b.instances(topology))
                        });
                        let n = catalog_count.map_or(n, |c| n.min(c));
                        instance_counts.insert(event.block.clone(), n);
                        n
                    }
                };
                for block_index in 0..count.max(1) {
                    let programmed = aqlprofile_pmc_event_t {
                        block_index,
                        event_id: event.event,
                        flags: event.flags,
                        block_name: event.block_id,
                    };
                    instances.push((i, programmed));
                }
            }
            counters
                .groups
                .push(GroupEvents::new(instances, group.len()));
        }
        for g in 0..counters.groups.len() {
            let set = counters.create(g)?;
            // Pooled at once, so that a later failure still deletes it.
            let mut pools = counters.pools.lock().unwrap_or_else(|p| p.into_inner());
            pools.ready.push(vec![set]);
        }
        counters.presize();
        Ok(counters)
    }

    /// Fills each group's pool to [`PRESIZED_SETS`] sets, so that the dispatch path does not
    /// make sets while the pool grows to what is in flight; a set that cannot be made now is
    /// made (or its failure reported) when a dispatch needs it.
    fn presize(&self) {
        self.make_spares(vec![PRESIZED_SETS - 1; self.groups.len()]);
    }

    /// The number of instances of `block` on this GPU, as aqlprofile's BLOCK_ID query reports it.
    fn instances(&self, block: &str) -> Result<u32, CounterError> {
        let name = CString::new(block).unwrap_or_default();
        let mut query = hsa_ven_amd_aqlprofile_id_query_t {
            name: name.as_ptr(),
            id: 0,
            instance_count: 0,
        };
        let query_ptr = &mut query as *mut hsa_ven_amd_aqlprofile_id_query_t as *mut c_void;
        let status = self.aqlprofile.call(|library| match library {
            Library::V2(v2) => {
                let profile = aqlprofile_pmc_profile_t {
                    agent: self.v2_agent,
                    events: std::ptr::null(),
                    event_count: 0,
                };
                // SAFETY: a valid profile and query whose name outlives the call.
                unsafe {
                    (v2.get_pmc_info)(&profile, HSA_VEN_AMD_AQLPROFILE_INFO_BLOCK_ID, query_ptr)
                }
            }
            Library::Legacy(table) => {
                let profile = self.legacy_profile(&[]);
                match table.hsa_ven_amd_aqlprofile_get_info {
                    // SAFETY: as above.
                    Some(get_info) => unsafe {
                        get_info(&profile, HSA_VEN_AMD_AQLPROFILE_INFO_BLOCK_ID, query_ptr)
                    },
                    None => HSA_STATUS_ERROR,
                }
            }
        });
        if status != Some(HSA_STATUS_SUCCESS) {
            return Err(CounterError::UnknownBlock {
                block: block.to_string(),
                arch: self.arch.clone(),
            });
        }
        Ok(query.instance_count)
    }

    fn legacy_profile(
        &self,
        events: &[hsa_ven_amd_aqlprofile_event_t],
    ) -> hsa_ven_amd_aqlprofile_profile_t {
        let empty = hsa_ven_amd_aqlprofile_descriptor_t {
            ptr: std::ptr::null_mut(),
            size: 0,
        };
        hsa_ven_amd_aqlprofile_profile_t {
            agent: self.agent,
            type_: HSA_VEN_AMD_AQLPROFILE_EVENT_TYPE_PMC,
            events: if events.is_empty() {
                std::ptr::null()
            } else {
                events.as_ptr()
            },
            event_count: events.len() as u32,
            parameters: std::ptr::null(),
            parameter_count: 0,
            output_buffer: empty,
            command_buffer: empty,
        }
    }

    fn error(&self, call: &'static str, status: hsa_status_t) -> CounterError {
        CounterError::Call {
            call,
            arch: self.arch.clone(),
            status,
            detail: self.aqlprofile.legacy_error(),
        }
    }

    /// Builds a new packet set for group `group`, boxed: a dispatch moves it to the completion
    /// worker and back to the pool, a pointer instead of its packets.
    fn create(&self, group: usize) -> Result<Box<PacketSet>, CounterError> {
        let created = self
            .aqlprofile
            .call(|library| match library {
                Library::V2(v2) => self.create_v2(v2, group),
                Library::Legacy(table) => self.create_legacy(table, group),
            })
            .unwrap_or(Err(CounterError::Released));
        if created.is_ok() {
            self.aqlprofile.live.fetch_add(1, Ordering::SeqCst);
        }
        created.map(Box::new)
    }

    fn create_v2(&self, v2: &V2, group: usize) -> Result<PacketSet, CounterError> {
        let events = &self.groups[group].events;
        let profile = aqlprofile_pmc_profile_t {
            agent: self.v2_agent,
            events: events.as_ptr(),
            event_count: events.len() as u32,
        };
        let mut handle = aqlprofile_handle_t::default();
        let mut packets = aqlprofile_pmc_aql_packets_t::default();
        // SAFETY: valid out-pointers; `memory` is never freed.
        let status = unsafe {
            (v2.create_packets)(
                &mut handle,
                &mut packets,
                profile,
                Some(alloc_cb),
                Some(dealloc_cb),
                Some(memcpy_cb),
                self.memory as *const Memory as *mut c_void,
            )
        };
        if status != HSA_STATUS_SUCCESS {
            self.aqlprofile
                .creation_failed
                .store(true, Ordering::SeqCst);
            return Err(self.error("aqlprofile_pmc_create_packets", status));
        }
        let set = PacketSet {
            start: packets.start_packet,
            read: Some(packets.read_packet),
            stop: packets.stop_packet,
            owner: Owner::V2(handle),
            group,
            template: CounterTemplate::default(),
        };
        Ok(set.templated())
    }

    fn create_legacy(
        &self,
        table: &hsa_ven_amd_aqlprofile_1_00_pfn_t,
        group: usize,
    ) -> Result<PacketSet, CounterError> {
        let events: Vec<hsa_ven_amd_aqlprofile_event_t> = self.groups[group]
            .events
            .iter()
            .map(|e| hsa_ven_amd_aqlprofile_event_t {
                block_name: e.block_name,
                block_index: e.block_index,
                counter_id: e.event_id,
            })
            .collect();
        let (Some(start), Some(stop)) = (
            table.hsa_ven_amd_aqlprofile_start,
            table.hsa_ven_amd_aqlprofile_stop,
        ) else {
            return Err(self.error("hsa_ven_amd_aqlprofile_start", HSA_STATUS_ERROR));
        };
        let mut profile = self.legacy_profile(&events);
        let mut packet = hsa_ext_amd_aql_pm4_packet_t::default();
        // SAFETY: with NULL buffers, start only reports the sizes it needs.
        let status = unsafe { start(&mut profile, &mut packet) };
        if status != HSA_STATUS_SUCCESS {
            return Err(self.error("hsa_ven_amd_aqlprofile_start (sizes)", status));
        }
        let command = self.memory.allocate(profile.command_buffer.size as usize);
        let output = self.memory.allocate(profile.output_buffer.size as usize);
        if command.is_null() || output.is_null() {
            for p in [command, output] {
                if !p.is_null() {
                    self.memory.free(p);
                }
            }
            return Err(CounterError::NoMemory);
        }
        profile.command_buffer.ptr = command;
        profile.output_buffer.ptr = output;
        let mut set = PacketSet {
            start: hsa_ext_amd_aql_pm4_packet_t::default(),
            read: None,
            stop: hsa_ext_amd_aql_pm4_packet_t::default(),
            owner: Owner::Legacy { profile, events },
            group,
            template: CounterTemplate::default(),
        };
        let Owner::Legacy { profile, events } = &mut set.owner else {
            unreachable!("just built as legacy");
        };
        profile.events = events.as_ptr();
        // SAFETY: the profile's buffers are allocated with the sizes the library asked for.
        let status = unsafe { start(profile, &mut set.start) };
        if status != HSA_STATUS_SUCCESS {
            let error = self.error("hsa_ven_amd_aqlprofile_start", status);
            self.free_buffers(set);
            return Err(error);
        }
        // SAFETY: as above.
        let status = unsafe { stop(profile, &mut set.stop) };
        if status != HSA_STATUS_SUCCESS {
            let error = self.error("hsa_ven_amd_aqlprofile_stop", status);
            self.free_buffers(set);
            return Err(error);
        }
        if let Some(read) = table.hsa_ven_amd_aqlprofile_read {
            let mut packet = hsa_ext_amd_aql_pm4_packet_t::default();
            // SAFETY: as above. A failure means the read API is off: stop copies instead.
            if unsafe { read(profile, &mut packet) } == HSA_STATUS_SUCCESS {
                set.read = Some(packet);
            }
        }
        Ok(set.templated())
    }

    /// Frees the buffers of a packet set that the legacy library owns no part of.
    fn free_buffers(&self, set: PacketSet) {
        if let Owner::Legacy { profile, .. } = set.owner {
            self.memory.free(profile.command_buffer.ptr);
            self.memory.free(profile.output_buffer.ptr);
        }
    }

    /// Deletes a packet set: v2 through `aqlprofile_pmc_delete_packets` (which returns its
    /// buffers through `dealloc_cb`), legacy by freeing its buffers.
    fn release(&self, set: Box<PacketSet>) {
        let set = *set;
        let released = self.aqlprofile.call(|library| match (library, set.owner) {
            (Library::V2(v2), Owner::V2(handle)) => {
                // SAFETY: a handle from create_packets, deleted once.
                unsafe { (v2.delete_packets)(handle) }
            }
            (_, owner @ Owner::Legacy { .. }) => self.free_buffers(PacketSet { owner, ..set }),
            _ => {}
        });
        if released.is_some() {
            self.aqlprofile.live.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// The number of event groups.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// A packet set for `group`, from the pool or new.
    pub fn take(&self, group: usize) -> Result<Box<PacketSet>, CounterError> {
        {
            let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
            if pools.closed {
                return Err(CounterError::Released);
            }
            if let Some(set) = pools.ready.get_mut(group).and_then(Vec::pop) {
                return Ok(set);
            }
            if pools.short.len() <= group {
                pools.short.resize(group + 1, 0);
            }
            pools.short[group] += 1;
        }
        self.create(group)
    }

    /// Returns a packet set whose values were read.
    pub fn give_back(&self, set: Box<PacketSet>) {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if pools.closed {
            drop(pools);
            return self.release(set);
        }
        while pools.ready.len() <= set.group {
            pools.ready.push(Vec::new());
        }
        pools.ready[set.group].push(set);
    }

    /// Returns packet sets whose values were read as [`GpuCounters::give_back`] does, under one
    /// lock, leaving `sets` empty; then makes the spare sets the dispatch path found missing, and those that keep each
    /// group's pool at [`LOW_WATER`].
    #[allow(clippy::vec_box)]
    pub fn give_back_all(&self, sets: &mut Vec<Box<PacketSet>>) {
        let Some(mut pools) = self.put_back(sets) else {
            return;
        };
        let mut short = std::mem::take(&mut pools.short);
        short.resize(self.groups.len(), 0);
        for (group, n) in short.iter_mut().enumerate() {
            let ready = pools.ready.get(group).map_or(0, Vec::len);
            *n = (*n).max(LOW_WATER.saturating_sub(ready));
        }
        drop(pools);
        self.make_spares(short);
    }

    /// Returns packet sets whose values were read, under one lock, leaving `sets` empty, and
    /// makes no spares: the worker returns a round's sets this way before it completes an
    /// application's signal, so that the dispatches the application submits next find them.
    #[allow(clippy::vec_box)]
    pub fn return_all(&self, sets: &mut Vec<Box<PacketSet>>) {
        drop(self.put_back(sets));
    }

    /// Puts `sets` into their pools; the pools, still locked, unless closed (the sets are
    /// deleted then).
    #[allow(clippy::vec_box)]
    fn put_back(&self, sets: &mut Vec<Box<PacketSet>>) -> Option<std::sync::MutexGuard<'_, Pools>> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if pools.closed {
            drop(pools);
            sets.drain(..).for_each(|set| self.release(set));
            return None;
        }
        for set in sets.drain(..) {
            while pools.ready.len() <= set.group {
                pools.ready.push(Vec::new());
            }
            pools.ready[set.group].push(set);
        }
        Some(pools)
    }

    /// Makes `short[g]` more sets of each group `g` (at most [`SPARES_PER_ROUND`]) for the pool.
    fn make_spares(&self, short: Vec<usize>) {
        for (group, &n) in short.iter().enumerate() {
            for _ in 0..n.min(SPARES_PER_ROUND) {
                let Ok(set) = self.create(group) else { return };
                let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
                if pools.closed {
                    drop(pools);
                    return self.release(set);
                }
                while pools.ready.len() <= group {
                    pools.ready.push(Vec::new());
                }
                pools.ready[group].push(set);
            }
        }
    }

    /// Takes back the packet set of a dispatch that never completed: it is deleted at
    /// [`GpuCounters::close`], keeping its buffers, which the GPU may still write.
    pub fn abandon(&self, set: Box<PacketSet>) {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        pools.abandoned.push(set);
        if pools.closed {
            drop(pools);
            self.close();
        }
    }

    /// Deletes every packet set of the pools (at unload, after the last dispatch completed or
    /// was abandoned); sets given back later are deleted at once.
    pub fn close(&self) {
        let (ready, abandoned) = {
            let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
            pools.closed = true;
            (
                std::mem::take(&mut pools.ready),
                std::mem::take(&mut pools.abandoned),
            )
        };
        for set in ready.into_iter().flatten() {
            self.release(set);
        }
        if !abandoned.is_empty() {
            self.memory.keep.store(true, Ordering::SeqCst);
            for set in abandoned {
                self.release(set);
            }
        }
    }

    /// Reads the values of a completed packet set and gives them to `take`: per plan event,
    /// per sample in aqlprofile's (v2) sample order: XCC, then block instance, then position
    /// within the instance. Once a group's layout is known, a read stores the values where
    /// `take` finds them, allocating and copying nothing.
    pub fn read<R>(&self, set: &PacketSet, take: impl FnOnce(Counters<'_>) -> R) -> R {
        let group = &self.groups[set.group];
        if let Owner::V2(handle) = &set.owner {
            let mut reader = group.reader.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(reader) = reader.as_mut() {
                let read = self.aqlprofile.call(|library| match library {
                    Library::V2(v2) => reader.read(v2.iterate_data, *handle),
                    Library::Legacy(_) => false,
                });
                if read == Some(true) {
                    return take(reader.counters());
                }
            }
        }
        let values = self.values(set);
        let sizes: Vec<usize> = values.iter().map(Vec::len).collect();
        take(Counters::new(&values.concat(), &sizes))
    }

    /// The values of a completed packet set, matched sample by sample, as [`GpuCounters::read`]
    /// gives them; a v2 read whose samples came in order leaves its group's layout for the
    /// next reads.
    fn values(&self, set: &PacketSet) -> Vec<Vec<u64>> {
        let group = &self.groups[set.group];
        let read = self.aqlprofile.call(|library| match (library, &set.owner) {
            (Library::V2(v2), Owner::V2(handle)) => {
                let capacity = group.sizes.iter().map(|s| s.load(Ordering::Relaxed)).sum();
                let mut reported: V2Samples = Vec::with_capacity(capacity);
                let data = &mut reported as *mut V2Samples as *mut c_void;
                // SAFETY: a live handle; `reported` outlives the call.
                unsafe { (v2.iterate_data)(*handle, Some(v2_sample), data) };
                let samples = Samples::new(group, false).sort_v2(&reported);
                if !samples.unsorted {
                    group.remember_v2_layout(&reported);
                    return Some(samples.into_values());
                }
                Some(Samples::new(group, true).sort_v2(&reported).into_values())
            }
            (Library::Legacy(table), Owner::Legacy { profile, .. }) => {
                let iterate = table.hsa_ven_amd_aqlprofile_iterate_data?;
                fn read<'a>(
                    iterate: LegacyIterate,
                    profile: &hsa_ven_amd_aqlprofile_profile_t,
                    mut samples: Samples<'a>,
                ) -> Samples<'a> {
                    let data = &mut samples as *mut Samples as *mut c_void;
                    // SAFETY: a live profile; `samples` outlives the call.
                    unsafe { iterate(profile, Some(legacy_sample), data) };
                    samples
                }
                let samples = read(iterate, profile, Samples::new(group, false));
                if !samples.unsorted {
                    return Some(samples.into_values());
                }
                Some(read(iterate, profile, Samples::new(group, true)).into_values())
            }
            _ => None,
        });
        read.flatten()
            .unwrap_or_else(|| vec![Vec::new(); group.sizes.len()])
    }
}

impl Drop for GpuCounters {
    fn drop(&mut self) {
        self.close();
    }
}

/// The values of one plan event as they arrive.
#[derive(Default)]
struct EventSamples {
    values: Vec<u64>,
    /// The sample keys, when [`Samples::keyed`].
    keys: Vec<u64>,
    /// The key of the last sample.
    last: u64,
}

impl EventSamples {
    fn into_values(self) -> Vec<u64> {
        if self.keys.is_sorted() {
            return self.values;
        }
        let mut keyed: Vec<(u64, u64)> = self.keys.into_iter().zip(self.values).collect();
        keyed.sort_by_key(|&(key, _)| key);
        keyed.into_iter().map(|(_, v)| v).collect()
    }
}

/// Legacy sample ids below this are counted in a table (they number the samples of one
/// instance on one XCC, so they are small).
const SEEN_IDS: u32 = 1024;

/// The packet sets of each group made when a GPU's counters are set up: one batch of 64
/// dispatches in flight needs no more.
const PRESIZED_SETS: usize = 64;

/// The fewest packet sets of a group the completion worker leaves ready after a round: it
/// makes more whenever dispatches in flight take the pool below this, so that the dispatch
/// path finds a set ready instead of making one while the worker is behind.
const LOW_WATER: usize = PRESIZED_SETS / 2;

/// The most spare packet sets of a group the completion worker makes in one round.
const SPARES_PER_ROUND: usize = 64;

/// Values collected by the data callbacks, with keys that sort them into v2 sample order: the
/// v2 sample id, or (XCC, instance, sample id) packed for the legacy API.
///
/// The libraries report samples in that order, so keys are only compared with the previous
/// one; should some arrive out of order, the data is read again keeping every key.
struct Samples<'a> {
    group: &'a GroupEvents,
    events: Vec<EventSamples>,
    /// Whether every sample's key is kept.
    keyed: bool,
    /// Whether some event's samples arrived out of order.
    unsorted: bool,
    /// Legacy: how often each sample id of each entry was seen (= its XCC), by entry and
    /// sample id; ids from [`SEEN_IDS`] on in `seen_beyond`.
    seen: Vec<Vec<u64>>,
    seen_beyond: HashMap<(usize, u32), u64>,
    /// The entry of `group.events` matched last: the libraries report an event's samples one
    /// after another, and events in programming order.
    cursor: usize,
}

impl<'a> Samples<'a> {
    fn new(group: &'a GroupEvents, keyed: bool) -> Samples<'a> {
        let events = group
            .sizes
            .iter()
            .map(|size| {
                let size = size.load(Ordering::Relaxed);
                EventSamples {
                    values: Vec::with_capacity(size),
                    keys: Vec::with_capacity(if keyed { size } else { 0 }),
                    last: 0,
                }
            })
            .collect();
        Samples {
            group,
            events,
            keyed,
            unsorted: false,
            seen: Vec::new(),
            seen_beyond: HashMap::new(),
            cursor: 0,
        }
    }

    /// Sorts samples the v2 API reported into plan events.
    fn sort_v2(mut self, reported: &V2Samples) -> Self {
        for (event, sample, value) in reported {
            if let Some(entry) = self.entry(event) {
                self.push(entry, *sample, *value);
            }
        }
        self
    }

    /// The entry of `group.events` of an event the v2 API reports.
    #[inline]
    fn entry(&mut self, event: &aqlprofile_pmc_event_t) -> Option<usize> {
        let events = &self.group.events;
        if events.get(self.cursor) == Some(event) {
            return Some(self.cursor);
        }
        let next = self.cursor + 1;
        let entry = if events.get(next) == Some(event) {
            Some(next)
        } else {
            self.group.by_event.get(event).copied()
        };
        self.cursor = entry.unwrap_or(self.cursor);
        entry
    }

    /// The entry of `group.events` of an event the legacy API reports.
    fn legacy_entry(&mut self, block: u32, event: u32, instance: u32) -> Option<usize> {
        let is = |i: usize| {
            self.group.events.get(i).is_some_and(|e| {
                (e.block_name, e.event_id, e.block_index) == (block, event, instance)
            })
        };
        let entry = if is(self.cursor) {
            Some(self.cursor)
        } else if is(self.cursor + 1) {
            Some(self.cursor + 1)
        } else {
            self.group
                .by_legacy_event
                .get(&(block, event, instance))
                .copied()
        };
        self.cursor = entry.unwrap_or(self.cursor);
        entry
    }

    /// The XCC of a legacy sample: how often its entry reported its sample id before.
    fn legacy_xcc(&mut self, entry: usize, sample_id: u32) -> u64 {
        let seen = if sample_id < SEEN_IDS {
            if self.seen.len() <= entry {
                self.seen.resize_with(entry + 1, Vec::new);
            }
            let counts = &mut self.seen[entry];
            let id = sample_id as usize;
            if counts.len() <= id {
                counts.resize(id + 1, 0);
            }
            &mut counts[id]
        } else {
            self.seen_beyond.entry((entry, sample_id)).or_insert(0)
        };
        *seen += 1;
        *seen - 1
    }

    #[inline]
    fn push(&mut self, entry: usize, key: u64, value: u64) {
        let event = &mut self.events[self.group.plan_event[entry]];
        self.unsorted |= event.last > key;
        event.last = key;
        event.values.push(value);
        if self.keyed {
            event.keys.push(key);
        }
    }

    fn into_values(self) -> Vec<Vec<u64>> {
        for (size, event) in self.group.sizes.iter().zip(&self.events) {
            size.store(event.values.len(), Ordering::Relaxed);
        }
        self.events
            .into_iter()
            .map(EventSamples::into_values)
            .collect()
    }
}

/// The legacy `iterate_data` entry.
type LegacyIterate = unsafe extern "C" fn(
    *const hsa_ven_amd_aqlprofile_profile_t,
    hsa_ven_amd_aqlprofile_data_callback_t,
    *mut c_void,
) -> hsa_status_t;

/// Samples as the v2 API reports them: (event, sample id, value). The callback only stores
/// them; they are sorted into plan events afterwards, in one loop.
type V2Samples = Vec<(aqlprofile_pmc_event_t, u64, u64)>;

/// A v2 sample's event and sample id as three words, compared at once.
#[inline]
fn sample_key(event: aqlprofile_pmc_event_t, sample: u64) -> [u64; 3] {
    [
        u64::from(event.block_index) | u64::from(event.event_id) << 32,
        u64::from(event.flags) | u64::from(event.block_name) << 32,
        sample,
    ]
}

unsafe extern "C" fn v2_sample(
    event: aqlprofile_pmc_event_t,
    sample: u64,
    value: u64,
    data: *mut c_void,
) -> hsa_status_t {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `data` is the V2Samples of `values`, alive for the iteration.
        let reported = unsafe { &mut *(data as *mut V2Samples) };
        reported.push((event, sample, value));
    }));
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn legacy_sample(
    info_type: u32,
    info: *mut hsa_ven_amd_aqlprofile_info_data_t,
    data: *mut c_void,
) -> hsa_status_t {
    if info_type != HSA_VEN_AMD_AQLPROFILE_INFO_PMC_DATA || info.is_null() {
        return HSA_STATUS_SUCCESS;
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `data` is the Samples of `values`; `info` is the library's PMC record.
        let (samples, info) = unsafe { (&mut *(data as *mut Samples), &*info) };
        // SAFETY: PMC_DATA records carry the pmc_data member.
        let pmc = unsafe { info.data.pmc_data };
        let e = pmc.event;
        if let Some(entry) = samples.legacy_entry(e.block_name, e.counter_id, e.block_index) {
            let xcc = samples.legacy_xcc(entry, info.sample_id);
            let key = xcc << 48 | u64::from(e.block_index) << 32 | u64::from(info.sample_id);
            samples.push(entry, key, pmc.result);
        }
    }));
    HSA_STATUS_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    thread_local! {
        /// What [`report`] reports, and the samples it reported last.
        static REPORTED: RefCell<(V2Samples, usize)> = const { RefCell::new((Vec::new(), 0)) };
    }

    /// An `aqlprofile_pmc_iterate_data` reporting [`REPORTED`], stopping as AMD's does.
    unsafe extern "C" fn report(
        _: aqlprofile_handle_t,
        callback: aqlprofile_pmc_data_callback_t,
        data: *mut c_void,
    ) -> hsa_status_t {
        let samples = REPORTED.with(|r| r.borrow().0.clone());
        let callback = callback.expect("a callback");
        for (n, (event, id, value)) in samples.into_iter().enumerate() {
            REPORTED.with(|r| r.borrow_mut().1 = n + 1);
            // SAFETY: the reader's callback with its own data.
            match unsafe { callback(event, id, value, data) } {
                HSA_STATUS_SUCCESS => {}
                HSA_STATUS_INFO_BREAK => return HSA_STATUS_SUCCESS,
                other => return other,
            }
        }
        HSA_STATUS_SUCCESS
    }

    /// Two XCCs of plan event 0 (block 14, two samples per XCC) and plan event 1 (block 7, one
    /// per XCC), in v2 order, each value `value(position)`.
    fn two_xccs(value: impl Fn(u64) -> u64) -> V2Samples {
        let event = |block_name| aqlprofile_pmc_event_t {
            block_index: 0,
            event_id: 4,
            flags: 0,
            block_name,
        };
        let order = [(14, 0), (14, 1), (7, 0), (14, 2), (14, 3), (7, 1)];
        (0u64..)
            .zip(order)
            .map(|(at, (block, id))| (event(block), id, value(at)))
            .collect()
    }

    /// Reads with `reported`: whether the read was taken, and how many samples were reported.
    fn read(reader: &mut Reader, reported: V2Samples) -> (bool, usize) {
        REPORTED.with(|r| *r.borrow_mut() = (reported, 0));
        let read = reader.read(report, aqlprofile_handle_t { handle: 1 });
        (read, REPORTED.with(|r| r.borrow().1))
    }

    #[test]
    fn values_land_in_plan_order_and_reads_of_another_layout_are_refused() {
        let plan_event = [0, 0, 1, 0, 0, 1];
        let mut reader = Reader::new(&two_xccs(|_| 0), &plan_event, 2);
        assert_eq!(read(&mut reader, two_xccs(|at| 100 + at)), (true, 6));
        let expected = vec![vec![100, 101, 103, 104], vec![102, 105]];
        assert_eq!(reader.counters().to_vecs(), expected);

        let with = |change: &dyn Fn(&mut V2Samples)| {
            let mut reported = two_xccs(|at| 200 + at);
            change(&mut reported);
            reported
        };
        let extra = (two_xccs(|_| 0)[0].0, 4, 9);
        type Change<'a> = &'a dyn Fn(&mut V2Samples);
        let cases: [(Change, usize); 5] = [
            // A sample more: refused at it.
            (&|r| r.push(extra), 7),
            // One fewer.
            (&|r| r.truncate(5), 5),
            // The first sample of another event, or id; the last of another id.
            (&|r| r[0].0.block_index = 1, 1),
            (&|r| r[0].1 = 7, 1),
            (&|r| r[5].1 = 0, 6),
        ];
        for (change, reported) in cases {
            assert_eq!(read(&mut reader, with(change)), (false, reported));
        }
        // The reader still reads its layout.
        assert_eq!(read(&mut reader, two_xccs(|at| 300 + at)), (true, 6));
        let expected = vec![vec![300, 301, 303, 304], vec![302, 305]];
        assert_eq!(reader.counters().to_vecs(), expected);
    }

    #[test]
    fn a_group_without_samples_reads_none() {
        let mut reader = Reader::new(&Vec::new(), &[], 1);
        assert_eq!(read(&mut reader, Vec::new()), (true, 0));
        assert_eq!(reader.counters().to_vecs(), vec![Vec::<u64>::new()]);
        assert_eq!(read(&mut reader, two_xccs(|_| 1)), (false, 1));
    }
}
