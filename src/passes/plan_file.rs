//! The plan of one application run, as the CLI hands it to the interposer.
//!
//! The CLI resolves counter names, derived expressions and block limits before anything runs;
//! the interposer only needs what to program and which dispatches to wrap. This file carries
//! exactly that, as a small JSON document, so every profiled process reads it in microseconds
//! without loading the counter engine. The CLI writes one file per run and points
//! [`PLAN_ENV`] at it.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The environment variable holding the path of the current run's plan file.
pub const PLAN_ENV: &str = "RTL_PMC_PLAN";

/// The format version written by this build; files with another version are refused.
pub const PLAN_VERSION: u32 = 1;

/// Everything the interposer needs for one application run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunPlan {
    /// Always [`PLAN_VERSION`].
    pub version: u32,
    /// The 1-based number of this run among the runs of the profile.
    pub pass: u32,
    /// Where the interposer writes its per-process raw records.
    pub output_directory: String,
    /// Which dispatches are wrapped; the others pass through untouched.
    pub filters: KernelFilters,
    /// With several event groups per agent: filtered dispatches per group before rotating to
    /// the next (`pmc_group_interval`).
    pub group_interval: u64,
    /// What to program on each GPU architecture present.
    pub agents: Vec<AgentPlan>,
    /// Kernel replay: every group of an architecture is collected for each selected dispatch
    /// in this one run; absent for application replay (one group, or rotating groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<KernelReplay>,
}

/// How the interposer replays each selected dispatch once per event group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelReplay {
    /// Per event group (index as in [`AgentPlan::groups`]), the directory its records go to:
    /// `pass_N/` of the profile, so that every group's records look like a pass of application
    /// replay. Records of dispatches not collected at all go to the first.
    pub pass_directories: Vec<String>,
    /// The most bytes one dispatch's memory snapshot may take; a dispatch whose writable memory
    /// is larger runs once, with the first group.
    pub memory_budget: u64,
}

/// The event groups for every GPU of one architecture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentPlan {
    /// The gfx target name, e.g. `gfx942`.
    pub arch: String,
    /// One group: every wrapped dispatch programs it. Several: they rotate per dispatch (see
    /// [`group_for_dispatch`](super::group_for_dispatch)). None: this architecture collects
    /// nothing in this run.
    pub groups: Vec<EventGroup>,
}

/// One set of events programmed together, and the counters the user asked for from them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventGroup {
    /// The requested counters this group yields (for records and error messages).
    pub counters: Vec<String>,
    /// The events to program, in the order their values are recorded.
    pub events: Vec<PlanEvent>,
}

/// One hardware event, in the terms aqlprofile takes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanEvent {
    /// Block name, e.g. `SQ`.
    pub block: String,
    /// aqlprofile block-name enum value.
    pub block_id: u32,
    /// Event select number.
    pub event: u32,
    /// aqlprofile event flags (SQ accumulation resolution).
    pub flags: u32,
}

/// Which dispatches are wrapped. Empty fields select everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelFilters {
    /// Only kernels whose name matches (`regex` crate syntax, unanchored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_regex: Option<String>,
    /// Never kernels whose name matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_regex: Option<String>,
    /// Only these launches of each kernel, counted from 1 per kernel name (rocprofv3
    /// `kernel_iteration_range`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub iterations: Vec<IterationRange>,
    /// Only dispatches whose per-process index (from 0) is in this range (rocprof v1 `range:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatches: Option<DispatchRange>,
    /// Only GPUs with these indices among the GPUs, from 0 (rocprof v1 `gpu:`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<u32>,
    /// Only dispatches submitted while a roctx push/pop range whose message matches is open on
    /// the submitting thread (`--roctx-include-regex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roctx_include_regex: Option<String>,
    /// Only dispatches submitted between `roctxProfilerResume` and `roctxProfilerPause`; a
    /// process starts paused (rocprofv3's `--selected-regions`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub selected_regions: bool,
}

/// Launches `first..=last` of a kernel, counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IterationRange {
    /// First launch selected.
    pub first: u64,
    /// Last launch selected (inclusive).
    pub last: u64,
}

/// Dispatch indices `start..end` (`end` exclusive; open when absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatchRange {
    /// First index selected.
    pub start: u64,
    /// First index no longer selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<u64>,
}

impl KernelFilters {
    /// Whether the `launch`-th launch (from 1) of a kernel is selected by the iteration ranges.
    pub fn selects_iteration(&self, launch: u64) -> bool {
        self.iterations.is_empty()
            || self
                .iterations
                .iter()
                .any(|r| (r.first..=r.last).contains(&launch))
    }

    /// Whether the dispatch with per-process index `index` (from 0) is selected.
    pub fn selects_dispatch(&self, index: u64) -> bool {
        self.dispatches
            .is_none_or(|r| index >= r.start && r.end.is_none_or(|end| index < end))
    }

    /// Whether the GPU with index `gpu` among the GPUs (from 0) is selected.
    pub fn selects_gpu(&self, gpu: u32) -> bool {
        self.gpus.is_empty() || self.gpus.contains(&gpu)
    }
}

/// Why a plan file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The plan file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The text is not a plan.
    #[error("{path}: not an rtl-pmc plan: {source}")]
    Syntax {
        /// The plan file (or `<text>`).
        path: String,
        /// What the JSON parser reported.
        source: serde_json::Error,
    },
    /// Written by another version of rtl-pmc.
    #[error("{path}: plan version {found}, this build reads version {PLAN_VERSION}")]
    Version {
        /// The plan file (or `<text>`).
        path: String,
        /// The version found.
        found: u32,
    },
}

impl RunPlan {
    /// The plan as JSON text.
    pub fn to_json(&self) -> String {
        // A plan holds only strings and integers, which always serialize.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parses JSON text written by [`RunPlan::to_json`].
    pub fn from_json(text: &str) -> Result<RunPlan, PlanFileError> {
        Self::parse(text, "<text>")
    }

    fn parse(text: &str, path: &str) -> Result<RunPlan, PlanFileError> {
        let plan: RunPlan = serde_json::from_str(text).map_err(|source| PlanFileError::Syntax {
            path: path.to_string(),
            source,
        })?;
        if plan.version != PLAN_VERSION {
            return Err(PlanFileError::Version {
                path: path.to_string(),
                found: plan.version,
            });
        }
        Ok(plan)
    }

    /// Reads a plan file.
    pub fn read(path: &Path) -> Result<RunPlan, PlanFileError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PlanFileError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text, &shown)
    }

    /// Writes the plan file.
    pub fn write(&self, path: &Path) -> Result<(), PlanFileError> {
        std::fs::write(path, self.to_json()).map_err(|source| PlanFileError::Io {
            path: path.display().to_string(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RunPlan {
        RunPlan {
            version: PLAN_VERSION,
            pass: 2,
            output_directory: "/tmp/out/pass_2".into(),
            filters: KernelFilters {
                include_regex: Some(".*_kernel".into()),
                exclude_regex: Some("multiply".into()),
                iterations: vec![
                    IterationRange { first: 1, last: 2 },
                    IterationRange { first: 3, last: 4 },
                ],
                dispatches: Some(DispatchRange {
                    start: 5,
                    end: None,
                }),
                gpus: vec![0, 2],
                roctx_include_regex: Some("^step".into()),
                selected_regions: true,
            },
            group_interval: 4,
            agents: vec![AgentPlan {
                arch: "gfx942".into(),
                groups: vec![
                    EventGroup {
                        counters: vec!["SQ_WAVES".into(), "GRBM_COUNT".into()],
                        events: vec![
                            PlanEvent {
                                block: "GRBM".into(),
                                block_id: 3,
                                event: 0,
                                flags: 0,
                            },
                            PlanEvent {
                                block: "SQ".into(),
                                block_id: 6,
                                event: 4,
                                flags: 0,
                            },
                        ],
                    },
                    EventGroup {
                        counters: vec!["MeanOccupancyPerCU".into()],
                        events: vec![PlanEvent {
                            block: "SQ".into(),
                            block_id: 6,
                            event: 5,
                            flags: 2,
                        }],
                    },
                ],
            }],
            replay: Some(KernelReplay {
                pass_directories: vec!["/tmp/out/pass_1".into(), "/tmp/out/pass_2".into()],
                memory_budget: 1 << 30,
            }),
        }
    }

    #[test]
    fn round_trips_through_text_and_file() {
        let plan = sample();
        assert_eq!(RunPlan::from_json(&plan.to_json()).unwrap(), plan);
        let path = std::env::temp_dir().join(format!("rtl-pmc-plan-{}.json", std::process::id()));
        plan.write(&path).unwrap();
        assert_eq!(RunPlan::read(&path).unwrap(), plan);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn empty_filters_are_left_out() {
        let mut plan = sample();
        plan.filters = KernelFilters::default();
        let text = plan.to_json();
        assert!(text.contains("\"filters\": {}"), "{text}");
        assert_eq!(RunPlan::from_json(&text).unwrap(), plan);
        plan.replay = None;
        let text = plan.to_json();
        assert!(!text.contains("replay"), "{text}");
        assert_eq!(RunPlan::from_json(&text).unwrap(), plan);
    }

    #[test]
    fn other_versions_and_unknown_fields_are_refused() {
        let text = sample()
            .to_json()
            .replace("\"version\": 1", "\"version\": 9");
        assert_eq!(
            RunPlan::from_json(&text).unwrap_err().to_string(),
            "<text>: plan version 9, this build reads version 1"
        );
        let text = sample()
            .to_json()
            .replace("\"pass\": 2", "\"pass\": 2, \"extra\": 0");
        assert!(RunPlan::from_json(&text)
            .unwrap_err()
            .to_string()
            .starts_with("<text>: not an rtl-pmc plan: unknown field `extra`"));
    }

    #[test]
    fn filters_select_as_documented() {
        let f = sample().filters;
        let launches: Vec<u64> = (0..7).filter(|&n| f.selects_iteration(n)).collect();
        assert_eq!(launches, vec![1, 2, 3, 4]);
        assert!(!f.selects_dispatch(4) && f.selects_dispatch(5) && f.selects_dispatch(1 << 40));
        assert!(f.selects_gpu(2) && !f.selects_gpu(1));
        let all = KernelFilters::default();
        assert!(all.selects_iteration(99) && all.selects_dispatch(0) && all.selects_gpu(7));
        let bounded = KernelFilters {
            dispatches: Some(DispatchRange {
                start: 2,
                end: Some(4),
            }),
            ..KernelFilters::default()
        };
        let picked: Vec<u64> = (0..6).filter(|&n| bounded.selects_dispatch(n)).collect();
        assert_eq!(picked, vec![2, 3]);
    }
}
