//! Raw per-dispatch records: the `<pid>.rtlraw` file the interposer streams and the CLI reads.
//!
//! The file is binary, little-endian, and only ever appended to:
//!
//! ```text
//! file    = magic version tally frame* zero*
//! magic   = "rtl-pmc raw\0"                       12 bytes
//! version = u32                                    [`VERSION`]
//! tally   = expected:u64 pid:u32 ended:u32         [`Tally`], updated in place
//! frame   = length:u32 kind:u8 body                length counts kind and body
//! zero    = 0:u8                                   room not yet written (no frame is empty)
//! ```
//!
//! The tally says how many dispatch records the process `pid` meant to write (one per dispatch
//! it handed over for completion, per pass with kernel replay) and how it ended: `ended` is 0
//! while it runs and when it ended without finishing, 1 when the file was closed, 256 plus the
//! number of a fatal signal that arrived.
//!
//! Frame kinds:
//!
//! | kind | body |
//! |---|---|
//! | 1 string | `id:u32` then UTF-8 bytes to the end of the frame; ids count from 0 in file order |
//! | 2 dispatch | the [`Record`] fields below, in this order |
//! | 3 roctx | the [`Region`] fields below, in this order |
//!
//! A dispatch: `pid tid agent gpu_index:u32`, `arch:u32` (a string id), `queue:u64`,
//! `queue_order:u32`, `queue_index dispatch correlation:u64`, `kernel:u32` (a string id),
//! `kernel_object kernel_id signal:u64`, `grid[3] workgroup[3] lds scratch arch_vgpr accum_vgpr sgpr
//! wave_size:u32`, `start end:u64`, `group:u32` (`NONE` = `0xffffffff` for none), then
//! `replay:u8` (0 or 1) and, when 1, `passes:u32 saved:u64 restored:u64 declined:u32` (a string
//! id or `NONE`), then `ranges:u32` and that many `u64`, then `events:u32` and per event
//! `samples:u32` and its values, packed:
//!
//! ```text
//! values  = group*                 ceil(samples / 8) groups, the last one partial
//! group   = mask:u8 varint*        bit i of mask set: the group's value i is not zero
//!                                  (bits past the last sample clear); one varint per set
//!                                  bit, in bit order; the other values are 0
//! varint  = LEB128                 7 bits a byte, low bits first, high bit set on every byte
//!                                  but the last; 1 to 10 bytes, never 0, at most 2^64 - 1
//! ```
//!
//! A roctx event: `kind:u8` ([`RegionKind`] in declaration order), `pid tid:u32`, `id:u64`,
//! `depth:i32`, `timestamp:u64`, `utf8:u8`, `object:u64`, `name length:u32` (`NONE` for none)
//! and its UTF-8 bytes.
//!
//! Version 4 added the tally; version 3 packs the values; version 2 wrote each as a `u64`. Each frame stands alone (no
//! value is a delta to an earlier frame's), so any reader can skip frames it does not need.
//!
//! Strings (architectures, kernel names, reasons) are written once per file, in a string frame
//! before the first frame that names them. The file is written through a shared mapping
//! ([`RecordFile`]): a flushed record is in the page cache at once and outlives the process
//! however it ends. A flush lands whole or not at all (its first length field is stored last),
//! and [`read`] also skips an incomplete last frame: everything flushed before stays readable. The counter
//! values are nearly all of a record's bytes with counters (thousands of samples per dispatch
//! on a large GPU), and mostly zero or small: packed, a sample takes a bit when it is zero and
//! one to three bytes for most others, instead of eight.
//!
//! ```
//! use rtl_pmc::dispatch::records::{read, Record, RecordFile};
//!
//! let path = std::env::temp_dir().join(format!("doc-{}.rtlraw", std::process::id()));
//! let mut file = RecordFile::create(&path).unwrap();
//! file.push(&Record { kernel: "vadd".into(), end: 10, ..Record::default() });
//! file.flush().unwrap();
//! let records: Vec<Record> = read(&path).map(Result::unwrap).collect();
//! assert_eq!(records[0].kernel, "vadd");
//! std::fs::remove_file(&path).unwrap();
//! ```

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::fast_map::FastMap;

/// The first bytes of a raw record file.
pub const MAGIC: &[u8; 12] = b"rtl-pmc raw\0";
/// The format version this build writes and reads.
pub const VERSION: u32 = 5;
/// The file name extension of raw record files.
pub const EXTENSION: &str = "rtlraw";
/// "None" for optional 32-bit fields and string ids.
const NONE: u32 = u32::MAX;
/// Frame kinds.
const STRING: u8 = 1;
const DISPATCH: u8 = 2;
const ROCTX: u8 = 3;

/// One kernel dispatch as the interposer saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Process id of the application.
    pub pid: u32,
    /// Thread id (Linux tid) of the thread that submitted the dispatch.
    pub tid: u32,
    /// The GPU's KFD node id (`HSA_AMD_AGENT_INFO_DRIVER_NODE_ID`, rocprof's `gpu-id`).
    pub agent: u32,
    /// The GPU's index among the process's GPU agents, from 0.
    pub gpu_index: u32,
    /// The GPU's gfx target name, e.g. `gfx942`.
    pub arch: String,
    /// The queue's id (`hsa_queue_t::id`).
    pub queue: u64,
    /// The queue's place among the queues the process created on this GPU, from 1 (0 when
    /// unknown): the same queue of the next run of the application has the same place when
    /// queues are created in the same order, whatever their ids.
    #[serde(default)]
    pub queue_order: u32,
    /// The packet's index in the application's queue (rocprof's `queue-index`).
    pub queue_index: u64,
    /// Process-wide dispatch id, from 1, over every kernel dispatch the interposer saw.
    pub dispatch: u64,
    /// Correlation id; without API tracing it equals [`Record::dispatch`].
    pub correlation: u64,
    /// Kernel name (demangled and truncated as requested; `.kd` stripped).
    pub kernel: String,
    /// Kernel descriptor address (`kernel_object`).
    pub kernel_object: u64,
    /// The kernel symbol's id as rocprofiler-sdk numbers them: from 1, in the order kernel
    /// symbols were found in the executables the process froze; 0 when unknown.
    #[serde(default)]
    pub kernel_id: u64,
    /// The application's completion signal handle, 0 for none (rocprof's `sig`).
    pub signal: u64,
    /// Grid size in work-items, x/y/z.
    pub grid: [u32; 3],
    /// Workgroup size in work-items, x/y/z.
    pub workgroup: [u32; 3],
    /// LDS bytes per workgroup (the packet's `group_segment_size`, not rounded).
    pub lds: u32,
    /// Scratch bytes per work-item (the packet's `private_segment_size`).
    pub scratch: u32,
    /// Architected VGPRs per work-item, as rocprof derives them from the descriptor.
    pub arch_vgpr: u32,
    /// Accumulation VGPRs (AGPRs) per work-item.
    pub accum_vgpr: u32,
    /// SGPRs per wave.
    pub sgpr: u32,
    /// Wavefront size (32 or 64).
    pub wave_size: u32,
    /// Kernel start, ns (`CLOCK_BOOTTIME`), 0 if the runtime gave no timestamps.
    pub start: u64,
    /// Kernel end, ns (`CLOCK_BOOTTIME`), 0 if the runtime gave no timestamps.
    pub end: u64,
    /// Index of the plan's event group this dispatch collected; `None` for timing only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u32>,
    /// Kernel replay: how this dispatch was run; on the record of each of its passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayStats>,
    /// The roctx push/pop ranges open on the submitting thread when the dispatch was submitted,
    /// outermost first, by their [`Region::id`] (empty without roctx, and in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<u64>,
    /// Per event of the group (plan order), the per-sample values in aqlprofile's order; last,
    /// as [`RecordFile`] writes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<Vec<u64>>,
}

impl Record {
    /// Its counter values, per event.
    fn own_counters(&self) -> impl ExactSizeIterator<Item = &[u64]> + Clone {
        self.counters.iter().map(Vec::as_slice)
    }
}

/// A record's counter values held apart from it: per event (plan order), its samples, the
/// events laid end to end.
#[derive(Debug, Clone, Copy)]
pub struct Counters<'a> {
    values: &'a [u64],
    sizes: &'a [usize],
}

impl<'a> Counters<'a> {
    /// The values of events of `sizes` samples each, laid end to end in `values`, which holds
    /// exactly their samples.
    pub fn new(values: &'a [u64], sizes: &'a [usize]) -> Counters<'a> {
        debug_assert_eq!(sizes.iter().sum::<usize>(), values.len());
        Counters { values, sizes }
    }

    /// Each event's samples, in order.
    pub fn events(self) -> impl ExactSizeIterator<Item = &'a [u64]> + Clone {
        let mut rest = self.values;
        self.sizes.iter().map(move |&n| {
            let (event, after) = rest.split_at(n.min(rest.len()));
            rest = after;
            event
        })
    }

    /// The values as a record holds them.
    pub fn to_vecs(self) -> Vec<Vec<u64>> {
        self.events().map(<[u64]>::to_vec).collect()
    }
}

/// How kernel replay ran one dispatch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayStats {
    /// Passes the kernel ran: the plan's groups when replayed, 1 when declined and run once
    /// with the first group, 0 when declined and left untouched.
    pub passes: u32,
    /// Bytes saved before the first pass.
    #[serde(default)]
    pub saved: u64,
    /// Bytes written back over all passes (before each later pass, and pass 0's result after
    /// the last).
    #[serde(default)]
    pub restored: u64,
    /// Why the dispatch was not replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declined: Option<String>,
}

/// What a [`Region`] records: one roctx call of the application, or the end of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionKind {
    /// `roctxMarkA`.
    Mark,
    /// `roctxRangePushA`: a range `id` opens at level `depth` of the thread's stack.
    Push,
    /// `roctxRangePop` ending the thread's innermost range `id`.
    Pop,
    /// `roctxRangePop` with no range open on the thread.
    PopEmpty,
    /// `roctxRangeStartA` returning `id`.
    Start,
    /// `roctxRangeStop` of the open range `id`.
    Stop,
    /// `roctxRangeStop` with an `id` no open range has.
    StopUnknown,
    /// `roctxProfilerPause` (`object`: the thread id given).
    Pause,
    /// `roctxProfilerResume` (`object`: the thread id given).
    Resume,
    /// `roctxNameOsThread`: `name` names thread `tid`.
    NameThread,
    /// `roctxNameHsaAgent` (`object`: the agent handle).
    NameHsaAgent,
    /// `roctxNameHipDevice` (`object`: the device ordinal).
    NameHipDevice,
    /// `roctxNameHipStream` (`object`: the stream address).
    NameHipStream,
    /// roctx calls not kept (`object` of them) because the process made too many before the
    /// runtime started.
    Dropped,
    /// The interposer finished: ranges still open end here.
    Exit,
}

impl RegionKind {
    /// Every kind, by its number: its place in the declaration, which the raw record file
    /// and the roctx library both use.
    pub const ALL: [RegionKind; 15] = [
        RegionKind::Mark,
        RegionKind::Push,
        RegionKind::Pop,
        RegionKind::PopEmpty,
        RegionKind::Start,
        RegionKind::Stop,
        RegionKind::StopUnknown,
        RegionKind::Pause,
        RegionKind::Resume,
        RegionKind::NameThread,
        RegionKind::NameHsaAgent,
        RegionKind::NameHipDevice,
        RegionKind::NameHipStream,
        RegionKind::Dropped,
        RegionKind::Exit,
    ];
}

/// One roctx event of the process, on the dispatch clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    /// What happened.
    pub kind: RegionKind,
    /// Process id.
    pub pid: u32,
    /// Linux thread id of the calling thread.
    pub tid: u32,
    /// The range id (from 1), 0 where none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub id: u64,
    /// Push/pop nesting level from 0, -1 where none.
    #[serde(default = "no_depth")]
    pub depth: i32,
    /// When, ns, in the clock domain of the dispatches' timestamps.
    pub timestamp: u64,
    /// The message or name (non-UTF-8 bytes replaced by U+FFFD); `None` when the application
    /// passed NULL or the call takes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// False when the application's bytes were not UTF-8.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub utf8: bool,
    /// The object a naming or control call is about; the count of a [`RegionKind::Dropped`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub object: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn no_depth() -> i32 {
    -1
}

fn yes() -> bool {
    true
}

fn is_true(v: &bool) -> bool {
    *v
}

/// Why a raw record file cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file does not begin like an rtl-pmc raw record file.
    #[error("{path}: not an rtl-pmc raw record file")]
    NotRecords {
        /// The file.
        path: PathBuf,
    },
    /// Written by another version of the format.
    #[error("{path}: raw record format version {found}, this build reads version {VERSION}")]
    Version {
        /// The file.
        path: PathBuf,
        /// The version found.
        found: u32,
    },
    /// A complete frame is not what its kind says.
    #[error("{path}: byte {offset}: malformed record: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Where the frame begins.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
}

/// The strings of a file being written: each written once, before its first use.
#[derive(Debug, Default)]
struct Strings {
    /// By the address of a string kept for the life of the process.
    kept: FastMap<(usize, usize), u32>,
    /// By content, for strings given by reference.
    owned: HashMap<String, u32>,
    next: u32,
}

impl Strings {
    /// The id of `text`, writing its string frame first if it is new; looked up by address.
    fn kept(&mut self, buffer: &mut Vec<u8>, text: &'static str) -> u32 {
        let key = (text.as_ptr() as usize, text.len());
        if let Some(id) = self.kept.get(&key) {
            return *id;
        }
        let id = self.owned(buffer, text);
        self.kept.insert(key, id);
        id
    }

    /// The id of `text`, writing its string frame first if it is new.
    fn owned(&mut self, buffer: &mut Vec<u8>, text: &str) -> u32 {
        if let Some(id) = self.owned.get(text) {
            return *id;
        }
        let id = self.next;
        self.next += 1;
        self.owned.insert(text.to_string(), id);
        let at = begin_frame(buffer, STRING);
        put_u32(buffer, id);
        buffer.extend_from_slice(text.as_bytes());
        end_frame(buffer, at);
        id
    }
}

/// How the process that wrote a raw record file ended, as its header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The file was closed: the interposer finished (process exit or unload).
    Closed,
    /// A fatal signal arrived (its number); the process's own handler ran after.
    Signal(i32),
    /// Not closed: the process still runs, or ended without finishing (`_exit`, `exec`,
    /// SIGKILL, a signal handled by nobody).
    Unfinished,
}

/// What a raw record file's header says about its process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tallied {
    /// The process that wrote it.
    pub pid: u32,
    /// The dispatch records the process meant to write into this file: one per dispatch (or
    /// kernel replay pass) handed over for completion.
    pub expected: u64,
    /// How it ended.
    pub ending: Ending,
}

/// `ended` field values of the header.
const UNFINISHED: u32 = 0;
const CLOSED: u32 = 1;
/// A fatal signal: this plus its number.
const SIGNALLED: u32 = 0x100;
/// Header offsets: `expected:u64` then `pid:u32` then `ended:u32`.
const EXPECTED_AT: usize = 16;
const PID_AT: usize = 24;
const ENDED_AT: usize = 28;
/// Bytes of the header: magic, version and the tally.
pub const HEADER: usize = 32;

/// The tally in a raw record file's header, through a shared mapping of the file's first page
/// of its own: it never moves while the records' mapping grows, so the dispatch path and a
/// signal handler update it with single atomic stores, and the page cache keeps each one
/// whatever way the process ends. Never unmapped (one page per file of the process).
#[derive(Debug)]
pub struct Tally {
    page: *mut u8,
}

// SAFETY: the page is only accessed through atomics.
unsafe impl Send for Tally {}
// SAFETY: see `Send`.
unsafe impl Sync for Tally {}

impl Tally {
    fn expected(&self) -> &AtomicU64 {
        // SAFETY: `page` maps at least the header; offset 16 of a page is 8-byte aligned.
        unsafe { &*(self.page.add(EXPECTED_AT) as *const AtomicU64) }
    }

    fn ended(&self) -> &AtomicU32 {
        // SAFETY: as in `expected`, 4-byte aligned.
        unsafe { &*(self.page.add(ENDED_AT) as *const AtomicU32) }
    }

    /// Counts `n` more records this file is to hold.
    pub fn expect(&self, n: u64) {
        self.expected().fetch_add(n, Ordering::Relaxed);
    }

    /// Notes that fatal signal `signal` arrived in the process that writes the file, unless
    /// it is another process (a forked child) or the file was closed. Async-signal-safe.
    pub fn signalled(&self, signal: i32) {
        // SAFETY: `page` maps the header; 4-byte aligned.
        let pid = unsafe { &*(self.page.add(PID_AT) as *const AtomicU32) };
        // SAFETY: getpid is async-signal-safe.
        if pid.load(Ordering::Relaxed) != unsafe { libc::getpid() } as u32 {
            return;
        }
        let _ = self.ended().compare_exchange(
            UNFINISHED,
            SIGNALLED + signal as u32,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }
}

/// The first mapping's size and the most a file grows by at once.
const FIRST_CAPACITY: usize = 64 << 10;
const MOST_GROWTH: usize = 16 << 20;

/// An append-only raw record file being written, through a shared mapping of the file: records
/// are buffered until [`RecordFile::flush`], which copies them into the mapping, where they are
/// in the page cache at once: they outlive the process however it ends (`_exit`, a fatal
/// signal, `exec`, SIGKILL), with no write at exit.
///
/// The file is longer than its records while it is written (its tail zeros, reserved on disk
/// so that a full disk is an error of [`RecordFile::flush`], never a fault), and truncated to
/// them when closed. Each flush copies the new frames with their first length field last: a
/// reader stops at the first zero length, so it sees every flush whole or not at all.
#[derive(Debug)]
pub struct RecordFile {
    path: PathBuf,
    file: File,
    map: *mut u8,
    capacity: usize,
    len: usize,
    buffer: Vec<u8>,
    strings: Strings,
    tally: &'static Tally,
}

// SAFETY: the mapping is owned by the file and only touched through `&mut self`.
unsafe impl Send for RecordFile {}

impl RecordFile {
    /// Creates (truncates) the file at `path` and writes the header.
    pub fn create(path: &Path) -> Result<RecordFile, RecordError> {
        let io = |source| RecordError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(io)?;
        reserve(&file, 0, FIRST_CAPACITY).map_err(io)?;
        let records = map(&file, FIRST_CAPACITY).map_err(io)?;
        let page = map(&file, HEADER).map_err(io)?;
        let mut header = [0u8; HEADER];
        header[..12].copy_from_slice(MAGIC);
        header[12..16].copy_from_slice(&VERSION.to_le_bytes());
        header[PID_AT..PID_AT + 4].copy_from_slice(&std::process::id().to_le_bytes());
        // SAFETY: the mapping is FIRST_CAPACITY bytes, more than the header.
        unsafe { std::ptr::copy_nonoverlapping(header.as_ptr(), records, HEADER) };
        Ok(RecordFile {
            path: path.to_path_buf(),
            file,
            map: records,
            capacity: FIRST_CAPACITY,
            len: HEADER,
            buffer: Vec::with_capacity(1 << 16),
            strings: Strings::default(),
            tally: Box::leak(Box::new(Tally { page })),
        })
    }

    /// The file's header tally, for the dispatch path and signal handlers.
    pub fn tally(&self) -> &'static Tally {
        self.tally
    }

    /// Whether no record or roctx event was written.
    pub fn is_empty(&self) -> bool {
        self.len == HEADER && self.buffer.is_empty()
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record to the buffer.
    pub fn push(&mut self, record: &Record) {
        let arch = self.strings.owned(&mut self.buffer, &record.arch);
        let kernel = self.strings.owned(&mut self.buffer, &record.kernel);
        self.push_dispatch(record, arch, kernel, record.own_counters());
    }

    /// Appends one record to the buffer with its architecture and kernel name given apart
    /// (`record`'s own are not read), as strings kept for the life of the process (see
    /// [`super::kernel_names::intern`]): each is looked up by its address, not hashed, and a
    /// record needs no copy of them. Its counter values are `counters` when given (`record`'s
    /// own are not read then), so that values read elsewhere need no copy into the record.
    pub fn push_named(
        &mut self,
        record: &Record,
        arch: &'static str,
        kernel: &'static str,
        counters: Option<Counters<'_>>,
    ) {
        let arch = self.strings.kept(&mut self.buffer, arch);
        let kernel = self.strings.kept(&mut self.buffer, kernel);
        match counters {
            Some(counters) => self.push_dispatch(record, arch, kernel, counters.events()),
            None => self.push_dispatch(record, arch, kernel, record.own_counters()),
        }
    }

    fn push_dispatch<'c>(
        &mut self,
        r: &Record,
        arch: u32,
        kernel: u32,
        counters: impl ExactSizeIterator<Item = &'c [u64]> + Clone,
    ) {
        let declined = match &r.replay {
            Some(ReplayStats {
                declined: Some(reason),
                ..
            }) => self.strings.owned(&mut self.buffer, reason),
            _ => NONE,
        };
        let b = &mut self.buffer;
        b.reserve(HEAD + 8 * r.ranges.len() + 40);
        let at = begin_frame(b, DISPATCH);
        let mut head = Head::default();
        for v in [r.pid, r.tid, r.agent, r.gpu_index, arch] {
            head.u32(v);
        }
        head.u64(r.queue);
        head.u32(r.queue_order);
        for v in [r.queue_index, r.dispatch, r.correlation] {
            head.u64(v);
        }
        head.u32(kernel);
        head.u64(r.kernel_object);
        head.u64(r.kernel_id);
        head.u64(r.signal);
        for v in r.grid.iter().chain(&r.workgroup) {
            head.u32(*v);
        }
        for v in [
            r.lds,
            r.scratch,
            r.arch_vgpr,
            r.accum_vgpr,
            r.sgpr,
            r.wave_size,
        ] {
            head.u32(v);
        }
        head.u64(r.start);
        head.u64(r.end);
        head.u32(r.group.unwrap_or(NONE));
        debug_assert_eq!(head.at, HEAD);
        b.extend_from_slice(&head.bytes);
        match &r.replay {
            Some(replay) => {
                b.push(1);
                put_u32(b, replay.passes);
                put_u64(b, replay.saved);
                put_u64(b, replay.restored);
                put_u32(b, declined);
            }
            None => b.push(0),
        }
        put_u32(b, r.ranges.len() as u32);
        for v in &r.ranges {
            put_u64(b, *v);
        }
        put_u32(b, counters.len() as u32);
        put_events(b, counters);
        end_frame(b, at);
    }

    /// Appends one roctx event to the buffer.
    pub fn push_region(&mut self, region: &Region) {
        let b = &mut self.buffer;
        let at = begin_frame(b, ROCTX);
        b.push(region.kind as u8);
        put_u32(b, region.pid);
        put_u32(b, region.tid);
        put_u64(b, region.id);
        put_u32(b, region.depth as u32);
        put_u64(b, region.timestamp);
        b.push(region.utf8 as u8);
        put_u64(b, region.object);
        match &region.name {
            Some(name) => {
                put_u32(b, name.len() as u32);
                b.extend_from_slice(name.as_bytes());
            }
            None => put_u32(b, NONE),
        }
        end_frame(b, at);
    }

    /// Whether records are waiting to be written.
    pub fn has_pending(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// Bytes of records waiting to be written.
    pub fn pending_bytes(&self) -> usize {
        self.buffer.len()
    }

    /// Copies the buffered records into the file's mapping, growing the file when they do not
    /// fit; on an error (the disk is full) they are dropped.
    pub fn flush(&mut self) -> Result<(), RecordError> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let need = self.len + self.buffer.len();
        if need > self.capacity {
            if let Err(source) = self.grow(need) {
                self.buffer.clear();
                return Err(RecordError::Io {
                    path: self.path.clone(),
                    source,
                });
            }
        }
        let n = self.buffer.len();
        // SAFETY: `len + n <= capacity` bytes are mapped. The bytes after the first length
        // field go first; the length, one 4-byte store after a fence, makes them visible to a
        // reader, which stops at a zero length.
        unsafe {
            let at = self.map.add(self.len);
            std::ptr::copy_nonoverlapping(self.buffer.as_ptr().add(4), at.add(4), n - 4);
            std::sync::atomic::fence(Ordering::Release);
            let first = [
                self.buffer[0],
                self.buffer[1],
                self.buffer[2],
                self.buffer[3],
            ];
            std::ptr::write_volatile(at as *mut [u8; 4], first);
        }
        self.len = need;
        self.buffer.clear();
        Ok(())
    }

    /// Makes the file and its mapping hold at least `need` bytes.
    fn grow(&mut self, need: usize) -> std::io::Result<()> {
        let step = self.capacity.clamp(FIRST_CAPACITY, MOST_GROWTH);
        let capacity = need.div_ceil(step) * step;
        reserve(&self.file, self.capacity, capacity - self.capacity)?;
        // SAFETY: remapping our own mapping of `capacity` bytes to the grown file; nothing
        // keeps a pointer into it across this call.
        let moved = unsafe {
            libc::mremap(
                self.map as *mut libc::c_void,
                self.capacity,
                capacity,
                libc::MREMAP_MAYMOVE,
            )
        };
        if moved == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        self.map = moved as *mut u8;
        self.capacity = capacity;
        Ok(())
    }
}

impl Drop for RecordFile {
    /// Writes what is buffered, cuts the file to its records and marks it closed.
    fn drop(&mut self) {
        let _ = self.flush();
        let _ = self.file.set_len(self.len as u64);
        let _ = self.tally.ended().compare_exchange(
            UNFINISHED,
            CLOSED,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        // SAFETY: our mapping, unused from here on.
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.capacity) };
    }
}

/// Reserves `len` bytes of `file` from `offset` on disk (so that writing them through a mapping
/// never faults on a full disk), extending the file.
fn reserve(file: &File, offset: usize, len: usize) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: plain system call on an open descriptor.
    let e = unsafe { libc::posix_fallocate(file.as_raw_fd(), offset as i64, len as i64) };
    match e {
        0 => Ok(()),
        e => {
            let _ = file.set_len(offset as u64);
            Err(std::io::Error::from_raw_os_error(e))
        }
    }
}

/// A shared read-write mapping of the first `len` bytes of `file`.
fn map(file: &File, len: usize) -> std::io::Result<*mut u8> {
    use std::os::fd::AsRawFd;
    // SAFETY: a new mapping of an open descriptor; the kernel chooses the address.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    match at {
        libc::MAP_FAILED => Err(std::io::Error::last_os_error()),
        at => Ok(at as *mut u8),
    }
}

/// The tally of the raw record file at `path`.
pub fn read_tally(path: &Path) -> Result<Tallied, RecordError> {
    let mut reader = Reader::open(path, false);
    if let Some(e) = reader.failed.take() {
        return Err(e);
    }
    let h = &reader.header;
    let u32_at = |at: usize| u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
    let mut expected = [0u8; 8];
    expected.copy_from_slice(&h[EXPECTED_AT..EXPECTED_AT + 8]);
    let ending = match u32_at(ENDED_AT) {
        CLOSED => Ending::Closed,
        n if n > SIGNALLED => Ending::Signal((n - SIGNALLED) as i32),
        _ => Ending::Unfinished,
    };
    Ok(Tallied {
        pid: u32_at(PID_AT),
        expected: u64::from_le_bytes(expected),
        ending,
    })
}

/// Bytes of a dispatch frame's fixed fields, up to its group.
const HEAD: usize = 5 * 4 + 8 + 4 + 3 * 8 + 4 + 3 * 8 + 12 * 4 + 2 * 8 + 4;

/// A dispatch frame's fixed fields, put together on the stack and appended in one piece.
struct Head {
    bytes: [u8; HEAD],
    at: usize,
}

impl Default for Head {
    fn default() -> Head {
        Head {
            bytes: [0; HEAD],
            at: 0,
        }
    }
}

impl Head {
    fn u32(&mut self, value: u32) {
        self.bytes[self.at..self.at + 4].copy_from_slice(&value.to_le_bytes());
        self.at += 4;
    }

    fn u64(&mut self, value: u64) {
        self.bytes[self.at..self.at + 8].copy_from_slice(&value.to_le_bytes());
        self.at += 8;
    }
}

fn put_u32(buffer: &mut Vec<u8>, value: u32) {
    buffer.extend_from_slice(&value.to_le_bytes());
}

fn put_u64(buffer: &mut Vec<u8>, value: u64) {
    buffer.extend_from_slice(&value.to_le_bytes());
}

/// Samples per group of an event's values: one mask byte each.
const GROUP: usize = 8;
/// Bytes of a LEB128 varint of a u64 at most.
const VARINT: usize = 10;

/// Appends each event's sample count (`u32`) and values, packed in groups of [`GROUP`]: a
/// byte whose bit `i` says whether the group's value `i` is not zero, then those values as
/// LEB128 varints. Counters are mostly zero (instances a kernel did not use, events that did
/// not happen) or small, so a sample takes a bit or a few bytes instead of eight; a group of
/// zeros is one byte, and eight such groups are found with one pass over their 64 values.
fn put_events<'c>(buffer: &mut Vec<u8>, events: impl Iterator<Item = &'c [u64]> + Clone) {
    // Room for every value at its longest, so that the bytes are stored without a check each.
    let room = |n: usize| 4 + n.div_ceil(GROUP) + VARINT * n;
    buffer.reserve(events.clone().map(|e| room(e.len())).sum());
    let start = buffer.len();
    // SAFETY: `start` plus what `pack` writes, at most the room reserved, is initialised.
    unsafe {
        let end = pack(buffer.as_mut_ptr().add(start), events);
        buffer.set_len(end.offset_from(buffer.as_ptr()) as usize);
    }
}

/// Writes `events` as [`put_events`] says at `out`; the end of what it wrote.
///
/// # Safety
/// `out` has room for `4 + n.div_ceil(GROUP) + VARINT * n` bytes per event of `n` samples.
unsafe fn pack<'c>(out: *mut u8, events: impl Iterator<Item = &'c [u64]>) -> *mut u8 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2; `out` as the caller guarantees.
        return unsafe { pack_avx2(out, events) };
    }
    // SAFETY: as the caller guarantees.
    unsafe { pack_events(out, events) }
}

/// [`pack_events`] with 256-bit vectors: 64 zeros are found in 16 instructions.
///
/// # Safety
/// As [`pack`], on a CPU with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pack_avx2<'c>(out: *mut u8, events: impl Iterator<Item = &'c [u64]>) -> *mut u8 {
    // SAFETY: as the caller guarantees.
    unsafe { pack_events(out, events) }
}

/// The body of [`pack`].
///
/// # Safety
/// As [`pack`].
#[inline(always)]
unsafe fn pack_events<'c>(mut out: *mut u8, events: impl Iterator<Item = &'c [u64]>) -> *mut u8 {
    for values in events {
        // SAFETY: each event writes its count, then per group at most its mask byte and VARINT
        // bytes a value, within the room the caller guarantees; a block of zeros stores eight
        // bytes, within the room of its group and value at least.
        unsafe {
            out.cast::<[u8; 4]>()
                .write_unaligned((values.len() as u32).to_le_bytes());
            out = out.add(4);
            // An event of zeros (an event that did not happen) in one pass.
            if values.len() > GROUP * GROUP && values.iter().fold(0, |any, v| any | v) == 0 {
                let groups = values.len().div_ceil(GROUP);
                out.write_bytes(0, groups);
                out = out.add(groups);
                continue;
            }
            for block in values.chunks(GROUP * GROUP) {
                if block.iter().fold(0, |any, v| any | v) == 0 {
                    // As many zero masks as the block has groups, at most eight.
                    out.cast::<[u8; GROUP]>().write_unaligned([0; GROUP]);
                    out = out.add(block.len().div_ceil(GROUP));
                    continue;
                }
                let nonzero = block
                    .iter()
                    .enumerate()
                    .fold(0u64, |bits, (i, &v)| bits | u64::from(v != 0) << i);
                for (g, group) in block.chunks(GROUP).enumerate() {
                    out = put_group(out, group, (nonzero >> (GROUP * g)) as u8);
                }
            }
        }
    }
    out
}

/// Writes one group of [`put_events`] at `out`, whose bit `i` of `mask` says whether value `i`
/// is not zero; the end of what it wrote.
///
/// # Safety
/// `out` has room for a byte and [`VARINT`] bytes per value; `mask` marks values of `values`
/// only.
#[inline(always)]
unsafe fn put_group(out: *mut u8, values: &[u64], mask: u8) -> *mut u8 {
    // SAFETY: room for the mask byte and a varint per value; the mask marks values of the
    // group only.
    unsafe {
        out.write(mask);
        let mut at = out.add(1);
        let mut left = mask;
        while left != 0 {
            at = put_varint(at, *values.get_unchecked(left.trailing_zeros() as usize));
            left &= left - 1;
        }
        at
    }
}

/// Writes `value` as a LEB128 varint (seven bits a byte, low bits first, the high bit set on
/// every byte but the last) at `out`; the end of what it wrote.
///
/// # Safety
/// `out` has room for [`VARINT`] bytes.
#[inline(always)]
unsafe fn put_varint(mut out: *mut u8, mut value: u64) -> *mut u8 {
    // SAFETY: at most VARINT bytes, as the caller guarantees.
    unsafe {
        while value >= 0x80 {
            out.write(value as u8 | 0x80);
            value >>= 7;
            out = out.add(1);
        }
        out.write(value as u8);
        out.add(1)
    }
}

/// Starts a frame of `kind`; where its length goes, for [`end_frame`].
fn begin_frame(buffer: &mut Vec<u8>, kind: u8) -> usize {
    let at = buffer.len();
    put_u32(buffer, 0);
    buffer.push(kind);
    at
}

fn end_frame(buffer: &mut [u8], at: usize) {
    let length = (buffer.len() - at - 4) as u32;
    buffer[at..at + 4].copy_from_slice(&length.to_le_bytes());
}

/// Reads the records of a raw record file written by [`RecordFile`], in file order, leaving out
/// its roctx events.
///
/// An incomplete last frame (the process was killed while writing it) is skipped silently;
/// any other damage is an error item, after which iteration ends.
pub fn read(path: &Path) -> impl Iterator<Item = Result<Record, RecordError>> {
    Reader::open(path, false).filter_map(|frame| match frame {
        Ok(Frame::Dispatch(record)) => Some(Ok(record)),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })
}

/// Reads the roctx events of a raw record file, in file order, as [`read`] reads records.
pub fn read_regions(path: &Path) -> impl Iterator<Item = Result<Region, RecordError>> {
    Reader::open(path, true).filter_map(|frame| match frame {
        Ok(Frame::Region(region)) => Some(Ok(region)),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })
}

/// One frame as read: consumed at once, never kept in bulk, so its size does not matter and a
/// box per dispatch would only cost.
#[allow(clippy::large_enum_variant)]
enum Frame {
    Dispatch(Record),
    Region(Region),
    Other,
}

struct Reader {
    path: PathBuf,
    /// Parse roctx frames and skip dispatches unparsed, instead of the reverse.
    regions: bool,
    input: Option<BufReader<File>>,
    /// Where the next frame begins.
    offset: u64,
    strings: Vec<String>,
    frame: Vec<u8>,
    failed: Option<RecordError>,
    /// The file's header, once checked.
    header: [u8; HEADER],
}

/// What [`Reader::open`] finds at the start of a file written by the JSON-lines version 1.
const VERSION_1_START: &[u8] = b"{\"format\":\"rtl-pmc raw records\",\"version\":";

impl Reader {
    fn open(path: &Path, regions: bool) -> Reader {
        let mut reader = Reader {
            path: path.to_path_buf(),
            regions,
            input: None,
            offset: 0,
            strings: Vec::new(),
            frame: Vec::new(),
            failed: None,
            header: [0; HEADER],
        };
        match File::open(path) {
            Ok(file) => {
                reader.input = Some(BufReader::with_capacity(1 << 16, file));
                if let Err(e) = reader.check_header() {
                    reader.input = None;
                    reader.failed = Some(e);
                }
            }
            Err(source) => {
                reader.failed = Some(RecordError::Io {
                    path: reader.path.clone(),
                    source,
                })
            }
        }
        reader
    }

    fn io(&self, source: std::io::Error) -> RecordError {
        RecordError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Reads up to `n` bytes into `self.frame`; whether all `n` were there.
    fn fill(&mut self, n: u64) -> Result<bool, RecordError> {
        self.frame.clear();
        let Some(input) = self.input.as_mut() else {
            return Ok(false);
        };
        match input.by_ref().take(n).read_to_end(&mut self.frame) {
            Ok(got) => Ok(got as u64 == n),
            Err(e) => Err(self.io(e)),
        }
    }

    fn check_header(&mut self) -> Result<(), RecordError> {
        let whole = self.fill(HEADER as u64)?;
        let not_records = || RecordError::NotRecords {
            path: self.path.clone(),
        };
        if self.frame.starts_with(&VERSION_1_START[..12]) {
            return Err(RecordError::Version {
                path: self.path.clone(),
                found: 1,
            });
        }
        if self.frame.len() < 16 || &self.frame[..12] != MAGIC {
            return Err(not_records());
        }
        let found = u32::from_le_bytes([
            self.frame[12],
            self.frame[13],
            self.frame[14],
            self.frame[15],
        ]);
        if found != VERSION {
            return Err(RecordError::Version {
                path: self.path.clone(),
                found,
            });
        }
        if !whole {
            return Err(not_records());
        }
        self.header.copy_from_slice(&self.frame);
        self.offset = HEADER as u64;
        Ok(())
    }

    /// The next frame; `None` at the end or at an incomplete last frame.
    fn next_frame(&mut self) -> Option<Result<Frame, RecordError>> {
        let at = self.offset;
        match self.fill(4) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => return Some(Err(e)),
        }
        let length =
            u32::from_le_bytes([self.frame[0], self.frame[1], self.frame[2], self.frame[3]]);
        if length == 0 {
            // The zeros after the last record of a file still being written, or of a process
            // that ended before closing it: no frame is empty (each has its kind).
            return None;
        }
        match self.fill(u64::from(length)) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => return Some(Err(e)),
        }
        self.offset += 4 + u64::from(length);
        let frame = std::mem::take(&mut self.frame);
        let parsed = self.parse(&frame);
        self.frame = frame;
        Some(parsed.map_err(|reason| RecordError::Malformed {
            path: self.path.clone(),
            offset: at,
            reason,
        }))
    }

    fn parse(&mut self, frame: &[u8]) -> Result<Frame, String> {
        let mut f = Fields { rest: frame };
        let kind = f.u8()?;
        let parsed = match kind {
            STRING => {
                let id = f.u32()?;
                if id as usize != self.strings.len() {
                    return Err(format!(
                        "string {id} where string {} comes next",
                        self.strings.len()
                    ));
                }
                let text = std::str::from_utf8(f.rest).map_err(|e| format!("string {id}: {e}"))?;
                self.strings.push(text.to_string());
                f.rest = &[];
                Frame::Other
            }
            DISPATCH if self.regions => return Ok(Frame::Other),
            DISPATCH => Frame::Dispatch(self.dispatch(&mut f)?),
            ROCTX if !self.regions => return Ok(Frame::Other),
            ROCTX => Frame::Region(region(&mut f)?),
            other => return Err(format!("unknown frame kind {other}")),
        };
        match f.rest.len() {
            0 => Ok(parsed),
            n => Err(format!("{n} bytes after the end of the frame")),
        }
    }

    fn string(&self, id: u32) -> Result<String, String> {
        self.strings
            .get(id as usize)
            .cloned()
            .ok_or_else(|| format!("string {id} is not defined before its use"))
    }

    fn dispatch(&self, f: &mut Fields) -> Result<Record, String> {
        let mut r = Record {
            pid: f.u32()?,
            tid: f.u32()?,
            agent: f.u32()?,
            gpu_index: f.u32()?,
            arch: self.string(f.u32()?)?,
            queue: f.u64()?,
            queue_order: f.u32()?,
            queue_index: f.u64()?,
            dispatch: f.u64()?,
            correlation: f.u64()?,
            kernel: self.string(f.u32()?)?,
            kernel_object: f.u64()?,
            kernel_id: f.u64()?,
            signal: f.u64()?,
            grid: [f.u32()?, f.u32()?, f.u32()?],
            workgroup: [f.u32()?, f.u32()?, f.u32()?],
            lds: f.u32()?,
            scratch: f.u32()?,
            arch_vgpr: f.u32()?,
            accum_vgpr: f.u32()?,
            sgpr: f.u32()?,
            wave_size: f.u32()?,
            start: f.u64()?,
            end: f.u64()?,
            group: Some(f.u32()?).filter(|g| *g != NONE),
            ..Record::default()
        };
        r.replay = match f.u8()? {
            0 => None,
            1 => Some(ReplayStats {
                passes: f.u32()?,
                saved: f.u64()?,
                restored: f.u64()?,
                declined: match f.u32()? {
                    NONE => None,
                    id => Some(self.string(id)?),
                },
            }),
            other => return Err(format!("replay flag {other}")),
        };
        let ranges = f.count(8)?;
        r.ranges = (0..ranges).map(|_| f.u64()).collect::<Result<_, _>>()?;
        let events = f.count(4)?;
        r.counters = Vec::with_capacity(events);
        for _ in 0..events {
            r.counters.push(f.values()?);
        }
        Ok(r)
    }
}

fn region(f: &mut Fields) -> Result<Region, String> {
    let kind = f.u8()?;
    let kind = *RegionKind::ALL
        .get(kind as usize)
        .ok_or_else(|| format!("unknown roctx event kind {kind}"))?;
    let mut region = Region {
        kind,
        pid: f.u32()?,
        tid: f.u32()?,
        id: f.u64()?,
        depth: f.u32()? as i32,
        timestamp: f.u64()?,
        name: None,
        utf8: f.u8()? != 0,
        object: f.u64()?,
    };
    let length = f.u32()?;
    if length != NONE {
        let bytes = f.take(length as usize)?;
        let name = std::str::from_utf8(bytes).map_err(|e| format!("roctx name: {e}"))?;
        region.name = Some(name.to_string());
    }
    Ok(region)
}

/// The unread part of a frame.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.rest.len() < n {
            return Err(format!(
                "the frame ends {} bytes early",
                n - self.rest.len()
            ));
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
    }

    /// A count of items of `size` bytes each, no more than the frame can hold.
    fn count(&mut self, size: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        match n.checked_mul(size) {
            Some(bytes) if bytes <= self.rest.len() => Ok(n),
            _ => Err(format!("{n} items do not fit the frame")),
        }
    }

    /// One event's values as [`put_events`] writes them, after their count: at least a mask
    /// byte per group, so a count the frame cannot hold is damage, not an allocation.
    fn values(&mut self) -> Result<Vec<u64>, String> {
        let n = self.u32()? as usize;
        if n.div_ceil(GROUP) > self.rest.len() {
            return Err(format!("{n} items do not fit the frame"));
        }
        let mut values = Vec::with_capacity(n);
        while values.len() < n {
            let in_group = (n - values.len()).min(GROUP);
            let mask = self.u8()?;
            if mask == 0 {
                values.resize(values.len() + in_group, 0);
                continue;
            }
            if u32::from(mask) >> in_group != 0 {
                return Err(format!(
                    "value mask {mask:#04x} marks samples past the last of {n}"
                ));
            }
            for i in 0..in_group {
                values.push(match mask >> i & 1 {
                    0 => 0,
                    _ => self.varint()?,
                });
            }
        }
        Ok(values)
    }

    /// A LEB128 varint counter value that is not zero.
    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for (i, &byte) in self.rest.iter().enumerate().take(VARINT) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                if i == VARINT - 1 && byte > 1 {
                    break;
                }
                self.rest = &self.rest[i + 1..];
                return match value {
                    0 => Err("a counter value marked as not zero is zero".into()),
                    _ => Ok(value),
                };
            }
        }
        match self.rest.len() < VARINT {
            true => Err("the frame ends within a counter value".into()),
            false => Err("a counter value overflows 64 bits".into()),
        }
    }
}

impl Iterator for Reader {
    type Item = Result<Frame, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.failed.take() {
            return Some(Err(e));
        }
        let item = self.next_frame()?;
        if item.is_err() {
            self.input = None;
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One event's values as [`put_events`] packs them, without their count.
    fn put_values(buffer: &mut Vec<u8>, values: &[u64]) {
        let at = buffer.len();
        put_events(buffer, std::iter::once(values));
        let count: Vec<u8> = buffer.drain(at..at + 4).collect();
        assert_eq!(count, (values.len() as u32).to_le_bytes());
    }

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("rtl-pmc-records-{}-{name}", std::process::id()))
    }

    fn sample(n: u64) -> Record {
        Record {
            pid: 42,
            tid: 43,
            agent: 2,
            gpu_index: 1,
            arch: "gfx942".into(),
            queue: 7,
            queue_order: 2,
            queue_index: n + 3,
            dispatch: n,
            correlation: n,
            kernel: "vadd(float*, float const*)".into(),
            kernel_object: 0x7f00_0000_1000,
            kernel_id: 7,
            signal: 0x7f00_0000_2000,
            grid: [1024, 1, 1],
            workgroup: [256, 1, 1],
            lds: 512,
            scratch: 16,
            arch_vgpr: 8,
            accum_vgpr: 4,
            sgpr: 16,
            wave_size: 64,
            start: 1_000 + n,
            end: 2_000 + n,
            group: Some(1),
            replay: None,
            ranges: vec![3, 5],
            counters: vec![vec![1, 2, 3], vec![u64::MAX]],
        }
    }

    fn push_region() -> Region {
        Region {
            kind: RegionKind::Push,
            pid: 42,
            tid: 43,
            id: 3,
            depth: 0,
            timestamp: 900,
            name: Some("step \u{fffd}".into()),
            utf8: false,
            object: 0,
        }
    }

    #[test]
    fn roctx_events_sit_between_records_and_each_reader_takes_its_own() {
        let path = temp("regions");
        let mut file = RecordFile::create(&path).unwrap();
        let push = push_region();
        let exit = Region {
            kind: RegionKind::Exit,
            id: 0,
            depth: -1,
            name: None,
            utf8: true,
            timestamp: 5_000,
            ..push.clone()
        };
        file.push_region(&push);
        file.push(&sample(1));
        file.push_region(&exit);
        file.flush().unwrap();
        let records: Vec<Record> = read(&path).map(Result::unwrap).collect();
        assert_eq!(records, [sample(1)]);
        let regions: Vec<Region> = read_regions(&path).map(Result::unwrap).collect();
        assert_eq!(regions, [push, exit]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn every_roctx_event_kind_reads_back_as_itself() {
        for (number, kind) in RegionKind::ALL.iter().enumerate() {
            assert_eq!(*kind as usize, number);
        }
        let path = temp("kinds");
        let mut file = RecordFile::create(&path).unwrap();
        for kind in RegionKind::ALL {
            file.push_region(&Region {
                kind,
                object: u64::MAX,
                ..push_region()
            });
        }
        file.flush().unwrap();
        let kinds: Vec<RegionKind> = read_regions(&path).map(|r| r.unwrap().kind).collect();
        assert_eq!(kinds, RegionKind::ALL);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn values_held_apart_from_their_record_are_written_as_its_own() {
        let path = temp("held-apart");
        let mut file = RecordFile::create(&path).unwrap();
        let values: Vec<u64> = (0..200)
            .map(|i| if i % 7 == 0 { i << 20 } else { 0 })
            .collect();
        let sizes = [64, 0, 3, 133];
        let counters = Counters::new(&values, &sizes);
        let events: Vec<Vec<u64>> = vec![
            values[..64].to_vec(),
            vec![],
            values[64..67].to_vec(),
            values[67..].to_vec(),
        ];
        assert_eq!(counters.to_vecs(), events);
        let record = Record {
            kernel: String::new(),
            arch: String::new(),
            counters: vec![vec![1, 2, 3]],
            ..sample(1)
        };
        // The record's own values are not read when others are given.
        file.push_named(&record, "gfx942", "vadd", Some(counters));
        file.push_named(&record, "gfx942", "vadd", None);
        file.flush().unwrap();
        let named = |counters| Record {
            arch: "gfx942".into(),
            kernel: "vadd".into(),
            counters,
            ..record.clone()
        };
        let read_back: Vec<Record> = read(&path).map(Result::unwrap).collect();
        assert_eq!(read_back, [named(events), named(vec![vec![1, 2, 3]])]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn records_round_trip_with_every_field_and_strings_written_once() {
        let path = temp("round-trip");
        let mut file = RecordFile::create(&path).unwrap();
        let mut with_counters = sample(1);
        with_counters.counters = vec![vec![0, 9, 10, 99, 100, 12_345, u64::MAX], vec![], vec![7]];
        let replayed = Record {
            replay: Some(ReplayStats {
                passes: 3,
                saved: 4096,
                restored: 12_288,
                declined: None,
            }),
            ..sample(3)
        };
        let declined = Record {
            replay: Some(ReplayStats {
                passes: 0,
                declined: Some("multi-packet submission".into()),
                ..ReplayStats::default()
            }),
            ..Record::default()
        };
        let kept_kernel = crate::dispatch::kernel_names::intern("vadd(float*, float const*)");
        let kept_arch = crate::dispatch::kernel_names::intern("gfx942");
        let named = Record {
            kernel: String::new(),
            arch: String::new(),
            ..sample(4)
        };
        let all = [
            with_counters.clone(),
            sample(2),
            Record::default(),
            replayed.clone(),
            declined.clone(),
        ];
        for record in &all {
            file.push(record);
        }
        file.push_named(&named, kept_arch, kept_kernel, None);
        file.push_named(&named, kept_arch, kept_kernel, None);
        file.flush().unwrap();
        let mut expected = all.to_vec();
        expected.push(sample(4));
        expected.push(sample(4));
        let read_back: Vec<Record> = read(&path).map(Result::unwrap).collect();
        assert_eq!(read_back, expected);
        // "gfx942", the kernel name, "" and the reason: four strings, each once.
        let bytes = std::fs::read(&path).unwrap();
        let count = |needle: &[u8]| bytes.windows(needle.len()).filter(|w| *w == needle).count();
        assert_eq!(count(b"gfx942"), 1);
        assert_eq!(count(b"vadd(float*, float const*)"), 1);
        assert_eq!(count(b"multi-packet submission"), 1);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn an_incomplete_last_frame_is_skipped() {
        let path = temp("torn");
        let mut file = RecordFile::create(&path).unwrap();
        let timing_only = Record {
            group: None,
            counters: vec![],
            ..sample(2)
        };
        file.push(&sample(1));
        file.push(&timing_only);
        file.flush().unwrap();
        assert!(!file.has_pending());
        let strings = std::mem::take(&mut file.strings);
        drop(file);
        let whole = std::fs::read(&path).unwrap();
        // A record cut short by a kill, at every length short of whole.
        let mut next = RecordFile::create(&temp("torn-next")).unwrap();
        next.strings = strings;
        next.buffer.clear();
        next.push(&sample(3));
        let frame = next.buffer.clone();
        for cut in 0..frame.len() {
            let mut bytes = whole.clone();
            bytes.extend_from_slice(&frame[..cut]);
            std::fs::write(&path, &bytes).unwrap();
            let read_back: Vec<Record> = read(&path).map(Result::unwrap).collect();
            assert_eq!(
                read_back,
                vec![sample(1), timing_only.clone()],
                "cut at {cut}"
            );
        }
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(temp("torn-next")).unwrap();
    }

    #[test]
    fn flushed_records_are_in_the_file_before_it_is_closed_and_the_tally_says_how_it_ended() {
        let path = temp("mapped");
        let mut file = RecordFile::create(&path).unwrap();
        let tally = file.tally();
        let untallied = read_tally(&path).unwrap();
        let me = std::process::id();
        assert_eq!(
            untallied,
            Tallied {
                pid: me,
                expected: 0,
                ending: Ending::Unfinished
            }
        );
        // Several growths of the mapping: records of ~12 KiB each, past 1 MiB.
        let big = |n| Record {
            counters: vec![(1..=1500).collect()],
            ..sample(n)
        };
        let mut written = Vec::new();
        for n in 0..100 {
            tally.expect(1);
            file.push(&big(n));
            file.flush().unwrap();
            written.push(big(n));
            if n % 37 == 0 {
                let open: Vec<Record> = read(&path).map(Result::unwrap).collect();
                assert_eq!(open, written, "read while open after {n}");
            }
        }
        let length = std::fs::metadata(&path).unwrap().len();
        assert!(length > file.len as u64, "room reserved past the records");
        tally.signalled(libc::SIGSEGV);
        assert_eq!(
            read_tally(&path).unwrap().ending,
            Ending::Signal(libc::SIGSEGV)
        );
        let records_end = file.len as u64;
        drop(file);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), records_end);
        let closed = read_tally(&path).unwrap();
        assert_eq!(closed.expected, 100);
        assert_eq!(closed.ending, Ending::Signal(libc::SIGSEGV), "kept");
        let read_back: Vec<Record> = read(&path).map(Result::unwrap).collect();
        assert_eq!(read_back, written);

        let mut file = RecordFile::create(&path).unwrap();
        file.push(&sample(1));
        drop(file);
        assert_eq!(read_tally(&path).unwrap().ending, Ending::Closed);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn the_fuzzing_seeds_are_files_of_this_version() {
        let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/raw_records");
        for (name, dispatches) in [
            ("header-only", 0),
            ("roctx", 0),
            ("timing", 4),
            ("counters2", 4),
        ] {
            let path = seeds.join(name);
            let records: Vec<Record> = read(&path).map(Result::unwrap).collect();
            assert_eq!(records.len(), dispatches, "{name}");
            let tallied = read_tally(&path).unwrap();
            assert_eq!(tallied.expected, dispatches as u64, "{name}");
            assert_eq!(tallied.ending, Ending::Closed, "{name}");
        }
        let regions = read_regions(&seeds.join("roctx"))
            .map(Result::unwrap)
            .count();
        assert!(regions > 0);
    }

    #[test]
    fn damage_and_foreign_files_are_errors_naming_the_place() {
        let path = temp("bad");
        std::fs::write(&path, "hello\n").unwrap();
        let errors: Vec<String> = read(&path).map(|r| r.unwrap_err().to_string()).collect();
        assert_eq!(
            errors,
            vec![format!(
                "{}: not an rtl-pmc raw record file",
                path.display()
            )]
        );

        let old = "{\"format\":\"rtl-pmc raw records\",\"version\":1}\n{}\n";
        std::fs::write(&path, old).unwrap();
        let errors: Vec<String> = read(&path).map(|r| r.unwrap_err().to_string()).collect();
        assert_eq!(
            errors,
            vec![format!(
                "{}: raw record format version 1, this build reads version 5",
                path.display()
            )]
        );

        let mut file = RecordFile::create(&path).unwrap();
        file.push(&sample(1));
        let frames = file.buffer.clone();
        drop(file);
        let mut bytes = std::fs::read(&path).unwrap();
        let damaged_at = bytes.len();
        bytes.extend_from_slice(&[2, 0, 0, 0, 9, 9]);
        bytes.extend_from_slice(&frames);
        std::fs::write(&path, &bytes).unwrap();
        let items: Vec<Result<Record, RecordError>> = read(&path).collect();
        assert_eq!(items.len(), 2, "iteration stops at the damage");
        assert_eq!(items[0].as_ref().unwrap(), &sample(1));
        assert_eq!(
            items[1].as_ref().unwrap_err().to_string(),
            format!(
                "{}: byte {damaged_at}: malformed record: unknown frame kind 9",
                path.display()
            )
        );
        std::fs::remove_file(&path).unwrap();

        let missing: Vec<Result<Record, RecordError>> = read(&path).collect();
        assert!(matches!(missing[..], [Err(RecordError::Io { .. })]));
    }

    #[test]
    fn counts_larger_than_their_frame_are_damage_not_allocations() {
        let path = temp("counts");
        let mut file = RecordFile::create(&path).unwrap();
        file.push(&sample(1));
        // The last event's sample count (before a mask byte and u64::MAX's ten bytes), made huge.
        let at = file.buffer.len() - 11 - 4;
        file.buffer[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        file.flush().unwrap();
        let errors: Vec<String> = read(&path).map(|r| r.unwrap_err().to_string()).collect();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].ends_with("malformed record: 4294967295 items do not fit the frame"),
            "{errors:?}"
        );
        std::fs::remove_file(&path).unwrap();
    }

    /// A file of `sample(1)` then a dispatch frame whose one event has `samples` samples
    /// packed as `packed`; the items read from it.
    fn read_packed(name: &str, samples: u32, packed: &[u8]) -> Vec<Result<Record, String>> {
        let path = temp(name);
        let mut file = RecordFile::create(&path).unwrap();
        file.push(&sample(1));
        file.flush().unwrap();
        file.push(&Record {
            counters: vec![],
            ..sample(2)
        });
        let b = &mut file.buffer;
        let events = b.len() - 4;
        b[events..].copy_from_slice(&1u32.to_le_bytes());
        put_u32(b, samples);
        b.extend_from_slice(packed);
        end_frame(b, 0);
        file.flush().unwrap();
        let items = read(&path).map(|r| r.map_err(|e| e.to_string())).collect();
        std::fs::remove_file(&path).unwrap();
        items
    }

    #[test]
    fn values_are_packed_in_groups_of_eight_with_varints_and_read_back_exactly() {
        let mut values: Vec<u64> = vec![0; 19];
        let special = [
            (0, 1),
            (1, 127),
            (2, 128),
            (7, 16_383),
            (8, 16_384),
            (10, 1 << 35),
            (15, u64::MAX),
            (16, 1 << 63),
            (18, (1 << 63) - 1),
        ];
        for (at, v) in special {
            values[at] = v;
        }
        let mut buffer = Vec::new();
        put_values(&mut buffer, &values);
        let expected: Vec<u8> = [
            vec![0b1000_0111, 1, 127, 0x80, 1, 0xff, 0x7f],
            vec![0b1000_0101, 0x80, 0x80, 1],
            vec![0x80, 0x80, 0x80, 0x80, 0x80, 1],
            vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1],
            vec![
                0b101, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1,
            ],
            vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
        ]
        .concat();
        assert_eq!(buffer, expected);
        let mut f = Fields { rest: &buffer };
        let mut counted = 19u32.to_le_bytes().to_vec();
        counted.extend_from_slice(&buffer);
        f.rest = &counted;
        assert_eq!(f.values().unwrap(), values);
        assert!(f.rest.is_empty());

        // Zeros take a bit each; a group of them one byte.
        let mut zeros = Vec::new();
        put_values(&mut zeros, &[0; 2128]);
        assert_eq!(zeros, vec![0; 266]);
        let mut none = Vec::new();
        put_values(&mut none, &[]);
        assert!(none.is_empty());

        let path = temp("packed");
        let mut file = RecordFile::create(&path).unwrap();
        let record = Record {
            counters: vec![values.clone(), vec![0; 2128], vec![], (0..1000).collect()],
            ..sample(1)
        };
        file.push(&record);
        file.flush().unwrap();
        let read_back: Vec<Record> = read(&path).map(Result::unwrap).collect();
        assert_eq!(read_back, [record]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn packed_values_that_break_the_layout_are_damage_naming_it() {
        let damage = |name, samples, packed: &[u8]| -> String {
            let items = read_packed(name, samples, packed);
            assert_eq!(items.len(), 2, "{name}");
            assert_eq!(items[0].as_ref().unwrap(), &sample(1));
            let error = items[1].as_ref().unwrap_err();
            error
                .split("malformed record: ")
                .nth(1)
                .unwrap()
                .to_string()
        };
        assert_eq!(
            damage("mask", 3, &[0b1001, 1, 1]),
            "value mask 0x09 marks samples past the last of 3"
        );
        assert_eq!(
            damage("zero", 2, &[0b10, 0x80, 0]),
            "a counter value marked as not zero is zero"
        );
        assert_eq!(
            damage(
                "overflow",
                1,
                &[1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2]
            ),
            "a counter value overflows 64 bits"
        );
        assert_eq!(
            damage(
                "long",
                1,
                &[1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1]
            ),
            "a counter value overflows 64 bits"
        );
        assert_eq!(
            damage("within", 1, &[1, 0x80, 0x80]),
            "the frame ends within a counter value"
        );
        assert_eq!(damage("short", 9, &[1, 5]), "the frame ends 1 bytes early");
        assert_eq!(
            damage("groups", 17, &[0, 0]),
            "17 items do not fit the frame"
        );
        assert_eq!(
            damage("after", 8, &[0, 0]),
            "1 bytes after the end of the frame"
        );
        let whole = read_packed("whole", 9, &[0b1000_0000, 0x80, 1, 1, 5]);
        assert_eq!(
            whole[1].as_ref().unwrap().counters,
            [vec![0, 0, 0, 0, 0, 0, 0, 128, 5]]
        );
    }
}
