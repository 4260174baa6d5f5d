//! `results.db`: an SQLite database in the spirit of rocprofv3's rocpd format, and the on-disk
//! store every other output is streamed from, so memory stays flat in the number of dispatches.
//!
//! Tables (see `docs/outputs.md` for every column):
//! - `rtl_string(id, string)`: kernel names;
//! - `rtl_agent(id, node_id, gpu_index, name, product_name, properties, cpu, model_name)`;
//! - `rtl_counter(id, name, dimensions)`: the counters, in first-seen order;
//! - `rtl_dispatch`: one row per dispatch per pass, with its process order, its
//!   occurrence in its lane (process, GPU, queue and kernel as the match rule keeps them) and
//!   `merged_id`. A view: what is the dispatch's own (its times, ids, join and values) is in
//!   `rtl_dispatch_row`, and what the dispatches of a pass launched alike share (process,
//!   thread, GPU, queue, kernel, sizes, resources) in `rtl_launch`, stored once for them
//!   (see [`LAUNCHES_MOST`]), so that a pass writes 13 values per dispatch rather than 34;
//! - rocpd's `rocpd_pmc_event_<uuid>` (see [`crate::store::rocpd`]): per dispatch and counter the
//!   total. Each value is stored there once, as it is inserted, with the row id SQLite gives it:
//!   a dispatch row's values are one range of row ids, which the row keeps (`first_value`,
//!   `value_count`, see [`values_of`]), and a value's `event_id` is the merged dispatch;
//! - `rtl_dispatch_row.positions`: for the values of a dispatch row's counters with several
//!   positions, the per-position values as one JSON array (the first such counter's id, then
//!   per counter id from it its array or null, see [`position_array`]; rocpd's `extdata`
//!   keeps rocpd's `{}`, so the positions are not paid for twice, in a key per row, nor in a
//!   row per value). A value that
//!   repeats one an earlier pass reported for the same merged dispatch moves to
//!   `rtl_pmc_repeat(dispatch_id, pmc_id, value, dimension_values)`. The view
//!   `rtl_pmc_value(dispatch_id, pmc_id, value, dimension_values, reported)` shows both;
//! - `rtl_merged`: one row per dispatch after joining the passes, unique by the merge
//!   key (source, process order, GPU, queue order, kernel, grid, workgroup, occurrence). Passes
//!   after the first find their keys in memory while the merged dispatches fit (see
//!   [`KnownMerged`]); the index by key is made only when keys must be looked up in SQL. Its
//!   `missed` counts the passes that did not see it (those before the one that made it, and
//!   later ones that had no dispatch of its key), so that a pass that sees every earlier merged
//!   dispatch, the usual case, changes none of their rows. The view `rtl_merged_dispatch`
//!   shows it with `passes`, the passes recorded less those it missed, in place of `missed`.
//!
//! Views: `dispatches` (merged dispatches with their properties), `top` (kernels by total
//! time), `busy` (per-GPU busy time), `pmc_dimension` (one row per dimension position) and
//! `kernel_counters` (counter totals per kernel).
//!
//! Passes are joined while they are inserted: each dispatch's process order, occurrence and
//! merged dispatch are worked out from small per-process and per-kernel tables as it arrives,
//! which holds while dispatches arrive in start order ([`crate::join::pass`] sees to that); a pass
//! that breaks it is joined again in SQL at its end. The summary's figures are gathered on the
//! way in too ([`crate::store::totals`]).

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};

use crate::fast_map::FastMap;
use crate::files::atomic::temporary_path;
use crate::join::PassMatch;
use crate::model::{
    Agent, AgentBusy, Counter, CounterInfo, Dispatch, IdleGaps, KernelCounter, KernelStats,
    KernelTime, ProfileFacts, RunInfo, Unmatched,
};
use crate::store::prepared::{NameIds, NameSource, Prepared};
use crate::store::rocpd::{self, FirstRows};
use crate::store::sampled::Sampled;
use crate::store::totals::{CompensatedSum, Launches, MergedLaunches, Timeline, Totals};

/// Why the database could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    /// SQLite reported an error.
    #[error("{path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite reported.
        source: rusqlite::Error,
    },
    /// The database was written by an rtl-pmc that stored its values differently.
    #[error("{path}: {reason}")]
    Layout {
        /// The database file.
        path: PathBuf,
        /// What is different.
        reason: &'static str,
    },
    /// Rows inserted took other ids than the ones counted for them.
    #[error("{path}: the rows inserted into {table} took other ids than expected")]
    Ids {
        /// The database file.
        path: PathBuf,
        /// The table.
        table: &'static str,
    },
    /// The file could not be renamed or removed.
    #[error("{path}: {source}")]
    Io {
        /// The database file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

const SCHEMA: &str = "
CREATE TABLE rtl_string(id INTEGER PRIMARY KEY, string TEXT NOT NULL UNIQUE);
CREATE TABLE rtl_agent(
  id INTEGER PRIMARY KEY, node_id INTEGER NOT NULL UNIQUE, gpu_index INTEGER NOT NULL,
  name TEXT NOT NULL, product_name TEXT NOT NULL, properties TEXT NOT NULL,
  cpu INTEGER NOT NULL DEFAULT 0, model_name TEXT NOT NULL DEFAULT '');
CREATE TABLE rtl_counter(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, dimensions TEXT NOT NULL,
  unit TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '', block TEXT,
  expression TEXT, derived INTEGER NOT NULL DEFAULT 0);
CREATE TABLE rtl_run(tag TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE rtl_kernel_derived(
  pass INTEGER NOT NULL, kernel_id INTEGER NOT NULL, pmc_id INTEGER NOT NULL,
  value REAL NOT NULL, dispatches INTEGER NOT NULL);
CREATE TABLE rtl_launch(
  id INTEGER PRIMARY KEY, pass INTEGER NOT NULL, source INTEGER NOT NULL,
  pid INTEGER NOT NULL, tid INTEGER NOT NULL, agent INTEGER NOT NULL,
  queue_id INTEGER NOT NULL, queue_order INTEGER NOT NULL,
  kernel_id INTEGER NOT NULL REFERENCES rtl_string(id), kernel_object INTEGER NOT NULL,
  grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL,
  workgroup_x INTEGER NOT NULL, workgroup_y INTEGER NOT NULL, workgroup_z INTEGER NOT NULL,
  lds INTEGER NOT NULL, scratch INTEGER NOT NULL, arch_vgpr INTEGER NOT NULL,
  accum_vgpr INTEGER NOT NULL, sgpr INTEGER NOT NULL, wave_size INTEGER NOT NULL,
  symbol_id INTEGER NOT NULL DEFAULT 0);
CREATE TABLE rtl_dispatch_row(
  id INTEGER PRIMARY KEY, launch_id INTEGER NOT NULL REFERENCES rtl_launch(id),
  queue_index INTEGER NOT NULL, dispatch_id INTEGER NOT NULL, correlation_id INTEGER NOT NULL,
  signal INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  process_order INTEGER, occurrence INTEGER, merged_id INTEGER,
  positions TEXT, first_value INTEGER, value_count INTEGER);
CREATE VIEW rtl_dispatch AS
  SELECT d.id, l.pass, l.source, l.pid, l.tid, l.agent, l.queue_id, l.queue_order,
         d.queue_index, d.dispatch_id, d.correlation_id, l.kernel_id, l.kernel_object,
         l.grid_x, l.grid_y, l.grid_z, l.workgroup_x, l.workgroup_y, l.workgroup_z, l.lds,
         l.scratch, l.arch_vgpr, l.accum_vgpr, l.sgpr, l.wave_size, d.signal, d.start_ns,
         d.end_ns, d.process_order, d.occurrence, d.merged_id, l.symbol_id, d.positions,
         d.first_value, d.value_count
  FROM rtl_dispatch_row d CROSS JOIN rtl_launch l ON l.id = d.launch_id;
CREATE TABLE rtl_pmc_repeat(
  dispatch_id INTEGER NOT NULL, pmc_id INTEGER NOT NULL, value REAL NOT NULL,
  dimension_values TEXT, PRIMARY KEY(dispatch_id, pmc_id)) WITHOUT ROWID;
CREATE TABLE rtl_merged(
  id INTEGER PRIMARY KEY, source INTEGER NOT NULL, process_order INTEGER NOT NULL,
  agent INTEGER NOT NULL, queue_order INTEGER NOT NULL, kernel_id INTEGER NOT NULL,
  grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL,
  workgroup_x INTEGER NOT NULL, workgroup_y INTEGER NOT NULL, workgroup_z INTEGER NOT NULL,
  occurrence INTEGER NOT NULL, first_dispatch INTEGER NOT NULL,
  start_ns INTEGER NOT NULL, missed INTEGER NOT NULL DEFAULT 0);
CREATE TABLE rtl_pass(id INTEGER PRIMARY KEY, label TEXT NOT NULL, exit_status INTEGER);
CREATE VIEW rtl_merged_dispatch AS
  SELECT id, source, process_order, agent, queue_order, kernel_id, grid_x, grid_y, grid_z,
         workgroup_x, workgroup_y, workgroup_z, occurrence, first_dispatch, start_ns,
         (SELECT count(*) FROM rtl_pass) - missed AS passes
  FROM rtl_merged;
CREATE VIEW rtl_dispatches AS
  SELECT m.id AS id, s.string AS kernel, k.pid, k.tid, k.agent, k.queue_id, k.queue_index,
         k.dispatch_id, k.correlation_id, k.start_ns, k.end_ns, k.end_ns - k.start_ns AS duration_ns,
         m.passes
  FROM rtl_merged_dispatch m JOIN rtl_dispatch k ON k.id = m.first_dispatch
  JOIN rtl_string s ON s.id = k.kernel_id;
CREATE VIEW rtl_top AS
  SELECT kernel, count(*) AS calls, sum(duration_ns) AS total_ns,
         avg(duration_ns) AS average_ns, min(duration_ns) AS min_ns, max(duration_ns) AS max_ns,
         100.0 * sum(duration_ns) / (SELECT max(sum(duration_ns), 1) FROM rtl_dispatches) AS percent
  FROM rtl_dispatches GROUP BY kernel ORDER BY total_ns DESC, kernel;
CREATE VIEW rtl_busy AS
  SELECT d.agent AS agent, coalesce(a.name, '') AS name, count(*) AS dispatches,
         sum(d.duration_ns) AS busy_ns, min(d.start_ns) AS first_ns, max(d.end_ns) AS last_ns,
         100.0 * sum(d.duration_ns) / max(max(d.end_ns) - min(d.start_ns), 1) AS busy_percent
  FROM rtl_dispatches d LEFT JOIN rtl_agent a ON a.node_id = d.agent
  GROUP BY d.agent ORDER BY d.agent;
CREATE VIEW rtl_kernel_derived_value AS
  SELECT d.kernel_id, d.pmc_id, sum(d.value * d.dispatches) / sum(d.dispatches) AS value
  FROM rtl_kernel_derived d
  WHERE d.pass = (SELECT min(e.pass) FROM rtl_kernel_derived e
                  WHERE e.kernel_id = d.kernel_id AND e.pmc_id = d.pmc_id)
  GROUP BY d.kernel_id, d.pmc_id;
CREATE VIEW rtl_kernel_counters AS
  SELECT s.string AS kernel, p.name AS counter, count(*) AS dispatches, sum(v.value) AS total,
         coalesce((SELECT d.value FROM rtl_kernel_derived_value d
                   WHERE d.kernel_id = k.kernel_id AND d.pmc_id = p.id), sum(v.value)) AS value,
         p.unit AS unit
  FROM rtl_pmc_value v JOIN rtl_dispatch k ON k.id = v.dispatch_id
  JOIN rtl_string s ON s.id = k.kernel_id JOIN rtl_counter p ON p.id = v.pmc_id
  WHERE v.reported GROUP BY s.string, p.id ORDER BY s.string, p.id;
CREATE VIEW rtl_pmc_dimension AS
  SELECT v.dispatch_id, p.name AS counter, p.dimensions, CAST(j.key AS INTEGER) AS position,
         j.value AS value
  FROM rtl_pmc_value v JOIN rtl_counter p ON p.id = v.pmc_id,
       json_each(coalesce(v.dimension_values, json_array(v.value))) j
  WHERE v.reported;
";

/// rtl-pmc's roctx tables, created when a pass has regions and before the rocpd projection.
pub(super) const REGION_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS rtl_region(
  id INTEGER PRIMARY KEY, pass INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL,
  kind TEXT NOT NULL, name TEXT, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  end_tid INTEGER NOT NULL, depth INTEGER NOT NULL, parent_id INTEGER REFERENCES rtl_region(id),
  roctx_id INTEGER NOT NULL, object INTEGER NOT NULL, problem TEXT);
CREATE TABLE IF NOT EXISTS rtl_dispatch_range(
  pass INTEGER NOT NULL, pid INTEGER NOT NULL, dispatch_id INTEGER NOT NULL,
  depth INTEGER NOT NULL, region_id INTEGER NOT NULL REFERENCES rtl_region(id),
  innermost INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS rtl_dispatch_region(
  dispatch_row_id INTEGER NOT NULL, region_id INTEGER NOT NULL REFERENCES rtl_region(id));
";

/// Dispatch rows, [`DISPATCH_FIELDS`] values each.
/// Their ids are left to SQLite, which appends each row without a search (the ids it gives are
/// the ones [`Database`] counts, checked after each batch). `OR FAIL`, as for the launches and
/// the values: a statement that fails keeps the rows it inserted before, so SQLite keeps no
/// journal of each statement to take them back; a failed insert fails the whole pass anyway.
const INSERT_DISPATCH: &str =
    "INSERT OR FAIL INTO rtl_dispatch_row(launch_id, queue_index, dispatch_id,
  correlation_id, signal, start_ns, end_ns, process_order, occurrence, merged_id, positions,
  first_value, value_count) VALUES";

/// The values of a row of [`INSERT_DISPATCH`].
const DISPATCH_FIELDS: usize = 13;

/// The first values of a row of [`INSERT_DISPATCH`], integers that are never null
/// (`launch_id` to `end_ns`).
const DISPATCH_INTEGERS: usize = 7;

/// What dispatches of a pass share, [`LAUNCH_FIELDS`] values each: the row id [`Database`]
/// gives, then [`Launch`].
const INSERT_LAUNCH: &str =
    "INSERT OR FAIL INTO rtl_launch(id, pass, source, pid, tid, agent, queue_id,
  queue_order, kernel_id, kernel_object, grid_x, grid_y, grid_z, workgroup_x, workgroup_y,
  workgroup_z, lds, scratch, arch_vgpr, accum_vgpr, sgpr, wave_size, symbol_id) VALUES";

/// The values of a row of [`INSERT_LAUNCH`].
const LAUNCH_FIELDS: usize = 1 + LAUNCH_KEY;

/// The values of a launch but its id.
const LAUNCH_KEY: usize = 22;

/// A launch's values: those of a dispatch row that the dispatches of a process, thread, queue
/// and kernel launched alike have in common.
type Launch = [i64; LAUNCH_KEY];

/// The most launches [`Database`] keeps in memory to give their ids again. Past it, it forgets
/// them and begins again: a launch met again then gets a second row alike, which the view
/// `rtl_dispatch` reads the same.
const LAUNCHES_MOST: usize = if cfg!(test) { 2 } else { 1 << 14 };

/// Dispatches joined while they are inserted, with keys no earlier pass had: [`MERGED_FIELDS`]
/// values each, their ids left to SQLite as those of [`INSERT_DISPATCH`].
const INSERT_MERGED: &str = "INSERT INTO rtl_merged(source, process_order, agent,
  queue_order, kernel_id, grid_x, grid_y, grid_z, workgroup_x, workgroup_y, workgroup_z,
  occurrence, first_dispatch, start_ns, missed) VALUES";

/// The values of a row of [`INSERT_MERGED`].
const MERGED_FIELDS: usize = 15;

/// Where `start_ns` is in a row of [`INSERT_MERGED`].
const MERGED_START: usize = 13;

/// The merged dispatch of a key an earlier pass had.
const FIND_MERGED: &str = "SELECT id FROM rtl_merged_dispatch
  WHERE source = ?1 AND process_order = ?2 AND agent = ?3 AND queue_order = ?4 AND kernel_id = ?5
    AND grid_x = ?6 AND grid_y = ?7 AND grid_z = ?8 AND workgroup_x = ?9 AND workgroup_y = ?10
    AND workgroup_z = ?11 AND occurrence = ?12";

/// The index of the merged dispatches by merge key, which makes them unique by it: made when a
/// key must be looked up in the database (a pass joined in SQL, or more merged dispatches than
/// [`KnownMerged`] holds), so that the passes do not keep it up to date row by row while the
/// keys are found in memory (they are unique by construction then).
const KEY_INDEX: &str = "CREATE UNIQUE INDEX IF NOT EXISTS rtl_merged_dispatch_key
  ON rtl_merged(source, process_order, agent, queue_order, kernel_id, occurrence, grid_x,
                         grid_y, grid_z, workgroup_x, workgroup_y, workgroup_z)";

/// The index of the dispatch rows by merged dispatch: made once the passes are inserted (or
/// before, when a read needs it), so that inserting does not keep it up to date row by row.
const MERGED_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS rtl_dispatch_merged ON rtl_dispatch_row(merged_id)";

/// The index of the merged dispatches in start order: made once the passes are inserted, and only
/// when their ids are not in start order already (dispatches inserted out of start order, a
/// merged dispatch a later pass made for a dispatch no earlier pass had starting before the last
/// one, or a pass joined in SQL), so that it is neither kept up to
/// date row by row nor stored when the ids give the same order; its presence tells readers
/// which order to read in (see [`Database::for_each_merged`]).
const START_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS rtl_merged_dispatch_start ON rtl_merged(start_ns, id)";

/// SQLite's page cache, KiB: fixed, so memory stays flat however many dispatches there are.
const CACHE_KIB: i64 = 16384;

/// The pragma that gives a connection a page cache of `kib` KiB.
fn cache_size(kib: i64) -> String {
    format!("PRAGMA cache_size=-{kib};")
}

/// The page size once dispatches go in. The database is created with small pages, so that a
/// disk too full for it is found before the application runs; the first pass rebuilds it with
/// these, which insert and read millions of rows markedly faster (fewer B-tree pages to split,
/// fetch and search).
const BULK_PAGE_SIZE: u32 = 65536;

/// Rows per insert statement, at most (a power of two).
const ROWS_PER_STATEMENT: usize = 64;

/// Counter value rows: [`PMC_FIELDS`] values each, their ids left to SQLite (see
/// [`values_of`]), inserted `OR FAIL` (see [`INSERT_DISPATCH`]); `extdata` keeps rocpd's
/// default, `{}` (the per-position values are in their dispatch row's `positions`).
const INSERT_PMC: &str = "(event_id, pmc_id, value) VALUES";

/// The values of a row of [`INSERT_PMC`].
const PMC_FIELDS: usize = 3;

/// Binds `fields` to the parameters of `stmt` from index `from` on.
fn bind_row<T: rusqlite::ToSql>(
    stmt: &mut rusqlite::Statement<'_>,
    from: usize,
    fields: &[T],
) -> rusqlite::Result<()> {
    fields
        .iter()
        .enumerate()
        .try_for_each(|(i, v)| stmt.raw_bind_parameter(from + i, v))
}

/// Inserts `items` with the statement `table` and `head` followed by rows of `fields` values, up to
/// [`ROWS_PER_STATEMENT`] rows per statement (in chunks of 64, 32, 16, ... rows: few
/// statements, and few different ones to prepare, each kept in `texts`). `bind` binds an
/// item's values from the given parameter index on.
fn insert_chunked<T>(
    conn: &Connection,
    texts: &mut FastMap<(&'static str, usize), String>,
    (head, fields): (&'static str, usize),
    table: &str,
    items: &[T],
    bind: impl Fn(&mut rusqlite::Statement<'_>, usize, &T) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let mut rest = items;
    // The statement of the chunk before, kept while the chunks are of its size (taking it from
    // the cache and putting it back costs a hash of its text and a clearing of every parameter).
    let mut statement: Option<(usize, rusqlite::CachedStatement<'_>)> = None;
    while !rest.is_empty() {
        let size = 1 << rest.len().min(ROWS_PER_STATEMENT).ilog2();
        let (chunk, after) = rest.split_at(size);
        rest = after;
        let stmt = match &mut statement {
            Some((made, stmt)) if *made == size => stmt,
            _ => {
                let text = texts.entry((head, size)).or_insert_with(|| {
                    let tuple = format!("({})", vec!["?"; fields].join(","));
                    format!("{table}{head} {}", vec![tuple.as_str(); size].join(","))
                });
                statement = None;
                &mut statement.insert((size, conn.prepare_cached(text)?)).1
            }
        };
        for (i, item) in chunk.iter().enumerate() {
            bind(stmt, fields * i + 1, item)?;
        }
        stmt.raw_execute()?;
    }
    Ok(())
}

/// The rows of the values table `value` that hold the values of dispatch row `dispatch`: its
/// values are one range of row ids, from its `first_value` on, `value_count` of them (the values
/// collected; a value that repeats an earlier pass's leaves a gap once moved to
/// `rtl_pmc_repeat`), in counter order. The
/// values take the ids SQLite gives, which appends them without a search. A query that wants one
/// counter's value of the range compares `+v.pmc_id`: the unary `+` keeps SQLite from indexing
/// the whole values table by counter for it (an automatic index) rather than reading the range.
pub fn values_of(dispatch: &str, value: &str) -> String {
    format!(
        "{value}.id BETWEEN {dispatch}.first_value AND {dispatch}.first_value + {dispatch}.value_count - 1"
    )
}

/// The values table of run `guid` (rocpd's `rocpd_pmc_event`, quoted) and the DDL that makes
/// it, its rocpd view and the `rtl_pmc_value` view.
fn values_table(guid: &str) -> (String, String) {
    let uuid = rocpd::uuid_suffix(guid);
    let table = format!("\"rocpd_{}{uuid}\"", rocpd::VALUES);
    let ddl = format!(
        "{}CREATE VIEW rtl_pmc_value AS
           SELECT k.id AS dispatch_id, v.pmc_id, v.value,
                  {positions} AS dimension_values, 1 AS reported
           FROM rtl_dispatch_row k CROSS JOIN {table} v ON {range}
           UNION ALL
           SELECT dispatch_id, pmc_id, value, dimension_values, 0 AS reported
           FROM rtl_pmc_repeat;",
        rocpd::table_sql(rocpd::VALUES, guid, &uuid),
        positions = position_array("k.positions", "v.pmc_id"),
        range = values_of("k", "v"),
    );
    (table, ddl)
}

/// The per-dimension values of a value's `dimension_values` (empty when it has none).
fn dimensions_of(array: &str) -> Vec<f64> {
    serde_json::from_str(array).unwrap_or_default()
}

/// The columns [`row_dispatch`] reads, prefixed by the row key.
const DISPATCH_COLUMNS: &str = "k.pid, k.tid, k.agent, k.queue_id, k.queue_index, k.dispatch_id,
  k.correlation_id, k.kernel_id, k.kernel_object, k.grid_x, k.grid_y, k.grid_z, k.workgroup_x,
  k.workgroup_y, k.workgroup_z, k.lds, k.scratch, k.arch_vgpr, k.accum_vgpr, k.sgpr,
  k.wave_size, k.signal, k.start_ns, k.end_ns, k.queue_order, k.symbol_id";

/// A derived counter's value for one kernel in one pass, recomputed from its inputs summed over
/// the kernel's dispatches (see [`Database::add_kernel_derived`]).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelDerived {
    /// The pass.
    pub pass: u32,
    /// Kernel name.
    pub kernel: String,
    /// Counter name.
    pub counter: String,
    /// The value.
    pub value: f64,
    /// The dispatches whose inputs were summed.
    pub dispatches: u64,
}

/// A dispatch's lane: the run of launches its occurrence is counted in, per input source,
/// process (pid within a pass, rank across passes), GPU, queue and kernel, the GPU and queue as
/// the match rule keeps them.
type Lane = (u32, u32, u32, u32, i64);

/// What must agree for two dispatches of different passes to be one: input source, process
/// rank, GPU, queue, kernel, grid, workgroup and occurrence in the lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MergeKey {
    source: u32,
    order: i64,
    agent: u32,
    queue: u32,
    kernel: i64,
    grid: [u32; 3],
    workgroup: [u32; 3],
    occurrence: i64,
}

impl MergeKey {
    /// The key's columns in `rtl_merged_dispatch`'s order: source, process order, GPU, queue,
    /// kernel, grid, workgroup, occurrence.
    fn columns(&self) -> [i64; 12] {
        let [gx, gy, gz] = self.grid.map(i64::from);
        let [wx, wy, wz] = self.workgroup.map(i64::from);
        [
            i64::from(self.source),
            self.order,
            i64::from(self.agent),
            i64::from(self.queue),
            self.kernel,
            gx,
            gy,
            gz,
            wx,
            wy,
            wz,
            self.occurrence,
        ]
    }

    /// The lane across passes (process by rank), for [`Database::known_launches`].
    fn lane(&self) -> (u32, i64, u32, u32, i64) {
        (self.source, self.order, self.agent, self.queue, self.kernel)
    }
}

/// The join of the pass being inserted, computed dispatch by dispatch. It equals the join in SQL
/// (occurrence by dispatch id within the lane, process order by pid, merged ids in start order)
/// while dispatches arrive in start order, each lane's dispatches come in dispatch-id order,
/// and the processes with dispatches are the lowest pids declared; when any of that fails,
/// [`Database::end_pass`] undoes it and joins the pass in SQL.
#[derive(Debug, Default)]
struct PassJoin {
    /// The highest merged id before the pass.
    merged_before: i64,
    /// The first row id of the pass.
    first_row: i64,
    /// The id of the next new merged dispatch.
    next_merged: i64,
    /// Dispatches of the pass joined to merged dispatches of earlier passes.
    matched: u64,
    /// The merged dispatches the pass created.
    merged: MergedLaunches,
    /// The declared processes of each source, by pid, and whether each had a dispatch.
    processes: FastMap<u32, Vec<(u32, bool)>>,
    /// Per lane (with the pid): the last dispatch id and the launches so far.
    launches: FastMap<Lane, (u64, i64)>,
    /// The start of the last dispatch.
    last_start: u64,
    /// Whether every dispatch so far was joined.
    exact: bool,
    /// The passes recorded before this one: those a merged dispatch it creates missed.
    passes_before: i64,
}

impl PassJoin {
    /// The merge key of `d` (kernel `kernel_id`) under `rule`, or `None` once the pass can no
    /// longer be joined this way.
    fn key(
        &mut self,
        source: u32,
        d: &Dispatch,
        kernel_id: i64,
        rule: PassMatch,
    ) -> Option<MergeKey> {
        if !self.exact || d.start_ns < self.last_start {
            self.exact = false;
            return None;
        }
        let order = self.processes.get_mut(&source).and_then(|pids| {
            let i = pids.binary_search_by_key(&d.pid, |&(pid, _)| pid).ok()?;
            pids[i].1 = true;
            Some(i as i64 + 1)
        });
        let (agent, queue) = rule.lane(d.agent, d.queue_order);
        let launches = self
            .launches
            .entry((source, d.pid, agent, queue, kernel_id))
            .or_default();
        match order {
            Some(order) if d.dispatch_id >= launches.0 => {
                *launches = (d.dispatch_id, launches.1 + 1);
                self.last_start = d.start_ns;
                Some(MergeKey {
                    source,
                    order,
                    agent,
                    queue,
                    kernel: kernel_id,
                    grid: d.grid,
                    workgroup: d.workgroup,
                    occurrence: launches.1,
                })
            }
            _ => {
                self.exact = false;
                None
            }
        }
    }

    /// Folds the launches of this pass into `known`: per lane (process by rank), the most
    /// launches any pass had.
    fn record_launches(&self, known: &mut KnownLaunches) {
        for (&(source, pid, agent, queue, kernel), &(_, n)) in &self.launches {
            let order = self
                .processes
                .get(&source)
                .and_then(|pids| pids.binary_search_by_key(&pid, |&(pid, _)| pid).ok());
            if let Some(order) = order {
                let lane = (source, order as i64 + 1, agent, queue, kernel);
                let most = known.entry(lane).or_default();
                *most = (*most).max(n);
            }
        }
    }

    /// Whether the processes with dispatches were the lowest pids declared, so their ranks
    /// among the declared ones are their ranks among themselves.
    fn ranks_hold(&self) -> bool {
        self.processes
            .values()
            .all(|pids| pids.iter().skip_while(|p| p.1).all(|p| !p.1))
    }
}

/// Per lane across passes (source, process rank, GPU, queue, kernel): the most launches of any
/// pass so far.
type KnownLaunches = FastMap<(u32, i64, u32, u32, i64), i64>;

/// Counter ids below this are looked up in [`Database::insert_many_with`] by position.
const PASS_COUNTERS_MOST: usize = 1 << 16;

/// How many bytes [`KnownMerged`] holds at most (about one per merged dispatch), so that memory
/// stays within its bound; past that, keys are looked up in the database. The unit tests go
/// past it after a few, so that both ways are tested.
const KNOWN_MERGED_MOST: usize = if cfg!(test) { 6 } else { 1 << 23 };

/// What [`KnownMerged`] counts for a merged dispatch whose id is kept aside (see [`LaneIds`]).
const FAR_BYTES: usize = 32;

/// The merged dispatches of one lane (across passes, process by rank) by occurrence, while all
/// of them have one grid and workgroup: a byte each, the difference from the one before (0 when
/// it does not fit, the id then kept aside), read forward from a cursor, which lookups in
/// occurrence order (a later pass's, within a lane) move a step at a time.
#[derive(Debug)]
struct LaneIds {
    grid: [u32; 3],
    workgroup: [u32; 3],
    steps: Vec<u8>,
    /// The ids whose difference from the one before does not fit a byte, by position.
    far: FastMap<usize, i64>,
    /// The last id added.
    last: i64,
    /// A position and the id there.
    cursor: Option<(usize, i64)>,
}

impl LaneIds {
    /// Adds `id` as the next occurrence; returns the bytes it takes.
    fn push(&mut self, id: i64) -> usize {
        let step = id - self.last;
        self.last = id;
        match u8::try_from(step) {
            Ok(step) if step > 0 => {
                self.steps.push(step);
                1
            }
            _ => {
                self.far.insert(self.steps.len(), id);
                self.steps.push(0);
                FAR_BYTES
            }
        }
    }

    /// The id at position `at` after the id `before` at the position before it.
    fn step(&self, at: usize, before: i64) -> i64 {
        match self.steps[at] {
            0 => self.far.get(&at).copied().unwrap_or(before),
            step => before + i64::from(step),
        }
    }

    /// The id at position `at`, if there is one.
    fn get(&mut self, at: usize) -> Option<i64> {
        if at >= self.steps.len() {
            return None;
        }
        let (mut i, mut id) = match self.cursor {
            Some(cursor) if cursor.0 <= at => cursor,
            _ => (0, self.step(0, 0)),
        };
        while i < at {
            i += 1;
            id = self.step(i, id);
        }
        self.cursor = Some((i, id));
        Some(id)
    }
}

/// The merged dispatches by key, kept in memory as they are made so that a later pass finds
/// its dispatches' without asking the database: per lane, the ids in occurrence order (`None`
/// for a lane whose merged dispatches do not all have one grid and workgroup).
#[derive(Debug, Default)]
struct KnownMerged {
    lanes: FastMap<(u32, i64, u32, u32, i64), Option<LaneIds>>,
    held: usize,
}

impl KnownMerged {
    /// The merged dispatch of `key` if this knows it: `Some(None)` when no merged dispatch has
    /// the key, `None` when the database must be asked.
    fn find(&mut self, key: &MergeKey) -> Option<Option<i64>> {
        let lane = self.lanes.get_mut(&key.lane())?.as_mut()?;
        if (lane.grid, lane.workgroup) != (key.grid, key.workgroup) {
            return Some(None);
        }
        let at = usize::try_from(key.occurrence - 1).ok()?;
        lane.get(at).map(Some)
    }

    /// Notes the new merged dispatch `id` of `key`; false once this can no longer hold every
    /// merged dispatch.
    fn add(&mut self, key: &MergeKey, id: i64) -> bool {
        if self.held >= KNOWN_MERGED_MOST {
            return false;
        }
        let lane = self.lanes.entry(key.lane()).or_insert_with(|| {
            Some(LaneIds {
                grid: key.grid,
                workgroup: key.workgroup,
                steps: Vec::new(),
                far: FastMap::default(),
                last: 0,
                cursor: None,
            })
        });
        let next = lane.as_ref().map_or(0, |l| l.steps.len() as i64 + 1);
        match lane {
            Some(ids)
                if (ids.grid, ids.workgroup) == (key.grid, key.workgroup)
                    && key.occurrence == next =>
            {
                self.held += ids.push(id);
            }
            // Another shape, or an occurrence out of turn: this lane is looked up in the
            // database from now on.
            _ => *lane = None,
        }
        true
    }
}

/// The statement that finds a dispatch's merged dispatch, and the new merged dispatches to
/// insert (after the batch's lookups, which only find earlier passes' keys).
struct MergedStatements<'conn, 'rows> {
    find: rusqlite::CachedStatement<'conn>,
    new: &'rows mut Vec<[i64; MERGED_FIELDS]>,
    /// Where each new merged dispatch's first dispatch is noted for rocpd's small tables.
    first: Option<&'rows mut FirstRows>,
    /// The merged dispatches by key, while memory allows.
    known: &'rows mut Option<KnownMerged>,
}

impl MergedStatements<'_, '_> {
    /// The merged dispatch of `key` (of `d`, row `row`): an earlier pass's when one had the key,
    /// else a new one.
    fn join(
        &mut self,
        join: &mut PassJoin,
        known: &KnownLaunches,
        key: MergeKey,
        row: i64,
        d: &Dispatch,
    ) -> rusqlite::Result<i64> {
        use rusqlite::OptionalExtension as _;
        let columns = key.columns();
        // Only lanes an earlier pass launched this often can have the key.
        if known.get(&key.lane()).is_some_and(|&n| key.occurrence <= n) {
            let found = match self.known.as_mut().and_then(|k| k.find(&key)) {
                Some(found) => found,
                None => self
                    .find
                    .query_row(rusqlite::params_from_iter(columns), |r| r.get(0))
                    .optional()?,
            };
            if let Some(id) = found {
                // Those no dispatch of the pass matched are counted at its end (see
                // [`Database::count_missed`]).
                join.matched += 1;
                return Ok(id);
            }
        }
        let id = join.next_merged;
        // Its id is the next SQLite gives (see [`INSERT_MERGED`]).
        let mut fields = [0; MERGED_FIELDS];
        fields[..12].copy_from_slice(&columns);
        fields[12] = row;
        fields[MERGED_START] = d.start_ns as i64;
        // The passes before this one did not see it.
        fields[14] = join.passes_before;
        self.new.push(fields);
        join.next_merged += 1;
        if self.known.as_mut().is_some_and(|k| !k.add(&key, id)) {
            *self.known = None;
        }
        if let Some(first) = self.first.as_deref_mut() {
            first.add(id, d, key.kernel);
        }
        let launch = Launches::one(d.start_ns as i64, d.end_ns as i64);
        join.merged
            .entry((key.kernel, d.agent))
            .and_modify(|l| l.add(&launch))
            .or_insert(launch);
        Ok(id)
    }
}

/// The sums the values of a pass add to, lent to another thread than the inserting one while
/// the pass is inserted (see [`Database::lend_sums`]).
pub struct PassSums {
    pass: u32,
    samples: Option<Sampled>,
    counters: FastMap<(i64, i64), CompensatedSum>,
    /// By counter id, whether an earlier pass collected it: its values are summed once the pass
    /// is joined.
    before: Vec<bool>,
}

impl PassSums {
    /// Adds the values of `dispatches` as inserted: `ids` holds per dispatch its kernel's id,
    /// then its counters' ids in their order (see [`Prepared::ids`]).
    pub fn add_inserted(&mut self, dispatches: &[(u32, Dispatch)], ids: &[i64]) {
        let mut at = 0;
        for (source, d) in dispatches {
            let kernel_id = ids.get(at).copied().unwrap_or_default();
            let pmcs = ids.get(at + 1..).unwrap_or_default();
            at += 1 + d.counters.len();
            let values = d.counters.iter().enumerate();
            let values = values.map(|(i, c)| (pmcs.get(i).copied().unwrap_or_default(), c.total));
            for (pmc, total) in values.clone() {
                let before = usize::try_from(pmc).ok().and_then(|i| self.before.get(i));
                if !before.copied().unwrap_or(false) {
                    self.counters
                        .entry((kernel_id, pmc))
                        .or_default()
                        .add(total);
                }
            }
            if let Some(samples) = &mut self.samples {
                samples.add(*source, self.pass, d, kernel_id, values);
            }
        }
        debug_assert_eq!(at, ids.len(), "the ids of another batch");
    }
}

/// A value waiting to be inserted: counter id, total, merged dispatch.
type PmcRow = (i64, f64, Option<i64>);

/// A dispatch row waiting to be inserted: where the dispatch is in the batch, its row id, its
/// kernel id, its key and its merged dispatch.
struct DispatchRow {
    at: usize,
    launch: i64,
    key: Option<MergeKey>,
    merged: Option<i64>,
    /// The row id of its first value and how many it has (none without any).
    values: Option<(i64, i64)>,
}

/// The values one pass inserted: the row ids from `first` to `last`, and whether each of its
/// dispatch rows names a later merged dispatch than the one before, so that the values in id
/// order are in merged-dispatch order too (then [`Database::for_each_merged`] reads them in one
/// scan per pass, without looking up each merged dispatch's rows).
#[derive(Debug, Clone, Copy)]
struct PassValues {
    first: i64,
    last: i64,
    ascending: bool,
    last_event: i64,
}

/// The database being written (under a temporary name until [`Database::commit`]).
pub struct Database {
    conn: Connection,
    target: PathBuf,
    temporary: PathBuf,
    strings: FastMap<String, i64>,
    pmcs: FastMap<String, i64>,
    in_transaction: bool,
    /// The text of each multi-row insert, by head and rows.
    insert_texts: FastMap<(&'static str, usize), String>,
    /// Per-insert buffer: the dispatch rows.
    dispatch_rows: Vec<DispatchRow>,
    /// Per-insert buffer: the new launches, with their ids.
    launch_rows: Vec<[i64; LAUNCH_FIELDS]>,
    /// The launches of this pass by their values, up to [`LAUNCHES_MOST`], with their ids.
    launches: FastMap<Launch, i64>,
    /// The row id of the next launch.
    next_launch: i64,
    /// Per-insert buffer: the new merged dispatches.
    merged_rows: Vec<[i64; MERGED_FIELDS]>,
    /// Per-insert buffer: each counter's (id, total, merged dispatch).
    pmc_rows: Vec<PmcRow>,
    /// The row id of the next dispatch.
    next_row: i64,
    /// The row id of the next value.
    next_value: i64,
    /// The values of each pass, in pass order; `None` once a pass was joined in SQL (which
    /// names its values' merged dispatches afresh), or for a database only read.
    pass_values: Option<Vec<PassValues>>,
    /// The join of the pass being inserted.
    join: PassJoin,
    /// The most launches of any pass so far per lane, so that a key no earlier pass can have
    /// is known without asking.
    known_launches: KnownLaunches,
    /// The merged dispatches by key while they fit in memory; `None` once they do not, or once
    /// a pass was joined in SQL (which makes its merged dispatches again).
    known_merged: Option<KnownMerged>,
    /// How dispatches of different passes are matched.
    pass_match: PassMatch,
    /// The counters of the passes before the one being inserted, by id: a value of one of them
    /// may repeat one an earlier pass reported for the same dispatch.
    collected_before: FastMap<i64, ()>,
    /// The counters of the pass being inserted, by id.
    collected: FastMap<i64, ()>,
    /// By counter id (below [`PASS_COUNTERS_MOST`]), whether the pass being inserted has met
    /// the counter.
    pass_counters: Vec<bool>,
    /// Per GPU, its timeline in the pass being inserted and the idle gaps counted so far;
    /// `None` once a dispatch came out of start order (the pass's gaps are then counted in SQL).
    timelines: Option<FastMap<u32, (Timeline, IdleGaps)>>,
    /// The figures of the summary.
    totals: Totals,
    /// Whether the database has its bulk page size.
    bulk_pages: bool,
    /// The run's GUID, which rocpd's tables carry.
    guid: String,
    /// The values table (rocpd's `rocpd_pmc_event` of the run), quoted.
    values: String,
    /// Whether the values table exists.
    values_made: bool,
    /// The moments of the values for the estimates, gathered as they are inserted; `None` once
    /// they may differ from what the database holds (a value that repeats an earlier pass's).
    sampled: Option<Sampled>,
    /// Whether a pass was begun and not ended.
    pass_open: bool,
    /// Per counter id, the GPU of the first dispatch (by row) with a value of it.
    first_agents: FastMap<i64, u32>,
    /// rocpd's small tables as the merged dispatches were made; `None` once a pass was joined
    /// in SQL (which makes its merged dispatches again).
    first_rows: Option<FirstRows>,
    /// Whether the dispatch rows' index by merged dispatch exists.
    merged_index: std::cell::Cell<bool>,
    /// Whether the merged dispatches' ids are in start order (each starts no earlier than the
    /// one before), the start of the last one.
    merged_in_order: (bool, i64),
    /// Whether the merged dispatches' index in start order exists or is not needed.
    start_index: std::cell::Cell<bool>,
    /// Whether the merged dispatches' index by merge key exists.
    key_index: bool,
    /// A reader's second connection, on the same snapshot, on which [`Database::stream`] reads
    /// counters while this one reads dispatches.
    aside: std::cell::RefCell<Option<Connection>>,
    committed: bool,
    /// Whether the dispatch rows are `rtl_dispatch_row`'s with their `rtl_launch` (else
    /// `rtl_dispatch` is the table an earlier rtl-pmc wrote, read as such).
    launch_table: bool,
}

impl Drop for Database {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temporary);
            for log in ["-wal", "-shm"] {
                let mut name = self.temporary.clone().into_os_string();
                name.push(log);
                let _ = std::fs::remove_file(name);
            }
        }
    }
}

/// The per-position values (a JSON array, or NULL for a counter with one) of counter `pmc` in
/// `positions` of a dispatch row: a JSON array of the first counter id F with several positions,
/// then the array of counter F, F + 1, ... in turn (null for a counter without).
fn position_array(positions: &str, pmc: &str) -> String {
    let first = format!("json_extract({positions}, '$[0]')");
    format!(
        "CASE WHEN {pmc} >= {first}
         THEN json_extract({positions}, '$[' || ({pmc} - {first} + 1) || ']') END"
    )
}

/// The per-position values of a query of the values table (`v`) joined to its dispatch row
/// (`dispatch`): read only when wanted.
fn positions_column(wanted: bool, dispatch: &str) -> String {
    match wanted {
        true => position_array(&format!("{dispatch}.positions"), "v.pmc_id"),
        false => "NULL".to_string(),
    }
}

/// The per-position values of a query of `rtl_pmc_repeat`: read only when wanted.
fn repeat_column(wanted: bool) -> &'static str {
    match wanted {
        true => "v.dimension_values",
        false => "NULL",
    }
}

/// Counter rows of a query of [`Database::stream`], one read ahead: (key, counter id, total),
/// its per-position values beside it.
struct CounterRows<'s> {
    source: CounterSource<'s>,
    ahead: Option<(i64, i64, f64)>,
    positions: String,
}

/// Counter rows handed from the thread that reads them, at once.
const COUNTER_BATCH: usize = 1024;

/// Where a [`CounterRows`] reads its rows.
enum CounterSource<'s> {
    /// A query on this thread.
    Rows(rusqlite::Rows<'s>),
    /// A query on another thread (without per-position values), its rows handed over in batches; an
    /// error ends them.
    Batches {
        batch: std::vec::IntoIter<(i64, i64, f64)>,
        from: std::sync::mpsc::Receiver<rusqlite::Result<Vec<(i64, i64, f64)>>>,
    },
}

impl CounterRows<'_> {
    /// Reads the next row ahead (its per-position values only `with_dimensions`).
    fn advance(&mut self, with_dimensions: bool) -> rusqlite::Result<()> {
        self.positions.clear();
        let (batch, from) = match &mut self.source {
            CounterSource::Rows(rows) => {
                let Some(row) = rows.next()? else {
                    self.ahead = None;
                    return Ok(());
                };
                if with_dimensions {
                    if let Ok(Some(text)) = row.get_ref(3)?.as_str_or_null() {
                        self.positions.push_str(text);
                    }
                }
                self.ahead = Some((row.get(0)?, row.get(1)?, row.get(2)?));
                return Ok(());
            }
            CounterSource::Batches { batch, from } => (batch, from),
        };
        self.ahead = loop {
            if let Some(row) = batch.next() {
                break Some(row);
            }
            match from.recv() {
                Ok(rows) => *batch = rows?.into_iter(),
                Err(_) => break None,
            }
        };
        Ok(())
    }
}

/// Runs the counter query `query` on `conn` (its key, counter id and total), handing its rows
/// to `to` in batches, until they end or `to` is dropped; gives `conn` back.
fn read_counters(
    conn: Connection,
    query: &str,
    to: std::sync::mpsc::SyncSender<rusqlite::Result<Vec<(i64, i64, f64)>>>,
) -> Connection {
    let read = (|| -> rusqlite::Result<()> {
        let mut stmt = conn.prepare(query)?;
        let mut rows = stmt.query([])?;
        let mut batch = Vec::with_capacity(COUNTER_BATCH);
        while let Some(row) = rows.next()? {
            batch.push((row.get(0)?, row.get(1)?, row.get(2)?));
            if batch.len() == COUNTER_BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(COUNTER_BATCH));
                if to.send(Ok(full)).is_err() {
                    return Ok(());
                }
            }
        }
        if !batch.is_empty() {
            let _ = to.send(Ok(batch));
        }
        Ok(())
    })();
    if let Err(e) = read {
        let _ = to.send(Err(e));
    }
    conn
}

/// Fills `d` from a row of [`DISPATCH_COLUMNS`] (after the key), its kernel named from
/// `kernels`; its strings are reused.
fn row_dispatch(
    row: &rusqlite::Row<'_>,
    kernels: &FastMap<i64, String>,
    d: &mut Dispatch,
) -> rusqlite::Result<()> {
    let u64_at = |i: usize| row.get::<_, i64>(i).map(|v| v as u64);
    d.pid = row.get(1)?;
    d.tid = row.get(2)?;
    d.agent = row.get(3)?;
    d.queue_id = u64_at(4)?;
    d.queue_index = u64_at(5)?;
    d.dispatch_id = u64_at(6)?;
    d.correlation_id = u64_at(7)?;
    d.kernel.clear();
    d.kernel
        .push_str(kernels.get(&row.get(8)?).map_or("", String::as_str));
    d.kernel_object = u64_at(9)?;
    d.grid = [row.get(10)?, row.get(11)?, row.get(12)?];
    d.workgroup = [row.get(13)?, row.get(14)?, row.get(15)?];
    d.lds = row.get(16)?;
    d.scratch = row.get(17)?;
    d.arch_vgpr = row.get(18)?;
    d.accum_vgpr = row.get(19)?;
    d.sgpr = row.get(20)?;
    d.wave_size = row.get(21)?;
    d.signal = u64_at(22)?;
    d.start_ns = u64_at(23)?;
    d.end_ns = u64_at(24)?;
    d.queue_order = row.get(25)?;
    d.kernel_id = u64_at(26)?;
    Ok(())
}

/// The columns [`row_dispatch_own`] reads of a dispatch row `k` of `rtl_dispatch_row`, after
/// the key: what is the dispatch's own, then its launch.
const DISPATCH_OWN: &str =
    "k.queue_index, k.dispatch_id, k.correlation_id, k.signal, k.start_ns, k.end_ns, k.launch_id";

/// Fills `d` from a row of [`DISPATCH_OWN`] (after the key) and its launch, read once from the
/// database for all the rows that share it.
fn row_dispatch_own(
    row: &rusqlite::Row<'_>,
    launches: &mut LaunchReader<'_>,
    kernels: &FastMap<i64, String>,
    d: &mut Dispatch,
) -> rusqlite::Result<()> {
    let u64_at = |i: usize| row.get::<_, i64>(i).map(|v| v as u64);
    let launch = launches.get(row.get(7)?, kernels)?;
    let mut kernel = std::mem::take(&mut d.kernel);
    kernel.clone_from(&launch.kernel);
    *d = Dispatch {
        kernel,
        counters: std::mem::take(&mut d.counters),
        queue_index: u64_at(1)?,
        dispatch_id: u64_at(2)?,
        correlation_id: u64_at(3)?,
        signal: u64_at(4)?,
        start_ns: u64_at(5)?,
        end_ns: u64_at(6)?,
        ..*launch
    };
    Ok(())
}

/// The launches of the dispatch rows read, each as a dispatch with what its rows share, read
/// from `rtl_launch` when first met (and again once more than [`LAUNCHES_MOST`] were read).
struct LaunchReader<'c> {
    stmt: rusqlite::Statement<'c>,
    read: FastMap<i64, Dispatch>,
}

impl<'c> LaunchReader<'c> {
    fn new(conn: &'c Connection) -> rusqlite::Result<LaunchReader<'c>> {
        // A launch's columns where [`row_dispatch`] reads them in [`DISPATCH_COLUMNS`], zeros
        // for the dispatch row's own.
        let stmt = conn.prepare(
            "SELECT id, pid, tid, agent, queue_id, 0, 0, 0, kernel_id, kernel_object, grid_x,
                    grid_y, grid_z, workgroup_x, workgroup_y, workgroup_z, lds, scratch,
                    arch_vgpr, accum_vgpr, sgpr, wave_size, 0, 0, 0, queue_order, symbol_id
             FROM rtl_launch WHERE id = ?1",
        )?;
        Ok(LaunchReader {
            stmt,
            read: FastMap::default(),
        })
    }

    fn get(&mut self, id: i64, kernels: &FastMap<i64, String>) -> rusqlite::Result<&Dispatch> {
        if !self.read.contains_key(&id) {
            if self.read.len() >= LAUNCHES_MOST {
                self.read.clear();
            }
            let mut launch = Dispatch::default();
            self.stmt
                .query_row([id], |r| row_dispatch(r, kernels, &mut launch))?;
            self.read.insert(id, launch);
        }
        Ok(&self.read[&id])
    }
}

/// The dispatch rows [`Database::stream`] reads: a query of a key and [`DISPATCH_COLUMNS`], or
/// of a key and [`DISPATCH_OWN`] (each row's launch read once for the rows that share it).
#[derive(Debug, Clone, Copy)]
enum DispatchRows<'q> {
    Full(&'q str),
    Own(&'q str),
}

impl DispatchRows<'_> {
    /// `query`'s rows, of [`DISPATCH_OWN`] when `own`.
    fn of(own: bool, query: &str) -> DispatchRows<'_> {
        match own {
            true => DispatchRows::Own(query),
            false => DispatchRows::Full(query),
        }
    }
}

/// Names looked up in the database, recorded when new.
impl NameSource for &mut Database {
    type Error = DatabaseError;

    fn kernel_id(&mut self, kernel: &str) -> Result<Option<i64>, DatabaseError> {
        self.string_id(kernel).map(Some)
    }

    fn counter_id(&mut self, counter: &Counter) -> Result<Option<i64>, DatabaseError> {
        Database::counter_id(self, counter).map(Some)
    }
}

fn sql<T>(path: &Path, r: rusqlite::Result<T>) -> Result<T, DatabaseError> {
    r.map_err(|source| DatabaseError::Sqlite {
        path: path.to_path_buf(),
        source,
    })
}

impl Database {
    /// The connection and the file's name, for the tables other modules keep in the same
    /// database ([`crate::store::regions`]).
    pub fn connection(&self) -> (&Connection, &Path) {
        (&self.conn, &self.target)
    }

    /// Creates the database that will be named `target` once committed. On failure nothing is
    /// left behind.
    pub fn create(target: &Path) -> Result<Database, DatabaseError> {
        let temporary = temporary_path(target);
        let _ = std::fs::remove_file(&temporary);
        let conn = Connection::open(&temporary).and_then(|conn| {
            // A scratch file renamed into place at the end: no journal, no syncs, no other
            // connection; a fixed page cache keeps memory flat. Foreign keys hold by
            // construction and are not checked row by row: the values go into rocpd's
            // `rocpd_pmc_event` before the events they name are written at the commit.
            conn.execute_batch(
                "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
                 PRAGMA locking_mode=EXCLUSIVE; PRAGMA temp_store=FILE; PRAGMA foreign_keys=OFF;",
            )?;
            conn.execute_batch(&cache_size(CACHE_KIB))?;
            conn.execute_batch(SCHEMA)?;
            Ok(conn)
        });
        let conn = match conn {
            Ok(conn) => conn,
            Err(e) => {
                let _ = std::fs::remove_file(&temporary);
                return sql(&temporary, Err(e));
            }
        };
        let mut db = Database::on(conn, target.to_path_buf(), temporary, false);
        db.guid = rocpd::new_guid();
        db.values = values_table(&db.guid).0;
        Ok(db)
    }

    /// Opens a finished database for reading (`rtl-pmc merge`).
    pub fn open(path: &Path) -> Result<Database, DatabaseError> {
        let conn = sql(
            path,
            Connection::open_with_flags(
                path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            ),
        )?;
        // An earlier rtl-pmc kept the values in a table of this name, and copied them into
        // rocpd's at the end with other row ids; later ones kept the per-position values in
        // rocpd's `extdata`, then in a table `rtl_pmc_positions` of a row per value, rather than
        // in `rtl_dispatch.positions`, and found a dispatch row's values by row ids made from its
        // own rather than by its `first_value`: read as this one's, they would be wrong.
        let values = conn.query_row(
            "SELECT type || (SELECT count(*) FROM sqlite_master
                             WHERE name = 'rtl_pmc_positions' AND type = 'table')
                         || (SELECT count(*) FROM pragma_table_info('rtl_dispatch')
                             WHERE name IN ('positions', 'first_value'))
             FROM sqlite_master WHERE name = 'rtl_pmc_value'",
            [],
            |r| r.get::<_, String>(0),
        );
        let reason = match sql(path, rusqlite::OptionalExtension::optional(values))?.as_deref() {
            Some("view02") => None,
            Some(_) => Some(
                "written by an earlier rtl-pmc, which stored the counter values in another \
                 layout; profile again with this one to merge",
            ),
            None => Some("not an rtl-pmc database (it has no rtl_pmc_value)"),
        };
        if let Some(reason) = reason {
            return Err(DatabaseError::Layout {
                path: path.to_path_buf(),
                reason,
            });
        }
        let guid = conn.query_row(
            "SELECT value FROM rocpd_metadata WHERE tag = 'guid'",
            [],
            |r| r.get::<_, String>(0),
        );
        let guid = sql(path, guid)?;
        let launch_table = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'rtl_launch')",
            [],
            |r| r.get::<_, bool>(0),
        );
        let launch_table = sql(path, launch_table)?;
        let mut db = Database::on(conn, path.to_path_buf(), path.to_path_buf(), true);
        db.launch_table = launch_table;
        db.values = values_table(&guid).0;
        db.guid = guid;
        db.values_made = true;
        Ok(db)
    }

    /// The values table (rocpd's `rocpd_pmc_event` of this run, quoted), for modules that read
    /// the values directly (a dispatch row's as [`values_of`] says).
    pub fn values_table(&self) -> &str {
        &self.values
    }

    /// Makes the index of the dispatch rows by merged dispatch, once, and that of the merged
    /// dispatches in start order when their ids are not.
    pub fn index_merged(&self) -> Result<(), DatabaseError> {
        if !self.merged_index.get() {
            self.err(self.conn.execute_batch(MERGED_INDEX))?;
            self.merged_index.set(true);
        }
        if !self.start_index.get() && !self.merged_in_order.0 {
            self.err(self.conn.execute_batch(START_INDEX))?;
            self.start_index.set(true);
        }
        Ok(())
    }

    /// Makes the index of the merged dispatches by merge key, once.
    fn index_keys(&mut self) -> Result<(), DatabaseError> {
        if !self.key_index {
            self.err(self.conn.execute_batch(KEY_INDEX))?;
            self.key_index = true;
        }
        Ok(())
    }

    /// Makes the values table and its views, once.
    fn make_values(&mut self) -> Result<(), DatabaseError> {
        if !self.values_made {
            let (_, ddl) = values_table(&self.guid);
            self.err(self.conn.execute_batch(&ddl))?;
            self.values_made = true;
        }
        Ok(())
    }

    /// A handle on `conn`: a new database written under `temporary`, or (`finished`) one that
    /// is complete and only read.
    fn on(conn: Connection, target: PathBuf, temporary: PathBuf, finished: bool) -> Database {
        Database {
            conn,
            target,
            temporary,
            strings: FastMap::default(),
            pmcs: FastMap::default(),
            in_transaction: false,
            insert_texts: FastMap::default(),
            dispatch_rows: Vec::new(),
            launch_rows: Vec::new(),
            launches: FastMap::default(),
            next_launch: 1,
            merged_rows: Vec::new(),
            pmc_rows: Vec::new(),
            next_row: 1,
            next_value: 1,
            pass_values: (!finished).then(Vec::new),
            join: PassJoin::default(),
            known_launches: FastMap::default(),
            known_merged: (!finished).then(KnownMerged::default),
            pass_match: PassMatch::default(),
            collected_before: FastMap::default(),
            collected: FastMap::default(),
            pass_counters: Vec::new(),
            timelines: Some(FastMap::default()),
            totals: Totals::default(),
            bulk_pages: finished,
            guid: String::new(),
            values: String::new(),
            values_made: false,
            sampled: (!finished).then(Sampled::new),
            pass_open: false,
            first_agents: FastMap::default(),
            first_rows: (!finished).then(FirstRows::default),
            merged_index: std::cell::Cell::new(finished),
            merged_in_order: (true, i64::MIN),
            start_index: std::cell::Cell::new(finished),
            key_index: finished,
            aside: std::cell::RefCell::new(None),
            committed: finished,
            launch_table: true,
        }
    }

    /// Sets how dispatches of the passes inserted from now on are matched (default: by queue).
    pub fn set_pass_match(&mut self, rule: PassMatch) {
        self.pass_match = rule;
    }

    fn err<T>(&self, r: rusqlite::Result<T>) -> Result<T, DatabaseError> {
        sql(&self.temporary, r)
    }

    /// Runs `work` on the connection, for modules that keep tables of their own (the
    /// `rtl_estimate` family of `estimates`); SQLite's errors name this database.
    pub fn with_connection<T>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, DatabaseError> {
        self.err(work(&self.conn))
    }

    /// Records (or updates) a GPU.
    pub fn add_agent(&mut self, agent: &Agent) -> Result<(), DatabaseError> {
        self.add_node(agent, false)
    }

    /// Records (or updates) a CPU.
    pub fn add_cpu(&mut self, agent: &Agent) -> Result<(), DatabaseError> {
        self.add_node(agent, true)
    }

    fn add_node(&mut self, agent: &Agent, cpu: bool) -> Result<(), DatabaseError> {
        if let (Some(sampled), false) = (&mut self.sampled, cpu) {
            sampled.set_agent(agent.node_id, agent.property("gfx_target_version") as u32);
        }
        let properties = serde_json::Value::Object(
            agent
                .properties
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::from(*v)))
                .collect(),
        )
        .to_string();
        let r = self.conn.execute(
            "INSERT INTO rtl_agent(node_id, gpu_index, name, product_name, properties, cpu,
             model_name) VALUES (?1,?2,?3,?4,?5,?6,?7) ON CONFLICT(node_id) DO UPDATE SET
             gpu_index=?2, name=?3, product_name=?4, properties=?5, cpu=?6, model_name=?7",
            params![
                agent.node_id,
                agent.gpu_index,
                agent.name,
                agent.product_name,
                properties,
                cpu,
                agent.model_name
            ],
        );
        self.err(r).map(drop)
    }

    /// The run's GUID (rocpd's `guid`): the same for every copy of one database.
    pub fn guid(&self) -> &str {
        &self.guid
    }

    /// The GPUs recorded, by node id.
    pub fn agents(&self) -> Result<Vec<Agent>, DatabaseError> {
        self.nodes(false)
    }

    /// The CPUs recorded, by node id.
    pub fn cpus(&self) -> Result<Vec<Agent>, DatabaseError> {
        self.nodes(true)
    }

    fn nodes(&self, cpu: bool) -> Result<Vec<Agent>, DatabaseError> {
        let mut stmt = self.err(self.conn.prepare(
            "SELECT node_id, gpu_index, name, product_name, properties, model_name FROM rtl_agent
             WHERE cpu = ?1 ORDER BY node_id",
        ))?;
        let rows = stmt.query_map([cpu], |r| {
            let properties: String = r.get(4)?;
            let properties: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&properties).unwrap_or_default();
            Ok(Agent {
                node_id: r.get(0)?,
                gpu_index: r.get(1)?,
                name: r.get(2)?,
                product_name: r.get(3)?,
                model_name: r.get(5)?,
                properties: properties
                    .into_iter()
                    .map(|(k, v)| (k, v.as_u64().unwrap_or(0)))
                    .collect(),
            })
        });
        let rows = self.err(rows)?;
        self.err(rows.collect())
    }

    /// Records a pass and opens its transaction; its dispatches follow with
    /// [`Database::insert_many_with`].
    pub fn begin_pass(&mut self, pass: u32, label: &str) -> Result<(), DatabaseError> {
        if !self.bulk_pages {
            // Rebuilt while it holds next to nothing: a few milliseconds.
            // The rebuild forgets the cache size.
            let grow = format!(
                "PRAGMA page_size={BULK_PAGE_SIZE}; VACUUM; {}",
                cache_size(CACHE_KIB)
            );
            self.err(self.conn.execute_batch(&grow))?;
            self.bulk_pages = true;
        }
        self.make_values()?;
        self.pass_open = true;
        self.pass_counters.clear();
        let r = self.conn.execute(
            "INSERT OR REPLACE INTO rtl_pass(id, label) VALUES (?1, ?2)",
            params![pass, label],
        );
        self.err(r)?;
        self.err(self.conn.execute_batch("BEGIN"))?;
        self.in_transaction = true;
        // The values table counts its ids on (AUTOINCREMENT, as rocpd makes it): past the
        // highest it ever gave, even if that row was moved out since.
        let r = self.conn.query_row(
            &format!(
                "SELECT (SELECT coalesce(max(id), 0) FROM rtl_dispatch_row),
                        (SELECT coalesce(max(id), 0) FROM rtl_merged),
                        max((SELECT coalesce(max(id), 0) FROM {}),
                            (SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = ?1)),
                        (SELECT count(*) FROM rtl_pass WHERE id != ?2),
                        (SELECT coalesce(max(id), 0) FROM rtl_launch)",
                self.values
            ),
            params![self.values.trim_matches('"'), pass],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            },
        );
        let (last_row, merged_before, last_value, passes_before, last_launch) = self.err(r)?;
        self.next_row = last_row + 1;
        self.next_launch = last_launch + 1;
        // A launch names its pass: none of an earlier pass is met again.
        self.launches.clear();
        self.next_value = last_value + 1;
        if let Some(passes) = &mut self.pass_values {
            passes.push(PassValues {
                first: self.next_value,
                last: last_value,
                ascending: true,
                last_event: 0,
            });
        }
        self.join = PassJoin {
            merged_before,
            first_row: self.next_row,
            next_merged: merged_before + 1,
            exact: true,
            passes_before,
            ..PassJoin::default()
        };
        Ok(())
    }

    /// Declares the processes of input `source` that have dispatches in the pass being
    /// inserted. With them the pass is joined while it is inserted (when its dispatches come in
    /// start order); without, [`Database::end_pass`] joins it in SQL.
    pub fn declare_processes(&mut self, source: u32, pids: &[u32]) {
        let mut pids: Vec<(u32, bool)> = pids.iter().map(|&pid| (pid, false)).collect();
        pids.sort_unstable();
        pids.dedup();
        self.join.processes.insert(source, pids);
    }

    fn string_id(&mut self, text: &str) -> Result<i64, DatabaseError> {
        if let Some(&id) = self.strings.get(text) {
            return Ok(id);
        }
        let r = self.conn.query_row(
            "INSERT INTO rtl_string(string) VALUES (?1) ON CONFLICT(string) DO UPDATE
             SET string = string RETURNING id",
            [text],
            |r| r.get(0),
        );
        let id = self.err(r)?;
        self.strings.insert(text.to_string(), id);
        Ok(id)
    }

    /// The id of `counter` in `rtl_counter`, recording it when new; dispatches store their
    /// counters in this order.
    pub fn counter_id(&mut self, counter: &Counter) -> Result<i64, DatabaseError> {
        if let Some(&id) = self.pmcs.get(&counter.name) {
            return Ok(id);
        }
        let dimensions = if counter.dimensions.is_empty() {
            "DIMENSION_NONE"
        } else {
            counter.dimensions.as_str()
        };
        let r = self.conn.query_row(
            "INSERT INTO rtl_counter(name, dimensions) VALUES (?1, ?2) ON CONFLICT(name)
             DO UPDATE SET dimensions = CASE WHEN dimensions = '' THEN excluded.dimensions
             ELSE dimensions END RETURNING id",
            params![counter.name, dimensions],
            |r| r.get(0),
        );
        let id = self.err(r)?;
        self.pmcs.insert(counter.name.clone(), id);
        Ok(id)
    }

    /// Declares the counters a pass collects, so they have columns, in this order, even when no
    /// dispatch delivers them.
    pub fn declare_counters(&mut self, names: &[String]) -> Result<(), DatabaseError> {
        for name in names {
            let r = self.conn.execute(
                "INSERT OR IGNORE INTO rtl_counter(name, dimensions) VALUES (?1, '')",
                [name],
            );
            self.err(r)?;
        }
        Ok(())
    }

    /// [`Database::insert_many_with`], the batch made here, and the values added to the pass's
    /// sums as a pass adds them ([`Database::lend_sums`]).
    #[cfg(test)]
    pub fn insert_many(
        &mut self,
        pass: u32,
        dispatches: &mut [(u32, Dispatch)],
    ) -> Result<(), DatabaseError> {
        let mut sums = self.lend_sums(pass);
        let mut prepared = Prepared::default();
        let inserted = self.insert_many_with(pass, dispatches, &mut prepared);
        if inserted.is_ok() {
            sums.add_inserted(dispatches, prepared.ids());
        }
        self.take_back_sums(sums);
        inserted
    }

    /// The ids of the kernel and counter names known so far, for another thread to make
    /// batches with ([`Prepared::make_known`]).
    pub(crate) fn name_ids(&self) -> NameIds {
        NameIds {
            kernels: self.strings.clone(),
            counters: self.pmcs.clone(),
        }
    }

    /// Adds dispatches of `pass`, each with the input number it was read from (0 for a single
    /// run), with their ids and their counters in the database's order (by counter id), the
    /// order every read of the database gives them in, as `prepared` holds them: made on
    /// another thread, or here when it was not ([`Prepared::make_known`]; the names are then
    /// looked up, and recorded when new). Several at once are cheaper per dispatch: each
    /// statement is looked up once and the counters of all of them go in a few statements.
    /// The values go to no sum here: the caller hands `prepared.ids()` to
    /// [`PassSums::add_inserted`] on the sums [`Database::lend_sums`] lent, as the pass does.
    pub(crate) fn insert_many_with(
        &mut self,
        pass: u32,
        dispatches: &mut [(u32, Dispatch)],
        prepared: &mut Prepared,
    ) -> Result<(), DatabaseError> {
        if !prepared.made() {
            let made = prepared.make(dispatches, &mut *self)?;
            debug_assert!(made, "the database gives every name an id");
            prepared.set_looked_up();
        }
        let inserted = self.insert_rows(pass, dispatches, prepared);
        prepared.inserted();
        inserted
    }

    /// Takes out the sums that the values of `pass` add to (the moments for the estimates and
    /// the summary's totals), so that another thread adds them ([`PassSums::add_inserted`] with
    /// [`Prepared::ids`]) while this one inserts; inserts add to no sum themselves.
    pub(crate) fn lend_sums(&mut self, pass: u32) -> PassSums {
        PassSums {
            pass,
            samples: self.sampled.as_mut().map(Sampled::lend),
            counters: std::mem::take(&mut self.totals.counters),
            before: self
                .collected_before
                .keys()
                .fold(Vec::new(), |mut before, &id| {
                    if let Ok(i) = usize::try_from(id) {
                        if before.len() <= i {
                            before.resize(i + 1, false);
                        }
                        before[i] = true;
                    }
                    before
                }),
        }
    }

    /// Puts back what [`Database::lend_sums`] took, with the values added to it.
    pub(crate) fn take_back_sums(&mut self, lent: PassSums) {
        if let (Some(sampled), Some(samples)) = (&mut self.sampled, lent.samples) {
            sampled.take_back(samples);
        }
        self.totals.counters = lent.counters;
    }

    /// [`Database::insert_many_with`] once the batch is made.
    fn insert_rows(
        &mut self,
        pass: u32,
        dispatches: &[(u32, Dispatch)],
        prepared: &Prepared,
    ) -> Result<(), DatabaseError> {
        // Keys are looked up in the database once the merged dispatches may not all be in
        // memory by the end of this batch.
        let in_memory = match &self.known_merged {
            Some(known) => known.held + FAR_BYTES * dispatches.len() < KNOWN_MERGED_MOST,
            None => false,
        };
        if !in_memory {
            self.index_keys()?;
        }
        let path = &self.temporary;
        self.merged_rows.clear();
        let mut merged = MergedStatements {
            find: sql(path, self.conn.prepare_cached(FIND_MERGED))?,
            new: &mut self.merged_rows,
            first: self.first_rows.as_mut(),
            known: &mut self.known_merged,
        };
        // The counters of every dispatch: (counter id, total, merged dispatch).
        let rows = &mut self.pmc_rows;
        let dispatch_rows = &mut self.dispatch_rows;
        rows.clear();
        dispatch_rows.clear();
        self.launch_rows.clear();
        let mut ids = prepared.ids().iter().copied();
        *self.totals.pass_dispatches.entry(pass).or_default() += dispatches.len() as u64;
        for (at, (source, d)) in dispatches.iter().enumerate() {
            let (source, d) = (*source, d);
            let kernel_id = ids.next().unwrap_or_default();
            let row = self.next_row;
            if let Some(timelines) = &mut self.timelines {
                let (timeline, gaps) = timelines.entry(d.agent).or_default();
                if !timeline.add(d.start_ns, d.end_ns, gaps) {
                    self.timelines = None;
                }
            }
            let key = self.join.key(source, d, kernel_id, self.pass_match);
            let merged_id = match key {
                Some(key) => {
                    let before = self.join.next_merged;
                    let id = merged.join(&mut self.join, &self.known_launches, key, row, d);
                    let id = sql(path, id)?;
                    if let Some(sampled) = &mut self.sampled {
                        if self.join.next_merged > before {
                            sampled.add_merged(source, d, kernel_id);
                        }
                    }
                    Some(id)
                }
                None => None,
            };
            let launch: Launch = [
                i64::from(pass),
                i64::from(source),
                i64::from(d.pid),
                i64::from(d.tid),
                i64::from(d.agent),
                d.queue_id as i64,
                i64::from(d.queue_order),
                kernel_id,
                d.kernel_object as i64,
                i64::from(d.grid[0]),
                i64::from(d.grid[1]),
                i64::from(d.grid[2]),
                i64::from(d.workgroup[0]),
                i64::from(d.workgroup[1]),
                i64::from(d.workgroup[2]),
                i64::from(d.lds),
                i64::from(d.scratch),
                i64::from(d.arch_vgpr),
                i64::from(d.accum_vgpr),
                i64::from(d.sgpr),
                i64::from(d.wave_size),
                d.kernel_id as i64,
            ];
            let launch = match self.launches.get(&launch) {
                Some(&id) => id,
                None => {
                    if self.launches.len() >= LAUNCHES_MOST {
                        self.launches.clear();
                    }
                    let id = self.next_launch;
                    self.next_launch += 1;
                    self.launches.insert(launch, id);
                    let mut row = [id; LAUNCH_FIELDS];
                    row[1..].copy_from_slice(&launch);
                    self.launch_rows.push(row);
                    id
                }
            };
            dispatch_rows.push(DispatchRow {
                at,
                launch,
                key,
                merged: merged_id,
                values: (!d.counters.is_empty())
                    .then_some((self.next_value, d.counters.len() as i64)),
            });
            self.next_value += d.counters.len() as i64;
            if let Some(values) = self.pass_values.as_mut().and_then(|p| p.last_mut()) {
                if !d.counters.is_empty() {
                    values.last = self.next_value - 1;
                    values.ascending &= merged_id.is_some_and(|e| e > values.last_event);
                    values.last_event = merged_id.unwrap_or(values.last_event);
                }
            }
            self.next_row += 1;
            for c in &d.counters {
                let pmc = ids.next().unwrap_or_default();
                // Once per counter and pass: noted as collected, its first GPU kept.
                let at = usize::try_from(pmc).unwrap_or(usize::MAX);
                if !self.pass_counters.get(at).copied().unwrap_or(false) {
                    self.collected.insert(pmc, ());
                    self.first_agents.entry(pmc).or_insert(d.agent);
                    if at < PASS_COUNTERS_MOST {
                        if self.pass_counters.len() <= at {
                            self.pass_counters.resize(at + 1, false);
                        }
                        self.pass_counters[at] = true;
                    }
                }
                rows.push((pmc, c.total, merged_id));
            }
        }
        drop(merged);
        for m in &self.merged_rows {
            let start = m[MERGED_START];
            self.merged_in_order = (
                self.merged_in_order.0 && start >= self.merged_in_order.1,
                start,
            );
        }
        let conn = &self.conn;
        let texts = &mut self.insert_texts;
        let r = insert_chunked(
            conn,
            texts,
            (INSERT_MERGED, MERGED_FIELDS),
            "",
            &self.merged_rows,
            |stmt, from, fields| bind_row(stmt, from, fields),
        );
        sql(path, r)?;
        if !self.merged_rows.is_empty() {
            self.given_ids("rtl_merged", self.join.next_merged - 1)?;
        }
        let (conn, texts, path) = (&self.conn, &mut self.insert_texts, &self.temporary);
        let r = insert_chunked(
            conn,
            texts,
            (INSERT_LAUNCH, LAUNCH_FIELDS),
            "",
            &self.launch_rows,
            |stmt, from, row| bind_row(stmt, from, row),
        );
        sql(path, r)?;
        let r = insert_chunked(
            conn,
            texts,
            (INSERT_DISPATCH, DISPATCH_FIELDS),
            "",
            &self.dispatch_rows,
            |stmt, from, r| {
                let (_, d) = &dispatches[r.at];
                // Bound by type, not through `&dyn ToSql`.
                let integers: [i64; DISPATCH_INTEGERS] = [
                    r.launch,
                    d.queue_index as i64,
                    d.dispatch_id as i64,
                    d.correlation_id as i64,
                    d.signal as i64,
                    d.start_ns as i64,
                    d.end_ns as i64,
                ];
                bind_row(stmt, from, &integers)?;
                let from = from + DISPATCH_INTEGERS;
                bind_row(
                    stmt,
                    from,
                    &[
                        r.key.map(|k| k.order),
                        r.key.map(|k| k.occurrence),
                        r.merged,
                    ],
                )?;
                stmt.raw_bind_parameter(from + 3, prepared.positions(r.at))?;
                bind_row(
                    stmt,
                    from + 4,
                    &[r.values.map(|v| v.0), r.values.map(|v| v.1)],
                )
            },
        );
        sql(path, r)?;
        if !self.dispatch_rows.is_empty() {
            self.given_ids("rtl_dispatch_row", self.next_row - 1)?;
        }
        let (conn, texts, path) = (&self.conn, &mut self.insert_texts, &self.temporary);
        let r = insert_chunked(
            conn,
            texts,
            (INSERT_PMC, PMC_FIELDS),
            &format!("INSERT OR FAIL INTO {}", self.values),
            &self.pmc_rows,
            |stmt, from, (pmc, total, merged)| {
                stmt.raw_bind_parameter(from, merged)?;
                stmt.raw_bind_parameter(from + 1, pmc)?;
                stmt.raw_bind_parameter(from + 2, total)
            },
        );
        sql(path, r)?;
        if !self.pmc_rows.is_empty() {
            self.given_ids("rocpd_pmc_event", self.next_value - 1)?;
        }
        Ok(())
    }

    /// Checks that the last row inserted into `table` took the id `last` that this counted for
    /// it (as SQLite gives ids, one past the highest, it does while only this writes).
    fn given_ids(&self, table: &'static str, last: i64) -> Result<(), DatabaseError> {
        match self.conn.last_insert_rowid() == last {
            true => Ok(()),
            false => Err(DatabaseError::Ids {
                path: self.temporary.clone(),
                table,
            }),
        }
    }

    /// Closes the pass: numbers the launches of each lane and joins them to the dispatches of
    /// earlier passes by the merge key. A pass that could not be joined while inserted is
    /// joined here in SQL.
    pub fn end_pass(&mut self, pass: u32, exit_status: Option<i32>) -> Result<(), DatabaseError> {
        let join = std::mem::take(&mut self.join);
        if join.exact && join.ranks_hold() {
            // A merged dispatch is matched at most once per pass, and there are at most
            // `merged_before` of them before it: when that many were matched, none missed this
            // pass, and no row changes.
            if join.matched != join.merged_before as u64 {
                self.count_missed(&join)?;
            }
            join.record_launches(&mut self.known_launches);
            self.totals.add_merged(&join.merged);
        } else {
            self.join_in_sql(pass, &join)?;
            let merged = self.merged_since(join.merged_before)?;
            self.totals.add_merged(&merged);
        }
        self.report_once(pass)?;
        self.count_gaps(pass)?;
        let r = self.conn.execute(
            "UPDATE rtl_pass SET exit_status = ?2 WHERE id = ?1",
            params![pass, exit_status],
        );
        self.err(r)?;
        if self.in_transaction {
            self.err(self.conn.execute_batch("COMMIT"))?;
            self.in_transaction = false;
        }
        self.pass_open = false;
        Ok(())
    }

    /// The moments of every stratum's values as the database holds them, gathered while they
    /// were inserted through this handle; `None` when they must be read back (a pass not
    /// ended, a value repeating an earlier pass's, or a database only read).
    pub fn sampled(&self) -> Option<&Sampled> {
        self.sampled.as_ref().filter(|_| !self.pass_open)
    }

    /// Reports each counter of each merged dispatch once: a value `pass` collected for a
    /// dispatch that an earlier pass already has a value of that counter for is kept, but marked
    /// not reported (the earliest pass's value is the one every output shows); the pass's other
    /// values of counters an earlier pass collected go into the summary's totals.
    fn report_once(&mut self, pass: u32) -> Result<(), DatabaseError> {
        let collected = std::mem::take(&mut self.collected);
        let repeated = collected
            .keys()
            .any(|pmc| self.collected_before.contains_key(pmc));
        if repeated {
            self.sampled = None;
            self.index_merged()?;
            // The earliest pass with a value of a merged dispatch's counter reports it, so an
            // earlier pass's value, if any, is in the values table.
            let values = &self.values;
            let statements = [
                format!(
                    "INSERT INTO rtl_pmc_repeat(dispatch_id, pmc_id, value, dimension_values)
                     SELECT k.id, v.pmc_id, v.value, {}
                     FROM rtl_dispatch k CROSS JOIN {values} v ON {}
                     WHERE k.pass = ?1 AND EXISTS (
                       SELECT 1 FROM rtl_dispatch e CROSS JOIN {values} ev
                         ON {} AND +ev.pmc_id = v.pmc_id
                       WHERE e.merged_id = k.merged_id AND e.pass < ?1)",
                    position_array("k.positions", "v.pmc_id"),
                    values_of("k", "v"),
                    values_of("e", "ev"),
                ),
                format!(
                    "DELETE FROM {values} WHERE id IN (
                       SELECT v.id
                       FROM rtl_pmc_repeat r JOIN rtl_dispatch k ON k.id = r.dispatch_id
                       CROSS JOIN {values} v ON {} AND +v.pmc_id = r.pmc_id
                       WHERE k.pass = ?1)",
                    values_of("k", "v"),
                ),
                // Their positions go with them: the array starts again at the first counter
                // left and ends at the last (none when none is left), so no padding stays.
                "UPDATE rtl_dispatch_row AS k SET positions = (
                   SELECT '[' || min(pmc) || ',' || group_concat(coalesce(v, 'null'), ',' ORDER BY pmc) || ']'
                   FROM (SELECT pmc, v, min(CASE WHEN v IS NOT NULL THEN pmc END) OVER () AS first,
                                max(CASE WHEN v IS NOT NULL THEN pmc END) OVER () AS last
                         FROM (SELECT (k.positions ->> 0) + j.key - 1 AS pmc,
                                      CASE WHEN NOT EXISTS (
                                        SELECT 1 FROM rtl_pmc_repeat r WHERE r.dispatch_id = k.id
                                          AND r.pmc_id = (k.positions ->> 0) + j.key - 1)
                                      THEN j.value END AS v
                               FROM json_each(k.positions) j WHERE j.key > 0))
                   WHERE pmc BETWEEN first AND last)
                 WHERE k.id IN (SELECT dispatch_id FROM rtl_pmc_repeat)
                   AND k.launch_id IN (SELECT id FROM rtl_launch WHERE pass = ?1)
                   AND k.positions IS NOT NULL"
                    .to_string(),
            ];
            for statement in &statements {
                let r = self.conn.execute(statement, [pass]);
                self.err(r)?;
            }
            let mut stmt = self.err(self.conn.prepare(&format!(
                "SELECT k.kernel_id, v.pmc_id, v.value
                 FROM rtl_dispatch k CROSS JOIN {values} v ON {}
                 WHERE k.pass = ?1 ORDER BY k.id, v.id",
                values_of("k", "v"),
            )))?;
            let rows = self.err(stmt.query_map([pass], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, f64>(2)?,
                ))
            }))?;
            for row in rows {
                let (kernel, pmc, value) = self.err(row)?;
                if self.collected_before.contains_key(&pmc) {
                    self.totals
                        .counters
                        .entry((kernel, pmc))
                        .or_default()
                        .add(value);
                }
            }
        }
        self.collected_before.extend(collected);
        self.pass_counters.clear();
        Ok(())
    }

    /// Adds the idle gaps of `pass`'s GPUs to the totals: as counted while the dispatches were
    /// inserted, or, when they came out of start order, from the database.
    fn count_gaps(&mut self, pass: u32) -> Result<(), DatabaseError> {
        let timelines = self.timelines.replace(FastMap::default());
        let counted: Vec<(u32, IdleGaps)> = match timelines {
            Some(timelines) => timelines
                .into_iter()
                .map(|(agent, (_, gaps))| (agent, gaps))
                .collect(),
            None => {
                let mut stmt = self.err(self.conn.prepare(
                    "SELECT agent, start_ns - max(end_ns) OVER (PARTITION BY agent
                       ORDER BY start_ns, id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                     FROM rtl_dispatch WHERE pass = ?1",
                ))?;
                let rows = self.err(stmt.query_map([pass], |r| {
                    Ok((r.get::<_, u32>(0)?, r.get::<_, Option<i64>>(1)?))
                }))?;
                let mut by_agent: FastMap<u32, IdleGaps> = FastMap::default();
                for row in rows {
                    let (agent, gap) = self.err(row)?;
                    let gaps = by_agent.entry(agent).or_default();
                    if let Some(gap) = gap.filter(|&g| g > 0) {
                        gaps.add(gap as u64);
                    }
                }
                by_agent.into_iter().collect()
            }
        };
        for (agent, gaps) in counted {
            self.totals.gaps.entry(agent).or_default().merge(&gaps);
        }
        Ok(())
    }

    /// The idle gaps between the dispatches of each GPU, by node id (each pass's timeline on
    /// its own, the passes' gaps added).
    pub fn idle_gaps(&self) -> Vec<(u32, IdleGaps)> {
        let mut gaps: Vec<(u32, IdleGaps)> =
            self.totals.gaps.iter().map(|(&a, &g)| (a, g)).collect();
        gaps.sort_by_key(|g| g.0);
        gaps
    }

    /// The merged dispatches with ids above `id`, by kernel and GPU.
    fn merged_since(&self, id: i64) -> Result<MergedLaunches, DatabaseError> {
        let mut stmt = self.err(self.conn.prepare(
            "SELECT k.kernel_id, k.agent, count(*), sum(k.end_ns - k.start_ns), min(k.start_ns),
                    max(k.end_ns)
             FROM rtl_merged_dispatch m JOIN rtl_dispatch k ON k.id = m.first_dispatch
             WHERE m.id > ?1 GROUP BY k.kernel_id, k.agent",
        ))?;
        let rows = self.err(stmt.query_map([id], |r| {
            Ok((
                (r.get(0)?, r.get(1)?),
                Launches {
                    count: r.get::<_, i64>(2)? as u64,
                    busy_ns: r.get(3)?,
                    first_ns: r.get(4)?,
                    last_ns: r.get(5)?,
                },
            ))
        }))?;
        self.err(rows.collect())
    }

    /// Joins `pass` in SQL, first undoing what `join` did while the pass was inserted.
    fn join_in_sql(&mut self, pass: u32, join: &PassJoin) -> Result<(), DatabaseError> {
        self.index_keys()?;
        self.merged_in_order.0 = false;
        self.first_rows = None;
        self.pass_values = None;
        self.known_merged = None;
        if let Some(sampled) = &mut self.sampled {
            sampled.lose_population();
        }
        // The merged dispatches the pass made while inserted go; it makes its own below.
        if join.next_merged > join.merged_before + 1 {
            let r = self
                .conn
                .execute("DELETE FROM rtl_merged WHERE id > ?1", [join.merged_before]);
            self.err(r)?;
        }
        // The lane's GPU and queue as the rule keeps them (0 where it ignores them).
        let (agent, queue) = match self.pass_match {
            PassMatch::Queue => ("agent", "queue_order"),
            PassMatch::Gpu => ("agent", "0"),
            PassMatch::Process => ("0", "0"),
        };
        const KEY: &str = "source, process_order, agent, queue_order, kernel_id, occurrence,
            grid_x, grid_y, grid_z, workgroup_x, workgroup_y, workgroup_z";
        let statements = [
            "DROP TABLE IF EXISTS temp.rtl_pass_key".to_string(),
            format!(
                "CREATE TEMP TABLE rtl_pass_key AS
                 SELECT id, source, start_ns, {agent} AS agent, {queue} AS queue_order, kernel_id,
                        grid_x, grid_y, grid_z, workgroup_x, workgroup_y, workgroup_z,
                        row_number() OVER (PARTITION BY source, pid, {agent}, {queue}, kernel_id
                                           ORDER BY dispatch_id, id) AS occurrence,
                        dense_rank() OVER (PARTITION BY source ORDER BY pid) AS process_order
                 FROM rtl_dispatch WHERE pass = ?1"
            ),
            // New keys become merged dispatches in start order, having missed every pass before.
            format!(
                "INSERT INTO rtl_merged({KEY}, first_dispatch, start_ns, missed)
                 SELECT {KEY}, id, start_ns, {passes_before}
                 FROM temp.rtl_pass_key WHERE true ORDER BY start_ns, id
                 ON CONFLICT({KEY}) DO NOTHING",
                passes_before = join.passes_before
            ),
            "UPDATE rtl_dispatch_row AS k SET occurrence = p.occurrence,
               process_order = p.process_order, merged_id = m.id
             FROM temp.rtl_pass_key p JOIN rtl_merged_dispatch m
               ON m.source = p.source AND m.process_order = p.process_order
              AND m.agent = p.agent AND m.queue_order = p.queue_order
              AND m.kernel_id = p.kernel_id AND m.occurrence = p.occurrence
              AND m.grid_x = p.grid_x AND m.grid_y = p.grid_y AND m.grid_z = p.grid_z
              AND m.workgroup_x = p.workgroup_x AND m.workgroup_y = p.workgroup_y
              AND m.workgroup_z = p.workgroup_z
             WHERE k.id = p.id"
                .to_string(),
            "DROP TABLE temp.rtl_pass_key".to_string(),
            // The pass's values (the last rows of the values table) name their merged dispatch.
            format!(
                "UPDATE {values} AS v SET event_id = k.merged_id FROM rtl_dispatch_row k
                 WHERE k.id >= {first} AND {range}",
                values = self.values,
                first = join.first_row,
                range = values_of("k", "v"),
            ),
        ];
        for statement in &statements {
            let r = match statement.contains("?1") {
                true => self.conn.execute(statement, [pass]),
                false => self.conn.execute(statement, []),
            };
            self.err(r)?;
        }
        self.count_missed(join)?;
        let mut stmt = self.err(self.conn.prepare(
            "SELECT source, process_order, agent, queue_order, kernel_id, max(occurrence)
             FROM rtl_merged_dispatch GROUP BY source, process_order, agent, queue_order, kernel_id",
        ))?;
        let rows = self.err(stmt.query_map([], |r| {
            Ok((
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?),
                r.get(5)?,
            ))
        }))?;
        self.known_launches = self.err(rows.collect())?;
        Ok(())
    }

    /// Counts one more missed pass for each merged dispatch of an earlier pass that no dispatch
    /// of the pass `join` joined to.
    fn count_missed(&self, join: &PassJoin) -> Result<(), DatabaseError> {
        let r = self.conn.execute(
            "UPDATE rtl_merged SET missed = missed + 1 WHERE id <= ?2 AND id NOT IN
               (SELECT merged_id FROM rtl_dispatch_row WHERE id >= ?1 AND merged_id <= ?2)",
            params![join.first_row, join.merged_before],
        );
        self.err(r).map(|_| ())
    }

    /// The processes with dispatches in `pass`, by pid.
    pub fn pass_processes(&self, pass: u32) -> Result<Vec<u32>, DatabaseError> {
        let mut stmt = self.err(
            self.conn
                .prepare("SELECT DISTINCT pid FROM rtl_dispatch WHERE pass = ?1 ORDER BY pid"),
        )?;
        let rows = self.err(stmt.query_map([pass], |r| r.get(0)))?;
        self.err(rows.collect())
    }

    /// Duration statistics per kernel over the merged dispatches, by total duration (longest
    /// first), then name.
    pub fn kernel_stats(&self) -> Result<Vec<KernelStats>, DatabaseError> {
        // Aggregated in SQL, so memory does not grow with the dispatches.
        let mut stmt = self.err(self.conn.prepare(
            "WITH d AS (SELECT kernel, max(duration_ns, 0) AS ns FROM rtl_dispatches), \
                  k AS (SELECT kernel, count(*) AS calls, sum(ns) AS total, min(ns) AS lo, \
                               max(ns) AS hi, avg(ns) AS mean FROM d GROUP BY kernel) \
             SELECT k.kernel, k.calls, k.total, k.lo, k.hi, \
                    sum((d.ns - k.mean) * (d.ns - k.mean)) \
             FROM d JOIN k ON d.kernel = k.kernel GROUP BY k.kernel",
        ))?;
        let rows = self.err(stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)? as u64,
                r.get::<_, i64>(2)? as u64,
                r.get::<_, i64>(3)? as u64,
                r.get::<_, i64>(4)? as u64,
                r.get::<_, f64>(5)?,
            ))
        }))?;
        let rows: Vec<_> = self.err(rows.collect())?;
        let all: u64 = rows.iter().map(|r| r.2).sum();
        let mut stats: Vec<KernelStats> = rows
            .into_iter()
            .map(
                |(kernel, calls, total_ns, min_ns, max_ns, squares)| KernelStats {
                    kernel,
                    calls,
                    total_ns,
                    average_ns: total_ns as f64 / calls as f64,
                    percent: 100.0 * total_ns as f64 / all.max(1) as f64,
                    min_ns,
                    max_ns,
                    stddev_ns: (squares / calls as f64).sqrt(),
                },
            )
            .collect();
        stats.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then_with(|| a.kernel.cmp(&b.kernel))
        });
        Ok(stats)
    }

    /// The passes recorded, in order.
    pub fn passes(&self) -> Result<Vec<u32>, DatabaseError> {
        let mut stmt = self.err(self.conn.prepare("SELECT id FROM rtl_pass ORDER BY id"))?;
        let rows = self.err(stmt.query_map([], |r| r.get(0)))?;
        self.err(rows.collect())
    }

    /// The counter names of `pass` (all passes when `None`), in first-seen order.
    pub fn counter_names(&self, pass: Option<u32>) -> Result<Vec<String>, DatabaseError> {
        let Some(pass) = pass else {
            let mut stmt = self.err(
                self.conn
                    .prepare("SELECT name FROM rtl_counter ORDER BY id"),
            )?;
            let rows = self.err(stmt.query_map([], |r| r.get(0)))?;
            return self.err(rows.collect());
        };
        let values = &self.values;
        let mut stmt = self.err(self.conn.prepare(&format!(
            "SELECT p.name FROM rtl_counter p WHERE EXISTS (
               SELECT 1 FROM rtl_dispatch k CROSS JOIN {values} v
                 ON {} AND +v.pmc_id = p.id
               WHERE k.pass = ?1) OR EXISTS (
               SELECT 1 FROM rtl_pmc_repeat r JOIN rtl_dispatch k ON k.id = r.dispatch_id
               WHERE r.pmc_id = p.id AND k.pass = ?1) ORDER BY p.id",
            values_of("k", "v"),
        )))?;
        let rows = self.err(stmt.query_map([pass], |r| r.get(0)))?;
        self.err(rows.collect())
    }

    /// What the JSON header says of the profile: counters, kernels, processes and times.
    pub fn facts(&self) -> Result<ProfileFacts, DatabaseError> {
        let mut stmt = self.err(
            self.conn
                .prepare("SELECT id, dimensions FROM rtl_counter ORDER BY id"),
        )?;
        let rows =
            self.err(stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))))?;
        let ids: Vec<(i64, String)> = self.err(rows.collect())?;
        let counters = ids
            .into_iter()
            .zip(self.counter_info()?)
            .map(|((id, dimensions), info)| (id, info, dimensions))
            .collect();
        let mut stmt = self.err(
            self.conn
                .prepare("SELECT id, string FROM rtl_string ORDER BY id"),
        )?;
        let rows = self.err(stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))))?;
        let kernels = self.err(rows.collect())?;
        let mut stmt = self.err(self.conn.prepare(
            "SELECT DISTINCT k.pid FROM rtl_merged_dispatch m JOIN rtl_dispatch k
             ON k.id = m.first_dispatch ORDER BY k.pid",
        ))?;
        let rows = self.err(stmt.query_map([], |r| r.get(0)))?;
        let processes = self.err(rows.collect())?;
        let span = self.err(self.conn.query_row(
            "SELECT coalesce(min(start_ns), 0), coalesce(max(end_ns), 0) FROM rtl_dispatches",
            [],
            |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
        ))?;
        let symbol_ids = self.err(self.conn.query_row(
            "SELECT coalesce(min(k.symbol_id) > 0, 0) FROM rtl_merged_dispatch m
             JOIN rtl_dispatch k ON k.id = m.first_dispatch",
            [],
            |r| r.get(0),
        ))?;
        Ok(ProfileFacts {
            counters,
            kernels,
            processes,
            span,
            run: self.run_info()?,
            symbol_ids,
        })
    }

    fn pmc_name_by_id(&self) -> Result<FastMap<i64, String>, DatabaseError> {
        let mut stmt = self.err(self.conn.prepare("SELECT id, name FROM rtl_counter"))?;
        let rows = self.err(stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))))?;
        self.err(rows.collect())
    }

    fn kernel_names_by_id(&self) -> Result<FastMap<i64, String>, DatabaseError> {
        let mut stmt = self.err(self.conn.prepare("SELECT id, string FROM rtl_string"))?;
        let rows = self.err(stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))))?;
        self.err(rows.collect())
    }

    fn pmc_dimensions(&self) -> Result<FastMap<i64, String>, DatabaseError> {
        let mut stmt = self.err(self.conn.prepare("SELECT id, dimensions FROM rtl_counter"))?;
        let rows = self.err(stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))))?;
        self.err(rows.collect())
    }

    /// Calls `visit` with every dispatch of `pass` in start order; per-dimension values are read
    /// only with `dimensions` (else [`Counter::values`] is empty).
    pub fn for_each_pass_dispatch<E: From<DatabaseError>>(
        &self,
        pass: u32,
        dimensions: bool,
        mut visit: impl FnMut(&Dispatch) -> Result<(), E>,
    ) -> Result<(), E> {
        let dispatches = format!(
            "SELECT k.id, {DISPATCH_COLUMNS} FROM rtl_dispatch k
             WHERE k.pass = ?1 ORDER BY k.start_ns, k.id"
        );
        let values = &self.values;
        let json = positions_column(dimensions, "k");
        let counters = format!(
            "SELECT k.id, v.pmc_id, v.value, {json}
             FROM rtl_dispatch k CROSS JOIN {values} v ON {}
             WHERE k.pass = ?1 ORDER BY k.start_ns, k.id, v.id",
            values_of("k", "v"),
        );
        // The pass's values that repeat an earlier pass's are its own values too.
        let json = repeat_column(dimensions);
        let repeats = format!(
            "SELECT k.id, v.pmc_id, v.value, {json}
             FROM rtl_dispatch k CROSS JOIN rtl_pmc_repeat v ON v.dispatch_id = k.id
             WHERE k.pass = ?1 ORDER BY k.start_ns, k.id, v.pmc_id"
        );
        let counters = match self.has_repeats()? {
            true => vec![counters, repeats],
            false => vec![counters],
        };
        let rows = DispatchRows::Full(&dispatches);
        self.stream(rows, &counters, &[&pass], dimensions, &mut visit)
    }

    /// The values of each pass, when each pass's are in merged-dispatch order and the merged
    /// dispatches' ids in start order (no index in start order needed).
    fn scanned_passes(&self) -> Option<&[PassValues]> {
        let passes = self.pass_values.as_deref()?;
        (self.merged_in_order.0 && passes.iter().all(|p| p.ascending)).then_some(passes)
    }

    /// Whether some value repeats an earlier pass's.
    fn has_repeats(&self) -> Result<bool, DatabaseError> {
        let r = self
            .conn
            .query_row("SELECT EXISTS (SELECT 1 FROM rtl_pmc_repeat)", [], |r| {
                r.get(0)
            });
        self.err(r)
    }

    /// Calls `visit` with every merged dispatch, in start order: the properties of its first
    /// pass and the counters of every pass (per-dimension values only with `dimensions`).
    pub fn for_each_merged<E: From<DatabaseError>>(
        &self,
        dimensions: bool,
        mut visit: impl FnMut(&Dispatch) -> Result<(), E>,
    ) -> Result<(), E> {
        // A database of this rtl-pmc reads each dispatch row with its launch's id, and each
        // launch once.
        let (columns, rows) = match self.launch_table {
            true => (DISPATCH_OWN, "rtl_dispatch_row"),
            false => (DISPATCH_COLUMNS, "rtl_dispatch"),
        };
        let read = |query| DispatchRows::of(self.launch_table, query);
        if let (Some(passes), false) = (self.scanned_passes(), dimensions) {
            // Each pass's values in one scan, by row id: in merged-dispatch order.
            let dispatches = format!(
                "SELECT m.id, {columns}
                 FROM rtl_merged_dispatch m CROSS JOIN {rows} k ON k.id = m.first_dispatch
                 ORDER BY m.id"
            );
            let counters: Vec<String> = passes
                .iter()
                .map(|p| {
                    format!(
                        "SELECT event_id, pmc_id, value FROM {} WHERE id BETWEEN {} AND {}
                         ORDER BY id",
                        self.values, p.first, p.last
                    )
                })
                .collect();
            return self.stream(read(&dispatches), &counters, &[], false, &mut visit);
        }
        self.index_merged()?;
        // Without the index in start order, the ids are in start order.
        let r = self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'rtl_merged_dispatch_start')",
            [],
            |r| r.get::<_, bool>(0),
        );
        let order = match self.err(r)? {
            true => "m.start_ns, m.id",
            false => "m.id",
        };
        // CROSS JOIN keeps this join order: merged dispatches by start, then each pass's
        // dispatch by row id, then its counters by id (the values reported).
        let dispatches = format!(
            "SELECT m.id, {columns}
             FROM rtl_merged_dispatch m CROSS JOIN {rows} k ON k.id = m.first_dispatch
             ORDER BY {order}"
        );
        let values = &self.values;
        let json = positions_column(dimensions, "k2");
        let counters = format!(
            "SELECT m.id, v.pmc_id, v.value, {json}
             FROM rtl_merged_dispatch m CROSS JOIN {rows} k2 ON k2.merged_id = m.id
             CROSS JOIN {values} v ON {}
             ORDER BY {order}",
            values_of("k2", "v"),
        );
        self.stream(read(&dispatches), &[counters], &[], dimensions, &mut visit)
    }

    /// Zips the rows of `dispatches` (a key, then [`DISPATCH_COLUMNS`] or [`DISPATCH_OWN`]) with
    /// those of each of
    /// `counters` (the key, counter id, total, per-position values), all in the same key order, and calls
    /// `visit` with each dispatch and its counters (in counter order). One cursor for the
    /// dispatches and one per counter query, so each dispatch's columns are read once rather
    /// than once per counter.
    fn stream<E: From<DatabaseError>>(
        &self,
        dispatches: DispatchRows<'_>,
        counters: &[String],
        params: &[&dyn rusqlite::ToSql],
        with_dimensions: bool,
        visit: &mut dyn FnMut(&Dispatch) -> Result<(), E>,
    ) -> Result<(), E> {
        let names = self.pmc_name_by_id()?;
        let dimensions = self.pmc_dimensions()?;
        let kernels = self.kernel_names_by_id()?;
        // The first counter query, when the queries have neither parameters nor per-position
        // values, runs on the second connection of a reader (see [`Database::commit_while`]), on
        // a thread of its own.
        let aside = match (counters, params, with_dimensions) {
            ([query, ..], [], false) => self.aside.take().map(|conn| (conn, query)),
            _ => None,
        };
        let here = match aside {
            Some(_) => &counters[1..],
            None => counters,
        };
        let (dispatches, mut launches) = match dispatches {
            DispatchRows::Full(query) => (query, None),
            DispatchRows::Own(query) => (query, Some(self.err(LaunchReader::new(&self.conn))?)),
        };
        let mut dispatch_stmt = self.err(self.conn.prepare(dispatches))?;
        let mut counter_stmts = here
            .iter()
            .map(|q| self.err(self.conn.prepare(q)))
            .collect::<Result<Vec<_>, _>>()?;
        std::thread::scope(|scope| {
            let mut cursors = Vec::with_capacity(counters.len());
            let reading = aside.map(|(conn, query)| {
                let (to, from) = std::sync::mpsc::sync_channel(4);
                cursors.push(CounterRows {
                    source: CounterSource::Batches {
                        batch: Vec::new().into_iter(),
                        from,
                    },
                    ahead: None,
                    positions: String::new(),
                });
                scope.spawn(move || read_counters(conn, query, to))
            });
            // An error here drops the cursors, which stops the reading thread.
            for stmt in &mut counter_stmts {
                cursors.push(CounterRows {
                    source: CounterSource::Rows(self.err(stmt.query(params))?),
                    ahead: None,
                    positions: String::new(),
                });
            }
            let zipped = (|| {
                let mut rows = self.err(dispatch_stmt.query(params))?;
                for cursor in &mut cursors {
                    self.err(cursor.advance(with_dimensions))?;
                }
                // One dispatch and its counters are reused from row to row, so their strings
                // and vectors are allocated once rather than per dispatch and counter.
                let mut d = Dispatch::default();
                let mut ids: Vec<i64> = Vec::new();
                while let Some(row) = self.err(rows.next())? {
                    let key: i64 = self.err(row.get(0))?;
                    let filled = match launches.as_mut() {
                        Some(launches) => row_dispatch_own(row, launches, &kernels, &mut d),
                        None => row_dispatch(row, &kernels, &mut d),
                    };
                    self.err(filled)?;
                    ids.clear();
                    for cursor in &mut cursors {
                        while let Some((_, pmc, total)) = cursor.ahead.filter(|c| c.0 == key) {
                            if ids.len() == d.counters.len() {
                                d.counters.push(Counter::default());
                            }
                            let counter = &mut d.counters[ids.len()];
                            ids.push(pmc);
                            counter.total = total;
                            counter.name.clear();
                            counter
                                .name
                                .push_str(names.get(&pmc).map_or("", String::as_str));
                            counter.dimensions.clear();
                            counter
                                .dimensions
                                .push_str(dimensions.get(&pmc).map_or("", String::as_str));
                            counter.values.clear();
                            if with_dimensions {
                                counter.values = dimensions_of(&cursor.positions);
                                if counter.values.is_empty() {
                                    counter.values.push(total);
                                }
                            }
                            self.err(cursor.advance(with_dimensions))?;
                        }
                    }
                    d.counters.truncate(ids.len());
                    if !ids.is_sorted() {
                        let mut by_id: Vec<(i64, Counter)> =
                            ids.drain(..).zip(d.counters.drain(..)).collect();
                        by_id.sort_by_key(|c| c.0);
                        d.counters.extend(by_id.into_iter().map(|c| c.1));
                    }
                    visit(&d)?;
                }
                Ok(())
            })();
            // The reading thread stops once its rows are no longer taken.
            drop(cursors);
            if let Some(reading) = reading {
                let conn = reading
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                self.aside.replace(Some(conn));
            }
            zipped
        })
    }

    /// The name of every kernel id.
    fn kernel_names(&self) -> FastMap<i64, &str> {
        self.strings
            .iter()
            .map(|(name, &id)| (id, name.as_str()))
            .collect()
    }

    /// Kernels by total time (what the `rtl_top` view answers), at most `limit`, over the dispatches
    /// inserted through this handle.
    pub fn top(&self, limit: usize) -> Result<Vec<KernelTime>, DatabaseError> {
        let names = self.kernel_names();
        let by_kernel = self.totals.by_kernel();
        let all: i64 = by_kernel.values().map(|l| l.busy_ns).sum();
        let mut top: Vec<KernelTime> = by_kernel
            .iter()
            .map(|(id, l)| KernelTime {
                kernel: names.get(id).copied().unwrap_or_default().to_string(),
                calls: l.count,
                total_ns: l.busy_ns as u64,
                average_ns: l.busy_ns as f64 / l.count as f64,
                percent: 100.0 * l.busy_ns as f64 / all.max(1) as f64,
            })
            .collect();
        top.sort_by(|a, b| {
            (b.total_ns as i64)
                .cmp(&(a.total_ns as i64))
                .then_with(|| a.kernel.cmp(&b.kernel))
        });
        top.truncate(limit);
        Ok(top)
    }

    /// Per-GPU busy time (what the `rtl_busy` view answers), over the dispatches inserted through
    /// this handle.
    pub fn busy(&self) -> Result<Vec<AgentBusy>, DatabaseError> {
        let agents = self.agents()?;
        let mut busy: Vec<AgentBusy> = self
            .totals
            .by_agent()
            .into_iter()
            .map(|(agent, l)| AgentBusy {
                agent,
                name: agents
                    .iter()
                    .find(|a| a.node_id == agent)
                    .map(|a| a.name.clone())
                    .unwrap_or_default(),
                dispatches: l.count,
                busy_ns: l.busy_ns as u64,
                busy_percent: 100.0 * l.busy_ns as f64 / (l.last_ns - l.first_ns).max(1) as f64,
            })
            .collect();
        busy.sort_by_key(|b| b.agent);
        Ok(busy)
    }

    /// The counters of `kernel` in counter order (what the `rtl_kernel_counters` view's `value` and
    /// `unit` answer), over the dispatches inserted through this handle: a derived counter
    /// recomputed from its inputs summed over the kernel's dispatches (see
    /// [`Database::add_kernel_derived`]), any other the sum of its reported values.
    pub fn kernel_counters(&self, kernel: &str) -> Result<Vec<KernelCounter>, DatabaseError> {
        let Some(&kernel) = self.strings.get(kernel) else {
            return Ok(Vec::new());
        };
        let mut totals: Vec<(i64, f64)> = self
            .totals
            .counters
            .iter()
            .filter(|((k, _), _)| *k == kernel)
            .map(|(&(_, pmc), sum)| {
                let value = match self.totals.derived.get(&(kernel, pmc)) {
                    Some(&(_, weighted, dispatches)) => weighted / dispatches.max(1) as f64,
                    None => sum.value(),
                };
                (pmc, value)
            })
            .collect();
        totals.sort_by_key(|t| t.0);
        let units = self.counter_units()?;
        Ok(totals
            .into_iter()
            .map(|(pmc, value)| {
                let name = self
                    .pmcs
                    .iter()
                    .find(|(_, &id)| id == pmc)
                    .map(|n| n.0.clone())
                    .unwrap_or_default();
                let unit = units
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|u| u.1.clone())
                    .unwrap_or_default();
                KernelCounter { name, value, unit }
            })
            .collect())
    }

    /// Records the per-kernel value of a derived counter in a pass, recomputed from its inputs
    /// summed over the kernel's dispatches (on GPUs of one topology): a ratio of sums, never a
    /// sum of ratios. The summary and the `rtl_kernel_counters` view take each kernel's from the
    /// earliest pass that has one; values of one pass for several topologies (or, with
    /// `rtl-pmc merge`, several runs) are weighed by their dispatches.
    pub fn add_kernel_derived(&mut self, derived: &KernelDerived) -> Result<(), DatabaseError> {
        let KernelDerived {
            pass,
            ref kernel,
            ref counter,
            value,
            dispatches,
        } = *derived;
        let kernel_id = self.string_id(kernel)?;
        let pmc = self.counter_id(&Counter {
            name: counter.to_string(),
            ..Counter::default()
        })?;
        let r = self.conn.execute(
            "INSERT INTO rtl_kernel_derived(pass, kernel_id, pmc_id, value, dispatches)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![pass, kernel_id, pmc, value, dispatches as i64],
        );
        self.err(r)?;
        let entry = self
            .totals
            .derived
            .entry((kernel_id, pmc))
            .or_insert((pass, 0.0, 0));
        // The earliest pass counts, as in the rtl_kernel_derived_value view, whatever order passes come in.
        if pass < entry.0 {
            *entry = (pass, 0.0, 0);
        }
        if entry.0 == pass {
            entry.1 += value * dispatches as f64;
            entry.2 += dispatches;
        }
        Ok(())
    }

    /// Every per-kernel derived value recorded.
    pub fn kernel_derived(&self) -> Result<Vec<KernelDerived>, DatabaseError> {
        let mut stmt = self.err(self.conn.prepare(
            "SELECT d.pass, s.string, p.name, d.value, d.dispatches FROM rtl_kernel_derived d
             JOIN rtl_string s ON s.id = d.kernel_id JOIN rtl_counter p ON p.id = d.pmc_id
             ORDER BY d.rowid",
        ))?;
        let rows = self.err(stmt.query_map([], |r| {
            Ok(KernelDerived {
                pass: r.get(0)?,
                kernel: r.get(1)?,
                counter: r.get(2)?,
                value: r.get(3)?,
                dispatches: r.get::<_, i64>(4)? as u64,
            })
        }))?;
        self.err(rows.collect())
    }

    /// Records what the catalog says of each named counter.
    pub fn set_counter_info(&mut self, info: &[CounterInfo]) -> Result<(), DatabaseError> {
        for c in info {
            let r = self.conn.execute(
                "UPDATE rtl_counter SET unit = ?2, description = ?3, block = ?4, expression = ?5,
                 derived = ?6 WHERE name = ?1",
                params![
                    c.name,
                    c.unit,
                    c.description,
                    c.block,
                    c.expression,
                    c.derived
                ],
            );
            self.err(r)?;
        }
        Ok(())
    }

    /// What the catalog said of every counter, in counter order.
    pub fn counter_info(&self) -> Result<Vec<CounterInfo>, DatabaseError> {
        let mut stmt = self.err(self.conn.prepare(
            "SELECT name, unit, description, block, expression, derived FROM rtl_counter
             ORDER BY id",
        ))?;
        let rows = self.err(stmt.query_map([], |r| {
            Ok(CounterInfo {
                name: r.get(0)?,
                unit: r.get(1)?,
                description: r.get(2)?,
                block: r.get(3)?,
                expression: r.get(4)?,
                derived: r.get(5)?,
            })
        }))?;
        self.err(rows.collect())
    }

    /// The unit of every counter with one, by name.
    fn counter_units(&self) -> Result<Vec<(String, String)>, DatabaseError> {
        Ok(self
            .counter_info()?
            .into_iter()
            .filter(|c| !c.unit.is_empty())
            .map(|c| (c.name, c.unit))
            .collect())
    }

    /// Records the application's command line and environment, and the processes' parent, for
    /// rocpd's process rows.
    pub fn set_run(&mut self, run: &RunInfo) -> Result<(), DatabaseError> {
        let command = serde_json::to_string(&run.command).unwrap_or_default();
        let environment = serde_json::to_string(&run.environment).unwrap_or_default();
        let ppid = run.ppid.map_or(String::new(), |p| p.to_string());
        for (tag, value) in [
            ("command", command),
            ("environment", environment),
            ("ppid", ppid),
        ] {
            let r = self.conn.execute(
                "INSERT OR REPLACE INTO rtl_run(tag, value) VALUES (?1, ?2)",
                params![tag, value],
            );
            self.err(r)?;
        }
        Ok(())
    }

    /// What [`Database::set_run`] recorded (empty when nothing was).
    pub fn run_info(&self) -> Result<RunInfo, DatabaseError> {
        let mut stmt = self.err(self.conn.prepare("SELECT tag, value FROM rtl_run"))?;
        let rows =
            self.err(stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))))?;
        let mut run = RunInfo::default();
        for row in rows {
            let (tag, value) = self.err(row)?;
            match tag.as_str() {
                "command" => run.command = serde_json::from_str(&value).unwrap_or_default(),
                "environment" => run.environment = serde_json::from_str(&value).unwrap_or_default(),
                "ppid" => run.ppid = value.parse().ok(),
                _ => {}
            }
        }
        Ok(run)
    }

    /// The dispatches not joined in every pass, over the dispatches inserted through this
    /// handle: merged dispatches that lack a pass, and per pass how many of its dispatches are
    /// in them.
    pub fn unmatched(&self) -> Result<Unmatched, DatabaseError> {
        let passes = self.passes()?;
        let all = passes.len() as i64;
        let r = self.conn.query_row(
            "SELECT count(*), coalesce(sum(passes < ?1), 0) FROM rtl_merged_dispatch",
            [all],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
        );
        let (merged, incomplete) = self.err(r)?;
        // Only the dispatches of incomplete merged dispatches are read, through the index (made
        // only then).
        let alone: Vec<(u32, u64)> = match incomplete {
            0 => Vec::new(),
            _ => {
                self.index_merged()?;
                let mut stmt = self.err(self.conn.prepare(
                    "SELECT k.pass, count(*) FROM rtl_merged_dispatch m
                     CROSS JOIN rtl_dispatch k ON k.merged_id = m.id
                     WHERE m.passes < ?1 GROUP BY k.pass",
                ))?;
                let rows = self.err(stmt.query_map([all], |r| {
                    Ok((r.get::<_, u32>(0)?, r.get::<_, i64>(1)? as u64))
                }))?;
                self.err(rows.collect())?
            }
        };
        let per_pass = passes
            .iter()
            .map(|&p| {
                let dispatches = self.totals.pass_dispatches.get(&p).copied().unwrap_or(0);
                let alone = alone.iter().find(|c| c.0 == p).map_or(0, |c| c.1);
                (p, dispatches, alone)
            })
            .collect();
        Ok(Unmatched {
            merged: merged as u64,
            incomplete: incomplete as u64,
            per_pass,
        })
    }

    /// Finishes the database: with `keep`, renames it to its final name and returns that; else
    /// removes it.
    pub fn commit(self, keep: bool) -> Result<Option<PathBuf>, DatabaseError> {
        self.commit_while(keep, |_| Ok::<_, DatabaseError>(()))
            .map(|(path, ())| path)
    }

    /// [`Database::commit`] while `read` reads the database as the passes left it (the merged
    /// files): with `keep`, on a second connection and a thread of its own while this one writes
    /// rocpd's tables, which the read never sees (the database is in WAL mode for that time,
    /// the read's snapshot taken before rocpd's tables are written); else before the database
    /// is removed. The database keeps its temporary name, and is removed, when `read` fails,
    /// whose error comes first.
    pub fn commit_while<T: Send, E: From<DatabaseError> + Send>(
        mut self,
        keep: bool,
        read: impl FnOnce(&Database) -> Result<T, E> + Send,
    ) -> Result<(Option<PathBuf>, T), E> {
        if self.in_transaction {
            if let Err(e) = self.err(self.conn.execute_batch("COMMIT")) {
                read(&self)?;
                return Err(e.into());
            }
            self.in_transaction = false;
        }
        if !keep {
            return Ok((None, read(&self)?));
        }
        // The merged files read each pass's values in one scan when they can, without the
        // index of the dispatch rows by merged dispatch.
        let reader = match self.scanned_passes() {
            Some(_) => self.reader(),
            None => self.index_merged().and_then(|()| self.reader()),
        };
        let reader = match reader {
            Ok(reader) => reader,
            Err(e) => {
                read(&self)?;
                return Err(e.into());
            }
        };
        let (read, rocpd) = std::thread::scope(|scope| {
            let reading = scope.spawn(move || read(&reader));
            let rocpd = self.write_rocpd();
            let read = reading
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (read, rocpd)
        });
        let read = read?;
        rocpd?;
        Ok((self.finish()?, read))
    }

    /// A handle that reads the database as it is now (on two connections), while this one goes
    /// on writing: the database leaves its exclusive lock for WAL mode (no automatic checkpoints,
    /// one at [`Database::finish`]), and the reader's snapshot is taken at once.
    fn reader(&self) -> Result<Database, DatabaseError> {
        self.err(self.conn.execute_batch(
            "PRAGMA locking_mode=NORMAL; SELECT count(*) FROM rtl_pass;
             PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;",
        ))?;
        // Two connections for the reader (dispatches and counters, see [`Database::stream`]):
        // their page caches and this one's together are the size of the one while inserting.
        let this = cache_size(CACHE_KIB / 2);
        self.err(self.conn.execute_batch(&this))?;
        let open = || {
            let conn = self.err(Connection::open_with_flags(
                &self.temporary,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            ))?;
            self.err(conn.execute_batch(&format!(
                "{} PRAGMA temp_store=FILE; PRAGMA query_only=ON; BEGIN;
                 SELECT count(*) FROM rtl_pass;",
                cache_size(CACHE_KIB / 4)
            )))?;
            Ok::<_, DatabaseError>(conn)
        };
        let conn = open()?;
        let aside = open()?;
        let mut reader = Database::on(conn, self.target.clone(), self.temporary.clone(), true);
        reader.values = self.values.clone();
        reader.guid = self.guid.clone();
        reader.values_made = self.values_made;
        reader.pass_values = self.scanned_passes().map(<[PassValues]>::to_vec);
        reader.merged_in_order = self.merged_in_order;
        reader.launch_table = self.launch_table;
        reader.strings = self.strings.clone();
        reader.pmcs = self.pmcs.clone();
        reader.aside.replace(Some(aside));
        Ok(reader)
    }

    /// Writes rocpd's tables from rtl-pmc's own, in one transaction.
    fn write_rocpd(&mut self) -> Result<(), DatabaseError> {
        let run = self.run_info()?;
        // The projection's temporary tables get a small page cache of their own, so that
        // memory stays flat however many dispatches there are.
        self.err(
            self.conn
                .execute_batch("PRAGMA temp.cache_size=-2048; BEGIN"),
        )?;
        // The roctx tables exist once a pass had regions; the projection reads them anyway.
        self.err(self.conn.execute_batch(REGION_SCHEMA))?;
        self.make_values()?;
        let agents: Vec<(i64, u32)> = self.first_agents.iter().map(|(&p, &a)| (p, a)).collect();
        let described: Vec<(u32, String)> =
            crate::agent_info::agents_json(&self.agents()?, &self.cpus()?)
                .into_iter()
                .map(|(node, agent)| (node, agent.to_string()))
                .collect();
        let first = self.first_rows.as_ref();
        self.err(rocpd::write(
            &self.conn, &self.guid, &run, &agents, &described, first,
        ))?;
        // The planner's statistics, from a sample of each index, gathered here rather than in
        // [`Database::finish`]: the merged files are usually still being read, so this thread
        // would otherwise wait.
        self.err(
            self.conn
                .execute_batch("PRAGMA analysis_limit=1000; ANALYZE; PRAGMA optimize; COMMIT"),
        )
    }

    /// Leaves WAL mode (its log copied into the database and removed) and renames the database
    /// to its final name.
    fn finish(&mut self) -> Result<Option<PathBuf>, DatabaseError> {
        self.err(
            self.conn
                .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=OFF;"),
        )?;
        std::fs::rename(&self.temporary, &self.target).map_err(|source| DatabaseError::Io {
            path: self.target.clone(),
            source,
        })?;
        self.committed = true;
        Ok(Some(self.target.clone()))
    }
}
