//! `rtl-pmc`: collects AMD GPU hardware counters per kernel dispatch.
//!
//! The binary is glue: [`args`] defines the command line, [`inputs`] reads `--pmc` groups and
//! input files, [`gpus`] finds the GPUs, [`planning`] turns counters into passes with the
//! counter engine and the planner, and [`run`] runs the application once per pass, handing
//! each pass's records to the `rtl-pmc-profile` crate, which joins the passes, stores
//! `results.db` and writes every file. Every input problem is found before anything runs and
//! reported as one line with exit code 2.

mod avail;
mod blocks;
mod costs;
mod gpus;
mod layout;
mod merge;
mod planning;
mod replay;
mod report;
mod run;
mod sim_env;

use std::process::ExitCode;

use rtl_pmc::passes::PlanOptions;
use rtl_pmc_cli::{args, error, inputs, unsupported};

use crate::args::Args;
use crate::error::CliError;
use crate::gpus::Gpu;
use crate::planning::{plan_profile, ArchCatalog};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let result = match argv.get(1).map(String::as_str) {
        Some("merge") => merge::main(&argv[1..]),
        Some("analyze") => analyze(&argv[1..]),
        Some("finish") => finish(&argv[1..]),
        Some("help") => help(&argv[2..]),
        _ => match unsupported::refused_in(argv.get(1..).unwrap_or_default()) {
            Some(message) => Err(CliError::input(message)),
            None => run_cli(&Args::parse_command_line(), None),
        },
    };
    match result {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("rtl-pmc: {e}");
            ExitCode::from(e.exit_code.clamp(1, 255) as u8)
        }
    }
}

/// The environment of `--sim`, checked once.
fn sim_exports(args: &Args) -> Result<Vec<(String, String)>, CliError> {
    match &args.sim {
        Some(spec) => sim_env::exports(spec).map_err(|e| CliError::input(format!("--sim: {e}"))),
        None => Ok(Vec::new()),
    }
}

/// The extra counter files: `ROCPROFILER_METRICS_PATH`'s `counter_defs.yaml` first, as
/// rocprofv3 reads it, then the `-E` files.
fn extra_files(args: &Args) -> Result<Vec<std::path::PathBuf>, CliError> {
    let metrics = planning::metrics_file(&|name| std::env::var(name).ok())?;
    Ok(metrics
        .into_iter()
        .chain(args.extra_counters.iter().cloned())
        .collect())
}

/// The GPUs to plan for: from the simulated topology with `--sim`, else from
/// `RTL_PMC_KFD_TOPOLOGY` or the system's KFD topology.
fn detect_gpus(sim: &[(String, String)]) -> Result<(String, Vec<Gpu>), CliError> {
    let from_sim = sim
        .iter()
        .find(|(name, _)| name == gpus::TOPOLOGY_ENV)
        .map(|(_, v)| v.clone());
    let from_env = std::env::var(gpus::TOPOLOGY_ENV).ok();
    let dir = gpus::topology_dir(from_sim.or(from_env).as_deref());
    Ok((dir.display().to_string(), gpus::detect(&dir)?))
}

/// The distinct architectures to plan for, in GPU order (or `--arch`).
fn architectures(args: &Args, sim: &[(String, String)]) -> Result<Vec<String>, CliError> {
    if let Some(arch) = &args.arch {
        return Ok(vec![arch.clone()]);
    }
    let (dir, found) = detect_gpus(sim)?;
    let mut archs: Vec<String> = Vec::new();
    for gpu in found {
        if !archs.contains(&gpu.arch) {
            archs.push(gpu.arch);
        }
    }
    if archs.is_empty() {
        return Err(CliError::input(format!(
            "no AMD GPU found in {dir}; give --sim gfxNNN to run on a simulated GPU, or --arch gfxNNN to plan for one"
        )));
    }
    Ok(archs)
}

/// Refuses `--arch` for another architecture than the GPUs the application will run on, and
/// GPU selections (`gpu:`) of GPUs that are not there. Checked whenever the GPUs are known: a
/// run, `--sim`, or a plan without `--arch`; `--plan --arch` plans for a machine elsewhere.
fn check_against_gpus(
    args: &Args,
    sim: &[(String, String)],
    jobs: &[inputs::Job],
) -> Result<(), CliError> {
    if args.arch.is_some() && args.sim.is_none() && args.plan {
        return Ok(());
    }
    let (dir, found) = detect_gpus(sim)?;
    if found.is_empty() {
        return Ok(());
    }
    let origin = match &args.sim {
        Some(spec) => format!("the simulated GPUs of --sim {spec}"),
        None => format!("the GPUs found in {dir}"),
    };
    if let Some(arch) = &args.arch {
        if let Some(gpu) = found.iter().find(|g| g.arch != *arch) {
            return Err(CliError::input(format!(
                "--arch {arch} contradicts {origin}: GPU {} is {}; drop --arch or give --arch {}",
                gpu.node, gpu.arch, gpu.arch
            )));
        }
    }
    for job in jobs {
        if let Some(gpu) = job
            .settings
            .filters
            .gpus
            .iter()
            .find(|&&g| g as usize >= found.len())
        {
            let indices = match found.len() {
                1 => "index 0".to_string(),
                n => format!("indices 0-{}", n - 1),
            };
            return Err(CliError::input(format!(
                "{}: gpu {gpu} is not there: {origin} have {indices}",
                job.label
            )));
        }
    }
    Ok(())
}

/// The interrupted profile `rtl-pmc finish` finishes: its directory and saved start.
struct Finishing {
    directory: std::path::PathBuf,
    saved: run::unfinished::Saved,
}

/// `rtl-pmc finish DIR`: plans the interrupted profile in DIR again from the command line,
/// directory and environment it was started with, and writes its results from the raw records
/// of its pass directories.
fn finish(argv: &[String]) -> Result<i32, CliError> {
    use clap::Parser as _;
    let args = FinishArgs::parse_from(argv);
    let directory = std::path::absolute(&args.directory).map_err(|e| CliError {
        message: format!("finish: {}: {e}", args.directory.display()),
        exit_code: 1,
    })?;
    let saved = run::unfinished::read(&directory)?;
    std::env::set_current_dir(&saved.cwd).map_err(|e| CliError {
        message: format!("finish: {}: {e}", saved.cwd.display()),
        exit_code: 1,
    })?;
    for (name, _) in std::env::vars_os() {
        std::env::remove_var(name);
    }
    for (name, value) in &saved.environment {
        std::env::set_var(name, value);
    }
    let started = Args::parse_from_list(&saved.argv).map_err(|e| {
        CliError::input(format!(
            "finish: {}: the profile's command line no longer parses: {e}",
            directory.display()
        ))
    })?;
    run_cli(&started, Some(Finishing { directory, saved }))
}

/// `rtl-pmc finish`: turns the raw records of a profile whose rtl-pmc was killed into results.
#[derive(Debug, clap::Parser)]
#[command(
    name = "rtl-pmc finish",
    bin_name = "rtl-pmc finish",
    about = "Write the results of a profile whose rtl-pmc was killed (SIGKILL, out of memory, a preempted job) from the raw records in its output directory"
)]
struct FinishArgs {
    /// The interrupted profile's output directory.
    #[arg(value_name = "DIR")]
    directory: std::path::PathBuf,
}

fn run_cli(args: &Args, finishing: Option<Finishing>) -> Result<i32, CliError> {
    let sim = sim_exports(args)?;
    if args.print_env && finishing.is_none() {
        let text: String = sim
            .iter()
            .map(|(name, value)| format!("export {name}='{}'\n", value.replace('\'', r"'\''")))
            .collect();
        write_stdout(&text);
        return Ok(0);
    }
    if args.exec {
        return Err(sim_env::exec(
            args.sim.as_deref().unwrap_or_default(),
            &sim,
            &args.app,
        ));
    }
    if args.list_avail && finishing.is_none() {
        list_avail(args, &sim)?;
        if args.app.is_empty() {
            return Ok(0);
        }
    }

    let mut jobs = inputs::collect_jobs(args)?;
    let extra = extra_files(args)?;
    let mut catalogs = match jobs.is_empty() && args.block.is_empty() {
        true => Vec::new(),
        false => architectures(args, &sim)?
            .iter()
            .map(|arch| ArchCatalog::load(arch, &extra))
            .collect::<Result<Vec<_>, _>>()?,
    };
    // Resolved before anything runs: a bad id is refused with the other input errors.
    let blocks = match args.block.is_empty() {
        true => None,
        false => {
            let (_, gpus) = detect_gpus(&sim)?;
            let blocks = blocks::resolve(&args.block, &catalogs, &gpus)?;
            for note in &blocks.left_out {
                eprintln!("rtl-pmc: warning: {note}");
            }
            jobs.push(blocks.job(inputs::cli_settings(args)?));
            // Kernel replay where it applies, unless a replay mode was asked for.
            if jobs.iter().all(|j| j.settings.replay_mode.is_none()) {
                for job in &mut jobs {
                    job.settings.replay_mode = Some(args::ReplayMode::Auto);
                }
            }
            Some(blocks)
        }
    };
    if jobs.is_empty() {
        return Err(CliError::input(
            "nothing to collect: give --pmc COUNTER..., -i FILE or --kernel-trace",
        ));
    }
    check_against_gpus(args, &sim, &jobs)?;
    let list_for_jobs = !args.list_avail && jobs.iter().any(|j| j.settings.list_avail);
    let log_level = jobs
        .iter()
        .find_map(|j| j.settings.log_level)
        .unwrap_or_default();
    for catalog in &mut catalogs {
        if let Some(blocks) = &blocks {
            let xcds = blocks
                .xcds
                .iter()
                .find(|(arch, _)| arch == catalog.catalog.arch())
                .map_or(1, |(_, n)| *n);
            catalog.add_channel_counters(&blocks.counters, xcds)?;
        }
        catalog.add_rocprof_forms(&jobs)?;
    }
    let options = PlanOptions {
        strict: args.strict_passes,
        ..PlanOptions::default()
    };
    let plan = plan_profile(jobs, &catalogs, &options)?;
    for note in plan.notes.iter().filter(|_| finishing.is_none()) {
        eprintln!("rtl-pmc: {note}");
    }
    if list_for_jobs && finishing.is_none() {
        list_avail(args, &sim)?;
    }
    // Jobs that write elsewhere are profiles of their own, run in job order.
    let profiles = plan.by_output();
    let measured = costs::load(&args.app);
    let choices = profiles
        .iter()
        .map(|p| replay::choose(p, measured.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    if args.plan && finishing.is_none() {
        let mut text = plan.render();
        for (profile, choice) in profiles.iter().zip(&choices) {
            text.push_str(&choice.render(profile.runs.len()));
        }
        write_stdout(&text);
        return Ok(0);
    }
    if args.app.is_empty() {
        return Err(CliError::input(
            "no application given: put it after --, e.g. rtl-pmc --pmc SQ_WAVES -- ./app",
        ));
    }
    // Before any directory is made: a typo must not touch earlier results.
    if finishing.is_none() {
        run::application::locate(&args.app[0], std::env::var_os("PATH").as_deref())
            .map_err(|e| CliError::input(e.to_string()))?;
    }
    // The interposer would refuse to profile with it.
    rtl_pmc::dispatch::config::replay_stall(&|name| std::env::var(name).ok())
        .map_err(|e| CliError::input(e.to_string()))?;
    let spread = spread_over_ranks(plan, &|name| std::env::var(name).ok())?;
    if log_level.shows_plan() && !args.plan && finishing.is_none() {
        eprint!("{}", spread.render());
    }
    // This rank's share, when a job spreads its groups over the ranks.
    let profiles = spread.by_output();
    let choices = profiles
        .iter()
        .map(|p| replay::choose(p, measured.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut options = run::RunOptions {
        app: &args.app,
        continue_on_error: args.continue_on_error,
        sim: &sim,
        catalogs: &catalogs,
        pass_match: args.pass_match,
        summary_top: args.summary_top,
        log_level,
        profile: 0,
        finishing: finishing.as_ref().map(|f| &f.saved),
        agent_index: args.agent_index,
        layout: run::destination::PassLayout::of_input(args.input.as_deref(), !args.pmc.is_empty()),
        blocks: blocks.as_ref(),
    };
    let mut destinations = profiles
        .iter()
        .map(|p| run::destination::Destination::of(p, &args.app))
        .collect::<Result<Vec<_>, _>>()?;
    let _claimed = match &finishing {
        None => Some(run::destination::claim(&destinations)?),
        Some(f) => {
            // Only the profile of the directory given, which its keys (`%pid%`...) may not
            // name again.
            let Some(destination) = destinations.get_mut(f.saved.profile) else {
                return Err(CliError::input(format!(
                    "finish: {}: the profile's command line now plans fewer output directories",
                    f.directory.display()
                )));
            };
            destination.directory = f.directory.clone();
            None
        }
    };
    // Progress counts every run of the application, over all profiles: kernel replay makes one.
    let runs = profiles
        .iter()
        .zip(&choices)
        .map(|(p, c)| match c.replay {
            replay::Replay::Kernel { .. } => 1,
            replay::Replay::Application => p.runs.len(),
        })
        .sum();
    let mut progress = run::progress::Progress::new(runs);
    let mut exit = 0;
    for (i, ((profile, destination), choice)) in
        profiles.iter().zip(&destinations).zip(&choices).enumerate()
    {
        if finishing.as_ref().is_some_and(|f| f.saved.profile != i) {
            continue;
        }
        options.profile = i;
        if let (Some(reason), true, None) = (&choice.reason, log_level.warnings(), &finishing) {
            eprintln!(
                "rtl-pmc: replay mode {}: {reason}",
                format!("{:?}", choice.asked).to_lowercase()
            );
        }
        let code = run::run(profile, destination, &options, choice.replay, &mut progress)?;
        if code == 0 {
            continue;
        }
        if exit == 0 {
            exit = code;
        }
        let remaining = profiles.len() - i - 1;
        if remaining > 0 && (!args.continue_on_error || code == run::INTERRUPTED_EXIT) {
            if code != run::INTERRUPTED_EXIT {
                eprintln!(
                    "rtl-pmc: stopping before the {remaining} remaining output directories (--continue-on-error runs them)"
                );
            }
            break;
        }
    }
    Ok(exit)
}

fn list_avail(args: &Args, sim: &[(String, String)]) -> Result<(), CliError> {
    let text = if let Some(arch) = &args.arch {
        let catalog = ArchCatalog::load(arch, &extra_files(args)?)?;
        avail::render(&[avail::Target {
            index: 0,
            catalog: &catalog,
            topology: None,
        }])
    } else {
        let (dir, found) = detect_gpus(sim)?;
        if found.is_empty() {
            return Err(CliError::input(format!(
                "no AMD GPU found in {dir}; give --sim gfxNNN to list a simulated GPU's counters, or --arch gfxNNN to list an architecture's"
            )));
        }
        let extra = extra_files(args)?;
        let catalogs = found
            .iter()
            .map(|gpu| ArchCatalog::load(&gpu.arch, &extra))
            .collect::<Result<Vec<_>, _>>()?;
        let targets: Vec<avail::Target<'_>> = found
            .iter()
            .zip(&catalogs)
            .enumerate()
            .map(|(index, (gpu, catalog))| avail::Target {
                index,
                catalog,
                topology: Some(&gpu.topology),
            })
            .collect();
        avail::render(&targets)
    };
    write_stdout(&text);
    Ok(())
}

/// This rank's share of `plan` when a job spreads its groups over the ranks of a launcher
/// (`--spatial-multiplexing`); the rank and the number of ranks come from the launcher's
/// variables, read through `lookup`. Without them, one message and exit 2.
fn spread_over_ranks(
    plan: planning::ProfilePlan,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<planning::ProfilePlan, CliError> {
    if !plan.runs.iter().any(|r| r.settings.spatial_multiplexing) {
        return Ok(plan);
    }
    use run::paths::{first_set, RANK_VARIABLES, SIZE_VARIABLES};
    let number =
        |variables: &[&str]| first_set(variables, lookup).and_then(|v| v.parse::<usize>().ok());
    match (number(&RANK_VARIABLES), number(&SIZE_VARIABLES)) {
        (Some(rank), Some(ranks)) if rank < ranks => Ok(plan.for_rank(rank, ranks)),
        _ => Err(CliError::input(format!(
            "--spatial-multiplexing: no rank below the number of ranks from a launcher (one of {} and one of {}); run rtl-pmc under mpirun, srun or torchrun, once per rank",
            RANK_VARIABLES.join(", "),
            SIZE_VARIABLES.join(", ")
        ))),
    }
}

/// `rtl-pmc help [merge|finish]`: the help of the command, of `merge` or of `finish`.
fn help(topic: &[String]) -> Result<i32, CliError> {
    use clap::CommandFactory;
    match topic.first().map(String::as_str) {
        None => {
            write_stdout(&Args::command().render_long_help().to_string());
            Ok(0)
        }
        Some("merge") => merge::main(&["merge".to_string(), "--help".to_string()]),
        Some("analyze") => analyze(&["analyze".to_string(), "--help".to_string()]),
        Some("finish") => finish(&["finish".to_string(), "--help".to_string()]),
        Some(other) => Err(CliError::input(format!(
            "help: no help on '{other}'; try rtl-pmc help, rtl-pmc help merge or rtl-pmc help finish"
        ))),
    }
}

/// `rtl-pmc analyze DIR ...`: the panels, printed to stdout.
fn analyze(argv: &[String]) -> Result<i32, CliError> {
    write_stdout(&rtl_pmc_cli::analyze::run(argv)?);
    if let Some(input) = rtl_pmc_cli::analyze::report_input(argv)? {
        let report = report::Report::from_analysis(&input);
        let written = report::write(&report, &input.path)
            .map_err(|e| CliError::input(format!("analyze: --html: {e}")))?;
        eprintln!("rtl-pmc: wrote {}", written.display());
    }
    Ok(0)
}

/// Prints to stdout; a reader that went away early (`| head`) is not an error.
fn write_stdout(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}
