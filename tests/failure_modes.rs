//! Failure modes of `rtl-pmc` end to end on the simulated gfx942: every fault the simulator can
//! inject, an application killed or crashing mid-pass, output directories that cannot be
//! written, concurrent profiles, and an opt-in soak (`RTL_PMC_SOAK=1`).
//!
//! In every case the application runs exactly as without rtl-pmc (its results verified by the
//! demo app itself), what could be collected is in the outputs with its ground-truth values, and
//! what went wrong is said once.

mod common;

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{artifact, children, sim_env, Profile};

/// The counters of every profile here: two blocks.
const COUNTERS: [&str; 2] = ["SQ_WAVES", "GRBM_GUI_ACTIVE"];

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    common::scratch(&format!("failure-{name}"))
}

impl Profile {
    /// The interposer's lines: what the application printed with the `rtl-pmc: ` prefix
    /// between the CLI's `[pass N/M] <counters>` and `[pass N/M] done` lines.
    fn interposer_warnings(&self) -> Vec<String> {
        let mut inside = false;
        let mut lines = Vec::new();
        for line in self.stderr().lines() {
            if line.starts_with("rtl-pmc: [pass ") {
                inside = !line.contains("] done in ");
            } else if inside && line.starts_with("rtl-pmc: ") {
                lines.push(line.to_string());
            }
        }
        lines
    }

    /// `results.csv` rows as maps from column name to field.
    fn rows(&self) -> Vec<HashMap<String, String>> {
        let path = self.out.join("results.csv");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}\nstderr:\n{}", path.display(), self.stderr()));
        let mut lines = text.lines();
        let header: Vec<String> = lines
            .next()
            .expect("a header line")
            .split(',')
            .map(str::to_string)
            .collect();
        lines
            .map(|l| {
                header
                    .iter()
                    .cloned()
                    .zip(l.split(',').map(|f| f.trim_matches('"').to_string()))
                    .collect()
            })
            .collect()
    }

    /// Asserts that every row's counters are the ground truth of the dispatch that began at its
    /// BeginNs, and returns the number of rows.
    fn assert_rows_match_truth(&self) -> usize {
        let rows = self.rows();
        for row in &rows {
            let begin: u64 = row["BeginNs"].parse().expect("BeginNs");
            let truth = self
                .truth
                .iter()
                .find(|t| t["start"].as_u64() == Some(begin))
                .unwrap_or_else(|| panic!("no ground truth starts at {begin}: {row:?}"));
            for counter in COUNTERS {
                let want: u64 = truth["counters"][counter]
                    .as_array()
                    .unwrap_or_else(|| panic!("no ground truth for {counter}"))
                    .iter()
                    .map(|v| v.as_u64().expect("a count"))
                    .sum();
                assert_eq!(row[counter], want.to_string(), "{counter} of {row:?}");
            }
        }
        rows.len()
    }

    /// The `[pass N/M] done` line, with its duration replaced by `T`.
    fn pass_line(&self, pass: u32) -> String {
        let prefix = format!("rtl-pmc: [pass {pass}/");
        let line = self
            .stderr()
            .lines()
            .find(|l| l.starts_with(&prefix) && l.contains("] done in "))
            .unwrap_or_else(|| panic!("no pass {pass} line in:\n{}", self.stderr()))
            .to_string();
        let (head, rest) = line.split_once(" done in ").expect("a duration");
        let (_, tail) = rest.split_once(':').expect("a colon after the duration");
        format!("{head} done in T:{tail}")
    }
}

/// `rtl-pmc --arch gfx942 -d OUT --pmc COUNTERS -- rtl-demo-app APP_ARGS` on the simulated
/// gfx942, with extra environment `env`.
fn command(dir: &Path, out: &Path, app_args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(artifact("rtl-pmc"));
    command
        .current_dir(dir)
        .args(["--arch", "gfx942", "-d"])
        .arg(out)
        .args(["--pmc", &COUNTERS.join(" "), "--"])
        .arg(artifact("rtl-demo-app"))
        .args(app_args)
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_GROUND_TRUTH", dir.join("truth.jsonl"))
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", COUNTERS.join(","))
        .envs(env.iter().copied());
    command
}

fn read_truth(dir: &Path) -> Vec<serde_json::Value> {
    common::ground_truth(&dir.join("truth.jsonl"))
}

fn profile(name: &str, app_args: &[&str], env: &[(&str, &str)]) -> Profile {
    let dir = scratch(name);
    let out = dir.join("out");
    let output = command(&dir, &out, app_args, env)
        .output()
        .expect("rtl-pmc starts");
    Profile {
        output,
        out,
        truth: read_truth(&dir),
    }
}

/// A profile under fault `env` that must leave the application correct, with exit code 0.
fn faulty(name: &str, app_args: &[&str], env: &[(&str, &str)], verified: u32) -> Profile {
    let p = profile(name, app_args, env);
    p.assert_code(0);
    assert!(
        p.stdout()
            .contains(&format!("rtl-demo-app: {verified} dispatches verified")),
        "{}",
        p.stdout()
    );
    p
}

#[test]
fn no_intercept_support_profiles_nothing_and_says_so_once() {
    let p = faulty(
        "no-intercept",
        &["--queues", "2"],
        &[("RTL_SIM_NO_INTERCEPT", "1")],
        8,
    );
    assert_eq!(
        p.interposer_warnings(),
        ["rtl-pmc: cannot create an intercept queue (status 0x1000); queues are created without profiling"]
    );
    assert_eq!(p.assert_rows_match_truth(), 0);
    assert_eq!(
        p.pass_line(1),
        "rtl-pmc: [pass 1/1] done in T: exit code 0, 0 dispatches"
    );
}

#[test]
fn a_failed_queue_creation_loses_only_that_queue() {
    let p = faulty(
        "queue-create",
        &["--queues", "2"],
        &[("RTL_SIM_FAIL_QUEUE_CREATE", "1")],
        8,
    );
    assert_eq!(
        p.interposer_warnings(),
        ["rtl-pmc: cannot create an intercept queue (status 0x1008); queues are created without profiling"]
    );
    assert_eq!(p.assert_rows_match_truth(), 4);
}

#[test]
fn a_failed_signal_creation_loses_one_dispatch() {
    // Creations 1 and 2 are the application's signal and the interposer's wake-up signal; 3 is
    // the first one the interposer makes for a dispatch.
    let p = faulty(
        "signal-create",
        &["--iterations", "2"],
        &[("RTL_SIM_FAIL_SIGNAL_CREATE", "3")],
        8,
    );
    assert_eq!(
        p.interposer_warnings(),
        ["rtl-pmc: cannot create signals; dispatches run unprofiled"]
    );
    assert_eq!(p.assert_rows_match_truth(), 7);
    assert_eq!(
        p.pass_line(1),
        "rtl-pmc: [pass 1/1] done in T: exit code 0, 7 dispatches"
    );
}

#[test]
fn a_failed_aqlprofile_registration_profiles_nothing() {
    let p = faulty(
        "aql-register",
        &[],
        &[("RTL_SIM_FAIL_AQLPROFILE_REGISTER", "1")],
        4,
    );
    assert_eq!(
        p.interposer_warnings(),
        ["rtl-pmc: aqlprofile aqlprofile_register_agent failed on gfx942 (status 0x1000); counters are not collected on GPU 1 (gfx942), its dispatches run unprofiled"]
    );
    assert_eq!(p.assert_rows_match_truth(), 0);
}

#[test]
fn a_failed_aqlprofile_packet_creation_profiles_nothing() {
    let p = faulty(
        "aql-packets",
        &["--iterations", "2"],
        &[("RTL_SIM_FAIL_AQLPROFILE_PACKETS", "1")],
        8,
    );
    assert_eq!(
        p.interposer_warnings(),
        ["rtl-pmc: aqlprofile aqlprofile_pmc_create_packets failed on gfx942 (status 0x1000); counters are not collected on GPU 1 (gfx942), its dispatches run unprofiled"]
    );
    assert_eq!(p.assert_rows_match_truth(), 0);
    assert_eq!(
        p.pass_line(1),
        "rtl-pmc: [pass 1/1] done in T: exit code 0, 0 dispatches"
    );
}

#[test]
fn rocm_5_tables_are_refused_with_one_warning() {
    for rocm in ["5.2", "5.5", "5.7"] {
        let p = faulty(&format!("rocm-{rocm}"), &[], &[("RTL_SIM_ROCM", rocm)], 4);
        assert_eq!(
            p.interposer_warnings(),
            ["rtl-pmc: API table version 1.0 is not supported (rtl-pmc needs ROCm 6.0 or newer); not profiling"],
            "ROCm {rocm}"
        );
        assert_eq!(p.assert_rows_match_truth(), 0, "ROCm {rocm}");
    }
}

#[test]
fn rocm_6_0_tables_are_profiled_without_warnings() {
    for rocm in ["6.0", "6.3"] {
        let p = faulty(&format!("rocm-{rocm}"), &[], &[("RTL_SIM_ROCM", rocm)], 4);
        assert_eq!(p.interposer_warnings(), Vec::<String>::new(), "ROCm {rocm}");
        assert_eq!(p.assert_rows_match_truth(), 4, "ROCm {rocm}");
        assert!(!p.stderr().contains("warning"), "{}", p.stderr());
    }
}

/// The warning for counters that read 0 everywhere, after the counters and passes it names.
const ZERO_CAUSES: &str = "though they count in every dispatch on a GPU whose counters work; \
     usual causes: the GPU's power management or clock gating stopping its counters, a GPU or \
     aqlprofile version rtl-pmc does not support, or another tool collecting counters at the \
     same time";

fn warning_lines(p: &Profile) -> Vec<String> {
    p.stderr()
        .lines()
        .filter(|l| l.starts_with("rtl-pmc: warning: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn counters_reading_zero_everywhere_are_reported_once_at_the_end() {
    for api in ["v2", "legacy"] {
        let p = faulty(
            &format!("zeros-{api}"),
            &["--iterations", "2"],
            &[
                ("RTL_SIM_AQLPROFILE_ZEROS", "1"),
                ("RTL_PMC_AQLPROFILE_API", api),
            ],
            8,
        );
        assert_eq!(
            warning_lines(&p),
            [format!(
                "rtl-pmc: warning: SQ_WAVES and GRBM_GUI_ACTIVE read 0 in every dispatch of \
                 pass 1, {ZERO_CAUSES}"
            )],
            "{api}"
        );
        let rows = p.rows();
        assert_eq!(rows.len(), 8, "{api}");
        for row in &rows {
            assert_eq!(
                (row["SQ_WAVES"].as_str(), row["GRBM_GUI_ACTIVE"].as_str()),
                ("0", "0")
            );
        }
        // The warning comes after the last pass, before the summary.
        let stderr = p.stderr();
        let at = |text: &str| {
            stderr
                .find(text)
                .unwrap_or_else(|| panic!("{text}: {stderr}"))
        };
        assert!(at("[pass 1/1] done in ") < at("read 0 in every dispatch"));
        assert!(at("read 0 in every dispatch") < at("rtl-pmc: results in "));
    }
}

#[test]
fn only_passes_whose_counters_cannot_be_zero_are_reported() {
    let dir = scratch("zeros-passes");
    let out = dir.join("out");
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(&dir)
        .args(["--arch", "gfx942", "-d"])
        .arg(&out)
        .args([
            "--pmc",
            "TCC_HIT GRBM_COUNT",
            "--pmc",
            "TCC_MISS",
            "--pmc",
            "GRBM_COUNT SQ_WAVES",
        ])
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_AQLPROFILE_ZEROS", "1")
        .output()
        .expect("rtl-pmc starts");
    let p = Profile {
        output,
        out,
        truth: Vec::new(),
    };
    p.assert_code(0);
    assert_eq!(
        warning_lines(&p),
        [format!(
            "rtl-pmc: warning: GRBM_COUNT read 0 in every dispatch of passes 1 and 3; SQ_WAVES \
             in every dispatch of pass 3, {ZERO_CAUSES}"
        )]
    );
}

/// Dispatch records in the raw record files under `dir/pass_1` (written through a mapping of
/// files longer than their records, so their length says nothing).
fn raw_records(out: &Path) -> usize {
    std::fs::read_dir(out.join("pass_1"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "rtlraw"))
                .map(|e| rtl_pmc::dispatch::records::read(&e.path()).count())
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn an_application_killed_mid_pass_keeps_its_flushed_records() {
    let dir = scratch("sigkill");
    let out = dir.join("out");
    let child = command(
        &dir,
        &out,
        &["--iterations", "1000000", "--size", "64"],
        &[],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("rtl-pmc starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while raw_records(&out) < 40 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(raw_records(&out) >= 40, "no records within 60 s");
    let app = children(child.id());
    assert_eq!(app.len(), 1, "rtl-pmc runs one application: {app:?}");
    // SAFETY: sending a signal to a process this test started (through rtl-pmc).
    assert_eq!(unsafe { libc::kill(app[0] as i32, libc::SIGKILL) }, 0);
    let output = child.wait_with_output().expect("rtl-pmc finishes");
    let p = Profile {
        output,
        out,
        truth: read_truth(&dir),
    };
    p.assert_code(128 + libc::SIGKILL);
    let rows = p.assert_rows_match_truth();
    assert!(
        rows > 0,
        "records flushed before the kill are in results.csv"
    );
    assert!(
        rows <= p.truth.len(),
        "{rows} rows for {} dispatches",
        p.truth.len()
    );
    assert_eq!(
        p.pass_line(1),
        format!("rtl-pmc: [pass 1/1] done in T: exit code 137, {rows} dispatches")
    );
    let mut indices: Vec<String> = p.rows().into_iter().map(|r| r["Index"].clone()).collect();
    indices.sort();
    indices.dedup();
    assert_eq!(indices.len(), rows, "no dispatch twice");
}

#[test]
fn a_segfaulting_application_exits_139_with_its_flushed_dispatches() {
    // Kernels of about 300 ms: every dispatch the application saw complete is recorded, the
    // last one too, however soon after it the crash comes.
    let p = profile(
        "sigsegv",
        &["--crash", "--iterations", "3"],
        &[("RTL_SIM_SLOW", "125000")],
    );
    p.assert_code(128 + libc::SIGSEGV);
    // The demo raises SIGSEGV after the first iteration's 4 dispatches.
    let completed = p.truth.len();
    assert_eq!(completed, 4, "{completed} dispatches ran");
    let rows = p.assert_rows_match_truth();
    assert_eq!(rows, completed, "dispatches in results.csv");
    assert_eq!(
        p.pass_line(1),
        format!("rtl-pmc: [pass 1/1] done in T: exit code 139, {rows} dispatches")
    );
}

#[test]
fn an_output_directory_that_cannot_be_written_is_an_error() {
    let dir = scratch("read-only");
    let locked = dir.join("locked");
    std::fs::create_dir_all(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    // A file where the output directory should be fails for root as well.
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    for (out, running_as_root_can_write) in [(locked.join("out"), true), (file.join("out"), false)]
    {
        // SAFETY: geteuid has no preconditions.
        if running_as_root_can_write && unsafe { libc::geteuid() } == 0 {
            continue;
        }
        let output = command(&dir, &out, &[], &[]).output().unwrap();
        let p = Profile {
            output,
            out: out.clone(),
            truth: Vec::new(),
        };
        p.assert_code(1);
        let stderr = p.stderr();
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!("rtl-pmc: {}: ", out.display())),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "one message: {stderr}");
        assert!(
            !p.stdout().contains("dispatches verified"),
            "the application did not run"
        );
    }
}

/// Mounts a tmpfs of `size` at `at`; the reason when that is impossible.
fn mount_tmpfs(at: &Path, size: &str) -> Result<(), String> {
    std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(at)
        .output()
        .map_err(|e| format!("mount cannot run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// rtl-pmc writing to a 64 KiB tmpfs, or `None` (with the reason printed) where no tmpfs can be
/// mounted.
fn profile_on_a_full_disk(name: &str) -> Option<Profile> {
    let dir = scratch(name);
    let mount = dir.join("tiny");
    if let Err(why) = mount_tmpfs(&mount, "64k") {
        eprintln!("skipped: a 64 KiB tmpfs cannot be mounted here ({why})");
        return None;
    }
    let out = mount.join("out");
    let output = command(&dir, &out, &["--iterations", "200", "--size", "64"], &[])
        .output()
        .unwrap();
    let left: Vec<String> = std::fs::read_dir(&out)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let _ = Command::new("umount").arg(&mount).status();
    // Keep the listing where the caller can read it after the unmount.
    std::fs::write(dir.join("left"), left.join("\n")).unwrap();
    Some(Profile {
        output,
        out: dir,
        truth: Vec::new(),
    })
}

#[test]
fn a_full_disk_is_an_error_naming_the_file_and_the_cause() {
    let Some(p) = profile_on_a_full_disk("disk-full") else {
        return;
    };
    p.assert_code(1);
    let stderr = p.stderr();
    let out = p.out.join("tiny/out");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one message: {stderr}");
    assert!(
        lines[0].starts_with(&format!("rtl-pmc: {}/results.db", out.display()))
            && lines[0].ends_with(": database or disk is full"),
        "{stderr}"
    );
    assert!(
        !p.stdout().contains("dispatches verified"),
        "the application did not run"
    );
}

#[test]
fn a_full_disk_leaves_no_partial_files() {
    let Some(p) = profile_on_a_full_disk("disk-full-partial") else {
        return;
    };
    p.assert_code(1);
    let left = std::fs::read_to_string(p.out.join("left")).unwrap();
    assert_eq!(left, "", "files left in the output directory");
}

/// rtl-pmc whose output directory is on a 300 KiB tmpfs that the raw records of 8000 dispatches
/// fill during the pass, with the write warnings of the interposer; `None` (the reason printed)
/// where no tmpfs can be mounted.
fn profile_filling_the_disk(name: &str) -> Option<(Profile, Vec<String>)> {
    let dir = scratch(name);
    let mount = dir.join("small");
    if let Err(why) = mount_tmpfs(&mount, "300k") {
        eprintln!("skipped: a 300 KiB tmpfs cannot be mounted here ({why})");
        return None;
    }
    let out = mount.join("out");
    let output = command(&dir, &out, &["--iterations", "2000", "--size", "64"], &[])
        .output()
        .unwrap();
    let _ = Command::new("umount").arg(&mount).status();
    let p = Profile {
        output,
        out,
        truth: Vec::new(),
    };
    let database = format!("rtl-pmc: {}/results.db", p.out.display());
    let warnings = p
        .interposer_warnings()
        .into_iter()
        .filter(|w| !w.starts_with(&database))
        .collect();
    Some((p, warnings))
}

#[test]
fn a_disk_that_fills_during_the_pass_is_an_error_after_a_correct_run() {
    let Some((p, warnings)) = profile_filling_the_disk("disk-fills") else {
        return;
    };
    p.assert_code(1);
    assert!(
        p.stdout()
            .contains("rtl-demo-app: 8000 dispatches verified"),
        "the application is unaffected: {}",
        p.stdout()
    );
    let stderr = p.stderr();
    assert!(!warnings.is_empty(), "{stderr}");
    for w in &warnings {
        assert!(
            w.starts_with(&format!(
                "rtl-pmc: cannot write records: {}/pass_1/",
                p.out.display()
            )) && w.ends_with(".rtlraw: No space left on device (os error 28)"),
            "{stderr}"
        );
    }
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(&format!("rtl-pmc: {}/results.db", p.out.display()))
            && last.ends_with(": database or disk is full"),
        "{stderr}"
    );
    assert!(!stderr.contains("rtl-pmc: results in "), "{stderr}");
}

#[test]
fn a_disk_that_fills_is_reported_once_by_the_interposer() {
    let Some((p, warnings)) = profile_filling_the_disk("disk-fills-once") else {
        return;
    };
    assert_eq!(warnings.len(), 1, "{}", p.stderr());
}

#[test]
fn two_profiles_at_once_write_their_own_directories() {
    let dirs = [scratch("concurrent-a"), scratch("concurrent-b")];
    let children: Vec<_> = dirs
        .iter()
        .zip([["--iterations", "20"], ["--iterations", "30"]])
        .map(|(dir, args)| {
            command(dir, &dir.join("out"), &args, &[])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("rtl-pmc starts")
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for ((dir, output), dispatches) in dirs.iter().zip(outputs).zip([80, 120]) {
        let p = Profile {
            output,
            out: dir.join("out"),
            truth: read_truth(dir),
        };
        p.assert_code(0);
        assert_eq!(p.interposer_warnings(), Vec::<String>::new());
        assert_eq!(p.truth.len(), dispatches);
        assert_eq!(p.assert_rows_match_truth(), dispatches);
    }
}

/// Ten minutes of many threads and queues; every dispatch of the ground truth is in the results
/// exactly once. Off unless `RTL_PMC_SOAK=1`.
#[test]
fn soak_loses_and_duplicates_no_dispatch() {
    if std::env::var("RTL_PMC_SOAK").as_deref() != Ok("1") {
        eprintln!("skipped: set RTL_PMC_SOAK=1 for the 10-minute soak");
        return;
    }
    // RTL_PMC_SOAK_SECONDS shortens it (at least one round runs).
    let seconds: u64 = std::env::var("RTL_PMC_SOAK_SECONDS")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(600);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut round = 0;
    while round == 0 || Instant::now() < deadline {
        round += 1;
        let p = profile(
            &format!("soak-{}", round % 2),
            &[
                "--threads",
                "8",
                "--queues",
                "4",
                "--iterations",
                "50",
                "--size",
                "256",
            ],
            &[],
        );
        p.assert_code(0);
        assert!(
            p.stdout()
                .contains("rtl-demo-app: 6400 dispatches verified"),
            "round {round}: {}",
            p.stdout()
        );
        assert_eq!(p.truth.len(), 6400, "round {round}");
        assert_eq!(p.assert_rows_match_truth(), 6400, "round {round}");
        let mut begins: Vec<String> = p.rows().into_iter().map(|r| r["BeginNs"].clone()).collect();
        begins.sort();
        begins.dedup();
        assert_eq!(begins.len(), 6400, "round {round}: a dispatch twice");
    }
}
