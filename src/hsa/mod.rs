//! The `#[repr(C)]` ABI of the HSA runtime, its tools API tables, AQL packets and aqlprofile.
