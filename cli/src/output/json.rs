//! `results.json`: the agents, counters and every dispatch with its counters (totals and
//! per-dimension values), streamed one dispatch at a time.
//!
//! ```json
//! {"rtl-pmc": {"version": 1, "agents": [...], "counters": [...], "dispatches": [{...}, ...]}}
//! ```

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::atomic::AtomicFile;
use super::model::{Agent, Dispatch};

/// The format version written in `results.json`.
pub const JSON_VERSION: u32 = 1;

/// Streams `results.json`.
pub struct JsonWriter {
    out: AtomicFile,
    first: bool,
}

fn agent_json(a: &Agent) -> Value {
    let properties: serde_json::Map<String, Value> = a
        .properties
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(*v)))
        .collect();
    json!({
        "node_id": a.node_id,
        "gpu_index": a.gpu_index,
        "name": a.name,
        "product_name": a.product_name,
        "properties": properties,
    })
}

/// One dispatch as a JSON object.
pub fn dispatch_json(d: &Dispatch) -> Value {
    let counters: Vec<Value> = d
        .counters
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "value": c.total,
                "dimensions": c.dimensions,
                "values": c.values,
            })
        })
        .collect();
    json!({
        "pid": d.pid,
        "tid": d.tid,
        "agent": d.agent,
        "queue_id": d.queue_id,
        "queue_index": d.queue_index,
        "dispatch_id": d.dispatch_id,
        "correlation_id": d.correlation_id,
        "kernel": d.kernel,
        "kernel_object": d.kernel_object,
        "grid": d.grid,
        "workgroup": d.workgroup,
        "lds": d.lds,
        "scratch": d.scratch,
        "arch_vgpr": d.arch_vgpr,
        "accum_vgpr": d.accum_vgpr,
        "sgpr": d.sgpr,
        "wave_size": d.wave_size,
        "signal": d.signal,
        "start_ns": d.start_ns,
        "end_ns": d.end_ns,
        "counters": counters,
    })
}

impl JsonWriter {
    /// Starts `path` with the agents and counter names.
    pub fn create(path: &Path, agents: &[Agent], counters: &[String]) -> io::Result<JsonWriter> {
        let mut out = AtomicFile::create(path)?;
        let agents: Vec<Value> = agents.iter().map(agent_json).collect();
        write!(
            out,
            "{{\"rtl-pmc\":{{\"version\":{JSON_VERSION},\"agents\":{},\"counters\":{},\"dispatches\":[",
            Value::from(agents),
            json!(counters)
        )?;
        Ok(JsonWriter { out, first: true })
    }

    /// Appends one dispatch.
    pub fn write(&mut self, d: &Dispatch) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        } else {
            self.out.write_all(b"\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.out, &dispatch_json(d)).map_err(io::Error::other)
    }

    /// Closes the document, with `"key": value` after the dispatches when given, and gives the
    /// file its name.
    pub fn commit(mut self, extra: Option<(&str, &Value)>) -> io::Result<PathBuf> {
        self.out.write_all(b"\n]")?;
        if let Some((key, value)) = extra {
            write!(self.out, ",{}:{value}", Value::from(key))?;
        }
        self.out.write_all(b"}}\n")?;
        self.out.commit()
    }
}
