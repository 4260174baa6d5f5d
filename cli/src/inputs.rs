//! What the user asked to collect: `--pmc` groups, rocprof v1 `input.txt` lines and rocprofv3
//! YAML/JSON jobs, with their filters and output settings, combined in rocprofv3's order
//! (command-line groups first, then the file's) and checked before anything runs.

use std::path::{Path, PathBuf};

use rtl_pmc::passes::plan_file::KernelFilters;
use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::args::{parse_size, Args, LogLevel, OutputFormat, ReplayMode};
use crate::error::CliError;
use crate::filters::{check_regex, parse_dispatch_range, parse_iteration_range};

mod job_errors;

/// A counter name as written, with where it was written (for error messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterName {
    /// The name.
    pub name: String,
    /// `--pmc`, or `file:line:column`.
    pub at: String,
}

/// How a job's counters are collected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collection {
    /// All in one run when they fit, else split into the fewest runs.
    Passes(Vec<CounterName>),
    /// `pmc_groups`: one run, groups rotating every `interval` filtered dispatches per GPU.
    Rotating {
        /// The groups, in order.
        groups: Vec<Vec<CounterName>>,
        /// Dispatches per group before the next.
        interval: u64,
    },
}

/// Filters and outputs of one job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Which dispatches are profiled.
    pub filters: KernelFilters,
    /// `-d` / `output_directory`.
    pub output_directory: Option<PathBuf>,
    /// `-o` / `output_file`.
    pub output_file: Option<String>,
    /// `--output-format` / `output_format` (empty: the default formats).
    pub output_format: Vec<OutputFormat>,
    /// `--truncate-kernels` / `truncate_kernels`.
    pub truncate_kernels: bool,
    /// `--mangled-kernels` / `mangled_kernels`.
    pub mangled_kernels: bool,
    /// `--kernel-rename` / `kernel_rename`.
    pub kernel_rename: bool,
    /// `--disable-signal-handlers` / `disable_signal_handlers`.
    pub disable_signal_handlers: bool,
    /// `--summary` / `summary`.
    pub summary: bool,
    /// `--summary-output-file` / `summary_output_file`.
    pub summary_output_file: Option<String>,
    /// `--stats` / `stats`.
    pub stats: bool,
    /// `--output-config` / `output_config`.
    pub output_config: bool,
    /// `--log-level` / `log_level`.
    pub log_level: Option<LogLevel>,
    /// `--list-avail` / `list_avail`.
    pub list_avail: bool,
    /// `--kernel-trace` / `kernel_trace`: each process's `kernel_trace.csv` in every pass.
    pub kernel_trace: bool,
    /// `--preload` / `preload`: libraries put before the application's `LD_PRELOAD`.
    pub preload: Vec<String>,
    /// `--replay-mode` / `replay_mode` (application replay when not given).
    pub replay_mode: Option<ReplayMode>,
    /// `--replay-memory-budget` / `replay_memory_budget`, in bytes.
    pub replay_memory_budget: Option<u64>,
    /// `--anchor` / `anchor`: a counter added to every pass with room for it, to compare passes.
    pub anchor: Option<String>,
    /// `--spatial-multiplexing` / `spatial_multiplexing`: each rank collects its share of the
    /// plan's groups for the whole run.
    pub spatial_multiplexing: bool,
}

/// One user group: a `--pmc`, a `pmc:` line or a YAML/JSON job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// How messages name it: `--pmc group 1`, `input.txt:3`, `input.yaml job 2`.
    pub label: String,
    /// The counters.
    pub collection: Collection,
    /// Its filters and outputs.
    pub settings: Settings,
}

/// Splits `--pmc` values and `pmc:` lines into names: spaces and commas separate.
fn split_names(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = None;
    let mut out = Vec::new();
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        let separator = c == ',' || c.is_whitespace();
        match (separator, start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    out.into_iter()
}

/// 1-based character column of byte offset `offset` in `line`.
fn column(line: &str, offset: usize) -> usize {
    line[..offset].chars().count() + 1
}

/// The extensions of the merged result files, which `-o` may repeat.
pub const MERGED_EXTENSIONS: [&str; 5] = ["csv", "db", "json", "pftrace", "html"];

/// The base name of the merged files from `-o` / `output_file`: a file name, without one of
/// [`MERGED_EXTENSIONS`] (`-o name.csv` writes `name.csv`, not `name.csv.csv`).
pub fn output_base(name: &str) -> Result<String, String> {
    if name.trim().is_empty() {
        return Err("the output file name is empty".into());
    }
    if name.contains('/') {
        return Err(format!(
            "'{name}' is a path; give the directory with -d and a file name here"
        ));
    }
    let base = match name.rsplit_once('.') {
        Some((stem, extension)) if !stem.is_empty() && MERGED_EXTENSIONS.contains(&extension) => {
            stem
        }
        _ => name,
    };
    Ok(base.to_string())
}

/// The formats named by `entries` (any case, separated by spaces or commas), sorted and
/// distinct; the error names the first unknown one, or an entry that names none.
pub fn parse_formats<'a>(
    entries: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<OutputFormat>, String> {
    let mut formats = Vec::new();
    for entry in entries {
        if split_names(entry).next().is_none() {
            return Err(format!(
                "'{entry}' names no output format (expected csv, json, rocpd, pftrace or html)"
            ));
        }
        for (_, name) in split_names(entry) {
            let format = OutputFormat::from_name(name).ok_or_else(|| {
                if name.eq_ignore_ascii_case("otf2") {
                    format!("'{name}' is a rocprofv3 format rtl-pmc does not write; use pftrace for a timeline")
                } else {
                    format!("unknown output format '{name}' (expected csv, json, rocpd, pftrace or html)")
                }
            })?;
            formats.push(format);
        }
    }
    formats.sort();
    formats.dedup();
    Ok(formats)
}

/// What is wrong with `name` as the summary's destination, if anything.
fn summary_file(name: &str) -> Option<&'static str> {
    (name.trim().is_empty() || name.contains('/')).then_some(
        "give stdout, stderr or a file name without a directory (the file goes to the output directory)",
    )
}

/// The message for log level `name` that is none.
fn unknown_level(name: &str) -> String {
    format!("unknown level '{name}' (expected fatal, error, warning, info, trace, env or config)")
}

/// The error of asking for truncated and mangled kernel names at once, at `at`.
fn contradicting_names(at: &str) -> CliError {
    CliError::input(format!(
        "{at} contradict each other: a truncated name is a demangled one; give one of them"
    ))
}

/// The settings given on the command line, checked.
pub fn cli_settings(args: &Args) -> Result<Settings, CliError> {
    if args.truncate_kernels && args.mangled_kernels {
        return Err(contradicting_names(
            "--truncate-kernels and --mangled-kernels",
        ));
    }
    let output_file = match &args.output_file {
        Some(name) => {
            Some(output_base(name).map_err(|e| CliError::input(format!("-o/--output-file: {e}")))?)
        }
        None => None,
    };
    let regex = |flag: &str, value: &Option<String>| -> Result<Option<String>, CliError> {
        if let Some(pattern) = value {
            check_regex(pattern).map_err(|e| CliError::input(format!("{flag}: {e}")))?;
        }
        Ok(value.clone())
    };
    let iterations = match &args.kernel_iteration_range {
        Some(text) => parse_iteration_range(text)
            .map_err(|e| CliError::input(format!("--kernel-iteration-range: {e}")))?,
        None => Vec::new(),
    };
    let output_format = parse_formats(args.output_format.iter().map(String::as_str))
        .map_err(|e| CliError::input(format!("-f/--output-format: {e}")))?;
    if let Some(problem) = args.summary_output_file.as_deref().and_then(summary_file) {
        return Err(CliError::input(format!("--summary-output-file: {problem}")));
    }
    Ok(Settings {
        filters: KernelFilters {
            include_regex: regex("--kernel-include-regex", &args.kernel_include_regex)?,
            exclude_regex: regex("--kernel-exclude-regex", &args.kernel_exclude_regex)?,
            iterations,
            roctx_include_regex: regex("--roctx-include-regex", &args.roctx_include_regex)?,
            selected_regions: args.selected_regions,
            ..KernelFilters::default()
        },
        output_directory: args.output_directory.clone(),
        output_file,
        output_format,
        truncate_kernels: args.truncate_kernels,
        mangled_kernels: args.mangled_kernels,
        kernel_rename: args.kernel_rename,
        disable_signal_handlers: args.disable_signal_handlers,
        summary: args.summary,
        summary_output_file: args.summary_output_file.clone(),
        stats: args.stats,
        output_config: args.output_config,
        log_level: match &args.log_level {
            Some(name) => {
                Some(LogLevel::from_name(name).ok_or_else(|| {
                    CliError::input(format!("--log-level: {}", unknown_level(name)))
                })?)
            }
            None => None,
        },
        list_avail: args.list_avail,
        kernel_trace: args.kernel_trace,
        preload: args.preload.clone(),
        replay_mode: args.replay_mode,
        replay_memory_budget: match &args.replay_memory_budget {
            Some(text) => Some(
                parse_size(text)
                    .map_err(|e| CliError::input(format!("--replay-memory-budget: {e}")))?,
            ),
            None => None,
        },
        anchor: args.anchor.clone(),
        spatial_multiplexing: args.spatial_multiplexing,
    })
}

/// Every job the arguments ask for, in order: `--pmc` groups, then the input file's.
pub fn collect_jobs(args: &Args) -> Result<Vec<Job>, CliError> {
    let cli = cli_settings(args)?;
    let mut jobs = Vec::new();
    for (i, values) in args.pmc.iter().enumerate() {
        let names: Vec<CounterName> = values
            .iter()
            .flat_map(|v| {
                split_names(v)
                    .map(|(_, n)| n.to_string())
                    .collect::<Vec<_>>()
            })
            .map(|name| CounterName {
                name,
                at: "--pmc".into(),
            })
            .collect();
        if names.is_empty() {
            return Err(CliError::input(format!(
                "--pmc group {} names no counters",
                i + 1
            )));
        }
        jobs.push(Job {
            label: format!("--pmc group {}", i + 1),
            collection: Collection::Passes(dedup(names)),
            settings: cli.clone(),
        });
    }
    if let Some(path) = &args.input {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::input(format!(
                "{}: cannot read the input file: {e}",
                path.display()
            ))
        })?;
        let file_jobs = parse_input(path, &text, &cli)?;
        if !args.pmc.is_empty() {
            if let Some(job) = file_jobs
                .iter()
                .find(|j| matches!(j.collection, Collection::Rotating { .. }))
            {
                return Err(CliError::input(format!(
                    "{}: pmc_groups cannot be combined with --pmc",
                    job.label
                )));
            }
        }
        jobs.extend(file_jobs);
    }
    if jobs.is_empty() && cli.kernel_trace {
        jobs.push(Job {
            label: "--kernel-trace".into(),
            collection: Collection::Passes(Vec::new()),
            settings: cli,
        });
    }
    Ok(jobs)
}

/// Parses the text of input file `path` as `-i path` does, by its extension: `.txt` is rocprof
/// v1 `pmc:` lines, `.yaml`, `.yml` and `.json` are rocprofv3 `jobs:`. `cli` holds the settings
/// of the command line, which every job starts from and which the file may not contradict.
///
/// Returns at least one job, each with at least one counter; an error names `path`, and the
/// line and column at fault when there is one.
pub fn parse_input(path: &Path, text: &str, cli: &Settings) -> Result<Vec<Job>, CliError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("txt") => parse_text(path, text, cli),
        Some("yaml" | "yml" | "json") => parse_jobs(path, text, cli),
        _ => Err(CliError::input(format!(
            "{}: unknown input file type (expected .txt, .yaml, .yml or .json)",
            path.display()
        ))),
    }
}

/// Keeps the first of repeated names.
fn dedup(names: Vec<CounterName>) -> Vec<CounterName> {
    let mut out: Vec<CounterName> = Vec::new();
    for n in names {
        if !out.iter().any(|o| o.name == n.name) {
            out.push(n);
        }
    }
    out
}

/// Parses a rocprof v1 input.txt: `#` comments; `pmc:` lines, one group each (an empty one
/// only times dispatches; `SQ_ACCUM_PREV_HIRES` and `SQ_ACCUM_PREV` accumulate the counter
/// before them, as `NAME_ACCUM` and `NAME_ACCUM_LOW_RES`); `range:`, `kernel:`/`kernels:` and
/// `gpu:` lines, the last of each applying to every group of the file unless it is empty or a
/// command-line filter of its kind (--kernel-iteration-range, --kernel-include-regex) is given.
fn parse_text(path: &Path, text: &str, cli: &Settings) -> Result<Vec<Job>, CliError> {
    let shown = path.display();
    let mut groups: Vec<(usize, Vec<CounterName>)> = Vec::new();
    let mut settings = cli.clone();
    let mut kernels: Option<Vec<String>> = None;
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.split('#').next().unwrap_or("");
        if line.trim().is_empty() {
            continue;
        }
        let at = |offset: usize| format!("{shown}:{line_no}:{}", column(raw, offset));
        let key_start = line.len() - line.trim_start().len();
        let Some(colon) = line.find(':') else {
            return Err(CliError::input(format!(
                "{}: expected 'pmc:', 'range:', 'kernel:', 'kernels:' or 'gpu:'",
                at(key_start)
            )));
        };
        let key = line[..colon].trim();
        let value_offset = colon + 1;
        let value = &line[value_offset..];
        match key {
            "pmc" => {
                let mut names: Vec<CounterName> = Vec::new();
                for (offset, name) in split_names(value) {
                    let at = at(value_offset + offset);
                    // rocprof v1: the accumulator slot accumulates the counter before it.
                    let suffix = match name {
                        "SQ_ACCUM_PREV_HIRES" => Some("_ACCUM"),
                        "SQ_ACCUM_PREV" => Some("_ACCUM_LOW_RES"),
                        _ => None,
                    };
                    let name = match (suffix, names.last()) {
                        (None, _) => name.to_string(),
                        (Some(suffix), Some(previous)) => format!("{}{suffix}", previous.name),
                        (Some(_), None) => {
                            return Err(CliError::input(format!(
                                "{at}: {name} accumulates the counter written just before it on its line, and none is; put it after the counter to accumulate (e.g. pmc: SQ_INSTS_LEVEL_VMEM {name})"
                            )))
                        }
                    };
                    names.push(CounterName { name, at });
                }
                // An empty line is a pass that only times dispatches, as in rocprofv3.
                groups.push((line_no, dedup(names)));
            }
            // rocprofv3 reads only `pmc:` lines; rocprof's other lines keep their meaning where
            // they are not empty and no command-line filter of their kind is given.
            "range" if value.trim().is_empty() || !cli.filters.iterations.is_empty() => {}
            "range" => {
                let compact = value
                    .trim()
                    .split(':')
                    .map(str::trim)
                    .collect::<Vec<_>>()
                    .join(":");
                if compact.split_whitespace().count() > 1 {
                    return Err(CliError::input(format!(
                        "{}: '{}' names several dispatch ranges; a range line takes one (A:B, A or A:), or give --kernel-iteration-range",
                        at(value_offset + leading(value)),
                        value.trim()
                    )));
                }
                let range = parse_dispatch_range(&compact).map_err(|e| {
                    CliError::input(format!("{}: {e}", at(value_offset + leading(value))))
                })?;
                settings.filters.dispatches = Some(range);
            }
            "kernel" | "kernels" if cli.filters.include_regex.is_some() => {}
            "kernel" | "kernels" => {
                let names: Vec<String> = split_names(value).map(|(_, n)| n.to_string()).collect();
                kernels = Some(names);
            }
            "gpu" => {
                let gpus = split_names(value)
                    .map(|(offset, n)| {
                        n.parse::<u32>().map_err(|_| {
                            CliError::input(format!(
                                "{}: '{n}' is not a GPU index",
                                at(value_offset + offset)
                            ))
                        })
                    })
                    .collect::<Result<Vec<u32>, CliError>>()?;
                settings.filters.gpus = gpus;
            }
            _ => {
                return Err(CliError::input(format!(
                    "{}: unknown key '{key}' (expected pmc, range, kernel, kernels or gpu)",
                    at(key_start)
                )))
            }
        }
    }
    if let Some(names) = kernels.filter(|names| !names.is_empty()) {
        let alternatives: Vec<String> = names.iter().map(|n| regex::escape(n)).collect();
        settings.filters.include_regex = Some(alternatives.join("|"));
    }
    if groups.is_empty() {
        return Err(CliError::input(format!("{shown}: no 'pmc:' line")));
    }
    Ok(groups
        .into_iter()
        .map(|(line_no, names)| Job {
            label: format!("{shown}:{line_no}"),
            collection: Collection::Passes(names),
            settings: settings.clone(),
        })
        .collect())
}

fn leading(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

/// A YAML/JSON value that may be one string or a list of strings.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobsFile {
    jobs: Vec<Spanned<JobSpec>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobSpec {
    #[serde(default)]
    pmc: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    pmc_groups: Option<Vec<Vec<Spanned<String>>>>,
    #[serde(default)]
    pmc_group_interval: Option<Spanned<u64>>,
    #[serde(default)]
    kernel_include_regex: Option<Spanned<String>>,
    #[serde(default)]
    kernel_exclude_regex: Option<Spanned<String>>,
    #[serde(default)]
    kernel_iteration_range: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    output_directory: Option<Spanned<String>>,
    #[serde(default)]
    output_file: Option<Spanned<String>>,
    #[serde(default)]
    output_format: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    truncate_kernels: Option<bool>,
    #[serde(default)]
    mangled_kernels: Option<bool>,
    #[serde(default)]
    kernel_rename: Option<bool>,
    #[serde(default)]
    selected_regions: Option<bool>,
    #[serde(default)]
    roctx_include_regex: Option<Spanned<String>>,
    #[serde(default)]
    summary: Option<bool>,
    #[serde(default)]
    summary_output_file: Option<Spanned<String>>,
    #[serde(default)]
    stats: Option<bool>,
    #[serde(default)]
    output_config: Option<bool>,
    #[serde(default)]
    log_level: Option<Spanned<String>>,
    #[serde(default)]
    list_avail: Option<bool>,
    #[serde(default)]
    kernel_trace: Option<bool>,
    #[serde(default)]
    preload: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    replay_mode: Option<Spanned<String>>,
    #[serde(default)]
    replay_memory_budget: Option<Spanned<SizeValue>>,
    #[serde(default)]
    anchor: Option<Spanned<String>>,
    #[serde(default)]
    spatial_multiplexing: Option<bool>,
    #[serde(default)]
    disable_signal_handlers: Option<bool>,
}

/// A size in a job: a number of bytes or a string with a unit.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum SizeValue {
    Bytes(u64),
    Text(String),
}

/// Parses rocprofv3's `jobs:` schema (YAML, or JSON, which YAML reads as well).
fn parse_jobs(path: &Path, text: &str, cli: &Settings) -> Result<Vec<Job>, CliError> {
    let shown = path.display().to_string();
    let file: JobsFile = serde_saphyr::from_str(text).map_err(|e| {
        let message = job_errors::message(&e, text);
        match e.location() {
            Some(l) => CliError::input(format!("{shown}:{}:{}: {message}", l.line(), l.column())),
            None => CliError::input(format!("{shown}: {message}")),
        }
    })?;
    if file.jobs.is_empty() {
        return Err(CliError::input(format!("{shown}: 'jobs' is empty")));
    }
    file.jobs
        .into_iter()
        .enumerate()
        .map(|(i, spec)| job_from_spec(&shown, i + 1, spec, cli))
        .collect()
}

fn names_at(shown: &str, values: Vec<Spanned<String>>) -> Vec<CounterName> {
    let names = values
        .into_iter()
        .flat_map(|v| {
            let at = format!("{shown}:{}:{}", v.referenced.line(), v.referenced.column());
            split_names(&v.value)
                .map(|(_, n)| CounterName {
                    name: n.to_string(),
                    at: at.clone(),
                })
                .collect::<Vec<_>>()
        })
        .collect();
    dedup(names)
}

fn job_from_spec(
    shown: &str,
    number: usize,
    spec: Spanned<JobSpec>,
    cli: &Settings,
) -> Result<Job, CliError> {
    let label = format!("{shown} job {number}");
    let at = |line: u64, column: u64| format!("{shown}:{line}:{column}");
    let job_at = at(spec.referenced.line(), spec.referenced.column());
    let spec = spec.value;

    let collection = match (spec.pmc, spec.pmc_groups) {
        (Some(_), Some(_)) => {
            return Err(CliError::input(format!(
                "{job_at}: pmc and pmc_groups cannot be combined in one job"
            )))
        }
        (Some(pmc), None) => {
            let names = names_at(shown, pmc);
            if names.is_empty() {
                return Err(CliError::input(format!("{job_at}: pmc names no counters")));
            }
            if let Some(interval) = &spec.pmc_group_interval {
                return Err(CliError::input(format!(
                    "{}: pmc_group_interval needs pmc_groups",
                    at(interval.referenced.line(), interval.referenced.column())
                )));
            }
            Collection::Passes(names)
        }
        (None, Some(groups)) => {
            let groups: Vec<Vec<CounterName>> =
                groups.into_iter().map(|g| names_at(shown, g)).collect();
            if groups.is_empty() || groups.iter().any(Vec::is_empty) {
                return Err(CliError::input(format!(
                    "{job_at}: pmc_groups must list groups of counters, none empty"
                )));
            }
            let interval = match spec.pmc_group_interval {
                Some(i) if i.value == 0 => {
                    return Err(CliError::input(format!(
                        "{}: pmc_group_interval must be at least 1",
                        at(i.referenced.line(), i.referenced.column())
                    )))
                }
                Some(i) => i.value,
                None => 1,
            };
            Collection::Rotating { groups, interval }
        }
        // A job that only traces kernels times every dispatch in one run.
        (None, None) if spec.kernel_trace == Some(true) || cli.kernel_trace => {
            Collection::Passes(Vec::new())
        }
        (None, None) => {
            return Err(CliError::input(format!(
                "{job_at}: the job lists no counters (pmc, pmc_groups) and does not trace kernels (kernel_trace)"
            )))
        }
    };

    let mut settings = cli.clone();
    let conflict = |key: &str, flag: &str, at: &str| {
        CliError::input(format!(
            "{at}: {key} conflicts with {flag} on the command line"
        ))
    };
    let regex = |value: Option<Spanned<String>>,
                 current: &Option<String>,
                 key: &str,
                 flag: &str|
     -> Result<Option<String>, CliError> {
        let Some(v) = value else {
            return Ok(current.clone());
        };
        let where_ = at(v.referenced.line(), v.referenced.column());
        check_regex(&v.value).map_err(|e| CliError::input(format!("{where_}: {e}")))?;
        if current.as_ref().is_some_and(|c| *c != v.value) {
            return Err(conflict(key, flag, &where_));
        }
        Ok(Some(v.value))
    };
    settings.filters.include_regex = regex(
        spec.kernel_include_regex,
        &cli.filters.include_regex,
        "kernel_include_regex",
        "--kernel-include-regex",
    )?;
    settings.filters.exclude_regex = regex(
        spec.kernel_exclude_regex,
        &cli.filters.exclude_regex,
        "kernel_exclude_regex",
        "--kernel-exclude-regex",
    )?;
    settings.filters.roctx_include_regex = regex(
        spec.roctx_include_regex,
        &cli.filters.roctx_include_regex,
        "roctx_include_regex",
        "--roctx-include-regex",
    )?;
    if let Some(v) = spec.kernel_iteration_range {
        let where_ = at(v.referenced.line(), v.referenced.column());
        let text = v.value.into_vec().join(",");
        let ranges =
            parse_iteration_range(&text).map_err(|e| CliError::input(format!("{where_}: {e}")))?;
        if !cli.filters.iterations.is_empty() && cli.filters.iterations != ranges {
            return Err(conflict(
                "kernel_iteration_range",
                "--kernel-iteration-range",
                &where_,
            ));
        }
        settings.filters.iterations = ranges;
    }
    if let Some(dir) = spec.output_directory {
        let where_ = at(dir.referenced.line(), dir.referenced.column());
        let dir = PathBuf::from(dir.value);
        if cli.output_directory.as_ref().is_some_and(|c| *c != dir) {
            return Err(conflict("output_directory", "--output-directory", &where_));
        }
        settings.output_directory = Some(dir);
    }
    if let Some(file) = spec.output_file {
        let where_ = at(file.referenced.line(), file.referenced.column());
        let base = output_base(&file.value)
            .map_err(|e| CliError::input(format!("{where_}: output_file: {e}")))?;
        if cli.output_file.as_ref().is_some_and(|c| *c != base) {
            return Err(conflict("output_file", "--output-file", &where_));
        }
        settings.output_file = Some(base);
    }
    if let Some(v) = spec.output_format {
        let where_ = at(v.referenced.line(), v.referenced.column());
        let entries = v.value.into_vec();
        let formats = parse_formats(entries.iter().map(String::as_str))
            .map_err(|e| CliError::input(format!("{where_}: output_format: {e}")))?;
        if !cli.output_format.is_empty() && cli.output_format != formats {
            return Err(conflict("output_format", "--output-format", &where_));
        }
        settings.output_format = formats;
    }
    if let Some(v) = spec.summary_output_file {
        let where_ = at(v.referenced.line(), v.referenced.column());
        if let Some(problem) = summary_file(&v.value) {
            return Err(CliError::input(format!(
                "{where_}: summary_output_file: {problem}"
            )));
        }
        if cli
            .summary_output_file
            .as_ref()
            .is_some_and(|c| *c != v.value)
        {
            return Err(conflict(
                "summary_output_file",
                "--summary-output-file",
                &where_,
            ));
        }
        settings.summary_output_file = Some(v.value);
    }
    if let Some(v) = spec.log_level {
        let where_ = at(v.referenced.line(), v.referenced.column());
        let level = LogLevel::from_name(&v.value).ok_or_else(|| {
            CliError::input(format!("{where_}: log_level: {}", unknown_level(&v.value)))
        })?;
        if cli.log_level.is_some_and(|c| c != level) {
            return Err(conflict("log_level", "--log-level", &where_));
        }
        settings.log_level = Some(level);
    }
    if let Some(v) = spec.preload {
        let where_ = at(v.referenced.line(), v.referenced.column());
        let libraries: Vec<String> = v
            .value
            .into_vec()
            .iter()
            .flat_map(|entry| {
                split_names(entry)
                    .map(|(_, n)| n.to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        if !cli.preload.is_empty() && cli.preload != libraries {
            return Err(conflict("preload", "--preload", &where_));
        }
        settings.preload = libraries;
    }
    if let Some(v) = spec.replay_mode {
        let where_ = at(v.referenced.line(), v.referenced.column());
        let mode = ReplayMode::from_name(&v.value).ok_or_else(|| {
            CliError::input(format!(
                "{where_}: replay_mode: '{}' is not application, kernel or auto",
                v.value
            ))
        })?;
        if cli.replay_mode.is_some_and(|c| c != mode) {
            return Err(conflict("replay_mode", "--replay-mode", &where_));
        }
        settings.replay_mode = Some(mode);
    }
    if let Some(v) = spec.replay_memory_budget {
        let where_ = at(v.referenced.line(), v.referenced.column());
        let bytes = match v.value {
            SizeValue::Bytes(b) => b,
            SizeValue::Text(text) => parse_size(&text)
                .map_err(|e| CliError::input(format!("{where_}: replay_memory_budget: {e}")))?,
        };
        if cli.replay_memory_budget.is_some_and(|c| c != bytes) {
            return Err(conflict(
                "replay_memory_budget",
                "--replay-memory-budget",
                &where_,
            ));
        }
        settings.replay_memory_budget = Some(bytes);
    }
    if let Some(anchor) = spec.anchor {
        let where_ = at(anchor.referenced.line(), anchor.referenced.column());
        if cli.anchor.as_ref().is_some_and(|a| *a != anchor.value) {
            return Err(conflict("anchor", "--anchor", &where_));
        }
        settings.anchor = Some(anchor.value);
    }
    settings.spatial_multiplexing |= spec.spatial_multiplexing.unwrap_or(false);
    settings.summary |= spec.summary.unwrap_or(false);
    settings.stats |= spec.stats.unwrap_or(false);
    settings.output_config |= spec.output_config.unwrap_or(false);
    settings.list_avail |= spec.list_avail.unwrap_or(false);
    settings.kernel_trace |= spec.kernel_trace.unwrap_or(false);
    settings.truncate_kernels |= spec.truncate_kernels.unwrap_or(false);
    settings.mangled_kernels |= spec.mangled_kernels.unwrap_or(false);
    settings.kernel_rename |= spec.kernel_rename.unwrap_or(false);
    settings.disable_signal_handlers |= spec.disable_signal_handlers.unwrap_or(false);
    settings.filters.selected_regions |= spec.selected_regions.unwrap_or(false);
    if settings.truncate_kernels && settings.mangled_kernels {
        return Err(contradicting_names(&format!(
            "{job_at}: truncate_kernels and mangled_kernels"
        )));
    }
    Ok(Job {
        label,
        collection,
        settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_bases_drop_a_merged_extension_and_refuse_paths_and_nothing() {
        assert_eq!(output_base("run.csv"), Ok("run".into()));
        assert_eq!(output_base("run.v2.db"), Ok("run.v2".into()));
        assert_eq!(output_base("run.txt"), Ok("run.txt".into()));
        assert_eq!(output_base(".csv"), Ok(".csv".into()));
        assert_eq!(output_base("%hostname%"), Ok("%hostname%".into()));
        assert_eq!(
            output_base(" "),
            Err("the output file name is empty".into())
        );
        assert_eq!(
            output_base("a/b"),
            Err("'a/b' is a path; give the directory with -d and a file name here".into())
        );
    }

    use rtl_pmc::passes::plan_file::{DispatchRange, IterationRange};

    fn names(collection: &Collection) -> Vec<(&str, &str)> {
        match collection {
            Collection::Passes(names) => names
                .iter()
                .map(|n| (n.name.as_str(), n.at.as_str()))
                .collect(),
            Collection::Rotating { .. } => Vec::new(),
        }
    }

    #[test]
    fn rocprofv3_job_settings_are_read_exactly() {
        let text = "jobs:
  - pmc: [\"SQ_WAVES\", \"GRBM_COUNT\"]
  - pmc: [\"FETCH_SIZE\", \"WRITE_SIZE\"]
    kernel_include_regex: \".*_kernel\"
    kernel_exclude_regex:
    kernel_iteration_range: [\"[1-2]\", \"[3-4]\"]
    output_directory: results
    output_file: \"out\"
    output_format: [\"json\", \"csv\"]
    truncate_kernels: true
    mangled_kernels: false
";
        // Mangled names on the command line contradict job 2's truncated ones.
        let cli = Settings {
            mangled_kernels: true,
            ..Settings::default()
        };
        assert_eq!(
            parse_jobs(Path::new("in.yaml"), text, &cli).unwrap_err().message,
            "in.yaml:3:5: truncate_kernels and mangled_kernels contradict each other: a truncated name is a demangled one; give one of them"
        );
        let cli = Settings {
            output_format: vec![OutputFormat::Csv, OutputFormat::Json],
            ..Settings::default()
        };
        let jobs = parse_jobs(Path::new("in.yaml"), text, &cli).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].label, "in.yaml job 1");
        assert_eq!(
            names(&jobs[0].collection),
            vec![("SQ_WAVES", "in.yaml:2:11"), ("GRBM_COUNT", "in.yaml:2:23")]
        );
        assert_eq!(jobs[0].settings, cli);
        assert_eq!(
            jobs[1].settings,
            Settings {
                filters: KernelFilters {
                    include_regex: Some(".*_kernel".into()),
                    exclude_regex: None,
                    iterations: vec![
                        IterationRange { first: 1, last: 2 },
                        IterationRange { first: 3, last: 4 }
                    ],
                    ..KernelFilters::default()
                },
                output_directory: Some(PathBuf::from("results")),
                output_file: Some("out".into()),
                output_format: vec![OutputFormat::Csv, OutputFormat::Json],
                truncate_kernels: true,
                mangled_kernels: false,
                ..Settings::default()
            }
        );
    }

    #[test]
    fn rocprof_v1_filters_apply_to_every_line() {
        let text = "# groups\npmc : A B,C\npmc: D\nrange: 1 : 4\ngpu: 0 2\nkernel: simple Pass1\n";
        let jobs = parse_text(Path::new("in.txt"), text, &Settings::default()).unwrap();
        assert_eq!(
            names(&jobs[0].collection),
            vec![
                ("A", "in.txt:2:7"),
                ("B", "in.txt:2:9"),
                ("C", "in.txt:2:11")
            ]
        );
        assert_eq!(names(&jobs[1].collection), vec![("D", "in.txt:3:6")]);
        for job in &jobs {
            assert_eq!(
                job.settings.filters,
                KernelFilters {
                    include_regex: Some("simple|Pass1".into()),
                    dispatches: Some(DispatchRange {
                        start: 1,
                        end: Some(4)
                    }),
                    gpus: vec![0, 2],
                    ..KernelFilters::default()
                }
            );
        }
        assert_eq!(
            (jobs[0].label.as_str(), jobs[1].label.as_str()),
            ("in.txt:2", "in.txt:3")
        );
    }

    #[test]
    fn rotating_groups_keep_their_interval() {
        let text = "jobs:\n  - pmc_groups: [[SQ_WAVES, GRBM_COUNT], [GRBM_GUI_ACTIVE]]\n    pmc_group_interval: 4\n";
        let jobs = parse_jobs(Path::new("g.yaml"), text, &Settings::default()).unwrap();
        let Collection::Rotating { groups, interval } = &jobs[0].collection else {
            panic!("not rotating: {:?}", jobs[0].collection);
        };
        let groups: Vec<Vec<&str>> = groups
            .iter()
            .map(|g| g.iter().map(|n| n.name.as_str()).collect())
            .collect();
        assert_eq!(
            groups,
            vec![vec!["SQ_WAVES", "GRBM_COUNT"], vec!["GRBM_GUI_ACTIVE"]]
        );
        assert_eq!(*interval, 4);
    }

    #[test]
    fn names_split_on_spaces_and_commas_with_offsets() {
        let names: Vec<_> = split_names(" SQ_WAVES,GRBM_COUNT  , X").collect();
        assert_eq!(names, vec![(1, "SQ_WAVES"), (10, "GRBM_COUNT"), (24, "X")]);
    }
}
