//! A C program built against Debian's ROCm headers and linked with `-lhsa-runtime64` against
//! Debian's real `libhsa-runtime64.so.1` (symbols versioned `ROCR_1`) runs unmodified on the
//! simulated runtime: no loader warnings, and the vadd it dispatches is computed. It also links
//! ROCm's roctx library, for which a do-nothing stand-in is built (`sim_support::roctx_stand_in`).
//!
//! Needs the Debian packages `libhsa-runtime-dev` and `libhsa-runtime64-1`.

mod sim_support;

use std::path::PathBuf;
use std::process::{Command, Output};

use sim_support::{c_app, fixture, sim_env, with_roctx_stand_in};

fn run(env: Vec<(String, String)>, code_object: PathBuf) -> Output {
    Command::new(c_app())
        .arg(code_object)
        .envs(with_roctx_stand_in(env))
        .output()
        .expect("the C app starts")
}

#[test]
fn c_app_links_against_the_real_rocr() {
    let needed = Command::new("readelf")
        .arg("-dW")
        .arg(c_app())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&needed.stdout).contains("Shared library: [libhsa-runtime64.so.1]")
    );
    assert!(String::from_utf8_lossy(&needed.stdout).contains("Shared library: [libroctx64.so.4]"));
    let symbols = Command::new("readelf")
        .arg("--dyn-syms")
        .arg("-W")
        .arg(c_app())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&symbols.stdout).contains("hsa_init@ROCR_1"));
    assert!(String::from_utf8_lossy(&symbols.stdout).contains("roctxRangePushA@ROCTX_4.1"));
    // Debian's runtime, with no GPU, refuses to start: the binary really uses it by default.
    if !std::path::Path::new("/dev/kfd").exists() {
        let out = run(Vec::new(), fixture("gfx942"));
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "c-app: hsa_init() failed with status 0x1008\n"
        );
    }
}

#[test]
fn c_app_runs_unmodified_on_the_simulator() {
    for target in ["gfx942", "gfx1100"] {
        let out = run(sim_env(target), fixture(target));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "{target}: no loader warnings"
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("c-app: vadd of 1000 elements verified on {target}\n")
        );
        assert_eq!(out.status.code(), Some(0), "{target}");
    }
}

#[test]
fn wrong_target_code_object_is_refused() {
    let out = run(sim_env("gfx942"), fixture("gfx1100"));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "c-app: hsa_executable_load_agent_code_object(executable, gpu, reader, NULL, NULL) failed \
         with status 0x100d\n"
    );
}
