//! The application's roctx markers and ranges in the database, beside the dispatches: each
//! process's events (raw record region lines) paired into regions, and each dispatch's enclosing
//! push/pop ranges.
//!
//! | table | columns |
//! |---|---|
//! | `rtl_region` | `id, pass, pid, tid, kind` (`range` for push/pop, `process_range` for start/stop, `mark`, `pause`, `resume`, `name_thread`, `name_hsa_agent`, `name_hip_device`, `name_hip_stream`, and the misuses `pop` and `stop`, and `dropped`)`, name, start_ns, end_ns, end_tid` (the thread that ended it)`, depth` (push/pop level from 0, else -1)`, parent_id` (the enclosing push/pop range)`, roctx_id` (the application's range id)`, object` (the agent, device, stream or thread id of a naming or control call)`, problem` (what was wrong, NULL when nothing) |
//! | `rtl_dispatch_range` | `pass, pid, dispatch_id, depth, region_id, innermost`: each dispatch's enclosing push/pop ranges, outermost first |
//! | `rtl_dispatch_region` | `dispatch_row_id, region_id`: each `rtl_dispatch` row's innermost enclosing range |

use std::collections::HashMap;
use std::path::Path;

use rtl_pmc::dispatch::records::{Region, RegionKind};
use rusqlite::{params, Connection};

use crate::model::RegionRow;
use crate::store::database::{Database, DatabaseError, REGION_SCHEMA as SCHEMA};

/// The misuses a region can record.
pub const UNBALANCED_POP: &str = "roctxRangePop with no range open";
/// A stop naming no open range.
pub const UNKNOWN_STOP: &str = "roctxRangeStop of an id no open range has";
/// A range the process never ended.
pub const OPEN_AT_EXIT: &str = "open at exit";
/// A message whose bytes are not UTF-8 (stored with U+FFFD).
pub const NOT_UTF8: &str = "name not UTF-8";
/// Events the roctx library could not keep.
pub const DROPPED: &str = "events dropped";

fn kind_name(kind: RegionKind) -> &'static str {
    match kind {
        RegionKind::Mark => "mark",
        RegionKind::Push | RegionKind::Pop => "range",
        RegionKind::PopEmpty => "pop",
        RegionKind::Start | RegionKind::Stop => "process_range",
        RegionKind::StopUnknown => "stop",
        RegionKind::Pause => "pause",
        RegionKind::Resume => "resume",
        RegionKind::NameThread => "name_thread",
        RegionKind::NameHsaAgent => "name_hsa_agent",
        RegionKind::NameHipDevice => "name_hip_device",
        RegionKind::NameHipStream => "name_hip_stream",
        RegionKind::Dropped => "dropped",
        RegionKind::Exit => "exit",
    }
}

/// Pairs one process's events (in the order it recorded them) into regions: a push with its
/// pop, a start with its stop; ranges still open at the end close at the process's exit (or its
/// last event, when it was killed) marked [`OPEN_AT_EXIT`].
pub fn pair(pass: u32, events: &[Region]) -> Vec<RegionRow> {
    let mut rows: Vec<RegionRow> = Vec::new();
    let mut stacks: HashMap<u32, Vec<usize>> = HashMap::new();
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut end = 0;
    for e in events {
        end = end.max(e.timestamp);
        let row = |rows: &Vec<RegionRow>, parent: Option<usize>, problem: Option<&str>| {
            let problem = problem.or((!e.utf8).then_some(NOT_UTF8));
            RegionRow {
                id: rows.len() as i64,
                pass,
                pid: e.pid,
                tid: e.tid,
                kind: kind_name(e.kind).to_string(),
                name: e.name.clone(),
                start_ns: e.timestamp,
                end_ns: e.timestamp,
                end_tid: e.tid,
                depth: e.depth,
                parent: parent.map(|p| p as i64),
                roctx_id: e.id,
                object: e.object,
                problem: problem.map(str::to_string),
            }
        };
        match e.kind {
            RegionKind::Push | RegionKind::Start => {
                let parent = match e.kind {
                    RegionKind::Push => stacks.get(&e.tid).and_then(|s| s.last()).copied(),
                    _ => None,
                };
                let r = row(&rows, parent, None);
                open.insert(e.id, rows.len());
                if e.kind == RegionKind::Push {
                    stacks.entry(e.tid).or_default().push(rows.len());
                }
                rows.push(r);
            }
            RegionKind::Pop | RegionKind::Stop => {
                if let Some(i) = open.remove(&e.id) {
                    rows[i].end_ns = e.timestamp;
                    rows[i].end_tid = e.tid;
                    if let Some(stack) = stacks.get_mut(&rows[i].tid) {
                        stack.retain(|&j| j != i);
                    }
                }
            }
            RegionKind::Exit => {}
            RegionKind::PopEmpty => rows.push(row(&rows, None, Some(UNBALANCED_POP))),
            RegionKind::StopUnknown => rows.push(row(&rows, None, Some(UNKNOWN_STOP))),
            RegionKind::Dropped => rows.push(row(&rows, None, Some(DROPPED))),
            _ => {
                let parent = stacks.get(&e.tid).and_then(|s| s.last()).copied();
                rows.push(row(&rows, parent, None));
            }
        }
    }
    let mut still_open: Vec<usize> = open.into_values().collect();
    still_open.sort_unstable();
    for i in still_open {
        rows[i].end_ns = end;
        rows[i].problem = Some(match rows[i].problem.take() {
            Some(p) => format!("{OPEN_AT_EXIT}; {p}"),
            None => OPEN_AT_EXIT.to_string(),
        });
    }
    rows
}

fn sqlite(path: &Path) -> impl Fn(rusqlite::Error) -> DatabaseError + '_ {
    move |source| DatabaseError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

/// Stores the regions of pass `pass`, one event list per process, and the enclosing ranges of
/// its dispatches (`(pid, dispatch id, range ids outermost first)`); links each dispatch row of
/// the pass to its innermost range.
pub fn store_pass(
    db: &Database,
    pass: u32,
    processes: &[Vec<Region>],
    dispatch_ranges: &[(u32, u64, Vec<u64>)],
) -> Result<(), DatabaseError> {
    let (conn, path) = db.connection();
    let error = sqlite(path);
    if processes.iter().all(Vec::is_empty) {
        return Ok(());
    }
    store(conn, pass, processes, dispatch_ranges).map_err(error)
}

fn store(
    conn: &Connection,
    pass: u32,
    processes: &[Vec<Region>],
    dispatch_ranges: &[(u32, u64, Vec<u64>)],
) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)?;
    let tx = conn.unchecked_transaction()?;
    let first = next_region(&tx)?;
    let mut ids: HashMap<(u32, u64), i64> = HashMap::new();
    {
        let mut insert = tx.prepare(INSERT_REGION)?;
        for events in processes {
            let rows = pair(pass, events);
            let mut row_ids: Vec<i64> = Vec::with_capacity(rows.len());
            for r in &rows {
                let parent = r.parent.map(|p| row_ids[p as usize]);
                insert_region(&mut insert, r, parent)?;
                let id = tx.last_insert_rowid();
                row_ids.push(id);
                if r.kind == "range" || r.kind == "process_range" {
                    ids.insert((r.pid, r.roctx_id), id);
                }
            }
        }
        let mut range = tx.prepare(INSERT_RANGE)?;
        for (pid, dispatch, stack) in dispatch_ranges {
            for (depth, id) in stack.iter().enumerate() {
                if let Some(region) = ids.get(&(*pid, *id)) {
                    let innermost = depth + 1 == stack.len();
                    range.execute(params![
                        pass,
                        pid,
                        *dispatch as i64,
                        depth as i64,
                        region,
                        innermost
                    ])?;
                }
            }
        }
    }
    link_innermost(&tx, pass, first)?;
    tx.commit()
}

/// Copies every region of `source` (a profile's database) into `db`, whose dispatches of the
/// same passes were copied from it with their process and dispatch ids (`rtl-pmc merge`), and
/// links them to those dispatches.
pub fn copy(source: &Database, db: &Database) -> Result<(), DatabaseError> {
    let (from, from_path) = source.connection();
    let (to, to_path) = db.connection();
    let rows = (|| -> rusqlite::Result<Option<(Vec<RegionRow>, Vec<DispatchRange>)>> {
        if !has_regions(from)? {
            return Ok(None);
        }
        let mut stmt = from.prepare(&format!("{SELECT_REGIONS} ORDER BY id"))?;
        let regions = stmt
            .query_map([], region_row)?
            .collect::<Result<Vec<_>, _>>()?;
        let mut stmt = from.prepare(
            "SELECT pass, pid, dispatch_id, depth, region_id, innermost FROM rtl_dispatch_range",
        )?;
        let ranges = stmt
            .query_map([], |r| {
                Ok(DispatchRange {
                    pass: r.get(0)?,
                    pid: r.get(1)?,
                    dispatch_id: r.get(2)?,
                    depth: r.get(3)?,
                    region_id: r.get(4)?,
                    innermost: r.get(5)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some((regions, ranges)))
    })()
    .map_err(sqlite(from_path))?;
    let Some((regions, ranges)) = rows else {
        return Ok(());
    };
    (|| -> rusqlite::Result<()> {
        to.execute_batch(SCHEMA)?;
        let tx = to.unchecked_transaction()?;
        let first = next_region(&tx)?;
        let mut ids: HashMap<i64, i64> = HashMap::new();
        {
            let mut insert = tx.prepare(INSERT_REGION)?;
            for r in &regions {
                let parent = r.parent.and_then(|p| ids.get(&p).copied());
                insert_region(&mut insert, r, parent)?;
                ids.insert(r.id, tx.last_insert_rowid());
            }
            let mut insert = tx.prepare(INSERT_RANGE)?;
            for d in &ranges {
                if let Some(region) = ids.get(&d.region_id) {
                    insert.execute(params![
                        d.pass,
                        d.pid,
                        d.dispatch_id,
                        d.depth,
                        region,
                        d.innermost
                    ])?;
                }
            }
        }
        let mut passes: Vec<u32> = regions.iter().map(|r| r.pass).collect();
        passes.sort_unstable();
        passes.dedup();
        for pass in passes {
            link_innermost(&tx, pass, first)?;
        }
        tx.commit()
    })()
    .map_err(sqlite(to_path))
}

/// One row of `rtl_dispatch_range`.
struct DispatchRange {
    pass: u32,
    pid: u32,
    dispatch_id: i64,
    depth: i64,
    region_id: i64,
    innermost: bool,
}

const SELECT_REGIONS: &str = "SELECT id, pass, pid, tid, kind, name, start_ns, end_ns, end_tid,
  depth, parent_id, roctx_id, object, problem FROM rtl_region";

const INSERT_REGION: &str = "INSERT INTO rtl_region(pass, pid, tid, kind, name, start_ns, end_ns,
  end_tid, depth, parent_id, roctx_id, object, problem)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";

const INSERT_RANGE: &str = "INSERT INTO rtl_dispatch_range(pass, pid, dispatch_id, depth,
  region_id, innermost) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

fn insert_region(
    insert: &mut rusqlite::Statement<'_>,
    r: &RegionRow,
    parent: Option<i64>,
) -> rusqlite::Result<usize> {
    insert.execute(params![
        r.pass,
        r.pid,
        r.tid,
        r.kind,
        r.name,
        r.start_ns as i64,
        r.end_ns as i64,
        r.end_tid,
        r.depth,
        parent,
        r.roctx_id as i64,
        r.object as i64,
        r.problem,
    ])
}

/// Links each dispatch row of `pass` to its innermost enclosing range, for the ranges from row
/// `first_region` on (those just stored).
fn link_innermost(conn: &Connection, pass: u32, first_region: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "INSERT INTO rtl_dispatch_region(dispatch_row_id, region_id)
         SELECT d.id, r.region_id FROM rtl_dispatch_range r
           JOIN rtl_launch l ON l.pass = r.pass AND l.pid = r.pid
           JOIN rtl_dispatch_row d ON d.launch_id = l.id AND d.dispatch_id = r.dispatch_id
         WHERE r.pass = ?1 AND r.innermost AND r.region_id >= ?2",
        params![pass, first_region],
    )
}

/// The row id the next region will get.
fn next_region(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT COALESCE(MAX(id), 0) + 1 FROM rtl_region", [], |r| {
        r.get(0)
    })
}

fn region_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RegionRow> {
    Ok(RegionRow {
        id: r.get(0)?,
        pass: r.get(1)?,
        pid: r.get(2)?,
        tid: r.get(3)?,
        kind: r.get(4)?,
        name: r.get(5)?,
        start_ns: r.get::<_, i64>(6)? as u64,
        end_ns: r.get::<_, i64>(7)? as u64,
        end_tid: r.get(8)?,
        depth: r.get(9)?,
        parent: r.get(10)?,
        roctx_id: r.get::<_, i64>(11)? as u64,
        object: r.get::<_, i64>(12)? as u64,
        problem: r.get(13)?,
    })
}

fn has_regions(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE name = 'rtl_region'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// The regions of the first pass that has any (every pass runs the same application), by
/// begin time: the timeline and the JSON show these beside the merged dispatches.
pub fn first_pass(db: &Database) -> Result<Vec<RegionRow>, DatabaseError> {
    let (conn, path) = db.connection();
    let load = || -> rusqlite::Result<Vec<RegionRow>> {
        if !has_regions(conn)? {
            return Ok(Vec::new());
        }
        let mut stmt = conn.prepare(&format!(
            "{SELECT_REGIONS} WHERE pass = (SELECT MIN(pass) FROM rtl_region) ORDER BY start_ns, id"
        ))?;
        let rows = stmt.query_map([], region_row)?;
        rows.collect()
    };
    load().map_err(sqlite(path))
}

/// Per dispatch of the first pass with regions, its enclosing ranges' row ids, outermost first:
/// `(pid, dispatch id, region ids)`.
pub fn first_pass_dispatch_ranges(
    db: &Database,
) -> Result<Vec<(u32, u64, Vec<i64>)>, DatabaseError> {
    let (conn, path) = db.connection();
    let load = || -> rusqlite::Result<Vec<(u32, u64, Vec<i64>)>> {
        if !has_regions(conn)? {
            return Ok(Vec::new());
        }
        let mut stmt = conn.prepare(
            "SELECT pid, dispatch_id, region_id FROM rtl_dispatch_range
             WHERE pass = (SELECT MIN(pass) FROM rtl_region) ORDER BY pid, dispatch_id, depth",
        )?;
        let mut out: Vec<(u32, u64, Vec<i64>)> = Vec::new();
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, u32>(0)?,
                r.get::<_, i64>(1)? as u64,
                r.get::<_, i64>(2)?,
            ))
        })?;
        for row in rows {
            let (pid, dispatch, region) = row?;
            match out.last_mut() {
                Some(last) if last.0 == pid && last.1 == dispatch => last.2.push(region),
                _ => out.push((pid, dispatch, vec![region])),
            }
        }
        Ok(out)
    };
    load().map_err(sqlite(path))
}

/// The summary's roctx lines: what was captured in the first pass with regions, and each kind
/// of misuse with how often it happened.
pub fn summary_lines(db: &Database) -> Result<Vec<String>, DatabaseError> {
    let rows = first_pass(db)?;
    let Some(pass) = rows.first().map(|r| r.pass) else {
        return Ok(Vec::new());
    };
    let count = |kinds: &[&str]| {
        rows.iter()
            .filter(|r| kinds.contains(&r.kind.as_str()))
            .count()
    };
    let mut processes: Vec<u32> = rows.iter().map(|r| r.pid).collect();
    processes.sort_unstable();
    processes.dedup();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut lines = vec![format!(
        "rtl-pmc: roctx (pass {pass}): {}, {}, {} in {}",
        plural(count(&["range", "process_range"]), "range", "ranges"),
        plural(count(&["mark"]), "mark", "marks"),
        plural(
            count(&["pause", "resume"]),
            "pause or resume",
            "pauses and resumes"
        ),
        plural(processes.len(), "process", "processes"),
    )];
    let problems: [(&str, &str, &str); 5] = [
        (
            UNBALANCED_POP,
            "roctxRangePop with no range open (ignored)",
            "roctxRangePop calls with no range open (ignored)",
        ),
        (
            UNKNOWN_STOP,
            "roctxRangeStop of an id no open range has (ignored)",
            "roctxRangeStop calls of ids no open range has (ignored)",
        ),
        (
            OPEN_AT_EXIT,
            "range still open when the process ended (ended there)",
            "ranges still open when the process ended (ended there)",
        ),
        (
            NOT_UTF8,
            "name that is not UTF-8 (invalid bytes shown as U+FFFD)",
            "names that are not UTF-8 (invalid bytes shown as U+FFFD)",
        ),
        (DROPPED, "", ""),
    ];
    for (problem, one, many) in problems {
        let matching: Vec<&RegionRow> = rows
            .iter()
            .filter(|r| {
                r.problem
                    .as_deref()
                    .is_some_and(|p| p.split("; ").any(|q| q == problem))
            })
            .collect();
        if matching.is_empty() {
            continue;
        }
        if problem == DROPPED {
            let n: u64 = matching.iter().map(|r| r.object).sum();
            lines.push(format!(
                "rtl-pmc: warning: roctx: {n} calls were not recorded: the application made more than a million before the HSA runtime's first queue or within a quarter of a second"
            ));
            continue;
        }
        let mut names: Vec<String> = matching
            .iter()
            .filter_map(|r| r.name.as_ref().map(|n| format!("{n:?}")))
            .collect();
        names.dedup();
        let what = if matching.len() == 1 { one } else { many };
        let named = if names.is_empty() || problem == UNBALANCED_POP || problem == UNKNOWN_STOP {
            String::new()
        } else {
            format!(": {}", names.join(", "))
        };
        lines.push(format!(
            "rtl-pmc: warning: roctx: {} {what}{named}",
            matching.len()
        ));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(
        kind: RegionKind,
        tid: u32,
        id: u64,
        depth: i32,
        t: u64,
        name: Option<&str>,
    ) -> Region {
        Region {
            kind,
            pid: 7,
            tid,
            id,
            depth,
            timestamp: t,
            name: name.map(str::to_string),
            utf8: true,
            object: 0,
        }
    }

    /// A row as (kind, name, begin, end, ending thread, parent, problem).
    type Brief<'a> = (
        &'a str,
        Option<&'a str>,
        u64,
        u64,
        u32,
        Option<i64>,
        Option<&'a str>,
    );

    #[test]
    fn pushes_pair_with_pops_per_thread_and_starts_with_stops_across_threads() {
        use RegionKind::*;
        let events = [
            event(Push, 1, 1, 0, 10, Some("outer")),
            event(Start, 1, 2, -1, 11, Some("async")),
            event(Push, 2, 3, 0, 12, Some("other thread")),
            event(Push, 1, 4, 1, 13, Some("inner")),
            event(Mark, 1, 0, -1, 14, Some("here")),
            event(Pop, 1, 4, 1, 15, None),
            event(Stop, 2, 2, -1, 16, None),
            event(Pop, 1, 1, 0, 17, None),
            event(PopEmpty, 1, 0, -1, 18, None),
            event(StopUnknown, 1, 99, -1, 19, None),
            Region {
                utf8: false,
                ..event(Push, 1, 5, 0, 20, Some("bad \u{fffd}"))
            },
            event(Exit, 3, 0, -1, 30, None),
        ];
        let rows = pair(1, &events);
        let brief: Vec<Brief> = rows
            .iter()
            .map(|r| {
                (
                    r.kind.as_str(),
                    r.name.as_deref(),
                    r.start_ns,
                    r.end_ns,
                    r.end_tid,
                    r.parent,
                    r.problem.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            brief,
            [
                ("range", Some("outer"), 10, 17, 1, None, None),
                ("process_range", Some("async"), 11, 16, 2, None, None),
                (
                    "range",
                    Some("other thread"),
                    12,
                    30,
                    2,
                    None,
                    Some(OPEN_AT_EXIT)
                ),
                ("range", Some("inner"), 13, 15, 1, Some(0), None),
                ("mark", Some("here"), 14, 14, 1, Some(3), None),
                ("pop", None, 18, 18, 1, None, Some(UNBALANCED_POP)),
                ("stop", None, 19, 19, 1, None, Some(UNKNOWN_STOP)),
                (
                    "range",
                    Some("bad \u{fffd}"),
                    20,
                    30,
                    1,
                    None,
                    Some("open at exit; name not UTF-8")
                ),
            ]
        );
        assert_eq!(rows[6].roctx_id, 99, "the unknown id is kept");
    }
}
