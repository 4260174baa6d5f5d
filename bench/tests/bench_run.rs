//! `rtl-dispatch-bench` on the simulated ROCm: every configuration's records hold every
//! dispatch, on every GPU and queue, with the samples per dispatch of its counter set; bad
//! arguments are one exact message and exit status 2.
//!
//! Needs `cargo build --workspace` first (the bench runs `rtl-pmc`, `librtl_pmc.so` and the
//! simulated runtime from its own directory).

use std::process::{Command, Output};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtl-dispatch-bench"))
        .args(args)
        .output()
        .expect("the bench runs")
}

/// The value of `name=` in `line`.
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

#[test]
fn eight_gpus_two_queues_per_thread_every_mode() {
    let out = bench(&[
        "--runs",
        "1",
        "--threads",
        "8",
        "--queues",
        "2",
        "--gpus",
        "8",
        "--dispatches",
        "1000",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    // Records that miss a dispatch, GPU or queue would be a warning.
    assert!(!stderr.contains("warning"), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let modes: Vec<&str> = lines.iter().map(|l| field(l, "mode")).collect();
    assert_eq!(
        modes,
        ["none", "timing", "counters2", "counters8", "counters16"]
    );
    for line in &lines {
        assert_eq!(field(line, "threads"), "8");
        assert_eq!(field(line, "queues"), "2");
        assert_eq!(field(line, "gpus"), "8");
        // Rounded up to whole batches of 64 per thread.
        assert_eq!(field(line, "dispatches"), "1024");
    }
    // Samples per dispatch on the MI300X-shaped gfx942 (8 XCCs of 4 shader engines): SQ_WAVES
    // per shader engine and GRBM_COUNT per XCC, then half and all of counters16.
    let samples: Vec<Option<&str>> = lines
        .iter()
        .map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("samples_per_dispatch="))
        })
        .collect();
    assert_eq!(
        samples,
        [None, Some("0"), Some("40"), Some("1064"), Some("2128")]
    );
}

#[test]
fn bad_arguments_exit_2_before_anything_runs() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["--gpus", "16"],
            "rtl-dispatch-bench: --gpus: `16`: the simulated systems have at most 8 GPUs\n",
        ),
        (
            &["--scaling", "--dispatches", "10"],
            "rtl-dispatch-bench: --dispatches cannot be combined with --scaling, which measures \
             a fixed set of configurations (only --runs and --keep apply)\n",
        ),
        (
            &["--child", "1"],
            "rtl-dispatch-bench: usage: rtl-dispatch-bench --child THREADS DISPATCHES \
             [QUEUES [GPUS]] (positive integers)\n",
        ),
        (
            &["--replay", "--passes", "7"],
            "rtl-dispatch-bench: --passes: at most 6 (7 asked)\n",
        ),
    ];
    for (args, message) in cases {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), message, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
