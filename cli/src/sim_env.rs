//! The environment that makes a program run on the simulated ROCm (`--sim`).

/// The `NAME=value` pairs that make any program run on the simulated GPU described by `spec`
/// (an architecture name such as `gfx942`, a built-in configuration name, or a path to a
/// device-configuration file).
pub fn exports(spec: &str) -> Result<Vec<(String, String)>, String> {
    Err(format!("the simulated GPU '{spec}' is not available in this build"))
}
