//! `rtl-pmc` and its output directories: the application is checked before anything is written,
//! a profile never overwrites or mixes with an earlier one, and bad output settings are refused
//! with one message, all before the application starts.

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sim_support::{artifact, process_file, sim_env};

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

/// The `rtl-pmc: results in DIR` lines of a run, in order.
fn result_directories(output: &Output) -> Vec<PathBuf> {
    stderr(output)
        .lines()
        .filter_map(|l| l.strip_prefix("rtl-pmc: results in "))
        .map(PathBuf::from)
        .collect()
}

#[test]
fn without_d_each_run_writes_a_new_hostname_pid_directory() {
    let dir = scratch("default");
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let runs: Vec<PathBuf> = (0..2)
        .map(|_| {
            let run = rtl_pmc(&dir, &["--pmc", "SQ_WAVES"], &[&demo()]);
            assert_code(&run, 0);
            let [out] = &result_directories(&run)[..] else {
                panic!("{}", stderr(&run));
            };
            out.clone()
        })
        .collect();
    assert_ne!(runs[0], runs[1]);
    for out in &runs {
        assert_eq!(out.parent(), Some(&*dir.join(hostname.trim())));
        let pid = out.file_name().unwrap().to_str().unwrap();
        assert!(pid.parse::<u32>().is_ok(), "{pid}");
        assert!(process_file(out, "pass_1/counter_collection.csv").is_file());
        assert!(out.join("results.csv").is_file());
    }
    let top: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(top, [hostname.trim()]);
}

#[test]
fn a_rerun_into_a_directory_holding_a_profile_is_refused() {
    let dir = scratch("rerun");
    let out = dir.join("out");
    let three = [
        "--pmc",
        "SQ_WAVES",
        "--pmc",
        "GRBM_COUNT",
        "--pmc",
        "TCC_HIT",
    ];
    let first = rtl_pmc(&dir, &[&["-d", "out"][..], &three].concat(), &[&demo()]);
    assert_code(&first, 0);
    let before = snapshot(&out);
    assert!(before.contains_key(
        &process_file(&out, "pass_3/counter_collection.csv")
            .strip_prefix(&out)
            .unwrap()
            .to_path_buf()
    ));
    let refused = |found: &str| {
        format!(
            "rtl-pmc: output directory {} already holds a profile ({found}); give another with -d (without -d each run gets a new %hostname%/%pid%) or remove it\n",
            out.display()
        )
    };
    // pass_1 .. pass_3, results.csv and results.db; another output file still meets the passes.
    for (args, found) in [
        (
            &["-d", "out", "--pmc", "SQ_WAVES"][..],
            "pass_1, pass_2, pass_3, ...",
        ),
        (
            &["-d", "out", "-o", "other", "--pmc", "SQ_WAVES"],
            "pass_1, pass_2, pass_3",
        ),
        (
            &[&["-d", "out"][..], &three].concat(),
            "pass_1, pass_2, pass_3, ...",
        ),
    ] {
        let again = rtl_pmc(&dir, args, &[&demo()]);
        assert_code(&again, 2);
        assert_eq!(stderr(&again), refused(found), "{args:?}");
        assert!(again.stdout.is_empty(), "the application ran: {args:?}");
        assert_eq!(snapshot(&out), before, "{args:?}");
    }
    // Merged files of the same name are an earlier profile too.
    let lone = dir.join("lone");
    std::fs::create_dir(&lone).unwrap();
    std::fs::write(lone.join("results.db"), "earlier").unwrap();
    let again = rtl_pmc(&dir, &["-d", "lone", "--pmc", "SQ_WAVES"], &[&demo()]);
    assert_code(&again, 2);
    assert_eq!(
        stderr(&again),
        format!(
            "rtl-pmc: output directory {} already holds a profile (results.db); give another with -d (without -d each run gets a new %hostname%/%pid%) or remove it\n",
            lone.display()
        )
    );
    assert_eq!(std::fs::read(lone.join("results.db")).unwrap(), b"earlier");
}

/// Two runs started at once into one `-d`: one profiles, the other is refused with exit 2 before
/// its application runs, saying the directory is in use (or, when it comes second, that it holds
/// a profile), never an error of a file it met half-made; the winner's profile is whole.
#[test]
fn two_runs_started_at_once_into_one_directory_leave_one_refused() {
    let dir = scratch("race");
    for round in 0..10 {
        let out = dir.join(format!("same-{round}"));
        let start = || {
            Command::new(artifact("rtl-pmc"))
                .current_dir(&dir)
                .args(["--arch", "gfx942", "-d"])
                .arg(&out)
                .args(["--pmc", "SQ_WAVES", "--", &demo()])
                .envs(sim_env("gfx942"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("rtl-pmc starts")
        };
        let (a, b) = (start(), start());
        let outputs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
        let codes: Vec<Option<i32>> = outputs.iter().map(|o| o.status.code()).collect();
        let (won, lost) = match codes.as_slice() {
            [Some(0), Some(2)] => (&outputs[0], &outputs[1]),
            [Some(2), Some(0)] => (&outputs[1], &outputs[0]),
            _ => panic!(
                "round {round}: exit codes {codes:?}\nfirst:\n{}\nsecond:\n{}",
                stderr(&outputs[0]),
                stderr(&outputs[1])
            ),
        };
        let in_use = format!(
            "rtl-pmc: output directory {} is in use by another rtl-pmc run; give another with -d (without -d each run gets a new %hostname%/%pid%)\n",
            out.display()
        );
        // What the earlier profile shows depends on how far the winner got.
        let holds = (
            format!(
                "rtl-pmc: output directory {} already holds a profile (pass_1",
                out.display()
            ),
            "); give another with -d (without -d each run gets a new %hostname%/%pid%) or remove it\n",
        );
        let message = stderr(lost);
        assert!(
            message == in_use
                || (message.starts_with(&holds.0)
                    && message.ends_with(holds.1)
                    && message.lines().count() == 1),
            "round {round}: {message}"
        );
        assert!(lost.stdout.is_empty(), "the refused run's application ran");
        assert!(String::from_utf8_lossy(&won.stdout).contains("4 dispatches verified"));
        let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
        assert_eq!(results.lines().count(), 1 + 4, "{results}");
    }
}

/// rocprofv3's documented multi-job input (using-rocprofv3.rst, "input file"), verbatim;
/// job 2's counters need two passes on gfx942.
const V3_YAML: &str = include_str!("../cli/tests/data/rocprofv3-jobs.yaml");

#[test]
fn the_rocprofv3_multi_job_example_keeps_both_jobs_passes() {
    let dir = scratch("multi-job");
    std::fs::write(dir.join("input.yaml"), V3_YAML).unwrap();
    let plan = rtl_pmc(&dir, &["--plan", "-i", "input.yaml"], &[]);
    assert_code(&plan, 0);
    assert_eq!(
        String::from_utf8_lossy(&plan.stdout),
        "pass 1: SQ_WAVES GRBM_COUNT GRBM_GUI_ACTIVE\npass 2: FETCH_SIZE\npass 3: WRITE_SIZE\npasses: 3 (lower bound: 3)\n"
    );
    let run = rtl_pmc(&dir, &["-d", "prof", "-i", "input.yaml"], &[&demo()]);
    assert_code(&run, 0);
    // Progress counts the three runs of the whole command, though they write two profiles.
    assert_eq!(
        progress_lines(&run),
        [
            "rtl-pmc: [pass 1/3] SQ_WAVES GRBM_COUNT GRBM_GUI_ACTIVE",
            "rtl-pmc: [pass 1/3] done in T: exit code 0, 4 dispatches",
            "rtl-pmc: [pass 2/3] FETCH_SIZE (about T each, T left)",
            "rtl-pmc: [pass 2/3] done in T: exit code 0, 0 dispatches",
            "rtl-pmc: [pass 3/3] WRITE_SIZE (about T each, T left)",
            "rtl-pmc: [pass 3/3] done in T: exit code 0, 0 dispatches",
        ]
    );
    let prof = dir.join("prof");
    assert_eq!(result_directories(&run), [prof.clone(), prof.clone()]);
    let files = snapshot(&prof);
    let names: Vec<String> = files
        .keys()
        .map(|p| p.display().to_string())
        .filter(|p| !p.ends_with(".rtlraw"))
        .map(|p| match p.split_once('/') {
            // Each process's files are named after its pid, as rocprofv3 names them.
            Some((pass, file)) => match file.split_once('_') {
                Some((pid, kind)) if pid.parse::<u32>().is_ok() => format!("{pass}/<pid>_{kind}"),
                _ => p,
            },
            None => p,
        })
        .collect();
    assert_eq!(
        names,
        [
            "out.csv",
            "out.json",
            "pass_1/<pid>_agent_info.csv",
            "pass_1/<pid>_counter_collection.csv",
            "pass_1/plan.json",
            // Job 2 selects no dispatch of the demo: as rocprofv3, no per-process file
            // without data.
            "pass_2/plan.json",
            "pass_3/plan.json",
            "results.csv",
            "results.db",
        ]
    );
    // Job 1's raw records are still there, with its 4 dispatches of 3 counters.
    assert!(files
        .keys()
        .any(|p| p.starts_with("pass_1") && p.extension().is_some_and(|e| e == "rtlraw")));
    let collection = String::from_utf8_lossy(
        &files[process_file(&prof, "pass_1/counter_collection.csv")
            .strip_prefix(&prof)
            .unwrap()],
    )
    .into_owned();
    assert_eq!(collection.lines().count(), 1 + 4 * 3, "{collection}");
    let results = String::from_utf8_lossy(&files[Path::new("results.csv")]).into_owned();
    assert_eq!(results.lines().count(), 1 + 4, "{results}");
    assert!(results
        .lines()
        .next()
        .unwrap()
        .contains(",SQ_WAVES,GRBM_COUNT,GRBM_GUI_ACTIVE,BeginNs,EndNs"));
    // Job 2 selects no demo kernel: its own files, with no dispatch.
    let job2 = String::from_utf8_lossy(&files[Path::new("out.csv")]).into_owned();
    assert_eq!(job2.lines().count(), 1, "{job2}");
    let plan2 = String::from_utf8_lossy(&files[Path::new("pass_2/plan.json")]).into_owned();
    assert!(plan2.contains("FETCH_SIZE"), "{plan2}");
    let plan3 = String::from_utf8_lossy(&files[Path::new("pass_3/plan.json")]).into_owned();
    assert!(plan3.contains("WRITE_SIZE"), "{plan3}");
}

/// The progress lines on stderr, with every duration written `T`.
fn progress_lines(output: &Output) -> Vec<String> {
    let times = regex::Regex::new(r"(done in|about|,) [0-9.]+ (ns|us|ms|s)\b").unwrap();
    stderr(output)
        .lines()
        .filter(|l| l.starts_with("rtl-pmc: [pass "))
        .map(|l| times.replace_all(l, "$1 T").into_owned())
        .collect()
}

/// Runs `rtl-pmc ARGS` in `dir` with nothing else.
fn rtl_pmc_bare(dir: &Path, args: &[&str]) -> Output {
    Command::new(artifact("rtl-pmc"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("rtl-pmc starts")
}

#[test]
fn contradictory_settings_are_one_message_before_anything_runs() {
    let dir = scratch("bad-settings");
    std::fs::write(dir.join("gpus.txt"), "pmc: SQ_WAVES\ngpu: 0 2\n").unwrap();
    std::fs::write(
        dir.join("names.yaml"),
        "jobs:\n  - pmc: [SQ_WAVES]\n    truncate_kernels: true\n    mangled_kernels: true\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("empty.yaml"),
        "jobs:\n  - pmc: [SQ_WAVES]\n    output_file: \"\"\n",
    )
    .unwrap();
    let demo = demo();
    let sim2 = ["--sim", "gfx942x2", "-d", "out"];
    for (args, message) in [
        (
            [&sim2[..], &["-i", "gpus.txt", "--", &demo]].concat(),
            "gpus.txt:1: gpu 2 is not there: the simulated GPUs of --sim gfx942x2 have indices 0-1",
        ),
        (
            [&sim2[..], &["-i", "gpus.txt", "--plan"]].concat(),
            "gpus.txt:1: gpu 2 is not there: the simulated GPUs of --sim gfx942x2 have indices 0-1",
        ),
        (
            [&sim2[..], &["--arch", "gfx90a", "--pmc", "SQ_WAVES", "--", &demo]].concat(),
            "--arch gfx90a contradicts the simulated GPUs of --sim gfx942x2: GPU 1 is gfx942; drop --arch or give --arch gfx942",
        ),
        (
            [&sim2[..], &["-o", "", "--pmc", "SQ_WAVES", "--", &demo]].concat(),
            "-o/--output-file: the output file name is empty",
        ),
        (
            [&sim2[..], &["-o", "a/b", "--pmc", "SQ_WAVES", "--", &demo]].concat(),
            "-o/--output-file: 'a/b' is a path; give the directory with -d and a file name here",
        ),
        (
            [&sim2[..], &["-i", "empty.yaml", "--", &demo]].concat(),
            "empty.yaml:3:18: output_file: the output file name is empty",
        ),
        (
            [
                &sim2[..],
                &["--truncate-kernels", "--mangled-kernels", "--pmc", "SQ_WAVES", "--", &demo],
            ]
            .concat(),
            "--truncate-kernels and --mangled-kernels contradict each other: a truncated name is a demangled one; give one of them",
        ),
        (
            [&sim2[..], &["-i", "names.yaml", "--", &demo]].concat(),
            "names.yaml:2:5: truncate_kernels and mangled_kernels contradict each other: a truncated name is a demangled one; give one of them",
        ),
    ] {
        let out = rtl_pmc_bare(&dir, &args);
        assert_code(&out, 2);
        assert_eq!(stderr(&out), format!("rtl-pmc: {message}\n"), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!dir.join("out").exists(), "{args:?}");
    }
    // Planning for another machine with --arch is not a contradiction.
    let plan = rtl_pmc_bare(&dir, &["--arch", "gfx90a", "--plan", "-i", "gpus.txt"]);
    assert_code(&plan, 0);
}

#[test]
fn an_output_file_named_with_its_extension_is_not_doubled() {
    let dir = scratch("o-extension");
    let run = rtl_pmc(
        &dir,
        &["-d", "out", "-o", "run.csv", "--pmc", "SQ_WAVES"],
        &[&demo()],
    );
    assert_code(&run, 0);
    let mut names: Vec<String> = std::fs::read_dir(dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["pass_1", "run.csv", "run.db"]);
}
