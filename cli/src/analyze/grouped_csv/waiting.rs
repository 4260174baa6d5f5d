//! A group's latest rows, kept column by column until they are moved into the group's
//! columns: each column's waiting values lie side by side, so that they go to the column in
//! one copy rather than one value from each row at a time.

use super::records::Record;

/// How many of a group's rows wait before they are moved into its columns: few enough that
/// every group's waiting rows stay in the core's cache until they are moved (16 rows of 2,008
/// columns for each of 8 kernels are 2 MiB), enough that each column grows by a run.
pub(super) const WAITING_ROWS: usize = 16;

/// Up to [`WAITING_ROWS`] rows, by column.
#[derive(Default)]
pub(super) struct Waiting {
    /// Column `i`'s values from `i * WAITING_ROWS` on; made at the first row.
    values: Vec<f64>,
    rows: usize,
}

impl Waiting {
    /// The rows waiting.
    pub(super) fn rows(&self) -> usize {
        self.rows
    }

    pub(super) fn is_full(&self) -> bool {
        self.rows == WAITING_ROWS
    }

    /// Adds the values of `record`'s `width` fields (the reader lets no other record through)
    /// as a row; there must be room for it.
    pub(super) fn push(&mut self, record: Record<'_>, width: usize) {
        if self.values.is_empty() {
            self.values = vec![0.0; width * WAITING_ROWS];
        }
        debug_assert_eq!(record.ends.len(), width);
        let row = self.rows;
        // The fields lie one after another in the record's bytes: a field's digits are read
        // together with the bytes after it, in one load. Each field's start is the end before
        // it, not a running count kept from field to field.
        let (bytes, ends) = (record.bytes, record.ends);
        let starts = std::iter::once(&0).chain(ends);
        let columns = self.values.chunks_exact_mut(WAITING_ROWS);
        for ((&start, &end), column) in starts.zip(ends).zip(columns) {
            column[row] = super::field_value(bytes, start, end - start);
        }
        self.rows += 1;
    }

    /// Column `i`'s waiting values.
    pub(super) fn column(&self, i: usize) -> &[f64] {
        match self.rows {
            0 => &[],
            rows => &self.values[i * WAITING_ROWS..][..rows],
        }
    }

    /// No row waits any more.
    pub(super) fn clear(&mut self) {
        self.rows = 0;
    }
}
