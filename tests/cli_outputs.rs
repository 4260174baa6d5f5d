//! `rtl-pmc` and its output directories: the application is checked before anything is written,
//! a profile never overwrites or mixes with an earlier one, and bad output settings are refused
//! with one message, all before the application starts.

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sim_support::{artifact, sim_env};

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-outputs-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Runs `rtl-pmc --arch gfx942 ARGS -- APP...` in `dir` on the simulated gfx942.
fn rtl_pmc(dir: &Path, args: &[&str], app: &[&str]) -> Output {
    Command::new(artifact("rtl-pmc"))
        .current_dir(dir)
        .args(["--arch", "gfx942"])
        .args(args)
        .arg("--")
        .args(app)
        .envs(sim_env("gfx942"))
        .output()
        .expect("rtl-pmc starts")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn assert_code(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(output)
    );
}

/// Every file under `dir` with its contents, by path relative to `dir`.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).expect("readable directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let contents = std::fs::read(&path).expect("readable file");
                files.insert(path.strip_prefix(dir).unwrap().to_path_buf(), contents);
            }
        }
    }
    files
}

fn demo() -> String {
    artifact("rtl-demo-app").display().to_string()
}

#[test]
fn a_misspelt_application_is_refused_before_anything_is_written() {
    let dir = scratch("typo");
    let out = dir.join("out");
    let good = rtl_pmc(&dir, &["-d", "out", "--pmc", "SQ_WAVES"], &[&demo()]);
    assert_code(&good, 0);
    let before = snapshot(&out);
    assert!(before.contains_key(Path::new("pass_1/plan.json")));
    assert!(before
        .keys()
        .any(|p| p.extension().is_some_and(|e| e == "rtlraw")));

    let plain = dir.join("plain.txt");
    std::fs::write(&plain, "not a program").unwrap();
    let missing = format!("{}p", demo());
    for (app, message) in [
        (
            "rtl-demo-appp",
            "rtl-pmc: application 'rtl-demo-appp' not found on PATH (give its path, e.g. ./rtl-demo-appp)\n".to_string(),
        ),
        (
            missing.as_str(),
            format!("rtl-pmc: application '{missing}' not found\n"),
        ),
        (
            "./plain.txt",
            "rtl-pmc: application './plain.txt' is not executable (chmod +x it)\n".to_string(),
        ),
    ] {
        // Into the earlier profile's directory, and into one that does not exist yet.
        for target in ["out", "new/out"] {
            let typo = rtl_pmc(&dir, &["-d", target, "--pmc", "SQ_WAVES"], &[app]);
            assert_code(&typo, 2);
            assert_eq!(stderr(&typo), message);
        }
        assert_eq!(snapshot(&out), before, "{app}");
        assert!(!dir.join("new").exists(), "{app}");
    }
}
