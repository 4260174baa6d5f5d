//! `results.pftrace`: a Perfetto protobuf trace with a slice per dispatch (one track per GPU
//! queue, grouped under a track per GPU) and a counter track per GPU and counter holding each
//! dispatch's total while it runs; and the application's roctx ranges and marks per process and
//! thread.
//!
//! The few messages needed are written by hand with prost; field numbers are those of
//! Perfetto's `perfetto_trace.proto`. A trace is a sequence of `Trace.packet` fields, so packets
//! are streamed one at a time.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use prost::Message;

use crate::files::atomic::AtomicFile;
use crate::model::{Agent, Dispatch, RegionRow};

/// `perfetto.protos.Trace`.
#[derive(Clone, PartialEq, Message)]
pub struct Trace {
    /// Packets.
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `perfetto.protos.TracePacket` (the fields used here).
#[derive(Clone, PartialEq, Message)]
pub struct TracePacket {
    /// Timestamp, ns (boot time).
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// Writer sequence.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// A track event.
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    /// `SEQ_INCREMENTAL_STATE_CLEARED` = 1 on the first packet.
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// A track description.
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

/// `perfetto.protos.TrackDescriptor`.
#[derive(Clone, PartialEq, Message)]
pub struct TrackDescriptor {
    /// Track id.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// Track name.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// Parent track id.
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// Present on counter tracks.
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `perfetto.protos.CounterDescriptor`.
#[derive(Clone, PartialEq, Message)]
pub struct CounterDescriptor {
    /// Free-form unit name.
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
}

/// `perfetto.protos.TrackEvent` (the fields used here).
#[derive(Clone, PartialEq, Message)]
pub struct TrackEvent {
    /// Arguments shown with a slice.
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    /// [`SLICE_BEGIN`], [`SLICE_END`] or [`COUNTER`].
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    /// The track.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// Slice name.
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    /// Counter value.
    #[prost(double, optional, tag = "44")]
    pub double_counter_value: Option<f64>,
}

/// `perfetto.protos.DebugAnnotation` (the fields used here).
#[derive(Clone, PartialEq, Message)]
pub struct DebugAnnotation {
    /// Unsigned value.
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    /// Floating value.
    #[prost(double, optional, tag = "5")]
    pub double_value: Option<f64>,
    /// Text value.
    #[prost(string, optional, tag = "6")]
    pub string_value: Option<String>,
    /// Argument name.
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
}

/// `TrackEvent.Type.TYPE_SLICE_BEGIN`.
pub const SLICE_BEGIN: i32 = 1;
/// `TrackEvent.Type.TYPE_SLICE_END`.
pub const SLICE_END: i32 = 2;
/// `TrackEvent.Type.TYPE_INSTANT`.
pub const INSTANT: i32 = 3;
/// `TrackEvent.Type.TYPE_COUNTER`.
pub const COUNTER: i32 = 4;

const SEQUENCE: u32 = 1;

/// Streams `results.pftrace`.
pub struct PerfettoWriter {
    out: AtomicFile,
    agents: HashMap<u32, String>,
    tracks: HashMap<(u32, u64), u64>,
    counter_tracks: HashMap<(u32, String), u64>,
    next_uuid: u64,
    first: bool,
    buffer: Vec<u8>,
}

fn uint(name: &str, value: u64) -> DebugAnnotation {
    DebugAnnotation {
        name: Some(name.to_string()),
        uint_value: Some(value),
        ..DebugAnnotation::default()
    }
}

impl PerfettoWriter {
    /// Starts `path`; `agents` name the GPU tracks.
    pub fn create(path: &Path, agents: &[Agent]) -> io::Result<PerfettoWriter> {
        Ok(PerfettoWriter {
            out: AtomicFile::create(path)?,
            agents: agents.iter().map(|a| (a.node_id, a.name.clone())).collect(),
            tracks: HashMap::new(),
            counter_tracks: HashMap::new(),
            next_uuid: 1,
            first: true,
            buffer: Vec::new(),
        })
    }

    fn packet(&mut self, mut packet: TracePacket) -> io::Result<()> {
        packet.trusted_packet_sequence_id = Some(SEQUENCE);
        if self.first {
            packet.sequence_flags = Some(1);
            self.first = false;
        }
        self.buffer.clear();
        let wrapper = Trace {
            packet: vec![packet],
        };
        wrapper.encode(&mut self.buffer).map_err(io::Error::other)?;
        self.out.write_all(&self.buffer)
    }

    fn descriptor(&mut self, descriptor: TrackDescriptor) -> io::Result<()> {
        self.packet(TracePacket {
            track_descriptor: Some(descriptor),
            ..TracePacket::default()
        })
    }

    fn agent_track(&mut self, agent: u32) -> io::Result<u64> {
        if let Some(&uuid) = self.tracks.get(&(agent, u64::MAX)) {
            return Ok(uuid);
        }
        let uuid = self.new_uuid();
        self.tracks.insert((agent, u64::MAX), uuid);
        let name = match self.agents.get(&agent) {
            Some(arch) => format!("GPU {agent} ({arch})"),
            None => format!("GPU {agent}"),
        };
        self.descriptor(TrackDescriptor {
            uuid: Some(uuid),
            name: Some(name),
            ..TrackDescriptor::default()
        })?;
        Ok(uuid)
    }

    fn new_uuid(&mut self) -> u64 {
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        uuid
    }

    fn queue_track(&mut self, agent: u32, queue: u64) -> io::Result<u64> {
        if let Some(&uuid) = self.tracks.get(&(agent, queue)) {
            return Ok(uuid);
        }
        let parent = self.agent_track(agent)?;
        let uuid = self.new_uuid();
        self.tracks.insert((agent, queue), uuid);
        self.descriptor(TrackDescriptor {
            uuid: Some(uuid),
            name: Some(format!("queue {queue}")),
            parent_uuid: Some(parent),
            ..TrackDescriptor::default()
        })?;
        Ok(uuid)
    }

    fn counter_track(&mut self, agent: u32, counter: &str) -> io::Result<u64> {
        if let Some(&uuid) = self.counter_tracks.get(&(agent, counter.to_string())) {
            return Ok(uuid);
        }
        let parent = self.agent_track(agent)?;
        let uuid = self.new_uuid();
        self.counter_tracks
            .insert((agent, counter.to_string()), uuid);
        self.descriptor(TrackDescriptor {
            uuid: Some(uuid),
            name: Some(format!("GPU {agent} {counter}")),
            parent_uuid: Some(parent),
            counter: Some(CounterDescriptor::default()),
        })?;
        Ok(uuid)
    }

    fn event(&mut self, timestamp: u64, event: TrackEvent) -> io::Result<()> {
        self.packet(TracePacket {
            timestamp: Some(timestamp),
            track_event: Some(event),
            ..TracePacket::default()
        })
    }

    /// Adds the slice of `d` and its counter values.
    pub fn write(&mut self, d: &Dispatch) -> io::Result<()> {
        let track = self.queue_track(d.agent, d.queue_id)?;
        let mut annotations = vec![
            uint("pid", u64::from(d.pid)),
            uint("tid", u64::from(d.tid)),
            uint("dispatch_id", d.dispatch_id),
            uint("grid_size", d.grid_size()),
            uint("workgroup_size", d.workgroup_size()),
        ];
        annotations.extend(d.counters.iter().map(|c| DebugAnnotation {
            name: Some(c.name.clone()),
            double_value: Some(c.total),
            ..DebugAnnotation::default()
        }));
        self.event(
            d.start_ns,
            TrackEvent {
                debug_annotations: annotations,
                r#type: Some(SLICE_BEGIN),
                track_uuid: Some(track),
                name: Some(d.kernel.clone()),
                ..TrackEvent::default()
            },
        )?;
        for c in &d.counters {
            let counter = self.counter_track(d.agent, &c.name)?;
            for (timestamp, value) in [(d.start_ns, c.total), (d.end_ns, 0.0)] {
                self.event(
                    timestamp,
                    TrackEvent {
                        r#type: Some(COUNTER),
                        track_uuid: Some(counter),
                        double_counter_value: Some(value),
                        ..TrackEvent::default()
                    },
                )?;
            }
        }
        self.event(
            d.end_ns,
            TrackEvent {
                r#type: Some(SLICE_END),
                track_uuid: Some(track),
                ..TrackEvent::default()
            },
        )
    }

    /// A track of its own named `name` under `parent` (none: a top-level track).
    fn named_track(&mut self, name: String, parent: Option<u64>) -> io::Result<u64> {
        let uuid = self.new_uuid();
        self.descriptor(TrackDescriptor {
            uuid: Some(uuid),
            name: Some(name),
            parent_uuid: parent,
            ..TrackDescriptor::default()
        })?;
        Ok(uuid)
    }

    /// Adds the application's roctx regions: a track per process with a child track per thread
    /// holding its push/pop ranges as nested slices and its marks, pauses, resumes and misuses as
    /// instants, and a child track per start/stop range (they may overlap anything).
    pub fn write_regions(&mut self, rows: &[RegionRow]) -> io::Result<()> {
        let mut thread_names: HashMap<(u32, u32), String> = HashMap::new();
        for r in rows.iter().filter(|r| r.kind == "name_thread") {
            if let Some(name) = &r.name {
                thread_names.insert((r.pid, r.tid), name.clone());
            }
        }
        let mut processes: HashMap<u32, u64> = HashMap::new();
        let mut threads: HashMap<(u32, u32), u64> = HashMap::new();
        for r in rows {
            if r.kind.starts_with("name_") {
                continue;
            }
            let process = match processes.get(&r.pid) {
                Some(&uuid) => uuid,
                None => {
                    let uuid = self.named_track(format!("roctx, process {}", r.pid), None)?;
                    processes.insert(r.pid, uuid);
                    uuid
                }
            };
            let track = if r.kind == "process_range" {
                let name = r.name.clone().unwrap_or_default();
                self.named_track(format!("range {name}"), Some(process))?
            } else {
                match threads.get(&(r.pid, r.tid)) {
                    Some(&uuid) => uuid,
                    None => {
                        let name = match thread_names.get(&(r.pid, r.tid)) {
                            Some(name) => format!("thread {} ({name})", r.tid),
                            None => format!("thread {}", r.tid),
                        };
                        let uuid = self.named_track(name, Some(process))?;
                        threads.insert((r.pid, r.tid), uuid);
                        uuid
                    }
                }
            };
            let name = match (r.kind.as_str(), &r.name) {
                ("pause", _) => "roctxProfilerPause".to_string(),
                ("resume", _) => "roctxProfilerResume".to_string(),
                (_, Some(name)) => name.clone(),
                (_, None) => r.problem.clone().unwrap_or_else(|| r.kind.clone()),
            };
            let mut annotations = vec![uint("roctx_id", r.roctx_id)];
            if let Some(problem) = &r.problem {
                annotations.push(DebugAnnotation {
                    name: Some("problem".into()),
                    string_value: Some(problem.clone()),
                    ..DebugAnnotation::default()
                });
            }
            let slice = r.kind == "range" || r.kind == "process_range";
            self.event(
                r.start_ns,
                TrackEvent {
                    debug_annotations: annotations,
                    r#type: Some(if slice { SLICE_BEGIN } else { INSTANT }),
                    track_uuid: Some(track),
                    name: Some(name),
                    ..TrackEvent::default()
                },
            )?;
            if slice {
                self.event(
                    r.end_ns,
                    TrackEvent {
                        r#type: Some(SLICE_END),
                        track_uuid: Some(track),
                        ..TrackEvent::default()
                    },
                )?;
            }
        }
        Ok(())
    }

    /// Finishes the trace and gives the file its name.
    pub fn commit(self) -> io::Result<PathBuf> {
        self.out.commit()
    }
}
