//! Columns made before a large file is read, for the groups its first rows show, so that
//! both halves' readers write their values straight into them: each column one allocation,
//! the first half's rows from its start and the second half's from a place past where the
//! first half's are expected to end. Once both are read, the second half's values are moved
//! down behind the first's, in memory already touched, rather than copied into new memory.

use super::waiting::Waiting;

/// A half's rows of one group: how many it wrote into the group's room, and its columns of
/// the rest.
pub(super) type HalfRows = (usize, Vec<Vec<f64>>);

/// A group's rows seen at the file's start, and its key.
pub(super) struct Sampled {
    pub(super) key: (String, String),
    pub(super) rows: usize,
}

/// The columns made before reading, and where each group's second-half rows begin in them.
pub(super) struct Rooms {
    columns: Vec<Vec<Vec<f64>>>,
    second_at: Vec<usize>,
}

/// Room made beyond the rows expected, for rows longer or shorter than the sample's.
const MARGIN: f64 = 1.05;

/// Rows expected of a group of `share` of the rows, in `bytes` of rows of `per_row` bytes
/// each, with [`MARGIN`].
pub(super) fn expected_rows(share: f64, bytes: u64, per_row: f64) -> usize {
    (share * bytes as f64 / per_row.max(1.0) * MARGIN).ceil() as usize
}

impl Rooms {
    /// No room: every value goes to the readers' own columns.
    pub(super) fn none() -> Rooms {
        Rooms {
            columns: Vec::new(),
            second_at: Vec::new(),
        }
    }

    /// Room for each group of a sample of `sample_rows` rows and `sample_bytes` bytes in a
    /// file whose halves are `first` and `second` bytes long: each group's share of the
    /// sample's rows, of each half's rows expected, and a little more. The columns are made
    /// zeroed by as many threads as there are cores (the memory is touched there, or by the
    /// readers as they write, never twice).
    pub(super) fn plan(
        sample: &[Sampled],
        sample_rows: usize,
        sample_bytes: u64,
        (first, second): (u64, u64),
        width: usize,
    ) -> Rooms {
        let per_row = sample_bytes as f64 / sample_rows.max(1) as f64;
        let expected = |share: f64, bytes: u64| expected_rows(share, bytes, per_row) + PLUS;
        let (second_at, lengths): (Vec<usize>, Vec<usize>) = sample
            .iter()
            .map(|group| {
                let share = group.rows as f64 / sample_rows.max(1) as f64;
                let at = expected(share, first);
                (at, at + expected(share, second))
            })
            .unzip();
        Rooms {
            columns: zeroed_columns(&lengths, width),
            second_at,
        }
    }

    /// Each group's room for the first half's rows and for the second half's.
    pub(super) fn halves(&mut self) -> (Vec<Room<'_>>, Vec<Room<'_>>) {
        self.columns
            .iter_mut()
            .zip(&self.second_at)
            .map(|(columns, &at)| {
                let (first, second) = columns.iter_mut().map(|c| c.split_at_mut(at)).unzip();
                (Room::new(first), Room::new(second))
            })
            .unzip()
    }

    /// The `width` columns of each group, made of the two halves' rows: `first` and `second`
    /// give, per group (in the same order, the rooms' groups first), the rows each half wrote
    /// into its room and its columns of the rest (a group past the rooms' has only those).
    pub(super) fn join(
        self,
        width: usize,
        first: Vec<HalfRows>,
        second: Vec<HalfRows>,
    ) -> Vec<Vec<Vec<f64>>> {
        let groups = first.len().max(second.len());
        let mut rooms = self.columns.into_iter();
        let mut starts = self.second_at.into_iter();
        let mut first = first.into_iter();
        let mut second = second.into_iter();
        let mut parts: Vec<ColumnParts> = Vec::with_capacity(groups * width);
        for _ in 0..groups {
            let room = rooms.next().unwrap_or_else(|| vec![Vec::new(); width]);
            let second_at = starts.next().unwrap_or(0);
            let (first_rows, first_rest) = first.next().unwrap_or_default();
            let (second_rows, second_rest) = second.next().unwrap_or_default();
            let column = |rest: Vec<Vec<f64>>| rest.into_iter().chain(std::iter::repeat(vec![]));
            for ((room, first_rest), second_rest) in room
                .into_iter()
                .zip(column(first_rest))
                .zip(column(second_rest))
            {
                parts.push(ColumnParts {
                    room,
                    first_rows,
                    first_rest,
                    second_at,
                    second_rows,
                    second_rest,
                });
            }
        }
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        let chunk = parts.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            for part in parts.chunks_mut(chunk) {
                scope.spawn(move || part.iter_mut().for_each(ColumnParts::join));
            }
        });
        let mut columns = parts.into_iter().map(|p| p.room);
        (0..groups)
            .map(|_| columns.by_ref().take(width).collect())
            .collect()
    }
}

/// Rows of room made beyond the share expected, for a group the sample shows once or twice.
const PLUS: usize = 16;

/// Zeroed columns of `lengths[g]` values, `width` of them for each group `g`, made by as many
/// threads as there are cores.
fn zeroed_columns(lengths: &[usize], width: usize) -> Vec<Vec<Vec<f64>>> {
    let all: Vec<usize> = lengths
        .iter()
        .flat_map(|&n| std::iter::repeat_n(n, width))
        .collect();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let chunk = all.len().div_ceil(threads).max(1);
    let made: Vec<Vec<f64>> = std::thread::scope(|scope| {
        let parts: Vec<_> = all
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(|&n| vec![0.0; n]).collect()))
            .collect();
        parts
            .into_iter()
            .flat_map(|p: std::thread::ScopedJoinHandle<Vec<Vec<f64>>>| {
                p.join().expect("zeroed columns")
            })
            .collect()
    });
    let mut made = made.into_iter();
    lengths
        .iter()
        .map(|_| made.by_ref().take(width).collect())
        .collect()
}

/// Part of a group's columns made before reading, that one reader writes its rows into.
pub(super) struct Room<'a> {
    columns: Vec<&'a mut [f64]>,
    /// Rows written so far.
    pub(super) rows: usize,
}

impl<'a> Room<'a> {
    fn new(columns: Vec<&'a mut [f64]>) -> Room<'a> {
        Room { columns, rows: 0 }
    }

    /// Whether the room has a place for rows at all.
    pub(super) fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Moves as many of the waiting rows as it has room for into the room; returns how many.
    pub(super) fn fill(&mut self, rows: &Waiting) -> usize {
        let free = self.columns.first().map_or(0, |c| c.len() - self.rows);
        let fit = rows.rows().min(free);
        for (i, column) in self.columns.iter_mut().enumerate() {
            column[self.rows..self.rows + fit].copy_from_slice(&rows.column(i)[..fit]);
        }
        self.rows += fit;
        fit
    }
}

/// One column's values as the two halves left them: the first half's `first_rows` in `room`
/// from its start, then `first_rest`; the second half's `second_rows` in `room` from
/// `second_at`, then `second_rest`.
struct ColumnParts {
    room: Vec<f64>,
    first_rows: usize,
    first_rest: Vec<f64>,
    second_at: usize,
    second_rows: usize,
    second_rest: Vec<f64>,
}

impl ColumnParts {
    /// Leaves the column's values, in order, in `room`.
    fn join(&mut self) {
        let room = &mut self.room;
        if room.is_empty() {
            *room = std::mem::take(&mut self.first_rest);
        } else if self.first_rest.is_empty() {
            room.copy_within(
                self.second_at..self.second_at + self.second_rows,
                self.first_rows,
            );
            room.truncate(self.first_rows + self.second_rows);
        } else {
            // The first half filled its room: the rest goes between it and the second's.
            room.truncate(self.second_at + self.second_rows);
            let rest = std::mem::take(&mut self.first_rest);
            room.splice(self.second_at..self.second_at, rest);
        }
        if room.is_empty() {
            *room = std::mem::take(&mut self.second_rest);
        } else {
            room.extend_from_slice(&self.second_rest);
        }
        self.second_rest = Vec::new();
    }
}
