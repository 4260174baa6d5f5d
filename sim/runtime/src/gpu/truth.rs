//! Ground truth: the exact values each dispatch contributes to each basic counter.

use std::io::Write;
use std::sync::{Mutex, OnceLock};

use super::arch::tables;
use super::model::{class_of, event_values, Class};
use super::{device_info, KernelRun};

/// Why ground truth could not be given for a counter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroundTruthError {
    /// The counter is not a basic counter of the architecture.
    #[error("{name} is not a basic counter of {arch}")]
    UnknownCounter {
        /// Architecture of the dispatch.
        arch: String,
        /// Requested counter name.
        name: String,
    },
    /// The counter's block is not in the architecture's block table.
    #[error("counter {name} of {arch} is in block {block}, which aqlprofile does not expose")]
    UnknownBlock {
        /// Architecture of the dispatch.
        arch: String,
        /// Counter name.
        name: String,
        /// Block name.
        block: String,
    },
}

/// A ground-truth counter name: a basic counter, or `NAME:LOW_RES` / `NAME:HIGH_RES` for an SQ
/// counter accumulated at that resolution (the counter may be `BLOCK/EVENT`, see [`raw_event`]);
/// the counter and the accumulation mode (0 none).
fn accumulation(name: &str) -> (&str, u32) {
    match name.rsplit_once(':') {
        Some((counter, "LOW_RES")) => (counter, 1),
        Some((counter, "HIGH_RES")) => (counter, 2),
        _ => (name, 0),
    }
}

/// `BLOCK/EVENT` (`SQ/337`): a block's hardware event by number, named or not by the catalog.
fn raw_event(name: &str) -> Option<(&str, u32)> {
    let (block, event) = name.split_once('/')?;
    Some((block, event.parse().ok()?))
}

/// The values dispatch `run` contributes to each named basic counter (or accumulated SQ counter,
/// `NAME:LOW_RES` or `NAME:HIGH_RES`), per sample in aqlprofile order (v2 sample id: XCC, then
/// instance, then SE/SA/WGP), on the topology the model uses for its device. Reading a counting
/// window that covers exactly this dispatch, and nothing else, gives these numbers.
pub fn ground_truth(
    run: &KernelRun,
    counters: &[&str],
) -> Result<Vec<(String, Vec<u64>)>, GroundTruthError> {
    let info = device_info(run.device_index, run.arch);
    let dispatch = run.dispatch(&info);
    counters
        .iter()
        .map(|&asked| {
            let (name, accum) = accumulation(asked);
            let t = tables();
            let (block_name, event) = match raw_event(name) {
                Some(raw) => raw,
                None => {
                    let counter = t.counter(run.arch, name).ok_or_else(|| {
                        GroundTruthError::UnknownCounter {
                            arch: run.arch.to_string(),
                            name: name.to_string(),
                        }
                    })?;
                    (counter.block.as_str(), counter.event)
                }
            };
            let block = t.block_by_name(run.arch, block_name).ok_or_else(|| {
                GroundTruthError::UnknownBlock {
                    arch: run.arch.to_string(),
                    name: name.to_string(),
                    block: block_name.to_string(),
                }
            })?;
            // Names that alias one hardware event read what the hardware counts: the values of
            // the event's first name, as the GPU names a programmed event (none for an event
            // only a counter file names).
            let hardware = t
                .counter_name(run.arch, block_name, event)
                .or_else(|| raw_event(name).is_none().then_some(name));
            let values = match class_of(hardware) {
                Class::Window if accum == 0 => {
                    vec![dispatch.cycles; block.layout(&info.geometry).positions()]
                }
                _ => event_values(&dispatch, &info.geometry, block, hardware, event, accum),
            };
            Ok((asked.to_string(), values))
        })
        .collect()
}

struct Config {
    path: Option<String>,
    counters: Option<Vec<String>>,
}

fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| Config {
        path: std::env::var("RTL_SIM_GROUND_TRUTH")
            .ok()
            .filter(|p| !p.is_empty()),
        counters: std::env::var("RTL_SIM_GROUND_TRUTH_COUNTERS")
            .ok()
            .map(|v| {
                v.split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            }),
    })
}

/// One ground-truth JSON line for `run` with the counters in `names` that the architecture has.
pub fn line(run: &KernelRun, names: &[&str]) -> String {
    let known: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| {
            let name = accumulation(n).0;
            match raw_event(name) {
                Some((block, _)) => tables().block_by_name(run.arch, block).is_some(),
                None => tables().counter(run.arch, name).is_some(),
            }
        })
        .collect();
    let values = ground_truth(run, &known).unwrap_or_default();
    let counters: Vec<String> = values
        .iter()
        .map(|(name, v)| {
            let list: Vec<String> = v.iter().map(u64::to_string).collect();
            format!(
                "{}:[{}]",
                serde_json::Value::from(name.as_str()),
                list.join(",")
            )
        })
        .collect();
    let variation = run.variation.map_or(String::new(), |v| {
        format!(
            "\"behaviour\":\"{}\",\"scale\":{},",
            v.behaviour.name(),
            v.scale
        )
    });
    format!(
        "{{\"pid\":{},\"agent\":{},\"queue\":{},\"kernel\":{},\"dispatch\":{},\"start\":{},\"end\":{},\"computed\":{},{variation}\"counters\":{{{}}}}}\n",
        std::process::id(),
        run.agent_node_id,
        run.queue_id,
        serde_json::Value::from(run.kernel),
        run.dispatch_index,
        run.start_ns,
        run.end_ns,
        run.computed,
        counters.join(",")
    )
}

/// Problems the command processor reported in this process.
static PROBLEMS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many packets the simulated GPU could not execute in this process (each is also on stderr
/// and, with `RTL_SIM_GROUND_TRUTH`, a `"problem"` line of the ground-truth log).
pub fn problems() -> u64 {
    PROBLEMS.load(std::sync::atomic::Ordering::SeqCst)
}

/// Problems per device index, for [`problems_on`].
static PROBLEMS_ON: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// How many packets device `device` could not execute in this process.
pub fn problems_on(device: u32) -> u64 {
    let counts = PROBLEMS_ON.lock().unwrap_or_else(|p| p.into_inner());
    counts.get(device as usize).copied().unwrap_or(0)
}

/// Appends a problem line (`{"pid","device","problem","packet":[dwords]}`) to the ground-truth
/// log, if there is one.
pub(super) fn record_problem(device: u32, what: &str, packet: &[u32]) {
    PROBLEMS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    {
        let mut counts = PROBLEMS_ON.lock().unwrap_or_else(|p| p.into_inner());
        if counts.len() <= device as usize {
            counts.resize(device as usize + 1, 0);
        }
        counts[device as usize] += 1;
    }
    let Some(path) = &config().path else { return };
    let line = format!(
        "{{\"pid\":{},\"device\":{device},\"problem\":{},\"packet\":{}}}\n",
        std::process::id(),
        serde_json::Value::from(what),
        serde_json::Value::from(packet.to_vec()),
    );
    append(path, &line);
}

fn append(path: &str, text: &str) {
    static FILE_LOCK: Mutex<()> = Mutex::new(());
    let _guard = FILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        eprintln!("rtl-sim: cannot append ground truth to {path}: {e}");
    }
}

/// Appends the ground-truth line of `run` if `RTL_SIM_GROUND_TRUTH` names a file.
pub(super) fn record(run: &KernelRun) {
    let cfg = config();
    let Some(path) = &cfg.path else { return };
    let names: Vec<&str> = match &cfg.counters {
        Some(list) => list.iter().map(String::as_str).collect(),
        None => tables()
            .basic_counters(run.arch)
            .map(|c| c.name.as_str())
            .collect(),
    };
    append(path, &line(run, &names));
}
