//! Finding the GPUs present from the KFD topology, as ROCm does.

use std::path::{Path, PathBuf};

use crate::error::CliError;

/// Overrides the KFD topology directory (same shape: `<dir>/nodes/<n>/properties`).
pub const TOPOLOGY_ENV: &str = "RTL_PMC_KFD_TOPOLOGY";

/// Where the kernel driver publishes the topology.
pub const SYSTEM_TOPOLOGY: &str = "/sys/class/kfd/kfd/topology";

/// One GPU node of the topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// KFD node number.
    pub node: u32,
    /// gfx target name, e.g. `gfx942`.
    pub arch: String,
    /// The node's `properties` text, for the counter engine's topology.
    pub properties: String,
}

/// The gfx name of a KFD `gfx_target_version` (major*10000 + minor*100 + stepping, minor and
/// stepping printed as hex digits): 90010 is gfx90a, 90402 gfx942, 120001 gfx1201.
pub fn gfx_name(target_version: u64) -> String {
    let major = target_version / 10000;
    let minor = (target_version / 100) % 100;
    let stepping = target_version % 100;
    format!("gfx{major}{minor:x}{stepping:x}")
}

fn property(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut parts = line.split_whitespace();
        (parts.next() == Some(name))
            .then(|| parts.next()?.parse().ok())
            .flatten()
    })
}

/// The topology directory to read: `RTL_PMC_KFD_TOPOLOGY` when set, else the system's.
pub fn topology_dir(override_dir: Option<&str>) -> PathBuf {
    match override_dir {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(SYSTEM_TOPOLOGY),
    }
}

/// The GPU nodes (those with `simd_count > 0`) of the topology under `dir`, by node number. A
/// missing directory means no GPU.
pub fn detect(dir: &Path) -> Result<Vec<Gpu>, CliError> {
    let nodes_dir = dir.join("nodes");
    let Ok(entries) = std::fs::read_dir(&nodes_dir) else {
        return Ok(Vec::new());
    };
    let mut nodes: Vec<(u32, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let n = e.file_name().to_str()?.parse().ok()?;
            Some((n, e.path().join("properties")))
        })
        .collect();
    nodes.sort();
    let mut gpus = Vec::new();
    for (node, path) in nodes {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if property(&text, "simd_count").unwrap_or(0) == 0 {
            continue;
        }
        let version = property(&text, "gfx_target_version").ok_or_else(|| {
            CliError::input(format!(
                "{}: GPU node without gfx_target_version",
                path.display()
            ))
        })?;
        gpus.push(Gpu {
            node,
            arch: gfx_name(version),
            properties: text,
        });
    }
    Ok(gpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx_names_print_minor_and_stepping_in_hex() {
        assert_eq!(gfx_name(90010), "gfx90a");
        assert_eq!(gfx_name(90402), "gfx942");
        assert_eq!(gfx_name(90500), "gfx950");
        assert_eq!(gfx_name(90008), "gfx908");
        assert_eq!(gfx_name(110000), "gfx1100");
        assert_eq!(gfx_name(120001), "gfx1201");
    }

    #[test]
    fn detects_gpu_nodes_in_node_order() {
        let dir = std::env::temp_dir().join(format!("rtl-pmc-kfd-{}", std::process::id()));
        for (node, text) in [
            (
                "0",
                "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n",
            ),
            ("10", "simd_count 440\ngfx_target_version 90010\n"),
            ("2", "simd_count 1216\ngfx_target_version 90402\n"),
        ] {
            let d = dir.join("nodes").join(node);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("properties"), text).unwrap();
        }
        let gpus = detect(&dir).unwrap();
        let found: Vec<(u32, &str)> = gpus.iter().map(|g| (g.node, g.arch.as_str())).collect();
        assert_eq!(found, vec![(2, "gfx942"), (10, "gfx90a")]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(detect(&dir).unwrap(), Vec::new());
    }
}
