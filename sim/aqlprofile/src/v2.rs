//! The v2 API (`aqlprofile_*`): agents registered by topology, packets whose buffers come from
//! the caller's allocator.

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::abi::*;
use crate::arch::{tables, Geometry, DIMENSION_IDS};
use crate::plan::{with_accumulation, Agent, Plan, PlanError, Request};
use crate::{arch_of, fail, fail_packets, fail_registration, fill_packet, guard};

/// Packet handles, from 1 as the real library numbers them.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

/// Registered agents; an agent's handle is its index, from 0 as in the real library.
fn agents() -> MutexGuard<'static, Vec<Agent>> {
    static AGENTS: Mutex<Vec<Agent>> = Mutex::new(Vec::new());
    AGENTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A registered agent by handle.
pub(crate) fn agent(handle: aqlprofile_agent_handle_t) -> Option<Agent> {
    agents().get(usize::try_from(handle.handle).ok()?).cloned()
}

/// What `aqlprofile_pmc_iterate_data` reports of one packet set, decoded once (the packets are
/// read many times): each sample's event and v2 sample id, in order, and the output slots their
/// values are read from, as runs of consecutive slots (every sample's but after a misplaced AID
/// event's, as AMD's decoder reads them).
#[derive(Debug)]
struct Reported {
    /// Each sample's event, as the two words it is passed in (see [`event_words`]), and id.
    samples: Box<[[u64; 3]]>,
    /// (first sample, its slot, samples): these samples read consecutive slots.
    runs: Box<[(usize, usize, usize)]>,
}

/// Buffers and layout of one `aqlprofile_pmc_create_packets` call.
struct Session {
    /// What iterate_data reports, worked out once: the packets are read many times.
    reported: Arc<Reported>,
    output: *mut c_void,
    command: *mut c_void,
    dealloc: aqlprofile_memory_dealloc_callback_t,
    userdata: *mut c_void,
}

// SAFETY: the pointers are buffers the caller allocated for this session; they are only read
// (output) or handed back to the caller's deallocator, from whichever thread calls us.
unsafe impl Send for Session {}

fn sessions() -> MutexGuard<'static, HashMap<u64, Session>> {
    static SESSIONS: OnceLock<Mutex<HashMap<u64, Session>>> = OnceLock::new();
    SESSIONS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Status the real library returns for a plan error.
pub(crate) fn plan_status(e: &PlanError) -> hsa_status_t {
    match e {
        PlanError::FlagsNotSq { .. } => fail(HSA_STATUS_ERROR_INVALID_ARGUMENT, e),
        _ => fail(HSA_STATUS_ERROR, e),
    }
}

/// `aqlprofile_get_version`.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn aqlprofile_get_version(
    major: *mut u32,
    minor: *mut u32,
    patch: *mut u32,
    npi: *mut u32,
) -> hsa_status_t {
    guard(|| {
        for (p, v) in [(major, 1), (minor, 0), (patch, 0), (npi, 0)] {
            if !p.is_null() {
                // SAFETY: non-null out-pointers supplied by the caller.
                unsafe { *p = v };
            }
        }
        HSA_STATUS_SUCCESS
    })
}

fn register(
    agent_id: *mut aqlprofile_agent_handle_t,
    gfxip: *const c_char,
    geometry: Geometry,
) -> hsa_status_t {
    if agent_id.is_null() || gfxip.is_null() {
        return fail(
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
            "register_agent: NULL argument",
        );
    }
    if fail_registration() {
        return fail(
            HSA_STATUS_ERROR,
            "agent registration failed (RTL_SIM_FAIL_AQLPROFILE_REGISTER)",
        );
    }
    // SAFETY: the caller passes a NUL-terminated gfx name.
    let name = unsafe { CStr::from_ptr(gfxip) }.to_string_lossy();
    let Some(arch) = arch_of(&name) else {
        return fail(
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
            format!("unknown gfx ip '{name}'"),
        );
    };
    let mut agents = agents();
    // The real library caches its per-architecture tables under a key it never sets, so every
    // agent registered after the first is served by the first one's architecture and topology.
    let agent = agents.first().cloned().unwrap_or(Agent { arch, geometry });
    let handle = agents.len() as u64;
    agents.push(agent);
    // SAFETY: checked non-null above.
    unsafe { (*agent_id).handle = handle };
    HSA_STATUS_SUCCESS
}

/// `aqlprofile_register_agent`.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn aqlprofile_register_agent(
    agent_id: *mut aqlprofile_agent_handle_t,
    agent_info: *const aqlprofile_agent_info_t,
) -> hsa_status_t {
    // SAFETY: forwarded with the caller's guarantees.
    unsafe {
        aqlprofile_register_agent_info(agent_id, agent_info.cast(), AQLPROFILE_AGENT_VERSION_V0)
    }
}

/// `aqlprofile_register_agent_info` (V0 and V1 structures share their first 24 bytes).
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn aqlprofile_register_agent_info(
    agent_id: *mut aqlprofile_agent_handle_t,
    agent_info: *const c_void,
    version: u32,
) -> hsa_status_t {
    guard(|| {
        if agent_info.is_null()
            || !matches!(
                version,
                AQLPROFILE_AGENT_VERSION_V0 | AQLPROFILE_AGENT_VERSION_V1
            )
        {
            return fail(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                "register_agent: bad agent info",
            );
        }
        // SAFETY: both versions begin with an `aqlprofile_agent_info_t`.
        let info = unsafe { &*(agent_info as *const aqlprofile_agent_info_t) };
        let geometry = Geometry {
            xcc: info.xcc_num.max(1),
            se: info.se_num,
            sa_per_se: info.shader_arrays_per_se,
            cu: info.cu_num,
        };
        register(agent_id, info.agent_gfxip, geometry)
    })
}

/// `aqlprofile_validate_pmc_event`.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn aqlprofile_validate_pmc_event(
    agent_handle: aqlprofile_agent_handle_t,
    event: *const aqlprofile_pmc_event_t,
    result: *mut bool,
) -> hsa_status_t {
    guard(|| {
        if event.is_null() || result.is_null() {
            return fail(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                "validate_pmc_event: NULL argument",
            );
        }
        // SAFETY: checked non-null.
        let (event, result) = unsafe { (&*event, &mut *result) };
        *result = false;
        let Some(agent) = agent(agent_handle) else {
            return fail(HSA_STATUS_ERROR, "validate_pmc_event: agent not registered");
        };
        *result = agent
            .block(event.block_name)
            .is_some_and(|b| event.block_index < b.instances(&agent.geometry));
        HSA_STATUS_SUCCESS
    })
}

fn events_of(profile: &aqlprofile_pmc_profile_t) -> &[aqlprofile_pmc_event_t] {
    if profile.events.is_null() || profile.event_count == 0 {
        return &[];
    }
    // SAFETY: the caller's profile holds `event_count` events.
    unsafe { std::slice::from_raw_parts(profile.events, profile.event_count as usize) }
}

/// `aqlprofile_get_pmc_info`: BLOCK_ID, BLOCK_COUNTERS and the buffer sizes.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn aqlprofile_get_pmc_info(
    profile: *const aqlprofile_pmc_profile_t,
    attribute: u32,
    value: *mut c_void,
) -> hsa_status_t {
    guard(|| {
        if profile.is_null() || value.is_null() {
            return fail(HSA_STATUS_ERROR, "get_pmc_info: NULL argument");
        }
        // SAFETY: checked non-null.
        let profile = unsafe { &*profile };
        let Some(agent) = agent(profile.agent) else {
            return fail(HSA_STATUS_ERROR, "get_pmc_info: agent not registered");
        };
        match attribute {
            info::COMMAND_BUFFER_SIZE | info::PMC_DATA_SIZE => {
                // SAFETY: these queries pass a u32.
                unsafe { crate::write_buffer_size(attribute, value) }.unwrap_or(HSA_STATUS_ERROR)
            }
            info::BLOCK_COUNTERS => {
                let Some(block) = events_of(profile)
                    .first()
                    .and_then(|e| agent.block(e.block_name))
                else {
                    return fail(
                        HSA_STATUS_ERROR,
                        "BLOCK_COUNTERS: no event of a known block",
                    );
                };
                // SAFETY: this query writes a u32.
                unsafe { *(value as *mut u32) = block.counters };
                HSA_STATUS_SUCCESS
            }
            info::BLOCK_ID => {
                // SAFETY: this query reads and writes an id query.
                let query = unsafe { &mut *(value as *mut hsa_ven_amd_aqlprofile_id_query_t) };
                block_id_query(&agent, query, |b| b.instances(&agent.geometry))
            }
            other => fail(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                format!("get_pmc_info: attribute {other}"),
            ),
        }
    })
}

/// Answers a BLOCK_ID query by block name with `instances` of the block.
pub(crate) fn block_id_query(
    agent: &Agent,
    query: &mut hsa_ven_amd_aqlprofile_id_query_t,
    instances: impl Fn(&crate::arch::Block) -> u32,
) -> hsa_status_t {
    if query.name.is_null() {
        return fail(HSA_STATUS_ERROR, "BLOCK_ID: NULL name");
    }
    // SAFETY: the caller passes a NUL-terminated block name.
    let name = unsafe { CStr::from_ptr(query.name) }.to_string_lossy();
    match tables().block_by_name(&agent.arch, &name) {
        Some(block) => {
            query.id = block.id;
            query.instance_count = instances(block);
            HSA_STATUS_SUCCESS
        }
        None => fail(
            HSA_STATUS_ERROR,
            format!("{} has no block '{name}'", agent.arch),
        ),
    }
}

/// Allocates a buffer through the caller's allocator.
fn alloc(
    cb: aqlprofile_memory_alloc_callback_t,
    size: usize,
    hint: u32,
    userdata: *mut c_void,
) -> Result<*mut c_void, hsa_status_t> {
    let cb = cb.ok_or_else(|| fail(HSA_STATUS_ERROR_INVALID_ARGUMENT, "no alloc callback"))?;
    let mut ptr: *mut c_void = std::ptr::null_mut();
    // SAFETY: calling the caller's allocator with its own userdata.
    let status = unsafe { cb(&mut ptr, size as u64, buffer_flags(hint), userdata) };
    if status != HSA_STATUS_SUCCESS || ptr.is_null() {
        return Err(fail(
            HSA_STATUS_ERROR_OUT_OF_RESOURCES,
            format!("alloc of {size} bytes failed"),
        ));
    }
    Ok(ptr)
}

/// `aqlprofile_pmc_create_packets`.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn aqlprofile_pmc_create_packets(
    handle: *mut aqlprofile_handle_t,
    packets: *mut aqlprofile_pmc_aql_packets_t,
    profile: aqlprofile_pmc_profile_t,
    alloc_cb: aqlprofile_memory_alloc_callback_t,
    dealloc_cb: aqlprofile_memory_dealloc_callback_t,
    memcpy_cb: aqlprofile_memory_copy_t,
    userdata: *mut c_void,
) -> hsa_status_t {
    guard(|| {
        if handle.is_null() || packets.is_null() {
            return fail(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                "create_packets: NULL argument",
            );
        }
        if fail_packets() {
            return fail(
                HSA_STATUS_ERROR,
                "packet creation failed (RTL_SIM_FAIL_AQLPROFILE_PACKETS)",
            );
        }
        let Some(agent) = agent(profile.agent) else {
            return fail(HSA_STATUS_ERROR, "create_packets: agent not registered");
        };
        let requests = events_of(&profile)
            .iter()
            .map(|e| Request {
                block_name: e.block_name,
                block_index: e.block_index,
                event_id: e.event_id,
                flags: e.flags,
                internal: false,
            })
            .collect();
        let plan = match Plan::new(&agent, with_accumulation(requests)) {
            Ok(plan) => plan,
            Err(e) => return plan_status(&e),
        };
        let output = match alloc(
            alloc_cb,
            plan.v2_output_bytes(),
            AQLPROFILE_MEMORY_HINT_DEVICE_UNCACHED,
            userdata,
        ) {
            Ok(p) => p,
            Err(status) => return status,
        };
        let sections = [
            plan.read_dwords(output as u64),
            plan.start_dwords(),
            plan.stop_dwords(),
        ];
        let aligned = |dw: &Vec<u32>| (dw.len() * 4).div_ceil(256) * 256;
        let total: usize = sections.iter().map(aligned).sum();
        let command = match alloc(
            alloc_cb,
            total,
            AQLPROFILE_MEMORY_HINT_DEVICE_NONCOHERENT,
            userdata,
        ) {
            Ok(p) => p,
            Err(status) => {
                if let Some(free) = dealloc_cb {
                    // SAFETY: returning the buffer we got from the caller's allocator.
                    unsafe { free(output, userdata) };
                }
                return status;
            }
        };
        let mut offset = 0;
        // SAFETY: `packets` is the caller's writable packet triple.
        let packets = unsafe { &mut *packets };
        let targets = [
            &mut packets.read_packet,
            &mut packets.start_packet,
            &mut packets.stop_packet,
        ];
        for (section, packet) in sections.iter().zip(targets) {
            // SAFETY: `command` has room for all sections at their aligned offsets.
            let dst = unsafe { (command as *mut u8).add(offset) } as *mut c_void;
            let bytes = section.len() * 4;
            match memcpy_cb {
                // SAFETY: copying into the caller's buffer with the caller's copy function.
                Some(copy) => unsafe {
                    copy(dst, section.as_ptr().cast(), bytes, userdata);
                },
                // SAFETY: host-visible memory of at least `bytes` bytes.
                None => unsafe {
                    std::ptr::copy_nonoverlapping(section.as_ptr().cast(), dst as *mut u8, bytes)
                },
            }
            // SAFETY: a writable packet of the caller's triple.
            unsafe { fill_packet(packet, dst, section.len()) };
            offset += aligned(section);
        }
        let id = NEXT_HANDLE.fetch_add(1, Ordering::SeqCst);
        sessions().insert(
            id,
            Session {
                reported: reported(&plan),
                output,
                command,
                dealloc: dealloc_cb,
                userdata,
            },
        );
        // SAFETY: checked non-null.
        unsafe { (*handle).handle = id };
        HSA_STATUS_SUCCESS
    })
}

/// The samples of `plan` iterate_data reports, in order.
fn reported(plan: &Plan) -> Arc<Reported> {
    let samples = plan.v2_reported_samples();
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for (i, &(slot, ..)) in samples.iter().enumerate() {
        match runs.last_mut() {
            Some((_, first, count)) if *first + *count == slot => *count += 1,
            _ => runs.push((i, slot, 1)),
        }
    }
    let event = |request: usize| {
        let r = &plan.requests[request];
        aqlprofile_pmc_event_t {
            block_index: r.block_index,
            event_id: r.event_id,
            flags: r.flags,
            block_name: r.block_name,
        }
    };
    Arc::new(Reported {
        samples: samples
            .iter()
            .map(|&(_, id, request)| {
                let [low, high] = event_words(event(request));
                [low, high, id]
            })
            .collect(),
        runs: runs.into(),
    })
}

/// An event as two words: `block_index | event_id << 32`, `flags | block_name << 32` (its
/// bytes, as the C ABI passes it in two registers).
fn event_words(e: aqlprofile_pmc_event_t) -> [u64; 2] {
    [
        u64::from(e.block_index) | u64::from(e.event_id) << 32,
        u64::from(e.flags) | u64::from(e.block_name) << 32,
    ]
}

/// The event of [`event_words`].
#[inline(always)]
fn event_of([low, high]: [u64; 2]) -> aqlprofile_pmc_event_t {
    aqlprofile_pmc_event_t {
        block_index: low as u32,
        event_id: (low >> 32) as u32,
        flags: high as u32,
        block_name: (high >> 32) as u32,
    }
}

/// The v2 data callback.
type DataCallback =
    unsafe extern "C" fn(aqlprofile_pmc_event_t, u64, u64, *mut c_void) -> hsa_status_t;

/// Samples a round of [`report_run`] reports.
const ROUND: usize = 16;

impl Reported {
    /// Calls `callback` with every sample, its value read from `output` (or 0 when `ZEROS`),
    /// until it returns something other than success: `HSA_STATUS_INFO_BREAK` stops with
    /// success, anything else is returned.
    ///
    /// # Safety
    /// `output` holds every slot of the runs; `callback` is the caller's, `userdata` its own.
    #[inline(always)]
    unsafe fn report<const ZEROS: bool>(
        &self,
        output: *const u64,
        callback: DataCallback,
        userdata: *mut c_void,
    ) -> hsa_status_t {
        for &(first, slot, count) in self.runs.iter() {
            // SAFETY: the run's slots lie in the output buffer; the caller's callback.
            let status = unsafe {
                report_run::<ZEROS>(
                    &self.samples[first..first + count],
                    output.add(slot),
                    callback,
                    userdata,
                )
            };
            if status != HSA_STATUS_SUCCESS {
                return match status {
                    HSA_STATUS_INFO_BREAK => HSA_STATUS_SUCCESS,
                    other => other,
                };
            }
        }
        HSA_STATUS_SUCCESS
    }
}

/// Calls `callback` with each of `samples`, their values read from consecutive slots from
/// `values` on, [`ROUND`] samples a round (each sample's arguments straight from where they
/// lie, the slots found by their distance from the round's first); the first status other than
/// success.
///
/// # Safety
/// `values` holds a slot per sample; `callback` is the caller's, `userdata` its own.
#[inline(always)]
unsafe fn report_run<const ZEROS: bool>(
    samples: &[[u64; 3]],
    values: *const u64,
    callback: DataCallback,
    userdata: *mut c_void,
) -> hsa_status_t {
    // One sample with its value's slot.
    let report = |&[low, high, id]: &[u64; 3], slot: *const u64| {
        let value = match ZEROS {
            true => 0,
            // SAFETY: a slot of the run, as the caller guarantees.
            false => unsafe { slot.read_unaligned() },
        };
        // SAFETY: calling the caller's callback with its own userdata.
        unsafe { callback(event_of([low, high]), id, value, userdata) }
    };
    let (rounds, rest) = samples.as_chunks::<ROUND>();
    let mut at = values;
    for round in rounds {
        for (k, sample) in round.iter().enumerate() {
            // SAFETY: the k-th slot of the round, within the run.
            let status = report(sample, unsafe { at.add(k) });
            if status != HSA_STATUS_SUCCESS {
                return status;
            }
        }
        // SAFETY: at most one past the run's last slot.
        at = unsafe { at.add(ROUND) };
    }
    for (k, sample) in rest.iter().enumerate() {
        // SAFETY: the k-th slot after the last round, within the run.
        let status = report(sample, unsafe { at.add(k) });
        if status != HSA_STATUS_SUCCESS {
            return status;
        }
    }
    HSA_STATUS_SUCCESS
}

impl Session {
    /// Returns the buffers to the caller's deallocator, output first as the real library does.
    fn release(self) {
        if let Some(free) = self.dealloc {
            // SAFETY: buffers from the caller's allocator, freed once.
            unsafe {
                free(self.output, self.userdata);
                free(self.command, self.userdata);
            }
        }
    }
}

/// `aqlprofile_pmc_delete_packets`: returns the session's buffers to the caller's deallocator.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn aqlprofile_pmc_delete_packets(handle: aqlprofile_handle_t) {
    let _ = guard(|| {
        let Some(session) = sessions().remove(&handle.handle) else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        session.release();
        HSA_STATUS_SUCCESS
    });
}

/// Tears the table of live packet sets down, at process exit or when the library is unloaded:
/// every set the caller never deleted has its buffers returned through the caller's
/// `dealloc_cb`, as AMD's library does from the destructor of its static table, whether or not
/// the caller is still loaded.
pub(crate) extern "C" fn tear_down() {
    let _ = guard(|| {
        let mut live: Vec<(u64, Session)> = sessions().drain().collect();
        live.sort_by_key(|(handle, _)| *handle);
        crate::log(&format!("live packet sets at teardown: {}", live.len()));
        for (_, session) in live {
            session.release();
        }
        HSA_STATUS_SUCCESS
    });
}

/// `aqlprofile_pmc_iterate_data`: every reported sample as (event, sample id, value).
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn aqlprofile_pmc_iterate_data(
    handle: aqlprofile_handle_t,
    callback: aqlprofile_pmc_data_callback_t,
    userdata: *mut c_void,
) -> hsa_status_t {
    guard(|| {
        let Some(callback) = callback else {
            return fail(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                "iterate_data: NULL callback",
            );
        };
        // The callback may call into the library, so the sessions stay unlocked while it runs.
        let (reported, output) = {
            let sessions = sessions();
            let Some(session) = sessions.get(&handle.handle) else {
                return fail(
                    HSA_STATUS_ERROR_INVALID_ARGUMENT,
                    "iterate_data: unknown handle",
                );
            };
            (Arc::clone(&session.reported), session.output as *const u64)
        };
        // SAFETY: the output buffer holds every sample of the plan, the runs' slots among them.
        match crate::reports_zeros() {
            true => unsafe { reported.report::<true>(output, callback, userdata) },
            false => unsafe { reported.report::<false>(output, callback, userdata) },
        }
    })
}

pub(crate) const DIMENSION_NAMES: [&CStr; 6] = [c"XCD", c"AID", c"SE", c"SA", c"WGP", c"INSTANCE"];

/// `aqlprofile_iterate_event_ids`: the coordinate ids and names.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn aqlprofile_iterate_event_ids(
    callback: aqlprofile_eventname_callback_t,
    userdata: *mut c_void,
) -> hsa_status_t {
    guard(|| {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR;
        };
        for (name, id) in DIMENSION_NAMES
            .iter()
            .zip(DIMENSION_IDS.iter().map(|d| d.1))
        {
            // SAFETY: calling the caller's callback with a static name.
            let status = unsafe { callback(id as i32, name.as_ptr(), userdata) };
            if status != HSA_STATUS_SUCCESS {
                return status;
            }
        }
        HSA_STATUS_SUCCESS
    })
}

/// `aqlprofile_iterate_event_coord`: the coordinates of v2 sample id `sample_id` of `event`.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn aqlprofile_iterate_event_coord(
    agent_handle: aqlprofile_agent_handle_t,
    event: aqlprofile_pmc_event_t,
    sample_id: u64,
    callback: aqlprofile_coordinate_callback_t,
    userdata: *mut c_void,
) -> hsa_status_t {
    guard(|| {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR;
        };
        let Some(agent) = agent(agent_handle) else {
            return fail(
                HSA_STATUS_ERROR,
                "iterate_event_coord: agent not registered",
            );
        };
        report_coordinates(&agent, event.block_name, sample_id, callback, userdata)
    })
}

/// Calls `callback` with every coordinate of flat sample index `cumulative` of a block.
pub(crate) fn report_coordinates(
    agent: &Agent,
    block_name: u32,
    cumulative: u64,
    callback: unsafe extern "C" fn(i32, i32, i32, i32, *const c_char, *mut c_void) -> hsa_status_t,
    userdata: *mut c_void,
) -> hsa_status_t {
    let Some(block) = agent.block(block_name) else {
        return fail(
            HSA_STATUS_ERROR,
            format!("iterate_event_coord: no block {block_name}"),
        );
    };
    let dims = block.dimensions(&agent.geometry);
    let mut coords = vec![0u64; dims.len()];
    let mut rest = cumulative;
    for (i, d) in dims.iter().enumerate().rev() {
        let extent = u64::from(d.2.max(1));
        coords[i] = rest % extent;
        rest /= extent;
    }
    for (i, (d, c)) in dims.iter().zip(&coords).enumerate() {
        let name = DIMENSION_NAMES[d.1 as usize];
        // SAFETY: calling the caller's callback with a static name.
        unsafe {
            callback(
                i as i32,
                d.1 as i32,
                d.2 as i32,
                *c as i32,
                name.as_ptr(),
                userdata,
            )
        };
    }
    HSA_STATUS_SUCCESS
}
