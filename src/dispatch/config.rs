//! What the interposer is asked to do, from the CLI's plan file or from environment variables.
//!
//! | variable | meaning |
//! |---|---|
//! | `RTL_PMC_PLAN` | path of the run plan written by the CLI ([`crate::passes::plan_file`]) |
//! | `RTL_PMC_OUTPUT` | without a plan: output directory; `%p` pid, `%h` host name, `%r` MPI rank, `%%` a `%` |
//! | `RTL_PMC_COUNTERS` | without a plan: counters to collect (names separated by spaces or commas) |
//! | `RTL_PMC_MANGLED_KERNELS=1` | keep mangled kernel names |
//! | `RTL_PMC_TRUNCATE_KERNELS=1` | reduce kernel names to their base name |
//! | `RTL_PMC_KERNEL_RENAME=1` | name each kernel dispatch after the innermost roctx push/pop range open on the submitting thread |
//! | `RTL_PMC_AQLPROFILE_API=v2\|legacy` | use this aqlprofile API only |
//! | `RTL_PMC_REPLAY_STALL=SECONDS` | kernel replay: how long a replayed dispatch waits for one step before it is reported (default 30) |
//! | `RTL_PMC_SERIALIZE=0` | diagnosis only: let counted kernels of one GPU overlap each other and other kernels (values become wrong) |

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use super::counters::ApiKind;
use super::kernel_names::NameOptions;
use crate::passes::plan_file::{KernelFilters, KernelReplay, PlanEvent, RunPlan, PLAN_ENV};

/// Output directory pattern of environment-variable mode.
pub const OUTPUT_ENV: &str = "RTL_PMC_OUTPUT";
/// Counters of environment-variable mode.
pub const COUNTERS_ENV: &str = "RTL_PMC_COUNTERS";
/// `1`: keep mangled kernel names (`--mangled-kernels`).
pub const MANGLED_KERNELS_ENV: &str = "RTL_PMC_MANGLED_KERNELS";
/// `1`: reduce kernel names to their base name (`--truncate-kernels`).
pub const TRUNCATE_KERNELS_ENV: &str = "RTL_PMC_TRUNCATE_KERNELS";

/// `1`: name dispatches after their innermost roctx range (`--kernel-rename`).
pub const KERNEL_RENAME_ENV: &str = "RTL_PMC_KERNEL_RENAME";
/// `1` (`--disable-signal-handlers`): install no fatal-signal handlers.
pub const DISABLE_SIGNAL_HANDLERS_ENV: &str = "RTL_PMC_DISABLE_SIGNAL_HANDLERS";

/// Seconds a replayed dispatch may wait for one step before it is reported.
pub const REPLAY_STALL_ENV: &str = "RTL_PMC_REPLAY_STALL";

/// How long a replayed dispatch may wait for one step before it is reported, when
/// [`REPLAY_STALL_ENV`] does not say.
pub const REPLAY_STALL: Duration = Duration::from_secs(30);

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The plan file is unusable.
    #[error(transparent)]
    Plan(#[from] crate::passes::plan_file::PlanFileError),
    /// A variable has a value the interposer does not understand.
    #[error("{name}={value:?}: {problem}")]
    Variable {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        problem: &'static str,
    },
}

/// Everything the interposer was asked to do.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Where `<pid>.rtlraw` goes.
    pub output_directory: PathBuf,
    /// Which dispatches are wrapped.
    pub filters: KernelFilters,
    /// Wrapped dispatches per event group before rotating.
    pub group_interval: u64,
    /// Event groups per gfx architecture; an architecture without groups is timed only.
    pub groups: HashMap<String, Vec<Vec<PlanEvent>>>,
    /// Counter names to resolve per architecture (environment-variable mode).
    pub counter_names: Vec<String>,
    /// Kernel name style.
    pub names: NameOptions,
    /// Name each dispatch inside a roctx push/pop range after the innermost one.
    pub kernel_rename: bool,
    /// Install no fatal-signal handlers ([`super::signals`]).
    pub disable_signal_handlers: bool,
    /// Force one aqlprofile API.
    pub api: Option<ApiKind>,
    /// Environment-variable mode: write finished results at unload.
    pub env_mode: bool,
    /// Keep every other dispatch of a GPU out of a counted dispatch's run (always, but for
    /// diagnosis).
    pub serialize: bool,
    /// Kernel replay: every group for each selected dispatch, records per group.
    pub replay: Option<KernelReplay>,
    /// How long a replayed dispatch may wait for one step before it is reported.
    pub replay_stall: Duration,
}

fn flag(get: &dyn Fn(&str) -> Option<String>, name: &str) -> bool {
    get(name).is_some_and(|v| matches!(v.trim(), "1" | "on" | "yes" | "true"))
}

/// The stall limit of kernel replay: [`REPLAY_STALL_ENV`] in seconds (a positive number, with
/// a fraction if need be), else [`REPLAY_STALL`].
pub fn replay_stall(get: &dyn Fn(&str) -> Option<String>) -> Result<Duration, ConfigError> {
    let Some(value) = get(REPLAY_STALL_ENV).filter(|v| !v.trim().is_empty()) else {
        return Ok(REPLAY_STALL);
    };
    value
        .trim()
        .parse::<f64>()
        .ok()
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .filter(|limit| !limit.is_zero())
        .ok_or(ConfigError::Variable {
            name: REPLAY_STALL_ENV,
            value,
            problem: "expected a positive number of seconds, such as 30 or 0.5",
        })
}

/// Expands `%p` (pid), `%h` (host name), `%r` (MPI rank, 0 when unknown) and `%%`.
pub fn expand_output(pattern: &str, pid: u32, host: &str, rank: u32) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('p') => out.push_str(&pid.to_string()),
            Some('h') => out.push_str(host),
            Some('r') => out.push_str(&rank.to_string()),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// The MPI rank from the usual launcher variables, 0 without one.
pub fn mpi_rank(get: &dyn Fn(&str) -> Option<String>) -> u32 {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "SLURM_PROCID",
        "MV2_COMM_WORLD_RANK",
    ]
    .iter()
    .find_map(|name| get(name).and_then(|v| v.trim().parse().ok()))
    .unwrap_or(0)
}

/// The host name, `localhost` if unknown.
pub fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: gethostname writes at most `len` bytes into the buffer.
    let ok =
        unsafe { libc::gethostname(buffer.as_mut_ptr() as *mut libc::c_char, buffer.len()) } == 0;
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(0);
    if ok && end > 0 {
        String::from_utf8_lossy(&buffer[..end]).into_owned()
    } else {
        "localhost".into()
    }
}

impl Config {
    /// Reads the configuration through `get` (the environment); `Ok(None)` when neither a plan
    /// nor environment-variable mode is asked for.
    pub fn from_env(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<Config>, ConfigError> {
        let mut config = Config {
            names: NameOptions {
                mangled: flag(get, MANGLED_KERNELS_ENV),
                truncate: flag(get, TRUNCATE_KERNELS_ENV),
            },
            kernel_rename: flag(get, KERNEL_RENAME_ENV),
            disable_signal_handlers: flag(get, DISABLE_SIGNAL_HANDLERS_ENV),
            serialize: get("RTL_PMC_SERIALIZE").is_none_or(|v| v.trim() != "0"),
            replay_stall: replay_stall(get)?,
            group_interval: 1,
            ..Config::default()
        };
        if let Some(value) = get("RTL_PMC_AQLPROFILE_API") {
            config.api = match value.trim() {
                "v2" => Some(ApiKind::V2),
                "legacy" => Some(ApiKind::Legacy),
                "" => None,
                _ => {
                    return Err(ConfigError::Variable {
                        name: "RTL_PMC_AQLPROFILE_API",
                        value,
                        problem: "expected v2 or legacy",
                    })
                }
            };
        }
        if let Some(path) = get(PLAN_ENV).filter(|p| !p.trim().is_empty()) {
            let plan = RunPlan::read(std::path::Path::new(path.trim()))?;
            config.output_directory = PathBuf::from(&plan.output_directory);
            config.filters = plan.filters;
            config.group_interval = plan.group_interval.max(1);
            let replay = plan.replay.is_some();
            config.replay = plan.replay;
            for agent in plan.agents {
                // Kernel replay keeps group indices, which name the pass directories.
                let groups: Vec<Vec<PlanEvent>> = agent
                    .groups
                    .into_iter()
                    .map(|g| g.events)
                    .filter(|e| replay || !e.is_empty())
                    .collect();
                if !groups.is_empty() {
                    config.groups.insert(agent.arch, groups);
                }
            }
            return Ok(Some(config));
        }
        let output = get(OUTPUT_ENV).filter(|v| !v.trim().is_empty());
        let counters = get(COUNTERS_ENV).filter(|v| !v.trim().is_empty());
        if output.is_none() && counters.is_none() {
            return Ok(None);
        }
        let pattern = output.unwrap_or_else(|| "rtl-pmc-%h-%p".into());
        let pid = std::process::id();
        config.output_directory = PathBuf::from(expand_output(
            pattern.trim(),
            pid,
            &host_name(),
            mpi_rank(get),
        ));
        config.counter_names = counters
            .unwrap_or_default()
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        config.env_mode = true;
        Ok(Some(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::plan_file::{AgentPlan, EventGroup, PLAN_VERSION};

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn output_patterns_expand() {
        assert_eq!(
            expand_output("out/%h/%p-%r%%x%q%", 42, "node1", 3),
            "out/node1/42-3%x%q%"
        );
        assert_eq!(mpi_rank(&env(&[("PMI_RANK", "5")])), 5);
        assert_eq!(mpi_rank(&env(&[])), 0);
    }

    #[test]
    fn nothing_asked_means_no_configuration() {
        assert!(Config::from_env(&env(&[])).unwrap().is_none());
        assert!(Config::from_env(&env(&[("RTL_PMC_MANGLED_KERNELS", "1")]))
            .unwrap()
            .is_none());
    }

    #[test]
    fn environment_mode_reads_counters_and_output() {
        let c = Config::from_env(&env(&[
            ("RTL_PMC_COUNTERS", "SQ_WAVES, GRBM_COUNT  SQ_BUSY_CYCLES"),
            ("RTL_PMC_OUTPUT", "/tmp/x-%r"),
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("RTL_PMC_TRUNCATE_KERNELS", "1"),
            ("RTL_PMC_AQLPROFILE_API", "legacy"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            c.counter_names,
            ["SQ_WAVES", "GRBM_COUNT", "SQ_BUSY_CYCLES"]
        );
        assert_eq!(c.output_directory, PathBuf::from("/tmp/x-2"));
        assert!(c.env_mode && c.names.truncate && !c.names.mangled && c.serialize);
        assert_eq!(c.api, Some(ApiKind::Legacy));
        let e = Config::from_env(&env(&[("RTL_PMC_AQLPROFILE_API", "v3")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "RTL_PMC_AQLPROFILE_API=\"v3\": expected v2 or legacy"
        );
    }

    #[test]
    fn the_replay_stall_limit_is_seconds_and_30_by_default() {
        let stall = |value: &str| replay_stall(&env(&[(REPLAY_STALL_ENV, value)]));
        assert_eq!(replay_stall(&env(&[])).unwrap(), Duration::from_secs(30));
        assert_eq!(stall(" ").unwrap(), Duration::from_secs(30));
        assert_eq!(stall("0.25").unwrap(), Duration::from_millis(250));
        assert_eq!(stall(" 90 ").unwrap(), Duration::from_secs(90));
        for bad in ["0", "-1", "abc", "inf", "NaN", "1e300", "30s"] {
            assert_eq!(
                stall(bad).unwrap_err().to_string(),
                format!("RTL_PMC_REPLAY_STALL={bad:?}: expected a positive number of seconds, such as 30 or 0.5"),
                "{bad}"
            );
        }
        let c = Config::from_env(&env(&[
            ("RTL_PMC_COUNTERS", "SQ_WAVES"),
            (REPLAY_STALL_ENV, "2.5"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(c.replay_stall, Duration::from_millis(2500));
    }

    #[test]
    fn plans_give_groups_per_architecture() {
        let event = PlanEvent {
            block: "SQ".into(),
            block_id: 6,
            event: 4,
            flags: 0,
        };
        let plan = RunPlan {
            version: PLAN_VERSION,
            pass: 1,
            output_directory: "/tmp/out/pass_1".into(),
            filters: KernelFilters::default(),
            group_interval: 0,
            agents: vec![
                AgentPlan {
                    arch: "gfx942".into(),
                    groups: vec![EventGroup {
                        counters: vec!["SQ_WAVES".into()],
                        events: vec![event.clone()],
                    }],
                },
                AgentPlan {
                    arch: "gfx90a".into(),
                    groups: vec![],
                },
            ],
            replay: None,
        };
        let path = std::env::temp_dir().join(format!("rtl-pmc-config-{}.json", std::process::id()));
        plan.write(&path).unwrap();
        let c = Config::from_env(&env(&[(PLAN_ENV, path.to_str().unwrap())]))
            .unwrap()
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(c.groups.len(), 1);
        assert_eq!(c.groups["gfx942"], vec![vec![event]]);
        assert_eq!(c.group_interval, 1);
        assert_eq!(c.output_directory, PathBuf::from("/tmp/out/pass_1"));
        assert!(!c.env_mode);
        let e = Config::from_env(&env(&[(PLAN_ENV, "/nonexistent/plan.json")])).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/plan.json: "), "{e}");
    }
}
