//! Profiles whose processes end abruptly, end to end through `rtl-pmc` on the simulated gfx942:
//! rtl-pmc itself killed mid-profile and the profile finished by `rtl-pmc finish DIR` with the
//! ground-truth values of every dispatch the application completed; an application killed
//! while dispatches were in flight (one warning with the count and the cause); a crash with
//! and without `--disable-signal-handlers`.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{artifact, children, read_table, sim_env, text, total};

/// One counter per pass.
const COUNTERS: [&str; 2] = ["SQ_WAVES", "GRBM_GUI_ACTIVE"];

fn scratch(name: &str) -> PathBuf {
    common::scratch(&format!("finish-{name}"))
}

/// `rtl-pmc RTL_PMC_ARGS -- rtl-demo-app APP_ARGS` in `dir` on the simulated gfx942, with
/// ground truth of [`COUNTERS`].
fn command(dir: &Path, rtl_pmc_args: &[&str], app_args: &[&str]) -> Command {
    let mut command = Command::new(artifact("rtl-pmc"));
    command
        .current_dir(dir)
        .args(rtl_pmc_args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(app_args)
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_GROUND_TRUTH", dir.join("truth.jsonl"))
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", COUNTERS.join(","));
    command
}

/// Asserts that `results.csv` of a two-pass profile holds the ground truth: each row's first
/// counter that of the pass 1 dispatch that began at its BeginNs, and the rows' second counters
/// (with their kernels) those of pass 2's dispatches, as a multiset; returns the rows.
fn assert_rows_match_truth(
    out: &Path,
    truth: &[serde_json::Value],
) -> Vec<HashMap<String, String>> {
    let rows = read_table(&out.join("results.csv"));
    let mut second: Vec<(String, String)> = Vec::new();
    for row in &rows {
        let begin: u64 = row["BeginNs"].parse().unwrap();
        let t = truth
            .iter()
            .find(|t| t["start"].as_u64() == Some(begin))
            .unwrap_or_else(|| panic!("no ground truth starts at {begin}: {row:?}"));
        assert_eq!(
            row[COUNTERS[0]],
            total(t, COUNTERS[0]).to_string(),
            "{row:?}"
        );
        second.push((row["KernelName"].clone(), row[COUNTERS[1]].clone()));
    }
    let pid = rows.first().map(|r| r["pid"].clone()).unwrap_or_default();
    let mut want: Vec<(String, String)> = truth
        .iter()
        .filter(|t| t["pid"].as_u64().map(|p| p.to_string()) != Some(pid.clone()))
        .map(|t| {
            (
                t["kernel"].as_str().unwrap().to_string(),
                total(t, COUNTERS[1]).to_string(),
            )
        })
        .collect();
    second.sort();
    want.sort();
    assert_eq!(second, want);
    rows
}

#[test]
fn a_profile_whose_rtl_pmc_was_killed_is_finished_from_its_raw_records() {
    let dir = scratch("killed");
    let out = dir.join("out");
    std::fs::write(
        dir.join("input.txt"),
        "pmc: SQ_WAVES\npmc: GRBM_GUI_ACTIVE\n",
    )
    .unwrap();
    let runs = dir.join("runs");
    // Pass 1 ends normally; pass 2's application completes its work and then waits to be
    // killed, with rtl-pmc.
    let mut child = command(
        &dir,
        &["-d", "out", "-i", "input.txt"],
        &[
            "--threads",
            "2",
            "--iterations",
            "5",
            "--end",
            "hang",
            "--end-in-run",
            "2",
            "--runs-file",
        ],
    )
    .arg(&runs)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("rtl-pmc starts");
    // Pass 2's application says so once all its dispatches completed.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("ending by hang") {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "rtl-pmc ended");
    }
    assert_eq!(
        line,
        "rtl-demo-app: 40 dispatches verified, ending by hang\n"
    );
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 2);
    let app = children(child.id());
    assert_eq!(app.len(), 1, "{app:?}");
    child.kill().unwrap();
    // SAFETY: a signal to the application this test started through rtl-pmc.
    assert_eq!(unsafe { libc::kill(app[0] as i32, libc::SIGKILL) }, 0);
    let killed = child.wait_with_output().unwrap();
    assert_eq!(killed.status.code(), None);

    let rtl_pmc = |args: &[&str]| -> Output {
        Command::new(artifact("rtl-pmc"))
            .current_dir(&dir)
            .args(args)
            .output()
            .unwrap()
    };
    // What the directory answers before it is finished.
    let merge = rtl_pmc(&["merge", "-d", "merged", "out"]);
    assert_eq!(
        text(&merge.stderr),
        "rtl-pmc: out: no results.db: the profile was interrupted before writing its results; `rtl-pmc finish out` writes them from its raw records\n"
    );
    // Nor does it take a new profile.
    let refused = command(&dir, &["-d", "out", "--pmc", "SQ_WAVES"], &[])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let partial: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial-"))
        .collect();
    assert_eq!(
        partial.len(),
        1,
        "the database rtl-pmc was writing: {partial:?}"
    );

    let finish = rtl_pmc(&["finish", "out"]);
    let stderr = text(&finish.stderr);
    assert_eq!(finish.status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("rtl-pmc: pass ") || l.starts_with("rtl-pmc: this profile"))
        .collect();
    assert_eq!(
        lines,
        [
            "rtl-pmc: pass 1: its application ended with exit code 0; 40 dispatches in its raw records",
            "rtl-pmc: pass 2: interrupted while its application ran; 40 dispatches in its raw records",
            "rtl-pmc: this profile was interrupted (rtl-pmc ended before writing its results); finished from its raw records: 1 of 2 passes complete (1); pass 2 cut short, with the dispatches its application completed",
        ],
        "{stderr}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(!stderr.contains("--"), "no flag is blamed: {stderr}");
    let truth = common::ground_truth(&dir.join("truth.jsonl"));
    assert_eq!(truth.len(), 80);
    let rows = assert_rows_match_truth(&out, &truth);
    assert_eq!(rows.len(), 40);
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["pmc_1", "pmc_2", "results.csv", "results.db"]);

    // Finished: nothing is left to finish, and the directory is a profile like any other.
    let again = rtl_pmc(&["finish", "out"]);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(
        text(&again.stderr),
        format!(
            "rtl-pmc: finish: {}: nothing to finish: its profile was not interrupted (it has its results)\n",
            out.display()
        )
    );
    let merged = rtl_pmc(&["merge", "-d", "merged", "out"]);
    assert_eq!(merged.status.code(), Some(0), "{}", text(&merged.stderr));
}

#[test]
fn finishing_a_directory_without_an_interrupted_profile_is_refused() {
    let dir = scratch("nothing");
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(&dir)
        .args(["finish", "missing"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        format!(
            "rtl-pmc: finish: {}: nothing to finish: no such directory\n",
            dir.join("missing").display()
        )
    );
}

#[test]
fn dispatches_in_flight_when_the_application_is_killed_are_one_warning_with_the_count() {
    let dir = scratch("app-killed");
    let child = command(
        &dir,
        &["-d", "out", "--pmc", "SQ_WAVES GRBM_GUI_ACTIVE"],
        &["--threads", "4", "--iterations", "1000000", "--size", "64"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("rtl-pmc starts");
    let truth = dir.join("truth.jsonl");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&truth).map_or(0, |t| t.lines().count()) < 2000
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let app = children(child.id());
    assert_eq!(app.len(), 1, "{app:?}");
    // SAFETY: a signal to the application this test started through rtl-pmc.
    assert_eq!(unsafe { libc::kill(app[0] as i32, libc::SIGKILL) }, 0);
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(137), "{stderr}");
    let file = std::fs::read_dir(dir.join("out/pass_1"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "rtlraw"))
        .unwrap();
    let tally = rtl_pmc::dispatch::records::read_tally(&file).unwrap();
    let kept = rtl_pmc::dispatch::records::read(&file).count() as u64;
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("rtl-pmc: warning: "))
        .collect();
    let lost = tally.expected - kept;
    match lost {
        0 => assert!(warnings.is_empty(), "{stderr}"),
        _ => assert_eq!(
            warnings,
            [format!(
                "rtl-pmc: warning: pass 1: process {}: {} profiled dispatches, {kept} recorded; the other {lost} {} still running when the process ended without finishing (by _exit, exec, or a signal such as SIGKILL)",
                app[0],
                tally.expected,
                if lost == 1 { "was" } else { "were" }
            )],
            "{stderr}"
        ),
    }
    // Four threads wait for one dispatch each at most.
    assert!(lost <= 4, "{lost} lost");
    let rows = read_table(&dir.join("out/results.csv"));
    assert_eq!(rows.len() as u64, kept);
}

/// `rtl-pmc EXTRA --pmc COUNTERS -- rtl-demo-app --end segv`: its 8 dispatches, exit 139.
fn crash(name: &str, extra: &[&str]) -> String {
    let dir = scratch(name);
    let mut args = extra.to_vec();
    args.extend([
        "-d",
        "out",
        "--log-level",
        "env",
        "--pmc",
        "SQ_WAVES GRBM_GUI_ACTIVE",
    ]);
    let output = command(&dir, &args, &["--queues", "2", "--end", "segv"])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(139), "{stderr}");
    assert!(
        stderr.contains("rtl-pmc: [pass 1/1] done in ")
            && stderr.contains(": exit code 139, 8 dispatches\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");
    let truth = common::ground_truth(&dir.join("truth.jsonl"));
    let rows = read_table(&dir.join("out/results.csv"));
    assert_eq!(rows.len(), 8);
    for row in &rows {
        let t = truth
            .iter()
            .find(|t| {
                t["start"].as_u64().map(|s| s.to_string()).as_deref() == Some(&row["BeginNs"])
            })
            .unwrap_or_else(|| panic!("{row:?}"));
        for counter in COUNTERS {
            let want: u64 = t["counters"][counter]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .sum();
            assert_eq!(row[counter], want.to_string());
        }
    }
    stderr
}

#[test]
fn a_crash_keeps_every_dispatch_with_or_without_signal_handlers() {
    let with = crash("crash", &[]);
    assert!(
        with.contains("rtl-pmc: pass 1: RTL_PMC_DISABLE_SIGNAL_HANDLERS=0\n"),
        "{with}"
    );
    let without = crash("crash-no-handlers", &["--disable-signal-handlers"]);
    assert!(
        without.contains("rtl-pmc: pass 1: RTL_PMC_DISABLE_SIGNAL_HANDLERS=1\n"),
        "{without}"
    );
    let dir = scratch("crash-job-key");
    std::fs::write(
        dir.join("input.yaml"),
        "jobs:\n  - pmc: [SQ_WAVES]\n    disable_signal_handlers: true\n",
    )
    .unwrap();
    let output = command(
        &dir,
        &["-d", "out", "--log-level", "env", "-i", "input.yaml"],
        &["--end", "segv"],
    )
    .output()
    .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(139), "{stderr}");
    assert!(
        stderr.contains("rtl-pmc: pass 1: RTL_PMC_DISABLE_SIGNAL_HANDLERS=1\n"),
        "{stderr}"
    );
}
