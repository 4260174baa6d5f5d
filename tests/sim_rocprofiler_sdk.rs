//! The simulated ROCm as rocprofiler-sdk tools see a ROCm machine, without rocprofiler-sdk:
//! the runtime hands its API table to rocprofiler-register (a recording stand-in of
//! `librocprofiler-register.so.0` built here with `cc`) beside ROCr's `HSA_TOOLS_LIB` rules.

mod sim_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sim_support::{artifact, sim_env, target_dir};

/// A stand-in of rocprofiler-register that appends the registration it receives to the file
/// named by `RTL_SIM_TEST_TOOL_LOG` (the test tool's log) and returns the status
/// `RTL_SIM_TEST_REGISTER_STATUS` (default 1, "no tools").
const REGISTER_STAND_IN: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct version { uint32_t major, size, step, reserved; };
struct root { struct version version; struct version *core; };

int rocprofiler_register_library_api_table(const char *name, uint32_t (*import)(void),
                                           uint32_t version, void **tables, uint64_t count,
                                           uint64_t *id) {
    const char *path = getenv("RTL_SIM_TEST_TOOL_LOG");
    FILE *log = path ? fopen(path, "a") : NULL;
    if (log) {
        const struct root *root = (const struct root *)tables[0];
        Dl_info info;
        const char *in = "?";
        if (dladdr((void *)import, &info) && info.dli_fname) {
            const char *slash = strrchr(info.dli_fname, '/');
            in = slash ? slash + 1 : info.dli_fname;
        }
        fprintf(log,
                "register name=%s import=%u version=%u tables=%llu root=%u.%u.%u "
                "core=%u.%u.%u import_in=%s id=%s\n",
                name, import(), version, (unsigned long long)count, root->version.major,
                root->version.size, root->version.step, root->core->major, root->core->size,
                root->core->step, in, id ? "given" : "null");
        fclose(log);
    }
    const char *status = getenv("RTL_SIM_TEST_REGISTER_STATUS");
    return status ? atoi(status) : 1;
}

const char *rocprofiler_register_error_string(int status) {
    return status == 6 ? "the tool library refused the tables" : "other";
}
"#;

/// The stand-in built once into `dir` as `file` (soname `librocprofiler-register.so.0`).
fn register_stand_in(dir: &Path, file: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let source = dir.join("register.c");
    std::fs::write(&source, REGISTER_STAND_IN).unwrap();
    let out = dir.join(file);
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(&source)
        .arg("-Wl,-soname,librocprofiler-register.so.0")
        .arg("-ldl")
        .status()
        .expect("cc runs");
    assert!(
        status.success(),
        "building the rocprofiler-register stand-in failed"
    );
    out
}

/// A fresh directory under the target directory for `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = target_dir()
        .join("rtl-sim-sdk-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Where the stand-in is when the demo application runs.
#[derive(Clone, Copy, PartialEq)]
enum Register {
    /// Not there at all.
    Absent,
    /// Found by the loader on `LD_LIBRARY_PATH`, as an installed ROCm's.
    OnLibraryPath,
    /// Preloaded under another file name, off the library path.
    Preloaded,
}

/// What one run of `rtl-demo-app` on the simulated gfx942 left: the log of the stand-in and of
/// the `HSA_TOOLS_LIB` test tool `tool_a`, and the application's output.
struct Run {
    log: Vec<String>,
    output: Output,
}

fn run_demo(name: &str, register: Register, env: &[(&str, &str)]) -> Run {
    let dir = scratch(name);
    let tool = dir.join("tool_a.so");
    std::fs::copy(artifact("librtl_sim_test_tool.so"), &tool).unwrap();
    let log = dir.join("log.txt");
    let mut vars = sim_env("gfx942");
    match register {
        Register::Absent => {}
        Register::OnLibraryPath => {
            let lib = dir.join("rocm-lib");
            register_stand_in(&lib, "librocprofiler-register.so.0");
            let path = vars
                .iter_mut()
                .find(|(k, _)| k == "LD_LIBRARY_PATH")
                .unwrap();
            path.1 = format!("{}:{}", path.1, lib.display());
        }
        Register::Preloaded => {
            let lib = register_stand_in(&dir.join("elsewhere"), "libregister-preloaded.so");
            vars.push(("LD_PRELOAD".into(), lib.display().to_string()));
        }
    }
    let output = Command::new(artifact("rtl-demo-app"))
        .envs(vars)
        .env("HSA_TOOLS_LIB", &tool)
        .env("RTL_SIM_TEST_TOOL_LOG", &log)
        .envs(env.iter().copied())
        .output()
        .expect("rtl-demo-app starts");
    let log = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    Run { log, output }
}

const REGISTERED: &str = "register name=hsa import=11800 version=11800 tables=1 root=3.64.1 \
                          core=2.1016.0 import_in=libhsa-runtime64.so.1 id=given";
const ON_LOAD: &str = "OnLoad name=tool_a runtime_version=3 failed=0 failed_names=[] \
                       root=3.64.1 core=2.1016.0 amd_ext=2.704.8";
const ON_UNLOAD: &str = "OnUnload name=tool_a";

impl Run {
    fn assert_app_ran(&self) {
        assert_eq!(
            String::from_utf8_lossy(&self.output.stdout),
            "rtl-demo-app: 4 dispatches verified (vadd,saxpy,fill,increment) on 1 GPU(s) \
             [gfx942], 1 thread(s) x 1 queue(s) x 1 iteration(s)\n"
        );
        assert_eq!(self.output.status.code(), Some(0));
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
}

#[test]
fn the_runtime_registers_its_table_with_an_installed_rocprofiler_register() {
    // No rocprofiler-sdk tool behind it ("no tools"): HSA_TOOLS_LIB's tools load after it.
    let run = run_demo("no-tools", Register::OnLibraryPath, &[]);
    run.assert_app_ran();
    assert_eq!(run.log, [REGISTERED, ON_LOAD, ON_UNLOAD]);
    assert_eq!(run.stderr(), "");
}

#[test]
fn a_preloaded_rocprofiler_register_is_used_where_it_is() {
    let run = run_demo("preloaded", Register::Preloaded, &[]);
    run.assert_app_ran();
    assert_eq!(run.log, [REGISTERED, ON_LOAD, ON_UNLOAD]);
}

#[test]
fn a_successful_registration_replaces_hsa_tools_lib_unless_v1_tools_are_asked_for() {
    let run = run_demo(
        "success",
        Register::OnLibraryPath,
        &[("RTL_SIM_TEST_REGISTER_STATUS", "0")],
    );
    run.assert_app_ran();
    assert_eq!(run.log, [REGISTERED]);
    for (value, tools) in [("1", true), ("", true), ("off", false), ("0", false)] {
        let run = run_demo(
            &format!("v1-{value}"),
            Register::OnLibraryPath,
            &[
                ("RTL_SIM_TEST_REGISTER_STATUS", "0"),
                ("HSA_TOOLS_ROCPROFILER_V1_TOOLS", value),
            ],
        );
        run.assert_app_ran();
        let expected: &[&str] = if tools {
            &[REGISTERED, ON_LOAD, ON_UNLOAD]
        } else {
            &[REGISTERED]
        };
        assert_eq!(
            run.log, expected,
            "HSA_TOOLS_ROCPROFILER_V1_TOOLS={value:?}"
        );
    }
}

#[test]
fn registration_can_be_disabled_and_its_failures_reported() {
    let run = run_demo(
        "disabled",
        Register::OnLibraryPath,
        &[
            ("HSA_TOOLS_DISABLE_REGISTER", "1"),
            ("RTL_SIM_TEST_REGISTER_STATUS", "0"),
        ],
    );
    run.assert_app_ran();
    assert_eq!(run.log, [ON_LOAD, ON_UNLOAD]);
    let run = run_demo(
        "failure",
        Register::OnLibraryPath,
        &[
            ("HSA_TOOLS_REPORT_REGISTER_FAILURE", "1"),
            ("RTL_SIM_TEST_REGISTER_STATUS", "6"),
        ],
    );
    run.assert_app_ran();
    assert_eq!(run.log, [REGISTERED, ON_LOAD, ON_UNLOAD]);
    let stderr = run.stderr();
    let pid = stderr
        .strip_prefix("rtl-sim[")
        .and_then(|rest| rest.split_once(']'))
        .map(|(pid, _)| pid.to_string())
        .unwrap_or_default();
    assert!(pid.parse::<u32>().is_ok(), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "rtl-sim[{pid}]: rocprofiler-register returned status 6: the tool library refused \
             the tables\n"
        )
    );
    // Without the switch a failure is silent, as in ROCr.
    let run = run_demo(
        "failure-silent",
        Register::OnLibraryPath,
        &[("RTL_SIM_TEST_REGISTER_STATUS", "6")],
    );
    run.assert_app_ran();
    assert_eq!(run.stderr(), "");
}

#[test]
fn without_rocprofiler_register_or_with_rocm_5_tables_nothing_registers() {
    let run = run_demo("absent", Register::Absent, &[]);
    run.assert_app_ran();
    assert_eq!(run.log, [ON_LOAD, ON_UNLOAD]);
    let run = run_demo(
        "rocm5",
        Register::OnLibraryPath,
        &[
            ("RTL_SIM_ROCM", "5.2"),
            ("RTL_SIM_TEST_REGISTER_STATUS", "0"),
        ],
    );
    run.assert_app_ran();
    assert_eq!(
        run.log,
        [
            "OnLoad name=tool_a runtime_version=1 failed=0 failed_names=[] root=1.48.0 \
             core=1.1016.0 amd_ext=1.400.0",
            ON_UNLOAD
        ]
    );
}

// ---- libdrm ----

/// A program that asks libdrm what rocprofiler-sdk asks for each render-node minor it is given.
const DRM_CLIENT: &str = r#"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct amdgpu_gpu_info {
    uint32_t asic_id, chip_rev, chip_external_rev, family_id;
    uint64_t ids_flags, max_engine_clk, max_memory_clk;
    uint32_t num_shader_engines, num_shader_arrays_per_engine;
    uint32_t rest_before_cus[69];
    uint32_t cu_active_number;
    uint32_t rest[22];
};
int drmOpenRender(int minor);
int drmClose(int fd);
int amdgpu_device_initialize(int fd, uint32_t *major, uint32_t *minor, void **dev);
int amdgpu_device_deinitialize(void *dev);
const char *amdgpu_get_marketing_name(void *dev);
int amdgpu_query_gpu_info(void *dev, struct amdgpu_gpu_info *info);

int main(int argc, char **argv) {
    if (sizeof(struct amdgpu_gpu_info) != 416) return 3;
    for (int i = 1; i < argc; i++) {
        int minor = atoi(argv[i]);
        int fd = drmOpenRender(minor);
        if (fd < 0) { printf("render %d: %d\n", minor, fd); continue; }
        uint32_t major_v = 0, minor_v = 0;
        void *dev = NULL, *again = NULL;
        if (amdgpu_device_initialize(fd, &major_v, &minor_v, &dev) != 0) return 4;
        int fd2 = drmOpenRender(minor);
        if (amdgpu_device_initialize(fd2, &major_v, &minor_v, &again) != 0) return 5;
        struct amdgpu_gpu_info info = {0};
        if (amdgpu_query_gpu_info(dev, &info) != 0) return 6;
        printf("render %d: amdgpu %u.%u, %s, asic 0x%x, family %u, %u CUs, %u SEs x %u SAs, "
               "%llu kHz, one handle %d\n",
               minor, major_v, minor_v, amdgpu_get_marketing_name(dev), info.asic_id,
               info.family_id, info.cu_active_number, info.num_shader_engines,
               info.num_shader_arrays_per_engine, (unsigned long long)info.max_engine_clk,
               dev == again);
        if (amdgpu_device_deinitialize(again) || amdgpu_device_deinitialize(dev)) return 7;
        if (drmClose(fd2) || drmClose(fd)) return 8;
    }
    return 0;
}
"#;

/// `DRM_CLIENT` linked as rocprofiler-sdk is (`DT_NEEDED` `libdrm.so.2` and
/// `libdrm_amdgpu.so.1`), against link-only libraries of those names that are never loaded.
fn drm_client() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("drm-client");
    std::fs::create_dir_all(&dir).unwrap();
    let link_only = [
        ("libdrm.so.2", "libdrm.so", "int drmOpenRender(int m) { (void)m; return -1; }\nint drmClose(int f) { (void)f; return -1; }\n"),
        (
            "libdrm_amdgpu.so.1",
            "libdrm_amdgpu.so",
            "#include <stdint.h>\n\
             int amdgpu_device_initialize(int f, uint32_t *a, uint32_t *b, void **d) { (void)f; (void)a; (void)b; (void)d; return -1; }\n\
             int amdgpu_device_deinitialize(void *d) { (void)d; return -1; }\n\
             const char *amdgpu_get_marketing_name(void *d) { (void)d; return 0; }\n\
             int amdgpu_query_gpu_info(void *d, void *i) { (void)d; (void)i; return -1; }\n",
        ),
    ];
    for (soname, file, source) in link_only {
        let c = dir.join(format!("{file}.c"));
        std::fs::write(&c, source).unwrap();
        let status = Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(dir.join(file))
            .arg(&c)
            .arg(format!("-Wl,-soname,{soname}"))
            .status()
            .expect("cc runs");
        assert!(status.success(), "building the link-only {soname} failed");
    }
    let source = dir.join("client.c");
    std::fs::write(&source, DRM_CLIENT).unwrap();
    let out = dir.join("drm-client");
    let status = Command::new("cc")
        .args(["-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(&source)
        .arg("-L")
        .arg(&dir)
        .args(["-ldrm", "-ldrm_amdgpu"])
        .status()
        .expect("cc runs");
    assert!(status.success(), "building the libdrm client failed");
    out
}

#[test]
fn libdrm_answers_for_each_simulated_gpu() {
    let client = drm_client();
    let needed = Command::new("readelf")
        .arg("-dW")
        .arg(&client)
        .output()
        .unwrap();
    let needed = String::from_utf8_lossy(&needed.stdout);
    assert!(needed.contains("Shared library: [libdrm.so.2]"), "{needed}");
    assert!(
        needed.contains("Shared library: [libdrm_amdgpu.so.1]"),
        "{needed}"
    );
    for (config, minors, expected) in [
        (
            "gfx942",
            &["128", "129"][..],
            "render 128: amdgpu 3.57, AMD Instinct MI300X, asic 0x74a1, family 141, 304 CUs, \
             32 SEs x 1 SAs, 2100000 kHz, one handle 1\nrender 129: -19\n",
        ),
        (
            "gfx90a",
            &["128"][..],
            "render 128: amdgpu 3.57, AMD Instinct MI210, asic 0x740f, family 141, 104 CUs, \
             8 SEs x 1 SAs, 1700000 kHz, one handle 1\n",
        ),
        (
            "gfx950",
            &["128"][..],
            "render 128: amdgpu 3.57, AMD Instinct MI355X, asic 0x75a3, family 141, 256 CUs, \
             32 SEs x 1 SAs, 2400000 kHz, one handle 1\n",
        ),
        (
            "gfx942x2",
            &["136", "128"][..],
            "render 136: amdgpu 3.57, AMD Instinct MI300X, asic 0x74a1, family 141, 304 CUs, \
             32 SEs x 1 SAs, 2100000 kHz, one handle 1\nrender 128: amdgpu 3.57, AMD Instinct \
             MI300X, asic 0x74a1, family 141, 304 CUs, 32 SEs x 1 SAs, 2100000 kHz, one handle 1\n",
        ),
        (
            "gfx1100",
            &["128"][..],
            "render 128: amdgpu 3.57, AMD Radeon RX 7900 XTX, asic 0x744c, family 145, 96 CUs, \
             6 SEs x 2 SAs, 2526000 kHz, one handle 1\n",
        ),
    ] {
        let out = Command::new(&client)
            .args(minors)
            .envs(sim_env(config))
            .output()
            .expect("the libdrm client starts");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{config}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{config}");
        assert_eq!(out.status.code(), Some(0), "{config}");
    }
}

// ---- --exec: the simulated topology at /sys/class/kfd ----

fn rtl_pmc() -> Command {
    Command::new(artifact("rtl-pmc"))
}

/// Whether this host gives a process a private mount namespace (as root, or in a user
/// namespace); `None` with the reason when it does not.
fn namespaces_refused() -> Option<String> {
    for args in [&["-m", "true"][..], &["-U", "-m", "true"][..]] {
        match Command::new("unshare").args(args).output() {
            Ok(out) if out.status.success() => return None,
            Ok(out) => {
                let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
                if args.len() == 3 {
                    return Some(format!("unshare {}: {why}", args.join(" ")));
                }
            }
            Err(e) => return Some(format!("unshare cannot run: {e}")),
        }
    }
    None
}

/// What a shell run by `--exec` on `config` prints of the topology, sysfs and its environment.
const SHOW: &str = "cd /sys/class/kfd/kfd/topology/nodes && for n in *; do \
                    echo \"node $n: $(cat $n/name) gpu_id $(cat $n/gpu_id) $(grep -c . $n/properties) properties\"; \
                    done; echo \"lo mtu $(cat /sys/class/net/lo/mtu)\"; echo \"devices $RTL_SIM_DEVICES\"; exit 3";

fn expected_show(kfd: &Path) -> String {
    let mut text = String::new();
    let mut nodes: Vec<String> = std::fs::read_dir(kfd.join("nodes"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    nodes.sort();
    for n in nodes {
        let read = |f: &str| std::fs::read_to_string(kfd.join("nodes").join(&n).join(f)).unwrap();
        text += &format!(
            "node {n}: {} gpu_id {} {} properties\n",
            read("name").trim(),
            read("gpu_id").trim(),
            read("properties").lines().count()
        );
    }
    let mtu = std::fs::read_to_string("/sys/class/net/lo/mtu").unwrap();
    text + &format!("lo mtu {}devices gfx942x2\n", mtu)
}

#[test]
fn exec_shows_the_simulated_topology_at_sys_class_kfd() {
    if let Some(why) = namespaces_refused() {
        eprintln!("skipped: this host refuses private mount namespaces ({why})");
        return;
    }
    let env = sim_env("gfx942x2");
    let kfd = PathBuf::from(
        &env.iter()
            .find(|(k, _)| k == "RTL_PMC_KFD_TOPOLOGY")
            .unwrap()
            .1,
    );
    let expected = expected_show(&kfd);
    assert!(
        expected.starts_with(
            "node 0:  gpu_id 0 32 properties\nnode 1: gfx942 gpu_id 4096 39 properties\n\
         node 2: gfx942 gpu_id 4097 39 properties\n"
        ),
        "{expected}"
    );
    let sys_class = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir("/sys/class")
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    let before = sys_class();
    let out = rtl_pmc()
        .args(["--sim", "gfx942x2", "--exec", "--", "sh", "-c", SHOW])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
    // The command's exit status is rtl-pmc's.
    assert_eq!(out.status.code(), Some(3));
    // The host's /sys/class is untouched.
    assert_eq!(sys_class(), before);
    // An unprivileged user gets the same, inside a user namespace.
    let root = Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&root.stdout).trim() == "0" && Path::new("/usr/bin/setpriv").exists()
    {
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(artifact("rtl-pmc"))
            .args(["--sim", "gfx942x2", "--exec", "--", "sh", "-c", SHOW])
            .env("USER", "rtl-sim-nobody")
            .current_dir("/")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stderr), "");
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
        assert_eq!(out.status.code(), Some(3));
    }
}

#[test]
fn exec_runs_applications_on_the_simulator() {
    if let Some(why) = namespaces_refused() {
        eprintln!("skipped: this host refuses private mount namespaces ({why})");
        return;
    }
    let out = rtl_pmc()
        .args(["--sim", "gfx942", "--exec", "--"])
        .arg(artifact("rtl-demo-app"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "rtl-demo-app: 4 dispatches verified (vadd,saxpy,fill,increment) on 1 GPU(s) [gfx942], \
         1 thread(s) x 1 queue(s) x 1 iteration(s)\n"
    );
    assert_eq!(out.status.code(), Some(0));
    let out = rtl_pmc()
        .args(["--sim", "gfx942", "--exec", "--", "rtl-no-such-program"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rtl-pmc: --exec: cannot run rtl-no-such-program: No such file or directory (os error 2)\n"
    );
    assert_eq!(out.status.code(), Some(127));
}

#[test]
fn exec_says_once_where_the_host_refuses_a_mount_namespace() {
    if let Some(why) = namespaces_refused() {
        eprintln!(
            "skipped: this host refuses the user namespace the test refuses mounts in ({why})"
        );
        return;
    }
    // A user namespace allowed no mount namespace of its own.
    let out = Command::new("unshare")
        .args(["-U", "-r", "sh", "-c"])
        .arg("echo 0 > /proc/sys/user/max_mnt_namespaces && exec \"$0\" --sim gfx942 --exec -- echo ran")
        .arg(artifact("rtl-pmc"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rtl-pmc: --exec: cannot show the simulated topology at /sys/class/kfd/kfd/topology in a \
         private mount namespace (unshare(CLONE_NEWNS): ENOSPC: No space left on device); `eval \
         \"$(rtl-pmc --sim gfx942 --print-env)\"` gives the rest of the simulator's environment, \
         in which programs reading /sys/class/kfd/kfd/topology see no simulated GPU\n"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn exec_needs_a_command_and_collects_nothing() {
    let out = rtl_pmc()
        .args(["--sim", "gfx942", "--exec"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rtl-pmc: --exec: no command given: put it after --, e.g. rtl-pmc --sim gfx942 --exec -- ./app\n"
    );
    assert_eq!(out.status.code(), Some(2));
    let out = rtl_pmc()
        .args([
            "--sim", "gfx942", "--exec", "--pmc", "SQ_WAVES", "--", "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("the argument '--exec' cannot be used with '--pmc <COUNTER>...'"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = rtl_pmc().args(["--exec", "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
