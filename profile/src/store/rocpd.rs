//! rocprofv3's rocpd schema (version "3") inside `results.db`, written when the database is
//! committed from the tables rtl-pmc keeps for itself (`rtl_*`), so that queries and tools
//! written for a rocprofv3 database read rtl-pmc's unchanged.
//!
//! As rocprofv3 does: one GUID per database; physical tables named `rocpd_<name>_<uuid>` with a
//! `guid` column that holds it (unlike rocprofv3's, a generated column: the GUID is in the
//! table's definition rather than 36 bytes of every row; `SELECT *`, `PRAGMA table_xinfo` and
//! rocpd's tools see it, `PRAGMA table_info` does not); an unsuffixed view `rocpd_<name>` over each; `rocpd_metadata`
//! with `schema_version`, `uuid` and `guid`; every string once in `rocpd_string`, sorted, the
//! empty string first; the analysis views (`kernels`, `counters_collection`, `pmc_events`,
//! `top_kernels`, `busy`, `top`, ...) under their rocpd names and columns. Beside them
//! `rocpd_op`, the dispatch table of rocm-trace-lite's (and RPD's) databases, so that their
//! queries run unchanged: one row per kernel dispatch, `gpuId` the GPU's KFD node as in every
//! output, `queueId` the queue's handle, `description_id` the kernel's name and `opType_id`
//! `KernelExecution` in `rocpd_string`.
//!
//! What the projection holds:
//! - one `rocpd_kernel_dispatch` row and one `rocpd_event` row per merged dispatch (their `id`
//!   is `rtl_merged_dispatch.id`), with the times, process, thread and queue of the pass that
//!   first saw it;
//! - one `rocpd_pmc_event` row per merged dispatch and reported counter, its value the total
//!   over the counter's dimension positions (rocprofv3 writes one row per position and its
//!   views sum them; the positions are in `rtl_pmc_dimension`, the pass in `rtl_dispatch`).
//!   This table is not a copy: it is where rtl-pmc stores the values as each pass is written,
//!   and `rtl_pmc_value` is a view over it (see [`crate::store::database`]);
//! - the application's roctx ranges and marks (of the processes above) as `rocpd_region` rows
//!   with their `rocpd_event` (category `MARKER_CORE_RANGE_API` or `MARKER_CORE_API`), and each
//!   dispatch's innermost enclosing range as its `region_name_id`;
//! - processes, threads, the CPU and GPU agents, queues (their handles as ids when distinct,
//!   else numbered from 1; the handle in `extdata`; named `Queue 0`, `Queue 1`, ... by first
//!   dispatch; 0 is rocprofv3's "Default Queue"), the default stream, one code object per
//!   process and GPU (code objects are not traced: no URI) and one kernel symbol per process,
//!   GPU and kernel name.

use rusqlite::{params, Connection};

use crate::fast_map::FastMap;
use crate::model::{Dispatch, Node, RunInfo};

/// A run's GUID: a version 7 UUID (milliseconds since the epoch, then random bits).
pub fn new_guid() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut random = [0u8; 10];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut random))
        .is_ok();
    if !filled {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let seed =
            (u128::from(std::process::id()) << 32 | u128::from(nanos)) * 0x9e37_79b9_7f4a_7c15;
        random.copy_from_slice(&seed.to_le_bytes()[..10]);
    }
    let mut bytes = [0u8; 16];
    bytes[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
    bytes[6..].copy_from_slice(&random);
    bytes[6] = 0x70 | (bytes[6] & 0x0f);
    bytes[8] = 0x80 | (bytes[8] & 0x3f);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The table-name suffix of `guid`: `_` and the GUID with its dashes as underscores.
pub fn uuid_suffix(guid: &str) -> String {
    format!("_{}", guid.replace('-', "_"))
}

/// A rocpd table: its name, its columns after `id` and `guid`, and its foreign keys as
/// (column, table).
type TableSpec = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// rocpd's tables after `rocpd_metadata`, in the order rocprofv3 creates them.
const TABLES: &[TableSpec] = &[
    (
        "string",
        r#""string" TEXT NOT NULL UNIQUE ON CONFLICT ABORT"#,
        &[],
    ),
    (
        "info_node",
        r#""hash" BIGINT NOT NULL UNIQUE, "machine_id" TEXT NOT NULL UNIQUE, "system_name" TEXT,
        "hostname" TEXT, "release" TEXT, "version" TEXT, "hardware_name" TEXT, "domain_name" TEXT"#,
        &[],
    ),
    (
        "info_process",
        r#""nid" INTEGER NOT NULL, "ppid" INTEGER, "pid" INTEGER NOT NULL, "init" BIGINT,
        "fini" BIGINT, "start" BIGINT, "end" BIGINT, "command" TEXT,
        "environment" JSONB DEFAULT "{}" NOT NULL, "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[("nid", "info_node")],
    ),
    (
        "info_thread",
        r#""nid" INTEGER NOT NULL, "ppid" INTEGER, "pid" INTEGER NOT NULL, "tid" INTEGER NOT NULL,
        "name" TEXT, "start" BIGINT, "end" BIGINT, "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[("nid", "info_node"), ("pid", "info_process")],
    ),
    (
        "info_agent",
        r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL,
        "type" TEXT CHECK ("type" IN ('CPU', 'GPU')), "absolute_index" INTEGER,
        "logical_index" INTEGER, "type_index" INTEGER, "uuid" INTEGER, "name" TEXT,
        "model_name" TEXT, "vendor_name" TEXT, "product_name" TEXT, "user_name" TEXT,
        "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[("nid", "info_node"), ("pid", "info_process")],
    ),
    (
        "info_queue",
        r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "name" TEXT,
        "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[("nid", "info_node"), ("pid", "info_process")],
    ),
    (
        "info_stream",
        r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "name" TEXT,
        "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[("nid", "info_node"), ("pid", "info_process")],
    ),
    (
        "info_pmc",
        r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "agent_id" INTEGER,
        "target_arch" TEXT CHECK ("target_arch" IN ('CPU', 'GPU')), "event_code" INT,
        "instance_id" INTEGER, "name" TEXT NOT NULL, "symbol" TEXT NOT NULL, "description" TEXT,
        "long_description" TEXT DEFAULT "", "component" TEXT, "units" TEXT DEFAULT "",
        "value_type" TEXT CHECK ("value_type" IN ('ABS', 'ACCUM', 'RELATIVE')), "block" TEXT,
        "expression" TEXT, "is_constant" INTEGER, "is_derived" INTEGER,
        "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[
            ("nid", "info_node"),
            ("pid", "info_process"),
            ("agent_id", "info_agent"),
        ],
    ),
    (
        "info_code_object",
        r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "agent_id" INTEGER, "uri" TEXT,
        "load_base" BIGINT, "load_size" BIGINT, "load_delta" BIGINT,
        "storage_type" TEXT CHECK ("storage_type" IN ('FILE', 'MEMORY')),
        "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[
            ("nid", "info_node"),
            ("pid", "info_process"),
            ("agent_id", "info_agent"),
        ],
    ),
    (
        "info_kernel_symbol",
        r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "code_object_id" INTEGER NOT NULL,
        "kernel_name" TEXT, "display_name" TEXT, "kernel_object" INTEGER,
        "kernarg_segment_size" INTEGER, "kernarg_segment_alignment" INTEGER,
        "group_segment_size" INTEGER, "private_segment_size" INTEGER, "sgpr_count" INTEGER,
        "arch_vgpr_count" INTEGER, "accum_vgpr_count" INTEGER,
        "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[
            ("nid", "info_node"),
            ("pid", "info_process"),
            ("code_object_id", "info_code_object"),
        ],
    ),
    (
        "track",
        r#""nid" INTEGER NOT NULL, "pid" INTEGER, "tid" INTEGER, "name_id" INTEGER,
        "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[
            ("nid", "info_node"),
            ("pid", "info_process"),
            ("tid", "info_thread"),
            ("name_id", "string"),
        ],
    ),
    (
        "event",
        r#""category_id" INTEGER, "stack_id" INTEGER, "parent_stack_id" INTEGER,
        "correlation_id" INTEGER, "call_stack" JSONB DEFAULT "{}" NOT NULL,
        "line_info" JSONB DEFAULT "{}" NOT NULL, "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[("category_id", "string")],
    ),
    (
        "arg",
        r#""event_id" INTEGER NOT NULL, "position" INTEGER NOT NULL, "type" TEXT NOT NULL,
        "name" TEXT NOT NULL, "value" TEXT, "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[("event_id", "event")],
    ),
    (
        "pmc_event",
        r#""event_id" INTEGER, "pmc_id" INTEGER NOT NULL, "value" REAL DEFAULT 0.0,
        "extdata" JSONB DEFAULT "{}""#,
        &[("pmc_id", "info_pmc"), ("event_id", "event")],
    ),
    (
        "region",
        r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "tid" INTEGER NOT NULL,
        "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, "name_id" INTEGER NOT NULL,
        "event_id" INTEGER, "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[
            ("nid", "info_node"),
            ("pid", "info_process"),
            ("tid", "info_thread"),
            ("name_id", "string"),
            ("event_id", "event"),
        ],
    ),
    (
        "sample",
        r#""track_id" INTEGER NOT NULL, "timestamp" BIGINT NOT NULL, "event_id" INTEGER,
        "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[("track_id", "track"), ("event_id", "event")],
    ),
    (
        "kernel_dispatch",
        r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "tid" INTEGER,
        "agent_id" INTEGER NOT NULL, "kernel_id" INTEGER NOT NULL, "dispatch_id" INTEGER NOT NULL,
        "queue_id" INTEGER NOT NULL, "stream_id" INTEGER NOT NULL, "start" BIGINT NOT NULL,
        "end" BIGINT NOT NULL, "private_segment_size" INTEGER, "group_segment_size" INTEGER,
        "workgroup_size_x" INTEGER NOT NULL, "workgroup_size_y" INTEGER NOT NULL,
        "workgroup_size_z" INTEGER NOT NULL, "grid_size_x" INTEGER NOT NULL,
        "grid_size_y" INTEGER NOT NULL, "grid_size_z" INTEGER NOT NULL, "region_name_id" INTEGER,
        "event_id" INTEGER, "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[
            ("nid", "info_node"),
            ("pid", "info_process"),
            ("tid", "info_thread"),
            ("agent_id", "info_agent"),
            ("kernel_id", "info_kernel_symbol"),
            ("queue_id", "info_queue"),
            ("stream_id", "info_stream"),
            ("region_name_id", "string"),
            ("event_id", "event"),
        ],
    ),
    (
        "memory_copy",
        r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "tid" INTEGER,
        "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, "name_id" INTEGER NOT NULL,
        "dst_agent_id" INTEGER, "dst_address" INTEGER, "src_agent_id" INTEGER,
        "src_address" INTEGER, "size" INTEGER NOT NULL, "queue_id" INTEGER, "stream_id" INTEGER,
        "region_name_id" INTEGER, "event_id" INTEGER, "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[
            ("nid", "info_node"),
            ("pid", "info_process"),
            ("tid", "info_thread"),
            ("name_id", "string"),
            ("dst_agent_id", "info_agent"),
            ("src_agent_id", "info_agent"),
            ("stream_id", "info_stream"),
            ("queue_id", "info_queue"),
            ("region_name_id", "string"),
            ("event_id", "event"),
        ],
    ),
    (
        "memory_allocate",
        r#""nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "tid" INTEGER, "agent_id" INTEGER,
        "type" TEXT CHECK ("type" IN ('ALLOC', 'FREE', 'REALLOC', 'RECLAIM')),
        "level" TEXT CHECK ("level" IN ('REAL', 'VIRTUAL', 'SCRATCH')),
        "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, "address" INTEGER,
        "size" INTEGER NOT NULL, "queue_id" INTEGER, "stream_id" INTEGER, "event_id" INTEGER,
        "extdata" JSONB DEFAULT "{}" NOT NULL"#,
        &[
            ("nid", "info_node"),
            ("pid", "info_process"),
            ("tid", "info_thread"),
            ("agent_id", "info_agent"),
            ("stream_id", "info_stream"),
            ("queue_id", "info_queue"),
            ("event_id", "event"),
        ],
    ),
];

/// The rocpd table that holds the counter values. rtl-pmc stores each value there once, as the
/// passes are written (see [`crate::store::database`]), rather than copying them at the commit.
pub const VALUES: &str = "pmc_event";

/// The DDL of rocpd table `name` of run `guid`, with table suffix `uuid`, and the unsuffixed
/// view over it. The `guid` column is rocpd's, in rocpd's place, but generated from the
/// definition (`VIRTUAL`): the same in every row, it is not stored in any.
pub fn table_sql(name: &str, guid: &str, uuid: &str) -> String {
    let Some((_, columns, keys)) = TABLES.iter().find(|t| t.0 == name) else {
        return String::new();
    };
    let mut sql = format!(
        "CREATE TABLE \"rocpd_{name}{uuid}\"(\"id\" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, \
         \"guid\" TEXT NOT NULL GENERATED ALWAYS AS ('{guid}') VIRTUAL, {columns}"
    );
    for (column, table) in keys.iter() {
        sql.push_str(&format!(
            ", FOREIGN KEY ({column}) REFERENCES \"rocpd_{table}{uuid}\" (id) ON UPDATE CASCADE"
        ));
    }
    sql.push_str(&format!(
        ");\nCREATE VIEW rocpd_{name} AS SELECT * FROM \"rocpd_{name}{uuid}\";\n"
    ));
    sql
}

/// The DDL of every rocpd table of run `guid` but [`VALUES`] (made with the first pass), with
/// table suffix `uuid`, and the unsuffixed view over each.
fn tables_sql(guid: &str, uuid: &str) -> String {
    let mut sql = format!(
        "CREATE TABLE \"rocpd_metadata{uuid}\"(\"id\" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, \
         \"tag\" TEXT NOT NULL, \"value\" TEXT NOT NULL);\n\
         CREATE VIEW rocpd_metadata AS SELECT * FROM \"rocpd_metadata{uuid}\";\n"
    );
    for (name, _, _) in TABLES.iter().filter(|t| t.0 != VALUES) {
        sql.push_str(&table_sql(name, guid, uuid));
    }
    sql
}

/// The analysis views, under rocpd's names and with its columns, over the unsuffixed views.
/// Rows of different runs never join: every join also matches `guid`.
const VIEWS: &str = r#"
CREATE VIEW code_objects AS
  SELECT c.id, c.guid, c.nid, p.pid, a.absolute_index AS agent_abs_index, c.uri, c.load_base,
         c.load_size, c.load_delta, c.storage_type AS storage_type_str,
         json_extract(c.extdata, '$.size') AS code_object_size,
         json_extract(c.extdata, '$.storage_type') AS storage_type,
         json_extract(c.extdata, '$.memory_base') AS memory_base,
         json_extract(c.extdata, '$.memory_size') AS memory_size
  FROM rocpd_info_code_object c
  JOIN rocpd_info_agent a ON a.id = c.agent_id AND a.guid = c.guid
  JOIN rocpd_info_process p ON p.id = c.pid AND p.guid = c.guid;
CREATE VIEW kernel_symbols AS
  SELECT s.id, s.guid, s.nid, p.pid, s.code_object_id, s.kernel_name, s.display_name,
         s.kernel_object, s.kernarg_segment_size, s.kernarg_segment_alignment,
         s.group_segment_size, s.private_segment_size, s.sgpr_count, s.arch_vgpr_count,
         s.accum_vgpr_count, json_extract(s.extdata, '$.size') AS kernel_symbol_size,
         json_extract(s.extdata, '$.kernel_id') AS kernel_id,
         json_extract(s.extdata, '$.kernel_code_entry_byte_offset') AS kernel_code_entry_byte_offset,
         json_extract(s.extdata, '$.formatted_kernel_name') AS formatted_kernel_name,
         json_extract(s.extdata, '$.demangled_kernel_name') AS demangled_kernel_name,
         json_extract(s.extdata, '$.truncated_kernel_name') AS truncated_kernel_name,
         json_extract(s.extdata, '$.kernel_address.handle') AS kernel_address
  FROM rocpd_info_kernel_symbol s JOIN rocpd_info_process p ON p.id = s.pid AND p.guid = s.guid;
CREATE VIEW processes AS
  SELECT n.id AS nid, n.machine_id, n.system_name, n.hostname, n.release AS system_release,
         n.version AS system_version, p.guid, p.ppid, p.pid, p.init, p.start, p.end, p.fini,
         p.command
  FROM rocpd_info_process p JOIN rocpd_info_node n ON n.id = p.nid AND n.guid = p.guid;
CREATE VIEW threads AS
  SELECT n.id AS nid, n.machine_id, n.system_name, n.hostname, n.release AS system_release,
         n.version AS system_version, p.guid, p.ppid, p.pid, t.tid, t.start, t.end, t.name
  FROM rocpd_info_thread t JOIN rocpd_info_process p ON p.id = t.pid AND p.guid = t.guid
  JOIN rocpd_info_node n ON n.id = t.nid AND n.guid = t.guid;
CREATE VIEW regions AS
  SELECT r.id, r.guid,
         (SELECT c.string FROM rocpd_string c WHERE c.id = e.category_id AND c.guid = e.guid)
           AS category,
         s.string AS name, r.nid, p.pid, t.tid, r.start, r.end, r.end - r.start AS duration,
         r.event_id, e.stack_id, e.parent_stack_id, e.correlation_id AS corr_id, e.extdata,
         e.call_stack, e.line_info
  FROM rocpd_region r JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
  JOIN rocpd_string s ON s.id = r.name_id AND s.guid = r.guid
  JOIN rocpd_info_process p ON p.id = r.pid AND p.guid = r.guid
  JOIN rocpd_info_thread t ON t.id = r.tid AND t.guid = r.guid;
CREATE VIEW region_args AS
  SELECT r.id, r.guid, r.nid, p.pid, a.type, a.name, a.value
  FROM rocpd_region r JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
  JOIN rocpd_arg a ON a.event_id = e.id AND a.guid = r.guid
  JOIN rocpd_info_process p ON p.id = r.pid AND p.guid = r.guid;
CREATE VIEW samples AS
  SELECT s.id, s.guid,
         (SELECT c.string FROM rocpd_string c WHERE c.id = e.category_id AND c.guid = e.guid)
           AS category,
         (SELECT c.string FROM rocpd_string c WHERE c.id = k.name_id AND c.guid = k.guid) AS name,
         k.nid, p.pid, t.tid, s.timestamp, s.event_id, e.stack_id, e.parent_stack_id,
         e.correlation_id AS corr_id, e.extdata, e.call_stack, e.line_info
  FROM rocpd_sample s JOIN rocpd_track k ON k.id = s.track_id AND k.guid = s.guid
  JOIN rocpd_event e ON e.id = s.event_id AND e.guid = s.guid
  JOIN rocpd_info_process p ON p.id = k.pid AND p.guid = k.guid
  JOIN rocpd_info_thread t ON t.id = k.tid AND t.guid = k.guid;
CREATE VIEW sample_regions AS
  SELECT id, guid, category, name, nid, pid, tid, timestamp AS start, timestamp AS end,
         0 AS duration, event_id, stack_id, parent_stack_id, corr_id, extdata, call_stack,
         line_info
  FROM samples;
CREATE VIEW regions_and_samples AS
  SELECT * FROM regions UNION ALL SELECT * FROM sample_regions;
CREATE VIEW kernels AS
  SELECT k.id, k.guid, t.tid,
         (SELECT c.string FROM rocpd_string c WHERE c.id = e.category_id AND c.guid = e.guid)
           AS category,
         r.string AS region, s.display_name AS name, k.nid, p.pid,
         a.absolute_index AS agent_abs_index, a.logical_index AS agent_log_index,
         a.type_index AS agent_type_index, a.type AS agent_type, s.code_object_id, k.kernel_id,
         k.dispatch_id, k.stream_id, k.queue_id, q.name AS queue, st.name AS stream, k.start,
         k.end, k.end - k.start AS duration, k.grid_size_x AS grid_x, k.grid_size_y AS grid_y,
         k.grid_size_z AS grid_z, k.workgroup_size_x AS workgroup_x,
         k.workgroup_size_y AS workgroup_y, k.workgroup_size_z AS workgroup_z,
         k.group_segment_size AS lds_size, k.private_segment_size AS scratch_size,
         s.arch_vgpr_count AS vgpr_count, s.accum_vgpr_count, s.sgpr_count,
         s.group_segment_size AS static_lds_size, s.private_segment_size AS static_scratch_size,
         e.stack_id, e.parent_stack_id, e.correlation_id AS corr_id
  FROM rocpd_kernel_dispatch k
  JOIN rocpd_info_agent a ON a.id = k.agent_id AND a.guid = k.guid
  JOIN rocpd_event e ON e.id = k.event_id AND e.guid = k.guid
  JOIN rocpd_string r ON r.id = k.region_name_id AND r.guid = k.guid
  JOIN rocpd_info_kernel_symbol s ON s.id = k.kernel_id AND s.guid = k.guid
  LEFT JOIN rocpd_info_stream st ON st.id = k.stream_id AND st.guid = k.guid
  LEFT JOIN rocpd_info_queue q ON q.id = k.queue_id AND q.guid = k.guid
  JOIN rocpd_info_process p ON p.id = k.pid AND p.guid = k.guid
  JOIN rocpd_info_thread t ON t.id = k.tid AND t.guid = k.guid;
CREATE VIEW pmc_info AS
  SELECT i.id, i.guid, i.nid, p.pid, a.absolute_index AS agent_abs_index, i.is_constant,
         i.is_derived, i.name, i.description, i.block, i.expression
  FROM rocpd_info_pmc i JOIN rocpd_info_agent a ON a.id = i.agent_id AND a.guid = i.guid
  JOIN rocpd_info_process p ON p.id = i.pid AND p.guid = i.guid;
CREATE VIEW pmc_events AS
  SELECT v.id, v.guid, v.pmc_id, e.id AS event_id,
         (SELECT c.string FROM rocpd_string c WHERE c.id = e.category_id AND c.guid = e.guid)
           AS category,
         (SELECT s.display_name FROM rocpd_info_kernel_symbol s
          WHERE s.id = k.kernel_id AND s.guid = k.guid) AS name,
         k.nid, p.pid, k.dispatch_id, k.start, k.end, k.end - k.start AS duration,
         i.name AS counter_name, v.value AS counter_value
  FROM rocpd_pmc_event v JOIN rocpd_info_pmc i ON i.id = v.pmc_id AND i.guid = v.guid
  JOIN rocpd_event e ON e.id = v.event_id AND e.guid = v.guid
  JOIN rocpd_kernel_dispatch k ON k.event_id = v.event_id AND k.guid = v.guid
  JOIN rocpd_info_process p ON p.id = k.pid AND p.guid = k.guid;
CREATE VIEW events_args AS
  SELECT e.id AS event_id,
         (SELECT c.string FROM rocpd_string c WHERE c.id = e.category_id AND c.guid = e.guid)
           AS category,
         e.stack_id, e.parent_stack_id, e.correlation_id, a.position AS arg_position,
         a.type AS arg_type, a.name AS arg_name, a.value AS arg_value, e.call_stack,
         e.line_info, a.extdata
  FROM rocpd_event e JOIN rocpd_arg a ON a.event_id = e.id AND a.guid = e.guid;
CREATE VIEW stream_args AS
  SELECT a.id AS argument_id, a.event_id, a.position AS arg_position, a.type AS arg_type,
         a.value AS arg_value, json_extract(a.extdata, '$.stream_id') AS stream_id, s.nid,
         p.pid, s.name AS stream_name, s.extdata
  FROM rocpd_arg a
  JOIN rocpd_info_stream s ON s.id = json_extract(a.extdata, '$.stream_id') AND s.guid = a.guid
  JOIN rocpd_info_process p ON p.id = s.pid AND p.guid = s.guid
  WHERE a.name = 'stream';
CREATE VIEW memory_copies AS
  SELECT m.id, m.guid,
         (SELECT c.string FROM rocpd_string c WHERE c.id = e.category_id AND c.guid = e.guid)
           AS category,
         m.nid, p.pid, t.tid, m.start, m.end, m.end - m.start AS duration, s.string AS name,
         r.string AS region_name, m.stream_id, m.queue_id, st.name AS stream_name,
         q.name AS queue_name, m.size, d.name AS dst_device, d.absolute_index AS dst_agent_abs_index,
         d.logical_index AS dst_agent_log_index, d.type_index AS dst_agent_type_index,
         d.type AS dst_agent_type, m.dst_address, o.name AS src_device,
         o.absolute_index AS src_agent_abs_index, o.logical_index AS src_agent_log_index,
         o.type_index AS src_agent_type_index, o.type AS src_agent_type, m.src_address,
         e.stack_id, e.parent_stack_id, e.correlation_id AS corr_id
  FROM rocpd_memory_copy m JOIN rocpd_string s ON s.id = m.name_id AND s.guid = m.guid
  LEFT JOIN rocpd_string r ON r.id = m.region_name_id AND r.guid = m.guid
  JOIN rocpd_info_agent d ON d.id = m.dst_agent_id AND d.guid = m.guid
  JOIN rocpd_info_agent o ON o.id = m.src_agent_id AND o.guid = m.guid
  LEFT JOIN rocpd_info_queue q ON q.id = m.queue_id AND q.guid = m.guid
  LEFT JOIN rocpd_info_stream st ON st.id = m.stream_id AND st.guid = m.guid
  JOIN rocpd_event e ON e.id = m.event_id AND e.guid = m.guid
  JOIN rocpd_info_process p ON p.id = m.pid AND p.guid = m.guid
  JOIN rocpd_info_thread t ON t.id = m.tid AND t.guid = m.guid;
CREATE VIEW memory_allocations AS
  SELECT m.id, m.guid,
         (SELECT c.string FROM rocpd_string c WHERE c.id = e.category_id AND c.guid = e.guid)
           AS category,
         m.nid, p.pid, t.tid, m.start, m.end, m.end - m.start AS duration, m.type, m.level,
         a.name AS agent_name, a.absolute_index AS agent_abs_index,
         a.logical_index AS agent_log_index, a.type_index AS agent_type_index,
         a.type AS agent_type, m.address, m.size, m.queue_id, q.name AS queue_name, m.stream_id,
         st.name AS stream_name, e.stack_id, e.parent_stack_id, e.correlation_id AS corr_id
  FROM rocpd_memory_allocate m LEFT JOIN rocpd_info_agent a ON a.id = m.agent_id AND a.guid = m.guid
  LEFT JOIN rocpd_info_queue q ON q.id = m.queue_id AND q.guid = m.guid
  LEFT JOIN rocpd_info_stream st ON st.id = m.stream_id AND st.guid = m.guid
  JOIN rocpd_event e ON e.id = m.event_id AND e.guid = m.guid
  JOIN rocpd_info_process p ON p.id = m.pid AND p.guid = m.guid
  JOIN rocpd_info_thread t ON t.id = m.tid AND t.guid = m.guid;
CREATE VIEW scratch_memory AS
  SELECT m.id, m.guid, m.nid, p.pid, m.type AS operation, a.name AS agent_name,
         a.absolute_index AS agent_abs_index, a.logical_index AS agent_log_index,
         a.type_index AS agent_type_index, a.type AS agent_type, m.queue_id, t.tid,
         json_extract(m.extdata, '$.flags') AS alloc_flags, m.start, m.end,
         m.end - m.start AS duration, m.size, m.address, e.correlation_id, e.stack_id,
         e.parent_stack_id, e.correlation_id AS corr_id,
         (SELECT c.string FROM rocpd_string c WHERE c.id = e.category_id AND c.guid = e.guid)
           AS category,
         e.extdata AS event_extdata
  FROM rocpd_memory_allocate m LEFT JOIN rocpd_info_agent a ON a.id = m.agent_id AND a.guid = m.guid
  JOIN rocpd_event e ON e.id = m.event_id AND e.guid = m.guid
  JOIN rocpd_info_process p ON p.id = m.pid AND p.guid = m.guid
  JOIN rocpd_info_thread t ON t.id = m.tid AND t.guid = m.guid
  WHERE m.level = 'SCRATCH' ORDER BY m.start;
CREATE VIEW counters_collection AS
  SELECT min(v.id) AS id, v.guid, k.dispatch_id, k.kernel_id, e.id AS event_id, e.correlation_id,
         e.stack_id, e.parent_stack_id, p.pid, t.tid, k.agent_id,
         a.absolute_index AS agent_abs_index, a.logical_index AS agent_log_index,
         a.type_index AS agent_type_index, a.type AS agent_type, k.queue_id,
         k.grid_size_x, k.grid_size_y, k.grid_size_z,
         k.grid_size_x * k.grid_size_y * k.grid_size_z AS grid_size, s.display_name AS kernel_name,
         (SELECT c.string FROM rocpd_string c WHERE c.id = k.region_name_id AND c.guid = k.guid)
           AS kernel_region,
         k.workgroup_size_x, k.workgroup_size_y, k.workgroup_size_z,
         k.workgroup_size_x * k.workgroup_size_y * k.workgroup_size_z AS workgroup_size,
         k.group_segment_size AS lds_block_size, k.private_segment_size AS scratch_size,
         s.arch_vgpr_count AS vgpr_count, s.accum_vgpr_count, s.sgpr_count,
         i.name AS counter_name, i.symbol AS counter_symbol, i.component, i.description, i.block,
         i.expression, i.value_type, i.id AS counter_id, sum(v.value) AS value, k.start, k.end,
         i.is_constant, i.is_derived, k.end - k.start AS duration,
         (SELECT c.string FROM rocpd_string c WHERE c.id = e.category_id AND c.guid = e.guid)
           AS category,
         k.nid, e.extdata, s.code_object_id
  FROM rocpd_pmc_event v JOIN rocpd_info_pmc i ON i.id = v.pmc_id AND i.guid = v.guid
  JOIN rocpd_event e ON e.id = v.event_id AND e.guid = v.guid
  JOIN rocpd_kernel_dispatch k ON k.event_id = v.event_id AND k.guid = v.guid
  JOIN rocpd_info_agent a ON a.id = k.agent_id AND a.guid = k.guid
  JOIN rocpd_info_kernel_symbol s ON s.id = k.kernel_id AND s.guid = k.guid
  JOIN rocpd_info_process p ON p.id = k.pid AND p.guid = k.guid
  JOIN rocpd_info_thread t ON t.id = k.tid AND t.guid = k.guid
  GROUP BY v.guid, k.id, i.name, k.agent_id;
CREATE VIEW top_kernels AS
  SELECT name, count(*) AS total_calls, sum(duration) / 1000.0 AS total_duration,
         avg(duration) / 1000.0 AS average,
         100.0 * sum(duration) / (SELECT sum(duration) FROM kernels) AS percentage
  FROM kernels GROUP BY name ORDER BY total_duration DESC;
CREATE VIEW busy AS
  SELECT k.agent_id, a.type, sum(k.end - k.start) AS GpuTime,
         max(k.end) - min(k.start) AS WallTime,
         1.0 * sum(k.end - k.start) / max(max(k.end) - min(k.start), 1) AS Busy
  FROM rocpd_kernel_dispatch k JOIN rocpd_info_agent a ON a.id = k.agent_id AND a.guid = k.guid
  GROUP BY k.guid, k.agent_id;
CREATE VIEW top AS
  SELECT name, count(*) AS total_calls, sum(duration) AS total_duration, avg(duration) AS average,
         100.0 * sum(duration) / (SELECT sum(duration) FROM kernels) AS percentage
  FROM kernels GROUP BY name ORDER BY total_duration DESC;
CREATE VIEW rocpd_op AS
  SELECT k.id, k.guid, k.agent_id AS gpuId,
         (SELECT json_extract(q.extdata, '$.handle') FROM rocpd_info_queue q
          WHERE q.id = k.queue_id AND q.guid = k.guid) AS queueId,
         k.dispatch_id AS sequenceId, '' AS completionSignal, k.start, k.end,
         (SELECT c.id FROM rocpd_string c WHERE c.string = y.display_name AND c.guid = k.guid)
           AS description_id,
         (SELECT c.id FROM rocpd_string c WHERE c.string = 'KernelExecution' AND c.guid = k.guid)
           AS opType_id
  FROM rocpd_kernel_dispatch k
  JOIN rocpd_info_kernel_symbol y ON y.id = k.kernel_id AND y.guid = k.guid;
"#;

/// Each merged dispatch (`event`, its id) with the columns of the row of the pass that first saw
/// it that the processes, threads, queues, code objects and kernel symbols are grouped from in
/// SQL, when they were not gathered as the dispatches were joined (see [`FirstRows`]).
const FIRST: &str = "CREATE TEMP TABLE rocpd_first AS
  SELECT m.id AS event, k.pid, k.tid, k.agent, k.queue_id, k.kernel_id, k.start_ns, k.end_ns,
         k.symbol_id
  FROM rtl_merged m JOIN rtl_dispatch k ON k.id = m.first_dispatch;";

/// The threads, queues, code objects and kernel symbols of the merged dispatches, grouped in SQL from the table [`FIRST`] (when they were not gathered as the dispatches were
/// joined, see [`FirstRows`]).
const GROUPED: &str = "
INSERT INTO rocpd_info_thread(id, nid, ppid, pid, tid, start, end)
  SELECT tid, :nid, :ppid, min(pid), tid, min(start_ns), max(end_ns) FROM rocpd_first GROUP BY tid;
CREATE TEMP TABLE rocpd_queue AS
  SELECT row_number() OVER (ORDER BY min(event)) AS id,
         row_number() OVER (ORDER BY min(event)) - 1 AS ordinal, pid, queue_id AS handle
  FROM rocpd_first GROUP BY pid, queue_id;
CREATE TEMP TABLE rocpd_code_object AS
  SELECT row_number() OVER (ORDER BY min(event)) AS id, pid, agent FROM rocpd_first
  GROUP BY pid, agent;
CREATE TEMP TABLE rocpd_symbol AS
  SELECT row_number() OVER (ORDER BY g.first) AS id, g.pid, g.agent, g.kernel_id,
         c.id AS code_object, g.first, g.symbol
  FROM (SELECT pid, agent, kernel_id, min(event) AS first, max(symbol_id) AS symbol
        FROM rocpd_first GROUP BY pid, agent, kernel_id) g
  JOIN rocpd_code_object c ON c.pid = g.pid AND c.agent = g.agent;
";

/// Fills the rocpd tables but the node and processes from rtl-pmc's own, once the small tables
/// are made (grouped from [`FIRST`], or gathered as the dispatches were joined).
/// Kernel symbols keep the ids the interposer gave them (rocprofiler-sdk's `kernel_id`) when
/// each has its own, as within one process; else they are numbered by first merged dispatch.
/// Queues likewise keep their handles as ids when those are distinct; they are named
/// `Queue 0`, `Queue 1`, ... by first dispatch, as rocprofv3 names them. A kernel dispatch
/// takes its process, thread, GPU, kernel symbol, queue and sizes from its launch, each
/// launch's looked up once (`rocpd_launch`) rather than once per dispatch.
const FILL: &str = "
UPDATE rocpd_symbol SET id = symbol
  WHERE (SELECT count(*) = count(DISTINCT symbol) AND min(symbol) > 0 FROM rocpd_symbol);
UPDATE rocpd_queue SET id = handle
  WHERE (SELECT count(*) = count(DISTINCT handle) AND min(handle) > 0 FROM rocpd_queue);
CREATE TEMP TABLE rocpd_roctx AS
  SELECT r.*, coalesce((SELECT max(id) FROM rtl_merged_dispatch), 0)
              + row_number() OVER (ORDER BY r.start_ns, r.id) AS event
  FROM rtl_region r
  WHERE r.kind IN ('range', 'process_range', 'mark')
    AND r.pid IN (SELECT id FROM rocpd_info_process);
INSERT INTO rocpd_string(string)
  SELECT s FROM (SELECT '' AS s UNION SELECT 'KERNEL_DISPATCH' UNION SELECT 'KernelExecution'
                 UNION SELECT string FROM rtl_string
                 UNION SELECT 'MARKER_CORE_API' FROM rocpd_roctx WHERE kind = 'mark'
                 UNION SELECT 'MARKER_CORE_RANGE_API' FROM rocpd_roctx WHERE kind != 'mark'
                 UNION SELECT coalesce(name, '') FROM rocpd_roctx)
  ORDER BY s;
INSERT OR IGNORE INTO rocpd_info_thread(id, nid, ppid, pid, tid)
  SELECT DISTINCT tid, :nid, :ppid, pid, tid FROM rocpd_roctx;
INSERT INTO rocpd_info_queue(id, nid, pid, name) VALUES (0, :nid, :pid0, 'Default Queue');
INSERT INTO rocpd_info_queue(id, nid, pid, name, extdata)
  SELECT id, :nid, pid, 'Queue ' || ordinal, json_object('handle', handle) FROM rocpd_queue;
INSERT INTO rocpd_info_stream(id, nid, pid, name) VALUES (0, :nid, :pid0, 'Default Stream');
INSERT INTO rocpd_info_agent(id, nid, pid, type, absolute_index, logical_index, type_index, uuid,
                             name, model_name, vendor_name, product_name, user_name)
  SELECT node_id, :nid, :pid0, CASE cpu WHEN 1 THEN 'CPU' ELSE 'GPU' END, node_id, node_id,
         row_number() OVER (PARTITION BY cpu ORDER BY node_id) - 1,
         json_extract(properties, '$.device_id'), name, model_name,
         CASE cpu WHEN 1 THEN 'CPU' ELSE 'AMD' END, product_name, product_name
  FROM rtl_agent ORDER BY node_id;
INSERT INTO rocpd_info_agent(id, nid, pid, type, absolute_index, logical_index)
  SELECT DISTINCT agent, :nid, :pid0, 'GPU', agent, agent FROM rocpd_code_object
  WHERE agent NOT IN (SELECT node_id FROM rtl_agent) ORDER BY agent;
INSERT INTO rocpd_info_code_object(id, nid, pid, agent_id)
  SELECT id, :nid, pid, agent FROM rocpd_code_object;
INSERT INTO rocpd_info_kernel_symbol(id, nid, pid, code_object_id, kernel_name, display_name,
  kernel_object, group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count,
  accum_vgpr_count, extdata)
  SELECT y.id, :nid, y.pid, y.code_object, s.string, s.string, f.kernel_object, f.lds, f.scratch,
         f.sgpr, f.arch_vgpr, f.accum_vgpr,
         json_object('size', 88, 'kernel_id', y.id, 'kernel_name', s.string,
                     'kernel_object', f.kernel_object, 'group_segment_size', f.lds,
                     'private_segment_size', f.scratch, 'sgpr_count', f.sgpr,
                     'arch_vgpr_count', f.arch_vgpr, 'accum_vgpr_count', f.accum_vgpr,
                     'formatted_kernel_name', s.string)
  FROM rocpd_symbol y JOIN rtl_string s ON s.id = y.kernel_id
  JOIN rtl_merged_dispatch m ON m.id = y.first JOIN rtl_dispatch f ON f.id = m.first_dispatch;
INSERT INTO rocpd_event(id, category_id, stack_id, parent_stack_id, correlation_id)
  SELECT m.id, (SELECT id FROM rocpd_string WHERE string = 'KERNEL_DISPATCH'), k.correlation_id,
         k.correlation_id, 0
  FROM rtl_merged m CROSS JOIN rtl_dispatch_row k ON k.id = m.first_dispatch;
INSERT INTO rocpd_event(id, category_id, stack_id, parent_stack_id, correlation_id)
  SELECT event,
         (SELECT id FROM rocpd_string
          WHERE string = CASE kind WHEN 'mark' THEN 'MARKER_CORE_API' ELSE 'MARKER_CORE_RANGE_API' END),
         roctx_id, 0, 0
  FROM rocpd_roctx;
INSERT INTO rocpd_region(nid, pid, tid, start, end, name_id, event_id, extdata)
  SELECT :nid, pid, tid, start_ns, end_ns,
         (SELECT id FROM rocpd_string WHERE string = coalesce(name, '')), event,
         json_object('kind', kind, 'depth', depth, 'roctx_id', roctx_id, 'end_tid', end_tid,
                     'problem', problem)
  FROM rocpd_roctx ORDER BY start_ns, id;
CREATE TEMP TABLE rocpd_launch(id INTEGER PRIMARY KEY, pid, tid, agent, symbol, queue, scratch,
  lds, workgroup_x, workgroup_y, workgroup_z, grid_x, grid_y, grid_z);
INSERT INTO temp.rocpd_launch
  SELECT l.id, l.pid, l.tid, l.agent, y.id, q.id, l.scratch, l.lds, l.workgroup_x, l.workgroup_y,
         l.workgroup_z, l.grid_x, l.grid_y, l.grid_z
  FROM rtl_launch l
  JOIN rocpd_symbol y ON y.pid = l.pid AND y.agent = l.agent AND y.kernel_id = l.kernel_id
  JOIN rocpd_queue q ON q.pid = l.pid AND q.handle = l.queue_id;
INSERT INTO rocpd_kernel_dispatch(id, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id,
  stream_id, start, end, private_segment_size, group_segment_size, workgroup_size_x,
  workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, region_name_id,
  event_id)
  SELECT m.id, :nid, x.pid, x.tid, x.agent, x.symbol, f.dispatch_id, x.queue, 0, f.start_ns,
         f.end_ns, x.scratch, x.lds, x.workgroup_x, x.workgroup_y, x.workgroup_z, x.grid_x,
         x.grid_y, x.grid_z, :region_name, m.id
  FROM rtl_merged m CROSS JOIN rtl_dispatch_row f ON f.id = m.first_dispatch
  CROSS JOIN temp.rocpd_launch x ON x.id = f.launch_id;
INSERT INTO rocpd_info_pmc(id, nid, pid, agent_id, target_arch, name, symbol, description,
  component, units, value_type, block, expression, is_constant, is_derived)
  SELECT c.id, :nid, :pid0,
         coalesce((SELECT a.agent FROM temp.rtl_pmc_agent a WHERE a.pmc_id = c.id),
                  (SELECT min(node_id) FROM rtl_agent WHERE cpu = 0)),
         'GPU', c.name, c.name, c.description, 'rocm', c.unit, 'ABS', c.block,
         coalesce(c.expression, ''), 0,
         c.derived
  FROM rtl_counter c ORDER BY c.id;
DROP TABLE temp.rocpd_roctx;
DROP TABLE temp.rocpd_queue;
DROP TABLE temp.rocpd_code_object;
DROP TABLE temp.rocpd_symbol;
DROP TABLE temp.rocpd_launch;
DROP TABLE temp.rtl_pmc_agent;
";

impl Node {
    /// This machine.
    pub fn here() -> Node {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let field = |chars: &[libc::c_char]| {
            let bytes: Vec<u8> = chars
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        // SAFETY: uname fills the zeroed struct it is given.
        let mut names: libc::utsname = unsafe { std::mem::zeroed() };
        let mut node = Node::default();
        if unsafe { libc::uname(&mut names) } == 0 {
            node = Node {
                machine_id: String::new(),
                system_name: field(&names.sysname),
                hostname: field(&names.nodename),
                release: field(&names.release),
                version: field(&names.version),
                hardware_name: field(&names.machine),
                domain_name: field(&names.domainname),
            };
        }
        node.machine_id = [read("/etc/machine-id"), read("/var/lib/dbus/machine-id")]
            .into_iter()
            .find(|id| !id.is_empty())
            .unwrap_or_else(|| node.hostname.clone());
        node
    }

    /// rocpd's `hash` of the node: a stable 63-bit hash of its machine id.
    pub fn hash(&self) -> i64 {
        hash(&self.machine_id)
    }

    /// rocpd's node id (`nid`).
    pub fn id(&self) -> i64 {
        self.hash() % i64::from(u32::MAX)
    }
}

/// A stable 63-bit hash of `text` (FNV-1a), for the node's `hash`.
fn hash(text: &str) -> i64 {
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (h % i64::MAX as u64) as i64
}

/// Writes rocpd's tables, views and rows for run `guid` from the `rtl_*` tables of `conn`;
/// `agents` names, per counter id, the GPU of the first dispatch (by row) with a value of it,
/// and gives each agent's JSON by KFD node (its `extdata`, and that of its counters, as
/// rocprofv3 writes them); `first`, when given, holds the small tables' rows gathered while the
/// passes were joined.
pub fn write(
    conn: &Connection,
    guid: &str,
    run: &RunInfo,
    agents: &[(i64, u32)],
    described: &[(u32, String)],
    first: Option<&FirstRows>,
) -> rusqlite::Result<()> {
    let uuid = uuid_suffix(guid);
    conn.execute_batch(&tables_sql(guid, &uuid))?;
    conn.execute_batch(VIEWS)?;
    conn.execute(
        &into_tables(
            "INSERT INTO rocpd_metadata(tag, value) VALUES ('schema_version', '3'), ('uuid', ?1),
             ('guid', ?2)",
            &uuid,
        ),
        params![uuid, guid],
    )?;
    let node = Node::here();
    let nid = node.id();
    conn.execute(
        &into_tables(
            "INSERT INTO rocpd_info_node(id, hash, machine_id, system_name, hostname, release,
             version, hardware_name, domain_name) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
            &uuid,
        ),
        params![
            nid,
            node.hash(),
            node.machine_id,
            node.system_name,
            node.hostname,
            node.release,
            node.version,
            node.hardware_name,
            node.domain_name
        ],
    )?;
    let environment = serde_json::Value::Object(
        run.environment
            .iter()
            .filter(|(_, v)| !v.contains(';'))
            .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
            .collect(),
    )
    .to_string();
    let command = run.command.join(" ");
    if first.is_none() {
        conn.execute_batch(FIRST)?;
    }
    conn.execute_batch(
        "CREATE TEMP TABLE rtl_pmc_agent(pmc_id INTEGER PRIMARY KEY, agent INTEGER NOT NULL)",
    )?;
    let mut insert = conn.prepare("INSERT INTO temp.rtl_pmc_agent VALUES (?1, ?2)")?;
    for (pmc, agent) in agents {
        insert.execute(params![pmc, agent])?;
    }
    let process = into_tables(
        "INSERT INTO rocpd_info_process(id, nid, ppid, pid, init, fini, start, end, command,
         environment)",
        &uuid,
    );
    let inserted = match first {
        Some(first) => {
            first.insert_processes(conn, &process, (nid, run.ppid), &command, &environment)?
        }
        None => conn.execute(
            &format!(
                "{process} SELECT pid, ?1, ?2, pid, min(start_ns), max(end_ns), min(start_ns),
                   max(end_ns), ?3, ?4
                 FROM rocpd_first GROUP BY pid ORDER BY pid"
            ),
            params![nid, run.ppid, command, environment],
        )?,
    };
    let pid0: i64 = match inserted {
        0 => {
            // No dispatch: the agents and counters still need a process; the profiler's own.
            let pid = i64::from(std::process::id());
            conn.execute(
                &into_tables(
                    "INSERT INTO rocpd_info_process(id, nid, pid, command, environment)
                     VALUES (?1, ?2, ?1, ?3, ?4)",
                    &uuid,
                ),
                params![pid, nid, command, environment],
            )?;
            pid
        }
        _ => conn.query_row("SELECT min(id) FROM rocpd_info_process", [], |r| r.get(0))?,
    };
    let ppid = run.ppid.map_or("NULL".into(), |p| p.to_string());
    // A dispatch's region is its innermost roctx range's name, else the empty string; without
    // ranges around dispatches, the empty string's id, found once rather than per dispatch.
    let unnamed = "(SELECT id FROM rocpd_string WHERE string = '')";
    let ranges: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM rtl_dispatch_region)",
        [],
        |r| r.get(0),
    )?;
    let region_name = match ranges {
        true => format!(
            "coalesce((SELECT s.id FROM rtl_dispatch_region d JOIN rtl_region r ON r.id = d.region_id
                       JOIN rocpd_string s ON s.string = r.name
                       WHERE d.dispatch_row_id = f.id), {unnamed})"
        ),
        false => unnamed.to_string(),
    };
    let bound = |sql: &str| {
        let mut sql = sql.to_string();
        for (name, value) in [
            (":nid", nid.to_string()),
            (":pid0", pid0.to_string()),
            (":ppid", ppid.clone()),
            (":region_name", region_name.clone()),
        ] {
            sql = sql.replace(name, &value);
        }
        into_tables(&sql, &uuid)
    };
    match first {
        Some(first) => first.insert_grouped(
            conn,
            &bound(
                "INSERT INTO rocpd_info_thread(id, nid, ppid, pid, tid, start, end)
                 VALUES (?1, :nid, :ppid, ?2, ?1, ?3, ?4)",
            ),
        )?,
        None => conn.execute_batch(&bound(GROUPED))?,
    }
    conn.execute_batch(&bound(FILL))?;
    let mut describe = conn.prepare(&format!(
        "UPDATE \"rocpd_info_agent{uuid}\" SET extdata = ?2 WHERE id = ?1"
    ))?;
    for (node, agent) in described {
        describe.execute(params![node, agent])?;
    }
    conn.execute_batch(&format!(
        "UPDATE \"rocpd_info_pmc{uuid}\" SET extdata = coalesce(
           (SELECT a.extdata FROM \"rocpd_info_agent{uuid}\" a
            WHERE a.id = \"rocpd_info_pmc{uuid}\".agent_id), '{{}}')"
    ))?;
    match first {
        Some(_) => Ok(()),
        None => conn.execute_batch("DROP TABLE temp.rocpd_first"),
    }
}

/// The processes, threads, queues, code objects and kernel symbols of the merged dispatches,
/// gathered as each merged dispatch is made, from the dispatch that first saw it: the rows
/// [`GROUPED`] would group in SQL, without reading every merged dispatch at the commit. Only
/// valid while merged dispatches are made this way (never deleted or renumbered).
#[derive(Debug, Clone, Default)]
pub struct FirstRows {
    /// Per process: its first start and last end.
    processes: FastMap<u32, (i64, i64)>,
    /// Per thread: its lowest process, first start and last end.
    threads: FastMap<u32, (u32, i64, i64)>,
    /// Per process and queue handle: its first merged dispatch.
    queues: FastMap<(u32, i64), i64>,
    /// Per process, GPU and kernel: its first merged dispatch and its symbol's id.
    symbols: FastMap<(u32, u32, i64), (i64, u64)>,
}

impl FirstRows {
    /// Adds merged dispatch `event`, first seen as `d` (kernel `kernel_id`).
    pub fn add(&mut self, event: i64, d: &Dispatch, kernel_id: i64) {
        let (start, end) = (d.start_ns as i64, d.end_ns as i64);
        let p = self.processes.entry(d.pid).or_insert((start, end));
        *p = (p.0.min(start), p.1.max(end));
        let t = self.threads.entry(d.tid).or_insert((d.pid, start, end));
        *t = (t.0.min(d.pid), t.1.min(start), t.2.max(end));
        let q = self
            .queues
            .entry((d.pid, d.queue_id as i64))
            .or_insert(event);
        *q = (*q).min(event);
        let y = self
            .symbols
            .entry((d.pid, d.agent, kernel_id))
            .or_insert((event, d.kernel_id));
        *y = (y.0.min(event), y.1.max(d.kernel_id));
    }

    /// Inserts the process rows with `insert` (the head of an insert into rocpd's process
    /// table), the node and parent `ids`, `command` and `environment`; returns how many.
    fn insert_processes(
        &self,
        conn: &Connection,
        insert: &str,
        (nid, ppid): (i64, Option<u32>),
        command: &str,
        environment: &str,
    ) -> rusqlite::Result<usize> {
        let mut stmt = conn.prepare(&format!(
            "{insert} VALUES (?1, ?2, ?3, ?1, ?4, ?5, ?4, ?5, ?6, ?7)"
        ))?;
        let mut processes: Vec<_> = self.processes.iter().collect();
        processes.sort_unstable();
        for (pid, (start, end)) in processes {
            stmt.execute(params![pid, nid, ppid, start, end, command, environment])?;
        }
        Ok(self.processes.len())
    }

    /// Inserts the thread rows with `threads` (an insert of a thread's tid, pid, start and end
    /// into rocpd's thread table) and makes the temporary tables of queues, code objects and
    /// kernel symbols [`GROUPED`] makes, numbered the same way: by first merged dispatch.
    fn insert_grouped(&self, conn: &Connection, threads: &str) -> rusqlite::Result<()> {
        let mut stmt = conn.prepare(threads)?;
        let mut threads: Vec<_> = self.threads.iter().collect();
        threads.sort_unstable();
        for (tid, (pid, start, end)) in threads {
            stmt.execute(params![tid, pid, start, end])?;
        }
        conn.execute_batch(
            "CREATE TEMP TABLE rocpd_queue(id INTEGER, ordinal INTEGER, pid INTEGER,
               handle INTEGER);
             CREATE TEMP TABLE rocpd_code_object(id INTEGER, pid INTEGER, agent INTEGER);
             CREATE TEMP TABLE rocpd_symbol(id INTEGER, pid INTEGER, agent INTEGER,
               kernel_id INTEGER, code_object INTEGER, first INTEGER, symbol INTEGER);",
        )?;
        let mut queues: Vec<_> = self
            .queues
            .iter()
            .map(|(&(pid, h), &e)| (e, pid, h))
            .collect();
        queues.sort_unstable();
        let mut stmt = conn.prepare("INSERT INTO temp.rocpd_queue VALUES (?1, ?2, ?3, ?4)")?;
        for (id, (_, pid, handle)) in queues.into_iter().enumerate() {
            stmt.execute(params![id as i64 + 1, id as i64, pid, handle])?;
        }
        // A code object's first merged dispatch is the first of its kernels'.
        let mut objects: FastMap<(u32, u32), i64> = FastMap::default();
        for (&(pid, agent, _), &(first, _)) in &self.symbols {
            let o = objects.entry((pid, agent)).or_insert(first);
            *o = (*o).min(first);
        }
        let mut objects: Vec<_> = objects.into_iter().map(|(k, e)| (e, k)).collect();
        objects.sort_unstable();
        let mut stmt = conn.prepare("INSERT INTO temp.rocpd_code_object VALUES (?1, ?2, ?3)")?;
        let mut object_ids: FastMap<(u32, u32), i64> = FastMap::default();
        for (id, (_, (pid, agent))) in objects.into_iter().enumerate() {
            stmt.execute(params![id as i64 + 1, pid, agent])?;
            object_ids.insert((pid, agent), id as i64 + 1);
        }
        let mut symbols: Vec<_> = self.symbols.iter().map(|(&k, &e)| (e, k)).collect();
        symbols.sort_unstable();
        let mut stmt =
            conn.prepare("INSERT INTO temp.rocpd_symbol VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?;
        for (id, ((first, symbol), (pid, agent, kernel))) in symbols.into_iter().enumerate() {
            let object = object_ids.get(&(pid, agent)).copied().unwrap_or_default();
            let symbol = symbol as i64;
            stmt.execute(params![
                id as i64 + 1,
                pid,
                agent,
                kernel,
                object,
                first,
                symbol
            ])?;
        }
        Ok(())
    }
}

/// `sql` with every `INSERT [OR IGNORE] INTO rocpd_<name>` aimed at the physical table (the unsuffixed
/// names are views).
fn into_tables(sql: &str, uuid: &str) -> String {
    static INSERT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(INSERT (?:OR IGNORE )?INTO) (rocpd_[a-z_]+)").expect("a valid pattern")
    });
    INSERT
        .replace_all(sql, format!("${{1}} \"${{2}}{uuid}\""))
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_are_version_7_uuids_and_name_their_tables() {
        let guid = new_guid();
        let parts: Vec<&str> = guid.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('7'));
        assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"));
        assert_ne!(guid, new_guid());
        assert_eq!(
            uuid_suffix("0198a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"),
            "_0198a1b2_c3d4_7e5f_8a9b_0c1d2e3f4a5b"
        );
    }
}
