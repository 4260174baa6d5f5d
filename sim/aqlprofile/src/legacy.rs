//! The legacy API (`hsa_ven_amd_aqlprofile_*`, library version 2.0), which the runtime serves as
//! HSA extension 0x202. Agents are HSA agents, described by the runtime already loaded in the
//! process; command and output buffers are the caller's.

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::sync::{Arc, Mutex, OnceLock};

use crate::abi::*;
use crate::arch::DIMENSION_IDS;
use crate::arch::{tables, Geometry};
use crate::gfx9;
use crate::plan::{Agent, Plan, Request};
use crate::v2::{block_id_query, plan_status, report_coordinates, DIMENSION_NAMES};
use crate::{arch_of, config, fail, fail_packets, fill_packet, guard, last_error};

/// `hsa_agent_get_info` attributes the library asks the runtime for.
const HSA_AGENT_INFO_NAME: u32 = 0;
const HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: u32 = 0xA002;
const HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES: u32 = 0xA00C;
const HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE: u32 = 0xA00D;
const HSA_AMD_AGENT_INFO_NUM_XCC: u32 = 0xA111;

type AgentGetInfo = unsafe extern "C" fn(hsa_agent_t, u32, *mut c_void) -> hsa_status_t;

/// Describes an HSA agent by asking the runtime loaded in this process.
fn hsa_agent(agent: hsa_agent_t) -> Result<Agent, hsa_status_t> {
    // SAFETY: dlsym on the global namespace with a NUL-terminated name.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"hsa_agent_get_info".as_ptr()) };
    if sym.is_null() {
        return Err(fail(
            HSA_STATUS_ERROR,
            "no HSA runtime in the process (hsa_agent_get_info)",
        ));
    }
    // SAFETY: the runtime's hsa_agent_get_info has this C signature.
    let get_info: AgentGetInfo = unsafe { std::mem::transmute(sym) };
    let mut name = [0u8; 64];
    // SAFETY: HSA_AGENT_INFO_NAME writes at most 64 bytes.
    if unsafe { get_info(agent, HSA_AGENT_INFO_NAME, name.as_mut_ptr().cast()) }
        != HSA_STATUS_SUCCESS
    {
        return Err(fail(
            HSA_STATUS_ERROR_INVALID_AGENT,
            format!("agent 0x{:x} unknown", agent.handle),
        ));
    }
    let name = CStr::from_bytes_until_nul(&name).map(|c| c.to_string_lossy().into_owned());
    let Some(arch) = name.ok().as_deref().and_then(arch_of) else {
        return Err(fail(HSA_STATUS_ERROR_INVALID_AGENT, "agent is not a GPU"));
    };
    let reference = tables().reference_topology(&arch).geometry();
    let query = |attr: u32, default: u32| {
        let mut v: u32 = 0;
        // SAFETY: these attributes write a u32.
        let ok =
            unsafe { get_info(agent, attr, (&mut v as *mut u32).cast()) } == HSA_STATUS_SUCCESS;
        if ok && v > 0 {
            v
        } else {
            default
        }
    };
    let geometry = Geometry {
        xcc: query(HSA_AMD_AGENT_INFO_NUM_XCC, 1),
        se: query(HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES, reference.se),
        sa_per_se: query(
            HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE,
            reference.sa_per_se,
        ),
        cu: query(HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, reference.cu),
    };
    Ok(Agent { arch, geometry })
}

fn events_of(profile: &hsa_ven_amd_aqlprofile_profile_t) -> &[hsa_ven_amd_aqlprofile_event_t] {
    if profile.events.is_null() || profile.event_count == 0 {
        return &[];
    }
    // SAFETY: the caller's profile holds `event_count` events.
    unsafe { std::slice::from_raw_parts(profile.events, profile.event_count as usize) }
}

/// The pass of a legacy profile: its events, in order. Plans are remembered by agent and
/// events, since every read of a profile needs its plan again.
fn plan_of(profile: &hsa_ven_amd_aqlprofile_profile_t) -> Result<Arc<Plan>, hsa_status_t> {
    type Key = (u64, Vec<(u32, u32, u32)>);
    static PLANS: OnceLock<Mutex<HashMap<Key, Arc<Plan>>>> = OnceLock::new();
    let events = events_of(profile);
    let key: Key = (
        profile.agent.handle,
        events
            .iter()
            .map(|e| (e.block_name, e.block_index, e.counter_id))
            .collect(),
    );
    let plans = PLANS.get_or_init(Default::default);
    if let Some(plan) = plans.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(Arc::clone(plan));
    }
    let agent = hsa_agent(profile.agent)?;
    let requests = events
        .iter()
        .map(|e| Request {
            block_name: e.block_name,
            block_index: e.block_index,
            event_id: e.counter_id,
            flags: 0,
            internal: false,
        })
        .collect();
    let plan = Arc::new(Plan::new(&agent, requests).map_err(|e| plan_status(&e))?);
    let mut plans = plans.lock().unwrap_or_else(|p| p.into_inner());
    if plans.len() >= PLAN_CACHE {
        plans.clear();
    }
    plans.insert(key, Arc::clone(&plan));
    Ok(plan)
}

/// Legacy plans remembered before the memory starts afresh.
const PLAN_CACHE: usize = 256;

/// `hsa_ven_amd_aqlprofile_version_major`.
#[no_mangle]
pub extern "C" fn hsa_ven_amd_aqlprofile_version_major() -> u32 {
    2
}

/// `hsa_ven_amd_aqlprofile_version_minor`.
#[no_mangle]
pub extern "C" fn hsa_ven_amd_aqlprofile_version_minor() -> u32 {
    0
}

/// `hsa_ven_amd_aqlprofile_error_string`: the last error message.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn hsa_ven_amd_aqlprofile_error_string(
    str: *mut *const c_char,
) -> hsa_status_t {
    guard(|| {
        if str.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let last = last_error().lock().unwrap_or_else(|p| p.into_inner());
        // The message lives in a process-wide static until the next error replaces it.
        // SAFETY: checked non-null.
        unsafe { *str = last.as_ptr() };
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_ven_amd_aqlprofile_validate_event`.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn hsa_ven_amd_aqlprofile_validate_event(
    agent: hsa_agent_t,
    event: *const hsa_ven_amd_aqlprofile_event_t,
    result: *mut bool,
) -> hsa_status_t {
    guard(|| {
        if event.is_null() || result.is_null() {
            return fail(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                "validate_event: NULL argument",
            );
        }
        // SAFETY: checked non-null.
        let (event, result) = unsafe { (&*event, &mut *result) };
        *result = false;
        let agent = match hsa_agent(agent) {
            Ok(a) => a,
            Err(status) => return status,
        };
        *result = agent
            .block(event.block_name)
            .is_some_and(|b| event.block_index < b.table_instances);
        HSA_STATUS_SUCCESS
    })
}

/// Marks a command buffer written by `start`: magic, then (offset, length) in dwords of the
/// read, start and stop sections.
const MAGIC: u32 = 0x5253_4d50;
const HEADER_DWORDS: usize = 8;

/// Section of a legacy command buffer.
#[derive(Clone, Copy)]
enum Section {
    Read = 0,
    Start = 1,
    Stop = 2,
}

fn section(
    profile: &hsa_ven_amd_aqlprofile_profile_t,
    which: Section,
) -> Result<(*const u32, usize), hsa_status_t> {
    let base = profile.command_buffer.ptr as *const u32;
    if base.is_null() || (profile.command_buffer.size as usize) < HEADER_DWORDS * 4 {
        return Err(fail(HSA_STATUS_ERROR, "command buffer missing"));
    }
    // SAFETY: the command buffer holds at least the header.
    let header = unsafe { std::slice::from_raw_parts(base, HEADER_DWORDS) };
    if header[0] != MAGIC {
        return Err(fail(
            HSA_STATUS_ERROR,
            "command buffer was not prepared by start",
        ));
    }
    let i = 1 + 2 * which as usize;
    // SAFETY: offsets written by `start` lie inside the buffer.
    Ok((
        unsafe { base.add(header[i] as usize) },
        header[i + 1] as usize,
    ))
}

/// `hsa_ven_amd_aqlprofile_start`: with NULL buffers fills in their sizes; otherwise writes the
/// read, start and stop commands into the command buffer and fills the start packet.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn hsa_ven_amd_aqlprofile_start(
    profile: *mut hsa_ven_amd_aqlprofile_profile_t,
    aql_start_packet: *mut hsa_ext_amd_aql_pm4_packet_t,
) -> hsa_status_t {
    guard(|| {
        if profile.is_null() {
            return fail(HSA_STATUS_ERROR_INVALID_ARGUMENT, "start: NULL profile");
        }
        // SAFETY: checked non-null; the caller owns the profile.
        let profile = unsafe { &mut *profile };
        if profile.type_ != HSA_VEN_AMD_AQLPROFILE_EVENT_TYPE_PMC {
            return fail(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                "start: only PMC profiles are simulated",
            );
        }
        let plan = match plan_of(profile) {
            Ok(p) => p,
            Err(status) => return status,
        };
        let cfg = config();
        let read = plan.read_dwords(profile.output_buffer.ptr as u64);
        let mut stop_section = Vec::new();
        if cfg.stop_copies || !cfg.read_api {
            stop_section.extend_from_slice(&read);
        }
        stop_section.extend(plan.stop_dwords());
        let read_section = if cfg.read_api { read } else { Vec::new() };
        let sections = [read_section, plan.start_dwords(), stop_section];
        let used = HEADER_DWORDS * 4 + sections.iter().map(|s| s.len() * 4).sum::<usize>();
        let cmd_size = ((used + 0x1800) & !0xFFF) as u32;
        let data_size = plan.data_bytes() as u32;
        let buffers_given = !profile.command_buffer.ptr.is_null();
        if profile.output_buffer.size < data_size {
            profile.output_buffer.size = data_size;
            if !profile.output_buffer.ptr.is_null() {
                return fail(HSA_STATUS_ERROR_INVALID_ARGUMENT, "output buffer too small");
            }
        }
        if profile.command_buffer.size < cmd_size {
            profile.command_buffer.size = cmd_size;
            if buffers_given {
                return fail(
                    HSA_STATUS_ERROR_INVALID_ARGUMENT,
                    "command buffer too small",
                );
            }
        }
        if !buffers_given {
            return HSA_STATUS_SUCCESS;
        }
        if aql_start_packet.is_null() {
            return fail(HSA_STATUS_ERROR_INVALID_ARGUMENT, "start: NULL packet");
        }
        if fail_packets() {
            return fail(
                HSA_STATUS_ERROR,
                "packet creation failed (RTL_SIM_FAIL_AQLPROFILE_PACKETS)",
            );
        }
        let mut buffer = vec![MAGIC];
        let mut offset = HEADER_DWORDS;
        for s in &sections {
            buffer.extend([offset as u32, s.len() as u32]);
            offset += s.len();
        }
        buffer.resize(HEADER_DWORDS, 0);
        for s in &sections {
            buffer.extend(s);
        }
        let dst = profile.command_buffer.ptr as *mut u32;
        // SAFETY: the command buffer is at least `cmd_size` bytes, more than `buffer`.
        unsafe { std::ptr::copy_nonoverlapping(buffer.as_ptr(), dst, buffer.len()) };
        match section(profile, Section::Start) {
            Ok((addr, len)) => {
                // SAFETY: a writable packet supplied by the caller.
                unsafe { fill_packet(aql_start_packet, addr.cast(), len) };
                HSA_STATUS_SUCCESS
            }
            Err(status) => status,
        }
    })
}

fn fill_from(
    profile: *const hsa_ven_amd_aqlprofile_profile_t,
    packet: *mut hsa_ext_amd_aql_pm4_packet_t,
    which: Section,
) -> hsa_status_t {
    if profile.is_null() || packet.is_null() {
        return fail(HSA_STATUS_ERROR_INVALID_ARGUMENT, "NULL argument");
    }
    // SAFETY: checked non-null.
    match section(unsafe { &*profile }, which) {
        Ok((addr, len)) => {
            // SAFETY: a writable packet supplied by the caller.
            unsafe { fill_packet(packet, addr.cast(), len) };
            HSA_STATUS_SUCCESS
        }
        Err(status) => status,
    }
}

/// `hsa_ven_amd_aqlprofile_stop`.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn hsa_ven_amd_aqlprofile_stop(
    profile: *const hsa_ven_amd_aqlprofile_profile_t,
    aql_stop_packet: *mut hsa_ext_amd_aql_pm4_packet_t,
) -> hsa_status_t {
    guard(|| fill_from(profile, aql_stop_packet, Section::Stop))
}

/// `hsa_ven_amd_aqlprofile_read`: fails when `AQLPROFILE_READ_API=0`.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn hsa_ven_amd_aqlprofile_read(
    profile: *const hsa_ven_amd_aqlprofile_profile_t,
    aql_read_packet: *mut hsa_ext_amd_aql_pm4_packet_t,
) -> hsa_status_t {
    guard(|| {
        if !config().read_api {
            return fail(
                HSA_STATUS_ERROR,
                "read API disabled (AQLPROFILE_READ_API=0)",
            );
        }
        fill_from(profile, aql_read_packet, Section::Read)
    })
}

/// `hsa_ven_amd_aqlprofile_legacy_get_pm4`: gfx8 only, not supported (as in ROCm 6 and 7).
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn hsa_ven_amd_aqlprofile_legacy_get_pm4(
    _aql_packet: *const hsa_ext_amd_aql_pm4_packet_t,
    _data: *mut c_void,
) -> hsa_status_t {
    HSA_STATUS_ERROR
}

/// Visits every sample of a legacy profile's output in order: (event, legacy sample id, value).
fn for_each_sample(
    profile: &hsa_ven_amd_aqlprofile_profile_t,
    mut visit: impl FnMut(hsa_ven_amd_aqlprofile_event_t, u32, u64) -> hsa_status_t,
) -> hsa_status_t {
    let plan = match plan_of(profile) {
        Ok(p) => p,
        Err(status) => return status,
    };
    let out = profile.output_buffer.ptr as *const u64;
    if out.is_null() || (profile.output_buffer.size as usize) < plan.data_bytes() {
        return fail(HSA_STATUS_ERROR, "output buffer missing or too small");
    }
    let events = events_of(profile);
    for (i, s) in plan.samples.iter().enumerate() {
        let Some(event) = events.get(s.request) else {
            continue;
        };
        // SAFETY: the output buffer holds `plan.samples.len()` values.
        let value = crate::sample_value(unsafe { out.add(i).read_unaligned() });
        match visit(*event, plan.legacy_sample_id(s), value) {
            HSA_STATUS_SUCCESS => {}
            HSA_STATUS_INFO_BREAK => return HSA_STATUS_SUCCESS,
            other => return other,
        }
    }
    HSA_STATUS_SUCCESS
}

/// `hsa_ven_amd_aqlprofile_iterate_data`.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn hsa_ven_amd_aqlprofile_iterate_data(
    profile: *const hsa_ven_amd_aqlprofile_profile_t,
    callback: hsa_ven_amd_aqlprofile_data_callback_t,
    data: *mut c_void,
) -> hsa_status_t {
    guard(|| {
        let Some(callback) = callback else {
            return fail(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                "iterate_data: NULL callback",
            );
        };
        if profile.is_null() {
            return fail(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                "iterate_data: NULL profile",
            );
        }
        // SAFETY: checked non-null.
        for_each_sample(unsafe { &*profile }, |event, sample_id, result| {
            let mut info = hsa_ven_amd_aqlprofile_info_data_t {
                sample_id,
                data: hsa_ven_amd_aqlprofile_info_data_u {
                    pmc_data: hsa_ven_amd_aqlprofile_pmc_data_t { event, result },
                },
            };
            // SAFETY: calling the caller's callback with its own data.
            unsafe { callback(info::PMC_DATA, &mut info, data) }
        })
    })
}

/// `hsa_ven_amd_aqlprofile_get_info`.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn hsa_ven_amd_aqlprofile_get_info(
    profile: *const hsa_ven_amd_aqlprofile_profile_t,
    attribute: u32,
    value: *mut c_void,
) -> hsa_status_t {
    guard(|| {
        if profile.is_null() {
            return fail(HSA_STATUS_ERROR, "get_info: NULL profile");
        }
        if attribute >= info::ENABLE_CMD {
            return enable_command(profile.cast_mut(), value, attribute == info::ENABLE_CMD);
        }
        // SAFETY: checked non-null.
        let profile = unsafe { &*profile };
        if value.is_null() {
            return fail(HSA_STATUS_ERROR, "get_info: NULL value");
        }
        match attribute {
            info::COMMAND_BUFFER_SIZE | info::PMC_DATA_SIZE => {
                // SAFETY: these queries pass a u32.
                unsafe { crate::write_buffer_size(attribute, value) }.unwrap_or(HSA_STATUS_ERROR)
            }
            info::PMC_DATA => {
                // SAFETY: this query reads and writes an info_data_t.
                let wanted = unsafe { &mut *(value as *mut hsa_ven_amd_aqlprofile_info_data_t) };
                // SAFETY: the caller sets pmc_data.event.
                let target = unsafe { wanted.data.pmc_data.event };
                let mut result = 0u64;
                let status = for_each_sample(profile, |event, sample_id, v| {
                    if event != target {
                        return HSA_STATUS_SUCCESS;
                    }
                    if wanted.sample_id == u32::MAX {
                        result += v;
                        HSA_STATUS_SUCCESS
                    } else if wanted.sample_id == sample_id {
                        result = v;
                        HSA_STATUS_INFO_BREAK
                    } else {
                        HSA_STATUS_SUCCESS
                    }
                });
                wanted.data.pmc_data.result = result;
                status
            }
            info::BLOCK_COUNTERS => {
                let agent = match hsa_agent(profile.agent) {
                    Ok(a) => a,
                    Err(status) => return status,
                };
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
                let agent = match hsa_agent(profile.agent) {
                    Ok(a) => a,
                    Err(status) => return status,
                };
                // SAFETY: this query reads and writes an id query.
                let query = unsafe { &mut *(value as *mut hsa_ven_amd_aqlprofile_id_query_t) };
                block_id_query(&agent, query, |b| b.table_instances)
            }
            other => fail(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                format!("get_info: attribute {other}"),
            ),
        }
    })
}

/// ENABLE_CMD / DISABLE_CMD: with a NULL command buffer returns its size; otherwise writes the
/// command (`COMPUTE_PERFCOUNT_ENABLE` set or cleared) and fills the packet at `value`.
fn enable_command(
    profile: *mut hsa_ven_amd_aqlprofile_profile_t,
    value: *mut c_void,
    enable: bool,
) -> hsa_status_t {
    // SAFETY: the caller checked `profile` is non-null; the real library writes the size back
    // into the caller's profile as well.
    let profile = unsafe { &mut *profile };
    let mut stream = gfx9::Stream::new(1);
    stream.set_sh(gfx9::COMPUTE_PERFCOUNT_ENABLE, u32::from(enable));
    let commands = stream.dwords;
    let bytes = commands.len() * 4;
    let buffer = profile.command_buffer.ptr;
    if buffer.is_null() {
        profile.command_buffer.size = bytes as u32;
        return HSA_STATUS_SUCCESS;
    }
    if profile.command_buffer.size as usize != bytes || value.is_null() {
        return fail(
            HSA_STATUS_ERROR,
            "get_info: wrong enable command buffer or NULL packet",
        );
    }
    // SAFETY: the caller's buffer is exactly `bytes` long; `value` is a packet.
    unsafe {
        std::ptr::copy_nonoverlapping(commands.as_ptr(), buffer as *mut u32, commands.len());
        fill_packet(value.cast(), buffer, commands.len());
    }
    HSA_STATUS_SUCCESS
}

/// `hsa_ven_amd_aqlprofile_iterate_event_ids`: the coordinate ids and names.
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn hsa_ven_amd_aqlprofile_iterate_event_ids(
    callback: Option<unsafe extern "C" fn(i32, *const c_char) -> hsa_status_t>,
) -> hsa_status_t {
    guard(|| {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR;
        };
        for (name, (_, id)) in DIMENSION_NAMES.iter().zip(DIMENSION_IDS) {
            // SAFETY: calling the caller's callback with a static name.
            unsafe { callback(id as i32, name.as_ptr()) };
        }
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_ven_amd_aqlprofile_iterate_event_coord`: coordinates of legacy sample `sample_id` of
/// `event` (the flat index is `sample_id * instances + block_index`).
///
/// # Safety
/// Pointers must be valid as the C API documents them (NULL only where it allows).
#[no_mangle]
pub unsafe extern "C" fn hsa_ven_amd_aqlprofile_iterate_event_coord(
    agent: hsa_agent_t,
    event: hsa_ven_amd_aqlprofile_event_t,
    sample_id: u32,
    callback: aqlprofile_coordinate_callback_t,
    userdata: *mut c_void,
) -> hsa_status_t {
    guard(|| {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR;
        };
        let agent = match hsa_agent(agent) {
            Ok(a) => a,
            Err(status) => return status,
        };
        let Some(block) = agent.block(event.block_name) else {
            return fail(HSA_STATUS_ERROR, format!("no block {}", event.block_name));
        };
        let instances = u64::from(block.instances(&agent.geometry));
        let cumulative = u64::from(sample_id) * instances + u64::from(event.block_index);
        report_coordinates(&agent, event.block_name, cumulative, callback, userdata)
    })
}
