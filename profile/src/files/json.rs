//! `results.json` in rocprofv3's layout for counter collection, streamed one dispatch at a
//! time:
//!
//! ```json
//! {"rocprofiler-sdk-tool": [{"metadata": {...}, "agents": [...], "counters": [...],
//!   "strings": {...}, "code_objects": [], "kernel_symbols": [...], "host_functions": [],
//!   "summary": [], "buffer_records": {...}, "rtl-pmc": {...},
//!   "callback_records": {"counter_collection": [{...}, ...]}}]}
//! ```
//!
//! As rocprofv3 writes them, a counter record's `records` hold one `{counter_id, value}` per
//! dimension position (their sum is the counter's value), counters are found by
//! `counters[].id.handle`, agents by `agents[].id.handle` (here the KFD node id) and kernels
//! by their index in `kernel_symbols`. One document holds every process of the profile (the
//! merged dispatches, each with its first pass's process). rtl-pmc's additions are under
//! `"rtl-pmc"`: in the document, the format version, the processes and each counter's unit
//! and dimensions; in each record, the process id, the packet index and the counters' totals.
//! The application's roctx regions, when it made roctx calls, are under `"rtl-pmc-roctx"`,
//! after `callback_records`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::fast_map::FastMap;
use crate::files::atomic::AtomicFile;
use crate::model::{Agent, Dispatch, Node, ProfileFacts};

/// The version of rtl-pmc's additions under `"rtl-pmc"`.
pub const JSON_VERSION: u32 = 2;

/// rocprofiler's agent types: 1 for a CPU, 2 for a GPU.
fn agent_json(a: &Agent, cpu: bool, type_index: usize) -> Value {
    let mut fields = Map::new();
    fields.insert("id".into(), json!({ "handle": a.node_id }));
    fields.insert("type".into(), json!(if cpu { 1 } else { 2 }));
    for (k, v) in &a.properties {
        fields.insert(k.clone(), json!(v));
    }
    fields.insert("name".into(), json!(a.name));
    fields.insert("vendor_name".into(), json!(if cpu { "CPU" } else { "AMD" }));
    fields.insert("product_name".into(), json!(a.product_name));
    fields.insert("model_name".into(), json!(a.name));
    fields.insert("node_id".into(), json!(a.node_id));
    fields.insert("logical_node_id".into(), json!(a.node_id));
    fields.insert("logical_node_type_id".into(), json!(type_index));
    if !cpu {
        fields.insert("gpu_index".into(), json!(a.gpu_index));
    }
    Value::Object(fields)
}

/// The dimensions of a counter listed as `DIMENSION_XCC[0:7] DIMENSION_SHADER_ENGINE[0:3]`,
/// as rocprofv3's `{id, instance_size, name}` (ids by first appearance in `ids`).
fn dimensions_json(listing: &str, ids: &mut Vec<String>) -> Vec<Value> {
    listing
        .split_whitespace()
        .filter_map(|d| {
            let (name, range) = d.split_once('[')?;
            let (low, high) = range.trim_end_matches(']').split_once(':')?;
            let size = high.parse::<u64>().ok()? + 1 - low.parse::<u64>().ok()?;
            let id = match ids.iter().position(|n| n == name) {
                Some(i) => i,
                None => {
                    ids.push(name.to_string());
                    ids.len() - 1
                }
            };
            Some(json!({"id": id, "instance_size": size, "name": name}))
        })
        .collect()
}

/// Streams `results.json`, or one process's `<pid>_results.json`.
pub struct JsonWriter {
    out: AtomicFile,
    first: bool,
    counter_ids: FastMap<String, i64>,
    kernel_ids: FastMap<String, i64>,
    /// In a process's own file, the kernel symbols, completed from the dispatches and written
    /// last, after `buffer_records`.
    symbols: Option<Vec<Value>>,
}

impl JsonWriter {
    /// Starts `path` with everything but the records.
    pub fn create(
        path: &Path,
        gpus: &[Agent],
        cpus: &[Agent],
        facts: &ProfileFacts,
        estimates: Value,
    ) -> io::Result<JsonWriter> {
        JsonWriter::start(path, gpus, cpus, facts, estimates, false)
    }

    /// Starts one process's file as rocprofv3 writes it: its counter records, then (after
    /// [`JsonWriter::kernel_dispatches`]) `buffer_records.kernel_dispatch`, then the kernel
    /// symbols with the sizes their dispatches had; `facts` holds that process alone.
    pub fn create_for_process(
        path: &Path,
        gpus: &[Agent],
        cpus: &[Agent],
        facts: &ProfileFacts,
    ) -> io::Result<JsonWriter> {
        JsonWriter::start(path, gpus, cpus, facts, Value::Null, true)
    }

    fn start(
        path: &Path,
        gpus: &[Agent],
        cpus: &[Agent],
        facts: &ProfileFacts,
        estimates: Value,
        per_process: bool,
    ) -> io::Result<JsonWriter> {
        let mut out = AtomicFile::create(path)?;
        let node = Node::here();
        let metadata = json!({
            "node": {
                "id": node.id(),
                "hash": node.hash(),
                "machine_id": node.machine_id,
                "system_name": node.system_name,
                "hostname": node.hostname,
                "release": node.release,
                "version": node.version,
                "hardware_name": node.hardware_name,
                "domain_name": node.domain_name,
            },
            "pid": facts.processes.first().copied().unwrap_or(0),
            "init_time": facts.span.0,
            "fini_time": facts.span.1,
            "command": facts.run.command,
            "config": {},
        });
        let mut sorted: Vec<(&Agent, bool)> = cpus
            .iter()
            .map(|a| (a, true))
            .chain(gpus.iter().map(|a| (a, false)))
            .collect();
        sorted.sort_by_key(|(a, _)| a.node_id);
        let (mut cpu_index, mut gpu_index) = (0, 0);
        let agents: Vec<Value> = sorted
            .iter()
            .map(|&(a, cpu)| {
                let index = if cpu { &mut cpu_index } else { &mut gpu_index };
                *index += 1;
                agent_json(a, cpu, *index - 1)
            })
            .collect();
        let mut dimension_ids = Vec::new();
        let mut counters = Vec::new();
        let mut extras = Vec::new();
        for (id, info, listing) in &facts.counters {
            let dimensions = dimensions_json(listing, &mut dimension_ids);
            for gpu in gpus {
                counters.push(json!({
                    "agent_id": {"handle": gpu.node_id},
                    "id": {"handle": id},
                    "is_constant": 0,
                    "is_derived": u8::from(info.derived),
                    "name": info.name,
                    "description": info.description,
                    "block": info.block.as_deref().unwrap_or(""),
                    "expression": info.expression.as_deref().unwrap_or(""),
                    "dimensions": dimensions,
                }));
            }
            extras.push(json!({
                "id": id,
                "name": info.name,
                "unit": info.unit,
                "dimensions": listing,
            }));
        }
        let dimension_ids: Vec<Value> = dimension_ids
            .iter()
            .enumerate()
            .map(|(id, name)| json!({"id": id, "name": name}))
            .collect();
        let strings = json!({
            "callback_records": [],
            "buffer_records": [],
            "marker_api": [],
            "correlation_id": {"external": []},
            "counters": {"dimension_ids": dimension_ids},
            "pc_sample_instructions": [],
            "pc_sample_comments": [],
            "att_filenames": [],
            "code_object_snapshot_filenames": [],
        });
        // Indexed by kernel id; ids without a kernel get an empty entry.
        let last = facts.kernels.iter().map(|(id, _)| *id).max().unwrap_or(0);
        let mut kernel_symbols = vec![json!({}); last as usize + 1];
        for (id, name) in &facts.kernels {
            kernel_symbols[*id as usize] = json!({
                "kernel_id": id,
                "kernel_name": name,
                "formatted_kernel_name": name,
            });
        }
        let mut extras = json!({
            "version": JSON_VERSION,
            "processes": facts.processes,
            "counters": extras,
        });
        if let (Some(extras), Value::Object(estimates)) = (extras.as_object_mut(), estimates) {
            extras.extend(estimates);
        }
        let (symbols, inline) = match per_process {
            true => (Some(kernel_symbols), String::new()),
            false => (
                None,
                format!(
                    "\"kernel_symbols\":{},\"buffer_records\":{{}},",
                    Value::from(kernel_symbols)
                ),
            ),
        };
        write!(
            out,
            "{{\"rocprofiler-sdk-tool\":[{{\"metadata\":{metadata},\"agents\":{},\
             \"counters\":{},\"strings\":{strings},\"code_objects\":[],\
             \"host_functions\":[],\"summary\":[],{inline}\"rtl-pmc\":{extras},\
             \"callback_records\":{{\"counter_collection\":[",
            Value::from(agents),
            Value::from(counters),
        )?;
        Ok(JsonWriter {
            out,
            first: true,
            counter_ids: facts
                .counters
                .iter()
                .map(|(id, info, _)| (info.name.clone(), *id))
                .collect(),
            kernel_ids: facts
                .kernels
                .iter()
                .map(|(id, name)| (name.clone(), *id))
                .collect(),
            symbols,
        })
    }

    /// `d`'s `dispatch_info`.
    fn dispatch_info(&self, d: &Dispatch) -> Value {
        let [gx, gy, gz] = d.grid;
        let [wx, wy, wz] = d.workgroup;
        json!({
            "agent_id": {"handle": d.agent},
            "queue_id": {"handle": d.queue_id},
            "kernel_id": self.kernel_ids.get(&d.kernel).copied().unwrap_or(0),
            "dispatch_id": d.dispatch_id,
            "private_segment_size": d.scratch,
            "group_segment_size": d.lds,
            "workgroup_size": {"x": wx, "y": wy, "z": wz},
            "grid_size": {"x": gx, "y": gy, "z": gz},
        })
    }

    /// One dispatch as rocprofv3's counter collection record.
    pub fn record(&self, d: &Dispatch) -> Value {
        let mut records = Vec::new();
        let mut totals = Map::new();
        for c in &d.counters {
            let id = self.counter_ids.get(&c.name).copied().unwrap_or(0);
            let values = match c.values.is_empty() {
                true => std::slice::from_ref(&c.total),
                false => c.values.as_slice(),
            };
            for v in values {
                records.push(json!({"counter_id": {"handle": id}, "value": v}));
            }
            totals.insert(c.name.clone(), json!(c.total));
        }
        json!({
            "thread_id": d.tid,
            "dispatch_data": {
                "correlation_id": {"internal": d.correlation_id, "external": 0, "ancestor": 0},
                "start_timestamp": d.start_ns,
                "end_timestamp": d.end_ns,
                "dispatch_info": self.dispatch_info(d),
            },
            "records": records,
            "stream_id": {"handle": 0},
            // Where rocprofv3's schema puts the kernel's resources, which rocprof-compute reads.
            "lds_block_size_v": d.lds_block_size(),
            "arch_vgpr_count": d.arch_vgpr,
            "accum_vgpr_count": d.accum_vgpr,
            "sgpr_count": d.sgpr,
            "rtl-pmc": {
                "pid": d.pid,
                "kernel": d.kernel,
                "queue_index": d.queue_index,
                "arch_vgpr_count": d.arch_vgpr,
                "accum_vgpr_count": d.accum_vgpr,
                "sgpr_count": d.sgpr,
                "counters": totals,
            },
        })
    }

    /// Appends one dispatch.
    pub fn write(&mut self, d: &Dispatch) -> io::Result<()> {
        match self.first {
            true => self.out.write_all(b"\n")?,
            false => self.out.write_all(b",\n")?,
        }
        self.first = false;
        let record = self.record(d);
        if let Some(symbols) = self.symbols.as_mut() {
            let id = self.kernel_ids.get(&d.kernel).copied().unwrap_or(0) as usize;
            if let Some(Value::Object(symbol)) = symbols.get_mut(id) {
                for (key, value) in [
                    ("private_segment_size", d.scratch),
                    ("group_segment_size", d.lds),
                    ("arch_vgpr_count", d.arch_vgpr),
                    ("accum_vgpr_count", d.accum_vgpr),
                    ("sgpr_count", d.sgpr),
                ] {
                    symbol.insert(key.into(), json!(value));
                }
            }
        }
        serde_json::to_writer(&mut self.out, &record).map_err(io::Error::other)
    }

    /// In a process's own file, ends the counter records and starts
    /// `buffer_records.kernel_dispatch`.
    pub fn kernel_dispatches(&mut self) -> io::Result<()> {
        self.first = true;
        self.out
            .write_all(b"\n]},\"buffer_records\":{\"kernel_dispatch\":[")
    }

    /// Appends `d` as rocprofv3's kernel dispatch trace record.
    pub fn write_kernel_dispatch(&mut self, d: &Dispatch) -> io::Result<()> {
        match self.first {
            true => self.out.write_all(b"\n")?,
            false => self.out.write_all(b",\n")?,
        }
        self.first = false;
        let record = json!({
            "thread_id": d.tid,
            "correlation_id": {"internal": d.correlation_id, "external": 0, "ancestor": 0},
            "start_timestamp": d.start_ns,
            "end_timestamp": d.end_ns,
            "dispatch_info": self.dispatch_info(d),
        });
        serde_json::to_writer(&mut self.out, &record).map_err(io::Error::other)
    }

    /// Closes the document, with `"key": value` after `callback_records` when given, and gives
    /// the file its name.
    pub fn commit(mut self, extra: Option<(&str, &Value)>) -> io::Result<PathBuf> {
        self.out.write_all(b"\n]}")?;
        if let Some(symbols) = self.symbols.take() {
            write!(self.out, ",\"kernel_symbols\":{}", Value::from(symbols))?;
        }
        if let Some((key, value)) = extra {
            write!(self.out, ",{}:{value}", Value::from(key))?;
        }
        self.out.write_all(b"}]}\n")?;
        self.out.commit()
    }
}
