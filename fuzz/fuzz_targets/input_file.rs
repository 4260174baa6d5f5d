//! What must hold for any input file `rtl-pmc -i FILE` reads (`inputs::parse_input`), whatever
//! its text: shared by the `input_txt`, `input_yaml` and `input_json` targets.
//!
//! The text is parsed twice: with no other flags, and with command-line settings that the
//! file may repeat but not contradict. Each parse gives jobs or one error:
//! - jobs: at least one; each has at least one counter (every rotating group too, interval
//!   at least 1), except a `.txt` file's empty `pmc:` line, a pass that only times dispatches; names are single, distinct words placed at a line and column of the file;
//!   ranges are well-formed, formats sorted and distinct, the filters compile into the
//!   interposer's dispatch selector; every setting of the command line is kept; the jobs of
//!   a `.txt` file share one set of settings.
//! - an error: exit code 2, a message that starts with the file name, then `line:column`
//!   inside the file where the parser knows it (a `.txt` file always does except when it
//!   has no `pmc:` line).
//!
//! The command-line settings only add conflicts: a file refused without them is refused with
//! them (except a `.txt` file refused for its `range:` line, which a command-line iteration
//! range leaves unread, as rocprofv3 does), a file they make fail fails with a message about
//! the conflict, and a file accepted both ways has the same jobs and counters both ways.

use std::path::{Path, PathBuf};

use rtl_pmc::dispatch::selection::Selector;
use rtl_pmc::passes::plan_file::{IterationRange, KernelFilters};
use rtl_pmc_cli::args::{LogLevel, OutputFormat, ReplayMode};
use rtl_pmc_cli::error::{CliError, INPUT_ERROR};
use rtl_pmc_cli::inputs::{parse_input, Collection, CounterName, Job, Settings};

/// Parses `text` as the file `name` with and without command-line settings, and checks both.
pub fn check(name: &str, text: &str) {
    let path = Path::new(name);
    let bounds = Bounds::of(text);
    let plain = parse_input(path, text, &Settings::default());
    let flagged_cli = flagged();
    let flagged = parse_input(path, text, &flagged_cli);
    for (cli, result) in [(&Settings::default(), &plain), (&flagged_cli, &flagged)] {
        match result {
            Ok(jobs) => check_jobs(name, &bounds, cli, jobs),
            Err(e) => check_error(name, &bounds, e),
        }
    }
    // With the flags, the regular expressions are the command line's (or the file is refused).
    for job in plain.iter().flatten() {
        if let Err(e) = Selector::new(&job.settings.filters, 1) {
            panic!("{}: the filters do not compile: {e}", job.label);
        }
    }
    match (&plain, &flagged) {
        (Err(e), Ok(_)) => assert!(
            name.ends_with(".txt") && e.message.contains("dispatch range"),
            "only the command line's settings make it pass: {e}"
        ),
        // A file asking for mangled names contradicts the command line's truncated ones.
        (Ok(_), Err(e)) => assert!(
            e.message.contains("conflicts with") || e.message.contains("contradict each other"),
            "the command line's settings fail it for another reason: {e}"
        ),
        (Ok(plain), Ok(flagged)) => {
            let counters = |jobs: &[Job]| -> Vec<(String, Collection)> {
                jobs.iter()
                    .map(|j| (j.label.clone(), j.collection.clone()))
                    .collect()
            };
            assert_eq!(
                counters(plain),
                counters(flagged),
                "the command line's settings change the jobs' counters"
            );
        }
        (Err(_), Err(_)) => {}
    }
}

/// Command-line settings touching every filter and output setting a file can also give.
fn flagged() -> Settings {
    Settings {
        filters: KernelFilters {
            include_regex: Some("copy".into()),
            exclude_regex: Some("^init".into()),
            iterations: vec![IterationRange { first: 1, last: 2 }],
            roctx_include_regex: Some("^step".into()),
            selected_regions: true,
            ..KernelFilters::default()
        },
        output_directory: Some(PathBuf::from("results")),
        output_file: Some("out".into()),
        output_format: vec![OutputFormat::Csv],
        // Not mangled as well: the two contradict each other.
        truncate_kernels: true,
        mangled_kernels: false,
        kernel_rename: true,
        disable_signal_handlers: true,
        // Off: with it a job may have no counters, which the checks below take as an error.
        kernel_trace: false,
        summary: true,
        summary_output_file: Some("summary".into()),
        stats: true,
        output_config: true,
        log_level: Some(LogLevel::Info),
        list_avail: true,
        preload: vec!["libfirst.so".into()],
        replay_mode: Some(ReplayMode::Kernel),
        replay_memory_budget: Some(1 << 30),
        anchor: Some("GRBM_COUNT".into()),
        spatial_multiplexing: true,
    }
}

/// The lines and columns a place in the text can have (a YAML line break may be `\r` alone).
struct Bounds {
    lines: usize,
    columns: usize,
}

impl Bounds {
    fn of(text: &str) -> Bounds {
        let breaks = text
            .chars()
            .filter(|c| matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}'))
            .count();
        Bounds {
            lines: breaks + 1,
            columns: text.chars().count() + 1,
        }
    }

    /// Checks `line:column` found after `name:` in `place`; returns whether there was one.
    fn check_place(&self, name: &str, place: &str) -> bool {
        let rest = place
            .strip_prefix(name)
            .and_then(|r| r.strip_prefix(':'))
            .unwrap_or_else(|| panic!("'{place}' does not start with '{name}:'"));
        let mut parts = rest.splitn(3, ':');
        let (Some(line), Some(column)) = (parts.next(), parts.next()) else {
            return false;
        };
        let (Ok(line), Ok(column)) = (line.parse::<usize>(), column.parse::<usize>()) else {
            return false;
        };
        assert!(
            (1..=self.lines).contains(&line) && (1..=self.columns).contains(&column),
            "'{place}': line {line} column {column} outside the file ({} lines, {} characters)",
            self.lines,
            self.columns - 1
        );
        true
    }
}

fn check_jobs(name: &str, bounds: &Bounds, cli: &Settings, jobs: &[Job]) {
    assert!(!jobs.is_empty(), "no jobs and no error");
    for job in jobs {
        assert!(job.label.starts_with(name), "label '{}'", job.label);
        match &job.collection {
            Collection::Passes(names) if names.is_empty() && name.ends_with(".txt") => {}
            Collection::Passes(names) => check_names(name, bounds, names),
            Collection::Rotating { groups, interval } => {
                assert!(!groups.is_empty(), "{}: no rotating groups", job.label);
                assert!(*interval >= 1, "{}: interval {interval}", job.label);
                for group in groups {
                    check_names(name, bounds, group);
                }
            }
        }
        check_settings(&job.label, &job.settings, cli);
    }
    if name.ends_with(".txt") {
        assert!(
            jobs.iter().all(|j| j.settings == jobs[0].settings),
            "the groups of one input.txt have different settings"
        );
    }
}

fn check_names(name: &str, bounds: &Bounds, names: &[CounterName]) {
    assert!(!names.is_empty(), "a group without counters");
    for (i, counter) in names.iter().enumerate() {
        assert!(
            !counter.name.is_empty()
                && !counter
                    .name
                    .contains(|c: char| c == ',' || c.is_whitespace()),
            "counter name '{}'",
            counter.name
        );
        assert!(
            names[..i].iter().all(|n| n.name != counter.name),
            "'{}' twice in a group",
            counter.name
        );
        assert!(
            bounds.check_place(name, &counter.at),
            "'{}' has no line and column",
            counter.at
        );
    }
}

fn check_settings(label: &str, settings: &Settings, cli: &Settings) {
    let filters = &settings.filters;
    for range in &filters.iterations {
        assert!(
            1 <= range.first && range.first <= range.last,
            "{label}: {range:?}"
        );
    }
    if let Some(range) = &filters.dispatches {
        assert!(
            range.end.is_none_or(|end| end > range.start),
            "{label}: {range:?}"
        );
    }
    assert!(
        settings.output_format.windows(2).all(|w| w[0] < w[1]),
        "{label}: formats {:?}",
        settings.output_format
    );
    let kept = [
        (
            "include regex",
            kept(&cli.filters.include_regex, &filters.include_regex),
        ),
        (
            "exclude regex",
            kept(&cli.filters.exclude_regex, &filters.exclude_regex),
        ),
        (
            "iteration range",
            kept(&cli.filters.iterations, &filters.iterations),
        ),
        (
            "roctx include regex",
            kept(&cli.filters.roctx_include_regex, &filters.roctx_include_regex),
        ),
        (
            "--selected-regions",
            kept(&cli.filters.selected_regions, &filters.selected_regions),
        ),
        (
            "--kernel-rename",
            kept(&cli.kernel_rename, &settings.kernel_rename),
        ),
        (
            "--disable-signal-handlers",
            kept(
                &cli.disable_signal_handlers,
                &settings.disable_signal_handlers,
            ),
        ),
        (
            "output directory",
            kept(&cli.output_directory, &settings.output_directory),
        ),
        ("output file", kept(&cli.output_file, &settings.output_file)),
        (
            "output formats",
            kept(&cli.output_format, &settings.output_format),
        ),
        (
            "--truncate-kernels",
            kept(&cli.truncate_kernels, &settings.truncate_kernels),
        ),
        (
            "--mangled-kernels",
            kept(&cli.mangled_kernels, &settings.mangled_kernels),
        ),
        ("--summary", kept(&cli.summary, &settings.summary)),
        (
            "--summary-output-file",
            kept(&cli.summary_output_file, &settings.summary_output_file),
        ),
        ("--stats", kept(&cli.stats, &settings.stats)),
        (
            "--output-config",
            kept(&cli.output_config, &settings.output_config),
        ),
        ("--log-level", kept(&cli.log_level, &settings.log_level)),
        ("--list-avail", kept(&cli.list_avail, &settings.list_avail)),
        (
            "--kernel-trace",
            kept(&cli.kernel_trace, &settings.kernel_trace),
        ),
        ("--preload", kept(&cli.preload, &settings.preload)),
        (
            "--kernel-trace",
            kept(&cli.kernel_trace, &settings.kernel_trace),
        ),
        ("--anchor", kept(&cli.anchor, &settings.anchor)),
        (
            "--spatial-multiplexing",
            kept(&cli.spatial_multiplexing, &settings.spatial_multiplexing),
        ),
    ];
    for (what, kept) in kept {
        assert!(
            kept,
            "{label}: the file overrides the command line's {what}"
        );
    }
}

/// Whether a job keeps a command-line setting: one left at its default, or the same value.
fn kept<T: PartialEq + Default>(cli: &T, job: &T) -> bool {
    *cli == T::default() || cli == job
}

fn check_error(name: &str, bounds: &Bounds, e: &CliError) {
    assert_eq!(e.exit_code, INPUT_ERROR, "{e}");
    let has_place = bounds.check_place(name, &e.message);
    if name.ends_with(".txt") {
        assert!(
            has_place || e.message == format!("{name}: no 'pmc:' line"),
            "no line and column: {e}"
        );
    }
}
