//! `rtl-dispatch-bench --replay`: the wall time of one profile with application replay against
//! kernel replay, for the same counter set, and the bytes kernel replay saves and restores per
//! dispatch.
//!
//! Each configuration profiles `rtl-demo-app` (its default four kernels, `--size` elements per
//! buffer, one thread and queue, `--startup-ms` of sleep before its first HSA call, as an
//! application that loads its data first) with `rtl-pmc --sim gfx942` and one `--pmc` group per
//! pass, once
//! with `--replay-mode application` and once with `--replay-mode kernel`, `--runs` times each,
//! and prints the median wall time of the whole `rtl-pmc` command:
//!
//! ```text
//! replay=<application|kernel> passes=<P> size=<elements> startup_ms=<S> dispatches=<D> wall_ms=<X> [ratio=<kernel/application> saved_bytes=<per dispatch> restored_bytes=<per dispatch>]
//! ```
//!
//! The bytes come from the cost file `rtl-pmc` writes after a run (`RTL_PMC_REPLAY_COSTS`).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// One counter per pass, each in a block of its own where possible.
const COUNTERS: [&str; 6] = [
    "SQ_WAVES",
    "GRBM_COUNT",
    "SQ_BUSY_CYCLES",
    "GRBM_GUI_ACTIVE",
    "SQ_INSTS_VALU",
    "TCC_HIT",
];

const USAGE: &str = "usage: rtl-dispatch-bench --replay [--runs N] [--passes 2,4] \
                     [--sizes 4096,1048576] [--startup-ms 0,1000] [--iterations N]";

/// What `--replay` measures.
pub struct Options {
    runs: usize,
    passes: Vec<usize>,
    sizes: Vec<u64>,
    startups: Vec<u64>,
    iterations: u64,
}

/// Parses the arguments after `--replay`; an error is one message for exit status 2.
pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        runs: 3,
        passes: vec![2, 4],
        sizes: vec![4096, 1 << 20],
        startups: vec![0, 1000],
        iterations: 25,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let numbers = |v: &str| crate::positive_integers(flag, v);
        match flag.as_str() {
            "--runs" => options.runs = numbers(value)?[0] as usize,
            "--iterations" => options.iterations = numbers(value)?[0],
            "--sizes" => options.sizes = numbers(value)?,
            "--startup-ms" => {
                options.startups = value
                    .split(',')
                    .map(|n| {
                        n.parse::<u64>()
                            .map_err(|_| format!("--startup-ms: `{n}` is not an integer"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--passes" => {
                options.passes = numbers(value)?.into_iter().map(|p| p as usize).collect();
                if let Some(p) = options.passes.iter().find(|&&p| p > COUNTERS.len()) {
                    return Err(format!("--passes: at most {} ({p} asked)", COUNTERS.len()));
                }
            }
            _ => return Err(format!("unknown argument `{flag}`\n{USAGE}")),
        }
    }
    Ok(options)
}

/// One profile: its wall time in ms and, for kernel replay, the cost file's figures.
fn profile(
    exe_dir: &Path,
    scratch: &Path,
    mode: &str,
    passes: usize,
    (size, startup_ms): (u64, u64),
    iterations: u64,
) -> Result<(f64, Option<serde_json::Value>), String> {
    let out = scratch.join("out");
    let costs = scratch.join("costs.json");
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(&costs);
    let mut command = Command::new(exe_dir.join("rtl-pmc"));
    command
        .args(["--sim", "gfx942", "-d"])
        .arg(&out)
        .args(["--replay-mode", mode, "--summary-output-file", "summary"])
        .env("RTL_PMC_REPLAY_COSTS", &costs);
    for counter in &COUNTERS[..passes] {
        command.args(["--pmc", counter]);
    }
    command
        .arg("--")
        .arg(exe_dir.join("rtl-demo-app"))
        .args(["--size", &size.to_string()])
        .args(["--startup-ms", &startup_ms.to_string()])
        .args(["--iterations", &iterations.to_string()]);
    let started = Instant::now();
    let output = command
        .output()
        .map_err(|e| format!("cannot run rtl-pmc: {e}"))?;
    let wall = started.elapsed().as_secs_f64() * 1e3;
    if !output.status.success() {
        return Err(format!(
            "rtl-pmc --replay-mode {mode} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let measured = std::fs::read_to_string(&costs)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v["commands"].as_object()?.values().next().cloned());
    Ok((wall, measured))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Runs every configuration and prints one line per replay.
pub fn run(options: &Options) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let exe_dir = exe.parent().ok_or("this program has no directory")?;
    let scratch = std::env::temp_dir().join(format!("rtl-replay-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    let started = Instant::now();
    let result = (|| -> Result<(), String> {
        let shapes = options
            .startups
            .iter()
            .flat_map(|&s| options.sizes.iter().map(move |&size| (size, s)));
        for (size, startup) in shapes {
            for &passes in &options.passes {
                // The demo's four kernels per iteration.
                let dispatches = 4 * options.iterations;
                let mut application = 0.0;
                for mode in ["application", "kernel"] {
                    let mut walls = Vec::new();
                    let mut measured = None;
                    for _ in 0..options.runs {
                        let shape = (size, startup);
                        let (wall, m) =
                            profile(exe_dir, &scratch, mode, passes, shape, options.iterations)?;
                        walls.push(wall);
                        measured = m;
                    }
                    let wall = median(walls);
                    let mut line = format!(
                        "replay={mode} passes={passes} size={size} startup_ms={startup} dispatches={dispatches} wall_ms={wall:.1}"
                    );
                    if mode == "application" {
                        application = wall;
                    } else {
                        let kernel = measured.as_ref().map(|m| &m["kernel"]);
                        let field = |name: &str| {
                            kernel
                                .and_then(|k| k[name].as_u64())
                                .map_or("?".to_string(), |v| v.to_string())
                        };
                        line.push_str(&format!(
                            " ratio={:.2} saved_bytes={} restored_bytes={}",
                            wall / application,
                            field("saved"),
                            field("restored")
                        ));
                    }
                    println!("{line}");
                }
            }
        }
        eprintln!("total wall time {:.1} s", started.elapsed().as_secs_f64());
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}
