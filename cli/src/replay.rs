//! Application or kernel replay for a profile (`--replay-mode`), and the one plan of a kernel
//! replay run.
//!
//! Application replay runs the application once per pass. Kernel replay runs it once: the
//! interposer runs each selected dispatch once per pass, saving the memory the kernel may write
//! before the first and restoring it before each later one, and writes each pass's records
//! into that pass's `pass_N/`, so every later step (conversion, joining, every output) is the
//! same as for application replay, and the passes of a dispatch are always the same dispatch.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use rtl_pmc::dispatch::records::Record;
use rtl_pmc::passes::plan_file::{KernelReplay, RunPlan};
use rtl_pmc_cli::args::{ReplayMode, DEFAULT_REPLAY_MEMORY_BUDGET};

use crate::costs::Measured;
use crate::error::CliError;
use crate::planning::ProfilePlan;
use rtl_pmc_profile::files::summary::{duration, grouped};

/// How a profile's passes are collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// One run of the application per pass.
    Application,
    /// One run; each selected dispatch runs once per pass.
    Kernel {
        /// The most bytes one dispatch's snapshot may take.
        budget: u64,
    },
}

/// The replay chosen for a profile, and what to tell the user about the choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The replay.
    pub replay: Replay,
    /// The mode asked for.
    pub asked: ReplayMode,
    /// Why, when the mode was `auto` or could not apply.
    pub reason: Option<String>,
    /// What both replays cost for this command, when measured.
    pub measured: Option<Measured>,
}

/// Why the runs of `profile` cannot share one run of the application, if they cannot.
fn cannot_share(profile: &ProfilePlan) -> Option<String> {
    if profile
        .runs
        .iter()
        .any(|r| r.agents.iter().any(|a| a.groups.len() > 1))
    {
        return Some(
            "pmc_groups rotate their groups over the dispatches of one run, while kernel replay collects every pass for each dispatch".into(),
        );
    }
    let first = &profile.runs.first()?.settings;
    let differs = profile.runs.iter().any(|r| {
        let s = &r.settings;
        s.filters != first.filters
            || s.truncate_kernels != first.truncate_kernels
            || s.mangled_kernels != first.mangled_kernels
            || s.preload != first.preload
    });
    differs.then(|| {
        "its jobs select or name dispatches differently (kernel filters, kernel-name options or preloaded libraries), so their passes cannot share one run".into()
    })
}

/// Chooses the replay of `profile` from its jobs' `--replay-mode`/`replay_mode`, and with
/// `auto` from what both replays were `measured` to cost for this command.
pub fn choose(profile: &ProfilePlan, measured: Option<&Measured>) -> Result<Choice, CliError> {
    let mut modes: Vec<ReplayMode> = Vec::new();
    for run in &profile.runs {
        let mode = run.settings.replay_mode.unwrap_or_default();
        if !modes.contains(&mode) {
            modes.push(mode);
        }
    }
    if modes.len() > 1 {
        return Err(CliError::input(format!(
            "the jobs writing to one output directory ask for different replay modes ({}); give them one",
            modes
                .iter()
                .map(|m| format!("{m:?}").to_lowercase())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let asked = modes.first().copied().unwrap_or_default();
    let budget = profile
        .runs
        .iter()
        .find_map(|r| r.settings.replay_memory_budget)
        .unwrap_or(DEFAULT_REPLAY_MEMORY_BUDGET);
    let passes = profile.runs.len();
    let application = |reason: Option<String>| Choice {
        replay: Replay::Application,
        asked,
        reason,
        measured: measured.cloned(),
    };
    let unshared = cannot_share(profile);
    let one_pass = || {
        Ok(application(Some(
            "application replay: one pass, nothing to replay".into(),
        )))
    };
    match asked {
        ReplayMode::Application => Ok(application(None)),
        ReplayMode::Kernel => match unshared {
            Some(reason) => Err(CliError::input(format!(
                "--replay-mode kernel: {reason}; use --replay-mode application"
            ))),
            None if passes <= 1 => one_pass(),
            None => Ok(Choice {
                replay: Replay::Kernel { budget },
                asked,
                reason: None,
                measured: measured.cloned(),
            }),
        },
        ReplayMode::Auto if passes <= 1 => one_pass(),
        ReplayMode::Auto => match unshared {
            Some(reason) => Ok(application(Some(format!(
                "application replay, {passes} runs of the application: {reason}"
            )))),
            None => {
                let estimates =
                    measured.and_then(|m| m.kernel_ns(passes).zip(m.application_ns(passes)));
                match estimates {
                    Some((kernel, app)) if app < kernel => Ok(application(Some(format!(
                        "application replay, {passes} runs of the application: measured for this command, about {} against {} for kernel replay",
                        duration(app as f64),
                        duration(kernel as f64)
                    )))),
                    _ => Ok(Choice {
                        replay: Replay::Kernel { budget },
                        asked,
                        reason: Some(format!(
                            "kernel replay: one run of the application instead of {passes}; each selected dispatch runs {passes} times, its memory saved before the first and restored before each later one{}",
                            match estimates {
                                Some((kernel, app)) => format!(
                                    " (measured for this command: about {} against {} for application replay)",
                                    duration(kernel as f64),
                                    duration(app as f64)
                                ),
                                None => " (not measured yet for this command)".into(),
                            }
                        )),
                        measured: measured.cloned(),
                    }),
                }
            }
        },
    }
}

impl Choice {
    /// The `--plan` lines of the choice: nothing for application replay asked for (the plan
    /// says it all), else the runs and passes per dispatch of both replays.
    pub fn render(&self, passes: usize) -> String {
        if self.asked == ReplayMode::Application {
            return String::new();
        }
        let mut out = format!(
            "replay mode {}: ",
            format!("{:?}", self.asked).to_lowercase()
        );
        match self.replay {
            Replay::Kernel { budget } => out.push_str(&format!(
                "kernel replay: 1 run of the application, {passes} passes per selected dispatch (memory budget {budget} bytes per dispatch); application replay: {passes} runs, 1 pass per dispatch per run\n"
            )),
            Replay::Application => out.push_str(&format!(
                "application replay: {passes} run{} of the application, 1 pass per dispatch per run{}\n",
                if passes == 1 { "" } else { "s" },
                self.reason
                    .as_deref()
                    .and_then(|r| r.split_once(": "))
                    .map(|(_, why)| format!(" ({why})"))
                    .unwrap_or_default()
            )),
        }
        if let Some(m) = &self.measured {
            out.push_str(&m.render(passes));
        }
        out
    }
}

/// The one plan of a kernel replay run: the first pass's settings, every pass's group per
/// architecture (group `i` is pass `i + 1`), and the pass directories records go to.
pub fn kernel_plan(profile: &ProfilePlan, pass_dirs: &[&Path], budget: u64) -> RunPlan {
    let mut plan = profile.runs[0].plan_file(pass_dirs[0]);
    for (a, agent) in plan.agents.iter_mut().enumerate() {
        agent.groups = profile
            .runs
            .iter()
            .filter_map(|run| run.agents.get(a))
            .flat_map(|ra| ra.groups.first())
            .map(crate::planning::event_group)
            .collect();
    }
    plan.replay = Some(KernelReplay {
        pass_directories: pass_dirs.iter().map(|d| d.display().to_string()).collect(),
        memory_budget: budget,
    });
    plan
}

/// A record read for pass `pass` of a kernel replay run (from its own `pass_N/` files and,
/// after the first pass, from `pass_1/`'s): the record when the pass collected it, pass 1's
/// record without counters when the pass did not (a dispatch run once, or on a GPU with fewer
/// passes), nothing for a dispatch left untouched or one this pass has a record of its own.
pub fn for_pass(mut record: Record, pass: u32) -> Option<Record> {
    let collected = record.replay.as_ref().map_or(1, |r| r.passes);
    if collected == 0 {
        return None;
    }
    if pass == 1 {
        return Some(record);
    }
    match record.group {
        Some(g) if g + 1 == pass => Some(record),
        Some(0) if collected < pass => {
            record.group = None;
            record.counters.clear();
            Some(record)
        }
        None => Some(record),
        _ => None,
    }
}

/// What kernel replay did in a run, from the records of pass 1.
#[derive(Debug, Default)]
pub struct Report {
    replayed: u64,
    saved: u64,
    restored: u64,
    largest: u64,
    /// Per reason: dispatches run once with pass 1's counters, per kernel.
    declined: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per reason: dispatches left untouched, per kernel.
    untouched: BTreeMap<String, BTreeMap<String, u64>>,
}

impl Report {
    /// Counts one record of pass 1 (before [`for_pass`]).
    pub fn observe(&mut self, record: &Record) {
        let Some(r) = &record.replay else { return };
        match (&r.declined, r.passes) {
            (None, _) => {
                self.replayed += 1;
                self.saved += r.saved;
                self.restored += r.restored;
                self.largest = self.largest.max(r.saved);
            }
            (Some(reason), 0) => {
                *self
                    .untouched
                    .entry(reason.clone())
                    .or_default()
                    .entry(record.kernel.clone())
                    .or_default() += 1
            }
            (Some(reason), _) => {
                *self
                    .declined
                    .entry(reason.clone())
                    .or_default()
                    .entry(record.kernel.clone())
                    .or_default() += 1
            }
        }
    }

    /// Dispatches replayed, and the mean bytes saved and restored per replayed dispatch.
    pub fn per_dispatch(&self) -> (u64, u64, u64) {
        let per = |total: u64| total.checked_div(self.replayed).unwrap_or(0);
        (self.replayed, per(self.saved), per(self.restored))
    }

    /// The summary's kernel replay section.
    pub fn render(&self, passes: usize) -> String {
        let mut out = format!("\nKernel replay (one run of the application, {passes} passes):\n");
        let (replayed, saved, restored) = self.per_dispatch();
        let _ = writeln!(
            out,
            "  replayed: {} dispatches, each run {passes} times; per dispatch {} bytes saved and {} restored on average, largest snapshot {} bytes",
            grouped(replayed),
            grouped(saved),
            grouped(restored),
            grouped(self.largest)
        );
        let list =
            |out: &mut String, what: &str, reasons: &BTreeMap<String, BTreeMap<String, u64>>| {
                let total: u64 = reasons.values().flat_map(|k| k.values()).sum();
                if total == 0 {
                    return;
                }
                let _ = writeln!(out, "  {what}: {} dispatches", grouped(total));
                for (reason, kernels) in reasons {
                    let names: Vec<String> = kernels
                        .iter()
                        .map(|(k, n)| format!("{} x {k}", grouped(*n)))
                        .collect();
                    let _ = writeln!(out, "    {}: {reason}", names.join(", "));
                }
            };
        list(
            &mut out,
            "declined, run once with pass 1's counters",
            &self.declined,
        );
        list(&mut out, "declined, not profiled", &self.untouched);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtl_pmc::dispatch::records::ReplayStats;

    fn record(group: Option<u32>, passes: Option<u32>, declined: Option<&str>) -> Record {
        Record {
            kernel: "k".into(),
            group,
            counters: group.map(|_| vec![vec![1]]).unwrap_or_default(),
            replay: passes.map(|passes| ReplayStats {
                passes,
                saved: 100,
                restored: 40,
                declined: declined.map(str::to_string),
            }),
            ..Record::default()
        }
    }

    #[test]
    fn each_pass_reads_its_own_records_and_pass_1_stands_in_for_what_it_lacks() {
        let replayed = |g| record(Some(g), Some(3), None);
        let once = record(Some(0), Some(1), Some("budget"));
        let untouched = record(None, Some(0), Some("batch"));
        let timing = record(None, None, None);
        // A GPU of an architecture with fewer groups than the profile has passes.
        let fewer = record(Some(0), Some(2), None);
        assert_eq!(for_pass(replayed(0), 1), Some(replayed(0)));
        assert_eq!(for_pass(untouched.clone(), 1), None);
        assert_eq!(for_pass(untouched, 2), None);
        assert_eq!(for_pass(replayed(1), 2), Some(replayed(1)));
        assert_eq!(for_pass(replayed(0), 2), None, "pass 2 has its own");
        let stripped = Record {
            group: None,
            counters: Vec::new(),
            ..once.clone()
        };
        assert_eq!(for_pass(once, 3), Some(stripped));
        assert_eq!(for_pass(timing.clone(), 2), Some(timing));
        assert_eq!(for_pass(fewer.clone(), 2), None);
        assert!(for_pass(fewer, 3).is_some_and(|r| r.group.is_none()));
    }

    #[test]
    fn the_report_counts_replayed_and_declined_dispatches() {
        let mut report = Report::default();
        report.observe(&record(Some(0), Some(3), None));
        report.observe(&Record {
            replay: Some(ReplayStats {
                passes: 3,
                saved: 300,
                restored: 60,
                declined: None,
            }),
            ..record(Some(0), None, None)
        });
        report.observe(&record(Some(0), Some(1), Some("too big")));
        report.observe(&record(None, Some(0), Some("a batch")));
        report.observe(&record(None, Some(0), Some("a batch")));
        report.observe(&record(Some(0), None, None));
        assert_eq!(report.per_dispatch(), (2, 200, 50));
        assert_eq!(
            report.render(3),
            "\nKernel replay (one run of the application, 3 passes):\n  replayed: 2 dispatches, each run 3 times; per dispatch 200 bytes saved and 50 restored on average, largest snapshot 300 bytes\n  declined, run once with pass 1's counters: 1 dispatches\n    1 x k: too big\n  declined, not profiled: 2 dispatches\n    2 x k: a batch\n"
        );
    }
}
