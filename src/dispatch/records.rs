//! Raw per-dispatch records: the `<pid>.rtlraw` file the interposer streams and the CLI reads.
//!
//! The file is JSON lines. The first line is a header naming the format and its version; every
//! further line is one [`Record`]. Each record is written with its terminating newline in one
//! piece and the file is only ever appended to, so a process killed mid-write leaves at most one
//! unterminated last line, which [`read`] skips: everything flushed before stays readable.
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

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The value of the header's `format` key.
pub const FORMAT: &str = "rtl-pmc raw records";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// The file name extension of raw record files.
pub const EXTENSION: &str = "rtlraw";

/// The first line of a raw record file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Header {
    format: String,
    version: u32,
}

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

/// What a [`Region`] line records: one roctx call of the application, or the end of the process.
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

/// The key of a region line: `{"roctx":{...}}`.
const REGION_KEY: &str = "{\"roctx\":";

#[derive(Serialize, Deserialize)]
struct RegionLine {
    roctx: Region,
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
    /// The first line is not an rtl-pmc raw record header.
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
    /// A complete line is not a record.
    #[error("{path}:{line}: malformed record: {source}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What the JSON parser reported.
        source: serde_json::Error,
    },
}

/// An append-only raw record file being written; records are buffered until [`RecordFile::flush`].
#[derive(Debug)]
pub struct RecordFile {
    path: PathBuf,
    file: File,
    buffer: Vec<u8>,
}

impl RecordFile {
    /// Creates (truncates) the file at `path` and writes the header.
    pub fn create(path: &Path) -> Result<RecordFile, RecordError> {
        let io = |source| RecordError::Io {
            path: path.to_path_buf(),
            source,
        };
        File::create(path).map_err(io)?;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(io)?;
        let mut out = RecordFile {
            path: path.to_path_buf(),
            file,
            buffer: Vec::with_capacity(1 << 16),
        };
        let header = Header {
            format: FORMAT.to_string(),
            version: VERSION,
        };
        push_line(&mut out.buffer, &header);
        out.flush()?;
        Ok(out)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record to the buffer.
    pub fn push(&mut self, record: &Record) {
        push_record(&mut self.buffer, record);
    }

    /// Appends one region line to the buffer.
    pub fn push_region(&mut self, region: &Region) {
        push_line(
            &mut self.buffer,
            &RegionLine {
                roctx: region.clone(),
            },
        );
    }

    /// Whether records are waiting to be written.
    pub fn has_pending(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// Bytes of records waiting to be written.
    pub fn pending_bytes(&self) -> usize {
        self.buffer.len()
    }

    /// Writes the buffered records to the file.
    pub fn flush(&mut self) -> Result<(), RecordError> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let result = self.file.write_all(&self.buffer);
        self.buffer.clear();
        result.map_err(|source| RecordError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

fn push_line<T: Serialize>(buffer: &mut Vec<u8>, value: &T) {
    // Records and headers hold only integers and strings, which always serialize.
    if serde_json::to_writer(&mut *buffer, value).is_ok() {
        buffer.push(b'\n');
    }
}

/// Appends `record` as one JSON line, exactly as serde writes it. The counters, nearly all of
/// a record's bytes (thousands of numbers per dispatch on a large GPU), are written here
/// directly: serde_json spends several times longer on each number.
fn push_record(buffer: &mut Vec<u8>, record: &Record) {
    if record.counters.is_empty() {
        return push_line(buffer, record);
    }
    let head = Record {
        arch: record.arch.clone(),
        kernel: record.kernel.clone(),
        ranges: record.ranges.clone(),
        counters: Vec::new(),
        replay: record.replay.clone(),
        ..*record
    };
    let start = buffer.len();
    // Integers and strings always serialize.
    if serde_json::to_writer(&mut *buffer, &head).is_err() || buffer.pop() != Some(b'}') {
        buffer.truncate(start);
        return;
    }
    let numbers: usize = record.counters.iter().map(Vec::len).sum();
    buffer.reserve(16 + 3 * record.counters.len() + 3 * numbers);
    buffer.extend_from_slice(b",\"counters\":[");
    for (i, values) in record.counters.iter().enumerate() {
        if i > 0 {
            buffer.push(b',');
        }
        buffer.push(b'[');
        for (j, &value) in values.iter().enumerate() {
            if j > 0 {
                buffer.push(b',');
            }
            push_decimal(buffer, value);
        }
        buffer.push(b']');
    }
    buffer.extend_from_slice(b"]}\n");
}

/// Appends the decimal digits of `value`.
fn push_decimal(buffer: &mut Vec<u8>, mut value: u64) {
    if value < 10 {
        buffer.push(b'0' + value as u8);
        return;
    }
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    while value > 0 {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
    }
    buffer.extend_from_slice(&digits[at..]);
}

/// Reads the records of a raw record file written by [`RecordFile`], in file order, leaving out
/// its region lines.
///
/// An unterminated last line (the process was killed while writing it) is skipped silently;
/// any other damage is an error item, after which iteration ends.
pub fn read(path: &Path) -> impl Iterator<Item = Result<Record, RecordError>> {
    Reader::open(path, false).filter_map(|line| match line {
        Ok(Line::Dispatch(record)) => Some(Ok(record)),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })
}

/// Reads the region lines of a raw record file, in file order, as [`read`] reads records.
pub fn read_regions(path: &Path) -> impl Iterator<Item = Result<Region, RecordError>> {
    Reader::open(path, true).filter_map(|line| match line {
        Ok(Line::Region(region)) => Some(Ok(region)),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })
}

/// One line as read: consumed at once, never kept in bulk, so its size does not matter and a
/// box per dispatch would only cost.
#[allow(clippy::large_enum_variant)]
enum Line {
    Dispatch(Record),
    Region(Region),
    Other,
}

struct Reader {
    path: PathBuf,
    /// Parse region lines and skip records unparsed, instead of the reverse.
    regions: bool,
    lines: Option<BufReader<File>>,
    line: usize,
    failed: Option<RecordError>,
}

impl Reader {
    fn open(path: &Path, regions: bool) -> Reader {
        let mut reader = Reader {
            path: path.to_path_buf(),
            regions,
            lines: None,
            line: 0,
            failed: None,
        };
        match File::open(path) {
            Ok(file) => {
                reader.lines = Some(BufReader::new(file));
                if let Err(e) = reader.check_header() {
                    reader.lines = None;
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

    /// The next complete line, without its newline; `None` at the end or at an unterminated tail.
    fn next_line(&mut self) -> Option<Result<String, RecordError>> {
        let lines = self.lines.as_mut()?;
        let mut text = String::new();
        match lines.read_line(&mut text) {
            Ok(0) => None,
            Ok(_) if !text.ends_with('\n') => None,
            Ok(_) => {
                self.line += 1;
                text.pop();
                Some(Ok(text))
            }
            Err(source) => Some(Err(RecordError::Io {
                path: self.path.clone(),
                source,
            })),
        }
    }

    fn check_header(&mut self) -> Result<(), RecordError> {
        let path = self.path.clone();
        let not_records = || RecordError::NotRecords { path: path.clone() };
        let text = match self.next_line() {
            Some(line) => line?,
            None => return Err(not_records()),
        };
        let header: Header = serde_json::from_str(&text).map_err(|_| not_records())?;
        if header.format != FORMAT {
            return Err(not_records());
        }
        if header.version != VERSION {
            return Err(RecordError::Version {
                path: self.path.clone(),
                found: header.version,
            });
        }
        Ok(())
    }
}

impl Iterator for Reader {
    type Item = Result<Line, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.failed.take() {
            return Some(Err(e));
        }
        let text = match self.next_line()? {
            Ok(text) => text,
            Err(e) => {
                self.lines = None;
                return Some(Err(e));
            }
        };
        let malformed = |source| RecordError::Malformed {
            path: self.path.clone(),
            line: self.line,
            source,
        };
        let region = text.starts_with(REGION_KEY);
        let item = match (region, self.regions) {
            (true, true) => serde_json::from_str::<RegionLine>(&text)
                .map(|l| Line::Region(l.roctx))
                .map_err(malformed),
            (false, false) => serde_json::from_str(&text)
                .map(Line::Dispatch)
                .map_err(malformed),
            // The kind of line this reader does not want, left unparsed.
            _ => Ok(Line::Other),
        };
        if item.is_err() {
            self.lines = None;
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn region_lines_sit_between_records_and_each_reader_takes_its_own() {
        let path = temp("regions");
        let mut file = RecordFile::create(&path).unwrap();
        let push = Region {
            kind: RegionKind::Push,
            pid: 42,
            tid: 43,
            id: 3,
            depth: 0,
            timestamp: 900,
            name: Some("step \u{fffd}".into()),
            utf8: false,
            object: 0,
        };
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
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.lines().nth(3).unwrap(),
            r#"{"roctx":{"kind":"exit","pid":42,"tid":43,"depth":-1,"timestamp":5000}}"#
        );
        let records: Vec<Record> = read(&path).map(Result::unwrap).collect();
        assert_eq!(records, [sample(1)]);
        let regions: Vec<Region> = read_regions(&path).map(Result::unwrap).collect();
        assert_eq!(regions, [push, exit]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn records_are_written_exactly_as_serde_writes_them() {
        let mut with_counters = sample(1);
        with_counters.counters = vec![vec![0, 9, 10, 99, 100, 12_345, u64::MAX], vec![], vec![7]];
        let mut replayed = sample(3);
        replayed.replay = Some(ReplayStats {
            passes: 3,
            saved: 4096,
            restored: 12_288,
            declined: None,
        });
        let declined = Record {
            replay: Some(ReplayStats {
                passes: 0,
                declined: Some("multi-packet submission".into()),
                ..ReplayStats::default()
            }),
            ..Record::default()
        };
        for record in [
            with_counters,
            sample(2),
            Record::default(),
            replayed,
            declined,
        ] {
            let mut buffer = Vec::new();
            push_record(&mut buffer, &record);
            let expected = serde_json::to_string(&record).unwrap() + "\n";
            assert_eq!(String::from_utf8(buffer).unwrap(), expected);
        }
    }

    #[test]
    fn records_round_trip_and_a_torn_tail_is_skipped() {
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
        // A record cut short by a kill.
        let mut raw = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        raw.write_all(b"{\"pid\":42,\"tid\"").unwrap();
        let read_back: Vec<Record> = read(&path).map(Result::unwrap).collect();
        assert_eq!(read_back, vec![sample(1), timing_only]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn records_without_a_queue_order_or_ranges_read_as_unknown() {
        let path = temp("no-queue-order");
        let mut line = serde_json::to_value(sample(1)).unwrap();
        line.as_object_mut().unwrap().remove("queue_order");
        line.as_object_mut().unwrap().remove("ranges");
        let header = format!("{{\"format\":\"{FORMAT}\",\"version\":{VERSION}}}");
        std::fs::write(&path, format!("{header}\n{line}\n")).unwrap();
        let records: Vec<Record> = read(&path).map(Result::unwrap).collect();
        assert_eq!(
            records,
            [Record {
                queue_order: 0,
                ranges: Vec::new(),
                ..sample(1)
            }]
        );
        std::fs::remove_file(&path).unwrap();
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

        std::fs::write(
            &path,
            format!("{{\"format\":\"{FORMAT}\",\"version\":9}}\n{{}}\n"),
        )
        .unwrap();
        let errors: Vec<String> = read(&path).map(|r| r.unwrap_err().to_string()).collect();
        assert_eq!(
            errors,
            vec![format!(
                "{}: raw record format version 9, this build reads version 1",
                path.display()
            )]
        );

        let mut file = RecordFile::create(&path).unwrap();
        file.push(&sample(1));
        file.flush().unwrap();
        let mut raw = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        raw.write_all(b"[1]\n").unwrap();
        file.push(&sample(2));
        file.flush().unwrap();
        let items: Vec<Result<Record, RecordError>> = read(&path).collect();
        assert_eq!(items.len(), 2, "iteration stops at the damage");
        assert_eq!(items[0].as_ref().unwrap(), &sample(1));
        let message = items[1].as_ref().unwrap_err().to_string();
        assert!(
            message.starts_with(&format!("{}:3: malformed record:", path.display())),
            "{message}"
        );
        std::fs::remove_file(&path).unwrap();

        let missing: Vec<Result<Record, RecordError>> = read(&path).collect();
        assert!(matches!(missing[..], [Err(RecordError::Io { .. })]));
    }
}
