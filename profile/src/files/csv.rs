//! The CSV files: rocprofv3's `counter_collection.csv`, `agent_info.csv` and
//! `kernel_stats.csv`, rocprof v1's `results.csv`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::agent_info::{agent_info_value, AGENT_INFO_COLUMNS};
use crate::fast_map::FastMap;
use crate::files::atomic::AtomicFile;
use crate::model::{
    push_fields, push_fixed6, push_hex, push_unsigned, push_value, Agent, Dispatch,
    EstimateColumns, KernelStats, Rocprofv3Order, MISSING,
};

/// rocprofv3's `counter_collection.csv` columns, in its order.
pub const COUNTER_COLLECTION_COLUMNS: [&str; 19] = [
    "Correlation_Id",
    "Dispatch_Id",
    "Agent_Id",
    "Queue_Id",
    "Process_Id",
    "Thread_Id",
    "Grid_Size",
    "Kernel_Id",
    "Kernel_Name",
    "Workgroup_Size",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Counter_Name",
    "Counter_Value",
    "Start_Timestamp",
    "End_Timestamp",
];

/// rocprofv3's `kernel_trace.csv` columns, in its order.
pub const KERNEL_TRACE_COLUMNS: [&str; 22] = [
    "Kind",
    "Agent_Id",
    "Queue_Id",
    "Stream_Id",
    "Thread_Id",
    "Dispatch_Id",
    "Kernel_Id",
    "Kernel_Name",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Workgroup_Size_X",
    "Workgroup_Size_Y",
    "Workgroup_Size_Z",
    "Grid_Size_X",
    "Grid_Size_Y",
    "Grid_Size_Z",
];

/// The fixed leading columns of rocprof v1's `results.csv`, before the counters.
pub const RESULTS_LEADING_COLUMNS: [&str; 17] = [
    "Index",
    "KernelName",
    "gpu-id",
    "queue-id",
    "queue-index",
    "pid",
    "tid",
    "grd",
    "wgr",
    "lds",
    "scr",
    "arch_vgpr",
    "accum_vgpr",
    "sgpr",
    "wave_size",
    "sig",
    "obj",
];

fn csv_error(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("{other:?}")),
    }
}

fn quoted_writer(file: AtomicFile) -> csv::Writer<AtomicFile> {
    csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::NonNumeric)
        .from_writer(file)
}

fn commit(writer: csv::Writer<AtomicFile>) -> io::Result<PathBuf> {
    writer
        .into_inner()
        .map_err(|e| io::Error::other(e.to_string()))?
        .commit()
}

/// Streams `counter_collection.csv`: one row per dispatch and counter.
pub struct CounterCollectionWriter {
    out: AtomicFile,
    line: Vec<u8>,
    prefix: Vec<u8>,
    suffix: Vec<u8>,
    order: Rocprofv3Order,
    table: Table,
    labels: AgentLabels,
}

/// How the `Agent_Id` column names an agent, as rocprofv3's `--agent-index` chooses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AgentLabels {
    /// `Agent <KFD node id>`: rocprofv3's absolute and relative indices alike, since rtl-pmc's
    /// logical node ids are the KFD node ids.
    #[default]
    Node,
    /// `GPU <n>`, the GPU's index among the GPUs in node order (rocprofv3's type-relative);
    /// holds the GPUs' node ids in that order.
    TypeRelative(Vec<u32>),
}

impl AgentLabels {
    /// Appends the quoted label of the agent of KFD node `node` to `line`.
    fn push(&self, line: &mut Vec<u8>, node: u32) {
        let index = match self {
            AgentLabels::TypeRelative(gpus) => gpus.iter().position(|&g| g == node),
            AgentLabels::Node => None,
        };
        match index {
            Some(i) => {
                line.extend_from_slice(b"\"GPU ");
                push_unsigned(line, i as u64);
            }
            None => {
                line.extend_from_slice(b"\"Agent ");
                push_unsigned(line, u64::from(node));
            }
        }
        line.push(b'"');
    }
}

/// Which per-process table a [`CounterCollectionWriter`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// `counter_collection.csv`: a row per dispatch and counter.
    CounterCollection,
    /// `kernel_trace.csv`: a row per dispatch.
    KernelTrace,
}

impl Table {
    /// The file's kind, as in `<pid>_<kind>.csv`.
    pub fn kind(self) -> &'static str {
        match self {
            Table::CounterCollection => "counter_collection",
            Table::KernelTrace => "kernel_trace",
        }
    }

    fn columns(self) -> &'static [&'static str] {
        match self {
            Table::CounterCollection => &COUNTER_COLLECTION_COLUMNS,
            Table::KernelTrace => &KERNEL_TRACE_COLUMNS,
        }
    }
}

/// `text` as a CSV field in double quotes (inner quotes doubled).
fn push_quoted(line: &mut Vec<u8>, text: &str) {
    line.push(b'"');
    match text.contains('"') {
        true => line.extend_from_slice(text.replace('"', "\"\"").as_bytes()),
        false => line.extend_from_slice(text.as_bytes()),
    }
    line.push(b'"');
}

impl CounterCollectionWriter {
    /// Starts `path`, a `table`, and writes the header.
    pub fn of(
        table: Table,
        path: &Path,
        labels: &AgentLabels,
    ) -> io::Result<CounterCollectionWriter> {
        let mut out = AtomicFile::create(path)?;
        let header: Vec<String> = table.columns().iter().map(|c| format!("\"{c}\"")).collect();
        writeln!(out, "{}", header.join(","))?;
        Ok(CounterCollectionWriter {
            out,
            line: Vec::new(),
            prefix: Vec::new(),
            suffix: Vec::new(),
            order: Rocprofv3Order::default(),
            table,
            labels: labels.clone(),
        })
    }

    /// Writes the rows of `d`: one per counter, or its kernel trace row.
    pub fn write(&mut self, d: &Dispatch) -> io::Result<()> {
        if self.table == Table::KernelTrace {
            return self.write_trace(d);
        }
        if d.counters.is_empty() {
            return Ok(());
        }
        let kernel_id = d.kernel_id;
        let prefix = &mut self.prefix;
        prefix.clear();
        push_unsigned(prefix, d.correlation_id);
        push_fields(prefix, &[d.dispatch_id]);
        prefix.push(b',');
        self.labels.push(prefix, d.agent);
        push_fields(
            prefix,
            &[
                d.queue_id,
                u64::from(d.pid),
                u64::from(d.tid),
                d.grid_size(),
                kernel_id,
            ],
        );
        prefix.push(b',');
        push_quoted(prefix, &d.kernel);
        push_fields(
            prefix,
            &[
                d.workgroup_size(),
                d.lds_block_size(),
                u64::from(d.scratch),
                u64::from(d.arch_vgpr),
                u64::from(d.accum_vgpr),
                u64::from(d.sgpr),
            ],
        );
        prefix.push(b',');
        // The fields after the counter's, the same on each of the dispatch's rows.
        let suffix = &mut self.suffix;
        suffix.clear();
        push_fields(suffix, &[d.start_ns, d.end_ns]);
        suffix.push(b'\n');
        let line = &mut self.line;
        line.clear();
        for &i in self.order.of(d) {
            let c = &d.counters[i];
            line.extend_from_slice(prefix);
            push_quoted(line, &c.name);
            line.push(b',');
            push_fixed6(line, c.total);
            line.extend_from_slice(suffix);
        }
        self.out.write_all(line)
    }

    /// Writes `d`'s row of `kernel_trace.csv`.
    fn write_trace(&mut self, d: &Dispatch) -> io::Result<()> {
        let kernel_id = d.kernel_id;
        let line = &mut self.line;
        line.clear();
        line.extend_from_slice(b"\"KERNEL_DISPATCH\",");
        self.labels.push(line, d.agent);
        push_fields(
            line,
            &[d.queue_id, 0, u64::from(d.tid), d.dispatch_id, kernel_id],
        );
        line.push(b',');
        push_quoted(line, &d.kernel);
        let [wx, wy, wz] = d.workgroup.map(u64::from);
        let [gx, gy, gz] = d.grid.map(u64::from);
        push_fields(
            line,
            &[
                d.correlation_id,
                d.start_ns,
                d.end_ns,
                d.lds_block_size(),
                u64::from(d.scratch),
                u64::from(d.arch_vgpr),
                u64::from(d.accum_vgpr),
                u64::from(d.sgpr),
                wx,
                wy,
                wz,
                gx,
                gy,
                gz,
            ],
        );
        line.push(b'\n');
        self.out.write_all(line)
    }

    /// Finishes the file and gives it its name.
    pub fn commit(self) -> io::Result<PathBuf> {
        self.out.commit()
    }
}

/// Writes `agent_info.csv`: a row per CPU, then per GPU, by node id.
pub fn write_agent_info(path: &Path, cpus: &[Agent], gpus: &[Agent]) -> io::Result<PathBuf> {
    let mut out = quoted_writer(AtomicFile::create(path)?);
    out.write_record(AGENT_INFO_COLUMNS.iter().map(|(c, _)| *c))
        .map_err(csv_error)?;
    let mut agents: Vec<(&Agent, bool)> = cpus
        .iter()
        .map(|a| (a, true))
        .chain(gpus.iter().map(|a| (a, false)))
        .collect();
    agents.sort_by_key(|(a, _)| a.node_id);
    for (agent, cpu) in agents {
        let row: Vec<String> = AGENT_INFO_COLUMNS
            .iter()
            .map(|&(column, property)| agent_info_value(column, property, agent, cpu))
            .collect();
        out.write_record(&row).map_err(csv_error)?;
    }
    commit(out)
}

/// rocprofv3's `kernel_stats.csv` columns, in its order.
pub const KERNEL_STATS_COLUMNS: [&str; 8] = [
    "Name",
    "Calls",
    "TotalDurationNs",
    "AverageNs",
    "Percentage",
    "MinNs",
    "MaxNs",
    "StdDev",
];

/// A fraction as rocprofv3's CSV files print one: six decimals from 1 up, else scientific with
/// eight decimals and a signed exponent of at least two digits (`5.00000000e-01`).
pub fn rocprofv3_float(value: f64) -> String {
    if value.abs() >= 1.0 || !value.is_finite() {
        return format!("{value:.6}");
    }
    let text = format!("{value:.8e}");
    let Some((mantissa, exponent)) = text.split_once('e') else {
        return text;
    };
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(digits) => ('-', digits),
        None => ('+', exponent),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

/// Writes `kernel_stats.csv`: one row per kernel, in the order given.
pub fn write_kernel_stats(path: &Path, stats: &[KernelStats]) -> io::Result<PathBuf> {
    let mut out = AtomicFile::create(path)?;
    let mut text = Vec::new();
    let header: Vec<String> = KERNEL_STATS_COLUMNS
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect();
    text.extend_from_slice(header.join(",").as_bytes());
    text.push(b'\n');
    for s in stats {
        push_quoted(&mut text, &s.kernel);
        text.extend_from_slice(
            format!(
                ",{},{},{},{},{},{},{}\n",
                s.calls,
                s.total_ns,
                rocprofv3_float(s.average_ns),
                rocprofv3_float(s.percent),
                s.min_ns,
                s.max_ns,
                rocprofv3_float(s.stddev_ns)
            )
            .as_bytes(),
        );
    }
    out.write_all(&text)?;
    out.commit()
}

/// Streams rocprof v1's `results.csv`: one row per dispatch with every counter as a column.
pub struct ResultsWriter {
    out: AtomicFile,
    counters: Vec<String>,
    index: u64,
    line: Vec<u8>,
    estimates: Box<dyn EstimateColumns + Send>,
}

impl ResultsWriter {
    /// Starts `path` with the counter columns `counters` (in this order), and after `EndNs` the
    /// columns `estimates` gives for unmeasured dispatches.
    pub fn create(
        path: &Path,
        counters: &[String],
        estimates: Box<dyn EstimateColumns + Send>,
    ) -> io::Result<ResultsWriter> {
        let mut out = AtomicFile::create(path)?;
        let extra = estimates.columns();
        let header: Vec<&str> = RESULTS_LEADING_COLUMNS
            .iter()
            .copied()
            .chain(counters.iter().map(String::as_str))
            .chain(["BeginNs", "EndNs"])
            .chain(extra.iter().map(String::as_str))
            .collect();
        writeln!(out, "{}", header.join(","))?;
        Ok(ResultsWriter {
            out,
            counters: counters.to_vec(),
            index: 0,
            line: Vec::new(),
            estimates,
        })
    }

    /// Writes the row of `d`; counters it lacks print as [`MISSING`].
    pub fn write(&mut self, d: &Dispatch) -> io::Result<()> {
        let line = &mut self.line;
        line.clear();
        push_unsigned(line, self.index);
        line.push(b',');
        push_quoted(line, &d.kernel);
        push_fields(
            line,
            &[
                u64::from(d.agent),
                d.queue_id,
                d.queue_index,
                u64::from(d.pid),
                u64::from(d.tid),
                d.grid_size(),
                d.workgroup_size(),
                d.lds_block_size(),
                u64::from(d.scratch),
                u64::from(d.arch_vgpr),
                u64::from(d.accum_vgpr),
                u64::from(d.sgpr),
                u64::from(d.wave_size),
            ],
        );
        line.extend_from_slice(b",0x");
        push_hex(line, d.signal);
        line.extend_from_slice(b",0x");
        push_hex(line, d.kernel_object);
        for (i, name) in self.counters.iter().enumerate() {
            line.push(b',');
            match d.counter(name, i) {
                Some(c) => push_value(line, c.total),
                None => line.extend_from_slice(MISSING.as_bytes()),
            }
        }
        push_fields(line, &[d.start_ns, d.end_ns]);
        self.estimates.push_fields(line, d);
        line.push(b'\n');
        self.out.write_all(line)?;
        self.index += 1;
        Ok(())
    }

    /// Finishes the file and gives it its name.
    pub fn commit(self) -> io::Result<PathBuf> {
        self.out.commit()
    }
}

/// The path of a process's file of a table, by pid.
pub type CsvPaths<'a> = dyn Fn(u32, Table) -> PathBuf + Sync + 'a;

/// The per-process CSV files of a pass being written: for every process, one file of each
/// table asked for (processes given the same path share the file).
pub struct CounterCollectionFiles<'a> {
    paths: &'a CsvPaths<'a>,
    tables: &'a [Table],
    labels: &'a AgentLabels,
    by_pid: FastMap<u32, Vec<usize>>,
    files: Vec<(PathBuf, CounterCollectionWriter)>,
}

impl<'a> CounterCollectionFiles<'a> {
    /// No file yet; each is created with the first dispatch of a process it holds.
    pub fn new(
        paths: &'a CsvPaths<'a>,
        tables: &'a [Table],
        labels: &'a AgentLabels,
    ) -> CounterCollectionFiles<'a> {
        CounterCollectionFiles {
            paths,
            tables,
            labels,
            by_pid: FastMap::default(),
            files: Vec::new(),
        }
    }

    /// The files of process `pid`, created when new.
    fn of(&mut self, pid: u32) -> io::Result<Vec<usize>> {
        if let Some(indices) = self.by_pid.get(&pid) {
            return Ok(indices.clone());
        }
        let mut indices = Vec::with_capacity(self.tables.len());
        for &table in self.tables {
            let path = (self.paths)(pid, table);
            let i = match self.files.iter().position(|(p, _)| *p == path) {
                Some(i) => i,
                None => {
                    let out = CounterCollectionWriter::of(table, &path, self.labels)?;
                    self.files.push((path, out));
                    self.files.len() - 1
                }
            };
            indices.push(i);
        }
        self.by_pid.insert(pid, indices.clone());
        Ok(indices)
    }

    /// Appends `d` to its process's files.
    pub fn write(&mut self, d: &Dispatch) -> io::Result<()> {
        for i in self.of(d.pid)? {
            self.files[i].1.write(d)?;
        }
        Ok(())
    }

    /// Gives every file its name; returns them in the order they were started.
    pub fn commit(self) -> io::Result<Vec<PathBuf>> {
        self.files
            .into_iter()
            .map(|(_, out)| out.commit())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::rocprofv3_float;

    #[test]
    fn floats_are_written_as_rocprofv3_writes_them() {
        assert_eq!(rocprofv3_float(12.5), "12.500000");
        assert_eq!(rocprofv3_float(1.0), "1.000000");
        assert_eq!(rocprofv3_float(0.5), "5.00000000e-01");
        assert_eq!(rocprofv3_float(1e-10), "1.00000000e-10");
        assert_eq!(rocprofv3_float(-0.25), "-2.50000000e-01");
        assert_eq!(rocprofv3_float(0.0), "0.00000000e+00");
    }
}
