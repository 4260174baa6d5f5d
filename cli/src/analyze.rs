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

mod grouped_csv;
use grouped_csv::{read_csv, Grouping};
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
