//! rtl-pmc: per-dispatch hardware counter collection for AMD GPUs.
//!
//! This crate is two things at once. As a `cdylib` (`librtl_pmc.so`) it is the HSA tools
//! library that the ROCm runtime loads through `HSA_TOOLS_LIB`: it intercepts queues and wraps
//! kernel dispatches in counter packets built by aqlprofile ([`dispatch`]). As an `rlib` it
//! offers the raw ROCm ABI ([`hsa`]) and the pass planner ([`passes`]) to the command-line tool
//! and the simulated runtime.

pub mod dispatch;
pub mod fast_map;
pub mod hsa;
pub mod passes;
