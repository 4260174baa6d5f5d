//! Other processes with queues on a GPU, from the KFD's list of each process's queues
//! (`/sys/class/kfd/kfd/proc/<pid>/queues/<queue>/gpuid`): work rtl-pmc cannot keep out of a
//! counted dispatch's run, since it orders the dispatches of its own process only.

use std::path::{Path, PathBuf};

/// Overrides the KFD topology directory, as for the CLI's GPU detection.
pub const TOPOLOGY_ENV: &str = "RTL_PMC_KFD_TOPOLOGY";

/// The KFD's topology and process directories: `/sys/class/kfd/kfd/{topology,proc}`, or the
/// topology directory `RTL_PMC_KFD_TOPOLOGY` names and `proc` beside it.
pub fn kfd_dirs(topology_override: Option<&str>) -> (PathBuf, PathBuf) {
    match topology_override.filter(|t| !t.is_empty()) {
        Some(topology) => {
            let topology = PathBuf::from(topology);
            let proc = topology
                .parent()
                .map_or_else(PathBuf::new, Path::to_path_buf)
                .join("proc");
            (topology, proc)
        }
        None => (
            PathBuf::from("/sys/class/kfd/kfd/topology"),
            PathBuf::from("/sys/class/kfd/kfd/proc"),
        ),
    }
}

/// The KFD `gpu_id` of topology node `node_id`.
pub fn gpu_id(topology: &Path, node_id: u32) -> Option<u64> {
    let path = topology.join(format!("nodes/{node_id}/gpu_id"));
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The processes other than `own` with a queue on the GPU `gpu_id`, in ascending order.
pub fn other_processes(proc: &Path, gpu_id: u64, own: u32) -> Vec<u32> {
    let Ok(processes) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut found: Vec<u32> = processes
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let queues = std::fs::read_dir(e.path().join("queues")).ok()?;
            let on_gpu = queues.filter_map(|q| q.ok()).any(|q| {
                std::fs::read_to_string(q.path().join("gpuid"))
                    .ok()
                    .and_then(|id| id.trim().parse::<u64>().ok())
                    == Some(gpu_id)
            });
            (on_gpu && pid != own).then_some(pid)
        })
        .collect();
    found.sort_unstable();
    found
}

/// The warning for `others` on the GPU of KFD node `node` (`arch`), named as every output names it.
pub fn warning(node: u32, arch: &str, others: &[u32]) -> String {
    let pids: Vec<String> = others.iter().map(u32::to_string).collect();
    let (noun, their) = match others.len() {
        1 => ("process", "its"),
        _ => ("processes", "their"),
    };
    format!(
        "GPU {node} ({arch}) also runs work of {noun} {}, which rtl-pmc cannot keep out of the counting windows (it orders this process's dispatches only): a counted dispatch that overlaps {their} work counts it too",
        pids.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn processes_with_queues_on_the_gpu_are_found_but_this_one() {
        let root = std::env::temp_dir().join(format!("rtl-pmc-kfd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        write(&root.join("topology/nodes/1/gpu_id"), "51966\n");
        write(&root.join("proc/10/queues/0/gpuid"), "51966\n");
        write(&root.join("proc/10/queues/1/gpuid"), "51966\n");
        write(&root.join("proc/7/queues/3/gpuid"), "51966\n");
        write(&root.join("proc/20/queues/0/gpuid"), "4096\n");
        write(&root.join("proc/30/queues/0/gpuid"), "51966\n");
        std::fs::create_dir_all(root.join("proc/40/queues")).unwrap();
        let (topology, proc) = kfd_dirs(Some(root.join("topology").to_str().unwrap()));
        assert_eq!(proc, root.join("proc"));
        let id = gpu_id(&topology, 1).unwrap();
        assert_eq!(id, 51966);
        assert_eq!(gpu_id(&topology, 2), None);
        assert_eq!(other_processes(&proc, id, 30), [7, 10]);
        assert_eq!(
            other_processes(&root.join("nowhere"), id, 30),
            Vec::<u32>::new()
        );
        assert_eq!(
            warning(1, "gfx942", &[7, 10]),
            "GPU 1 (gfx942) also runs work of processes 7, 10, which rtl-pmc cannot keep out of the counting windows (it orders this process's dispatches only): a counted dispatch that overlaps their work counts it too"
        );
        assert!(warning(1, "gfx90a", &[7]).contains("of process 7, which"));
        assert!(warning(1, "gfx90a", &[7]).ends_with("overlaps its work counts it too"));
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            kfd_dirs(None),
            (
                PathBuf::from("/sys/class/kfd/kfd/topology"),
                PathBuf::from("/sys/class/kfd/kfd/proc")
            )
        );
    }
}
