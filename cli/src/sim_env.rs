//! The environment that makes a program run on the simulated ROCm (`--sim`).
//!
//! For a device configuration (a gfx architecture or built-in name such as `gfx942` or
//! `gfx942x2`, or a path to a JSON file of the simulator's schema) it prepares, under
//! `<directory of the simulator libraries>/rtl-sim/<config>/` (or the temp directory if that is
//! not writable), a `lib/` directory whose `libhsa-runtime64.so.1`, `libhsa-runtime64.so` and
//! `libhsa-amd-aqlprofile64.so` link to the simulator libraries built next to this executable
//! (or installed in its `../lib/rtl-pmc/`), and `libdrm.so.2` and `libdrm_amdgpu.so.1` to its
//! libdrm stand-in, a `kfd/` directory shaped like `/sys/class/kfd/kfd/topology` for that
//! configuration, and an `amdgpu.ids` table (libdrm's format) with the marketing names of its GPUs.

#[allow(dead_code)]
#[path = "../../sim/runtime/src/config.rs"]
mod sim_config;

use crate::error::CliError;
pub use sim_config::amdgpu_family;
use sim_config::{DeviceConfig, BUILT_IN};
use std::path::{Path, PathBuf};

/// Library files cargo builds for the simulator, and the names programs look for.
const LINKS: [(&str, &str); 5] = [
    ("libhsa_runtime64.so", "libhsa-runtime64.so.1"),
    ("libhsa_runtime64.so", "libhsa-runtime64.so"),
    ("libhsa_amd_aqlprofile64.so", "libhsa-amd-aqlprofile64.so"),
    ("librtl_sim_drm.so", "libdrm.so.2"),
    ("librtl_sim_drm.so", "libdrm_amdgpu.so.1"),
];

/// The `NAME=value` pairs that make any program run on the simulated GPU described by `spec`
/// (an architecture name such as `gfx942`, a built-in configuration name, or a path to a
/// device-configuration file).
pub fn exports(spec: &str) -> Result<Vec<(String, String)>, String> {
    let config = DeviceConfig::load(spec)?;
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot locate the rtl-pmc executable: {e}"))?;
    // The simulator's libraries: next to the executable, or in the installed library directory.
    let found = crate::layout::find(&exe, LINKS[0].0);
    let exe_dir = match &found {
        Some(library) => library.parent(),
        None => exe.parent(),
    }
    .ok_or("the rtl-pmc executable has no directory")?;
    let built_in = BUILT_IN.iter().any(|(name, _)| *name == spec.trim());
    let devices = if built_in {
        spec.trim().to_string()
    } else {
        std::fs::canonicalize(spec.trim())
            .map_err(|e| format!("device configuration {spec}: {e}"))?
            .display()
            .to_string()
    };
    let label: String = Path::new(spec.trim())
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir =
        prepare(&exe_dir.join("rtl-sim").join(&label), exe_dir, &config).or_else(|first| {
            let uid = std::env::var("USER").unwrap_or_else(|_| "user".into());
            prepare(
                &std::env::temp_dir()
                    .join(format!("rtl-sim-{uid}"))
                    .join(&label),
                exe_dir,
                &config,
            )
            .map_err(|second| format!("{first}; {second}"))
        })?;
    let lib = dir.join("lib").display().to_string();
    let library_path = match std::env::var("LD_LIBRARY_PATH") {
        Ok(old) if !old.is_empty() => format!("{lib}:{old}"),
        _ => lib,
    };
    Ok(vec![
        ("LD_LIBRARY_PATH".into(), library_path),
        ("RTL_SIM_DEVICES".into(), devices),
        (
            "RTL_PMC_KFD_TOPOLOGY".into(),
            dir.join("kfd").display().to_string(),
        ),
        (
            "RTL_PMC_AMDGPU_IDS".into(),
            dir.join("amdgpu.ids").display().to_string(),
        ),
    ])
}

/// Creates `dir/lib` (symlinks to the libraries in `exe_dir`) and `dir/kfd`. Another rtl-pmc
/// may be reading them: each file is replaced whole by a rename, and a topology identical to
/// the one there is not rewritten.
fn prepare(dir: &Path, exe_dir: &Path, config: &DeviceConfig) -> Result<PathBuf, String> {
    let lib = dir.join("lib");
    std::fs::create_dir_all(&lib).map_err(|e| format!("cannot create {}: {e}", lib.display()))?;
    for (built, name) in LINKS {
        let target = exe_dir.join(built);
        if !target.exists() {
            return Err(format!(
                "the simulator library {} is missing: build it with `cargo build --workspace`",
                target.display()
            ));
        }
        let link = lib.join(name);
        let staged = staging(&link);
        let _ = std::fs::remove_file(&staged);
        std::os::unix::fs::symlink(&target, &staged)
            .and_then(|()| std::fs::rename(&staged, &link))
            .map_err(|e| {
                format!(
                    "cannot link {} to {}: {e}",
                    link.display(),
                    target.display()
                )
            })?;
    }
    let kfd = dir.join("kfd");
    write_topology(&kfd, config)
        .map_err(|e| format!("cannot write the KFD topology under {}: {e}", kfd.display()))?;
    let ids = dir.join("amdgpu.ids");
    let staged = staging(&ids);
    std::fs::write(&staged, amdgpu_ids(config))
        .and_then(|()| std::fs::rename(&staged, &ids))
        .map_err(|e| format!("cannot write {}: {e}", ids.display()))?;
    Ok(dir.to_path_buf())
}

/// This process's staging name for `path`.
fn staging(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".partial-{}", std::process::id()));
    path.with_file_name(name)
}

/// Writes `config`'s KFD topology at `kfd` unless the same one is there; a different one is
/// written aside and renamed into place, so a reader sees the old or the new one, whole.
fn write_topology(kfd: &Path, config: &DeviceConfig) -> std::io::Result<()> {
    let staged = staging(kfd);
    let _ = std::fs::remove_dir_all(&staged);
    config.write_kfd_topology(&staged)?;
    if files(&staged)? == files(kfd).unwrap_or_default() {
        return std::fs::remove_dir_all(&staged);
    }
    let old = staging(&kfd.with_file_name("kfd.old"));
    let _ = std::fs::rename(kfd, &old);
    let placed = std::fs::rename(&staged, kfd);
    let _ = std::fs::remove_dir_all(&old);
    if placed.is_err() {
        // Another process put its own in place first.
        let _ = std::fs::remove_dir_all(&staged);
    }
    Ok(())
}

/// Every file under `dir` with its contents, by path relative to `dir`.
fn files(dir: &Path) -> std::io::Result<std::collections::BTreeMap<PathBuf, Vec<u8>>> {
    let mut found = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at)? {
            let path = entry?.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap_or(&path).to_path_buf();
                found.insert(relative, std::fs::read(&path)?);
            }
        }
    }
    Ok(found)
}

/// libdrm's table of marketing names (`amdgpu.ids` format) for the configuration's GPUs.
fn amdgpu_ids(config: &DeviceConfig) -> String {
    let mut text = String::from("# Marketing names of the simulated GPUs\n1.0.0\n");
    for gpu in &config.gpus {
        let line = format!("{:04X},\t00,\t{}\n", gpu.device_id, gpu.product);
        if !text.contains(&line) {
            text.push_str(&line);
        }
    }
    text
}

/// Where the kernel driver publishes the topology, read at this fixed path by ROCm libraries.
const SYSTEM_TOPOLOGY: &str = "/sys/class/kfd/kfd/topology";

/// Runs `command` on the simulated GPU: with `exports` (of [`exports`]) in its environment, in a
/// private mount namespace (inside a user namespace when not root) where
/// `/sys/class/kfd/kfd/topology` is the simulated topology. Where `/sys/class/kfd` does not
/// exist, a tmpfs over `/sys/class` holds it beside every other `/sys/class` entry, bound back
/// from sysfs. Returns only when that fails or the command cannot start.
pub fn exec(spec: &str, exports: &[(String, String)], command: &[String]) -> CliError {
    let Some((program, args)) = command.split_first() else {
        return CliError::input(
            "--exec: no command given: put it after --, e.g. rtl-pmc --sim gfx942 --exec -- ./app",
        );
    };
    let topology = exports
        .iter()
        .find(|(name, _)| name == "RTL_PMC_KFD_TOPOLOGY")
        .map(|(_, dir)| PathBuf::from(dir))
        .unwrap_or_default();
    if let Err(why) = private_namespace().and_then(|()| show_topology(&topology)) {
        return CliError {
            message: format!(
                "--exec: cannot show the simulated topology at {SYSTEM_TOPOLOGY} in a private \
                 mount namespace ({why}); `eval \"$(rtl-pmc --sim {spec} --print-env)\"` gives \
                 the rest of the simulator's environment, in which programs reading \
                 {SYSTEM_TOPOLOGY} see no simulated GPU"
            ),
            exit_code: 1,
        };
    }
    let error = std::os::unix::process::CommandExt::exec(
        std::process::Command::new(program)
            .args(args)
            .envs(exports.iter().map(|(k, v)| (k, v))),
    );
    CliError {
        message: format!("--exec: cannot run {program}: {error}"),
        exit_code: if error.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        },
    }
}

/// Moves this process into a mount namespace of its own whose mounts do not propagate back;
/// when not root, inside a user namespace where it is root.
fn private_namespace() -> Result<(), String> {
    use nix::sched::{unshare, CloneFlags};
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    if uid.is_root() {
        unshare(CloneFlags::CLONE_NEWNS).map_err(|e| format!("unshare(CLONE_NEWNS): {e}"))?;
    } else {
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
            .map_err(|e| format!("unshare(CLONE_NEWUSER | CLONE_NEWNS): {e}"))?;
        for (file, text) in [
            ("/proc/self/setgroups", "deny".to_string()),
            ("/proc/self/uid_map", format!("0 {uid} 1")),
            ("/proc/self/gid_map", format!("0 {gid} 1")),
        ] {
            std::fs::write(file, text).map_err(|e| format!("{file}: {e}"))?;
        }
    }
    mount_at(
        None,
        Path::new("/"),
        None,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None,
    )
}

use nix::mount::MsFlags;

/// `mount(2)`, its failure naming the target.
fn mount_at(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: MsFlags,
    data: Option<&str>,
) -> Result<(), String> {
    nix::mount::mount(source, target, fstype, flags, data)
        .map_err(|e| format!("mount on {}: {e}", target.display()))
}

/// Binds `topology` over the system's topology path, making that path first where the host has
/// no `/sys/class/kfd`.
fn show_topology(topology: &Path) -> Result<(), String> {
    let target = Path::new(SYSTEM_TOPOLOGY);
    if !target.is_dir() {
        let class = Path::new("/sys/class");
        // The real entries, reachable for a moment under the temporary directory.
        let aside = std::env::temp_dir();
        let bind = MsFlags::MS_BIND | MsFlags::MS_REC;
        mount_at(Some(class), &aside, None, bind, None)?;
        let covered = mount_at(
            Some(Path::new("rtl-sim-sysclass")),
            class,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("mode=755"),
        )
        .and_then(|()| {
            let entries =
                std::fs::read_dir(&aside).map_err(|e| format!("{}: {e}", aside.display()))?;
            for entry in entries.flatten() {
                let from = entry.path();
                if !from.is_dir() {
                    continue;
                }
                let to = class.join(entry.file_name());
                std::fs::create_dir(&to).map_err(|e| format!("{}: {e}", to.display()))?;
                mount_at(Some(&from), &to, None, bind, None)?;
            }
            std::fs::create_dir_all(target).map_err(|e| format!("{}: {e}", target.display()))
        });
        nix::mount::umount2(&aside, nix::mount::MntFlags::MNT_DETACH)
            .map_err(|e| format!("umount {}: {e}", aside.display()))?;
        covered?;
    }
    mount_at(Some(topology), target, None, MsFlags::MS_BIND, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_configurations_are_named() {
        let err = exports("gfx000").expect_err("unknown");
        assert!(
            err.starts_with(
                "unknown simulated device configuration 'gfx000': use one of gfx942, gfx90a"
            ),
            "{err}"
        );
    }

    #[test]
    fn amdgpu_families_follow_the_kernel_drivers() {
        for (version, family) in [
            (90402, 141),
            (90010, 141),
            (90500, 141),
            (90012, 142),
            (100300, 143),
            (100103, 0),
            (110000, 145),
            (110003, 148),
            (110501, 150),
            (120001, 152),
            (0, 0),
        ] {
            assert_eq!(amdgpu_family(version), family, "{version}");
        }
    }

    #[test]
    fn kfd_topology_matches_the_configuration() {
        let config = DeviceConfig::load("gfx942x2").expect("built in");
        let dir = std::env::temp_dir().join(format!("rtl-sim-kfd-test-{}", std::process::id()));
        config.write_kfd_topology(&dir).expect("writable temp dir");
        let read = |p: &str| std::fs::read_to_string(dir.join(p)).expect(p);
        assert_eq!(read("nodes/1/name"), "gfx942\n");
        assert_eq!(read("nodes/2/name"), "gfx942\n");
        // KFD's gpu_id: 0 on the CPU node, the runtime's driver UID on each GPU.
        assert_eq!(read("nodes/0/gpu_id"), "0\n");
        assert_eq!(read("nodes/1/gpu_id"), "4096\n");
        assert_eq!(read("nodes/2/gpu_id"), "4097\n");
        let props = read("nodes/2/properties");
        for line in [
            "simd_count 1216",
            "gfx_target_version 90402",
            "num_xcc 8",
            "array_count 32",
            "simd_arrays_per_engine 1",
            "cu_per_simd_array 10",
            "wave_front_size 64",
            "max_waves_per_simd 8",
            "lds_size_in_kb 64",
            "max_engine_clk_fcompute 2100",
            "location_id 8704",
            "drm_render_minor 136",
        ] {
            assert!(
                props.lines().any(|l| l == line),
                "missing `{line}` in\n{props}"
            );
        }
        assert!(read("nodes/0/properties")
            .lines()
            .any(|l| l == "simd_count 0"));
        // Every property rocprofiler-sdk reads of a node, as KFD writes them, and the memory
        // banks and links the counts announce.
        let names = |node: &str| -> Vec<String> {
            read(&format!("nodes/{node}/properties"))
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(String::from))
                .collect()
        };
        // KFD writes these on GPU nodes only (family_id is no KFD property).
        let gpu_only = [
            "local_mem_size",
            "fw_version",
            "capability",
            "debug_prop",
            "sdma_fw_version",
            "unique_id",
        ];
        for name in rtl_pmc_counters::PROPERTY_NAMES {
            if *name == "family_id" {
                continue;
            }
            assert!(names("2").iter().any(|n| n == name), "GPU lacks {name}");
            if !gpu_only.contains(name) {
                assert!(names("0").iter().any(|n| n == name), "CPU lacks {name}");
            }
        }
        assert!(props.lines().any(|l| l == "max_engine_clk_ccompute 3000"));
        assert!(read("nodes/0/properties")
            .lines()
            .any(|l| l == "io_links_count 2"));
        assert_eq!(
            read("nodes/0/io_links/1/properties"),
            "type 2\nversion_major 0\nversion_minor 0\nnode_from 0\nnode_to 2\nweight 0\n\
             min_latency 0\nmax_latency 0\nmin_bandwidth 0\nmax_bandwidth 0\n\
             recommended_transfer_size 0\nflags 0\n"
        );
        assert!(read("nodes/2/io_links/0/properties").contains("node_from 2\nnode_to 0\n"));
        assert_eq!(
            read("nodes/2/mem_banks/0/properties"),
            "heap_type 1\nsize_in_bytes 206158430208\nflags 0\nwidth 0\nmem_clk_max 0\n"
        );
        assert_eq!(
            read("nodes/0/mem_banks/0/properties"),
            "heap_type 0\nsize_in_bytes 0\nflags 0\nwidth 0\nmem_clk_max 0\n"
        );
        assert_eq!(
            amdgpu_ids(&config),
            "# Marketing names of the simulated GPUs\n1.0.0\n74A1,\t00,\tAMD Instinct MI300X\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn topologies_are_replaced_whole_and_kept_when_unchanged() {
        let dir = std::env::temp_dir().join(format!("rtl-sim-swap-test-{}", std::process::id()));
        let kfd = dir.join("kfd");
        let two = DeviceConfig::load("gfx942x2").expect("built in");
        let one = DeviceConfig::load("gfx90a").expect("built in");
        write_topology(&kfd, &two).unwrap();
        let first = files(&kfd).unwrap();
        let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&p.metadata().unwrap());
        let before = inode(&kfd.join("nodes/2/properties"));
        write_topology(&kfd, &two).unwrap();
        assert_eq!(files(&kfd).unwrap(), first);
        // Unchanged: the very same files, which a reader may hold open.
        assert_eq!(inode(&kfd.join("nodes/2/properties")), before);
        write_topology(&kfd, &one).unwrap();
        assert!(!kfd.join("nodes/2").exists());
        assert_eq!(
            std::fs::read_to_string(kfd.join("nodes/1/name")).unwrap(),
            "gfx90a\n"
        );
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["kfd"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
