//! The `#[repr(C)]` ABI of the HSA runtime, its tools API tables, AQL packets and aqlprofile.
//!
//! Everything here mirrors the C headers of ROCm byte for byte (checked by `tests/abi_layout.rs`
//! against the headers Debian ships, and against offsets tabulated from newer ROCm sources for
//! what moved since). Names follow the C names so that code reads like the ROCm documentation.
//! The module uses only `core`/`std` and `super::` paths, so the simulated runtime can include
//! it by path without linking this crate.
#![allow(non_camel_case_types, non_upper_case_globals)]

pub mod aqlprofile;
pub mod loader;
pub mod packets;
pub mod queue;
pub mod signal;
pub mod tables;
pub mod types;

pub use aqlprofile::*;
pub use loader::*;
pub use packets::*;
pub use queue::*;
pub use signal::*;
pub use tables::*;
pub use types::*;
