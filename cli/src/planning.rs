//! From jobs to runs: resolves counter names with each architecture's catalog, asks the planner
//! for passes, and lays the passes of every architecture out as application runs.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rtl_pmc::dispatch::config::{
    DISABLE_SIGNAL_HANDLERS_ENV, KERNEL_RENAME_ENV, MANGLED_KERNELS_ENV, TRUNCATE_KERNELS_ENV,
};
use rtl_pmc::passes::plan_file::{AgentPlan, EventGroup, PlanEvent, RunPlan, PLAN_VERSION};
use rtl_pmc::passes::{
    plan_group, refusal, Counter, Event, GroupPlan, Limits, PlanError, PlanOptions,
};
use rtl_pmc_counters::{Catalog, CounterDef, CounterKind, Error as EngineError, HwEvent, Origin};

use crate::error::CliError;
use crate::inputs::{Collection, CounterName, Job, Settings};

/// The counter catalog of one architecture, extra counters included.
pub struct ArchCatalog {
    /// The catalog.
    pub catalog: Catalog,
    limits: Limits,
}

/// The variable naming the directory whose `counter_defs.yaml` holds rocprofv3's counter
/// definitions (rocprof-compute gives its own this way).
pub const METRICS_PATH_ENV: &str = "ROCPROFILER_METRICS_PATH";

/// The counter definitions file `ROCPROFILER_METRICS_PATH` names (read through `lookup`):
/// `counter_defs.yaml` in that directory, which must exist, as rocprofv3 requires.
pub fn metrics_file(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Option<PathBuf>, CliError> {
    let Some(dir) = lookup(METRICS_PATH_ENV).filter(|d| !d.trim().is_empty()) else {
        return Ok(None);
    };
    let file = Path::new(&dir).join("counter_defs.yaml");
    match file.is_file() {
        true => Ok(Some(file)),
        false => Err(CliError::input(format!(
            "{METRICS_PATH_ENV}={dir}: no counter_defs.yaml there; point it at the directory holding that file, or unset it"
        ))),
    }
}

impl ArchCatalog {
    /// Defines the counters of `jobs` written in rocprof's forms (`NAME[i]`, `NAME_ACCUM`; see
    /// [`Catalog::add_rocprof_form`]); an error names where the counter was written.
    pub fn add_rocprof_forms(&mut self, jobs: &[Job]) -> Result<(), CliError> {
        for job in jobs {
            let names: Vec<&CounterName> = match &job.collection {
                Collection::Passes(names) => names.iter().collect(),
                Collection::Rotating { groups, .. } => groups.iter().flatten().collect(),
            };
            for name in names {
                self.catalog
                    .add_rocprof_form(&name.name)
                    .map_err(|e| CliError::input(format!("{}: {e}", name.at)))?;
            }
        }
        Ok(())
    }

    /// Defines the channel counters (`TCC_HIT[17]`) of `names` as rocprof-compute does on a
    /// GPU with `xcds` XCDs; an error names the flag.
    pub fn add_channel_counters(&mut self, names: &[String], xcds: u32) -> Result<(), CliError> {
        for name in names.iter().filter(|n| n.ends_with(']')) {
            self.catalog
                .add_channel_counter(name, xcds)
                .map_err(|e| CliError::input(format!("--block: {e}")))?;
        }
        Ok(())
    }

    /// The built-in catalog of `arch` plus the `-E` files, in order.
    pub fn load(arch: &str, extra_files: &[impl AsRef<Path>]) -> Result<ArchCatalog, CliError> {
        let mut catalog = Catalog::builtin(arch).map_err(|e| CliError::input(e.to_string()))?;
        for path in extra_files {
            catalog
                .add_extra_file(path.as_ref())
                .map_err(|e| CliError::input(e.to_string()))?;
        }
        let limits = Limits::from_blocks(catalog.blocks().map(|b| {
            (
                b.name.as_str(),
                b.budget.as_str(),
                b.counters_per_pass as usize,
            )
        }));
        Ok(ArchCatalog { catalog, limits })
    }

    /// One note per event of `plan` past the last event aqlprofile lists for its block that no
    /// built-in counter defines (so only an extra file's counter does): it is programmed as
    /// given, and nothing says what the GPU counts for it.
    fn unlisted_event_notes(&self, plan: &GroupPlan<HwEvent>) -> Vec<String> {
        let catalog = &self.catalog;
        let defines = |c: &CounterDef, e: &HwEvent| matches!(&c.kind, CounterKind::Basic { block, event, .. } if *block == e.block && *event == e.event);
        let mut notes: Vec<String> = Vec::new();
        for event in plan.passes.iter().flat_map(|p| &p.events) {
            let Some(last) = catalog.block(&event.block).and_then(|b| b.max_event_id) else {
                continue;
            };
            if event.event <= last
                || catalog
                    .counters()
                    .any(|c| c.origin == Origin::Builtin && defines(c, event))
            {
                continue;
            }
            let Some((counter, path, line)) = catalog.counters().find_map(|c| match &c.origin {
                Origin::Extra { path, line } if defines(c, event) => Some((c, path, line)),
                _ => None,
            }) else {
                continue;
            };
            let note = format!(
                "{}: {} ({}:{line}) is {} event {}, past the block's events aqlprofile lists \
                 (0-{last}) and no built-in counter's: it is collected as given, and its value is \
                 whatever the GPU counts for that event",
                self.arch(),
                counter.name,
                path.display(),
                event.block,
                event.event
            );
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
        notes
    }

    fn arch(&self) -> &str {
        self.catalog.arch()
    }

    /// The planner's view of a requested counter, or the one-line error naming it.
    fn counter(&self, requested: &CounterName) -> Result<Counter<HwEvent>, CliError> {
        let events = self
            .catalog
            .hardware_events(&requested.name)
            .map_err(|e| self.unknown(requested, e))?;
        self.refuse_quirks(requested, &events)?;
        Ok(Counter {
            name: requested.name.clone(),
            events: events
                .into_iter()
                .map(|ev| Event {
                    budget: self
                        .catalog
                        .block(&ev.block)
                        .map_or_else(|| ev.block.clone(), |b| b.budget.clone()),
                    key: ev,
                })
                .collect(),
        })
    }

    /// Refuses a counter that needs an event aqlprofile collects wrongly on this architecture,
    /// naming the basic counter of that event when the requested one is derived from it.
    fn refuse_quirks(&self, requested: &CounterName, events: &[HwEvent]) -> Result<(), CliError> {
        let Some((event, why)) = events
            .iter()
            .find_map(|e| Some((e, refusal(&self.catalog, &e.block, e.event)?)))
        else {
            return Ok(());
        };
        let input = self
            .catalog
            .counters()
            .find(|c| {
                matches!(&c.kind, CounterKind::Basic { block, event: id, .. }
                    if *block == event.block && *id == event.event)
            })
            .map(|c| c.name.as_str())
            .filter(|&name| name != requested.name);
        let needs = input.map_or(String::new(), |name| format!("it needs {name}, and "));
        Err(CliError::input(format!(
            "{}: counter '{}' cannot be collected on {}: {needs}{why}",
            requested.at,
            requested.name,
            self.arch()
        )))
    }

    fn unknown(&self, requested: &CounterName, error: EngineError) -> CliError {
        let at = &requested.at;
        if let EngineError::UnknownCounter { .. } = error {
            let elsewhere: Vec<&str> = Catalog::architectures()
                .iter()
                .copied()
                .filter(|&arch| arch != self.arch())
                .filter(|&arch| {
                    Catalog::builtin(arch).is_ok_and(|c| c.counter(&requested.name).is_some())
                })
                .collect();
            if !elsewhere.is_empty() {
                return CliError::input(format!(
                    "{at}: counter '{}' is not available on {} (it exists on {})",
                    requested.name,
                    self.arch(),
                    elsewhere.join(", ")
                ));
            }
        }
        CliError::input(format!("{at}: {error}"))
    }

    fn plan(
        &self,
        label: &str,
        names: &[CounterName],
        options: &PlanOptions,
    ) -> Result<GroupPlan<HwEvent>, CliError> {
        let counters = names
            .iter()
            .map(|n| self.counter(n))
            .collect::<Result<Vec<_>, _>>()?;
        plan_group(&counters, &self.limits, options).map_err(|e| {
            let e = match e {
                // Name where the oversized counter was asked for.
                PlanError::CounterTooLarge { ref counter, .. } => {
                    let at = names
                        .iter()
                        .find(|n| &n.name == counter)
                        .map_or(label, |n| n.at.as_str());
                    return CliError::input(format!("{at}: {}: {e}", self.arch()));
                }
                e => e,
            };
            CliError::input(format!("{}: {label}: {e}", self.arch()))
        })
    }
}

/// One group of events programmed together on one architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunGroup {
    /// The requested counters it yields, in the user's order.
    pub counters: Vec<String>,
    /// The events to program.
    pub events: Vec<HwEvent>,
}

/// What one architecture collects in one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAgent {
    /// gfx name.
    pub arch: String,
    /// One group, several rotating (`pmc_groups`), or none.
    pub groups: Vec<RunGroup>,
}

/// One application run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// 1-based run number (the `N` of `pass_N/`).
    pub number: usize,
    /// Index of the job it comes from.
    pub job: usize,
    /// The job's filters and outputs.
    pub settings: Settings,
    /// Dispatches per rotating group.
    pub interval: u64,
    /// What each architecture collects.
    pub agents: Vec<RunAgent>,
}

impl Run {
    /// The variables that tell the interposer how to record kernel names in this run
    /// (`--mangled-kernels`, `--truncate-kernels` or the job's keys) and whether to handle
    /// fatal signals (`--disable-signal-handlers`): each set to `1` or `0`.
    pub fn name_environment(&self) -> [(&'static str, &'static str); 4] {
        let flag = |on: bool| if on { "1" } else { "0" };
        [
            (MANGLED_KERNELS_ENV, flag(self.settings.mangled_kernels)),
            (TRUNCATE_KERNELS_ENV, flag(self.settings.truncate_kernels)),
            (KERNEL_RENAME_ENV, flag(self.settings.kernel_rename)),
            (
                DISABLE_SIGNAL_HANDLERS_ENV,
                flag(self.settings.disable_signal_handlers),
            ),
        ]
    }

    /// The interposer's plan for this run, writing raw records to `output_directory`.
    pub fn plan_file(&self, output_directory: &Path) -> RunPlan {
        RunPlan {
            version: PLAN_VERSION,
            pass: self.number as u32,
            output_directory: output_directory.display().to_string(),
            filters: self.settings.filters.clone(),
            group_interval: self.interval,
            agents: self
                .agents
                .iter()
                .map(|a| AgentPlan {
                    arch: a.arch.clone(),
                    groups: a.groups.iter().map(event_group).collect(),
                })
                .collect(),
            replay: None,
        }
    }
}

/// A group as the interposer's plan file carries it.
pub fn event_group(g: &RunGroup) -> EventGroup {
    EventGroup {
        counters: g.counters.clone(),
        events: g
            .events
            .iter()
            .map(|e| PlanEvent {
                block: e.block.clone(),
                block_id: e.block_id,
                event: e.event,
                flags: e.flags,
            })
            .collect(),
    }
}

/// The validated plan of a whole profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfilePlan {
    /// The architectures planned for, in GPU order.
    pub archs: Vec<String>,
    /// The jobs, as the user gave them.
    pub jobs: Vec<Job>,
    /// The application runs, in order.
    pub runs: Vec<Run>,
    /// Sum over jobs of the fewest runs any plan could have.
    pub lower_bound: usize,
    /// What the user should know: which groups were split and why.
    pub notes: Vec<String>,
}

fn run_group(names: &[CounterName], plan_pass: &rtl_pmc::passes::Pass<HwEvent>) -> RunGroup {
    RunGroup {
        counters: plan_pass
            .counters
            .iter()
            .map(|&c| names[c].name.clone())
            .collect(),
        events: plan_pass.events.clone(),
    }
}

fn split_note(arch: &str, what: &str, plan: &GroupPlan<HwEvent>, unit: &str) -> Option<String> {
    let split = plan.split.as_ref()?;
    let mut note = format!(
        "{arch}: {what} does not fit one pass ({split}); split into {} {unit}",
        plan.passes.len()
    );
    if !plan.optimal {
        let _ = write!(
            note,
            " (the fewest found before the search budget ran out; lower bound {})",
            plan.lower_bound
        );
    }
    Some(note)
}

/// Plans every job on every architecture. Any bad counter or refused split is an error before
/// anything runs.
pub fn plan_profile(
    jobs: Vec<Job>,
    catalogs: &[ArchCatalog],
    options: &PlanOptions,
) -> Result<ProfilePlan, CliError> {
    let mut runs = Vec::new();
    let mut notes = Vec::new();
    let mut lower_bound = 0;
    for (j, job) in jobs.iter().enumerate() {
        let first_run = runs.len();
        match &job.collection {
            Collection::Passes(names) => {
                let mut per_arch = Vec::new();
                let mut job_bound = 0;
                for cat in catalogs {
                    let plan = cat.plan(&job.label, names, options)?;
                    notes.extend(split_note(cat.arch(), &job.label, &plan, "passes"));
                    notes.extend(cat.unlisted_event_notes(&plan));
                    job_bound = job_bound.max(plan.lower_bound);
                    per_arch.push(plan);
                }
                // Kernel tracing alone: one run, without counters, that times every dispatch.
                let tracing = usize::from(names.is_empty());
                lower_bound += job_bound.max(tracing);
                let count = per_arch.iter().map(|p| p.passes.len()).max().unwrap_or(0);
                let count = count.max(tracing);
                for i in 0..count {
                    runs.push(Run {
                        number: runs.len() + 1,
                        job: j,
                        settings: job.settings.clone(),
                        interval: 1,
                        agents: catalogs
                            .iter()
                            .zip(&per_arch)
                            .map(|(cat, plan)| RunAgent {
                                arch: cat.arch().to_string(),
                                groups: plan
                                    .passes
                                    .get(i)
                                    .map(|p| run_group(names, p))
                                    .filter(|g| !g.counters.is_empty())
                                    .into_iter()
                                    .collect(),
                            })
                            .collect(),
                    });
                }
            }
            Collection::Rotating { groups, interval } => {
                let mut agents = Vec::new();
                for cat in catalogs {
                    let mut rotation = Vec::new();
                    for (g, names) in groups.iter().enumerate() {
                        let what = format!("{} pmc_groups group {}", job.label, g + 1);
                        let plan = cat.plan(&what, names, options)?;
                        notes.extend(split_note(cat.arch(), &what, &plan, "rotating groups"));
                        rotation.extend(plan.passes.iter().map(|p| run_group(names, p)));
                    }
                    agents.push(RunAgent {
                        arch: cat.arch().to_string(),
                        groups: rotation,
                    });
                }
                lower_bound += 1;
                runs.push(Run {
                    number: runs.len() + 1,
                    job: j,
                    settings: job.settings.clone(),
                    interval: *interval,
                    agents,
                });
            }
        }
        if let Some(anchor) = &job.settings.anchor {
            notes.extend(add_anchor(
                &mut runs[first_run..],
                catalogs,
                anchor,
                options,
            )?);
        }
    }
    Ok(ProfilePlan {
        archs: catalogs.iter().map(|c| c.arch().to_string()).collect(),
        jobs,
        runs,
        lower_bound,
        notes,
    })
}

/// Adds counter `anchor` to every group of `runs` whose hardware has room for it beside the
/// group's own counters, which stay as planned; returns a note for each group without room.
fn add_anchor(
    runs: &mut [Run],
    catalogs: &[ArchCatalog],
    anchor: &str,
    options: &PlanOptions,
) -> Result<Vec<String>, CliError> {
    let mut notes = Vec::new();
    let named = |name: &str, at: &str| CounterName {
        name: name.to_string(),
        at: at.to_string(),
    };
    for run in runs {
        for (agent, cat) in run.agents.iter_mut().zip(catalogs) {
            cat.counter(&named(anchor, "--anchor"))?;
            for (g, group) in agent.groups.iter_mut().enumerate() {
                if group.counters.iter().any(|c| c == anchor) {
                    continue;
                }
                let mut names: Vec<CounterName> =
                    group.counters.iter().map(|c| named(c, "")).collect();
                names.push(named(anchor, "--anchor"));
                let strict = PlanOptions {
                    strict: false,
                    ..options.clone()
                };
                match cat.plan("--anchor", &names, &strict) {
                    Ok(plan) if plan.passes.len() == 1 => {
                        *group = run_group(&names, &plan.passes[0]);
                    }
                    _ => notes.push(format!(
                        "{}: pass {}{}: no room for the anchor {anchor}; that pass is compared by \
                         duration only",
                        cat.arch(),
                        run.number,
                        if g > 0 {
                            format!(" group {}", g + 1)
                        } else {
                            String::new()
                        }
                    )),
                }
            }
        }
    }
    Ok(notes)
}

impl ProfilePlan {
    /// The plan rank `rank` of `ranks` runs when jobs spread their groups over ranks
    /// (`--spatial-multiplexing`): the groups of every such run (each pass, each rotating group),
    /// numbered 0..G in plan order, become one run in which rank r collects group r mod G for
    /// the whole run; with fewer ranks than groups, rank r rotates through groups r, r + ranks,
    /// ... at the first such run's interval. That run takes the first such job's settings; runs
    /// without spatial multiplexing stay as they are.
    pub fn for_rank(&self, rank: usize, ranks: usize) -> ProfilePlan {
        let spread: Vec<&Run> = self
            .runs
            .iter()
            .filter(|r| r.settings.spatial_multiplexing)
            .collect();
        let mut runs: Vec<Run> = Vec::new();
        for run in &self.runs {
            if !run.settings.spatial_multiplexing {
                runs.push(run.clone());
                continue;
            }
            if !std::ptr::eq(run, spread[0]) {
                continue;
            }
            let agents = (0..run.agents.len())
                .map(|a| {
                    let groups: Vec<&RunGroup> =
                        spread.iter().flat_map(|r| &r.agents[a].groups).collect();
                    let count = groups.len().max(1);
                    let mine: Vec<RunGroup> = groups
                        .iter()
                        .enumerate()
                        .filter(|(g, _)| match ranks >= count {
                            true => *g == rank % count,
                            false => g % ranks == rank,
                        })
                        .map(|(_, g)| (*g).clone())
                        .collect();
                    RunAgent {
                        arch: run.agents[a].arch.clone(),
                        groups: mine,
                    }
                })
                .collect();
            runs.push(Run {
                agents,
                ..run.clone()
            });
        }
        for (i, run) in runs.iter_mut().enumerate() {
            run.number = i + 1;
        }
        ProfilePlan {
            runs,
            ..self.clone()
        }
    }

    /// The runs grouped by where their results go (the job's output directory and file), in
    /// order of first appearance: each group is a profile of its own, with its own merged
    /// results, as rocprofv3 gives each job its own output. Runs are numbered from 1 per output
    /// directory, so profiles that share a directory (and differ in their output file) have
    /// `pass_N` directories of their own. A plan whose runs all write to one place is returned
    /// whole.
    pub fn by_output(&self) -> Vec<ProfilePlan> {
        let mut profiles: Vec<ProfilePlan> = Vec::new();
        let destination = |run: &Run| {
            (
                run.settings.output_directory.clone(),
                run.settings.output_file.clone(),
            )
        };
        // Pass directories are numbered per output directory, so jobs that share one and
        // differ only in their output file keep every pass.
        let mut per_directory: Vec<(Option<std::path::PathBuf>, usize)> = Vec::new();
        for run in &self.runs {
            let directory = &run.settings.output_directory;
            let number = match per_directory.iter_mut().find(|(d, _)| d == directory) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    per_directory.push((directory.clone(), 1));
                    1
                }
            };
            let at = profiles
                .iter()
                .position(|p| destination(&p.runs[0]) == destination(run));
            let profile = match at {
                Some(at) => &mut profiles[at],
                None => {
                    profiles.push(ProfilePlan {
                        runs: Vec::new(),
                        ..self.clone()
                    });
                    profiles.last_mut().expect("just pushed")
                }
            };
            profile.runs.push(Run {
                number,
                ..run.clone()
            });
        }
        profiles
    }

    /// The `--plan` text: per architecture one line per run, `pass N: COUNTER ...` (rotating
    /// groups separated by ` | `), then `passes: P (lower bound: L)`. With several
    /// architectures each block starts with a `gfxNNN:` line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (a, arch) in self.archs.iter().enumerate() {
            if self.archs.len() > 1 {
                let _ = writeln!(out, "{arch}:");
            }
            for run in &self.runs {
                let groups = &run.agents[a].groups;
                if groups.is_empty() {
                    if run.agents.iter().all(|agent| agent.groups.is_empty()) {
                        let _ = writeln!(out, "pass {}: (kernel trace: no counters)", run.number);
                    }
                    continue;
                }
                let text: Vec<String> = groups.iter().map(|g| g.counters.join(" ")).collect();
                let _ = write!(out, "pass {}: {}", run.number, text.join(" | "));
                if groups.len() > 1 {
                    let _ = write!(out, " (rotating every {} dispatches)", run.interval);
                }
                out.push('\n');
            }
        }
        let _ = writeln!(
            out,
            "passes: {} (lower bound: {})",
            self.runs.len(),
            self.lower_bound
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtl_pmc::passes::plan_file::KernelFilters;

    fn names(list: &[&str]) -> Vec<CounterName> {
        list.iter()
            .map(|n| CounterName {
                name: n.to_string(),
                at: "--pmc".into(),
            })
            .collect()
    }

    #[test]
    fn runs_carry_block_ids_events_and_filters_to_the_plan_file() {
        let catalog = ArchCatalog::load("gfx942", &[] as &[&str]).unwrap();
        let settings = Settings {
            filters: KernelFilters {
                include_regex: Some("copy".into()),
                ..KernelFilters::default()
            },
            ..Settings::default()
        };
        let jobs = vec![Job {
            label: "--pmc group 1".into(),
            collection: Collection::Passes(names(&["SQ_WAVES", "GPU_UTIL"])),
            settings,
        }];
        let plan = plan_profile(jobs, &[catalog], &PlanOptions::default()).unwrap();
        assert_eq!(
            plan.render(),
            "pass 1: SQ_WAVES GPU_UTIL\npasses: 1 (lower bound: 1)\n"
        );
        let file = plan.runs[0].plan_file(Path::new("/out/pass_1"));
        assert_eq!(file.pass, 1);
        assert_eq!(file.output_directory, "/out/pass_1");
        assert_eq!(file.filters.include_regex.as_deref(), Some("copy"));
        assert_eq!(file.agents.len(), 1);
        assert_eq!(file.agents[0].arch, "gfx942");
        let events: Vec<(&str, u32, u32, u32)> = file.agents[0].groups[0]
            .events
            .iter()
            .map(|e| (e.block.as_str(), e.block_id, e.event, e.flags))
            .collect();
        assert_eq!(
            events,
            vec![("GRBM", 3, 0, 0), ("GRBM", 3, 2, 0), ("SQ", 6, 4, 0)]
        );
        assert_eq!(
            file.agents[0].groups[0].counters,
            vec!["SQ_WAVES".to_string(), "GPU_UTIL".to_string()]
        );
    }

    #[test]
    fn kernel_name_flags_reach_the_interposer_of_each_run() {
        let catalog = ArchCatalog::load("gfx942", &[] as &[&str]).unwrap();
        let job = |truncate_kernels, mangled_kernels, kernel_rename| Job {
            label: "input.yaml job".into(),
            collection: Collection::Passes(names(&["SQ_WAVES"])),
            settings: Settings {
                truncate_kernels,
                mangled_kernels,
                kernel_rename,
                disable_signal_handlers: kernel_rename,
                ..Settings::default()
            },
        };
        let jobs = vec![job(true, false, false), job(false, true, true)];
        let plan = plan_profile(jobs, &[catalog], &PlanOptions::default()).unwrap();
        assert_eq!(
            plan.runs[0].name_environment(),
            [
                ("RTL_PMC_MANGLED_KERNELS", "0"),
                ("RTL_PMC_TRUNCATE_KERNELS", "1"),
                ("RTL_PMC_KERNEL_RENAME", "0"),
                ("RTL_PMC_DISABLE_SIGNAL_HANDLERS", "0")
            ]
        );
        assert_eq!(
            plan.runs[1].name_environment(),
            [
                ("RTL_PMC_MANGLED_KERNELS", "1"),
                ("RTL_PMC_TRUNCATE_KERNELS", "0"),
                ("RTL_PMC_KERNEL_RENAME", "1"),
                ("RTL_PMC_DISABLE_SIGNAL_HANDLERS", "1")
            ]
        );
    }

    #[test]
    fn jobs_writing_elsewhere_are_profiles_of_their_own() {
        let catalog = ArchCatalog::load("gfx942", &[] as &[&str]).unwrap();
        let job = |counters: &[&str], directory: Option<&str>| Job {
            label: "input.yaml job".into(),
            collection: Collection::Passes(names(counters)),
            settings: Settings {
                output_directory: directory.map(Into::into),
                ..Settings::default()
            },
        };
        let jobs = vec![
            job(&["SQ_WAVES"], Some("a")),
            job(
                &["GRBM_COUNT", "GRBM_GUI_ACTIVE", "GRBM_CP_BUSY"],
                Some("b"),
            ),
            job(&["TCC_HIT"], Some("a")),
        ];
        let plan = plan_profile(jobs.clone(), &[catalog], &PlanOptions::default()).unwrap();
        assert_eq!(plan.by_output(), {
            let mut whole = plan.clone();
            whole.runs.clear();
            let mut a = whole.clone();
            a.runs = vec![plan.runs[0].clone(), plan.runs[3].clone()];
            a.runs[1].number = 2;
            let mut b = whole;
            b.runs = vec![plan.runs[1].clone(), plan.runs[2].clone()];
            b.runs[0].number = 1;
            b.runs[1].number = 2;
            vec![a, b]
        });
        let one = ProfilePlan {
            runs: plan.runs[..1].to_vec(),
            ..plan.clone()
        };
        assert_eq!(one.by_output(), vec![one.clone()]);

        // Another output file in the same directory: a profile of its own, numbered on.
        let mut named = jobs[2].clone();
        named.settings.output_file = Some("other".into());
        let jobs = vec![jobs[0].clone(), named];
        let catalog = ArchCatalog::load("gfx942", &[] as &[&str]).unwrap();
        let plan = plan_profile(jobs, &[catalog], &PlanOptions::default()).unwrap();
        let profiles = plan.by_output();
        let numbers: Vec<Vec<usize>> = profiles
            .iter()
            .map(|p| p.runs.iter().map(|r| r.number).collect())
            .collect();
        assert_eq!(numbers, [[1], [2]]);
    }

    #[test]
    fn multi_architecture_plans_number_runs_once() {
        let catalogs: Vec<ArchCatalog> = ["gfx942", "gfx90a"]
            .iter()
            .map(|a| ArchCatalog::load(a, &[] as &[&str]).unwrap())
            .collect();
        let jobs = vec![Job {
            label: "--pmc group 1".into(),
            collection: Collection::Passes(names(&[
                "GRBM_COUNT",
                "GRBM_GUI_ACTIVE",
                "GRBM_CP_BUSY",
            ])),
            settings: Settings::default(),
        }];
        let plan = plan_profile(jobs, &catalogs, &PlanOptions::default()).unwrap();
        assert_eq!(
            plan.render(),
            "gfx942:\npass 1: GRBM_COUNT GRBM_GUI_ACTIVE\npass 2: GRBM_CP_BUSY\n\
             gfx90a:\npass 1: GRBM_COUNT GRBM_GUI_ACTIVE\npass 2: GRBM_CP_BUSY\n\
             passes: 2 (lower bound: 2)\n"
        );
        assert_eq!(
            plan.notes,
            vec![
                "gfx942: --pmc group 1 does not fit one pass (GRBM needs 3 counters (2 per pass)); split into 2 passes".to_string(),
                "gfx90a: --pmc group 1 does not fit one pass (GRBM needs 3 counters (2 per pass)); split into 2 passes".to_string(),
            ]
        );
    }

    /// Four single-counter groups spread over ranks: one group per rank with as many ranks as
    /// groups (and more: rank 5 of 8 takes group 2), two rotating groups per rank with two ranks.
    #[test]
    fn ranks_take_their_share_of_the_groups() {
        let catalog = ArchCatalog::load("gfx942", &[] as &[&str]).unwrap();
        let job = |counter: &str| Job {
            label: "--pmc".into(),
            collection: Collection::Passes(names(&[counter])),
            settings: Settings {
                spatial_multiplexing: true,
                ..Settings::default()
            },
        };
        let jobs = ["SQ_WAVES", "TCC_HIT", "GRBM_COUNT", "SQ_INSTS_VALU"]
            .into_iter()
            .map(job)
            .collect();
        let plan = plan_profile(jobs, &[catalog], &PlanOptions::default()).unwrap();
        assert_eq!(plan.runs.len(), 4);
        let share = |rank, ranks| plan.for_rank(rank, ranks).render();
        assert_eq!(share(1, 4), "pass 1: TCC_HIT\npasses: 1 (lower bound: 4)\n");
        assert_eq!(share(5, 8), "pass 1: TCC_HIT\npasses: 1 (lower bound: 4)\n");
        assert_eq!(
            share(0, 2),
            "pass 1: SQ_WAVES | GRBM_COUNT (rotating every 1 dispatches)\npasses: 1 (lower bound: 4)\n"
        );
        assert_eq!(
            share(1, 2),
            "pass 1: TCC_HIT | SQ_INSTS_VALU (rotating every 1 dispatches)\npasses: 1 (lower bound: 4)\n"
        );
        assert_eq!(plan.for_rank(1, 2).runs[0].interval, 1);
    }

    /// The anchor joins every pass with room and leaves each group's counters as planned; a pass
    /// without room is named in a note.
    #[test]
    fn the_anchor_joins_every_pass_with_room() {
        let catalog = ArchCatalog::load("gfx942", &[] as &[&str]).unwrap();
        let job = |counters: &[&str]| Job {
            label: "--pmc".into(),
            collection: Collection::Passes(names(counters)),
            settings: Settings {
                anchor: Some("GRBM_COUNT".into()),
                ..Settings::default()
            },
        };
        let jobs = vec![
            job(&["SQ_WAVES"]),
            job(&["GRBM_COUNT", "TCC_HIT"]),
            // GRBM's counters per pass are taken by these.
            job(&["GRBM_GUI_ACTIVE", "GRBM_CP_BUSY"]),
        ];
        let plan = plan_profile(jobs, &[catalog], &PlanOptions::default()).unwrap();
        let render = plan.render();
        assert!(
            render.starts_with("pass 1: SQ_WAVES GRBM_COUNT\npass 2: GRBM_COUNT TCC_HIT\n"),
            "{render}"
        );
        assert!(
            render.contains("pass 3: GRBM_GUI_ACTIVE GRBM_CP_BUSY"),
            "{render}"
        );
        assert_eq!(
            plan.notes,
            ["gfx942: pass 3: no room for the anchor GRBM_COUNT; that pass is compared by duration only"]
        );
    }
}
