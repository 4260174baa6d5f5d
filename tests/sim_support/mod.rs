//! Running programs on the simulated ROCm from end-to-end tests.
//!
//! The simulated runtime and the programs under test are built by `cargo build --workspace`
//! (cargo test builds neither cdylibs nor other packages' binaries), into the same directory as
//! the test binary's parent.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one `rtl-pmc` invocation left behind: its exit status and output, its output directory
/// and the simulator's ground truth. Each test file adds what it reads of them.
pub struct Profile {
    /// The invocation's status, stdout and stderr.
    pub output: std::process::Output,
    /// The output directory.
    pub out: PathBuf,
    /// The ground-truth lines of the run.
    pub truth: Vec<serde_json::Value>,
}

impl Profile {
    /// Standard output, as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    /// Standard error, as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// The exit code, `None` when a signal ended it.
    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    /// Asserts the exit code, showing both outputs when it differs.
    pub fn assert_code(&self, code: i32) {
        assert_eq!(
            self.code(),
            Some(code),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr()
        );
    }

    /// Asserts exit code 0.
    pub fn assert_success(&self) {
        self.assert_code(0);
    }
}

/// `target/<profile>`, where the workspace's binaries and libraries are.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in target/<profile>/deps")
        .to_path_buf()
}

/// A built artifact of the workspace, or a panic telling how to build it.
pub fn artifact(name: &str) -> PathBuf {
    let path = target_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace` before the tests",
        path.display()
    );
    path
}

/// The environment that runs a program on the simulated GPU `config` (`gfx942`, `gfx1100`, ...):
/// what `rtl-pmc --sim <config> --print-env` prints, or, while the CLI cannot print it, a
/// library directory with `libhsa-runtime64.so.1` and `RTL_SIM_DEVICES`.
pub fn sim_env(config: &str) -> Vec<(String, String)> {
    let cli = target_dir().join("rtl-pmc");
    if let Ok(out) = Command::new(&cli)
        .args(["--sim", config, "--print-env"])
        .output()
    {
        if out.status.success() {
            let text = String::from_utf8(out.stdout).expect("--print-env prints UTF-8");
            let vars: Vec<(String, String)> = text.lines().filter_map(parse_export).collect();
            if !vars.is_empty() {
                return vars;
            }
        }
    }
    let lib_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sim-lib-{config}"));
    std::fs::create_dir_all(&lib_dir).expect("the target tmpdir is writable");
    let link = lib_dir.join("libhsa-runtime64.so.1");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(artifact("libhsa_runtime64.so"), &link)
        .expect("the library link can be created");
    vec![
        ("LD_LIBRARY_PATH".into(), lib_dir.display().to_string()),
        ("RTL_SIM_DEVICES".into(), config.into()),
    ]
}

/// `export NAME=value` with POSIX single quoting (`'it'\''s'`) or a bare value.
fn parse_export(line: &str) -> Option<(String, String)> {
    let (name, value) = line.strip_prefix("export ")?.split_once('=')?;
    let value = match value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        Some(quoted) => quoted.replace("'\\''", "'"),
        None => value.to_string(),
    };
    Some((name.to_string(), value))
}

/// A fixture code object of `sim/fixtures`.
pub fn fixture(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("sim/fixtures/kernels-{target}.co"))
}

/// The ground-truth lines (`RTL_SIM_GROUND_TRUTH`) at `path`, none when there is no file.
pub fn read_ground_truth(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        // A process killed while writing leaves a torn last line.
        .filter(|l| l.ends_with('}'))
        .map(|l| serde_json::from_str(l).expect("ground truth is JSON"))
        .inspect(assert_no_problem)
        .collect()
}

/// Fails on a ground-truth `problem` line: the simulated GPU met a packet it does not model.
pub fn assert_no_problem(line: &serde_json::Value) {
    assert!(
        line.get("problem").is_none(),
        "the simulated GPU met a packet it does not model: {line}"
    );
}

/// The rows of a CSV file with a header, each by column name.
pub fn read_table(path: &Path) -> Vec<HashMap<String, String>> {
    let mut reader =
        csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header = reader.headers().expect("a header").clone();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            header
                .iter()
                .zip(&r)
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// Sum of the ground-truth samples of `counter` in ground-truth dispatch `t`.
pub fn total(t: &serde_json::Value, counter: &str) -> u64 {
    t["counters"][counter]
        .as_array()
        .unwrap_or_else(|| panic!("no ground truth for {counter} in {t}"))
        .iter()
        .map(|v| v.as_u64().expect("a count"))
        .sum()
}

/// The roctx libraries an application links against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoctxLibrary {
    /// ROCm's (roctracer) `libroctx64.so.4`, functions versioned `ROCTX_4.1`.
    Rocm,
    /// rocprofiler-sdk's `librocprofiler-sdk-roctx.so.1`.
    Sdk,
}

impl RoctxLibrary {
    /// Its soname, and the name `-l` links it by.
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            RoctxLibrary::Rocm => ("libroctx64.so.4", "roctx64"),
            RoctxLibrary::Sdk => ("librocprofiler-sdk-roctx.so.1", "rocprofiler-sdk-roctx"),
        }
    }
}

/// Builds `key`'s file once per test binary with `build` (which gets the path to write, and
/// must not build another file this way: the lock is held).
fn built_once(key: String, build: impl FnOnce(&Path)) -> PathBuf {
    static BUILT: std::sync::Mutex<Option<HashMap<String, PathBuf>>> = std::sync::Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    let built = built.get_or_insert_with(HashMap::new);
    if let Some(path) = built.get(&key) {
        return path.clone();
    }
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(&key);
    build(&path);
    built.insert(key, path.clone());
    path
}

/// A do-nothing roctx library as an installed ROCm provides one (`which`'s soname and symbol
/// versions, also linkable with `-l`), built once per test binary; its directory.
pub fn roctx_stand_in(which: RoctxLibrary) -> PathBuf {
    built_once(format!("roctx-stand-in-{which:?}"), |dir| {
        let (soname, link) = which.names();
        std::fs::create_dir_all(dir).unwrap();
        let source = dir.join("roctx.c");
        std::fs::write(
            &source,
            "#include <stdint.h>\n\
             void roctxMarkA(const char *m) { (void)m; }\n\
             int roctxRangePushA(const char *m) { (void)m; return 0; }\n\
             int roctxRangePop(void) { return 0; }\n\
             uint64_t roctxRangeStartA(const char *m) { (void)m; return 1; }\n\
             void roctxRangeStop(uint64_t id) { (void)id; }\n\
             int roctxProfilerPause(uint64_t tid) { (void)tid; return 0; }\n\
             int roctxProfilerResume(uint64_t tid) { (void)tid; return 0; }\n\
             int roctxNameOsThread(const char *n) { (void)n; return 0; }\n",
        )
        .unwrap();
        let mut cc = Command::new("cc");
        cc.args(["-shared", "-fPIC", "-o"])
            .arg(dir.join(soname))
            .arg(&source)
            .arg(format!("-Wl,-soname,{soname}"));
        if which == RoctxLibrary::Rocm {
            std::fs::write(
                dir.join("roctx.map"),
                "ROCTX_4.1 { global: roctx*; local: *; };\n",
            )
            .unwrap();
            cc.arg(format!(
                "-Wl,--version-script={}",
                dir.join("roctx.map").display()
            ));
        }
        assert!(
            cc.status().expect("cc runs").success(),
            "building the roctx stand-in failed"
        );
        let link_name = dir.join(format!("lib{link}.so"));
        let _ = std::fs::remove_file(&link_name);
        std::os::unix::fs::symlink(soname, &link_name).unwrap();
    })
}

/// `sim/c-app/app.c` built once per test binary against Debian's ROCr and the roctx stand-in
/// `which`; with `rpath`, the stand-in's directory is the binary's `DT_RPATH`, searched before
/// `LD_LIBRARY_PATH`, as an application built against an installed ROCm may have it.
pub fn c_app_linked(which: RoctxLibrary, rpath: bool) -> PathBuf {
    let roctx = roctx_stand_in(which);
    built_once(format!("rtl-c-app-{which:?}-{rpath}"), |out| {
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sim/c-app/app.c");
        let mut cc = Command::new("cc");
        cc.arg(&source)
            .args(["-I/usr/include/hsa", "-lhsa-runtime64", "-L"])
            .arg(&roctx)
            .arg(format!("-l{}", which.names().1));
        if rpath {
            cc.arg(format!(
                "-Wl,--disable-new-dtags,-rpath,{}",
                roctx.display()
            ));
        }
        let status = cc.arg("-o").arg(out).status().expect("cc runs");
        assert!(status.success(), "building {} failed", source.display());
    })
}

/// `sim/c-app/app.c` linked against ROCm's `libroctx64.so.4` (the stand-in).
pub fn c_app() -> PathBuf {
    c_app_linked(RoctxLibrary::Rocm, false)
}

/// `env` with the stand-in of ROCm's roctx library last on `LD_LIBRARY_PATH`, where an
/// installed ROCm's libraries are found.
pub fn with_roctx_stand_in(mut env: Vec<(String, String)>) -> Vec<(String, String)> {
    let dir = roctx_stand_in(RoctxLibrary::Rocm).display().to_string();
    match env.iter_mut().find(|(k, _)| k == "LD_LIBRARY_PATH") {
        Some((_, path)) => *path = format!("{path}:{dir}"),
        None => env.push(("LD_LIBRARY_PATH".into(), dir)),
    }
    env
}

/// `dir/<pass>/<pid>_<kind>.csv` for a path given as `<pass>/<kind>.csv`: the one application
/// process's file of that kind in the pass directory (rocprofv3's `<pid>_` names).
#[allow(dead_code)]
pub fn process_file(dir: &Path, relative: &str) -> PathBuf {
    let relative = Path::new(relative);
    let (Some(pass), Some(kind)) = (relative.parent(), relative.file_name()) else {
        return dir.join(relative);
    };
    let suffix = format!("_{}", kind.to_string_lossy());
    let found: Vec<PathBuf> = std::fs::read_dir(dir.join(pass))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(&suffix))
                .collect()
        })
        .unwrap_or_default();
    match found.as_slice() {
        [one] => one.clone(),
        _ => panic!(
            "not one *{suffix} in {}: {found:?}",
            dir.join(pass).display()
        ),
    }
}

/// Compiles the C program at `source` (relative to the workspace) against the HSA headers and
/// `libhsa-runtime64` into `<test tmpdir>/<name>`.
pub fn build_c_program(source: &str, name: &str) -> PathBuf {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
    let status = Command::new("cc")
        .arg(&source)
        .args(["-I/usr/include/hsa", "-lhsa-runtime64", "-o"])
        .arg(&out)
        .status()
        .expect("cc runs");
    assert!(status.success(), "building {} failed", source.display());
    out
}

/// The rows of `query` as strings (NULL as "NULL"), one vector per row.
pub fn query(conn: &rusqlite::Connection, sql: &str) -> Vec<Vec<String>> {
    let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let columns = stmt.column_count();
    stmt.query_map([], |r| {
        (0..columns)
            .map(|i| {
                Ok(match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => "NULL".to_string(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Real(v) => v.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    rusqlite::types::ValueRef::Blob(_) => "BLOB".to_string(),
                })
            })
            .collect()
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}
