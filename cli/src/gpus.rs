//! Finding the GPUs present from the KFD topology, as ROCm does.

use std::path::{Path, PathBuf};

use rtl_pmc_counters::Topology;

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
    /// The node's properties.
    pub topology: Topology,
    /// The node's `properties` text as KFD wrote it.
    pub properties: String,
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
        let bad = |why: String| CliError::input(format!("{}: {why}", path.display()));
        let topology = Topology::from_kfd_properties(&text).map_err(|e| bad(e.to_string()))?;
        let arch = topology
            .gfx_name()
            .ok_or_else(|| bad("GPU node without gfx_target_version".into()))?;
        gpus.push(Gpu {
            node,
            arch,
            topology,
            properties: text,
        });
    }
    Ok(gpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu_node(version: u64) -> String {
        format!(
            "simd_count 1216\nsimd_per_cu 4\narray_count 32\nsimd_arrays_per_engine 1\n\
             gfx_target_version {version}\n"
        )
    }

    #[test]
    fn detects_gpu_nodes_in_node_order() {
        let dir = std::env::temp_dir().join(format!("rtl-pmc-kfd-{}", std::process::id()));
        for (node, text) in [
            (
                "0",
                "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n",
            ),
            ("10", &gpu_node(90010)),
            ("2", &gpu_node(90402)),
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

    #[test]
    fn a_gpu_node_without_geometry_is_an_error() {
        let dir = std::env::temp_dir().join(format!("rtl-pmc-kfd-bad-{}", std::process::id()));
        let d = dir.join("nodes").join("1");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("properties"),
            "simd_count 8\ngfx_target_version 90402\n",
        )
        .unwrap();
        let err = detect(&dir).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            err.message,
            format!(
                "{}: invalid GPU topology: property 'simd_per_cu' is missing",
                d.join("properties").display()
            )
        );
    }
}
