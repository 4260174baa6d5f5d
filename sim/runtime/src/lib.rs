//! A simulated ROCm runtime: `libhsa-runtime64.so.1` over a model GPU.
//!
//! Built as a cdylib it replaces ROCr for unmodified programs (SONAME `libhsa-runtime64.so.1`,
//! exported `hsa_*` symbols versioned `ROCR_1`, each a trampoline through the live API tables);
//! as an rlib, tests drive the same code in-process. Tools are loaded from `HSA_TOOLS_LIB` as
//! ROCr loads them ([`tools`]); agents come from a device configuration ([`config`]); signals
//! really block ([`signals`]); asynchronous copies take time ([`copies`]); queues ([`queues`],
//! [`intercept`]) are processed by one thread per GPU in simulated time ([`device`]); kernels of real AMDGPU code objects are loaded
//! ([`code_object`], `executable`) and their performance counters modelled ([`gpu`]).
//! `sim/README.md` lists the environment variables.

#[path = "../../../src/hsa/mod.rs"]
pub mod hsa;

pub mod api;
pub mod clock;
pub mod code_object;
pub mod config;
pub mod copies;
pub mod device;
mod entry;
mod executable;
pub mod ffi;
pub mod gpu;
pub mod intercept;
mod ipc;
pub mod queues;
pub mod settings;
pub mod signals;
pub mod system;
pub mod tools;
