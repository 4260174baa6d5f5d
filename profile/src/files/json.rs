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
//! by their index in `kernel_symbols` (rocprofiler-sdk's kernel id in a document of one
//! process, else numbered by name). One document holds every process of the profile (the
//! merged dispatches, each with its first pass's process). rtl-pmc's additions are under
//! `"rtl-pmc"`: in the document, the format version, the processes and each counter's unit
//! and dimensions; in each record, the process id, the packet index and the counters' totals.
//! The application's roctx regions, when it made roctx calls, are under `"rtl-pmc-roctx"`,
//! after `callback_records`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use rtl_pmc_counters::Dimension;

use crate::agent_info::agents_json;
use crate::fast_map::FastMap;
use crate::files::atomic::AtomicFile;
use crate::model::{Agent, Dispatch, Node, ProfileFacts};

/// The version of rtl-pmc's additions under `"rtl-pmc"`.
pub const JSON_VERSION: u32 = 2;

/// rocprofv3's `buffer_records` after `kernel_dispatch`, in its order: the kinds of records
/// rtl-pmc does not trace, each an empty list.
const UNTRACED_BUFFER_RECORDS: &str = "\"hip_api\":[],\"hsa_api\":[],\"marker_api\":[],\
    \"rccl_api\":[],\"memory_copy\":[],\"memory_allocation\":[],\"scratch_memory\":[],\
    \"rocdecode_api\":[],\"rocjpeg_api\":[],\"pc_sample_host_trap\":[],\
    \"pc_sample_stochastic\":[]";

/// `sizeof` of rocprofiler-sdk's records as rocprofv3 writes them in each record's `size`:
/// the kernel dispatch trace record, the counter collection's dispatch data and the dispatch
/// information both hold.
const KERNEL_DISPATCH_RECORD_SIZE: u64 = 184;
const DISPATCH_DATA_SIZE: u64 = 168;
const DISPATCH_INFO_SIZE: u64 = 72;

/// rocprofiler-sdk's buffer tracing kind of a kernel dispatch record and its operation
/// (the dispatch completed).
const KERNEL_DISPATCH_KIND: u32 = 11;
const KERNEL_DISPATCH_COMPLETE: u32 = 2;

/// `sizeof` of rocprofiler-sdk's kernel symbol record, each symbol's `size`.
const KERNEL_SYMBOL_SIZE: u64 = 88;

/// A kernel symbol's entry before its dispatches complete it.
fn kernel_symbol(id: i64, name: &str) -> Value {
    json!({
        "size": KERNEL_SYMBOL_SIZE,
        "kernel_id": id,
        "kernel_name": name,
        "formatted_kernel_name": name,
    })
}

/// rocprofv3's entry for a kernel id without a symbol (id 0 among them).
fn default_kernel_symbol() -> Value {
    json!({
        "size": 0, "kernel_id": 0, "code_object_id": 0, "kernel_name": "", "kernel_object": 0,
        "kernarg_segment_size": 0, "kernarg_segment_alignment": 0, "group_segment_size": 0,
        "private_segment_size": 0, "sgpr_count": 0, "arch_vgpr_count": 0,
        "accum_vgpr_count": 0, "kernel_code_entry_byte_offset": 0,
        "kernel_address": {"handle": 0}, "formatted_kernel_name": "0",
        "demangled_kernel_name": "0", "truncated_kernel_name": "0",
    })
}

/// rocprofv3's first entries of `code_objects` and `host_functions`, for id 0: rtl-pmc
/// traces neither code objects nor HIP's host functions, so they are the only ones.
const DEFAULT_CODE_OBJECT: &str = "{\"size\":0,\"code_object_id\":0,\"agent_id\":{\"handle\":0},\
    \"uri\":\"\",\"load_base\":0,\"load_size\":0,\"load_delta\":0,\"storage_type\":0}";
const DEFAULT_HOST_FUNCTION: &str = "{\"size\":0,\"host_function_id\":0,\"kernel_id\":0,\
    \"code_object_id\":0,\"host_function\":{\"handle\":0},\"modules\":{\"handle\":0},\
    \"device_function\":\"\",\"thread_limit\":0,\"thread_ids\":{\"x\":0,\"y\":0,\"z\":0},\
    \"block_ids\":{\"x\":0,\"y\":0,\"z\":0},\"block_dims\":{\"x\":0,\"y\":0,\"z\":0},\
    \"grid_dims\":{\"x\":0,\"y\":0,\"z\":0},\"workgroup_size\":0,\
    \"formatted_host_function_name\":\"\",\"demangled_host_function_name\":\"\",\
    \"truncated_host_function_name\":\"\"}";

/// The dimensions of a counter listed as `DIMENSION_XCC[0:7] DIMENSION_SHADER_ENGINE[0:3]`:
/// each with its first index and its size, in the listing's order (that of the values).
fn listed_dimensions(listing: &str) -> Vec<(Dimension, u64, u64)> {
    listing
        .split_whitespace()
        .filter_map(|d| {
            let (name, range) = d.split_once('[')?;
            let (low, high) = range.trim_end_matches(']').split_once(':')?;
            let low = low.parse::<u64>().ok()?;
            let size = high.parse::<u64>().ok()? + 1 - low;
            Some((Dimension::from_name(name)?, low, size))
        })
        .collect()
}

/// rocprofiler-sdk's bits per dimension index in a counter instance id, below the counter id's
/// 16 bits: 48 bits shared by its 8 dimension numbers.
const DIMENSION_BITS: u32 = 6;

/// A counter's `dimensions` and `instances` as rocprofv3 writes them: dimensions by
/// rocprofiler-sdk's number, highest first; one instance per value position, in the values'
/// order, its id the counter id over each dimension's index at that dimension's bits.
fn dimensions_json(id: i64, dimensions: &[(Dimension, u64, u64)]) -> (Vec<Value>, Vec<Value>) {
    let mut by_number: Vec<usize> = (0..dimensions.len()).collect();
    by_number.sort_by_key(|&i| std::cmp::Reverse(dimensions[i].0.rocprofiler_sdk_id()));
    let listed = by_number
        .iter()
        .map(|&i| {
            let (d, _, size) = dimensions[i];
            json!({"id": d.rocprofiler_sdk_id(), "instance_size": size, "name": d.name()})
        })
        .collect();
    let count: u64 = dimensions.iter().map(|d| d.2).product();
    let mut instances = Vec::with_capacity(count as usize);
    for position in 0..count {
        // Row-major, the last dimension fastest.
        let mut index = vec![0; dimensions.len()];
        let mut rest = position;
        for (i, &(_, low, size)) in dimensions.iter().enumerate().rev() {
            index[i] = low + rest % size;
            rest /= size;
        }
        let mut instance_id = (id as u64) << 48;
        for (i, &(d, _, _)) in dimensions.iter().enumerate() {
            instance_id |= index[i] << ((d.rocprofiler_sdk_id() - 1) * DIMENSION_BITS);
        }
        let named: Vec<Value> = by_number
            .iter()
            .map(|&i| json!({"dimension_name": dimensions[i].0.name(), "index": index[i]}))
            .collect();
        instances.push(json!({"instance_id": instance_id, "counter_id": id, "dimensions": named}));
    }
    (listed, instances)
}

/// Streams `results.json`, or one process's `<pid>_results.json`.
pub struct JsonWriter {
    out: AtomicFile,
    first: bool,
    counter_ids: FastMap<String, i64>,
    kernel_ids: FastMap<String, i64>,
    /// Kernels are numbered by their symbols' ids, as rocprofv3 numbers them, rather than by
    /// name: the document holds one process and each dispatch has its symbol's id.
    symbol_ids: bool,
    /// The kernel symbols, completed from the dispatches and written last, after
    /// `buffer_records`.
    symbols: Vec<Value>,
    /// `buffer_records.kernel_dispatch` was started (after the counter records).
    kernel_dispatch: bool,
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
        JsonWriter::start(path, gpus, cpus, facts, estimates)
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
        JsonWriter::start(path, gpus, cpus, facts, Value::Null)
    }

    fn start(
        path: &Path,
        gpus: &[Agent],
        cpus: &[Agent],
        facts: &ProfileFacts,
        estimates: Value,
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
        let agents: Vec<Value> = agents_json(gpus, cpus)
            .into_iter()
            .map(|(_, agent)| agent)
            .collect();
        // Every distinct (dimension, size), as rocprofv3 lists them under `strings`.
        let mut dimension_ids = std::collections::BTreeSet::new();
        let mut counters = Vec::new();
        let mut extras = Vec::new();
        for (id, info, listing) in &facts.counters {
            let listed = listed_dimensions(listing);
            dimension_ids.extend(
                listed
                    .iter()
                    .map(|&(d, _, size)| (d.rocprofiler_sdk_id(), size, d)),
            );
            let (dimensions, instances) = dimensions_json(*id, &listed);
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
                    "instances": instances,
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
            .map(|(id, size, d)| json!({"id": id, "instance_size": size, "name": d.name()}))
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
        // Indexed by kernel id; ids without a kernel get rocprofv3's default entry. Symbols
        // numbered by their ids are added as their dispatches come.
        let symbol_ids = facts.symbol_ids && facts.processes.len() == 1;
        let mut kernel_symbols = vec![default_kernel_symbol()];
        if !symbol_ids {
            for (id, name) in &facts.kernels {
                let at = *id as usize;
                if kernel_symbols.len() <= at {
                    kernel_symbols.resize(at + 1, default_kernel_symbol());
                }
                kernel_symbols[at] = kernel_symbol(*id, name);
            }
        }
        let mut extras = json!({
            "version": JSON_VERSION,
            "processes": facts.processes,
            "counters": extras,
        });
        if let (Some(extras), Value::Object(estimates)) = (extras.as_object_mut(), estimates) {
            extras.extend(estimates);
        }
        write!(
            out,
            "{{\"rocprofiler-sdk-tool\":[{{\"metadata\":{metadata},\"agents\":{},\
             \"counters\":{},\"strings\":{strings},\"code_objects\":[{DEFAULT_CODE_OBJECT}],\
             \"host_functions\":[{DEFAULT_HOST_FUNCTION}],\"summary\":[],\"rtl-pmc\":{extras},\
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
            symbol_ids,
            symbols: kernel_symbols,
            kernel_dispatch: false,
        })
    }

    /// `d`'s kernel id in this document (0 when unknown).
    fn kernel_id(&self, d: &Dispatch) -> i64 {
        match self.symbol_ids {
            true => d.kernel_id as i64,
            false => self.kernel_ids.get(&d.kernel).copied().unwrap_or(0),
        }
    }

    /// Completes `d`'s kernel symbol with what its dispatch tells: the descriptor's address, the
    /// sizes and the registers (its entry made first when kernels are numbered by symbol).
    fn note_symbol(&mut self, d: &Dispatch) {
        let id = self.kernel_id(d);
        let at = id as usize;
        if id <= 0 {
            return;
        }
        if self.symbol_ids {
            if self.symbols.len() <= at {
                self.symbols.resize(at + 1, default_kernel_symbol());
            }
            if self.symbols[at]["size"] == 0 {
                self.symbols[at] = kernel_symbol(id, &d.kernel);
            }
        }
        if let Some(Value::Object(symbol)) = self.symbols.get_mut(at) {
            symbol.insert("kernel_object".into(), json!(d.kernel_object));
            for (key, value) in [
                ("group_segment_size", d.lds),
                ("private_segment_size", d.scratch),
                ("sgpr_count", d.sgpr),
                ("arch_vgpr_count", d.arch_vgpr),
                ("accum_vgpr_count", d.accum_vgpr),
            ] {
                symbol.insert(key.into(), json!(value));
            }
        }
    }

    /// `d`'s `dispatch_info`.
    fn dispatch_info(&self, d: &Dispatch) -> Value {
        let [gx, gy, gz] = d.grid;
        let [wx, wy, wz] = d.workgroup;
        json!({
            "size": DISPATCH_INFO_SIZE,
            "agent_id": {"handle": d.agent},
            "queue_id": {"handle": d.queue_id},
            "kernel_id": self.kernel_id(d),
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
        for c in d.counters_in_rocprofv3_order() {
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
                "size": DISPATCH_DATA_SIZE,
                "correlation_id": {"internal": d.correlation_id, "external": 0},
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
        self.note_symbol(d);
        serde_json::to_writer(&mut self.out, &record).map_err(io::Error::other)
    }

    /// Ends the counter records and starts `buffer_records.kernel_dispatch`.
    pub fn kernel_dispatches(&mut self) -> io::Result<()> {
        self.first = true;
        self.kernel_dispatch = true;
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
        self.note_symbol(d);
        let record = json!({
            "size": KERNEL_DISPATCH_RECORD_SIZE,
            "kind": KERNEL_DISPATCH_KIND,
            "operation": KERNEL_DISPATCH_COMPLETE,
            "thread_id": d.tid,
            "correlation_id": {"internal": d.correlation_id, "external": 0},
            "start_timestamp": d.start_ns,
            "end_timestamp": d.end_ns,
            "dispatch_info": self.dispatch_info(d),
            "stream_id": {"handle": 0},
        });
        serde_json::to_writer(&mut self.out, &record).map_err(io::Error::other)
    }

    /// Closes the document, with `"key": value` after `callback_records` when given, and gives
    /// the file its name.
    pub fn commit(mut self, extra: Option<(&str, &Value)>) -> io::Result<PathBuf> {
        match self.kernel_dispatch {
            true => write!(self.out, "\n],{UNTRACED_BUFFER_RECORDS}}}")?,
            false => write!(
                self.out,
                "\n]}},\"buffer_records\":{{\"kernel_dispatch\":[],{UNTRACED_BUFFER_RECORDS}}}"
            )?,
        }
        let symbols = std::mem::take(&mut self.symbols);
        write!(self.out, ",\"kernel_symbols\":{}", Value::from(symbols))?;
        if let Some((key, value)) = extra {
            write!(self.out, ",{}:{value}", Value::from(key))?;
        }
        self.out.write_all(b"}]}\n")?;
        self.out.commit()
    }
}
