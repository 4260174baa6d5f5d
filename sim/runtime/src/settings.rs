//! The simulator's environment variables (documented in `sim/README.md`), read once.

use crate::hsa::{TableRelease, TABLE_RELEASES};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// How intercept queues hand packets to their handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterceptMode {
    /// One handler call per packet (ROCm ≤ 6.3).
    Packet,
    /// One handler call per doorbell with every new packet (ROCm 7).
    Batch,
}

/// Settings from the environment.
#[derive(Debug)]
pub struct Settings {
    /// The ROCm release whose table layout the runtime presents (`RTL_SIM_ROCM`).
    pub release: &'static TableRelease,
    /// Intercept mode (`RTL_SIM_INTERCEPT`, default from the release).
    pub intercept: InterceptMode,
    /// `RTL_SIM_NO_INTERCEPT=1`: intercept queue creation fails.
    pub no_intercept: bool,
    /// `RTL_SIM_FAIL_QUEUE_CREATE=N`.
    pub fail_queue_create: Option<u64>,
    /// `RTL_SIM_FAIL_SIGNAL_CREATE=N`.
    pub fail_signal_create: Option<u64>,
    /// `RTL_SIM_SLOW=F`: kernel duration factor.
    pub slow: f64,
    /// `RTL_SIM_VARIATION=SEED[:STREAM]`: per-dispatch variation of the value model (seed,
    /// stream; stream 0 when not given).
    pub variation: Option<(u64, u64)>,
    /// This process's run index, counted in `RTL_SIM_RUN_FILE` (0 without it).
    pub run: u64,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn warn(message: String) {
    eprintln!("rtl-sim: {message}");
}

impl Settings {
    fn from_env() -> Settings {
        let latest = &TABLE_RELEASES[TABLE_RELEASES.len() - 1];
        let release = match env("RTL_SIM_ROCM") {
            None => latest,
            Some(v) => TableRelease::find(&v).unwrap_or_else(|| {
                warn(format!(
                    "RTL_SIM_ROCM={v} is not a known ROCm release; using {}",
                    latest.rocm
                ));
                latest
            }),
        };
        let default_mode = if release.amd_ext_size > 584 {
            InterceptMode::Batch
        } else {
            InterceptMode::Packet
        };
        let intercept = match env("RTL_SIM_INTERCEPT").as_deref() {
            None => default_mode,
            Some("packet") => InterceptMode::Packet,
            Some("batch") => InterceptMode::Batch,
            Some(other) => {
                warn(format!(
                    "RTL_SIM_INTERCEPT={other} must be `packet` or `batch`; using the default"
                ));
                default_mode
            }
        };
        let count = |name: &str| {
            env(name).and_then(|v| match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    warn(format!("{name}={v} must be a positive integer; ignored"));
                    None
                }
            })
        };
        let slow = match env("RTL_SIM_SLOW") {
            None => 1.0,
            Some(v) => match v.trim().parse::<f64>() {
                Ok(f) if f.is_finite() && f > 0.0 => f,
                _ => {
                    warn(format!(
                        "RTL_SIM_SLOW={v} must be a positive number; using 1"
                    ));
                    1.0
                }
            },
        };
        Settings {
            release,
            intercept,
            no_intercept: env("RTL_SIM_NO_INTERCEPT").is_some_and(|v| v.trim() != "0"),
            fail_queue_create: count("RTL_SIM_FAIL_QUEUE_CREATE"),
            fail_signal_create: count("RTL_SIM_FAIL_SIGNAL_CREATE"),
            slow,
            variation: env("RTL_SIM_VARIATION").and_then(|v| {
                let (seed, stream) = v.trim().split_once(':').unwrap_or((v.trim(), "0"));
                match (seed.parse::<u64>(), stream.parse::<u64>()) {
                    (Ok(seed), Ok(stream)) => Some((seed, stream)),
                    _ => {
                        warn(format!(
                            "RTL_SIM_VARIATION={v} must be SEED or SEED:STREAM (unsigned integers); ignored"
                        ));
                        None
                    }
                }
            }),
            run: env("RTL_SIM_RUN_FILE").map_or(0, |path| next_run(&path)),
        }
    }
}

/// Reads the run index in `path` (0 when the file is missing) and writes the next one, so each
/// process of a sequence of runs gets its own.
fn next_run(path: &str) -> u64 {
    let run = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0);
    if let Err(e) = std::fs::write(path, format!("{}\n", run + 1)) {
        warn(format!("RTL_SIM_RUN_FILE={path}: cannot write: {e}"));
    }
    run
}

/// The process's settings.
pub fn settings() -> &'static Settings {
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    SETTINGS.get_or_init(Settings::from_env)
}

/// Counts one creation; true if it is the `fail_at`-th (1-based) and must fail.
pub fn injected_failure(counter: &AtomicU64, fail_at: Option<u64>) -> bool {
    let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
    fail_at == Some(n)
}
