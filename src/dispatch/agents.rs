//! The process's GPU agents and what the interposer needs to know about each.

use std::ffi::c_void;

use super::runtime::Hsa;
use crate::hsa::*;

/// One GPU agent.
#[derive(Debug, Clone)]
pub struct Gpu {
    /// The runtime's handle.
    pub agent: hsa_agent_t,
    /// Index among the GPU agents, from 0.
    pub index: u32,
    /// KFD node id.
    pub node_id: u32,
    /// gfx target without feature suffixes, e.g. `gfx942`.
    pub arch: String,
    /// XCCs (1 before gfx94x).
    pub xcc: u32,
    /// Shader engines.
    pub se: u32,
    /// Compute units.
    pub cu: u32,
    /// Shader arrays per shader engine.
    pub sa_per_se: u32,
}

/// Every GPU agent, in the runtime's order, and the CPU agents' memory pools.
#[derive(Debug, Default)]
pub struct Agents {
    /// The GPUs.
    pub gpus: Vec<Gpu>,
    /// Host memory pools the GPUs can be given access to (kernarg pool first).
    pub host_pools: Vec<hsa_amd_memory_pool_t>,
}

impl Agents {
    /// Asks the runtime.
    pub fn discover(hsa: &Hsa) -> Agents {
        let mut agents = Agents::default();
        for agent in hsa.agents() {
            match hsa.agent_info::<u32>(agent, HSA_AGENT_INFO_DEVICE) {
                Some(HSA_DEVICE_TYPE_GPU) => {
                    let name = hsa.agent_name(agent);
                    let arch = name.split(':').next().unwrap_or_default().to_string();
                    let info = |attribute| hsa.agent_info::<u32>(agent, attribute).unwrap_or(0);
                    agents.gpus.push(Gpu {
                        agent,
                        index: agents.gpus.len() as u32,
                        node_id: info(HSA_AMD_AGENT_INFO_DRIVER_NODE_ID),
                        arch,
                        xcc: info(HSA_AMD_AGENT_INFO_NUM_XCC).max(1),
                        se: info(HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES),
                        cu: info(HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT),
                        sa_per_se: info(HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE),
                    });
                }
                Some(HSA_DEVICE_TYPE_CPU) => agents.host_pools.extend(host_pools(hsa, agent)),
                _ => {}
            }
        }
        agents
    }

    /// The GPU with this handle.
    pub fn gpu(&self, agent: hsa_agent_t) -> Option<&Gpu> {
        self.gpus.iter().find(|g| g.agent == agent)
    }
}

/// The global, runtime-allocatable pools of a CPU agent, kernarg pools first.
fn host_pools(hsa: &Hsa, cpu: hsa_agent_t) -> Vec<hsa_amd_memory_pool_t> {
    let (Some(iterate), Some(_)) = (
        hsa.amd().hsa_amd_agent_iterate_memory_pools_fn,
        hsa.amd().hsa_amd_memory_pool_get_info_fn,
    ) else {
        return Vec::new();
    };
    unsafe extern "C" fn push(pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t {
        // SAFETY: `data` is the Vec passed below, alive for the iteration.
        unsafe { (*(data as *mut Vec<hsa_amd_memory_pool_t>)).push(pool) };
        HSA_STATUS_SUCCESS
    }
    let mut pools: Vec<hsa_amd_memory_pool_t> = Vec::new();
    // SAFETY: an original entry; `pools` outlives the call.
    unsafe { iterate(cpu, Some(push), &mut pools as *mut _ as *mut c_void) };
    let info = |pool, attribute| -> u32 {
        let mut value = 0u32;
        match hsa.amd().hsa_amd_memory_pool_get_info_fn {
            // SAFETY: these attributes are 4-byte values.
            Some(get) => unsafe { get(pool, attribute, &mut value as *mut u32 as *mut c_void) },
            None => HSA_STATUS_ERROR,
        };
        value
    };
    let mut usable: Vec<(bool, hsa_amd_memory_pool_t)> = pools
        .into_iter()
        .filter(|&p| {
            info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT) == HSA_REGION_SEGMENT_GLOBAL
                && info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED) != 0
        })
        .map(|p| {
            let flags = info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS);
            (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT == 0, p)
        })
        .collect();
    usable.sort_by_key(|(not_kernarg, _)| *not_kernarg);
    usable.into_iter().map(|(_, p)| p).collect()
}
