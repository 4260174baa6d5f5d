//! A profile's CSV file read into columns of numbers, its rows grouped by (GPU, kernel) as
//! they are read. A large file is read in two halves at once, each half's rows written
//! straight into the columns' memory.

use std::collections::HashMap;
use std::path::Path;

use crate::error::CliError;

mod records;
mod rooms;
mod waiting;
use records::{OwnedRecord, Record, Records, Start};
use rooms::{HalfRows, Room, Rooms, Sampled};
use waiting::Waiting;

/// The rows of one (GPU, kernel): its key and its columns of values.
pub(super) type Group = ((String, String), Vec<Vec<f64>>);

/// A CSV file's rows grouped by (GPU, kernel) as they are read, each group's columns of
/// values (NaN where a value is not a number).
pub(super) struct GroupedCsv {
    /// The header's column names.
    pub(super) names: Vec<String>,
    /// (GPU, kernel) and the group's columns, in order of first appearance.
    pub(super) groups: Vec<Group>,
    /// The group of each row.
    row_group: Vec<usize>,
}

/// How a file's rows are grouped: by its own kernel (and GPU) columns, or row by row as
/// another file's (rocprof-compute joins its files by position).
pub(super) enum Grouping<'a> {
    ByColumns {
        kernel: &'a str,
        gpu: Option<&'a str>,
    },
    AsRows(&'a GroupedCsv),
}

pub(super) fn read_csv(path: &Path, grouping: Grouping) -> Result<GroupedCsv, CliError> {
    let bad = |e: String| CliError::input(format!("analyze: {}: {e}", path.display()));
    let mut reader = csv::Reader::from_path(path).map_err(|e| bad(e.to_string()))?;
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
    let start = Start {
        byte: reader.position().byte(),
        line: reader.position().line(),
        record: 1,
    };
    let width = names.len();
    let mut reader = Records::open(path, start, width).map_err(|e| bad(e.to_string()))?;
    let start = start.byte;
    let len = std::fs::metadata(path).map_or(0, |m| m.len());
    let split = match key {
        RowKey::Columns { .. } => second_half(path, start, len),
        RowKey::AsRows(_) => None,
    };
    // Before the second half is read, its groups' columns are made from the first rows.
    let mut sample: Vec<OwnedRecord> = Vec::new();
    while split.is_some_and(|at| sample.len() < SAMPLE_ROWS && !reached(&reader, at)) {
        let record = reader.next().map_err(|e| {
            bad(format!(
                "line {}: {e}",
                e.line().unwrap_or(sample.len() as u64 + 2)
            ))
        })?;
        match record {
            Some(record) => sample.push(record.to_owned()),
            None => break,
        }
    }
    let sample_groups = match key {
        RowKey::Columns { kernel, gpu } => sampled(&sample, kernel, gpu),
        RowKey::AsRows(_) => Vec::new(),
    };
    let mut rooms = match split {
        Some(at) if !sample_groups.is_empty() => {
            let bytes = sample.iter().map(|r| r.record().file_bytes()).sum();
            let halves = (at.saturating_sub(start), len.saturating_sub(at));
            Rooms::plan(&sample_groups, sample.len(), bytes, halves, width)
        }
        _ => Rooms::none(),
    };
    let (first_rooms, second_rooms) = rooms.halves();
    let sampled_keys: Vec<(String, String)> = sample_groups.into_iter().map(|s| s.key).collect();
    let mut collector = Collector::new(
        width,
        key,
        len.saturating_sub(start),
        &sampled_keys,
        first_rooms,
    );
    for record in &sample {
        collector.add(record.record());
    }
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let (first, second) = std::thread::scope(|scope| {
        let mut second = split.map(|at| {
            let rest = Collector::new(
                width,
                key,
                len.saturating_sub(at),
                &sampled_keys,
                second_rooms,
            );
            let cancel = &cancel;
            scope.spawn(move || read_from(path, at, rest, cancel))
        });
        let mut rest = None;
        loop {
            if let Some(at) = split.filter(|&at| reached(&reader, at)) {
                if let Some(handle) = second.take() {
                    // A record ended by CRLF is read up to its CR: the LF left is the line
                    // break `at` follows.
                    let whole_records = reader.position() <= at;
                    if !whole_records {
                        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    if let (true, Ok(Some(read))) = (whole_records, handle.join()) {
                        rest = Some(read.finish());
                        break;
                    }
                }
            }
            let record = reader.next().map_err(|e| {
                // The second half's reader stops at once rather than read on for nothing.
                cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                bad(format!(
                    "line {}: {e}",
                    e.line().unwrap_or(collector.rows() as u64 + 2)
                ))
            })?;
            if !record.is_some_and(|record| collector.add(record)) {
                break;
            }
        }
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok::<_, CliError>((collector.finish(), rest))
    })?;
    Ok(joined(names, rooms, first, second))
}

/// Rows read from a large file's start, whose groups are given columns before the rest is
/// read.
const SAMPLE_ROWS: usize = 256;

/// Whether `reader` has read up to byte `at`, where the second half starts: a record ended by
/// CRLF leaves its reader one byte short, before the LF.
fn reached(reader: &Records, at: u64) -> bool {
    reader.position() + 1 >= at
}

/// The groups of `sample`'s rows, in order of first appearance, with their rows.
fn sampled(sample: &[OwnedRecord], kernel: usize, gpu: Option<usize>) -> Vec<Sampled> {
    let mut groups: Vec<Sampled> = Vec::new();
    for record in sample {
        let key = key_of(record.record(), kernel, gpu);
        match groups.iter_mut().find(|g| g.key == key) {
            Some(group) => group.rows += 1,
            None => groups.push(Sampled { key, rows: 1 }),
        }
    }
    groups
}

/// A row's group: its GPU column's value (empty without one) and its kernel column's.
fn key_of(record: Record<'_>, kernel: usize, gpu: Option<usize>) -> (String, String) {
    let text = |i: usize| String::from_utf8_lossy(record.field(i).unwrap_or_default()).into_owned();
    (gpu.map(text).unwrap_or_default(), text(kernel))
}

/// The file's rows from the two halves' collected rows: the second half's groups after the
/// first's (those the first lacks after all of the first's), their rows after the first's.
fn joined(
    names: Vec<String>,
    rooms: Rooms,
    first: Collected,
    second: Option<Collected>,
) -> GroupedCsv {
    let width = names.len();
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut first_parts = Vec::new();
    for (key, rows) in first.groups {
        keys.push(key);
        first_parts.push(rows);
    }
    let mut row_group = first.row_group;
    let mut second_parts: Vec<HalfRows> = Vec::new();
    if let Some(second) = second {
        #[cfg(test)]
        HALVES_JOINED.with(|n| n.set(n.get() + 1));
        let index: HashMap<(String, String), usize> = keys
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, k)| (k, i))
            .collect();
        let mut map = Vec::new();
        second_parts.resize_with(keys.len(), Default::default);
        for (key, rows) in second.groups {
            let at = match index.get(&key) {
                Some(&at) => at,
                None => {
                    keys.push(key);
                    first_parts.push(Default::default());
                    second_parts.push(Default::default());
                    keys.len() - 1
                }
            };
            second_parts[at] = rows;
            map.push(at);
        }
        row_group.extend(second.row_group.iter().map(|&g| map[g]));
    }
    let columns = rooms.join(width, first_parts, second_parts);
    GroupedCsv {
        names,
        groups: keys.into_iter().zip(columns).collect(),
        row_group,
    }
}

/// A collector's rows: per group its key, the rows it wrote into its room and its columns of
/// the rest; and the group of each row.
struct Collected {
    groups: Vec<((String, String), HalfRows)>,
    row_group: Vec<usize>,
}

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
    file.take(1 << 20).read_to_end(&mut window).ok()?;
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
    // Only its bytes matter: the line and record counts are for messages it never gives.
    let start = Start {
        byte: at,
        line: 1,
        record: 0,
    };
    let mut reader = Records::open(path, start, collector.width).ok()?;
    while let Some(record) = reader.next().ok()? {
        if cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        collector.add(record);
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
    /// Each group's latest rows, moved into its columns a block at a time: each column then
    /// grows by a run of values rather than one value per row.
    pending: Vec<Waiting>,
    /// The room made for the first groups' rows before reading, filled before their columns.
    rooms: Vec<Room<'a>>,
    row_group: Vec<usize>,
    /// The bytes of the file this collector's rows are expected to span, and of those read
    /// so far (about): what the columns' room is reserved from.
    span: u64,
    read: u64,
}

impl<'a> Collector<'a> {
    /// A collector of `width` columns, with the groups of `keys` first, their rows filling
    /// `rooms`.
    fn new(
        width: usize,
        key: RowKey<'a>,
        span: u64,
        keys: &[(String, String)],
        rooms: Vec<Room<'a>>,
    ) -> Collector<'a> {
        let mut collector = Collector {
            width,
            key,
            pending: Vec::new(),
            groups: Vec::new(),
            rooms,
            index: HashMap::new(),
            row_group: Vec::new(),
            span,
            read: 0,
        };
        let keys = match key {
            RowKey::AsRows(other) => other.groups.iter().map(|(key, _)| key.clone()).collect(),
            RowKey::Columns { .. } => keys.to_vec(),
        };
        for key in keys {
            collector.group(key);
        }
        collector
    }

    fn rows(&self) -> usize {
        self.row_group.len()
    }

    /// The group of `key`, made if it is new.
    fn group(&mut self, key: (String, String)) -> usize {
        if let Some(&group) = self.index.get(&key) {
            return group;
        }
        *self.index.entry(key.clone()).or_insert_with(|| {
            self.groups.push((key, vec![Vec::new(); self.width]));
            self.pending.push(Waiting::default());
            self.groups.len() - 1
        })
    }

    /// Adds a record; false when it has no group (past the end of the other file's rows).
    fn add(&mut self, record: Record<'_>) -> bool {
        let group = match self.key {
            RowKey::AsRows(other) => match other.row_group.get(self.rows()) {
                Some(&g) => g,
                None => return false,
            },
            RowKey::Columns { kernel, gpu } => self.group(key_of(record, kernel, gpu)),
        };
        let width = self.width;
        let rows_so_far = self.rows() as f64 + 1.0;
        let per_row = self.read as f64 / rows_so_far;
        let rows = &mut self.pending[group];
        self.read += record.file_bytes();
        rows.push(record, width);
        if rows.is_full() {
            let columns = &mut self.groups[group].1;
            let room = self.rooms.get_mut(group);
            if columns.first().is_some_and(|c| c.capacity() == 0)
                && room.as_ref().is_none_or(|r| r.is_empty())
            {
                // The group's share of the rows so far, of the rows expected.
                let share = rows.rows() as f64 / rows_so_far;
                let expected = rooms::expected_rows(share, self.span, per_row);
                columns.iter_mut().for_each(|c| c.reserve(expected));
            }
            spread(rows, columns, room);
        }
        self.row_group.push(group);
        true
    }

    /// The rows collected, every pending one moved to its room or columns.
    fn finish(mut self) -> Collected {
        let mut rooms = self.rooms.into_iter();
        let groups = self
            .groups
            .into_iter()
            .zip(&mut self.pending)
            .map(|((key, mut columns), rows)| {
                let mut room = rooms.next();
                spread(rows, &mut columns, room.as_mut());
                (key, (room.map_or(0, |r| r.rows), columns))
            })
            .collect();
        Collected {
            groups,
            row_group: self.row_group,
        }
    }
}

// How many second halves the thread reading a file joined to their first (the unit tests check
// that one was).
#[cfg(test)]
thread_local! {
    static HALVES_JOINED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Moves the waiting rows into `room` while it has room, the rest to the ends of `columns`.
fn spread(rows: &mut Waiting, columns: &mut [Vec<f64>], room: Option<&mut Room>) {
    let fit = room.map_or(0, |room| room.fill(rows));
    for (i, column) in columns.iter_mut().enumerate() {
        column.extend_from_slice(&rows.column(i)[fit..]);
    }
    rows.clear();
}

/// A lone CSV field's value (the unit tests check it field by field).
#[cfg(test)]
fn parse_value(field: &[u8]) -> f64 {
    field_value(field, 0, field.len())
}

/// The value of the CSV field `bytes[at..at + len]`: counters are mostly plain integers, read
/// eight digits at a time; anything else goes through `f64`'s parser; not a number is NaN.
#[inline]
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
        None => parsed_value(&bytes[at..at + len]),
    }
}

/// A field that is not a plain integer of up to fifteen digits, through `f64`'s parser.
#[cold]
fn parsed_value(field: &[u8]) -> f64 {
    std::str::from_utf8(field)
        .ok()
        .and_then(|f| f.trim().parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}

/// The eight bytes of `bytes` from `at` as a word, the first lowest; zeros past the end.
#[inline]
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
#[inline]
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
            let order: Vec<&String> = fields[first..].iter().chain(&fields[..first]).collect();
            let bytes: Vec<u8> = order.iter().flat_map(|f| f.bytes()).collect();
            let ends: Vec<usize> = order
                .iter()
                .scan(0, |at, f| {
                    *at += f.len();
                    Some(*at)
                })
                .collect();
            let record = Record {
                bytes: &bytes,
                ends: &ends,
            };
            let mut waiting = Waiting::default();
            waiting.push(record, ends.len());
            let read: Vec<u64> = (0..ends.len())
                .map(|i| waiting.column(i)[0].to_bits())
                .collect();
            let alone: Vec<u64> = order
                .iter()
                .map(|f| parse_value(f.as_bytes()).to_bits())
                .collect();
            assert_eq!(read, alone, "fields from {first}");
        }
    }

    /// How many second halves this thread's reads joined to their first.
    fn halves_joined() -> usize {
        HALVES_JOINED.with(std::cell::Cell::get)
    }

    /// `text` read from a file named for `name`, its second half apart and joined.
    fn read_in_halves(name: &str, text: &str) -> GroupedCsv {
        let before = halves_joined();
        let (read, split) = read_text(name, text);
        assert!(split.is_some());
        assert!(
            halves_joined() > before,
            "the second half's rows were read apart and joined"
        );
        read.unwrap()
    }

    #[test]
    fn a_file_read_in_two_halves_is_read_as_in_one() {
        let text = rows(1000, |i| format!("k{}", i % 3));
        expect_groups(&read_in_halves("halves", &text), 1000, &["k0", "k1", "k2"]);
    }

    #[test]
    fn a_file_of_crlf_line_ends_is_read_in_two_halves_too() {
        let text = rows(1000, |i| format!("k{}", i % 3)).replace('\n', "\r\n");
        expect_groups(&read_in_halves("crlf", &text), 1000, &["k0", "k1", "k2"]);
    }

    /// Checks that each group of `read` holds the rows of `text` (`rows`' form) of its name,
    /// in order.
    fn expect_rows_of_names(read: &GroupedCsv, count: usize, name: impl Fn(usize) -> String) {
        let mut names: Vec<String> = Vec::new();
        for i in 0..count {
            if !names.contains(&name(i)) {
                names.push(name(i));
            }
        }
        let keys: Vec<&str> = read.groups.iter().map(|((_, k), _)| k.as_str()).collect();
        assert_eq!(keys, names);
        let of = |i: usize| names.iter().position(|n| *n == name(i)).unwrap();
        assert_eq!(read.row_group, (0..count).map(of).collect::<Vec<_>>());
        for (g, (_, columns)) in read.groups.iter().enumerate() {
            let a: Vec<f64> = (0..count)
                .filter(|&i| of(i) == g)
                .map(|i| i as f64)
                .collect();
            let b: Vec<f64> = a.iter().map(|x| x * 10.0).collect();
            assert_eq!(columns[2], a, "group {g}");
            assert_eq!(columns[3], b, "group {g}");
        }
    }

    #[test]
    fn kernels_the_first_rows_show_or_not_are_read_in_order_in_either_half() {
        // The first rows show k0 and k1 alike; then k0 alone to past the middle (more than its
        // room for the first half), k2 (not in the first rows), then k1 alone (more than its
        // room for the second half) and k3 (only in the second half).
        let name = |i: usize| {
            match i {
                0..256 => ["k0", "k1"][i % 2],
                256..1100 => "k0",
                1100..1150 => "k2",
                1150..1990 => "k1",
                _ => "k3",
            }
            .to_string()
        };
        let before = halves_joined();
        let (read, split) = read_text("rooms", &rows(2000, name));
        assert!(split.is_some());
        assert!(
            halves_joined() > before,
            "the second half's rows were read apart"
        );
        expect_rows_of_names(&read.unwrap(), 2000, name);
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

    /// The error the `csv` crate gives for `text`'s first bad record, read as `read_csv` reads.
    fn csv_crate_error(text: &str) -> String {
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let error = reader.byte_records().find_map(Result::err).unwrap();
        error.to_string()
    }

    #[test]
    fn a_row_of_too_few_or_too_many_fields_is_reported_as_the_csv_crate_reports_it() {
        for (at, bad) in [(5, "1,k0,5"), (700, "1,k0,5,6,7"), (2, "\"1,\n\",k0,5")] {
            let mut text = rows(1000, |i| format!("k{}", i % 3));
            let line = text.split_inclusive('\n').nth(at).unwrap().to_string();
            let place = text.find(&line).unwrap();
            text.insert_str(place, &format!("{bad}\n"));
            let (read, _) = read_text("fields", &text);
            let error = read.err().unwrap().to_string();
            let expected = format!(": line {}: {}", at + 1, csv_crate_error(&text));
            assert!(error.ends_with(&expected), "{error}\n{expected}");
        }
    }

    #[test]
    fn a_last_row_without_a_line_end_is_read() {
        let mut text = rows(1000, |i| format!("k{}", i % 3));
        text.pop();
        let (read, _) = read_text("no-end", &text);
        expect_groups(&read.unwrap(), 1000, &["k0", "k1", "k2"]);
    }

    #[test]
    fn a_bad_row_after_names_of_several_lines_is_reported_at_its_line() {
        // Every name holds line breaks: the bad row's line is not its index + 2.
        let mut text = rows(1000, |i| format!("\"k{}\n\n\"", i % 3));
        text.push_str("1,k0,5\n");
        let (read, _) = read_text("bad-row-lines", &text);
        let error = read.err().unwrap().to_string();
        assert!(error.contains("line 3002: "), "{error}");
    }

    #[test]
    fn a_bad_row_of_a_crlf_file_is_reported_at_its_line() {
        // A record ended by CRLF is read up to its CR: the next one starts at the LF, still on
        // the line before, and at the start of the first data row (after the header's CR).
        for (count, line) in [(0, "line 2: "), (1000, "line 1002: ")] {
            let mut text = rows(count, |i| format!("k{}", i % 3));
            text.push_str("1,k0,5\n");
            let text = text.replace('\n', "\r\n");
            let (read, _) = read_text("bad-row-crlf", &text);
            let error = read.err().unwrap().to_string();
            assert!(error.contains(line), "{error}");
        }
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
