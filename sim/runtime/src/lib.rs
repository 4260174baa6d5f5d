//! A simulated ROCm runtime: `libhsa-runtime64.so.1` over a model GPU.
pub mod code_object;
pub mod gpu;
