//! However an application's process ends right after its work (`_exit` from a thread, a fatal
//! signal with or without a handler of its own, `exec`, SIGKILL), every dispatch it saw complete
//! is in its raw records with its ground-truth values, the application's own handler runs, and
//! its exit status is the one it would have without rtl-pmc.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{artifact, assert_matches_truth, plan, run_demo, scratch, Run};
use rtl_pmc::dispatch::records::{read_tally, Ending};
use rtl_pmc::passes::plan_file::KernelFilters;

/// Two blocks, read per sample.
const COUNTERS: &[&str] = &["SQ_WAVES", "GRBM_GUI_ACTIVE"];

/// The demo app under the interposer collecting [`COUNTERS`], with `args` and extra `env`.
fn demo(name: &str, env: &[(&str, &str)], args: &[&str]) -> (Run, std::path::PathBuf) {
    let dir = scratch(&format!("end-{name}"));
    let plan = plan(&dir, "gfx942", &[COUNTERS], KernelFilters::default(), 1);
    let run = run_demo(&dir, "gfx942", Some(&plan), env, COUNTERS, args);
    (run, dir.join("out"))
}

/// The one raw record file of `out`'s one process: how it ended, and the records it expected.
fn tally(out: &Path) -> (Ending, u64) {
    let files: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rtlraw"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let tallied = read_tally(&files[0]).unwrap();
    (tallied.ending, tallied.expected)
}

/// Asserts the app printed that it verified `n` dispatches and ended `how`.
fn assert_ended(run: &Run, n: usize, how: &str) {
    assert!(
        run.stdout().contains(&format!(
            "rtl-demo-app: {n} dispatches verified, ending by {how}"
        )),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout(),
        run.stderr()
    );
}

/// `tests/common/end_app.c`, built once.
fn end_app() -> std::path::PathBuf {
    static BUILT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| common::build_c_program("tests/common/end_app.c", "rtl-end-app"))
        .clone()
}

/// `program` in `dir` on the simulated gfx942 under the interposer collecting [`COUNTERS`],
/// with their ground truth in `dir/truth.jsonl`.
fn interposed(program: &Path, dir: &Path) -> Command {
    let plan = plan(dir, "gfx942", &[COUNTERS], KernelFilters::default(), 1);
    let mut command = Command::new(program);
    command
        .envs(common::sim_env("gfx942"))
        .env("RTL_SIM_DEVICES", "gfx942")
        .env("HSA_TOOLS_LIB", artifact("librtl_pmc.so"))
        .env("RTL_SIM_GROUND_TRUTH", dir.join("truth.jsonl"))
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", COUNTERS.join(","))
        .env("RTL_PMC_PLAN", &plan);
    command
}

/// `end_app COUNT MODE [handler]` under the interposer collecting [`COUNTERS`].
fn c_program(name: &str, count: usize, mode: &str, handler: bool) -> (Run, std::path::PathBuf) {
    let dir = scratch(&format!("end-c-{name}"));
    let truth = dir.join("truth.jsonl");
    let mut command = interposed(&end_app(), &dir);
    command.arg(count.to_string()).arg(mode);
    if handler {
        command.arg("handler");
    }
    let output = command.output().expect("end_app starts");
    let run = Run {
        output,
        records: common::records(&dir.join("out")),
        truth: common::ground_truth(&truth),
    };
    assert_eq!(
        run.stdout(),
        format!("end-app: {count} dispatches completed\n"),
        "{}",
        run.stderr()
    );
    (run, dir.join("out"))
}

#[test]
fn a_c_program_ending_by_exit_from_a_thread_right_after_its_wait_keeps_every_dispatch() {
    for attempt in 0..5 {
        let (run, out) = c_program(&format!("exit-thread-{attempt}"), 20, "exit-thread", false);
        assert_eq!(run.output.status.code(), Some(0), "{}", run.stderr());
        assert_eq!(run.truth.len(), 20);
        assert_eq!(assert_matches_truth(&run, &[COUNTERS]), 20, "run {attempt}");
        assert_eq!(tally(&out), (Ending::Unfinished, 20));
    }
}

#[test]
fn a_c_program_crashing_right_after_its_wait_keeps_every_dispatch() {
    for (attempt, (mode, signal, handler)) in [
        ("segv", libc::SIGSEGV, false),
        ("segv", libc::SIGSEGV, true),
        ("abort", libc::SIGABRT, false),
        ("abort", libc::SIGABRT, true),
        ("segv", libc::SIGSEGV, false),
    ]
    .into_iter()
    .enumerate()
    {
        let (run, out) = c_program(&format!("{mode}-{attempt}"), 20, mode, handler);
        assert_eq!(run.output.status.signal(), Some(signal), "{}", run.stderr());
        let caught = format!("end-app: own handler caught signal {signal}");
        assert_eq!(
            run.stderr().lines().filter(|l| *l == caught).count(),
            usize::from(handler),
            "{}",
            run.stderr()
        );
        assert_eq!(assert_matches_truth(&run, &[COUNTERS]), 20, "run {attempt}");
        assert_eq!(tally(&out), (Ending::Signal(signal), 20));
    }
}

#[test]
fn exit_from_a_thread_keeps_every_completed_dispatch() {
    // 4 threads x 2 queues x 4 kernels x 3 iterations: 96 dispatches, 5 runs.
    for attempt in 0..5 {
        let (run, out) = demo(
            &format!("exit-thread-{attempt}"),
            &[],
            &[
                "--threads",
                "4",
                "--queues",
                "2",
                "--iterations",
                "3",
                "--end",
                "exit-thread",
            ],
        );
        assert_eq!(run.output.status.code(), Some(0), "{}", run.stderr());
        assert_ended(&run, 96, "exit-thread");
        assert_eq!(run.truth.len(), 96);
        assert_eq!(assert_matches_truth(&run, &[COUNTERS]), 96, "run {attempt}");
        assert_eq!(tally(&out), (Ending::Unfinished, 96));
    }
}

/// A fatal signal after 2 threads' 16 dispatches: all recorded, the status the signal's.
fn fatal(name: &str, how: &str, signal: i32, own_handler: bool, env: &[(&str, &str)]) -> Run {
    let mut args = vec!["--threads", "2", "--iterations", "2", "--end", how];
    if own_handler {
        args.push("--own-handler");
    }
    let (run, out) = demo(name, env, &args);
    assert_eq!(
        run.output.status.signal(),
        Some(signal),
        "status {:?}\nstderr:\n{}",
        run.output.status,
        run.stderr()
    );
    assert_ended(&run, 16, how);
    let caught = format!("rtl-demo-app: own handler caught signal {signal}");
    assert_eq!(
        run.stderr().lines().filter(|l| *l == caught).count(),
        usize::from(own_handler),
        "{}",
        run.stderr()
    );
    assert_eq!(assert_matches_truth(&run, &[COUNTERS]), 16);
    let handled = env.is_empty();
    let ending = match handled {
        true => Ending::Signal(signal),
        false => Ending::Unfinished,
    };
    assert_eq!(tally(&out), (ending, 16));
    run
}

#[test]
fn a_segmentation_fault_keeps_every_completed_dispatch_and_ends_the_process_with_it() {
    fatal("segv", "segv", libc::SIGSEGV, false, &[]);
}

#[test]
fn the_applications_own_handler_runs_and_the_signal_still_ends_the_process() {
    fatal("segv-handler", "segv", libc::SIGSEGV, true, &[]);
    fatal("abort-handler", "abort", libc::SIGABRT, true, &[]);
}

#[test]
fn every_fatal_signal_keeps_every_completed_dispatch() {
    for (how, signal) in [
        ("abort", libc::SIGABRT),
        ("bus", libc::SIGBUS),
        ("fpe", libc::SIGFPE),
        ("ill", libc::SIGILL),
    ] {
        fatal(how, how, signal, false, &[]);
    }
}

#[test]
fn without_signal_handlers_records_are_kept_and_the_cause_is_unknown() {
    let off = [("RTL_PMC_DISABLE_SIGNAL_HANDLERS", "1")];
    fatal("segv-unhandled", "segv", libc::SIGSEGV, false, &off);
    fatal("abort-unhandled", "abort", libc::SIGABRT, true, &off);
}

#[test]
fn exec_after_the_work_keeps_every_completed_dispatch() {
    let (run, out) = demo("exec", &[], &["--queues", "2", "--end", "exec"]);
    assert_eq!(run.output.status.code(), Some(0), "{}", run.stderr());
    assert_ended(&run, 8, "exec");
    assert_eq!(assert_matches_truth(&run, &[COUNTERS]), 8);
    assert_eq!(tally(&out), (Ending::Unfinished, 8));
}

#[test]
fn sigkill_after_the_work_keeps_every_completed_dispatch() {
    let dir = scratch("end-sigkill");
    let truth = dir.join("truth.jsonl");
    let mut child = interposed(&artifact("rtl-demo-app"), &dir)
        .args(["--threads", "3", "--iterations", "2", "--end", "hang"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rtl-demo-app starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(
        line,
        "rtl-demo-app: 24 dispatches verified, ending by hang\n"
    );
    child.kill().unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.signal(), Some(libc::SIGKILL));
    let run = Run {
        output,
        records: common::records(&dir.join("out")),
        truth: common::ground_truth(&truth),
    };
    assert_eq!(assert_matches_truth(&run, &[COUNTERS]), 24);
    assert_eq!(tally(&dir.join("out")), (Ending::Unfinished, 24));
}
