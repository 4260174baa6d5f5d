//! The `NT_AMDGPU_METADATA` note of a code object (code object v3 and newer): a MessagePack map
//! whose keys are the ones `llvm-readelf --notes` prints (`amdhsa.kernels`, `.vgpr_count`, ...).

use serde::Deserialize;

/// The whole metadata note.
#[derive(Debug, Clone, Deserialize)]
pub struct Metadata {
    /// `amdhsa.version`: the metadata format version, `[major, minor]`.
    #[serde(rename = "amdhsa.version", default)]
    pub version: Vec<u32>,
    /// `amdhsa.target`: the target id, e.g. `amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-`
    /// (absent in code object v3).
    #[serde(rename = "amdhsa.target", default)]
    pub target: Option<String>,
    /// `amdhsa.kernels`: one entry per kernel.
    #[serde(rename = "amdhsa.kernels", default)]
    pub kernels: Vec<KernelMeta>,
}

/// What the metadata note says about one kernel.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct KernelMeta {
    /// `.name`: the source-level (possibly mangled) name, e.g. `vadd`.
    #[serde(rename = ".name")]
    pub name: String,
    /// `.symbol`: the ELF symbol of the kernel descriptor, e.g. `vadd.kd`.
    #[serde(rename = ".symbol")]
    pub symbol: String,
    /// `.vgpr_count`: architected VGPRs used by one work-item.
    #[serde(rename = ".vgpr_count", default)]
    pub vgpr_count: u32,
    /// `.sgpr_count`: SGPRs used by one wavefront.
    #[serde(rename = ".sgpr_count", default)]
    pub sgpr_count: u32,
    /// `.agpr_count`: accumulation VGPRs (gfx90a and gfx94x/95x only; absent elsewhere).
    #[serde(rename = ".agpr_count", default)]
    pub agpr_count: Option<u32>,
    /// `.group_segment_fixed_size`: LDS bytes per work-group, without dynamic LDS.
    #[serde(rename = ".group_segment_fixed_size", default)]
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`: scratch bytes per work-item.
    #[serde(rename = ".private_segment_fixed_size", default)]
    pub private_segment_fixed_size: u32,
    /// `.wavefront_size`: 32 or 64.
    #[serde(rename = ".wavefront_size", default = "default_wavefront_size")]
    pub wavefront_size: u32,
    /// `.kernarg_segment_size`: bytes of the kernel-argument segment, hidden arguments included.
    #[serde(rename = ".kernarg_segment_size", default)]
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align`: required alignment of the kernel-argument segment.
    #[serde(rename = ".kernarg_segment_align", default = "default_kernarg_align")]
    pub kernarg_segment_align: u32,
    /// `.max_flat_workgroup_size`: the largest work-group the kernel supports.
    #[serde(rename = ".max_flat_workgroup_size", default)]
    pub max_flat_workgroup_size: u32,
    /// `.reqd_workgroup_size`: the work-group size the kernel requires, if any.
    #[serde(rename = ".reqd_workgroup_size", default)]
    pub reqd_workgroup_size: Option<[u32; 3]>,
    /// `.sgpr_spill_count`.
    #[serde(rename = ".sgpr_spill_count", default)]
    pub sgpr_spill_count: u32,
    /// `.vgpr_spill_count`.
    #[serde(rename = ".vgpr_spill_count", default)]
    pub vgpr_spill_count: u32,
    /// `.uses_dynamic_stack`: the private segment size is only a lower bound (recursion or
    /// indirect calls).
    #[serde(rename = ".uses_dynamic_stack", default)]
    pub uses_dynamic_stack: bool,
    /// `.language`: the source language (`OpenCL C`; HIP's own code objects leave it out).
    #[serde(rename = ".language", default)]
    pub language: Option<String>,
    /// `.args`: the kernel arguments, explicit and hidden, in kernarg-segment order.
    #[serde(rename = ".args", default)]
    pub args: Vec<KernelArg>,
}

/// One argument of a kernel, as laid out in the kernel-argument segment.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct KernelArg {
    /// `.name`: the source name, when the compiler kept it.
    #[serde(rename = ".name", default)]
    pub name: Option<String>,
    /// `.offset`: byte offset in the kernarg segment.
    #[serde(rename = ".offset")]
    pub offset: u32,
    /// `.size`: bytes.
    #[serde(rename = ".size")]
    pub size: u32,
    /// `.value_kind`: `by_value`, `global_buffer`, `hidden_block_count_x`, ...
    #[serde(rename = ".value_kind")]
    pub value_kind: String,
    /// `.address_space` of a pointer argument (`global`, `constant`, ...).
    #[serde(rename = ".address_space", default)]
    pub address_space: Option<String>,
}

impl KernelArg {
    /// Whether the runtime, not the application, fills this argument (`hidden_*` value kinds).
    pub fn is_hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

impl KernelMeta {
    /// The arguments the application passes, in order (hidden arguments left out).
    pub fn explicit_args(&self) -> impl Iterator<Item = &KernelArg> {
        self.args.iter().filter(|arg| !arg.is_hidden())
    }
}

fn default_wavefront_size() -> u32 {
    64
}

fn default_kernarg_align() -> u32 {
    8
}
