//! Finding GPU agents, their memory pools, and loading the fixture kernels for each.

use std::ffi::{c_void, CString};

use crate::hsa::*;
use crate::hsa_api::*;
use crate::HsaError;

/// The fixture code objects, one per target the simulator models.
const FIXTURES: &[(&str, &[u8])] = &[
    ("gfx90a", include_bytes!("../../fixtures/kernels-gfx90a.co")),
    ("gfx942", include_bytes!("../../fixtures/kernels-gfx942.co")),
    ("gfx950", include_bytes!("../../fixtures/kernels-gfx950.co")),
    (
        "gfx1100",
        include_bytes!("../../fixtures/kernels-gfx1100.co"),
    ),
    (
        "gfx1201",
        include_bytes!("../../fixtures/kernels-gfx1201.co"),
    ),
];

/// Turns a status into a result naming the call.
pub fn check(call: &'static str, status: hsa_status_t) -> Result<(), HsaError> {
    match status {
        HSA_STATUS_SUCCESS | HSA_STATUS_INFO_BREAK => Ok(()),
        _ => Err(HsaError { call, status }),
    }
}

/// A kernel ready to dispatch.
#[derive(Debug, Clone, Copy)]
pub struct Kernel {
    /// Kernel object (descriptor address).
    pub object: u64,
    /// Bytes of kernel arguments.
    pub kernarg_size: u32,
    /// LDS bytes per work-group.
    pub group_segment_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
}

/// A GPU agent with its loaded kernels.
#[derive(Debug)]
pub struct Gpu {
    /// The agent.
    pub agent: hsa_agent_t,
    /// Its name (gfx target).
    pub name: String,
    executable: hsa_executable_t,
}

/// The agents and pools the demo uses.
#[derive(Debug)]
pub struct System {
    /// GPU agents, in enumeration order.
    pub gpus: Vec<Gpu>,
    /// A CPU pool for kernel arguments.
    pub kernarg_pool: hsa_amd_memory_pool_t,
    /// A fine-grained CPU pool for buffers the host verifies.
    pub buffer_pool: hsa_amd_memory_pool_t,
    /// The CPU agents.
    cpus: Vec<hsa_agent_t>,
}

unsafe extern "C" fn collect_agent(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t {
    // SAFETY: `data` is the Vec passed by `System::discover`.
    unsafe { (*data.cast::<Vec<hsa_agent_t>>()).push(agent) };
    HSA_STATUS_SUCCESS
}

unsafe extern "C" fn collect_pool(pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t {
    // SAFETY: `data` is the Vec passed by `pools_of`.
    unsafe { (*data.cast::<Vec<hsa_amd_memory_pool_t>>()).push(pool) };
    HSA_STATUS_SUCCESS
}

fn agent_info<T: Default>(agent: hsa_agent_t, attribute: u32) -> Result<T, HsaError> {
    let mut value = T::default();
    // SAFETY: `value` has the attribute's type.
    let status = unsafe { hsa_agent_get_info(agent, attribute, (&raw mut value).cast()) };
    check("hsa_agent_get_info", status).map(|()| value)
}

fn pool_info<T: Default>(pool: hsa_amd_memory_pool_t, attribute: u32) -> Result<T, HsaError> {
    let mut value = T::default();
    // SAFETY: `value` has the attribute's type.
    let status = unsafe { hsa_amd_memory_pool_get_info(pool, attribute, (&raw mut value).cast()) };
    check("hsa_amd_memory_pool_get_info", status).map(|()| value)
}

fn pools_of(agent: hsa_agent_t) -> Result<Vec<hsa_amd_memory_pool_t>, HsaError> {
    let mut pools: Vec<hsa_amd_memory_pool_t> = Vec::new();
    // SAFETY: the callback receives the Vec.
    let status =
        unsafe { hsa_amd_agent_iterate_memory_pools(agent, collect_pool, (&raw mut pools).cast()) };
    check("hsa_amd_agent_iterate_memory_pools", status).map(|()| pools)
}

/// The first global pool of `agent` whose flags include `flag`.
fn global_pool(agent: hsa_agent_t, flag: u32) -> Result<Option<hsa_amd_memory_pool_t>, HsaError> {
    for pool in pools_of(agent)? {
        let segment: u32 = pool_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT)?;
        let flags: u32 = pool_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS)?;
        if segment == HSA_REGION_SEGMENT_GLOBAL && flags & flag != 0 {
            return Ok(Some(pool));
        }
    }
    Ok(None)
}

impl System {
    /// Finds the GPUs (at most `max_gpus`), the CPU pools, and loads each GPU's fixture.
    pub fn discover(max_gpus: Option<usize>) -> Result<System, String> {
        let mut agents: Vec<hsa_agent_t> = Vec::new();
        // SAFETY: the callback receives the Vec.
        let status = unsafe { hsa_iterate_agents(collect_agent, (&raw mut agents).cast()) };
        check("hsa_iterate_agents", status)?;
        let mut cpus = Vec::new();
        let mut gpus = Vec::new();
        for agent in agents {
            match agent_info::<u32>(agent, HSA_AGENT_INFO_DEVICE)? {
                HSA_DEVICE_TYPE_GPU => gpus.push(agent),
                HSA_DEVICE_TYPE_CPU => cpus.push(agent),
                _ => {}
            }
        }
        gpus.truncate(max_gpus.unwrap_or(usize::MAX));
        if gpus.is_empty() {
            return Err("no GPU agent found".into());
        }
        let mut kernarg_pool = None;
        let mut buffer_pool = None;
        for &cpu in &cpus {
            kernarg_pool = kernarg_pool.or(global_pool(
                cpu,
                HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT,
            )?);
            buffer_pool = buffer_pool.or(global_pool(
                cpu,
                HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
            )?);
        }
        let kernarg_pool = kernarg_pool.ok_or("no kernarg memory pool on any CPU agent")?;
        let buffer_pool = buffer_pool.ok_or("no fine-grained memory pool on any CPU agent")?;
        let gpus = gpus.into_iter().map(Gpu::load).collect::<Result<_, _>>()?;
        Ok(System {
            gpus,
            kernarg_pool,
            buffer_pool,
            cpus,
        })
    }

    /// The device memory pool of `gpu` (its first coarse-grained global pool).
    pub fn device_pool(&self, gpu: &Gpu) -> Result<hsa_amd_memory_pool_t, String> {
        global_pool(gpu.agent, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED)?
            .ok_or_else(|| format!("no device memory pool on GPU {}", gpu.name))
    }

    /// Allocates `size` bytes with `hsa_memory_allocate` in the first fine-grained global region
    /// of a CPU agent that the runtime allocates in and the host reaches.
    pub fn allocate_in_region(&self, size: usize) -> Result<*mut u8, HsaError> {
        unsafe extern "C" fn collect(region: hsa_region_t, data: *mut c_void) -> hsa_status_t {
            // SAFETY: `data` is the Vec passed below.
            unsafe { (*data.cast::<Vec<hsa_region_t>>()).push(region) };
            HSA_STATUS_SUCCESS
        }
        let info = |region, attribute| -> Result<u32, HsaError> {
            let mut value = 0u32;
            // SAFETY: these attributes are at most 4 bytes (the host access flag is a bool,
            // written into the low byte of the zeroed value).
            let status = unsafe { hsa_region_get_info(region, attribute, (&raw mut value).cast()) };
            check("hsa_region_get_info", status).map(|()| value)
        };
        for &cpu in &self.cpus {
            let mut regions: Vec<hsa_region_t> = Vec::new();
            // SAFETY: the callback receives the Vec.
            let status =
                unsafe { hsa_agent_iterate_regions(cpu, collect, (&raw mut regions).cast()) };
            check("hsa_agent_iterate_regions", status)?;
            for region in regions {
                if info(region, HSA_REGION_INFO_SEGMENT)? == HSA_REGION_SEGMENT_GLOBAL
                    && info(region, HSA_REGION_INFO_GLOBAL_FLAGS)?
                        & HSA_REGION_GLOBAL_FLAG_FINE_GRAINED
                        != 0
                    && info(region, HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED)? & 0xff != 0
                    && info(region, HSA_AMD_REGION_INFO_HOST_ACCESSIBLE)? & 0xff != 0
                {
                    let mut ptr: *mut c_void = std::ptr::null_mut();
                    // SAFETY: a region of the runtime and a valid out pointer.
                    let status = unsafe { hsa_memory_allocate(region, size, &mut ptr) };
                    return check("hsa_memory_allocate", status).map(|()| ptr.cast());
                }
            }
        }
        Err(HsaError {
            call: "hsa_agent_iterate_regions",
            status: HSA_STATUS_ERROR_INVALID_REGION,
        })
    }

    /// Allocates `size` bytes from `pool`, accessible to every GPU.
    pub fn allocate(&self, pool: hsa_amd_memory_pool_t, size: usize) -> Result<*mut u8, HsaError> {
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid pool and out pointer.
        let status = unsafe { hsa_amd_memory_pool_allocate(pool, size, 0, &mut ptr) };
        check("hsa_amd_memory_pool_allocate", status)?;
        let agents: Vec<hsa_agent_t> = self.gpus.iter().map(|g| g.agent).collect();
        // SAFETY: `ptr` was just allocated; the agent list is valid.
        let status = unsafe {
            hsa_amd_agents_allow_access(agents.len() as u32, agents.as_ptr(), std::ptr::null(), ptr)
        };
        check("hsa_amd_agents_allow_access", status)?;
        Ok(ptr.cast())
    }
}

impl Gpu {
    /// A multi-producer queue of `slots` packets on this GPU, without an error callback.
    pub fn create_queue(&self, slots: u32) -> Result<*mut hsa_queue_t, HsaError> {
        let mut queue: *mut hsa_queue_t = std::ptr::null_mut();
        // SAFETY: a valid agent and out pointer; no error callback.
        let status = unsafe {
            hsa_queue_create(
                self.agent,
                slots,
                HSA_QUEUE_TYPE_MULTI,
                std::ptr::null(),
                std::ptr::null_mut(),
                u32::MAX,
                u32::MAX,
                &mut queue,
            )
        };
        check("hsa_queue_create", status).map(|()| queue)
    }

    fn load(agent: hsa_agent_t) -> Result<Gpu, String> {
        let mut name_bytes = [0u8; 64];
        // SAFETY: the agent name is a char[64].
        let status = unsafe {
            hsa_agent_get_info(agent, HSA_AGENT_INFO_NAME, name_bytes.as_mut_ptr().cast())
        };
        check("hsa_agent_get_info", status)?;
        let end = name_bytes.iter().position(|&b| b == 0).unwrap_or(64);
        let name = String::from_utf8_lossy(&name_bytes[..end]).into_owned();
        let (_, code) = FIXTURES
            .iter()
            .find(|(target, _)| *target == name)
            .ok_or_else(|| format!("no fixture code object for GPU {name}"))?;
        let mut reader = hsa_code_object_reader_t::default();
        let mut executable = hsa_executable_t::default();
        // SAFETY: the code object is a static byte array; out pointers are valid.
        unsafe {
            let status = hsa_code_object_reader_create_from_memory(
                code.as_ptr().cast(),
                code.len(),
                &mut reader,
            );
            check("hsa_code_object_reader_create_from_memory", status)?;
            let status =
                hsa_executable_create_alt(HSA_PROFILE_FULL, 0, std::ptr::null(), &mut executable);
            check("hsa_executable_create_alt", status)?;
            let status = hsa_executable_load_agent_code_object(
                executable,
                agent,
                reader,
                std::ptr::null(),
                std::ptr::null_mut(),
            );
            check("hsa_executable_load_agent_code_object", status)?;
            check(
                "hsa_executable_freeze",
                hsa_executable_freeze(executable, std::ptr::null()),
            )?;
            check(
                "hsa_code_object_reader_destroy",
                hsa_code_object_reader_destroy(reader),
            )?;
        }
        Ok(Gpu {
            agent,
            name,
            executable,
        })
    }

    /// Looks up a kernel by symbol name (its `.kd` symbol without the suffix).
    pub fn kernel(&self, name: &str) -> Result<Kernel, HsaError> {
        let symbol_name = CString::new(format!("{name}.kd")).expect("kernel names have no NUL");
        let mut symbol = hsa_executable_symbol_t::default();
        // SAFETY: valid string, agent and out pointer.
        let status = unsafe {
            hsa_executable_get_symbol_by_name(
                self.executable,
                symbol_name.as_ptr(),
                &self.agent,
                &mut symbol,
            )
        };
        check("hsa_executable_get_symbol_by_name", status)?;
        let info = |attribute| -> Result<u64, HsaError> {
            let mut value = 0u64;
            // SAFETY: every attribute read here fits in 8 bytes; `value` starts zeroed.
            let status = unsafe {
                hsa_executable_symbol_get_info(symbol, attribute, (&raw mut value).cast())
            };
            check("hsa_executable_symbol_get_info", status).map(|()| value)
        };
        Ok(Kernel {
            object: info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT)?,
            kernarg_size: info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE)? as u32,
            group_segment_size: info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE)? as u32,
            private_segment_size: info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE)?
                as u32,
        })
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: the executable is ours and no dispatch uses it any more.
        unsafe { hsa_executable_destroy(self.executable) };
    }
}
