//! The runtime's lifetime (`hsa_init`/`hsa_shut_down`, reference counted), system information,
//! agents (one CPU, the GPUs of the device configuration), ISAs, regions, memory pools, memory,
//! extension tables and the profiling queries.

use crate::clock::now_ns;
use crate::config::{DeviceConfig, GpuConfig};
use crate::ffi::guard;
use crate::hsa::*;
use crate::settings::settings;
use crate::signals;
use crate::{api, device, executable, tools};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Mutex, Once, OnceLock};

const AGENT_BASE: u64 = 0x5A6E_0000;
const REGION_BASE: u64 = 0x5E60_0000;
const POOL_BASE: u64 = 0x7001_0000;
const ISA_BASE: u64 = 0x15A0_0000;
/// Timestamps are nanoseconds.
pub const TIMESTAMP_FREQUENCY: u64 = 1_000_000_000;

/// The agents and devices of the process (built once from `RTL_SIM_DEVICES`).
pub struct System {
    /// The device configuration.
    pub config: DeviceConfig,
}

static SYSTEM: OnceLock<Result<System, String>> = OnceLock::new();
static INITIALIZED: AtomicBool = AtomicBool::new(false);
static REFS: Mutex<u32> = Mutex::new(0);
pub(crate) static ASYNC_COPY_PROFILING: AtomicBool = AtomicBool::new(false);

fn system() -> Result<&'static System, &'static str> {
    SYSTEM
        .get_or_init(|| DeviceConfig::from_env().map(|config| System { config }))
        .as_ref()
        .map_err(|e| e.as_str())
}

fn gpus() -> &'static [GpuConfig] {
    system().map_or(&[], |s| s.config.gpus.as_slice())
}

/// Whether the runtime is initialized.
pub fn initialized() -> bool {
    INITIALIZED.load(SeqCst)
}

/// The handle of agent `index` (0 = CPU, 1.. = GPUs).
pub fn agent_handle(index: usize) -> hsa_agent_t {
    hsa_agent_t {
        handle: AGENT_BASE + index as u64,
    }
}

pub(crate) fn agent_index(agent: hsa_agent_t) -> Option<usize> {
    let index = agent.handle.checked_sub(AGENT_BASE)? as usize;
    (index <= gpus().len()).then_some(index)
}

/// The device index of a GPU agent.
pub fn gpu_index(agent: hsa_agent_t) -> Option<usize> {
    agent_index(agent)?.checked_sub(1)
}

fn gpu(agent: hsa_agent_t) -> Option<&'static GpuConfig> {
    gpus().get(gpu_index(agent)?)
}

/// The ISA names the runtime knows, in handle order.
fn isa_names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names = Vec::new();
        for arch in ["gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"] {
            for features in [
                ":sramecc+:xnack-",
                "",
                ":sramecc-:xnack-",
                ":sramecc+:xnack+",
                ":sramecc-:xnack+",
                ":sramecc+",
                ":sramecc-",
                ":xnack-",
                ":xnack+",
            ] {
                names.push(format!("amdgcn-amd-amdhsa--{arch}{features}"));
            }
        }
        for arch in [
            "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1200", "gfx1201",
        ] {
            names.push(format!("amdgcn-amd-amdhsa--{arch}"));
        }
        names
    })
}

/// The ISA name of a GPU's architecture as ROCr reports it.
pub fn isa_name_of_arch(arch: &str) -> String {
    if arch.starts_with("gfx9") {
        format!("amdgcn-amd-amdhsa--{arch}:sramecc+:xnack-")
    } else {
        format!("amdgcn-amd-amdhsa--{arch}")
    }
}

fn isa_from_name_str(name: &str) -> Option<hsa_isa_t> {
    isa_names()
        .iter()
        .position(|n| n == name)
        .map(|i| hsa_isa_t {
            handle: ISA_BASE + i as u64,
        })
}

fn isa_name(isa: hsa_isa_t) -> Option<&'static str> {
    isa_names()
        .get(isa.handle.checked_sub(ISA_BASE)? as usize)
        .map(|s| s.as_str())
}

fn agent_isa_name(agent: hsa_agent_t) -> Option<String> {
    gpu(agent).map(|g| isa_name_of_arch(&g.name))
}

extern "C" fn unload_at_exit() {
    tools::unload(false);
}

/// `hsa_init`: the first call builds the agents, starts the devices and loads the tools.
pub(crate) unsafe extern "C" fn hsa_init() -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        {
            let mut refs = REFS.lock().unwrap_or_else(|p| p.into_inner());
            if *refs == u32::MAX {
                return HSA_STATUS_ERROR_REFCOUNT_OVERFLOW;
            }
            if *refs > 0 {
                *refs += 1;
                return HSA_STATUS_SUCCESS;
            }
            let sys = match system() {
                Ok(sys) => sys,
                Err(e) => {
                    eprintln!("rtl-sim: {e}");
                    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
                }
            };
            device::start(&sys.config.gpus);
            executable::open(executable::RuntimeHooks {
                agent_isa_name,
                isa_from_name: isa_from_name_str,
            });
            // The tables hold the defaults: from the first exported call, or reset by the last shutdown.
            api::ensure_defaults();
            *refs = 1;
            INITIALIZED.store(true, SeqCst);
        }
        static AT_EXIT: Once = Once::new();
        AT_EXIT.call_once(|| {
            // SAFETY: registers a plain extern "C" function.
            unsafe { libc::atexit(unload_at_exit) };
        });
        tools::load();
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_shut_down`: the last call unloads the tools and resets the tables.
pub(crate) unsafe extern "C" fn hsa_shut_down() -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        {
            let mut refs = REFS.lock().unwrap_or_else(|p| p.into_inner());
            if *refs == 0 {
                return HSA_STATUS_ERROR_NOT_INITIALIZED;
            }
            *refs -= 1;
            if *refs > 0 {
                return HSA_STATUS_SUCCESS;
            }
        }
        tools::unload(true);
        // SAFETY: the tools are gone; the application is shutting the runtime down.
        unsafe { api::reset() };
        executable::close();
        INITIALIZED.store(false, SeqCst);
        HSA_STATUS_SUCCESS
    })
}

/// Writes `value` to `out` (checked for null).
fn put<T: Copy>(out: *mut c_void, value: T) -> hsa_status_t {
    if out.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: the caller's out-pointer for an attribute of type T.
    unsafe { std::ptr::write_unaligned(out as *mut T, value) };
    HSA_STATUS_SUCCESS
}

/// Writes `text` NUL-padded into a `char[N]` attribute.
fn put_str<const N: usize>(out: *mut c_void, text: &str) -> hsa_status_t {
    let mut buffer = [0u8; N];
    let bytes = text.as_bytes();
    let n = bytes.len().min(N - 1);
    buffer[..n].copy_from_slice(&bytes[..n]);
    put(out, buffer)
}

fn extension_bits() -> [u8; 128] {
    let mut bits = [0u8; 128];
    for ext in [
        HSA_EXTENSION_AMD_PROFILER,
        HSA_EXTENSION_AMD_LOADER,
        HSA_EXTENSION_AMD_AQLPROFILE,
    ] {
        bits[ext as usize / 8] |= 1 << (ext % 8);
    }
    bits
}

fn build_version() -> *const c_char {
    static VERSION: OnceLock<std::ffi::CString> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            std::ffi::CString::new(format!("rtl-sim (ROCm {} tables)", settings().release.rocm))
                .unwrap_or_default()
        })
        .as_ptr()
}

/// `hsa_system_get_info`.
pub(crate) unsafe extern "C" fn hsa_system_get_info(
    attribute: hsa_system_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if !initialized() {
            return HSA_STATUS_ERROR_NOT_INITIALIZED;
        }
        match attribute {
            HSA_SYSTEM_INFO_VERSION_MAJOR => put(value, 1u16),
            HSA_SYSTEM_INFO_VERSION_MINOR => put(value, 1u16),
            HSA_SYSTEM_INFO_TIMESTAMP => put(value, now_ns()),
            HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY => put(value, TIMESTAMP_FREQUENCY),
            HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT => put(value, u64::MAX),
            HSA_SYSTEM_INFO_ENDIANNESS => put(value, HSA_ENDIANNESS_LITTLE),
            HSA_SYSTEM_INFO_MACHINE_MODEL => put(value, HSA_MACHINE_MODEL_LARGE),
            HSA_SYSTEM_INFO_EXTENSIONS => put(value, extension_bits()),
            HSA_AMD_SYSTEM_INFO_BUILD_VERSION => put(value, build_version()),
            HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED => put(value, false),
            HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT
            | HSA_AMD_SYSTEM_INFO_MWAITX_ENABLED
            | HSA_AMD_SYSTEM_INFO_DMABUF_SUPPORTED
            | HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED
            | HSA_AMD_SYSTEM_INFO_XNACK_ENABLED => put(value, false),
            HSA_AMD_SYSTEM_INFO_EXT_VERSION_MAJOR => put(value, 1u16),
            HSA_AMD_SYSTEM_INFO_EXT_VERSION_MINOR => put(value, 0u16),
            _ => HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
    })
}

/// `hsa_iterate_agents`: the CPU agent, then the GPUs in configuration order.
pub(crate) unsafe extern "C" fn hsa_iterate_agents(
    callback: hsa_agent_callback,
    data: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if !initialized() {
            return HSA_STATUS_ERROR_NOT_INITIALIZED;
        }
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        for index in 0..=gpus().len() {
            // SAFETY: the application's callback.
            let status = unsafe { callback(agent_handle(index), data) };
            if status != HSA_STATUS_SUCCESS {
                return status;
            }
        }
        HSA_STATUS_SUCCESS
    })
}

const CPU_NAME: &str = "AMD EPYC (simulated host)";
const CPU_CORES: u32 = 64;

/// `hsa_agent_get_info`.
pub(crate) unsafe extern "C" fn hsa_agent_get_info(
    agent: hsa_agent_t,
    attribute: hsa_agent_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if !initialized() {
            return HSA_STATUS_ERROR_NOT_INITIALIZED;
        }
        let Some(index) = agent_index(agent) else {
            return HSA_STATUS_ERROR_INVALID_AGENT;
        };
        match gpus().get(index.wrapping_sub(1)) {
            Some(g) => gpu_info(index - 1, g, attribute, value),
            None => cpu_info(attribute, value),
        }
    })
}

fn cpu_info(attribute: hsa_agent_info_t, value: *mut c_void) -> hsa_status_t {
    match attribute {
        HSA_AGENT_INFO_NAME => put_str::<64>(value, CPU_NAME),
        HSA_AGENT_INFO_VENDOR_NAME => put_str::<64>(value, "CPU"),
        HSA_AGENT_INFO_FEATURE => put(value, 0u32),
        HSA_AGENT_INFO_MACHINE_MODEL => put(value, HSA_MACHINE_MODEL_LARGE),
        HSA_AGENT_INFO_PROFILE => put(value, HSA_PROFILE_FULL),
        HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE => {
            put(value, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR)
        }
        HSA_AGENT_INFO_WAVEFRONT_SIZE
        | HSA_AGENT_INFO_WORKGROUP_MAX_SIZE
        | HSA_AGENT_INFO_GRID_MAX_SIZE => put(value, 0u32),
        HSA_AGENT_INFO_WORKGROUP_MAX_DIM => put(value, [0u16; 3]),
        HSA_AGENT_INFO_GRID_MAX_DIM => put(value, hsa_dim3_t::default()),
        HSA_AGENT_INFO_FBARRIER_MAX_SIZE
        | HSA_AGENT_INFO_QUEUES_MAX
        | HSA_AGENT_INFO_QUEUE_MIN_SIZE
        | HSA_AGENT_INFO_QUEUE_MAX_SIZE => put(value, 0u32),
        HSA_AGENT_INFO_QUEUE_TYPE => put(value, HSA_QUEUE_TYPE_MULTI),
        HSA_AGENT_INFO_NODE | HSA_AMD_AGENT_INFO_DRIVER_NODE_ID => put(value, 0u32),
        HSA_AGENT_INFO_DEVICE => put(value, HSA_DEVICE_TYPE_CPU),
        HSA_AGENT_INFO_CACHE_SIZE => put(value, [32u32 << 10, 1 << 20, 32 << 20, 0]),
        HSA_AGENT_INFO_EXTENSIONS => put(value, [0u8; 128]),
        HSA_AGENT_INFO_VERSION_MAJOR | HSA_AGENT_INFO_VERSION_MINOR => put(value, 1u16),
        HSA_AMD_AGENT_INFO_CHIP_ID | HSA_AMD_AGENT_INFO_BDFID | HSA_AMD_AGENT_INFO_DOMAIN => {
            put(value, 0u32)
        }
        HSA_AMD_AGENT_INFO_CACHELINE_SIZE => put(value, 64u32),
        HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT => put(value, CPU_CORES),
        HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY => put(value, crate::config::CPU_CLOCK_MHZ),
        HSA_AMD_AGENT_INFO_PRODUCT_NAME => put_str::<64>(value, CPU_NAME),
        HSA_AMD_AGENT_INFO_UUID => put_str::<21>(value, "CPU-XX"),
        HSA_AMD_AGENT_INFO_NUM_XCC => put(value, 0u32),
        HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY => put(value, TIMESTAMP_FREQUENCY),
        HSA_AMD_AGENT_INFO_NEAREST_CPU => put(value, agent_handle(0)),
        _ => HSA_STATUS_ERROR_INVALID_ARGUMENT,
    }
}

fn gpu_info(
    device: usize,
    g: &GpuConfig,
    attribute: hsa_agent_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    let isa = isa_from_name_str(&isa_name_of_arch(&g.name)).unwrap_or_default();
    match attribute {
        HSA_AGENT_INFO_NAME => put_str::<64>(value, &g.name),
        HSA_AGENT_INFO_VENDOR_NAME => put_str::<64>(value, "AMD"),
        HSA_AGENT_INFO_FEATURE => put(value, HSA_AGENT_FEATURE_KERNEL_DISPATCH),
        HSA_AGENT_INFO_MACHINE_MODEL => put(value, HSA_MACHINE_MODEL_LARGE),
        HSA_AGENT_INFO_PROFILE => put(value, HSA_PROFILE_BASE),
        HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE
        | HSA_AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES => {
            put(value, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR)
        }
        HSA_AGENT_INFO_FAST_F16_OPERATION => put(value, true),
        HSA_AGENT_INFO_WAVEFRONT_SIZE => put(value, g.wave_front_size),
        HSA_AGENT_INFO_WORKGROUP_MAX_DIM => put(value, [1024u16; 3]),
        HSA_AGENT_INFO_WORKGROUP_MAX_SIZE => put(value, 1024u32),
        HSA_AGENT_INFO_GRID_MAX_DIM => put(
            value,
            hsa_dim3_t {
                x: u32::MAX,
                y: u32::MAX,
                z: u32::MAX,
            },
        ),
        HSA_AGENT_INFO_GRID_MAX_SIZE => put(value, u32::MAX),
        HSA_AGENT_INFO_FBARRIER_MAX_SIZE => put(value, 32u32),
        HSA_AGENT_INFO_QUEUES_MAX => put(value, 128u32),
        HSA_AGENT_INFO_QUEUE_MIN_SIZE => put(value, crate::queues::QUEUE_MIN_SIZE),
        HSA_AGENT_INFO_QUEUE_MAX_SIZE => put(value, crate::queues::QUEUE_MAX_SIZE),
        HSA_AGENT_INFO_QUEUE_TYPE => put(value, HSA_QUEUE_TYPE_MULTI),
        HSA_AGENT_INFO_NODE | HSA_AMD_AGENT_INFO_DRIVER_NODE_ID => put(value, g.node_id),
        HSA_AGENT_INFO_DEVICE => put(value, HSA_DEVICE_TYPE_GPU),
        HSA_AGENT_INFO_CACHE_SIZE => put(value, [16u32 << 10, 4 << 20, 256 << 20, 0]),
        HSA_AGENT_INFO_ISA => put(value, isa),
        HSA_AGENT_INFO_EXTENSIONS => put(value, extension_bits()),
        HSA_AGENT_INFO_VERSION_MAJOR | HSA_AGENT_INFO_VERSION_MINOR => put(value, 1u16),
        HSA_AMD_AGENT_INFO_CHIP_ID => put(value, g.device_id),
        HSA_AMD_AGENT_INFO_CACHELINE_SIZE => put(value, 128u32),
        HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT
        | HSA_AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT => put(value, g.cu_count()),
        HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY => put(value, g.max_engine_clk_fcompute),
        HSA_AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS => put(value, 4u32),
        HSA_AMD_AGENT_INFO_BDFID => put(value, g.location_id),
        HSA_AMD_AGENT_INFO_MEMORY_WIDTH => put(value, 8192u32),
        HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY => put(value, 1300u32),
        HSA_AMD_AGENT_INFO_PRODUCT_NAME => put_str::<64>(value, &g.product),
        HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU => put(value, g.max_waves_per_cu()),
        HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU => put(value, g.simd_per_cu),
        HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES => put(value, g.shader_engines()),
        HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE => put(value, g.simd_arrays_per_engine),
        HSA_AMD_AGENT_INFO_HDP_FLUSH => put(value, [0u64; 2]),
        HSA_AMD_AGENT_INFO_DOMAIN => put(value, g.domain),
        HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES => put(value, true),
        HSA_AMD_AGENT_INFO_UUID => put_str::<21>(value, &g.uuid()),
        HSA_AMD_AGENT_INFO_ASIC_REVISION => put(value, 1u32),
        HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS => put(value, false),
        HSA_AMD_AGENT_INFO_MEMORY_AVAIL => put(value, g.local_mem_gib << 30),
        HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY => put(value, TIMESTAMP_FREQUENCY),
        HSA_AMD_AGENT_INFO_ASIC_FAMILY_ID => put(value, g.gfx_target_version / 10000),
        HSA_AMD_AGENT_INFO_UCODE_VERSION | HSA_AMD_AGENT_INFO_SDMA_UCODE_VERSION => {
            put(value, 1u32)
        }
        HSA_AMD_AGENT_INFO_NUM_SDMA_ENG => put(value, 2u32),
        HSA_AMD_AGENT_INFO_NUM_SDMA_XGMI_ENG | HSA_AMD_AGENT_INFO_IOMMU_SUPPORT => put(value, 0u32),
        HSA_AMD_AGENT_INFO_NUM_XCC => put(value, g.num_xcc),
        HSA_AMD_AGENT_INFO_DRIVER_UID => put(value, crate::config::kfd_gpu_id(device)),
        HSA_AMD_AGENT_INFO_NEAREST_CPU => put(value, agent_handle(0)),
        HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES | HSA_AMD_AGENT_INFO_AQL_EXTENSIONS => {
            put(value, [0u8; 8])
        }
        HSA_AMD_AGENT_INFO_SCRATCH_LIMIT_MAX | HSA_AMD_AGENT_INFO_SCRATCH_LIMIT_CURRENT => {
            put(value, 1u64 << 32)
        }
        _ => HSA_STATUS_ERROR_INVALID_ARGUMENT,
    }
}

/// `hsa_agent_iterate_isas`: one ISA per GPU agent.
pub(crate) unsafe extern "C" fn hsa_agent_iterate_isas(
    agent: hsa_agent_t,
    callback: Option<unsafe extern "C" fn(isa: hsa_isa_t, data: *mut c_void) -> hsa_status_t>,
    data: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        if agent_index(agent).is_none() {
            return HSA_STATUS_ERROR_INVALID_AGENT;
        }
        match agent_isa_name(agent).and_then(|n| isa_from_name_str(&n)) {
            // SAFETY: the application's callback.
            Some(isa) => unsafe { callback(isa, data) },
            None => HSA_STATUS_SUCCESS,
        }
    })
}

/// `hsa_isa_from_name`.
pub(crate) unsafe extern "C" fn hsa_isa_from_name(
    name: *const c_char,
    isa: *mut hsa_isa_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if name.is_null() || isa.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: a NUL-terminated string from the caller.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        match isa_from_name_str(&name) {
            Some(found) => put(isa as *mut c_void, found),
            None => HSA_STATUS_ERROR_INVALID_ISA_NAME,
        }
    })
}

fn isa_info(isa: hsa_isa_t, attribute: hsa_isa_info_t, value: *mut c_void) -> hsa_status_t {
    let Some(name) = isa_name(isa) else {
        return HSA_STATUS_ERROR_INVALID_ISA;
    };
    let wave = if name.contains("gfx1") { 32u32 } else { 64 };
    match attribute {
        HSA_ISA_INFO_NAME_LENGTH => put(value, name.len() as u32 + 1),
        HSA_ISA_INFO_NAME => {
            if value.is_null() {
                return HSA_STATUS_ERROR_INVALID_ARGUMENT;
            }
            // SAFETY: the caller provides NAME_LENGTH bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(name.as_ptr(), value as *mut u8, name.len());
                *(value as *mut u8).add(name.len()) = 0;
            }
            HSA_STATUS_SUCCESS
        }
        HSA_ISA_INFO_CALL_CONVENTION_COUNT => put(value, 1u32),
        HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONT_SIZE => put(value, wave),
        HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONTS_PER_COMPUTE_UNIT => put(value, 40u32),
        HSA_ISA_INFO_MACHINE_MODELS => put(value, [false, true]),
        HSA_ISA_INFO_PROFILES => put(value, [true, false]),
        HSA_ISA_INFO_DEFAULT_FLOAT_ROUNDING_MODES
        | HSA_ISA_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES => {
            put(value, [false, false, true])
        }
        HSA_ISA_INFO_FAST_F16_OPERATION => put(value, true),
        HSA_ISA_INFO_WORKGROUP_MAX_DIM => put(value, [1024u16; 3]),
        HSA_ISA_INFO_WORKGROUP_MAX_SIZE => put(value, 1024u32),
        HSA_ISA_INFO_GRID_MAX_DIM => put(
            value,
            hsa_dim3_t {
                x: u32::MAX,
                y: u32::MAX,
                z: u32::MAX,
            },
        ),
        HSA_ISA_INFO_GRID_MAX_SIZE => put(value, u64::MAX),
        HSA_ISA_INFO_FBARRIER_MAX_SIZE => put(value, 32u32),
        _ => HSA_STATUS_ERROR_INVALID_ARGUMENT,
    }
}

/// `hsa_isa_get_info_alt`.
pub(crate) unsafe extern "C" fn hsa_isa_get_info_alt(
    isa: hsa_isa_t,
    attribute: hsa_isa_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || isa_info(isa, attribute, value))
}

/// `hsa_isa_get_info` (only call convention 0).
pub(crate) unsafe extern "C" fn hsa_isa_get_info(
    isa: hsa_isa_t,
    attribute: hsa_isa_info_t,
    index: u32,
    value: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if index != 0 {
            HSA_STATUS_ERROR_INVALID_INDEX
        } else {
            isa_info(isa, attribute, value)
        }
    })
}

/// `hsa_isa_compatible`.
pub(crate) unsafe extern "C" fn hsa_isa_compatible(
    code_object_isa: hsa_isa_t,
    agent_isa: hsa_isa_t,
    result: *mut bool,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        match (isa_name(code_object_isa), isa_name(agent_isa)) {
            (Some(code), Some(agent)) => put(
                result as *mut c_void,
                crate::code_object::isa_compatible(code, agent),
            ),
            _ => HSA_STATUS_ERROR_INVALID_ISA,
        }
    })
}

/// `hsa_isa_iterate_wavefronts`: one wavefront size per ISA (the handle is the size).
pub(crate) unsafe extern "C" fn hsa_isa_iterate_wavefronts(
    isa: hsa_isa_t,
    callback: Option<
        unsafe extern "C" fn(wavefront: hsa_wavefront_t, data: *mut c_void) -> hsa_status_t,
    >,
    data: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let Some(name) = isa_name(isa) else {
            return HSA_STATUS_ERROR_INVALID_ISA;
        };
        let Some(callback) = callback else {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        };
        let size = if name.contains("gfx1") { 32 } else { 64 };
        // SAFETY: the application's callback.
        unsafe { callback(hsa_wavefront_t { handle: size }, data) }
    })
}

/// `hsa_wavefront_get_info`.
pub(crate) unsafe extern "C" fn hsa_wavefront_get_info(
    wavefront: hsa_wavefront_t,
    attribute: u32,
    value: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || match (wavefront.handle, attribute) {
        (32 | 64, HSA_WAVEFRONT_INFO_SIZE) => put(value, wavefront.handle as u32),
        (32 | 64, _) => HSA_STATUS_ERROR_INVALID_ARGUMENT,
        _ => HSA_STATUS_ERROR_INVALID_WAVEFRONT,
    })
}

/// `hsa_agent_get_exception_policies` / `hsa_isa_get_exception_policies`: none.
pub(crate) unsafe extern "C" fn hsa_agent_get_exception_policies(
    _agent: hsa_agent_t,
    _profile: hsa_profile_t,
    mask: *mut u16,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || put(mask as *mut c_void, 0u16))
}

/// `hsa_isa_get_exception_policies`: none.
pub(crate) unsafe extern "C" fn hsa_isa_get_exception_policies(
    _isa: hsa_isa_t,
    _profile: hsa_profile_t,
    mask: *mut u16,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || put(mask as *mut c_void, 0u16))
}

/// `hsa_isa_get_round_method`: round to nearest.
pub(crate) unsafe extern "C" fn hsa_isa_get_round_method(
    _isa: hsa_isa_t,
    _fp_type: u32,
    _flush_mode: u32,
    round_method: *mut u32,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || put(round_method as *mut c_void, 1u32))
}

/// `hsa_agent_iterate_caches`: caches are not modelled.
pub(crate) unsafe extern "C" fn hsa_agent_iterate_caches(
    agent: hsa_agent_t,
    _callback: Option<unsafe extern "C" fn(cache: hsa_cache_t, data: *mut c_void) -> hsa_status_t>,
    _data: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if agent_index(agent).is_some() {
            HSA_STATUS_SUCCESS
        } else {
            HSA_STATUS_ERROR_INVALID_AGENT
        }
    })
}

// ---- regions and memory pools ----

/// A memory region / pool of an agent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Memory {
    /// Host memory, fine grained, kernel arguments.
    SystemFine,
    /// Host memory, coarse grained.
    SystemCoarse,
    /// Device memory (host memory underneath), coarse grained.
    Device,
    /// LDS.
    Group,
}

fn memories(agent_index: usize) -> &'static [Memory] {
    if agent_index == 0 {
        &[Memory::SystemFine, Memory::SystemCoarse]
    } else {
        &[Memory::Device, Memory::Group]
    }
}

fn memory_handle(base: u64, agent_index: usize, i: usize) -> u64 {
    base + (agent_index as u64) * 16 + i as u64
}

fn memory_of(base: u64, handle: u64) -> Option<(usize, Memory)> {
    let offset = handle.checked_sub(base)?;
    let (agent, i) = ((offset / 16) as usize, (offset % 16) as usize);
    (agent <= gpus().len()).then_some(())?;
    memories(agent).get(i).map(|m| (agent, *m))
}

fn memory_size(agent: usize, memory: Memory) -> u64 {
    match memory {
        Memory::SystemFine | Memory::SystemCoarse => 512 << 30,
        Memory::Device => gpus().get(agent - 1).map_or(0, |g| g.local_mem_gib << 30),
        Memory::Group => gpus()
            .get(agent - 1)
            .map_or(0, |g| u64::from(g.lds_size_in_kb) << 10),
    }
}

fn global_flags(memory: Memory) -> u32 {
    match memory {
        Memory::SystemFine => HSA_REGION_GLOBAL_FLAG_KERNARG | HSA_REGION_GLOBAL_FLAG_FINE_GRAINED,
        Memory::SystemCoarse | Memory::Device => HSA_REGION_GLOBAL_FLAG_COARSE_GRAINED,
        Memory::Group => 0,
    }
}

/// Calls `callback` with the handle of every region/pool of `agent` (`base` picks which).
fn iterate_memories<H>(
    agent: hsa_agent_t,
    base: u64,
    handle: fn(u64) -> H,
    callback: Option<unsafe extern "C" fn(H, *mut c_void) -> hsa_status_t>,
    data: *mut c_void,
) -> hsa_status_t {
    let Some(index) = agent_index(agent) else {
        return HSA_STATUS_ERROR_INVALID_AGENT;
    };
    let Some(callback) = callback else {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    };
    for i in 0..memories(index).len() {
        // SAFETY: the application's callback.
        let status = unsafe { callback(handle(memory_handle(base, index, i)), data) };
        if status != HSA_STATUS_SUCCESS {
            return status;
        }
    }
    HSA_STATUS_SUCCESS
}

/// `hsa_agent_iterate_regions`.
pub(crate) unsafe extern "C" fn hsa_agent_iterate_regions(
    agent: hsa_agent_t,
    callback: Option<unsafe extern "C" fn(region: hsa_region_t, data: *mut c_void) -> hsa_status_t>,
    data: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        iterate_memories(
            agent,
            REGION_BASE,
            |handle| hsa_region_t { handle },
            callback,
            data,
        )
    })
}

/// `hsa_region_get_info`.
pub(crate) unsafe extern "C" fn hsa_region_get_info(
    region: hsa_region_t,
    attribute: hsa_region_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let Some((agent, memory)) = memory_of(REGION_BASE, region.handle) else {
            return HSA_STATUS_ERROR_INVALID_REGION;
        };
        let global = memory != Memory::Group;
        match attribute {
            HSA_REGION_INFO_SEGMENT => put(
                value,
                if global {
                    HSA_REGION_SEGMENT_GLOBAL
                } else {
                    HSA_REGION_SEGMENT_GROUP
                },
            ),
            HSA_REGION_INFO_GLOBAL_FLAGS => put(value, global_flags(memory)),
            HSA_REGION_INFO_SIZE | HSA_REGION_INFO_ALLOC_MAX_SIZE => {
                put(value, memory_size(agent, memory) as usize)
            }
            HSA_REGION_INFO_ALLOC_MAX_PRIVATE_WORKGROUP_SIZE => put(value, 0u32),
            HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED => put(value, global),
            HSA_REGION_INFO_RUNTIME_ALLOC_GRANULE | HSA_REGION_INFO_RUNTIME_ALLOC_ALIGNMENT => {
                put(value, 4096usize)
            }
            HSA_AMD_REGION_INFO_HOST_ACCESSIBLE => put(value, agent == 0),
            HSA_AMD_REGION_INFO_BASE => put(value, 0usize),
            HSA_AMD_REGION_INFO_BUS_WIDTH => put(value, 0u32),
            HSA_AMD_REGION_INFO_MAX_CLOCK_FREQUENCY => put(value, 0u32),
            _ => HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
    })
}

/// `hsa_amd_agent_iterate_memory_pools`.
pub(crate) unsafe extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: hsa_agent_t,
    callback: Option<
        unsafe extern "C" fn(memory_pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t,
    >,
    data: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        iterate_memories(
            agent,
            POOL_BASE,
            |handle| hsa_amd_memory_pool_t { handle },
            callback,
            data,
        )
    })
}

/// `hsa_amd_memory_pool_get_info`.
pub(crate) unsafe extern "C" fn hsa_amd_memory_pool_get_info(
    memory_pool: hsa_amd_memory_pool_t,
    attribute: hsa_amd_memory_pool_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let Some((agent, memory)) = memory_of(POOL_BASE, memory_pool.handle) else {
            return HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
        };
        let global = memory != Memory::Group;
        match attribute {
            HSA_AMD_MEMORY_POOL_INFO_SEGMENT => put(
                value,
                if global {
                    HSA_REGION_SEGMENT_GLOBAL
                } else {
                    HSA_REGION_SEGMENT_GROUP
                },
            ),
            HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS => {
                let flags = match memory {
                    Memory::SystemFine => {
                        HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT
                            | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED
                    }
                    Memory::SystemCoarse | Memory::Device => {
                        HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED
                    }
                    Memory::Group => 0,
                };
                put(value, flags)
            }
            HSA_AMD_MEMORY_POOL_INFO_SIZE | HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE => {
                put(value, memory_size(agent, memory) as usize)
            }
            HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED => put(value, global),
            HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE
            | HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT
            | HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE => put(value, 4096usize),
            HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL => put(value, memory == Memory::SystemFine),
            HSA_AMD_MEMORY_POOL_INFO_LOCATION => put(
                value,
                if agent == 0 {
                    HSA_AMD_MEMORY_POOL_LOCATION_CPU
                } else {
                    HSA_AMD_MEMORY_POOL_LOCATION_GPU
                },
            ),
            _ => HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
    })
}

/// `hsa_amd_agent_memory_pool_get_info`.
pub(crate) unsafe extern "C" fn hsa_amd_agent_memory_pool_get_info(
    agent: hsa_agent_t,
    memory_pool: hsa_amd_memory_pool_t,
    attribute: hsa_amd_agent_memory_pool_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let Some(index) = agent_index(agent) else {
            return HSA_STATUS_ERROR_INVALID_AGENT;
        };
        let Some((owner, memory)) = memory_of(POOL_BASE, memory_pool.handle) else {
            return HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
        };
        match attribute {
            HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS => {
                let access = if owner == index || memory == Memory::SystemFine {
                    HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT
                } else if memory == Memory::Group {
                    HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED
                } else {
                    HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT
                };
                put(value, access)
            }
            HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS => put(value, u32::from(owner != index)),
            _ => HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
    })
}

/// A live allocation.
#[derive(Clone, Copy)]
pub(crate) struct Allocation {
    pub(crate) size: usize,
    pub(crate) owner: usize,
    pub(crate) memory: Memory,
    user_data: usize,
    pub(crate) backing: Backing,
}

/// Where an allocation's bytes live.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Backing {
    /// `posix_memalign`.
    Heap,
    /// A memfd of this process mapped shared (device memory, which other processes may import
    /// with an IPC handle); the fd stays open until the allocation is freed.
    Shared { fd: i32, check: u64 },
    /// Another allocation's memfd mapped by `hsa_amd_ipc_memory_attach`.
    Attached,
}

/// Live allocations by address.
static ALLOCATIONS: Mutex<BTreeMap<usize, Allocation>> = Mutex::new(BTreeMap::new());

pub(crate) fn allocations() -> std::sync::MutexGuard<'static, BTreeMap<usize, Allocation>> {
    ALLOCATIONS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Records a live allocation.
pub(crate) fn record_allocation(
    address: usize,
    size: usize,
    owner: usize,
    memory: Memory,
    backing: Backing,
) {
    allocations().insert(
        address,
        Allocation {
            size,
            owner,
            memory,
            user_data: 0,
            backing,
        },
    );
}

fn allocate(size: usize, owner: usize, memory: Memory, ptr: *mut *mut c_void) -> hsa_status_t {
    if ptr.is_null() || size == 0 {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    // Device memory is shareable between processes; when no memfd can be had (out of file
    // descriptors) it is ordinary memory that cannot be exported.
    let shared = if memory == Memory::Device {
        crate::ipc::shared_memory(size)
    } else {
        None
    };
    let (out, backing) = match shared {
        Some((out, fd, check)) => (out, Backing::Shared { fd, check }),
        None => {
            let mut out: *mut c_void = std::ptr::null_mut();
            // SAFETY: posix_memalign with a power-of-two alignment and a valid out-pointer.
            if unsafe { libc::posix_memalign(&mut out, 4096, size) } != 0 {
                return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
            }
            // SAFETY: fresh allocation of `size` bytes.
            unsafe { std::ptr::write_bytes(out as *mut u8, 0, size) };
            (out, Backing::Heap)
        }
    };
    record_allocation(out as usize, size, owner, memory, backing);
    // SAFETY: checked non-null.
    unsafe { *ptr = out };
    HSA_STATUS_SUCCESS
}

fn free(ptr: *mut c_void) -> hsa_status_t {
    if ptr.is_null() {
        return HSA_STATUS_SUCCESS;
    }
    let mut allocations = allocations();
    // Imported memory is released with hsa_amd_ipc_memory_detach.
    let Some(a) = allocations
        .get(&(ptr as usize))
        .copied()
        .filter(|a| a.backing != Backing::Attached)
    else {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    };
    allocations.remove(&(ptr as usize));
    drop(allocations);
    match a.backing {
        Backing::Shared { fd, .. } => crate::ipc::release_shared(ptr, a.size, Some(fd)),
        // SAFETY: allocated by posix_memalign in `allocate`.
        _ => unsafe { libc::free(ptr) },
    }
    HSA_STATUS_SUCCESS
}

/// `hsa_memory_allocate`.
pub(crate) unsafe extern "C" fn hsa_memory_allocate(
    region: hsa_region_t,
    size: usize,
    ptr: *mut *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        match memory_of(REGION_BASE, region.handle) {
            Some((_, Memory::Group)) => HSA_STATUS_ERROR_INVALID_ALLOCATION,
            Some((owner, memory)) => allocate(size, owner, memory, ptr),
            None => HSA_STATUS_ERROR_INVALID_REGION,
        }
    })
}

/// `hsa_amd_memory_pool_allocate`.
pub(crate) unsafe extern "C" fn hsa_amd_memory_pool_allocate(
    memory_pool: hsa_amd_memory_pool_t,
    size: usize,
    _flags: u32,
    ptr: *mut *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        match memory_of(POOL_BASE, memory_pool.handle) {
            Some((_, Memory::Group)) => HSA_STATUS_ERROR_INVALID_ALLOCATION,
            Some((owner, memory)) => allocate(size, owner, memory, ptr),
            None => HSA_STATUS_ERROR_INVALID_MEMORY_POOL,
        }
    })
}

/// The allocation containing `address`: (base, allocation).
fn allocation_containing(address: usize) -> Option<(usize, Allocation)> {
    let allocations = allocations();
    let (&base, &a) = allocations.range(..=address).next_back()?;
    (address < base + a.size.max(1)).then_some((base, a))
}

/// `hsa_amd_pointer_info`: type, bases, size, owner and flags of the allocation containing `ptr`.
pub(crate) unsafe extern "C" fn hsa_amd_pointer_info(
    ptr: *const c_void,
    info: *mut hsa_amd_pointer_info_t,
    alloc: Option<unsafe extern "C" fn(size: usize) -> *mut c_void>,
    num_agents_accessible: *mut u32,
    accessible: *mut *mut hsa_agent_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if info.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        let mut out = hsa_amd_pointer_info_t::default();
        let found = allocation_containing(ptr as usize);
        if let Some((base, a)) = found {
            out.type_ = if a.backing == Backing::Attached {
                HSA_EXT_POINTER_TYPE_IPC
            } else {
                HSA_EXT_POINTER_TYPE_HSA
            };
            out.agentBaseAddress = base as *mut c_void;
            out.hostBaseAddress = base as *mut c_void;
            out.sizeInBytes = a.size;
            out.userData = a.user_data as *mut c_void;
            out.agentOwner = agent_handle(a.owner);
            out.global_flags = global_flags(a.memory);
        }
        // SAFETY: the caller sets `size` to the bytes it provides; we write at most that many.
        unsafe {
            let size = ((*info).size as usize).min(std::mem::size_of::<hsa_amd_pointer_info_t>());
            out.size = size as u32;
            std::ptr::copy_nonoverlapping(&out as *const _ as *const u8, info as *mut u8, size);
        }
        if let (Some(alloc), false, false) =
            (alloc, num_agents_accessible.is_null(), accessible.is_null())
        {
            let agents: Vec<hsa_agent_t> = if found.is_some() {
                (0..=gpus().len()).map(agent_handle).collect()
            } else {
                Vec::new()
            };
            // SAFETY: the caller's allocator returns memory for the array; out-pointers checked.
            unsafe {
                let array = alloc(agents.len().max(1) * std::mem::size_of::<hsa_agent_t>())
                    as *mut hsa_agent_t;
                if array.is_null() {
                    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
                }
                std::ptr::copy_nonoverlapping(agents.as_ptr(), array, agents.len());
                *num_agents_accessible = agents.len() as u32;
                *accessible = array;
            }
        }
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_amd_pointer_info_set_userdata`.
pub(crate) unsafe extern "C" fn hsa_amd_pointer_info_set_userdata(
    ptr: *const c_void,
    userdata: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let mut allocations = allocations();
        match allocations.get_mut(&(ptr as usize)) {
            Some(a) => {
                a.user_data = userdata as usize;
                HSA_STATUS_SUCCESS
            }
            None => HSA_STATUS_ERROR_INVALID_ARGUMENT,
        }
    })
}

/// `hsa_memory_free`.
pub(crate) unsafe extern "C" fn hsa_memory_free(ptr: *mut c_void) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || free(ptr))
}

/// `hsa_amd_memory_pool_free`.
pub(crate) unsafe extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || free(ptr))
}

/// `hsa_amd_agents_allow_access`: all memory is host memory, so access is always possible.
pub(crate) unsafe extern "C" fn hsa_amd_agents_allow_access(
    num_agents: u32,
    agents: *const hsa_agent_t,
    _flags: *const u32,
    ptr: *const c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if num_agents == 0 || agents.is_null() || ptr.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: `num_agents` agents from the caller.
        let list = unsafe { std::slice::from_raw_parts(agents, num_agents as usize) };
        if list.iter().any(|a| agent_index(*a).is_none()) {
            return HSA_STATUS_ERROR_INVALID_AGENT;
        }
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_memory_copy`.
pub(crate) unsafe extern "C" fn hsa_memory_copy(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if dst.is_null() || src.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: the caller passes `size` readable and writable bytes.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_amd_memory_fill`: `count` dwords of `value`.
pub(crate) unsafe extern "C" fn hsa_amd_memory_fill(
    ptr: *mut c_void,
    value: u32,
    count: usize,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if ptr.is_null() {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: the caller passes `count` writable dwords.
        unsafe { std::slice::from_raw_parts_mut(ptr as *mut u32, count) }.fill(value);
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_amd_memory_lock`: host memory is already accessible; the agent pointer is the host pointer.
pub(crate) unsafe extern "C" fn hsa_amd_memory_lock(
    host_ptr: *mut c_void,
    _size: usize,
    _agents: *mut hsa_agent_t,
    _num_agent: c_int,
    agent_ptr: *mut *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || put(agent_ptr as *mut c_void, host_ptr))
}

/// `hsa_amd_memory_lock_to_pool`.
pub(crate) unsafe extern "C" fn hsa_amd_memory_lock_to_pool(
    host_ptr: *mut c_void,
    _size: usize,
    _agents: *mut hsa_agent_t,
    _num_agent: c_int,
    _pool: hsa_amd_memory_pool_t,
    _flags: u32,
    agent_ptr: *mut *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || put(agent_ptr as *mut c_void, host_ptr))
}

/// `hsa_amd_memory_unlock`, `hsa_memory_register`-style no-ops.
pub(crate) unsafe extern "C" fn hsa_amd_memory_unlock(_host_ptr: *mut c_void) -> hsa_status_t {
    HSA_STATUS_SUCCESS
}

/// `hsa_memory_register`: nothing to do.
pub(crate) unsafe extern "C" fn hsa_memory_register(
    _ptr: *mut c_void,
    _size: usize,
) -> hsa_status_t {
    HSA_STATUS_SUCCESS
}

/// `hsa_memory_deregister`: nothing to do.
pub(crate) unsafe extern "C" fn hsa_memory_deregister(
    _ptr: *mut c_void,
    _size: usize,
) -> hsa_status_t {
    HSA_STATUS_SUCCESS
}

/// `hsa_memory_assign_agent`: nothing to do.
pub(crate) unsafe extern "C" fn hsa_memory_assign_agent(
    _ptr: *mut c_void,
    _agent: hsa_agent_t,
    _access: u32,
) -> hsa_status_t {
    HSA_STATUS_SUCCESS
}

/// `hsa_amd_coherency_get_type`: fine grained.
pub(crate) unsafe extern "C" fn hsa_amd_coherency_get_type(
    agent: hsa_agent_t,
    type_: *mut u32,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if gpu(agent).is_none() {
            HSA_STATUS_ERROR_INVALID_AGENT
        } else {
            put(type_ as *mut c_void, 1u32)
        }
    })
}

/// `hsa_amd_coherency_set_type`.
pub(crate) unsafe extern "C" fn hsa_amd_coherency_set_type(
    agent: hsa_agent_t,
    _type: u32,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if gpu(agent).is_none() {
            HSA_STATUS_ERROR_INVALID_AGENT
        } else {
            HSA_STATUS_SUCCESS
        }
    })
}

// ---- profiling ----

/// `hsa_amd_profiling_get_dispatch_time`: the completion signal's timestamps (ns).
pub(crate) unsafe extern "C" fn hsa_amd_profiling_get_dispatch_time(
    agent: hsa_agent_t,
    signal: hsa_signal_t,
    time: *mut hsa_amd_profiling_dispatch_time_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if gpu(agent).is_none() {
            return HSA_STATUS_ERROR_INVALID_AGENT;
        }
        // SAFETY: the application passes a live signal.
        let Some(s) = (unsafe { signals::signal(signal) }) else {
            return HSA_STATUS_ERROR_INVALID_SIGNAL;
        };
        let (start, end) = s.timestamps();
        put(
            time as *mut c_void,
            hsa_amd_profiling_dispatch_time_t { start, end },
        )
    })
}

/// `hsa_amd_profiling_get_async_copy_time`.
pub(crate) unsafe extern "C" fn hsa_amd_profiling_get_async_copy_time(
    signal: hsa_signal_t,
    time: *mut hsa_amd_profiling_async_copy_time_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        // SAFETY: the application passes a live signal.
        let Some(s) = (unsafe { signals::signal(signal) }) else {
            return HSA_STATUS_ERROR_INVALID_SIGNAL;
        };
        let (start, end) = s.timestamps();
        put(
            time as *mut c_void,
            hsa_amd_profiling_async_copy_time_t { start, end },
        )
    })
}

/// `hsa_amd_profiling_async_copy_enable`.
pub(crate) unsafe extern "C" fn hsa_amd_profiling_async_copy_enable(enable: bool) -> hsa_status_t {
    ASYNC_COPY_PROFILING.store(enable, SeqCst);
    HSA_STATUS_SUCCESS
}

/// `hsa_amd_profiling_convert_tick_to_system_domain`: agent ticks are system nanoseconds.
pub(crate) unsafe extern "C" fn hsa_amd_profiling_convert_tick_to_system_domain(
    agent: hsa_agent_t,
    agent_tick: u64,
    system_tick: *mut u64,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if gpu(agent).is_none() {
            HSA_STATUS_ERROR_INVALID_AGENT
        } else {
            put(system_tick as *mut c_void, agent_tick)
        }
    })
}

// ---- extensions ----

fn extension_minor(extension: u16, major: u16) -> Option<u16> {
    match (extension, major) {
        (HSA_EXTENSION_AMD_LOADER, 1) => Some(3),
        (HSA_EXTENSION_AMD_AQLPROFILE, 1) | (HSA_EXTENSION_AMD_PROFILER, 1) => Some(0),
        _ => None,
    }
}

/// `hsa_system_extension_supported`.
pub(crate) unsafe extern "C" fn hsa_system_extension_supported(
    extension: u16,
    version_major: u16,
    version_minor: u16,
    result: *mut bool,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let ok = extension_minor(extension, version_major).is_some_and(|m| version_minor <= m);
        put(result as *mut c_void, ok)
    })
}

/// `hsa_system_major_extension_supported`.
pub(crate) unsafe extern "C" fn hsa_system_major_extension_supported(
    extension: u16,
    version_major: u16,
    version_minor: *mut u16,
    result: *mut bool,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let minor = extension_minor(extension, version_major);
        if let Some(m) = minor {
            if put(version_minor as *mut c_void, m) != HSA_STATUS_SUCCESS {
                return HSA_STATUS_ERROR_INVALID_ARGUMENT;
            }
        }
        put(result as *mut c_void, minor.is_some())
    })
}

/// `hsa_agent_extension_supported`.
pub(crate) unsafe extern "C" fn hsa_agent_extension_supported(
    extension: u16,
    agent: hsa_agent_t,
    version_major: u16,
    version_minor: u16,
    result: *mut bool,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if agent_index(agent).is_none() {
            return HSA_STATUS_ERROR_INVALID_AGENT;
        }
        let ok = gpu(agent).is_some()
            && extension_minor(extension, version_major).is_some_and(|m| version_minor <= m);
        put(result as *mut c_void, ok)
    })
}

/// `hsa_agent_major_extension_supported`.
pub(crate) unsafe extern "C" fn hsa_agent_major_extension_supported(
    extension: u16,
    agent: hsa_agent_t,
    version_major: u16,
    version_minor: *mut u16,
    result: *mut bool,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if agent_index(agent).is_none() {
            return HSA_STATUS_ERROR_INVALID_AGENT;
        }
        let minor = gpu(agent).and(extension_minor(extension, version_major));
        if let Some(m) = minor {
            put(version_minor as *mut c_void, m);
        }
        put(result as *mut c_void, minor.is_some())
    })
}

/// The legacy aqlprofile table from `libhsa-amd-aqlprofile64.so`, dlsym'd by name as ROCr does.
fn aqlprofile_table() -> Option<hsa_ven_amd_aqlprofile_1_00_pfn_t> {
    static TABLE: OnceLock<Option<hsa_ven_amd_aqlprofile_1_00_pfn_t>> = OnceLock::new();
    *TABLE.get_or_init(|| {
        // SAFETY: dlopen/dlsym with NUL-terminated names; symbols are cast to their C types.
        unsafe {
            let lib = libc::dlopen(c"libhsa-amd-aqlprofile64.so".as_ptr(), libc::RTLD_NOW);
            if lib.is_null() {
                return None;
            }
            let names: [&CStr; 10] = [
                c"hsa_ven_amd_aqlprofile_version_major",
                c"hsa_ven_amd_aqlprofile_version_minor",
                c"hsa_ven_amd_aqlprofile_error_string",
                c"hsa_ven_amd_aqlprofile_validate_event",
                c"hsa_ven_amd_aqlprofile_start",
                c"hsa_ven_amd_aqlprofile_stop",
                c"hsa_ven_amd_aqlprofile_read",
                c"hsa_ven_amd_aqlprofile_legacy_get_pm4",
                c"hsa_ven_amd_aqlprofile_get_info",
                c"hsa_ven_amd_aqlprofile_iterate_data",
            ];
            let mut entries = [0usize; 10];
            for (slot, name) in entries.iter_mut().zip(names) {
                *slot = libc::dlsym(lib, name.as_ptr()) as usize;
            }
            let table: hsa_ven_amd_aqlprofile_1_00_pfn_t = std::mem::transmute(entries);
            match table.hsa_ven_amd_aqlprofile_version_major {
                Some(major) if major() == 2 => Some(table),
                _ => None,
            }
        }
    })
}

fn copy_table<T: Copy>(table: T, length: usize, out: *mut c_void) -> hsa_status_t {
    if out.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let n = length.min(std::mem::size_of::<T>());
    // SAFETY: the caller's buffer holds `length` bytes; we copy at most that.
    unsafe { std::ptr::copy_nonoverlapping(&table as *const T as *const u8, out as *mut u8, n) };
    HSA_STATUS_SUCCESS
}

fn extension_table(extension: u16, major: u16, length: usize, table: *mut c_void) -> hsa_status_t {
    match (extension, major) {
        (HSA_EXTENSION_AMD_LOADER, 1) => {
            copy_table(executable::loader_extension_table(), length, table)
        }
        (HSA_EXTENSION_AMD_AQLPROFILE, 1) => match aqlprofile_table() {
            Some(t) => copy_table(t, length, table),
            None => HSA_STATUS_ERROR,
        },
        _ => HSA_STATUS_ERROR_INVALID_ARGUMENT,
    }
}

/// `hsa_system_get_major_extension_table`.
pub(crate) unsafe extern "C" fn hsa_system_get_major_extension_table(
    extension: u16,
    version_major: u16,
    table_length: usize,
    table: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        extension_table(extension, version_major, table_length, table)
    })
}

/// `hsa_system_get_extension_table` (HSA 1.0: the whole table of that version).
pub(crate) unsafe extern "C" fn hsa_system_get_extension_table(
    extension: u16,
    version_major: u16,
    _version_minor: u16,
    table: *mut c_void,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let length = match extension {
            HSA_EXTENSION_AMD_LOADER => std::mem::size_of::<hsa_ven_amd_loader_1_03_pfn_t>(),
            _ => std::mem::size_of::<hsa_ven_amd_aqlprofile_1_00_pfn_t>(),
        };
        extension_table(extension, version_major, length, table)
    })
}

/// `hsa_extension_get_name`.
pub(crate) unsafe extern "C" fn hsa_extension_get_name(
    extension: u16,
    name: *mut *const c_char,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let text: &'static CStr = match extension {
            HSA_EXTENSION_FINALIZER => c"HSA_EXTENSION_FINALIZER",
            HSA_EXTENSION_IMAGES => c"HSA_EXTENSION_IMAGES",
            HSA_EXTENSION_PERFORMANCE_COUNTERS => c"HSA_EXTENSION_PERFORMANCE_COUNTERS",
            HSA_EXTENSION_PROFILING_EVENTS => c"HSA_EXTENSION_PROFILING_EVENTS",
            HSA_EXTENSION_AMD_PROFILER => c"HSA_EXTENSION_AMD_PROFILER",
            HSA_EXTENSION_AMD_LOADER => c"HSA_EXTENSION_AMD_LOADER",
            HSA_EXTENSION_AMD_AQLPROFILE => c"HSA_EXTENSION_AMD_AQLPROFILE",
            _ => return HSA_STATUS_ERROR_INVALID_ARGUMENT,
        };
        put(name as *mut c_void, text.as_ptr())
    })
}

/// `hsa_status_string`.
pub(crate) unsafe extern "C" fn hsa_status_string(
    status: hsa_status_t,
    status_string: *mut *const c_char,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let text: &'static CStr = match status {
            HSA_STATUS_SUCCESS => c"HSA_STATUS_SUCCESS: The function has been executed successfully.",
            HSA_STATUS_INFO_BREAK => c"HSA_STATUS_INFO_BREAK: A traversal over a list of elements has been interrupted by the application before completing.",
            HSA_STATUS_ERROR => c"HSA_STATUS_ERROR: A generic error has occurred.",
            HSA_STATUS_ERROR_INVALID_ARGUMENT => c"HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a precondition stated in the documentation of the corresponding formal argument.",
            HSA_STATUS_ERROR_INVALID_QUEUE_CREATION => c"HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: The requested queue creation is not valid.",
            HSA_STATUS_ERROR_INVALID_ALLOCATION => c"HSA_STATUS_ERROR_INVALID_ALLOCATION: The requested allocation is not valid.",
            HSA_STATUS_ERROR_INVALID_AGENT => c"HSA_STATUS_ERROR_INVALID_AGENT: The agent is invalid.",
            HSA_STATUS_ERROR_INVALID_REGION => c"HSA_STATUS_ERROR_INVALID_REGION: The memory region is invalid.",
            HSA_STATUS_ERROR_INVALID_SIGNAL => c"HSA_STATUS_ERROR_INVALID_SIGNAL: The signal is invalid.",
            HSA_STATUS_ERROR_INVALID_QUEUE => c"HSA_STATUS_ERROR_INVALID_QUEUE: The queue is invalid.",
            HSA_STATUS_ERROR_OUT_OF_RESOURCES => c"HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.",
            HSA_STATUS_ERROR_INVALID_PACKET_FORMAT => c"HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: The AQL packet is malformed.",
            HSA_STATUS_ERROR_NOT_INITIALIZED => c"HSA_STATUS_ERROR_NOT_INITIALIZED: An API other than hsa_init has been invoked while the reference count of the HSA runtime is zero.",
            HSA_STATUS_ERROR_REFCOUNT_OVERFLOW => c"HSA_STATUS_ERROR_REFCOUNT_OVERFLOW: The HSA runtime reference count has reached its maximum.",
            HSA_STATUS_ERROR_INVALID_INDEX => c"HSA_STATUS_ERROR_INVALID_INDEX: The index is invalid.",
            HSA_STATUS_ERROR_INVALID_ISA => c"HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid.",
            HSA_STATUS_ERROR_INVALID_ISA_NAME => c"HSA_STATUS_ERROR_INVALID_ISA_NAME: The instruction set architecture name is invalid.",
            HSA_STATUS_ERROR_INVALID_CODE_OBJECT => c"HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is invalid.",
            HSA_STATUS_ERROR_INVALID_EXECUTABLE => c"HSA_STATUS_ERROR_INVALID_EXECUTABLE: The executable is invalid.",
            HSA_STATUS_ERROR_FROZEN_EXECUTABLE => c"HSA_STATUS_ERROR_FROZEN_EXECUTABLE: The executable is frozen.",
            HSA_STATUS_ERROR_INVALID_SYMBOL_NAME => c"HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: There is no symbol with the given name.",
            HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL => c"HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: The executable symbol is invalid.",
            HSA_STATUS_ERROR_INVALID_MEMORY_POOL => c"HSA_STATUS_ERROR_INVALID_MEMORY_POOL: The memory pool is invalid.",
            _ => return HSA_STATUS_ERROR_INVALID_ARGUMENT,
        };
        put(status_string as *mut c_void, text.as_ptr())
    })
}
