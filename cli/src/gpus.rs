//! Finding the GPUs present from the KFD topology, as ROCm does.

use std::path::{Path, PathBuf};

use rtl_pmc_counters::Topology;

use crate::error::CliError;

/// Overrides the KFD topology directory (same shape: `<dir>/nodes/<n>/properties`).
pub const TOPOLOGY_ENV: &str = "RTL_PMC_KFD_TOPOLOGY";

/// Where the kernel driver publishes the topology.
pub const SYSTEM_TOPOLOGY: &str = "/sys/class/kfd/kfd/topology";

/// Overrides libdrm's table of GPU marketing names (same format as `amdgpu.ids`).
pub const AMDGPU_IDS_ENV: &str = "RTL_PMC_AMDGPU_IDS";

/// Where libdrm's table of marketing names is installed: ROCm's copy first, then the system's.
const SYSTEM_AMDGPU_IDS: [&str; 2] = [
    "/opt/amdgpu/share/libdrm/amdgpu.ids",
    "/usr/share/libdrm/amdgpu.ids",
];

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

/// The marketing name of a GPU in the text of an `amdgpu.ids` table (`device_id, revision,
/// name` lines, hexadecimal ids, `#` comments, a version line): the entry for the device and
/// revision, else the device's first entry when the revision is unknown or not listed.
pub fn marketing_name(ids: &str, device_id: u64, revision: Option<u64>) -> Option<String> {
    let mut first = None;
    for line in ids.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let mut fields = line.splitn(3, ',').map(str::trim);
        let (Some(device), Some(rev), Some(name)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (Ok(device), Ok(rev)) = (
            u64::from_str_radix(device, 16),
            u64::from_str_radix(rev, 16),
        ) else {
            continue;
        };
        if device != device_id || name.is_empty() {
            continue;
        }
        if revision == Some(rev) {
            return Some(name.to_string());
        }
        first.get_or_insert_with(|| name.to_string());
    }
    first
}

/// The PCI revision of the GPU behind DRM render node `minor`, when sysfs shows it.
fn pci_revision(minor: u64) -> Option<u64> {
    let path = format!("/sys/class/drm/renderD{minor}/device/revision");
    let text = std::fs::read_to_string(path).ok()?;
    u64::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
}

/// The marketing names of `gpus` (empty where unknown), as libdrm finds them: by KFD
/// `device_id` and PCI revision in the `amdgpu.ids` table at `ids_override`, or the installed one.
pub fn product_names(gpus: &[Gpu], ids_override: Option<&str>) -> Vec<String> {
    let table = match ids_override {
        Some(path) if !path.is_empty() => std::fs::read_to_string(path).ok(),
        _ => SYSTEM_AMDGPU_IDS
            .iter()
            .find_map(|path| std::fs::read_to_string(path).ok()),
    };
    gpus.iter()
        .map(|gpu| {
            let device_id = property(&gpu.properties, "device_id");
            let revision = match ids_override {
                Some(path) if !path.is_empty() => None,
                _ => property(&gpu.properties, "drm_render_minor").and_then(pci_revision),
            };
            table
                .as_deref()
                .zip(device_id)
                .and_then(|(ids, device)| marketing_name(ids, device, revision))
                .unwrap_or_default()
        })
        .collect()
}

/// The topology directory to read: `RTL_PMC_KFD_TOPOLOGY` when set, else the system's.
pub fn topology_dir(override_dir: Option<&str>) -> PathBuf {
    match override_dir {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(SYSTEM_TOPOLOGY),
    }
}

/// The nodes of the topology under `dir`: number and `properties` path, by number.
fn nodes(dir: &Path) -> Vec<(u32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir.join("nodes")) else {
        return Vec::new();
    };
    let mut nodes: Vec<(u32, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let n = e.file_name().to_str()?.parse().ok()?;
            Some((n, e.path().join("properties")))
        })
        .collect();
    nodes.sort();
    nodes
}

/// A CPU node of the KFD topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpu {
    /// KFD node number.
    pub node: u32,
    /// The node's numeric properties, in file order.
    pub properties: Vec<(String, u64)>,
}

/// The CPU nodes (those with `cpu_cores_count > 0` and no SIMDs) of the topology under `dir`,
/// by node number; unreadable nodes are left out.
pub fn detect_cpus(dir: &Path) -> Vec<Cpu> {
    nodes(dir)
        .into_iter()
        .filter_map(|(node, path)| {
            let text = std::fs::read_to_string(path).ok()?;
            let cpu = property(&text, "simd_count").unwrap_or(0) == 0
                && property(&text, "cpu_cores_count").unwrap_or(0) > 0;
            cpu.then(|| Cpu {
                node,
                properties: text
                    .lines()
                    .filter_map(|line| {
                        let mut parts = line.split_whitespace();
                        Some((parts.next()?.to_string(), parts.next()?.parse().ok()?))
                    })
                    .collect(),
            })
        })
        .collect()
}

/// The KFD `gpu_id` of node `node` under `dir`, if it has one.
pub fn gpu_id(dir: &Path, node: u32) -> Option<u64> {
    std::fs::read_to_string(dir.join("nodes").join(node.to_string()).join("gpu_id"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The KFD `name` of node `node` under `dir`: its lines joined by spaces, as rocprofiler-sdk
/// reads it (empty when the node has none).
pub fn node_name(dir: &Path, node: u32) -> String {
    std::fs::read_to_string(dir.join("nodes").join(node.to_string()).join("name"))
        .unwrap_or_default()
        .lines()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The GPU nodes (those with `simd_count > 0`) of the topology under `dir`, by node number. A
/// missing directory means no GPU.
pub fn detect(dir: &Path) -> Result<Vec<Gpu>, CliError> {
    let nodes = nodes(dir);
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
    fn marketing_names_come_from_the_amdgpu_ids_table() {
        let ids = "# List of AMDGPU IDs\n#\n\n1.0.0\n740F,\t02,\tAMD Instinct MI210\n\
                   74A1,\t00,\tAMD Instinct MI300X\n744C,\tC8,\tAMD Radeon RX 7900 XTX\n\
                   744C,\tCC,\tAMD Radeon RX 7900 XT\nbroken line\n";
        assert_eq!(
            marketing_name(ids, 0x74a1, None).as_deref(),
            Some("AMD Instinct MI300X")
        );
        assert_eq!(
            marketing_name(ids, 0x744c, Some(0xcc)).as_deref(),
            Some("AMD Radeon RX 7900 XT")
        );
        assert_eq!(
            marketing_name(ids, 0x744c, Some(0x01)).as_deref(),
            Some("AMD Radeon RX 7900 XTX"),
            "an unlisted revision takes the device's first entry"
        );
        assert_eq!(marketing_name(ids, 0x1234, None), None);
    }

    #[test]
    fn product_names_use_the_device_id_of_each_node() {
        let dir = std::env::temp_dir().join(format!("rtl-pmc-ids-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ids = dir.join("amdgpu.ids");
        std::fs::write(&ids, "1.0.0\n74A1,\t00,\tAMD Instinct MI300X\n").unwrap();
        let gpu = |device: u64| Gpu {
            node: 1,
            arch: "gfx942".into(),
            topology: Topology::from_kfd_properties(&gpu_node(90402)).unwrap(),
            properties: format!("{}device_id {device}\n", gpu_node(90402)),
        };
        let names = product_names(&[gpu(0x74a1), gpu(0x74a5)], ids.to_str());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            names,
            vec!["AMD Instinct MI300X".to_string(), String::new()]
        );
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
