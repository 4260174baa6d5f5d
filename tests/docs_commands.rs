//! The documentation's commands, run: every command in a fenced block of `README.md` and
//! `docs/*.md` (the conventions are in `docs/README.md`, "About the examples"), on the simulated
//! GPU, each exiting as the docs say; and `install.sh`, installing into a prefix from which the
//! demo is profiled with the simulator's ground-truth values.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{artifact, ground_truth, read_table, sim_env};

/// The repository.
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `target/<profile>`, the build the tests run on.
fn target() -> PathBuf {
    artifact("rtl-pmc")
        .parent()
        .expect("rtl-pmc is in a directory")
        .to_path_buf()
}

/// A fresh scratch directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("docs-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `bash install.sh ARGS`.
fn install(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(repo().join("install.sh"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("bash runs")
}

/// Installs the test's build into `prefix` (what the docs' `bash install.sh PREFIX` does after
/// building the release profile).
fn install_build(prefix: &Path, extra: &[&str]) {
    let target = target();
    let mut args = vec!["--from", target.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push(prefix.to_str().unwrap());
    let out = install(&args);
    assert!(
        out.status.success(),
        "install.sh failed\nstdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(
        text(&out.stdout),
        format!(
            "installed {}/bin/rtl-pmc (libraries in {}/lib/rtl-pmc)\n",
            prefix.display(),
            prefix.display()
        )
    );
}

#[test]
fn install_sh_installs_a_prefix_that_profiles_the_demo_with_exact_values() {
    let dir = scratch("install");
    let prefix = dir.join("prefix");
    install_build(&prefix, &["--rocprofv3-alias"]);
    for file in [
        "bin/rtl-pmc",
        "lib/rtl-pmc/librtl_pmc.so",
        "lib/rtl-pmc/librtl_pmc_roctx.so",
        "lib/rtl-pmc/libhsa_runtime64.so",
        "lib/rtl-pmc/libhsa_amd_aqlprofile64.so",
        "lib/rtl-pmc/librtl_sim_drm.so",
        "lib/rtl-pmc/rtl-demo-app",
    ] {
        assert!(prefix.join(file).is_file(), "{file} not installed");
    }
    assert!(!prefix.join("bin/librtl_pmc.so").exists());
    assert_eq!(
        std::fs::read_link(prefix.join("bin/rocprofv3")).expect("rocprofv3 is a link"),
        PathBuf::from("rtl-pmc")
    );

    // The installed rtl-pmc finds its libraries and the simulator in PREFIX/lib/rtl-pmc.
    let truth = dir.join("truth.jsonl");
    let out = Command::new(prefix.join("bin/rtl-pmc"))
        .args(["--sim", "gfx942", "-d"])
        .arg(dir.join("out"))
        .args(["--pmc", "SQ_WAVES", "GRBM_COUNT", "--"])
        .arg(prefix.join("lib/rtl-pmc/rtl-demo-app"))
        .current_dir(&dir)
        .env_remove("RTL_PMC_LIBRARY")
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_PMC_REPLAY_COSTS", dir.join("costs.json"))
        .stdin(Stdio::null())
        .output()
        .expect("the installed rtl-pmc starts");
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(prefix.join("lib/rtl-pmc/rtl-sim/gfx942/kfd").is_dir());
    let truth = ground_truth(&truth);
    let rows = read_table(&dir.join("out/results.csv"));
    assert_eq!(truth.len(), 4, "the demo's four dispatches");
    assert_eq!(rows.len(), truth.len());
    for t in &truth {
        let row = rows
            .iter()
            .find(|r| {
                r["KernelName"] == t["kernel"].as_str().unwrap()
                    && r["BeginNs"].parse::<u64>().ok() == t["start"].as_u64()
                    && r["EndNs"].parse::<u64>().ok() == t["end"].as_u64()
            })
            .unwrap_or_else(|| panic!("no row of results.csv for {t}"));
        for counter in ["SQ_WAVES", "GRBM_COUNT"] {
            let total: u64 = t["counters"][counter]
                .as_array()
                .expect("ground truth of the counter")
                .iter()
                .map(|v| v.as_u64().unwrap())
                .sum();
            assert_eq!(row[counter], total.to_string(), "{counter} of {t}");
        }
    }

    // Without the alias, no rocprofv3.
    let plain = dir.join("plain");
    install_build(&plain, &[]);
    assert!(plain.join("bin/rtl-pmc").is_file());
    assert!(!plain.join("bin/rocprofv3").exists());
}

/// What rocprof-compute does to list its profiler's counters, in its steps: with
/// `ROCPROFILER_METRICS_PATH` set to its definitions, it adds `<sdk library>/../../bin` to Python's
/// path, imports `rocprofv3_avail_module.avail`, sets `loadLibrary.libname` to the listing library
/// beside the SDK and calls `get_counters()`, then keeps the counters of the first GPU that have a
/// `block` or an `expression`. Prints one line per GPU key and counter: key, name, the attribute
/// found and its value; or the exception's type and message.
const ROCPROF_COMPUTE_AVAIL: &str = r#"
import os, sys
from pathlib import Path
sdk = Path(sys.argv[1])
os.environ["ROCPROFILER_METRICS_PATH"] = sys.argv[2]
sys.path.append(str(sdk.parent.parent / "bin"))
from rocprofv3_avail_module import avail
avail.loadLibrary.libname = str(sdk.parent.parent / "lib" / "rocprofiler-sdk" / "librocprofv3-list-avail.so")
try:
    counters = avail.get_counters()
except Exception as e:
    print(type(e).__name__, e)
    sys.exit(0)
for key, listed in counters.items():
    for c in listed:
        if hasattr(c, "block"):
            print(key, c.name, "block", c.block)
        elif hasattr(c, "expression"):
            print(key, c.name, "expression", c.expression)
        else:
            print(key, c.name, "neither")
"#;

#[test]
fn install_sh_rocprofv3_alias_lists_counters_as_rocprof_compute_imports_them() {
    let dir = scratch("avail");
    let prefix = dir.join("prefix");
    install_build(&prefix, &["--rocprofv3-alias"]);
    for file in ["__init__.py", "avail.py"] {
        assert!(
            prefix
                .join("bin/rocprofv3_avail_module")
                .join(file)
                .is_file(),
            "{file} not installed"
        );
    }
    // rocprof-compute's definitions directory, with one of its per-channel counters.
    let defs = dir.join("defs");
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::write(
        defs.join("counter_defs.yaml"),
        "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: TCC_HIT[17]\n    \
         description: one channel\n    properties: []\n    definitions:\n    - architectures:\n      \
         - gfx942\n      expression: select(TCC_HIT,[DIMENSION_XCC=[1], DIMENSION_INSTANCE=[1]])\n",
    )
    .unwrap();
    let sdk = prefix.join("lib/librocprofiler-sdk.so");
    let run = |metrics: &Path| {
        let out = Command::new("python3")
            .args(["-c", ROCPROF_COMPUTE_AVAIL])
            .arg(&sdk)
            .arg(metrics)
            .envs(sim_env("gfx942"))
            .stdin(Stdio::null())
            .output()
            .expect("python3 runs");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let list_avail = |metrics: &Path| {
        Command::new(prefix.join("bin/rtl-pmc"))
            .arg("--list-avail")
            .envs(sim_env("gfx942"))
            .env("ROCPROFILER_METRICS_PATH", metrics)
            .output()
            .expect("rtl-pmc starts")
    };
    let listed = run(&defs);

    // Every counter of the installed rtl-pmc's listing, in its order, under GPU 0, with its block
    // or its expression; the definitions of ROCPROFILER_METRICS_PATH among them.
    let listing = list_avail(&defs);
    assert!(listing.status.success(), "{}", text(&listing.stderr));
    let mut expected = String::new();
    let mut name = String::new();
    for line in text(&listing.stdout).lines() {
        let (key, value) = line.split_once(':').unwrap_or((line, ""));
        match key.trim() {
            "Counter_Name" => name = value.trim().to_string(),
            "Block" => expected.push_str(&format!("0 {name} block {}\n", value.trim())),
            "Expression" => expected.push_str(&format!("0 {name} expression {}\n", value.trim())),
            _ => {}
        }
    }
    assert_eq!(listed, expected);
    assert!(listed.contains("\n0 SQ_WAVES block SQ\n"), "{listed}");
    assert!(
        listed.contains(
            "\n0 TCC_HIT[17] expression select(TCC_HIT,[DIMENSION_XCC=[1], DIMENSION_INSTANCE=[1]])\n"
        ),
        "{listed}"
    );
    assert_eq!(
        listed.lines().count(),
        text(&listing.stdout).matches("Counter_Name").count()
    );

    // rtl-pmc refusing the definitions: the caller gets its message.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let refused = list_avail(&empty);
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        run(&empty),
        format!(
            "RuntimeError {} --list-avail failed (exit 2): {}\n",
            prefix.join("bin/rtl-pmc").display(),
            text(&refused.stderr).trim()
        )
    );
}

#[test]
fn install_sh_refuses_bad_arguments_and_rtl_pmc_names_where_it_looked() {
    let usage = "usage: bash install.sh [--from DIR] [--rocprofv3-alias] PREFIX";
    for (args, message) in [
        (vec![], format!("install.sh: no PREFIX given; {usage}\n")),
        (
            vec!["--prefix", "x"],
            format!("install.sh: unknown option '--prefix'; {usage}\n"),
        ),
        (
            vec!["a", "b"],
            format!("install.sh: one PREFIX only ('a', then 'b'); {usage}\n"),
        ),
        (
            vec!["--from"],
            format!("install.sh: --from needs a directory; {usage}\n"),
        ),
        (
            vec!["--from", "/nonexistent", "p"],
            "install.sh: /nonexistent/rtl-pmc is missing; build it with cargo build --workspace\n"
                .to_string(),
        ),
    ] {
        let out = install(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(text(&out.stderr), message, "{args:?}");
        assert_eq!(text(&out.stdout), "");
    }

    // rtl-pmc alone, without its libraries: one message naming both places it looked.
    let dir = scratch("lonely");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(artifact("rtl-pmc"), bin.join("rtl-pmc")).unwrap();
    let out = Command::new(bin.join("rtl-pmc"))
        .args(["-d"])
        .arg(dir.join("out"))
        .args(["--pmc", "SQ_WAVES", "--"])
        .arg(artifact("rtl-demo-app"))
        .envs(sim_env("gfx942"))
        .env_remove("RTL_PMC_LIBRARY")
        .stdin(Stdio::null())
        .output()
        .expect("rtl-pmc starts");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        format!(
            "rtl-pmc: librtl_pmc.so not found in {} or {}; set RTL_PMC_LIBRARY to its path\n",
            bin.display(),
            bin.join("../lib/rtl-pmc").display()
        )
    );
}

/// A fenced block of the docs.
struct Block {
    /// `FILE:LINE` of its opening fence.
    place: String,
    info: String,
    body: String,
}

/// The files whose commands are run: the README and the guide.
fn doc_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files.insert(0, repo().join("README.md"));
    files
}

/// Every fenced block of `files`, in order.
fn blocks(files: &[PathBuf]) -> Vec<Block> {
    let mut blocks = Vec::new();
    for file in files {
        let name = file.strip_prefix(repo()).unwrap().display().to_string();
        let content = std::fs::read_to_string(file).expect("doc file");
        let mut open: Option<Block> = None;
        for (n, line) in content.lines().enumerate() {
            match open.take() {
                None => {
                    if let Some(info) = line.strip_prefix("```") {
                        open = Some(Block {
                            place: format!("{name}:{}", n + 1),
                            info: info.trim().to_string(),
                            body: String::new(),
                        });
                    }
                }
                Some(mut block) => {
                    if line == "```" {
                        blocks.push(block);
                    } else {
                        block.body.push_str(line);
                        block.body.push('\n');
                        open = Some(block);
                    }
                }
            }
        }
        assert!(open.is_none(), "{name}: a fenced block is never closed");
    }
    blocks
}

/// The commands of a block's body, `\`-continued lines joined, with the exit status each must
/// have (a trailing `# exit N`, else 0).
fn commands(body: &str) -> Vec<(String, i32)> {
    let exit = regex::Regex::new(r"#\s*exit\s+(\d+)\s*$").unwrap();
    let mut commands = Vec::new();
    let mut current = String::new();
    for line in body.lines() {
        if let Some(part) = line.strip_suffix('\\') {
            current.push_str(part);
            continue;
        }
        current.push_str(line);
        let command = std::mem::take(&mut current);
        let trimmed = command.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let status = exit
            .captures(trimmed)
            .map(|c| c[1].parse().unwrap())
            .unwrap_or(0);
        commands.push((trimmed.to_string(), status));
    }
    commands
}

/// The command as the test runs it (`docs/README.md`, "About the examples"): `cargo build ...
/// &&` dropped (`None` for a line that only builds), the build directory and `install.sh`'s
/// `--from` filled in.
fn as_run(command: &str, target: &Path) -> Option<String> {
    let build = regex::Regex::new(r"^cargo build[^&]*(&&\s*|$)").unwrap();
    let command = build.replace(command, "").to_string();
    if command.is_empty() {
        return None;
    }
    let target = target.display().to_string();
    Some(
        command
            .replace("./target/release/", &format!("{target}/"))
            .replace("./target/debug/", &format!("{target}/"))
            .replace(
                "bash install.sh ",
                &format!("bash {}/install.sh --from {target} ", repo().display()),
            ),
    )
}

/// A stand-in for `mpirun -np N COMMAND...`: N copies of the command at once, each with its
/// rank and the job's size in Open MPI's variables; fails when one does.
const MPIRUN: &str = r#"#!/usr/bin/env bash
[ "$1" = "-np" ] || { echo "mpirun stand-in: -np N first" >&2; exit 2; }
n=$2; shift 2
pids=()
for ((rank = 0; rank < n; rank++)); do
  OMPI_COMM_WORLD_RANK=$rank OMPI_COMM_WORLD_SIZE=$n "$@" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit $status
"#;

fn write_executable(path: &Path, content: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn hipcc_installed() -> bool {
    if Command::new("hipcc").arg("--version").output().is_ok() {
        return true;
    }
    // CI runs .ci/setup, which installs it: there a missing hipcc is a failure, not a skip.
    assert!(
        std::env::var_os("CI").is_none(),
        "hipcc is not installed although CI ran .ci/setup"
    );
    false
}

#[test]
fn every_command_in_the_readme_and_the_guide_runs() {
    let files = doc_files();
    let blocks = blocks(&files);
    let target = target();
    let root = scratch("commands");

    // Example files, written into every block's directory.
    let mut examples: HashMap<String, String> = HashMap::new();
    for block in &blocks {
        if let Some(name) = block.info.strip_prefix("file ") {
            let previous = examples.insert(name.trim().to_string(), block.body.clone());
            assert!(
                previous.is_none(),
                "{}: a second example file {name}",
                block.place
            );
        }
    }

    // rtl-pmc installed, on PATH, with the stand-in mpirun; `~/.local` is that prefix.
    let prefix = root.join("prefix");
    install_build(&prefix, &[]);
    let stubs = root.join("stubs");
    std::fs::create_dir_all(&stubs).unwrap();
    write_executable(&stubs.join("mpirun"), MPIRUN);
    let path = format!(
        "{}:{}:{}",
        prefix.join("bin").display(),
        stubs.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let ci = std::fs::read_to_string(repo().join(".ci/run")).expect(".ci/run");
    let mut run = 0;
    for (index, block) in blocks.iter().enumerate() {
        match block.info.as_str() {
            "sh-ci" => {
                for (command, _) in commands(&block.body) {
                    assert!(
                        ci.lines().any(|l| l.trim() == command),
                        "{}: `{command}` is not what .ci/run runs",
                        block.place
                    );
                }
                continue;
            }
            "sh" | "sh-real" => {}
            info if info == "text" || info.starts_with("file ") => continue,
            info => panic!(
                "{}: fenced block with info string '{info}': say what it is (sh, sh-real, \
                 sh-ci, text or file NAME; docs/README.md)",
                block.place
            ),
        }
        if block.body.contains("hipcc") && !hipcc_installed() {
            eprintln!(
                "skipped {}: hipcc is not installed (bash .ci/setup installs Debian's HIP 5.2)",
                block.place
            );
            continue;
        }
        let dir = root.join(format!("block-{index}"));
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::os::unix::fs::symlink(&prefix, home.join(".local")).unwrap();
        for (name, content) in &examples {
            std::fs::write(dir.join(name), content).unwrap();
        }
        write_executable(
            &dir.join("app"),
            &format!(
                "#!/bin/sh\nexec {} \"$@\"\n",
                target.join("rtl-demo-app").display()
            ),
        );
        std::fs::copy(repo().join("tests/hip/streams.hip"), dir.join("app.hip")).unwrap();
        for (command, status) in commands(&block.body) {
            let Some(shell) = as_run(&command, &target) else {
                continue;
            };
            let out = Command::new("bash")
                .args(["-c", &shell])
                .current_dir(&dir)
                .envs(sim_env("gfx942"))
                .env("PATH", &path)
                .env("HOME", &home)
                .env("XDG_CACHE_HOME", home.join(".cache"))
                .env_remove("RTL_PMC_LIBRARY")
                .env_remove("RTL_PMC_REPLAY_COSTS")
                .stdin(Stdio::null())
                .output()
                .expect("bash runs");
            assert_eq!(
                out.status.code(),
                Some(status),
                "{}: `{command}` (run as `{shell}` in {})\nstdout:\n{}\nstderr:\n{}",
                block.place,
                dir.display(),
                text(&out.stdout),
                text(&out.stderr)
            );
            run += 1;
        }
    }
    eprintln!("ran {run} commands");
    assert!(run >= 40, "only {run} commands found in the docs");
}

#[test]
fn the_readme_is_a_first_screen() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(
        readme.lines().count() < 150,
        "README.md has {} lines",
        readme.lines().count()
    );
    // It starts with the two commands: the demo on the simulated GPU, then the tests.
    let first: Vec<(String, i32)> = blocks(&[repo().join("README.md")])
        .iter()
        .take(2)
        .flat_map(|b| commands(&b.body))
        .collect();
    assert_eq!(
        first,
        [
            (
                "cargo build --release --workspace && ./target/release/rtl-pmc --sim gfx942 \
                 --pmc SQ_WAVES GRBM_COUNT -- ./target/release/rtl-demo-app"
                    .to_string(),
                0
            ),
            (
                "bash .ci/setup && cargo build --workspace && cargo test --workspace".to_string(),
                0
            ),
        ]
    );
    // Every guide page is linked from the README and from the guide's index.
    let index = std::fs::read_to_string(repo().join("docs/README.md")).unwrap();
    for file in doc_files().iter().skip(1) {
        let name = file.file_name().unwrap().to_str().unwrap();
        if name == "README.md" {
            continue;
        }
        assert!(
            readme.contains(&format!("(docs/{name})")),
            "README misses {name}"
        );
        assert!(
            index.contains(&format!("({name})")),
            "docs/README.md misses {name}"
        );
    }
}

#[test]
fn commands_are_read_as_docs_readme_says() {
    assert_eq!(
        commands("a \\\n  b # exit 2\n# comment\n\nc\n"),
        [("a   b # exit 2".to_string(), 2), ("c".to_string(), 0)]
    );
    let target = Path::new("/t");
    assert_eq!(as_run("cargo build --workspace", target), None);
    assert_eq!(
        as_run(
            "cargo build --release --workspace && ./target/release/rtl-pmc -- ./target/debug/x",
            target
        )
        .as_deref(),
        Some("/t/rtl-pmc -- /t/x")
    );
    assert_eq!(
        as_run("bash install.sh ~/.local", target),
        Some(format!(
            "bash {}/install.sh --from /t ~/.local",
            repo().display()
        ))
    );
}
