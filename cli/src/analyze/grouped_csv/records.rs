//! A CSV file's records from a given byte on, split by `csv_core` into buffers reused from
//! record to record: a record is its fields' bytes, one after another, and where each field
//! ends, read by the caller straight from those two slices.

use std::io::Read as _;

/// One record: its fields' bytes, one after another, and the end of each field in them.
#[derive(Clone, Copy)]
pub(super) struct Record<'r> {
    pub(super) bytes: &'r [u8],
    pub(super) ends: &'r [usize],
}

impl<'r> Record<'r> {
    /// The bytes of field `i`.
    pub(super) fn field(&self, i: usize) -> Option<&'r [u8]> {
        let end = *self.ends.get(i)?;
        let start = i.checked_sub(1).map_or(0, |before| self.ends[before]);
        self.bytes.get(start..end)
    }

    /// The record's bytes in the file, about (its fields and their separators).
    pub(super) fn file_bytes(&self) -> u64 {
        (self.bytes.len() + self.ends.len()) as u64
    }

    pub(super) fn to_owned(self) -> OwnedRecord {
        OwnedRecord {
            bytes: self.bytes.to_vec(),
            ends: self.ends.to_vec(),
        }
    }
}

/// A record kept past the next one's reading.
pub(super) struct OwnedRecord {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl OwnedRecord {
    pub(super) fn record(&self) -> Record<'_> {
        Record {
            bytes: &self.bytes,
            ends: &self.ends,
        }
    }
}

/// Why a record could not be read: the file, or a record whose fields are not as many as the
/// header's (said in the words of the `csv` crate, which reads the header).
#[derive(Debug)]
pub(super) enum ReadError {
    Io(std::io::Error),
    Fields {
        /// The record's index, the header's being 0.
        record: u64,
        /// The splitter's line count at the record's start, as the `csv` crate reports it.
        line: u64,
        /// The line the record starts on (one more when the count stood before the LF of a
        /// CRLF).
        own_line: u64,
        byte: u64,
        len: usize,
        expected: usize,
    },
}

impl ReadError {
    /// The line a record that could not be read starts on.
    pub(super) fn line(&self) -> Option<u64> {
        match self {
            ReadError::Fields { own_line, .. } => Some(*own_line),
            ReadError::Io(_) => None,
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => e.fmt(f),
            ReadError::Fields {
                record,
                line,
                byte,
                len,
                expected,
                ..
            } => write!(
                f,
                "CSV error: record {record} (line: {line}, byte: {byte}): found record with \
                 {len} fields, but the previous record has {expected} fields"
            ),
        }
    }
}

/// Where a reader starts: the byte, its line, and the index of the record there.
#[derive(Clone, Copy)]
pub(super) struct Start {
    pub(super) byte: u64,
    pub(super) line: u64,
    pub(super) record: u64,
}

/// The records of a file from a byte on, each of `width` fields.
pub(super) struct Records {
    file: std::fs::File,
    splitter: csv_core::Reader,
    input: Vec<u8>,
    /// The input's bytes read from the file, and of those the ones split.
    filled: usize,
    split: usize,
    fields: Vec<u8>,
    ends: Vec<usize>,
    width: usize,
    /// The position of the next record (its line is the splitter's count).
    byte: u64,
    record: u64,
    done: bool,
}

/// Bytes read from the file at a time (a few in the unit tests, so that their records and
/// fields cross reads).
const READ_BUFFER: usize = if cfg!(test) { 61 } else { 1 << 17 };

/// The room first made for a record's fields' bytes, grown as records need.
const FIELD_BYTES: usize = if cfg!(test) { 8 } else { 1 << 16 };

impl Records {
    /// The records of `path` from `start` on, each expected to have `width` fields.
    pub(super) fn open(
        path: &std::path::Path,
        start: Start,
        width: usize,
    ) -> std::io::Result<Records> {
        use std::io::Seek as _;
        let mut file = std::fs::File::open(path)?;
        file.seek(std::io::SeekFrom::Start(start.byte))?;
        let mut splitter = csv_core::Reader::new();
        splitter.set_line(start.line);
        Ok(Records {
            file,
            splitter,
            input: vec![0; READ_BUFFER],
            filled: 0,
            split: 0,
            fields: vec![0; FIELD_BYTES],
            ends: vec![0; width.max(1)],
            width,
            byte: start.byte,
            record: start.record,
            done: false,
        })
    }

    /// The byte after the last record read.
    pub(super) fn position(&self) -> u64 {
        self.byte
    }

    /// The next record, or nothing at the file's end.
    pub(super) fn next(&mut self) -> Result<Option<Record<'_>>, ReadError> {
        use csv_core::ReadRecordResult as Read;
        if self.done {
            return Ok(None);
        }
        // A record ended by CRLF is read up to its CR: the next one starts at the LF, before
        // the splitter counts its line.
        if self.split == self.filled {
            self.fill().map_err(ReadError::Io)?;
        }
        let after_cr = self.input[self.split..self.filled].first() == Some(&b'\n');
        let at = (self.byte, self.line());
        let (mut bytes, mut ends) = (0, 0);
        loop {
            if self.split == self.filled {
                self.fill().map_err(ReadError::Io)?;
            }
            let (result, read, wrote, ended) = self.splitter.read_record(
                &self.input[self.split..self.filled],
                &mut self.fields[bytes..],
                &mut self.ends[ends..],
            );
            self.split += read;
            self.byte += read as u64;
            bytes += wrote;
            ends += ended;
            match result {
                Read::InputEmpty => {}
                Read::OutputFull => self.fields.resize(self.fields.len() * 2, 0),
                Read::OutputEndsFull => self.ends.resize(self.ends.len() * 2, 0),
                Read::Record => break,
                Read::End => {
                    self.done = true;
                    return Ok(None);
                }
            }
        }
        let record = self.record;
        self.record += 1;
        if ends != self.width {
            return Err(ReadError::Fields {
                record,
                line: at.1,
                own_line: at.1 + u64::from(after_cr),
                byte: at.0,
                len: ends,
                expected: self.width,
            });
        }
        Ok(Some(Record {
            bytes: &self.fields[..bytes],
            ends: &self.ends[..ends],
        }))
    }

    /// The line the next record starts on.
    fn line(&self) -> u64 {
        self.splitter.line()
    }

    /// Reads the file's next bytes into the input (none at its end).
    fn fill(&mut self) -> std::io::Result<()> {
        self.split = 0;
        self.filled = loop {
            match self.file.read(&mut self.input) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                read => break read?,
            }
        };
        Ok(())
    }
}
