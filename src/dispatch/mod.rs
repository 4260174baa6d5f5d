//! The interposer: the `OnLoad`/`OnUnload` entry points the ROCm runtime calls.

pub mod descriptor;
pub mod kernel_names;
pub mod records;
pub mod selection;
