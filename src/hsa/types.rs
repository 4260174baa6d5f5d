//! Handles, status codes and the information enums of `hsa.h` and `hsa_ext_amd.h`.
//!
//! C enums are plain integer aliases with constants, because the runtime and tools pass
//! values no Rust enum could anticipate (newer ROCm adds attributes all the time).

/// Declares an opaque 64-bit handle struct as the headers do (`typedef struct { uint64_t handle; } X`).
macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name {
            /// Opaque value; zero is never a valid object.
            pub handle: u64,
        }
    )*};
}

handles! {
    /// An agent (CPU or GPU).
    hsa_agent_t;
    /// A signal; for ROCr and the simulator the handle is the address of an `amd_signal_t`.
    hsa_signal_t;
    /// A group of signals waited on together.
    hsa_signal_group_t;
    /// A memory region of an agent.
    hsa_region_t;
    /// An AMD memory pool.
    hsa_amd_memory_pool_t;
    /// A cache of an agent.
    hsa_cache_t;
    /// An instruction set architecture.
    hsa_isa_t;
    /// A wavefront size supported by an ISA.
    hsa_wavefront_t;
    /// An executable.
    hsa_executable_t;
    /// A symbol of an executable.
    hsa_executable_symbol_t;
    /// A code object reader.
    hsa_code_object_reader_t;
    /// A code object loaded into an executable.
    hsa_loaded_code_object_t;
    /// A deprecated (HSA 1.0) code object.
    hsa_code_object_t;
    /// A deprecated (HSA 1.0) code object symbol.
    hsa_code_symbol_t;
    /// Application data passed to deprecated code-object callbacks.
    hsa_callback_data_t;
    /// An image of the images extension.
    hsa_ext_image_t;
    /// A sampler of the images extension.
    hsa_ext_sampler_t;
    /// A finalizer program.
    hsa_ext_program_t;
}

/// `hsa_status_t`.
pub type hsa_status_t = u32;
/// Success.
pub const HSA_STATUS_SUCCESS: hsa_status_t = 0x0;
/// An iteration callback asks to stop early.
pub const HSA_STATUS_INFO_BREAK: hsa_status_t = 0x1;
/// Generic error.
pub const HSA_STATUS_ERROR: hsa_status_t = 0x1000;
/// An argument is invalid.
pub const HSA_STATUS_ERROR_INVALID_ARGUMENT: hsa_status_t = 0x1001;
/// Queue creation arguments are invalid.
pub const HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: hsa_status_t = 0x1002;
/// The allocation request is invalid.
pub const HSA_STATUS_ERROR_INVALID_ALLOCATION: hsa_status_t = 0x1003;
/// The agent is invalid (or of the wrong kind).
pub const HSA_STATUS_ERROR_INVALID_AGENT: hsa_status_t = 0x1004;
/// The region is invalid.
pub const HSA_STATUS_ERROR_INVALID_REGION: hsa_status_t = 0x1005;
/// The signal is invalid.
pub const HSA_STATUS_ERROR_INVALID_SIGNAL: hsa_status_t = 0x1006;
/// The queue is invalid (or not an intercept queue where one is required).
pub const HSA_STATUS_ERROR_INVALID_QUEUE: hsa_status_t = 0x1007;
/// The runtime ran out of a resource.
pub const HSA_STATUS_ERROR_OUT_OF_RESOURCES: hsa_status_t = 0x1008;
/// A packet has an invalid format.
pub const HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: hsa_status_t = 0x1009;
/// A resource is still in use.
pub const HSA_STATUS_ERROR_RESOURCE_FREE: hsa_status_t = 0x100A;
/// The runtime is not initialized.
pub const HSA_STATUS_ERROR_NOT_INITIALIZED: hsa_status_t = 0x100B;
/// The runtime reference count overflowed.
pub const HSA_STATUS_ERROR_REFCOUNT_OVERFLOW: hsa_status_t = 0x100C;
/// Arguments are incompatible with each other.
pub const HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: hsa_status_t = 0x100D;
/// An index is out of range.
pub const HSA_STATUS_ERROR_INVALID_INDEX: hsa_status_t = 0x100E;
/// The ISA is invalid.
pub const HSA_STATUS_ERROR_INVALID_ISA: hsa_status_t = 0x100F;
/// The code object is invalid.
pub const HSA_STATUS_ERROR_INVALID_CODE_OBJECT: hsa_status_t = 0x1010;
/// The executable is invalid.
pub const HSA_STATUS_ERROR_INVALID_EXECUTABLE: hsa_status_t = 0x1011;
/// The executable is frozen.
pub const HSA_STATUS_ERROR_FROZEN_EXECUTABLE: hsa_status_t = 0x1012;
/// No symbol has that name.
pub const HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: hsa_status_t = 0x1013;
/// A variable is already defined.
pub const HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED: hsa_status_t = 0x1014;
/// A variable is undefined.
pub const HSA_STATUS_ERROR_VARIABLE_UNDEFINED: hsa_status_t = 0x1015;
/// An HSAIL exception.
pub const HSA_STATUS_ERROR_EXCEPTION: hsa_status_t = 0x1016;
/// The ISA name is invalid.
pub const HSA_STATUS_ERROR_INVALID_ISA_NAME: hsa_status_t = 0x1017;
/// The code symbol is invalid.
pub const HSA_STATUS_ERROR_INVALID_CODE_SYMBOL: hsa_status_t = 0x1018;
/// The executable symbol is invalid.
pub const HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: hsa_status_t = 0x1019;
/// The file descriptor is invalid.
pub const HSA_STATUS_ERROR_INVALID_FILE: hsa_status_t = 0x1020;
/// The code object reader is invalid.
pub const HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: hsa_status_t = 0x1021;
/// The cache is invalid.
pub const HSA_STATUS_ERROR_INVALID_CACHE: hsa_status_t = 0x1022;
/// The wavefront is invalid.
pub const HSA_STATUS_ERROR_INVALID_WAVEFRONT: hsa_status_t = 0x1023;
/// The signal group is invalid.
pub const HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP: hsa_status_t = 0x1024;
/// The runtime is in an invalid state.
pub const HSA_STATUS_ERROR_INVALID_RUNTIME_STATE: hsa_status_t = 0x1025;
/// A fatal error.
pub const HSA_STATUS_ERROR_FATAL: hsa_status_t = 0x1026;
/// The memory pool is invalid (AMD).
pub const HSA_STATUS_ERROR_INVALID_MEMORY_POOL: hsa_status_t = 40;
/// A memory aperture violation (AMD).
pub const HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: hsa_status_t = 41;
/// An illegal instruction (AMD).
pub const HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: hsa_status_t = 42;
/// A memory fault (AMD).
pub const HSA_STATUS_ERROR_MEMORY_FAULT: hsa_status_t = 43;
/// The CU mask was reduced (AMD).
pub const HSA_STATUS_CU_MASK_REDUCED: hsa_status_t = 44;

/// `hsa_signal_value_t` (large model).
pub type hsa_signal_value_t = i64;

/// `hsa_system_info_t`.
pub type hsa_system_info_t = u32;
/// `uint16_t`: HSA major version.
pub const HSA_SYSTEM_INFO_VERSION_MAJOR: hsa_system_info_t = 0;
/// `uint16_t`: HSA minor version.
pub const HSA_SYSTEM_INFO_VERSION_MINOR: hsa_system_info_t = 1;
/// `uint64_t`: current system timestamp (ROCr: `CLOCK_BOOTTIME` in ns).
pub const HSA_SYSTEM_INFO_TIMESTAMP: hsa_system_info_t = 2;
/// `uint64_t`: system timestamp frequency in Hz (ROCr: 1e9).
pub const HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY: hsa_system_info_t = 3;
/// `uint64_t`: maximum signal wait duration in timestamp ticks.
pub const HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT: hsa_system_info_t = 4;
/// `hsa_endianness_t`.
pub const HSA_SYSTEM_INFO_ENDIANNESS: hsa_system_info_t = 5;
/// `hsa_machine_model_t`.
pub const HSA_SYSTEM_INFO_MACHINE_MODEL: hsa_system_info_t = 6;
/// `uint8_t[128]`: bit mask of supported extensions.
pub const HSA_SYSTEM_INFO_EXTENSIONS: hsa_system_info_t = 7;
/// `const char*`: runtime build version string.
pub const HSA_AMD_SYSTEM_INFO_BUILD_VERSION: hsa_system_info_t = 0x200;
/// `bool`: shared virtual memory supported.
pub const HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED: hsa_system_info_t = 0x201;
/// `bool`: SVM accessible by all agents by default.
pub const HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT: hsa_system_info_t = 0x202;
/// `bool`: multi-GPU DMA copies supported.
pub const HSA_AMD_SYSTEM_INFO_MWAITX_ENABLED: hsa_system_info_t = 0x203;
/// `bool`: DMA-buf export supported.
pub const HSA_AMD_SYSTEM_INFO_DMABUF_SUPPORTED: hsa_system_info_t = 0x204;
/// `bool`: virtual memory API supported.
pub const HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED: hsa_system_info_t = 0x205;
/// `bool`: XNACK enabled.
pub const HSA_AMD_SYSTEM_INFO_XNACK_ENABLED: hsa_system_info_t = 0x206;
/// `uint16_t`: extension interface major version.
pub const HSA_AMD_SYSTEM_INFO_EXT_VERSION_MAJOR: hsa_system_info_t = 0x207;
/// `uint16_t`: extension interface minor version.
pub const HSA_AMD_SYSTEM_INFO_EXT_VERSION_MINOR: hsa_system_info_t = 0x208;

/// `hsa_extension_t` (a `uint16_t` in the API).
pub type hsa_extension_t = u16;
/// The finalizer extension.
pub const HSA_EXTENSION_FINALIZER: hsa_extension_t = 0;
/// The images extension.
pub const HSA_EXTENSION_IMAGES: hsa_extension_t = 1;
/// The performance counters extension.
pub const HSA_EXTENSION_PERFORMANCE_COUNTERS: hsa_extension_t = 2;
/// The profiling events extension.
pub const HSA_EXTENSION_PROFILING_EVENTS: hsa_extension_t = 3;
/// AMD profiler extension.
pub const HSA_EXTENSION_AMD_PROFILER: hsa_extension_t = 0x200;
/// AMD loader extension (`hsa_ven_amd_loader_1_03_pfn_t`).
pub const HSA_EXTENSION_AMD_LOADER: hsa_extension_t = 0x201;
/// AMD aqlprofile extension (`hsa_ven_amd_aqlprofile_1_00_pfn_t`).
pub const HSA_EXTENSION_AMD_AQLPROFILE: hsa_extension_t = 0x202;
/// AMD PC sampling extension.
pub const HSA_EXTENSION_AMD_PC_SAMPLING: hsa_extension_t = 0x203;

/// `hsa_endianness_t`.
pub type hsa_endianness_t = u32;
/// Little endian.
pub const HSA_ENDIANNESS_LITTLE: hsa_endianness_t = 0;
/// `hsa_machine_model_t`.
pub type hsa_machine_model_t = u32;
/// 32-bit pointers.
pub const HSA_MACHINE_MODEL_SMALL: hsa_machine_model_t = 0;
/// 64-bit pointers.
pub const HSA_MACHINE_MODEL_LARGE: hsa_machine_model_t = 1;
/// `hsa_profile_t`.
pub type hsa_profile_t = u32;
/// Base profile.
pub const HSA_PROFILE_BASE: hsa_profile_t = 0;
/// Full profile.
pub const HSA_PROFILE_FULL: hsa_profile_t = 1;
/// `hsa_default_float_rounding_mode_t`.
pub type hsa_default_float_rounding_mode_t = u32;
/// Round to nearest even.
pub const HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR: hsa_default_float_rounding_mode_t = 2;

/// `hsa_device_type_t`.
pub type hsa_device_type_t = u32;
/// A CPU agent.
pub const HSA_DEVICE_TYPE_CPU: hsa_device_type_t = 0;
/// A GPU agent.
pub const HSA_DEVICE_TYPE_GPU: hsa_device_type_t = 1;
/// A DSP agent.
pub const HSA_DEVICE_TYPE_DSP: hsa_device_type_t = 2;

/// `hsa_agent_feature_t` bit: kernel dispatch.
pub const HSA_AGENT_FEATURE_KERNEL_DISPATCH: u32 = 1;
/// `hsa_agent_feature_t` bit: agent dispatch.
pub const HSA_AGENT_FEATURE_AGENT_DISPATCH: u32 = 2;

/// `hsa_agent_info_t` (and `hsa_amd_agent_info_t`, which shares the attribute space).
pub type hsa_agent_info_t = u32;
/// `char[64]`: agent name (the gfx target for GPUs).
pub const HSA_AGENT_INFO_NAME: hsa_agent_info_t = 0;
/// `char[64]`: vendor name.
pub const HSA_AGENT_INFO_VENDOR_NAME: hsa_agent_info_t = 1;
/// `hsa_agent_feature_t`.
pub const HSA_AGENT_INFO_FEATURE: hsa_agent_info_t = 2;
/// `hsa_machine_model_t`.
pub const HSA_AGENT_INFO_MACHINE_MODEL: hsa_agent_info_t = 3;
/// `hsa_profile_t`.
pub const HSA_AGENT_INFO_PROFILE: hsa_agent_info_t = 4;
/// `hsa_default_float_rounding_mode_t`.
pub const HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE: hsa_agent_info_t = 5;
/// `uint32_t`: wavefront size.
pub const HSA_AGENT_INFO_WAVEFRONT_SIZE: hsa_agent_info_t = 6;
/// `uint16_t[3]`: maximum workgroup dimensions.
pub const HSA_AGENT_INFO_WORKGROUP_MAX_DIM: hsa_agent_info_t = 7;
/// `uint32_t`: maximum workgroup size.
pub const HSA_AGENT_INFO_WORKGROUP_MAX_SIZE: hsa_agent_info_t = 8;
/// `hsa_dim3_t`: maximum grid dimensions.
pub const HSA_AGENT_INFO_GRID_MAX_DIM: hsa_agent_info_t = 9;
/// `uint32_t`: maximum grid size.
pub const HSA_AGENT_INFO_GRID_MAX_SIZE: hsa_agent_info_t = 10;
/// `uint32_t`: maximum fbarriers per workgroup.
pub const HSA_AGENT_INFO_FBARRIER_MAX_SIZE: hsa_agent_info_t = 11;
/// `uint32_t`: maximum number of queues.
pub const HSA_AGENT_INFO_QUEUES_MAX: hsa_agent_info_t = 12;
/// `uint32_t`: minimum queue size.
pub const HSA_AGENT_INFO_QUEUE_MIN_SIZE: hsa_agent_info_t = 13;
/// `uint32_t`: maximum queue size.
pub const HSA_AGENT_INFO_QUEUE_MAX_SIZE: hsa_agent_info_t = 14;
/// `hsa_queue_type32_t`.
pub const HSA_AGENT_INFO_QUEUE_TYPE: hsa_agent_info_t = 15;
/// `uint32_t`: NUMA node.
pub const HSA_AGENT_INFO_NODE: hsa_agent_info_t = 16;
/// `hsa_device_type_t`.
pub const HSA_AGENT_INFO_DEVICE: hsa_agent_info_t = 17;
/// `uint32_t[4]`: cache sizes per level.
pub const HSA_AGENT_INFO_CACHE_SIZE: hsa_agent_info_t = 18;
/// `hsa_isa_t`.
pub const HSA_AGENT_INFO_ISA: hsa_agent_info_t = 19;
/// `uint8_t[128]`: supported extensions.
pub const HSA_AGENT_INFO_EXTENSIONS: hsa_agent_info_t = 20;
/// `uint16_t`: agent HSA major version.
pub const HSA_AGENT_INFO_VERSION_MAJOR: hsa_agent_info_t = 21;
/// `uint16_t`: agent HSA minor version.
pub const HSA_AGENT_INFO_VERSION_MINOR: hsa_agent_info_t = 22;
/// `hsa_default_float_rounding_mode_t` mask.
pub const HSA_AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES: hsa_agent_info_t = 23;
/// `bool`.
pub const HSA_AGENT_INFO_FAST_F16_OPERATION: hsa_agent_info_t = 24;
/// `uint32_t`: chip id.
pub const HSA_AMD_AGENT_INFO_CHIP_ID: hsa_agent_info_t = 0xA000;
/// `uint32_t`: cache line size in bytes.
pub const HSA_AMD_AGENT_INFO_CACHELINE_SIZE: hsa_agent_info_t = 0xA001;
/// `uint32_t`: compute units.
pub const HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: hsa_agent_info_t = 0xA002;
/// `uint32_t`: maximum engine clock in MHz.
pub const HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY: hsa_agent_info_t = 0xA003;
/// `uint32_t`: KFD node id.
pub const HSA_AMD_AGENT_INFO_DRIVER_NODE_ID: hsa_agent_info_t = 0xA004;
/// `uint32_t`: address watch points.
pub const HSA_AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS: hsa_agent_info_t = 0xA005;
/// `uint32_t`: PCI bus/device/function id.
pub const HSA_AMD_AGENT_INFO_BDFID: hsa_agent_info_t = 0xA006;
/// `uint32_t`: memory bus width.
pub const HSA_AMD_AGENT_INFO_MEMORY_WIDTH: hsa_agent_info_t = 0xA007;
/// `uint32_t`: memory clock in MHz.
pub const HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY: hsa_agent_info_t = 0xA008;
/// `char[64]`: marketing name.
pub const HSA_AMD_AGENT_INFO_PRODUCT_NAME: hsa_agent_info_t = 0xA009;
/// `uint32_t`: maximum waves per CU.
pub const HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU: hsa_agent_info_t = 0xA00A;
/// `uint32_t`: SIMDs per CU.
pub const HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU: hsa_agent_info_t = 0xA00B;
/// `uint32_t`: shader engines.
pub const HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES: hsa_agent_info_t = 0xA00C;
/// `uint32_t`: shader arrays per shader engine.
pub const HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE: hsa_agent_info_t = 0xA00D;
/// `hsa_amd_hdp_flush_t`.
pub const HSA_AMD_AGENT_INFO_HDP_FLUSH: hsa_agent_info_t = 0xA00E;
/// `uint32_t`: PCI domain.
pub const HSA_AMD_AGENT_INFO_DOMAIN: hsa_agent_info_t = 0xA00F;
/// `bool`: cooperative queues supported.
pub const HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES: hsa_agent_info_t = 0xA010;
/// `char[32]`: UUID string (`GPU-<16 hex>`).
pub const HSA_AMD_AGENT_INFO_UUID: hsa_agent_info_t = 0xA011;
/// `uint32_t`: ASIC revision.
pub const HSA_AMD_AGENT_INFO_ASIC_REVISION: hsa_agent_info_t = 0xA012;
/// `bool`: direct host access to SVM.
pub const HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS: hsa_agent_info_t = 0xA013;
/// `uint32_t`: CUs usable by cooperative queues.
pub const HSA_AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT: hsa_agent_info_t = 0xA014;
/// `uint64_t`: free memory in bytes.
pub const HSA_AMD_AGENT_INFO_MEMORY_AVAIL: hsa_agent_info_t = 0xA015;
/// `uint64_t`: agent timestamp frequency in Hz.
pub const HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY: hsa_agent_info_t = 0xA016;
/// `uint32_t`: ASIC family id.
pub const HSA_AMD_AGENT_INFO_ASIC_FAMILY_ID: hsa_agent_info_t = 0xA107;
/// `uint32_t`: microcode version.
pub const HSA_AMD_AGENT_INFO_UCODE_VERSION: hsa_agent_info_t = 0xA108;
/// `uint32_t`: SDMA microcode version.
pub const HSA_AMD_AGENT_INFO_SDMA_UCODE_VERSION: hsa_agent_info_t = 0xA109;
/// `uint32_t`: SDMA engines.
pub const HSA_AMD_AGENT_INFO_NUM_SDMA_ENG: hsa_agent_info_t = 0xA10A;
/// `uint32_t`: xGMI SDMA engines.
pub const HSA_AMD_AGENT_INFO_NUM_SDMA_XGMI_ENG: hsa_agent_info_t = 0xA10B;
/// `hsa_amd_iommu_version_t`.
pub const HSA_AMD_AGENT_INFO_IOMMU_SUPPORT: hsa_agent_info_t = 0xA110;
/// `uint32_t`: XCCs (compute dies) in the agent.
pub const HSA_AMD_AGENT_INFO_NUM_XCC: hsa_agent_info_t = 0xA111;
/// `uint32_t`: driver unique id.
pub const HSA_AMD_AGENT_INFO_DRIVER_UID: hsa_agent_info_t = 0xA112;
/// `hsa_agent_t`: nearest CPU agent.
pub const HSA_AMD_AGENT_INFO_NEAREST_CPU: hsa_agent_info_t = 0xA113;
/// `uint8_t[8]`: memory property bits.
pub const HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES: hsa_agent_info_t = 0xA114;
/// `uint8_t[8]`: AQL extension bits.
pub const HSA_AMD_AGENT_INFO_AQL_EXTENSIONS: hsa_agent_info_t = 0xA115;
/// `uint64_t`: maximum scratch limit.
pub const HSA_AMD_AGENT_INFO_SCRATCH_LIMIT_MAX: hsa_agent_info_t = 0xA116;
/// `uint64_t`: current scratch limit.
pub const HSA_AMD_AGENT_INFO_SCRATCH_LIMIT_CURRENT: hsa_agent_info_t = 0xA117;
/// `hsa_amd_clock_counters_t`.
pub const HSA_AMD_AGENT_INFO_CLOCK_COUNTERS: hsa_agent_info_t = 0xA118;

/// `hsa_queue_type32_t`.
pub type hsa_queue_type32_t = u32;
/// Several producers.
pub const HSA_QUEUE_TYPE_MULTI: hsa_queue_type32_t = 0;
/// One producer.
pub const HSA_QUEUE_TYPE_SINGLE: hsa_queue_type32_t = 1;
/// Cooperative queue.
pub const HSA_QUEUE_TYPE_COOPERATIVE: hsa_queue_type32_t = 2;
/// `hsa_queue_feature_t` bit: kernel dispatch.
pub const HSA_QUEUE_FEATURE_KERNEL_DISPATCH: u32 = 1;
/// `hsa_queue_feature_t` bit: agent dispatch.
pub const HSA_QUEUE_FEATURE_AGENT_DISPATCH: u32 = 2;

/// `hsa_signal_condition_t`.
pub type hsa_signal_condition_t = u32;
/// value == compare.
pub const HSA_SIGNAL_CONDITION_EQ: hsa_signal_condition_t = 0;
/// value != compare.
pub const HSA_SIGNAL_CONDITION_NE: hsa_signal_condition_t = 1;
/// value < compare.
pub const HSA_SIGNAL_CONDITION_LT: hsa_signal_condition_t = 2;
/// value >= compare.
pub const HSA_SIGNAL_CONDITION_GTE: hsa_signal_condition_t = 3;
/// `hsa_wait_state_t`.
pub type hsa_wait_state_t = u32;
/// The waiter may sleep.
pub const HSA_WAIT_STATE_BLOCKED: hsa_wait_state_t = 0;
/// The waiter should spin.
pub const HSA_WAIT_STATE_ACTIVE: hsa_wait_state_t = 1;

/// `hsa_amd_signal_attribute_t` bit: only GPUs consume the signal.
pub const HSA_AMD_SIGNAL_AMD_GPU_ONLY: u64 = 1;
/// `hsa_amd_signal_attribute_t` bit: IPC signal.
pub const HSA_AMD_SIGNAL_IPC: u64 = 2;

/// `hsa_region_segment_t` / `hsa_amd_segment_t`.
pub type hsa_region_segment_t = u32;
/// Global segment.
pub const HSA_REGION_SEGMENT_GLOBAL: hsa_region_segment_t = 0;
/// Read-only segment.
pub const HSA_REGION_SEGMENT_READONLY: hsa_region_segment_t = 1;
/// Private segment.
pub const HSA_REGION_SEGMENT_PRIVATE: hsa_region_segment_t = 2;
/// Group segment.
pub const HSA_REGION_SEGMENT_GROUP: hsa_region_segment_t = 3;
/// Kernarg segment.
pub const HSA_REGION_SEGMENT_KERNARG: hsa_region_segment_t = 4;
/// `hsa_region_global_flag_t` bit: kernel arguments.
pub const HSA_REGION_GLOBAL_FLAG_KERNARG: u32 = 1;
/// `hsa_region_global_flag_t` bit: fine grained.
pub const HSA_REGION_GLOBAL_FLAG_FINE_GRAINED: u32 = 2;
/// `hsa_region_global_flag_t` bit: coarse grained.
pub const HSA_REGION_GLOBAL_FLAG_COARSE_GRAINED: u32 = 4;

/// `hsa_region_info_t`.
pub type hsa_region_info_t = u32;
/// `hsa_region_segment_t`.
pub const HSA_REGION_INFO_SEGMENT: hsa_region_info_t = 0;
/// `uint32_t` flags.
pub const HSA_REGION_INFO_GLOBAL_FLAGS: hsa_region_info_t = 1;
/// `size_t`.
pub const HSA_REGION_INFO_SIZE: hsa_region_info_t = 2;
/// `size_t`.
pub const HSA_REGION_INFO_ALLOC_MAX_SIZE: hsa_region_info_t = 4;
/// `bool`.
pub const HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED: hsa_region_info_t = 5;
/// `size_t`.
pub const HSA_REGION_INFO_RUNTIME_ALLOC_GRANULE: hsa_region_info_t = 6;
/// `size_t`.
pub const HSA_REGION_INFO_RUNTIME_ALLOC_ALIGNMENT: hsa_region_info_t = 7;
/// `uint32_t`.
pub const HSA_REGION_INFO_ALLOC_MAX_PRIVATE_WORKGROUP_SIZE: hsa_region_info_t = 8;
/// `bool`.
pub const HSA_AMD_REGION_INFO_HOST_ACCESSIBLE: hsa_region_info_t = 0xA000;
/// `void*`.
pub const HSA_AMD_REGION_INFO_BASE: hsa_region_info_t = 0xA001;
/// `uint32_t`.
pub const HSA_AMD_REGION_INFO_BUS_WIDTH: hsa_region_info_t = 0xA002;
/// `uint32_t`.
pub const HSA_AMD_REGION_INFO_MAX_CLOCK_FREQUENCY: hsa_region_info_t = 0xA003;

/// `hsa_amd_memory_pool_info_t`.
pub type hsa_amd_memory_pool_info_t = u32;
/// `hsa_amd_segment_t`.
pub const HSA_AMD_MEMORY_POOL_INFO_SEGMENT: hsa_amd_memory_pool_info_t = 0;
/// `uint32_t` flags.
pub const HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS: hsa_amd_memory_pool_info_t = 1;
/// `size_t`.
pub const HSA_AMD_MEMORY_POOL_INFO_SIZE: hsa_amd_memory_pool_info_t = 2;
/// `bool`.
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED: hsa_amd_memory_pool_info_t = 5;
/// `size_t`.
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE: hsa_amd_memory_pool_info_t = 6;
/// `size_t`.
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT: hsa_amd_memory_pool_info_t = 7;
/// `bool`.
pub const HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL: hsa_amd_memory_pool_info_t = 15;
/// `size_t`.
pub const HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE: hsa_amd_memory_pool_info_t = 16;
/// `hsa_amd_memory_pool_location_t`.
pub const HSA_AMD_MEMORY_POOL_INFO_LOCATION: hsa_amd_memory_pool_info_t = 17;
/// `size_t`.
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE: hsa_amd_memory_pool_info_t = 18;
/// `hsa_amd_memory_pool_global_flag_t` bit: kernel arguments.
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT: u32 = 1;
/// `hsa_amd_memory_pool_global_flag_t` bit: fine grained.
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED: u32 = 2;
/// `hsa_amd_memory_pool_global_flag_t` bit: coarse grained.
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED: u32 = 4;
/// `hsa_amd_memory_pool_location_t`: CPU memory.
pub const HSA_AMD_MEMORY_POOL_LOCATION_CPU: u32 = 0;
/// `hsa_amd_memory_pool_location_t`: GPU memory.
pub const HSA_AMD_MEMORY_POOL_LOCATION_GPU: u32 = 1;

/// `hsa_amd_agent_memory_pool_info_t`.
pub type hsa_amd_agent_memory_pool_info_t = u32;
/// `hsa_amd_memory_pool_access_t`.
pub const HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS: hsa_amd_agent_memory_pool_info_t = 0;
/// `uint32_t`.
pub const HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS: hsa_amd_agent_memory_pool_info_t = 1;
/// `hsa_amd_memory_pool_link_info_t[]`.
pub const HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO: hsa_amd_agent_memory_pool_info_t = 2;
/// `hsa_amd_memory_pool_access_t`: never allowed.
pub const HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED: u32 = 0;
/// `hsa_amd_memory_pool_access_t`: allowed by default.
pub const HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT: u32 = 1;
/// `hsa_amd_memory_pool_access_t`: disallowed by default.
pub const HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT: u32 = 2;

/// `hsa_isa_info_t`.
pub type hsa_isa_info_t = u32;
/// `uint32_t`: name length including NUL.
pub const HSA_ISA_INFO_NAME_LENGTH: hsa_isa_info_t = 0;
/// `char[]`: `amdgcn-amd-amdhsa--gfx942...`.
pub const HSA_ISA_INFO_NAME: hsa_isa_info_t = 1;
/// `uint32_t`.
pub const HSA_ISA_INFO_CALL_CONVENTION_COUNT: hsa_isa_info_t = 2;
/// `uint32_t`.
pub const HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONT_SIZE: hsa_isa_info_t = 3;
/// `uint32_t`.
pub const HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONTS_PER_COMPUTE_UNIT: hsa_isa_info_t = 4;
/// `bool[2]`.
pub const HSA_ISA_INFO_MACHINE_MODELS: hsa_isa_info_t = 5;
/// `bool[2]`.
pub const HSA_ISA_INFO_PROFILES: hsa_isa_info_t = 6;
/// `bool[3]`.
pub const HSA_ISA_INFO_DEFAULT_FLOAT_ROUNDING_MODES: hsa_isa_info_t = 7;
/// `bool[3]`.
pub const HSA_ISA_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES: hsa_isa_info_t = 8;
/// `bool`.
pub const HSA_ISA_INFO_FAST_F16_OPERATION: hsa_isa_info_t = 9;
/// `uint16_t[3]`.
pub const HSA_ISA_INFO_WORKGROUP_MAX_DIM: hsa_isa_info_t = 12;
/// `uint32_t`.
pub const HSA_ISA_INFO_WORKGROUP_MAX_SIZE: hsa_isa_info_t = 13;
/// `hsa_dim3_t`.
pub const HSA_ISA_INFO_GRID_MAX_DIM: hsa_isa_info_t = 14;
/// `uint64_t`.
pub const HSA_ISA_INFO_GRID_MAX_SIZE: hsa_isa_info_t = 16;
/// `uint32_t`.
pub const HSA_ISA_INFO_FBARRIER_MAX_SIZE: hsa_isa_info_t = 17;
/// `hsa_wavefront_info_t`: `uint32_t` size.
pub const HSA_WAVEFRONT_INFO_SIZE: u32 = 0;

/// `hsa_executable_symbol_info_t` (subset used by tools).
pub type hsa_executable_symbol_info_t = u32;
/// `hsa_symbol_kind_t`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_TYPE: hsa_executable_symbol_info_t = 0;
/// `uint32_t`: name length, no NUL.
pub const HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH: hsa_executable_symbol_info_t = 1;
/// `char[]`: exactly `NAME_LENGTH` bytes, no NUL.
pub const HSA_EXECUTABLE_SYMBOL_INFO_NAME: hsa_executable_symbol_info_t = 2;
/// `hsa_agent_t`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_AGENT: hsa_executable_symbol_info_t = 20;
/// `uint64_t`: variable address.
pub const HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS: hsa_executable_symbol_info_t = 21;
/// `uint64_t`: kernel object (address of the kernel descriptor).
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: hsa_executable_symbol_info_t = 22;
/// `uint32_t`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE: hsa_executable_symbol_info_t = 11;
/// `uint32_t`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT:
    hsa_executable_symbol_info_t = 12;
/// `uint32_t`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE: hsa_executable_symbol_info_t = 13;
/// `uint32_t`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE: hsa_executable_symbol_info_t = 14;
/// `hsa_symbol_kind_t`: kernel.
pub const HSA_SYMBOL_KIND_KERNEL: u32 = 1;
/// `hsa_symbol_kind_t`: variable.
pub const HSA_SYMBOL_KIND_VARIABLE: u32 = 0;

/// `hsa_dim3_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct hsa_dim3_t {
    /// X dimension.
    pub x: u32,
    /// Y dimension.
    pub y: u32,
    /// Z dimension.
    pub z: u32,
}

/// `hsa_amd_profiling_dispatch_time_t`: dispatch start/end in the system timestamp domain.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct hsa_amd_profiling_dispatch_time_t {
    /// Start of the dispatch, system ticks.
    pub start: u64,
    /// End of the dispatch, system ticks.
    pub end: u64,
}

/// `hsa_amd_profiling_async_copy_time_t`: copy start/end in the system timestamp domain.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct hsa_amd_profiling_async_copy_time_t {
    /// Start of the copy, system ticks.
    pub start: u64,
    /// End of the copy, system ticks.
    pub end: u64,
}

/// `hsa_amd_signal_handler`: returns true to stay registered.
pub type hsa_amd_signal_handler =
    Option<unsafe extern "C" fn(value: hsa_signal_value_t, arg: *mut core::ffi::c_void) -> bool>;

/// `hsa_amd_pointer_type_t`: not an allocation of the runtime.
pub const HSA_EXT_POINTER_TYPE_UNKNOWN: u32 = 0;
/// Memory allocated by the runtime.
pub const HSA_EXT_POINTER_TYPE_HSA: u32 = 1;
/// Host memory locked with `hsa_amd_memory_lock`.
pub const HSA_EXT_POINTER_TYPE_LOCKED: u32 = 2;
/// Memory of another allocation imported with `hsa_amd_ipc_memory_attach`.
pub const HSA_EXT_POINTER_TYPE_IPC: u32 = 4;

/// `hsa_amd_pointer_info_t`: what `hsa_amd_pointer_info` reports about an address.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(non_snake_case)]
pub struct hsa_amd_pointer_info_t {
    /// Size of this structure (set by the caller; the runtime may lower it).
    pub size: u32,
    /// `HSA_EXT_POINTER_TYPE_*`.
    pub type_: u32,
    /// Base address for agents.
    pub agentBaseAddress: *mut core::ffi::c_void,
    /// Base address for the host.
    pub hostBaseAddress: *mut core::ffi::c_void,
    /// Size of the allocation.
    pub sizeInBytes: usize,
    /// Application data.
    pub userData: *mut core::ffi::c_void,
    /// Agent owning the memory.
    pub agentOwner: hsa_agent_t,
    /// `hsa_amd_memory_pool_global_flag_t` bits of the allocation.
    pub global_flags: u32,
}

super::packets::zeroed_default!(hsa_amd_pointer_info_t);
