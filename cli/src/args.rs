//! The command line.

use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, CommandFactory, FromArgMatches, Parser, ValueEnum};

const EXAMPLES: &str = "\
Commands:
  rtl-pmc merge [-d DIR] [-o NAME] [-f FORMAT...] [--pass-match RULE] DIR...
                          combine the output directories of several runs (one per rank or host)
  rtl-pmc finish DIR      write the results of a profile whose rtl-pmc was killed, from the
                          raw records in its output directory
  rtl-pmc help [merge|finish]
                          this help, or merge's or finish's

Examples:
  rtl-pmc --pmc SQ_WAVES GRBM_COUNT -- ./app              # one group, one pass
  rtl-pmc --pmc SQ_WAVES --pmc TCC_HIT,TCC_MISS -- ./app  # each --pmc is its own group
  rtl-pmc -i input.txt -- ./app                           # rocprof: one group per `pmc:` line
  rtl-pmc --replay-mode kernel -i input.txt -- ./app      # every pass in one run of the app
  rtl-pmc -i input.yaml -- ./app                          # rocprofv3 jobs, or pmc_groups (one run)
  rtl-pmc -E extra_counters.yaml --pmc MY_METRIC -- ./app # extra counter definitions
  rtl-pmc --plan --arch gfx942 --pmc FETCH_SIZE WRITE_SIZE TCC_HIT TCC_MISS
  rtl-pmc --list-avail --arch gfx90a
  rtl-pmc --sim gfx942 --pmc SQ_WAVES -- ./app            # on the simulated GPU
  rtl-pmc -d 'prof/%rank%' --pmc SQ_WAVES -- ./app       # one directory per rank
  rtl-pmc merge -d all prof/*
  eval \"$(rtl-pmc --sim gfx942 --print-env)\"
  rtl-pmc --sim gfx942 --exec -- rocprofv3 --pmc SQ_WAVES -- ./app  # any tool on the simulated GPU

rocprofv3's tracing, PC sampling and thread trace options are refused, each saying why.";

/// Per-dispatch hardware counters for AMD GPUs, the way rocprof and rocprofv3 --pmc collect
/// them: counter groups that do not fit the hardware are split into the fewest passes that keep
/// every derived counter's inputs together.
#[derive(Debug, Clone, Parser)]
#[command(name = "rtl-pmc", version, after_help = EXAMPLES)]
pub struct Args {
    /// Counters to collect together (space- or comma-separated); each --pmc is one group.
    #[arg(long = "pmc", value_name = "COUNTER", num_args = 1.., action = ArgAction::Append)]
    pmc_values: Vec<String>,

    /// The `--pmc` groups, one per occurrence (filled by [`Args::parse_command_line`]).
    #[arg(skip)]
    pub pmc: Vec<Vec<String>>,

    /// Input file: `.txt` (rocprof `pmc:` lines) or `.yaml`/`.yml`/`.json` (rocprofv3 jobs).
    #[arg(short, long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Extra counter definitions (rocprofiler-sdk counter YAML), added to the built-in ones.
    #[arg(short = 'E', long = "extra-counters", value_name = "FILE")]
    pub extra_counters: Vec<PathBuf>,

    /// Only profile kernels whose name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub kernel_include_regex: Option<String>,

    /// Never profile kernels whose name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub kernel_exclude_regex: Option<String>,

    /// Only these launches of each kernel, counted from 1: e.g. `[1-2],[5]` or `3`.
    #[arg(long, value_name = "RANGES")]
    pub kernel_iteration_range: Option<String>,

    /// Only profile dispatches submitted while a roctx push/pop range whose message matches this
    /// regular expression is open on the submitting thread.
    #[arg(long, value_name = "REGEX")]
    pub roctx_include_regex: Option<String>,

    /// Only profile dispatches submitted between roctxProfilerResume and roctxProfilerPause; the
    /// application starts paused.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub selected_regions: bool,

    /// Name each dispatch after the innermost roctx push/pop range open on the submitting
    /// thread, in every output.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub kernel_rename: bool,

    /// Install no handlers for fatal signals (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL) in the
    /// application. Records are kept either way; the handlers only note which signal ended a
    /// process, then hand it to the application's own handler or end the process with it.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub disable_signal_handlers: bool,

    /// Directory the results are written to (default: %hostname%/%pid% under the current
    /// directory, new for every run; an existing profile there is never overwritten).
    #[arg(short = 'd', long, value_name = "DIR")]
    pub output_directory: Option<PathBuf>,

    /// Base name of the merged result files (default: results); a file name, a trailing .csv,
    /// .db, .json, .pftrace or .html dropped.
    #[arg(short = 'o', long, value_name = "NAME")]
    pub output_file: Option<String>,

    /// Result formats to write: csv, json, rocpd, pftrace, html (any case; spaces or commas
    /// separate them).
    #[arg(short = 'f', long, value_name = "FORMAT", num_args = 1..)]
    pub output_format: Vec<String>,

    /// Shorten kernel names to their base name.
    #[arg(short = 'T', long, value_name = "BOOL", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub truncate_kernels: bool,

    /// How the Agent_Id column of the CSV files names GPUs, as rocprofv3's: absolute or
    /// relative ("Agent <KFD node id>", the default) or type-relative ("GPU <n>", counted from
    /// 0 in node order).
    #[arg(short = 'A', long, value_name = "INDEX", default_value = "relative")]
    pub agent_index: AgentIndex,

    /// Keep kernel names mangled.
    #[arg(short = 'M', long, value_name = "BOOL", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub mangled_kernels: bool,

    /// Write each process's <pid>_kernel_trace.csv in every pass (every dispatch with its
    /// start and end time); alone, without counters, one run that only times dispatches.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub kernel_trace: bool,

    /// A counter added to every pass where the hardware has room for it, so that passes can be
    /// compared (drift); the counters of each group stay as planned.
    #[arg(long, value_name = "COUNTER")]
    pub anchor: Option<String>,

    /// Under a launcher (mpirun, srun, torchrun), rank r of R collects group r mod G of the
    /// plan's G groups for the whole run (with R < G, rank r rotates through groups r, r+R, ...);
    /// `rtl-pmc merge` combines the ranks' results into estimates.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub spatial_multiplexing: bool,

    /// Print the summary (it is printed anyway; kept for rocprofv3 command lines).
    #[arg(short = 'S', long, value_name = "BOOL", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub summary: bool,

    /// Where the summary goes: stdout, stderr (the default), or any other name F for the file
    /// <output directory>/<output file>_F.txt.
    #[arg(long, value_name = "F")]
    pub summary_output_file: Option<String>,

    /// Also write <output file>_kernel_stats.csv: per kernel its calls and total, average,
    /// minimum, maximum and standard deviation of the duration, and its share of the total.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub stats: bool,

    /// Also write <output file>_config.json: the command and the settings of the profile.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub output_config: bool,

    /// fatal or error: no warnings; warning (the default); info or trace: also the plan and
    /// the environment given to the application; env: the environment; config: the plan.
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,

    /// Libraries to load into the application first (put before its LD_PRELOAD).
    #[arg(long, value_name = "LIB", num_args = 1..)]
    pub preload: Vec<String>,

    /// Refuse to split a group that does not fit one pass; print the proposed split instead.
    #[arg(long)]
    pub strict_passes: bool,

    /// Print the passes the counters need and run nothing.
    #[arg(long)]
    pub plan: bool,

    /// Collect the counters of rocprof-compute's panels (section `2`, table `2.1`, metric
    /// `2.1.0`, or `all`) and write them as a rocprof-compute workload directory too.
    #[arg(long, value_name = "ID", num_args = 1.., value_delimiter = ',')]
    pub block: Vec<String>,

    /// Plan for this GPU architecture (e.g. gfx942) instead of the GPUs present.
    #[arg(long, value_name = "gfxNNN")]
    pub arch: Option<String>,

    /// List the counters available on each GPU found (the simulated ones with --sim), or on
    /// --arch; then profile the application if one is given.
    #[arg(short = 'L', long, value_name = "BOOL", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = BoolishValueParser::new())]
    pub list_avail: bool,

    /// Run on the simulated ROCm: an architecture, a built-in configuration or a config file.
    #[arg(long, value_name = "ARCH|CONFIG")]
    pub sim: Option<String>,

    /// With --sim: print the environment that runs any program on the simulated GPU.
    #[arg(long, requires = "sim")]
    pub print_env: bool,

    /// With --sim: run the command after -- on the simulated GPU, unprofiled, with that
    /// environment and the simulated topology at /sys/class/kfd (a private mount namespace).
    #[arg(long, requires = "sim", conflicts_with_all = ["print_env", "pmc_values", "input", "kernel_trace", "plan"])]
    pub exec: bool,

    /// How dispatches of different passes are matched: `queue` (process, GPU, queue, kernel and
    /// its occurrence on the queue, grid and workgroup sizes), `gpu` (any queue of the GPU) or
    /// `process` (any GPU and queue of the process).
    #[arg(long, value_name = "RULE", default_value = "queue")]
    pub pass_match: PassMatch,

    /// How many kernels the summary lists (by total time).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub summary_top: usize,

    /// Keep going with the next pass when the application fails in one.
    #[arg(long)]
    pub continue_on_error: bool,

    /// How the passes of a profile are collected: application (one run of the application
    /// per pass, the default), kernel (one run; each selected dispatch is run once per pass,
    /// its memory saved and restored), or auto (kernel when there are several passes and the
    /// profile allows it).
    #[arg(long, value_name = "MODE")]
    pub replay_mode: Option<ReplayMode>,

    /// With kernel replay: the most memory one dispatch's snapshot may take (bytes, or with a
    /// K, M, G or T suffix, powers of 1024; default 4G); a dispatch whose memory is larger runs
    /// once, with the first pass's counters.
    #[arg(long, value_name = "SIZE")]
    pub replay_memory_budget: Option<String>,

    /// The application and its arguments.
    #[arg(last = true, value_name = "APP")]
    pub app: Vec<String>,
}

impl Args {
    /// Parses the process's command line, keeping each `--pmc` occurrence as its own group.
    pub fn parse_command_line() -> Args {
        let matches = Args::command().get_matches();
        Args::from_matches(&matches).unwrap_or_else(|e| e.exit())
    }

    /// Parses `argv` (the program's name first) as [`Args::parse_command_line`] does.
    pub fn parse_from_list(argv: &[String]) -> Result<Args, clap::Error> {
        Args::from_matches(&Args::command().try_get_matches_from(argv)?)
    }

    fn from_matches(matches: &clap::ArgMatches) -> Result<Args, clap::Error> {
        let mut args = Args::from_arg_matches(matches)?;
        args.pmc = matches
            .get_occurrences::<String>("pmc_values")
            .map(|occurrences| occurrences.map(|o| o.cloned().collect()).collect())
            .unwrap_or_default();
        Ok(args)
    }
}

/// A result format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum OutputFormat {
    /// counter_collection.csv and results.csv.
    Csv,
    /// results.json.
    Json,
    /// results.db (SQLite).
    Rocpd,
    /// results.pftrace (Perfetto).
    Pftrace,
    /// results.html (a report to open in a web browser).
    Html,
}

impl OutputFormat {
    /// Parses a format name as written in input files (any case).
    pub fn from_name(name: &str) -> Option<OutputFormat> {
        OutputFormat::from_str(name, true).ok()
    }
}

/// rocprofv3's agent numbering (`-A/--agent-index`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum AgentIndex {
    /// The KFD node id, CPUs included.
    Absolute,
    /// The logical node id, which is the KFD node id for rtl-pmc.
    #[default]
    Relative,
    /// The index among agents of the same type.
    TypeRelative,
}

/// How much rtl-pmc tells on stderr (`--log-level`, `log_level`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum LogLevel {
    /// Errors only.
    Fatal,
    /// Errors only.
    Error,
    /// Errors and warnings.
    #[default]
    Warning,
    /// Also the plan and the environment given to the application.
    Info,
    /// As info.
    Trace,
    /// Also the environment given to the application.
    Env,
    /// Also the plan.
    Config,
}

impl LogLevel {
    /// Parses a level as written in input files (any case).
    pub fn from_name(name: &str) -> Option<LogLevel> {
        LogLevel::from_str(name.trim(), true).ok()
    }

    /// Whether warnings are printed.
    pub fn warnings(self) -> bool {
        self > LogLevel::Error
    }

    /// Whether the plan is printed before the application runs.
    pub fn shows_plan(self) -> bool {
        matches!(self, LogLevel::Info | LogLevel::Trace | LogLevel::Config)
    }

    /// Whether the environment given to the application is printed.
    pub fn shows_environment(self) -> bool {
        matches!(self, LogLevel::Info | LogLevel::Trace | LogLevel::Env)
    }
}

/// How the passes of a profile are collected (`--replay-mode`, `replay_mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ReplayMode {
    /// One run of the application per pass.
    #[default]
    Application,
    /// One run of the application; each selected dispatch runs once per pass.
    Kernel,
    /// Kernel replay when there are several passes and the profile allows it.
    Auto,
}

impl ReplayMode {
    /// Parses a mode as written in input files (any case).
    pub fn from_name(name: &str) -> Option<ReplayMode> {
        ReplayMode::from_str(name.trim(), true).ok()
    }
}

/// The default `--replay-memory-budget`: 4 GiB.
pub const DEFAULT_REPLAY_MEMORY_BUDGET: u64 = 4 << 30;

/// Parses a memory size: bytes, or a number with a `K`, `M`, `G` or `T` suffix (powers of
/// 1024; `KiB`, `MB` and the like are read the same way).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let bad = || format!("'{text}' is not a size (bytes, or a number with K, M, G or T)");
    let number: u64 = number.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(bad()),
    };
    number.checked_mul(1u64 << shift).ok_or_else(bad)
}

pub use rtl_pmc_profile::join::PassMatch;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_suffixes_and_refuse_the_rest() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 512M "), Ok(512 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("2kib"), Ok(2048));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        let bad = |t: &str| format!("'{t}' is not a size (bytes, or a number with K, M, G or T)");
        for text in ["", "G", "1.5G", "12X", "-1", "99999999999T"] {
            assert_eq!(parse_size(text), Err(bad(text)), "{text}");
        }
        assert_eq!(ReplayMode::from_name(" Kernel "), Some(ReplayMode::Kernel));
        assert_eq!(ReplayMode::from_name("sideways"), None);
    }
}
