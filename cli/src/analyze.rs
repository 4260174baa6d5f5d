//! `rtl-pmc analyze DIR`: rocprof-compute's panels computed per kernel from a profile, printed
//! as tables. DIR is an rtl-pmc profile (`results.csv` with `pass_*/*_agent_info.csv`) or a
//! rocprof-compute workload (`pmc_perf.csv`, `sysinfo.csv` and the level counters' `SQ*.csv`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use panels::{
    BlockId, Cell, Constants, CounterLayout, EvaluatedTable, Frame, KernelData, Normalization,
    PanelSet, MAIN_FRAME,
};

use crate::error::CliError;

mod report_input;
pub use report_input::{report_input, AnalyzedGpu, AnalyzedKernel, ReportInput};

/// The command line of `rtl-pmc analyze`.
#[derive(clap::Parser, Debug)]
#[command(
    name = "rtl-pmc analyze",
    about = "Print rocprof-compute's panels (speed-of-light, memory chart, caches, pipelines, ...) per kernel, computed from an rtl-pmc profile directory or a rocprof-compute workload directory"
)]
struct AnalyzeArgs {
    /// The profile: an rtl-pmc output directory (results.csv) or a rocprof-compute workload
    /// directory (pmc_perf.csv and sysinfo.csv).
    dir: PathBuf,
    /// Panels to show, by rocprof-compute's block ids: a section (2), a table (2.1), a metric
    /// (2.1.0) or all (the default). Repeat or list several.
    #[arg(short = 'b', long = "block", num_args = 1..)]
    blocks: Vec<String>,
    /// What `per normUnit` metrics are divided by: per_kernel, per_wave, per_cycle or
    /// per_second.
    #[arg(long = "normal-unit", default_value = "per_kernel")]
    normal_unit: String,
    /// Digits printed after the decimal point.
    #[arg(long, default_value_t = 2)]
    decimal: usize,
    /// Only kernels whose name matches this regular expression.
    #[arg(short = 'k', long = "kernel")]
    kernel: Option<String>,
    /// Print `Kernel,Metric_ID,Metric,Column,Value,Error` rows (values unrounded; Error for
    /// values computed from estimated counters) instead of tables.
    #[arg(long)]
    csv: bool,
    /// Also write the HTML report (speed-of-light from the panels, memory chart, roofline) to
    /// FILE, by default DIR/results.html.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "")]
    html: Option<PathBuf>,
}

/// A GPU constant and where its value came from.
#[derive(Debug, Clone)]
struct Constant {
    name: &'static str,
    value: f64,
    source: String,
}

/// The dispatches of one kernel on one GPU.
struct Kernel {
    name: String,
    gpu: usize,
    dispatches: usize,
    total_ns: f64,
    data: KernelData,
}

/// One GPU of the profile: its architecture and constants.
struct GpuInfo {
    label: String,
    arch: String,
    constants: Vec<Constant>,
}

/// A profile read for analysis.
struct Workload {
    kind: &'static str,
    gpus: Vec<GpuInfo>,
    kernels: Vec<Kernel>,
}

/// Runs `rtl-pmc analyze` (`argv[0]` is `analyze`) and returns what it prints.
pub fn run(argv: &[String]) -> Result<String, CliError> {
    use clap::Parser as _;
    let args = AnalyzeArgs::parse_from(argv);
    let normalization = Normalization::parse(&args.normal_unit).ok_or_else(|| {
        CliError::input(format!(
            "analyze: --normal-unit '{}': expected per_kernel, per_wave, per_cycle or per_second",
            args.normal_unit
        ))
    })?;
    let blocks = args
        .blocks
        .iter()
        .flat_map(|b| b.split(','))
        .filter(|b| !b.is_empty())
        .map(|b| BlockId::parse(b).map_err(|e| CliError::input(format!("analyze: --block: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let kernel_filter = match &args.kernel {
        Some(k) => Some(
            regex::Regex::new(k)
                .map_err(|e| CliError::input(format!("analyze: --kernel '{k}': {e}")))?,
        ),
        None => None,
    };
    let mut workload = read_workload(&args.dir)?;
    if let Some(filter) = &kernel_filter {
        workload.kernels.retain(|k| filter.is_match(&k.name));
    }
    // Refuse unknown blocks before printing anything.
    let mut sets = Vec::new();
    for gpu in &workload.gpus {
        let set = panels::load(&gpu.arch)
            .map_err(|e| CliError::input(format!("analyze: {}: {e}", args.dir.display())))?;
        let layout = CounterLayout {
            num_xcd: 1,
            l2_channels_per_xcd: 1,
        };
        panels::counters_for_blocks(set, &blocks, &layout)
            .map_err(|e| CliError::input(format!("analyze: --block: {e}")))?;
        sets.push(set);
    }
    let mut out = String::new();
    if !args.csv {
        header(&mut out, &args.dir, &workload);
    } else {
        out.push_str("Kernel,Metric_ID,Metric,Column,Value,Error\n");
    }
    // Kernels are evaluated on as many threads as there are cores, each into its own text,
    // printed in order.
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(workload.kernels.len())
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut texts: Vec<(usize, Result<String, CliError>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(kernel) = workload.kernels.get(at) else {
                            break done;
                        };
                        let mut text = String::new();
                        let result = kernel_panels(
                            &mut text,
                            kernel,
                            &workload.gpus[kernel.gpu],
                            sets[kernel.gpu],
                            &blocks,
                            normalization,
                            &args,
                        );
                        done.push((at, result.map(|()| text)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a kernel's panels"))
            .collect()
    });
    texts.sort_by_key(|(at, _)| *at);
    for (_, text) in texts {
        out.push_str(&text?);
    }
    Ok(out)
}

/// Appends one kernel's panels to `out`.
fn kernel_panels(
    out: &mut String,
    kernel: &Kernel,
    gpu: &GpuInfo,
    set: &PanelSet,
    blocks: &[BlockId],
    normalization: Normalization,
    args: &AnalyzeArgs,
) -> Result<(), CliError> {
    let constants: Constants = gpu
        .constants
        .iter()
        .map(|c| (c.name.to_string(), c.value))
        .collect();
    if !args.csv {
        let _ = writeln!(
            out,
            "\n== {} ({} on {}; {} dispatch{}, {} total)",
            kernel.name,
            gpu.arch,
            gpu.label,
            kernel.dispatches,
            if kernel.dispatches == 1 { "" } else { "es" },
            duration(kernel.total_ns)
        );
    }
    for (section, table) in selected_tables(set, blocks) {
        let metric_filter = blocks.iter().find_map(|b| match b {
            BlockId::Metric(s, t, m) if (*s, *t) == table.position() => Some(*m),
            _ => None,
        });
        let mut evaluated =
            panels::evaluate_table(set, table, &kernel.data, &constants, normalization)
                .map_err(|e| CliError::input(format!("analyze: table {}: {e}", table.id)))?;
        if let Some(m) = metric_filter {
            let wanted: Vec<String> = blocks
                .iter()
                .filter_map(|b| match b {
                    BlockId::Metric(s, t, m) if (*s, *t) == table.position() => {
                        Some(format!("{}.{m}", table.id))
                    }
                    _ => None,
                })
                .collect();
            let _ = m;
            let whole = blocks.iter().any(|b| {
                matches!(b, BlockId::All)
                    || *b == BlockId::Section(section)
                    || *b == BlockId::Table(table.position().0, table.position().1)
            });
            if !whole {
                evaluated.rows.retain(|r| wanted.contains(&r.id));
            }
        }
        if args.csv {
            csv_rows(out, &kernel.name, &evaluated);
        } else {
            print_table(out, &evaluated, args.decimal);
        }
    }
    Ok(())
}

/// The metric tables the blocks select, in order, with their section id.
fn selected_tables<'a>(set: &'a PanelSet, blocks: &[BlockId]) -> Vec<(u32, &'a panels::Table)> {
    let all = blocks.is_empty() || blocks.contains(&BlockId::All);
    let mut tables = Vec::new();
    for section in &set.sections {
        for table in &section.tables {
            let (s, t) = table.position();
            let chosen = all
                || blocks.iter().any(|b| match *b {
                    BlockId::All => true,
                    BlockId::Section(id) => id == s,
                    BlockId::Table(bs, bt) | BlockId::Metric(bs, bt, _) => (bs, bt) == (s, t),
                });
            if chosen {
                tables.push((section.id, table));
            }
        }
    }
    tables
}

fn header(out: &mut String, dir: &Path, workload: &Workload) {
    let _ = writeln!(out, "{} ({})", dir.display(), workload.kind);
    for gpu in &workload.gpus {
        let _ = writeln!(out, "GPU {} ({}): constants", gpu.label, gpu.arch);
        let width = gpu
            .constants
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(0);
        for c in &gpu.constants {
            let _ = writeln!(
                out,
                "  {:width$} = {:<10} from {}",
                c.name,
                number(c.value),
                c.source
            );
        }
    }
    let _ = writeln!(out, "\nKernels by total time:");
    let total: f64 = workload.kernels.iter().map(|k| k.total_ns).sum();
    for k in &workload.kernels {
        let share = if total > 0.0 {
            100.0 * k.total_ns / total
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "  {:>6.2} %  {:>12}  {:>6}  {}",
            share,
            duration(k.total_ns),
            k.dispatches,
            k.name
        );
    }
}

fn duration(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.3} us", ns / 1e3)
    }
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

fn format_cell(cell: &Cell, decimal: usize) -> String {
    match cell {
        Cell::Text(t) => t.clone(),
        Cell::Value(None) => String::new(),
        Cell::Value(Some(v)) if v.is_infinite() => {
            if *v > 0.0 { "inf" } else { "-inf" }.to_string()
        }
        Cell::Value(Some(v)) => format!("{v:.decimal$}"),
    }
}

fn print_table(out: &mut String, table: &EvaluatedTable, decimal: usize) {
    let _ = writeln!(out, "\n{} {}", table.id, table.title);
    let mut grid: Vec<Vec<String>> = Vec::new();
    let mut head = vec!["Metric_ID".to_string()];
    head.extend(table.headings.iter().cloned());
    grid.push(head);
    for row in &table.rows {
        let mut line = vec![row.id.clone(), row.name.clone()];
        for (cell, error) in row.cells.iter().zip(&row.errors) {
            let mut text = format_cell(cell, decimal);
            if let (Some(e), false) = (error, text.is_empty()) {
                if e.is_nan() {
                    text.push_str(" ± ?");
                } else {
                    let _ = write!(text, " ± {e:.decimal$}");
                }
            }
            line.push(text);
        }
        grid.push(line);
    }
    let columns = grid.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            grid.iter()
                .map(|r| r.get(i).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (n, line) in grid.iter().enumerate() {
        let mut text = String::new();
        for (i, cell) in line.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            // Names and labels to the left, values to the right.
            let value = cell.split(" ± ").next().unwrap_or_default();
            let numeric = n > 0 && i >= 2 && value.parse::<f64>().is_ok() || value == "inf";
            if i > 0 {
                text.push_str("  ");
            }
            if numeric {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
        if n == 0 {
            let rule: usize = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
            let _ = writeln!(out, "{}", "-".repeat(rule));
        }
    }
    let missing: Vec<&str> = {
        let mut m: Vec<&str> = table
            .rows
            .iter()
            .flat_map(|r| r.missing.iter().map(String::as_str))
            .collect();
        m.sort_unstable();
        m.dedup();
        m
    };
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(8).copied().collect();
        let more = missing.len() - shown.len();
        let _ = writeln!(
            out,
            "(no values where the profile lacks {}{})",
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
    }
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn csv_rows(out: &mut String, kernel: &str, table: &EvaluatedTable) {
    for row in &table.rows {
        for ((heading, cell), error) in table
            .headings
            .iter()
            .skip(1)
            .zip(&row.cells)
            .zip(&row.errors)
        {
            let value = match cell {
                Cell::Text(t) => t.clone(),
                Cell::Value(None) => String::new(),
                Cell::Value(Some(v)) => format!("{v}"),
            };
            let error = match error {
                Some(e) if e.is_nan() => "unknown".to_string(),
                Some(e) => format!("{e}"),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "{},{},{},{},{},{}",
                csv_field(kernel),
                row.id,
                csv_field(&row.name),
                csv_field(heading),
                csv_field(&value),
                error
            );
        }
    }
}

/// The rows of one (GPU, kernel): its key and its columns of values.
type Group = ((String, String), Vec<Vec<f64>>);

/// A CSV file's rows grouped by (GPU, kernel) as they are read, each group's columns of
/// values (NaN where a value is not a number).
struct GroupedCsv {
    names: Vec<String>,
    /// (GPU, kernel) and the group's columns, in order of first appearance.
    groups: Vec<Group>,
    /// The group of each row.
    row_group: Vec<usize>,
}

/// How a file's rows are grouped: by its own kernel (and GPU) columns, or row by row as
/// another file's (rocprof-compute joins its files by position).
enum Grouping<'a> {
    ByColumns {
        kernel: &'a str,
        gpu: Option<&'a str>,
    },
    AsRows(&'a GroupedCsv),
}

fn read_csv(path: &Path, grouping: Grouping) -> Result<GroupedCsv, CliError> {
    let bad = |e: String| CliError::input(format!("analyze: {}: {e}", path.display()));
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .buffer_capacity(READ_BUFFER)
        .from_path(path)
        .map_err(|e| bad(e.to_string()))?;
    let names: Vec<String> = reader
        .headers()
        .map_err(|e| bad(e.to_string()))?
        .iter()
        .map(str::to_string)
        .collect();
    let position = |column: &str| names.iter().position(|n| n == column);
    let key = match &grouping {
        Grouping::ByColumns { kernel, gpu } => RowKey::Columns {
            kernel: position(kernel).ok_or_else(|| bad(format!("no {kernel} column")))?,
            gpu: gpu.and_then(position),
        },
        Grouping::AsRows(other) => RowKey::AsRows(other),
    };
    // A large file grouped by its own columns is read in two halves at once: the second from
    // the first line break past its middle. Its rows count only if that line break ends one of
    // the first half's records (not one inside a quoted field) and the second half reads
    // without error; otherwise the first half's reader goes on to the end alone.
    let start = reader.position().byte();
    let len = std::fs::metadata(path).map_or(0, |m| m.len());
    let split = match key {
        RowKey::Columns { .. } => second_half(path, start, len),
        RowKey::AsRows(_) => None,
    };
    let mut collector = Collector::new(names.len(), key, len.saturating_sub(start));
    let cancel = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let mut second = split.map(|at| {
            let rest = Collector::new(names.len(), key, len.saturating_sub(at));
            let cancel = &cancel;
            scope.spawn(move || read_from(path, at, rest, cancel))
        });
        let mut record = csv::ByteRecord::new();
        loop {
            if let Some(at) = split.filter(|&at| reader.position().byte() >= at) {
                if let Some(handle) = second.take() {
                    let whole_records = reader.position().byte() == at;
                    if !whole_records {
                        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    if let (true, Ok(Some(rest))) = (whole_records, handle.join()) {
                        collector.append(rest);
                        break;
                    }
                }
            }
            let more = reader
                .read_byte_record(&mut record)
                .map_err(|e| bad(format!("line {}: {e}", collector.rows() + 2)))?;
            if !more || !collector.add(&record) {
                break;
            }
        }
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(collector.finish(names))
    })
}

/// The buffer of a CSV reader.
const READ_BUFFER: usize = 1 << 20;

/// Files smaller than this are read by one thread (in unit tests, all but the smallest are
/// read in two halves).
const SPLIT_SIZE: u64 = if cfg!(test) { 256 } else { 32 << 20 };

/// Where the second half of a large file begins (past the line break after its middle), if
/// it is worth reading apart.
fn second_half(path: &Path, start: u64, len: u64) -> Option<u64> {
    use std::io::{Read as _, Seek as _};
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if cores < 2 || len < SPLIT_SIZE || start >= len {
        return None;
    }
    let middle = start + (len - start) / 2;
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(std::io::SeekFrom::Start(middle)).ok()?;
    let mut window = Vec::new();
    file.take(READ_BUFFER as u64)
        .read_to_end(&mut window)
        .ok()?;
    let at = middle + window.iter().position(|&b| b == b'\n')? as u64 + 1;
    (at < len).then_some(at)
}

/// The records from byte `at` to the end, or nothing if one is not a whole row of the file.
fn read_from<'a>(
    path: &Path,
    at: u64,
    mut collector: Collector<'a>,
    cancel: &std::sync::atomic::AtomicBool,
) -> Option<Collector<'a>> {
    use std::io::Seek as _;
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(std::io::SeekFrom::Start(at)).ok()?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .buffer_capacity(READ_BUFFER)
        .from_reader(file);
    let mut record = csv::ByteRecord::new();
    while reader.read_byte_record(&mut record).ok()? {
        if cancel.load(std::sync::atomic::Ordering::Relaxed) || record.len() != collector.width {
            return None;
        }
        collector.add(&record);
    }
    Some(collector)
}

/// Which group a row belongs to.
#[derive(Clone, Copy)]
enum RowKey<'a> {
    /// Its kernel column's (and GPU column's) value.
    Columns { kernel: usize, gpu: Option<usize> },
    /// The group of the other file's row of the same position.
    AsRows(&'a GroupedCsv),
}

/// Rows gathered into their groups' columns as they are read.
struct Collector<'a> {
    width: usize,
    key: RowKey<'a>,
    groups: Vec<Group>,
    index: HashMap<(String, String), usize>,
    /// Each group's latest rows, row after row, moved into its columns a block at a time: the
    /// values are written in the order they are read, and each column then grows by a run of
    /// values rather than one value per row.
    pending: Vec<Vec<f64>>,
    row_group: Vec<usize>,
    /// The bytes of the file this collector's rows are expected to span, and of those read
    /// so far (about): what the columns' room is reserved from.
    span: u64,
    read: u64,
}

impl<'a> Collector<'a> {
    fn new(width: usize, key: RowKey<'a>, span: u64) -> Collector<'a> {
        let groups: Vec<Group> = match key {
            RowKey::AsRows(other) => other
                .groups
                .iter()
                .map(|(key, _)| (key.clone(), vec![Vec::new(); width]))
                .collect(),
            RowKey::Columns { .. } => Vec::new(),
        };
        Collector {
            width,
            key,
            pending: vec![Vec::new(); groups.len()],
            groups,
            index: HashMap::new(),
            row_group: Vec::new(),
            span,
            read: 0,
        }
    }

    fn rows(&self) -> usize {
        self.row_group.len()
    }

    /// The group of `key`, made if it is new.
    fn group(&mut self, key: (String, String)) -> usize {
        *self.index.entry(key.clone()).or_insert_with(|| {
            self.groups.push((key, vec![Vec::new(); self.width]));
            self.pending.push(Vec::new());
            self.groups.len() - 1
        })
    }

    /// Adds a record; false when it has no group (past the end of the other file's rows).
    fn add(&mut self, record: &csv::ByteRecord) -> bool {
        let text = |i: usize| String::from_utf8_lossy(record.get(i).unwrap_or_default());
        let group = match self.key {
            RowKey::AsRows(other) => match other.row_group.get(self.rows()) {
                Some(&g) => g,
                None => return false,
            },
            RowKey::Columns { kernel, gpu } => self.group((
                gpu.map(|g| text(g).into_owned()).unwrap_or_default(),
                text(kernel).into_owned(),
            )),
        };
        let width = self.width;
        let rows_so_far = self.rows() as f64 + 1.0;
        let per_row = self.read as f64 / rows_so_far;
        let rows = &mut self.pending[group];
        self.read += (record.as_slice().len() + record.len()) as u64;
        let at = rows.len();
        rows.extend(record_values(record).take(width));
        rows.resize(at + width, f64::NAN);
        if rows.len() >= PENDING_ROWS * width {
            let columns = &mut self.groups[group].1;
            if columns.first().is_some_and(|c| c.capacity() == 0) {
                // The group's share of the rows so far, of the rows expected.
                let share = (rows.len() / width.max(1)) as f64 / rows_so_far;
                let expected = (share * self.span as f64 / per_row * 1.05) as usize;
                columns.iter_mut().for_each(|c| c.reserve(expected));
            }
            spread(rows, columns);
        }
        self.row_group.push(group);
        true
    }

    fn flush(&mut self) {
        for (rows, (_, columns)) in self.pending.iter_mut().zip(&mut self.groups) {
            spread(rows, columns);
        }
    }

    /// Adds the rows `rest` read after this collector's, its columns copied by as many threads
    /// as there are cores.
    fn append(&mut self, mut rest: Collector<'a>) {
        #[cfg(test)]
        HALVES_JOINED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.flush();
        rest.flush();
        let map: Vec<usize> = rest
            .groups
            .iter()
            .map(|(key, _)| self.group(key.clone()))
            .collect();
        let mut incoming: Vec<Vec<Vec<f64>>> = vec![Vec::new(); self.groups.len()];
        for (&at, (_, columns)) in map.iter().zip(rest.groups) {
            incoming[at] = columns;
        }
        let mut pairs: Vec<(&mut Vec<f64>, Vec<f64>)> = self
            .groups
            .iter_mut()
            .zip(incoming)
            .flat_map(|((_, to), from)| to.iter_mut().zip(from))
            .collect();
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        let chunk = pairs.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            for part in pairs.chunks_mut(chunk) {
                scope.spawn(move || {
                    for (to, from) in part {
                        if to.is_empty() {
                            std::mem::swap(*to, from);
                        } else {
                            to.extend_from_slice(from);
                            *from = Vec::new();
                        }
                    }
                });
            }
        });
        self.row_group
            .extend(rest.row_group.iter().map(|&g| map[g]));
    }

    fn finish(mut self, names: Vec<String>) -> GroupedCsv {
        self.flush();
        GroupedCsv {
            names,
            groups: self.groups,
            row_group: self.row_group,
        }
    }
}

/// How many second halves were joined to their first (the unit tests check that one was).
#[cfg(test)]
static HALVES_JOINED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many of a group's rows wait before they are moved into its columns.
const PENDING_ROWS: usize = 64;

/// Moves `rows` (whole rows, one value per column each) to the ends of `columns`.
fn spread(rows: &mut Vec<f64>, columns: &mut [Vec<f64>]) {
    let width = columns.len();
    if let Some(count) = rows.len().checked_div(width) {
        for (i, column) in columns.iter_mut().enumerate() {
            // Indexed from a range, the column's room is made once for the whole run.
            column.extend((0..count).map(|r| rows[r * width + i]));
        }
    }
    rows.clear();
}

/// The values of `record`'s fields.
fn record_values(record: &csv::ByteRecord) -> impl Iterator<Item = f64> + '_ {
    // The fields lie one after another in the record's bytes: a field's digits are read
    // together with the bytes after it, in one load.
    let bytes = record.as_slice();
    let mut at = 0;
    record.iter().map(move |field| {
        let value = field_value(bytes, at, field.len());
        at += field.len();
        value
    })
}

/// A lone CSV field's value (the unit tests check it field by field).
#[cfg(test)]
fn parse_value(field: &[u8]) -> f64 {
    field_value(field, 0, field.len())
}

/// The value of the CSV field `bytes[at..at + len]`: counters are mostly plain integers, read
/// eight digits at a time; anything else goes through `f64`'s parser; not a number is NaN.
fn field_value(bytes: &[u8], at: usize, len: usize) -> f64 {
    let digits = match len {
        1..=8 => eight_digits(word_at(bytes, at), len),
        9..=15 => eight_digits(word_at(bytes, at), len - 8)
            .zip(eight_digits(word_at(bytes, at + len - 8), 8))
            .map(|(high, low)| high * 100_000_000 + low),
        _ => None,
    };
    match digits {
        // Exact: fifteen digits are below 2^53.
        Some(n) => n as f64,
        None => std::str::from_utf8(&bytes[at..at + len])
            .ok()
            .and_then(|f| f.trim().parse::<f64>().ok())
            .unwrap_or(f64::NAN),
    }
}

/// The eight bytes of `bytes` from `at` as a word, the first lowest; zeros past the end.
fn word_at(bytes: &[u8], at: usize) -> u64 {
    if let Some(word) = bytes
        .get(at..at + 8)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
    {
        return u64::from_le_bytes(word);
    }
    let mut word = [0; 8];
    let tail = bytes.get(at..).unwrap_or_default();
    let len = tail.len().min(8);
    word[..len].copy_from_slice(&tail[..len]);
    u64::from_le_bytes(word)
}

/// The value of the `len` (1 to 8) decimal digits in the low bytes of `word`, if they all are
/// digits: tested and combined in pairs, fours and eights rather than one at a time.
fn eight_digits(word: u64, len: usize) -> Option<u64> {
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    // The digits in the word's high bytes, '0's below them.
    let pad = 64 - 8 * len as u32;
    let word = match pad {
        0 => word,
        _ => word << pad | ZEROS >> (64 - pad),
    };
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    // Each byte 0x30 to 0x39: its high half 3, and still 3 with 6 added to it.
    let digits = (word & HIGH) | (word.wrapping_add(0x0606_0606_0606_0606) & HIGH) >> 4;
    if digits != 0x3333_3333_3333_3333 {
        return None;
    }
    let word = (word & 0x0F0F_0F0F_0F0F_0F0F).wrapping_mul(10 << 8 | 1) >> 8;
    let word = (word & 0x00FF_00FF_00FF_00FF).wrapping_mul(100 << 16 | 1) >> 16;
    Some((word & 0x0000_FFFF_0000_FFFF).wrapping_mul(10_000 << 32 | 1) >> 32)
}

/// A group's columns as a frame, renamed.
fn frame_of(names: &[String], columns: Vec<Vec<f64>>, rename: &dyn Fn(&str) -> String) -> Frame {
    let rows = columns.first().map_or(0, Vec::len);
    let mut frame_columns: HashMap<String, Vec<f64>> = HashMap::new();
    let mut errors = HashMap::new();
    let estimated: std::collections::HashSet<&str> = names
        .iter()
        .filter_map(|n| n.strip_suffix("_estimate"))
        .collect();
    for (name, values) in names.iter().zip(columns) {
        // rtl-pmc's estimates: `<C>_estimate` stands for C, `<C>_error` is its error.
        if let Some(counter) = name.strip_suffix("_estimate") {
            frame_columns.insert(rename(counter), values);
        } else if let Some(counter) = name.strip_suffix("_error") {
            errors.insert(rename(counter), values);
        } else if !estimated.contains(name.as_str()) {
            frame_columns.insert(rename(name), values);
        }
    }
    Frame {
        columns: frame_columns,
        rows,
        errors,
    }
}

fn total_ns(frame: &Frame) -> f64 {
    match (
        frame.columns.get("Start_Timestamp"),
        frame.columns.get("End_Timestamp"),
    ) {
        (Some(s), Some(e)) => s
            .iter()
            .zip(e)
            .map(|(s, e)| e - s)
            .filter(|d| d.is_finite())
            .sum(),
        _ => 0.0,
    }
}

fn read_workload(dir: &Path) -> Result<Workload, CliError> {
    let mut workload = if dir.join("pmc_perf.csv").is_file() {
        read_rocprof_compute(dir)?
    } else if dir.join("results.csv").is_file() {
        read_profile(dir)?
    } else {
        return Err(CliError::input(format!(
            "analyze: {}: neither an rtl-pmc profile (results.csv) nor a rocprof-compute workload (pmc_perf.csv)",
            dir.display()
        )));
    };
    workload
        .kernels
        .sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns));
    Ok(workload)
}

/// The GPU constants rocprof-compute's metrics use, in the order they are printed.
const CONSTANT_NAMES: [&str; 15] = [
    "cu_per_gpu",
    "simd_per_cu",
    "se_per_gpu",
    "sqc_per_gpu",
    "pipes_per_gpu",
    "num_xcd",
    "wave_size",
    "max_waves_per_cu",
    "lds_banks_per_cu",
    "max_sclk",
    "cur_sclk",
    "max_mclk",
    "cur_mclk",
    "num_hbm_channels",
    "total_l2_chan",
];

fn read_rocprof_compute(dir: &Path) -> Result<Workload, CliError> {
    let sysinfo_path = dir.join("sysinfo.csv");
    let bad = |p: &Path, e: String| CliError::input(format!("analyze: {}: {e}", p.display()));
    let mut reader =
        csv::Reader::from_path(&sysinfo_path).map_err(|e| bad(&sysinfo_path, e.to_string()))?;
    let headers = reader
        .headers()
        .map_err(|e| bad(&sysinfo_path, e.to_string()))?
        .clone();
    let record = reader
        .records()
        .next()
        .ok_or_else(|| bad(&sysinfo_path, "no row".into()))?
        .map_err(|e| bad(&sysinfo_path, e.to_string()))?;
    let field = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .and_then(|i| record.get(i))
            .map(str::trim)
    };
    let arch = field("gpu_arch")
        .filter(|a| !a.is_empty())
        .ok_or_else(|| bad(&sysinfo_path, "no gpu_arch".into()))?
        .to_string();
    let label = field("gpu_model").unwrap_or("GPU").to_string();
    let constants = CONSTANT_NAMES
        .iter()
        .filter_map(|&name| {
            let value = field(name)?.parse::<f64>().ok()?;
            Some(Constant {
                name,
                value,
                source: format!("sysinfo.csv {name}"),
            })
        })
        .collect();
    let mut perf = read_csv(
        &dir.join("pmc_perf.csv"),
        Grouping::ByColumns {
            kernel: "Kernel_Name",
            gpu: None,
        },
    )?;
    let set = panels::load(&arch).map_err(|e| bad(&sysinfo_path, e.to_string()))?;
    let mut levels: Vec<String> = set
        .sections
        .iter()
        .flat_map(|s| &s.tables)
        .flat_map(|t| &t.metrics)
        .filter_map(|m| m.level.clone())
        .collect();
    levels.sort();
    levels.dedup();
    let mut level_files = Vec::new();
    for level in levels {
        let path = dir.join(format!("{level}.csv"));
        if path.is_file() {
            // Rows are matched by position, as rocprof-compute joins its files.
            let file = read_csv(&path, Grouping::AsRows(&perf))?;
            level_files.push((level, file));
        }
    }
    let same = |n: &str| n.to_string();
    // A level file's accumulation, whatever its name, is what the metrics call SQ_ACCUM_PREV_HIRES.
    let accum = |n: &str| {
        if n.ends_with("_ACCUM") {
            "SQ_ACCUM_PREV_HIRES".to_string()
        } else {
            n.to_string()
        }
    };
    let names = std::mem::take(&mut perf.names);
    let mut kernels = Vec::new();
    for (index, ((_, name), columns)) in perf.groups.into_iter().enumerate() {
        let main = frame_of(&names, columns, &same);
        let dispatches = main.rows;
        let total = total_ns(&main);
        let mut frames: HashMap<String, Frame> = HashMap::new();
        for (level, file) in &mut level_files {
            let columns = std::mem::take(&mut file.groups[index].1);
            frames.insert(level.clone(), frame_of(&file.names, columns, &accum));
        }
        frames.insert(MAIN_FRAME.to_string(), main);
        kernels.push(Kernel {
            name,
            gpu: 0,
            dispatches,
            total_ns: total,
            data: KernelData {
                frames,
                accumulations_in_main: false,
            },
        });
    }
    Ok(Workload {
        kind: "rocprof-compute workload",
        gpus: vec![GpuInfo {
            label,
            arch,
            constants,
        }],
        kernels,
    })
}

/// L2 channels (TCC instances) per XCD of architecture `arch`, if known.
pub fn l2_channels_per_xcd(arch: &str) -> Option<u32> {
    let (_, figures) = architecture_figures(arch)?;
    let (_, channels) = figures.iter().find(|(n, _)| *n == "l2_channels_per_xcd")?;
    Some(*channels as u32)
}

/// The GPU model rocprof-compute knows architecture `arch` by (`MI300X`), if known.
pub fn gpu_model_of(arch: &str) -> Option<&'static str> {
    architecture_figures(arch).map(|(model, _)| model)
}

/// Figures a GPU's KFD properties do not give, per architecture, as rocprof-compute's system
/// information reports them for a real GPU of that architecture.
fn architecture_figures(arch: &str) -> Option<(&'static str, [(&'static str, f64); 6])> {
    match arch {
        "gfx90a" => Some((
            "MI200",
            [
                ("sqc_per_gpu", 56.0),
                ("pipes_per_gpu", 4.0),
                ("lds_banks_per_cu", 32.0),
                ("max_mclk", 1600.0),
                ("num_hbm_channels", 32.0),
                ("l2_channels_per_xcd", 32.0),
            ],
        )),
        "gfx942" => Some((
            "MI300X",
            [
                ("sqc_per_gpu", 160.0),
                ("pipes_per_gpu", 4.0),
                ("lds_banks_per_cu", 32.0),
                ("max_mclk", 1300.0),
                ("num_hbm_channels", 128.0),
                ("l2_channels_per_xcd", 16.0),
            ],
        )),
        "gfx950" => Some((
            "MI350",
            [
                ("sqc_per_gpu", 64.0),
                ("pipes_per_gpu", 4.0),
                ("lds_banks_per_cu", 32.0),
                ("max_mclk", 1300.0),
                ("num_hbm_channels", 128.0),
                ("l2_channels_per_xcd", 16.0),
            ],
        )),
        _ => None,
    }
}

fn read_profile(dir: &Path) -> Result<Workload, CliError> {
    let results = dir.join("results.csv");
    let csv = read_csv(
        &results,
        Grouping::ByColumns {
            kernel: "KernelName",
            gpu: Some("gpu-id"),
        },
    )?;
    let agents = read_agents(dir)?;
    // rocprof v1's column names, as rocprof-compute's pmc_perf.csv calls them.
    let rename = |n: &str| {
        match n {
            "BeginNs" => "Start_Timestamp",
            "EndNs" => "End_Timestamp",
            "grd" => "Grid_Size",
            "wgr" => "Workgroup_Size",
            "lds" => "LDS_Per_Workgroup",
            "scr" => "Scratch_Per_Workitem",
            "arch_vgpr" => "Arch_VGPR",
            "accum_vgpr" => "Accum_VGPR",
            "sgpr" => "SGPR",
            "wave_size" => "Wave_Size",
            other => other,
        }
        .to_string()
    };
    let mut gpus: Vec<GpuInfo> = Vec::new();
    let mut gpu_ids: Vec<String> = Vec::new();
    let mut kernels = Vec::new();
    for ((gpu, name), columns) in csv.groups {
        let at = match gpu_ids.iter().position(|g| *g == gpu) {
            Some(at) => at,
            None => {
                let agent = agents
                    .iter()
                    .find(|a| a.get("Node_Id").map(String::as_str) == Some(gpu.as_str()));
                let agent = agent.ok_or_else(|| {
                    CliError::input(format!(
                        "analyze: {}: gpu-id {gpu} has no GPU row in pass_*/*_agent_info.csv",
                        results.display()
                    ))
                })?;
                gpus.push(profile_gpu(&gpu, agent)?);
                gpu_ids.push(gpu.clone());
                gpus.len() - 1
            }
        };
        let main = frame_of(&csv.names, columns, &rename);
        let total = total_ns(&main);
        kernels.push(Kernel {
            name,
            gpu: at,
            dispatches: main.rows,
            total_ns: total,
            data: KernelData {
                frames: [(MAIN_FRAME.to_string(), main)].into_iter().collect(),
                accumulations_in_main: true,
            },
        });
    }
    Ok(Workload {
        kind: "rtl-pmc profile",
        gpus,
        kernels,
    })
}

/// The GPU rows of the first pass's agent_info files.
fn read_agents(dir: &Path) -> Result<Vec<HashMap<String, String>>, CliError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| CliError::input(format!("analyze: {}: {e}", dir.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("pass_"))
        })
        .flat_map(|pass| {
            std::fs::read_dir(&pass)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with("_agent_info.csv"))
                .collect::<Vec<_>>()
        })
        .collect();
    files.sort();
    let Some(file) = files.first() else {
        return Err(CliError::input(format!(
            "analyze: {}: no pass_*/*_agent_info.csv to take the GPU's properties from",
            dir.display()
        )));
    };
    let mut reader = csv::Reader::from_path(file)
        .map_err(|e| CliError::input(format!("analyze: {}: {e}", file.display())))?;
    let headers = reader
        .headers()
        .map_err(|e| CliError::input(format!("analyze: {}: {e}", file.display())))?
        .clone();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record =
            record.map_err(|e| CliError::input(format!("analyze: {}: {e}", file.display())))?;
        let row: HashMap<String, String> = headers
            .iter()
            .zip(record.iter())
            .map(|(h, v)| (h.to_string(), v.to_string()))
            .collect();
        if row.get("Agent_Type").map(String::as_str) == Some("GPU") {
            rows.push(row);
        }
    }
    Ok(rows)
}

fn profile_gpu(id: &str, agent: &HashMap<String, String>) -> Result<GpuInfo, CliError> {
    let arch = agent.get("Name").cloned().unwrap_or_default();
    let num = |k: &str| agent.get(k).and_then(|v| v.trim().parse::<f64>().ok());
    let from = |k: &str| format!("agent_info.csv {k}");
    let mut constants = Vec::new();
    let mut push = |name: &'static str, value: Option<f64>, source: String| {
        if let Some(value) = value {
            constants.push(Constant {
                name,
                value,
                source,
            });
        }
    };
    push("cu_per_gpu", num("Cu_Count"), from("Cu_Count"));
    push("simd_per_cu", num("Simd_Per_Cu"), from("Simd_Per_Cu"));
    let se = match (num("Array_Count"), num("Simd_Arrays_Per_Engine")) {
        (Some(a), Some(s)) if s > 0.0 => Some(a / s),
        _ => None,
    };
    push(
        "se_per_gpu",
        se,
        "agent_info.csv Array_Count / Simd_Arrays_Per_Engine".into(),
    );
    let xcd = num("Num_Xcc").unwrap_or(1.0);
    push("num_xcd", Some(xcd), from("Num_Xcc"));
    push("wave_size", num("Wave_Front_Size"), from("Wave_Front_Size"));
    push(
        "max_waves_per_cu",
        num("Max_Waves_Per_Cu"),
        from("Max_Waves_Per_Cu"),
    );
    let sclk = num("Max_Engine_Clk_Fcompute");
    push("max_sclk", sclk, from("Max_Engine_Clk_Fcompute"));
    push("cur_sclk", sclk, from("Max_Engine_Clk_Fcompute"));
    if let Some((model, figures)) = architecture_figures(&arch) {
        for (name, value) in figures {
            let source = format!("{arch} figure (a real {model}'s system information)");
            match name {
                "l2_channels_per_xcd" => push(
                    "total_l2_chan",
                    Some(value * xcd),
                    format!("{source}: {value} per XCD"),
                ),
                "sqc_per_gpu" => push("sqc_per_gpu", Some(value), source),
                "pipes_per_gpu" => push("pipes_per_gpu", Some(value), source),
                "lds_banks_per_cu" => push("lds_banks_per_cu", Some(value), source),
                "max_mclk" => {
                    push("max_mclk", Some(value), source.clone());
                    push("cur_mclk", Some(value), source);
                }
                _ => push("num_hbm_channels", Some(value), source),
            }
        }
    }
    constants.sort_by_key(|c| CONSTANT_NAMES.iter().position(|n| *n == c.name));
    let label = format!(
        "{} (node {id})",
        agent
            .get("Product_Name")
            .cloned()
            .unwrap_or_else(|| arch.clone())
    );
    Ok(GpuInfo {
        label,
        arch,
        constants,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `text` as a CSV file, reads it grouped by kernel, removes it; with where its
    /// second half begins.
    fn read_text(name: &str, text: &str) -> (Result<GroupedCsv, CliError>, Option<u64>) {
        let path =
            std::env::temp_dir().join(format!("rtl-pmc-analyze-{name}-{}.csv", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let read = read_csv(
            &path,
            Grouping::ByColumns {
                kernel: "KernelName",
                gpu: Some("gpu-id"),
            },
        );
        let split = second_half(&path, 0, text.len() as u64);
        std::fs::remove_file(&path).unwrap();
        (read, split)
    }

    /// Rows of three kernels, each row's values its index and its index times 10; `name` makes
    /// a kernel name of a row.
    fn rows(count: usize, name: impl Fn(usize) -> String) -> String {
        let mut text = String::from("gpu-id,KernelName,A,B\n");
        for i in 0..count {
            text.push_str(&format!("1,{},{i},{}\n", name(i), i * 10));
        }
        text
    }

    fn expect_groups(read: &GroupedCsv, count: usize, names: &[&str]) {
        assert_eq!(read.names, ["gpu-id", "KernelName", "A", "B"]);
        assert_eq!(
            read.row_group,
            (0..count).map(|i| i % 3).collect::<Vec<_>>()
        );
        for (g, (key, columns)) in read.groups.iter().enumerate() {
            assert_eq!(key, &("1".to_string(), names[g].to_string()));
            let a: Vec<f64> = (g..count).step_by(3).map(|i| i as f64).collect();
            let b: Vec<f64> = a.iter().map(|x| x * 10.0).collect();
            assert_eq!(columns[2], a, "group {g}");
            assert_eq!(columns[3], b, "group {g}");
        }
    }

    #[test]
    fn fields_read_as_f64_s_parser_reads_them() {
        let parsed = |f: &str| f.trim().parse::<f64>().unwrap_or(f64::NAN).to_bits();
        let mut fields: Vec<String> = [
            "0",
            "7",
            "10",
            "99999999",
            "100000000",
            "00000001",
            "12345678",
            "123456789",
            "999999999999999",
            "123456789012345",
            "1234567890123456",
            "18446744073709551616",
            "",
            "0x0",
            "12a4",
            " 12",
            "12 ",
            "1.5",
            "-3",
            "+4",
            "1e3",
            "/",
            ":",
            "1/2",
            "9:",
            "nan",
            "inf",
            "\u{0}",
        ]
        .iter()
        .map(|f| f.to_string())
        .collect();
        // Every length, with a byte just outside the digits at every place.
        for len in 1..=16 {
            let digits: String = (0..len).map(|i| char::from(b'1' + (i % 9) as u8)).collect();
            for at in 0..len {
                for outside in ['/', ':', 'a', ' '] {
                    let mut f = digits.clone().into_bytes();
                    f[at] = outside as u8;
                    fields.push(String::from_utf8(f).unwrap());
                }
            }
            fields.push(digits);
        }
        for f in &fields {
            assert_eq!(parse_value(f.as_bytes()).to_bits(), parsed(f), "{f:?}");
        }
    }

    #[test]
    fn a_record_s_fields_read_as_each_field_alone() {
        // Fields of every length before and after others, so that a field's eight-byte load
        // takes in the next fields' bytes, or runs past the record's end.
        let fields: Vec<String> = (0..17)
            .flat_map(|len| {
                let digits: String = (0..len)
                    .map(|i| char::from(b'9' - (i % 10) as u8))
                    .collect();
                [digits.clone(), format!("{digits}x"), format!("1.{digits}")]
            })
            .collect();
        for first in 0..fields.len() {
            let mut record = csv::ByteRecord::new();
            for field in fields[first..].iter().chain(&fields[..first]) {
                record.push_field(field.as_bytes());
            }
            let read: Vec<u64> = record_values(&record).map(f64::to_bits).collect();
            let alone: Vec<u64> = record.iter().map(|f| parse_value(f).to_bits()).collect();
            assert_eq!(read, alone, "fields from {first}");
        }
    }

    #[test]
    fn a_file_read_in_two_halves_is_read_as_in_one() {
        let text = rows(1000, |i| format!("k{}", i % 3));
        let joined = || HALVES_JOINED.load(std::sync::atomic::Ordering::Relaxed);
        let before = joined();
        let (read, split) = read_text("halves", &text);
        assert!(split.is_some());
        assert!(
            joined() > before,
            "the second half's rows were read apart and joined"
        );
        let read = read.unwrap();
        expect_groups(&read, 1000, &["k0", "k1", "k2"]);
    }

    #[test]
    fn a_line_break_inside_a_quoted_name_is_not_taken_for_a_row_end() {
        // Every name holds line breaks, so the middle of the file falls inside one.
        let names = [
            "\"a\nb\nc\nd\nx\"",
            "\"e\nf\nc\nd\ny\"",
            "\"g\nh\nc\nd\nz\"",
        ];
        let text = rows(1000, |i| names[i % 3].to_string());
        let (read, split) = read_text("quoted", &text);
        let split = split.unwrap() as usize;
        assert_eq!(text.as_bytes()[split - 1], b'\n');
        assert!(
            !text[split..].starts_with("1,"),
            "the middle falls inside a name"
        );
        let read = read.unwrap();
        expect_groups(
            &read,
            1000,
            &["a\nb\nc\nd\nx", "e\nf\nc\nd\ny", "g\nh\nc\nd\nz"],
        );
    }

    #[test]
    fn a_bad_row_in_the_second_half_is_reported_at_its_line() {
        let mut text = rows(1000, |i| format!("k{}", i % 3));
        text.push_str("1,k0,5\n");
        let (read, split) = read_text("bad-row", &text);
        assert!(split.is_some());
        let error = read.err().unwrap().to_string();
        assert!(error.contains("line 1002: "), "{error}");
    }
}
