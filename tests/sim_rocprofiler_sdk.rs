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
