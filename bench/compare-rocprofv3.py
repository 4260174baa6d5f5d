#!/usr/bin/env python3
"""Runs rtl-pmc and AMD's rocprofv3 on the same workloads of the simulated GPU and compares their
files column by column and value by value.

    python3 bench/compare-rocprofv3.py ROCPROFV3 [--out DIR] [--only NAME...]

ROCPROFV3 is the `rocprofv3` launcher of a rocprofiler-sdk built outside the repository (see
docs/rocprofv3.md). Both tools count `SQ_WAVES GRBM_COUNT` with a kernel trace and write CSV, JSON
and rocpd. rocprofv3 runs under `rtl-pmc --sim ARCH --exec`, so it sees the simulated GPU as a
ROCm machine.

Each run is a separate execution, so what differs from run to run by nature (timestamps, process
and thread ids, GUIDs, addresses of loaded code, each tool's own handles of agents, cycle counters
that follow a dispatch's measured duration) is compared with each run's own simulator ground truth
or left out; every other column must be equal. CSV
rows are matched by dispatch id (and counter name); rocpd tables are compared row by row, a
column that refers to another table by what the row it refers to names; JSON values key by key,
lists of agents, counters, dispatches and kernel symbols matched by node, name, dispatch id and
kernel name, and counter, agent and kernel ids by what they name. The script prints one line
per file and column (or key) that differs, marking those docs/rocprofv3.md explains
("Where rtl-pmc's files differ from rocprofv3's"), and exits 1 if any other does.
"""

import argparse
import csv
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COUNTERS = ["SQ_WAVES", "GRBM_COUNT"]

# name, --sim configuration, application arguments, columns that differ from run to run too
# (threads creating queues and dispatching at once number queues and dispatches in either
# order, in any tool or none: their rows are compared as sets, whatever their dispatch id)
WORKLOADS = [
    ("gfx942", "gfx942", [], set()),
    (
        "gfx942-threads",
        "gfx942",
        ["--threads", "2", "--queues", "2", "--iterations", "3"],
        {"Queue_Id", "Dispatch_Id"},
    ),
    ("gfx942x2", "gfx942x2", ["--iterations", "2"], set()),
    ("gfx90a", "gfx90a", ["--cpp"], set()),
    ("gfx950", "gfx950", ["--iterations", "2"], set()),
]

# Columns that differ between two executions of the same workload.
PER_RUN = {
    "Start_Timestamp",
    "End_Timestamp",
    "Thread_Id",
    "Process_Id",
    "Correlation_Id",
}


def run(cmd, env, log):
    # In the workload's directory: rocprofv3 keeps its buffers in `.rocprofv3/` where it runs.
    with open(log, "w") as out:
        status = subprocess.run(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=Path(log).parent
        ).returncode
    if status != 0:
        sys.exit(f"{' '.join(map(str, cmd))} exited {status}; see {log}")


def profile(rocprofv3, rtl_pmc, app, arch, args, out):
    env = dict(os.environ)
    fmt = ["--output-format", "csv", "json", "rocpd"]
    theirs = out / "rocprofv3"
    ours = out / "rtl-pmc"
    env["RTL_SIM_GROUND_TRUTH"] = str(out / "truth-rocprofv3.jsonl")
    run(
        [rtl_pmc, "--sim", arch, "--exec", "--", sys.executable, rocprofv3, "--pmc", *COUNTERS,
         "--kernel-trace", *fmt, "-d", theirs, "-o", "run", "--", app, *args],
        env,
        out / "rocprofv3.log",
    )
    env["RTL_SIM_GROUND_TRUTH"] = str(out / "truth-rtl-pmc.jsonl")
    run(
        [rtl_pmc, "--sim", arch, "--pmc", *COUNTERS, "--kernel-trace", *fmt, "-d", ours, "-o",
         "run", "--", app, *args],
        env,
        out / "rtl-pmc.log",
    )
    return theirs, ours


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


def find(directory, name):
    """A tool's file named `run_NAME`: rocprofv3 writes it at the top, rtl-pmc in each pass."""
    hits = sorted(directory.rglob(f"run_{name}"))
    return hits[0] if hits else None


# The differences docs/rocprofv3.md ("Where rtl-pmc's files differ from rocprofv3's") explains:
# (workload or None for all, pattern of what differs, the explanation's title).
DOCUMENTED = [
    ("gfx950", r"(kernel_trace|counter_collection)\.csv (VGPR_Count|Accum_VGPR_Count)", "Register counts on gfx950"),
    ("gfx950", r"json value \.kernel_symbols\[\]\.(arch|accum)_vgpr_count", "Register counts on gfx950"),
    (None, r"rocpd (kernel_symbols|rocpd_info_kernel_symbol|info_kernel_symbol rows|info_code_object rows)", "Kernel symbols and code objects that were not dispatched"),
    (None, r"rocpd kernel_dispatch rows", "Kernel names in rocpd and JSON"),
    (None, r"json value \.kernel_symbols\[\]\.kernel_name", "Kernel names in rocpd and JSON"),
    (None, r"json items only rocprofv3 has \.(kernel_symbols|code_objects)\[\]", "Kernel symbols and code objects that were not dispatched"),
    (None, r"rocpd (pmc_events|rocpd_pmc_event|pmc_event rows)", "One rocpd_pmc_event row per counter"),
    (None, r"rocpd (rocpd_string|string rows)", "Strings of what is not traced"),
    (None, r"rocpd info_agent rows", "Agent details rtl-pmc does not read"),
    (None, r"rocpd info_pmc rows", "Counter descriptions; agent details rtl-pmc does not read"),
    (None, r"json value \.counters\[\]\.description", "Counter descriptions"),
    (None, r"rocpd info_process rows", "Configuration"),
    (None, r"rocpd info_queue rows", "rtl-pmc's additions"),
    (None, r"json keys only rocprofv3 writes \(documented\)", "see the list"),
    (None, r"json keys only rtl-pmc writes \(documented\)", "rtl-pmc's additions"),
]

# JSON keys one tool writes and the other does not, as docs/rocprofv3.md explains.
ONLY_ROCPROFV3_KEYS = (
    ".agents[].caches", ".agents[].io_links", ".agents[].mem_banks",
    ".agents[].runtime_visibility", ".metadata.config.", ".strings.callback_records[].",
    ".strings.buffer_records[].", ".kernel_symbols[].code_object_id",
    ".kernel_symbols[].kernarg_segment", ".kernel_symbols[].kernel_code_entry_byte_offset",
    ".kernel_symbols[].kernel_address", ".kernel_symbols[].demangled_kernel_name",
    ".kernel_symbols[].truncated_kernel_name", ".code_objects[].",
)
ONLY_RTL_PMC_KEYS = (
    ".callback_records.counter_collection[].lds_block_size_v",
    ".callback_records.counter_collection[].arch_vgpr_count",
    ".callback_records.counter_collection[].accum_vgpr_count",
    ".callback_records.counter_collection[].sgpr_count",
    ".callback_records.counter_collection[].rtl-pmc", ".rtl-pmc",
)


def truth_totals(path):
    """Each dispatch's counter totals in the run's ground truth, in the order the simulator ran them."""
    if not path.exists():
        return []
    totals = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        totals.append({c: float(sum(v)) for c, v in record.get("counters", {}).items()})
    return totals


def differing_truths(truth_a, truth_b):
    """The pairs of values (rocprofv3's run, rtl-pmc's run) that the two runs' ground truths give
    one dispatch's counter: cycle counters follow a dispatch's measured duration, which moves from
    run to run, so each tool is held to its own run's truth there."""
    a, b = truth_totals(truth_a), truth_totals(truth_b)
    if len(a) != len(b):
        return set()
    return {
        (x[c], y[c]) for x, y in zip(a, b) for c in x.keys() & y.keys() if x[c] != y[c]
    }


class Report:
    def __init__(self, workload, run_pairs=frozenset()):
        self.workload = workload
        self.differences = 0
        self.documented = 0
        self.run_pairs = run_pairs

    def per_run(self, x, y):
        """Whether two counter values differ only as their runs' ground truths do."""
        try:
            return (float(x), float(y)) in self.run_pairs
        except (TypeError, ValueError):
            return False

    def note(self, what, count):
        if count:
            print(f"  {self.workload}: {what}: {count} values differ as the two runs' ground truths "
                  "do, each equal to its own run's")

    def differ(self, what, detail):
        self.differences += 1
        why = next(
            (title for w, pattern, title in DOCUMENTED
             if w in (None, self.workload) and re.fullmatch(pattern, what)),
            None,
        )
        if why:
            self.documented += 1
            detail += f" [documented: {why}]"
        print(f"  {self.workload}: {what}: {detail}")


def compare_csv(report, theirs, ours, name, key, per_run):
    a, b = find(theirs, name), find(ours, name)
    if a is None or b is None:
        report.differ(name, f"missing (rocprofv3: {a}, rtl-pmc: {b})")
        return
    head_a, rows_a = read_csv(a)
    head_b, rows_b = read_csv(b)
    if head_a != head_b:
        report.differ(name, f"columns {head_a} against {head_b}")
        return
    if len(rows_a) != len(rows_b):
        report.differ(name, f"{len(rows_a)} rows against {len(rows_b)}")
    for rows in (rows_a, rows_b):
        for r in rows:
            if "Start_Timestamp" in r:
                r["Duration"] = str(int(r["End_Timestamp"]) - int(r["Start_Timestamp"]))
    if rows_a and "Duration" in rows_a[0]:
        head_a = head_a + ["Duration"]
    if "Dispatch_Id" in per_run:
        kept = [c for c in head_a if c not in PER_RUN and c not in per_run]
        project = lambda rows: sorted(tuple(r[c] for c in kept) for r in rows)
        pa, pb = project(rows_a), project(rows_b)
        if pa != pb:
            only_a = [r for r in pa if r not in pb]
            only_b = [r for r in pb if r not in pa]
            report.differ(
                name,
                f"{len(only_a)} rows only rocprofv3's, {len(only_b)} only rtl-pmc's "
                f"(dispatch ids aside); first: {dict(zip(kept, (only_a or only_b)[0]))}"[:600],
            )
        return
    by_key = {key(r): r for r in rows_b}
    for column in head_a:
        if column in PER_RUN or column in per_run:
            continue
        wrong = [
            (key(r), r[column], by_key[key(r)][column])
            for r in rows_a
            if key(r) in by_key and r[column] != by_key[key(r)][column]
        ]
        if column == "Counter_Value":
            report.note(f"{name} {column}", sum(report.per_run(x, y) for _, x, y in wrong))
            wrong = [(k, x, y) for k, x, y in wrong if not report.per_run(x, y)]
        if wrong:
            first = wrong[0]
            report.differ(
                f"{name} {column}",
                f"{len(wrong)} of {len(rows_a)} rows, first at {first[0]}: "
                f"rocprofv3 {first[1]!r}, rtl-pmc {first[2]!r}",
            )
    order_a = [key(r) for r in rows_a]
    order_b = [key(r) for r in rows_b]
    if order_a != order_b and sorted(order_a) == sorted(order_b):
        report.differ(name, "same rows in another order")


def check_timestamps(report, tool, directory, truth):
    """Every dispatch's start and end in the kernel trace are a dispatch's of the run's ground truth,
    and its duration equals the other tool's (checked as a column of its own)."""
    path = find(directory, "kernel_trace.csv")
    if path is None or not truth.exists():
        return
    real = set()
    for line in truth.read_text().splitlines():
        record = json.loads(line)
        real.add((int(record["start"]), int(record["end"])))
    _, rows = read_csv(path)
    wrong = [r for r in rows if (int(r["Start_Timestamp"]), int(r["End_Timestamp"])) not in real]
    if wrong:
        report.differ(f"{tool} kernel_trace.csv timestamps", f"{len(wrong)} of {len(rows)} rows not in ground truth")


# Columns of rocpd tables that differ between two executions (row ids, the run's GUID, the
# node's hash, processes, threads, times, addresses of a loaded code object, the environment).
ROCPD_PER_RUN = {
    "id", "guid", "nid", "pid", "ppid", "tid", "start", "end", "init", "fini", "hash",
    "environment", "kernel_object", "load_base", "load_delta", "uri", "stack_id",
    "parent_stack_id", "value",
}

# Columns that refer to another table's row, compared by what that row names:
# column -> (table, column named).
ROCPD_REFERENCES = {
    "name_id": ("string", "string"),
    "category_id": ("string", "string"),
    "region_name_id": ("string", "string"),
    "agent_id": ("info_agent", "absolute_index"),
    "kernel_id": ("info_kernel_symbol", "kernel_name"),
    "pmc_id": ("info_pmc", "name"),
    "event_id": ("event", "stack_id"),
    "code_object_id": ("info_code_object", "agent_id"),
}


def rocpd_tables(d):
    """rocpd's tables of database `d` by their name without `rocpd_` and the GUID."""
    rows = d.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%'")
    return {strip_guid(r[0])[len("rocpd_"):]: r[0] for r in rows}


def rocpd_rows(d, tables, table, per_run):
    """`table`'s rows as sorted tuples of (column, value), per-run columns left out and
    references replaced by what they name."""
    cursor = d.execute(f"SELECT * FROM {tables[table]}")
    columns = [c[0] for c in cursor.description]
    lookups = {}
    for column in columns:
        if column in ROCPD_REFERENCES and ROCPD_REFERENCES[column][0] in tables:
            other, named = ROCPD_REFERENCES[column]
            lookups[column] = dict(d.execute(f"SELECT id, {named} FROM {tables[other]}").fetchall())
    out = []
    for row in cursor.fetchall():
        kept = []
        for column, value in zip(columns, row):
            if column in per_run:
                continue
            if column in lookups:
                value = ("->", lookups[column].get(value, value))
            if column == "extdata" and isinstance(value, str) and value.startswith("{"):
                # Each tool's own handles of agents aside.
                extdata = strip_per_run(json.loads(value))
                for handle in ("id", "agent_id"):
                    extdata.pop(handle, None)
                value = json.dumps(extdata, sort_keys=True)
            kept.append((column, value))
        out.append(tuple(kept))
    return sorted(out, key=repr)


def compare_rocpd(report, theirs, ours, workload_per_run=frozenset()):
    a, b = sorted(theirs.rglob("*.db")), [p for p in sorted(ours.rglob("*.db"))]
    if not a or not b:
        report.differ("rocpd", f"missing (rocprofv3: {a}, rtl-pmc: {b})")
        return
    da, db = sqlite3.connect(a[0]), sqlite3.connect(b[0])
    def names(d, kind):
        rows = d.execute("SELECT name FROM sqlite_master WHERE type = ?", (kind,))
        return {r[0] for r in rows}

    common = set()
    for kind in ("table", "view"):
        # rtl-pmc's own tables and views (rtl_*) and SQLite's statistics are extra by design.
        ours_only = lambda n: n.startswith(("rtl_", "sqlite_")) or n == "rocpd_op"
        in_a = {strip_guid(n) for n in names(da, kind) if not n.startswith("sqlite_")}
        in_b = {strip_guid(n) for n in names(db, kind) if not ours_only(n)}
        if in_a != in_b:
            report.differ(f"rocpd {kind}s", f"only rocprofv3: {sorted(in_a - in_b)}, only rtl-pmc: {sorted(in_b - in_a)}")
        if kind == "view":
            common = in_a & in_b
    for view in sorted(common):
        try:
            rows_a = da.execute(f"SELECT count(*) FROM {view}").fetchone()[0]
            rows_b = db.execute(f"SELECT count(*) FROM {view}").fetchone()[0]
        except sqlite3.Error as e:
            report.differ(f"rocpd {view}", str(e))
            continue
        if rows_a != rows_b:
            report.differ(f"rocpd {view}", f"{rows_a} rows against {rows_b}")
    ta, tb = rocpd_tables(da), rocpd_tables(db)
    for table in sorted(set(ta) & set(tb)):
        # A pmc event's value is compared through counters_collection below, by dispatch.
        per_run = ROCPD_PER_RUN - ({"value"} if table == "metadata" else set())
        if "Dispatch_Id" in workload_per_run:
            per_run = per_run | {"dispatch_id", "queue_id", "event_id", "correlation_id"}
        ra, rb = rocpd_rows(da, ta, table, per_run), rocpd_rows(db, tb, table, per_run)
        if table == "metadata":
            # The run's GUID, in two forms.
            ra = [r for r in ra if dict(r)["tag"] not in ("uuid", "guid")]
            rb = [r for r in rb if dict(r)["tag"] not in ("uuid", "guid")]
        if ra == rb:
            continue
        only_a = [r for r in ra if r not in rb]
        only_b = [r for r in rb if r not in ra]
        detail = f"{len(ra)} rows against {len(rb)}; {len(only_a)} only rocprofv3's, {len(only_b)} only rtl-pmc's"
        if only_a and only_b:
            x, y = only_a[0], only_b[0]
            cols = [c for (c, v) in x if (c, v) not in y]
            detail += f"; first pair differs in {cols}: " + ", ".join(
                f"{c}: {dict(x)[c]!r} against {dict(y).get(c)!r}" for c in cols[:4]
            )
        elif only_a:
            detail += f"; first: {only_a[0]}"
        report.differ(f"rocpd {table} rows", detail[:1200])
    query = (
        "SELECT dispatch_id, counter_name, value FROM counters_collection "
        "ORDER BY dispatch_id, counter_name"
    )
    try:
        va, vb = da.execute(query).fetchall(), db.execute(query).fetchall()
        if len(va) == len(vb):
            runs = [i for i, (x, y) in enumerate(zip(va, vb)) if x != y and x[:2] == y[:2] and report.per_run(x[2], y[2])]
            report.note("rocpd counters_collection values", len(runs))
            for i in runs:
                vb[i] = va[i]
        if va != vb:
            report.differ("rocpd counters_collection values", f"{len(va)} rows against {len(vb)}, first difference {next((x, y) for x, y in zip(va, vb) if x != y) if len(va) == len(vb) else ''}")
    except sqlite3.Error as e:
        report.differ("rocpd counters_collection", str(e))


def strip_guid(name):
    """rocpd table names end in the run's GUID (`rocpd_kernel_dispatch_<guid>`)."""
    parts = name.split("_")
    if len(parts) > 5 and len(parts[-1]) == 12 and all(c in "0123456789abcdef" for c in parts[-1]):
        return "_".join(parts[:-5])
    return name


def key_paths(value, prefix=""):
    if isinstance(value, dict):
        out = {prefix or "."}
        for k, v in value.items():
            out |= key_paths(v, f"{prefix}.{k}")
        return out
    if isinstance(value, list):
        out = {prefix + "[]"}
        for v in value[:64]:
            out |= key_paths(v, prefix + "[]")
        return out
    return {prefix}


# JSON keys whose values differ between two executions: processes, threads, times, addresses
# of loaded code, where each tool was told to write, and the node's identifiers (rocprofv3
# writes 0 for these).
JSON_PER_RUN = {
    "thread_id", "pid", "init_time", "fini_time", "start_timestamp", "end_timestamp",
    "kernel_object", "kernel_address", "load_base", "load_delta", "memory_base", "uri",
    "output_path", "raw_output_path", "tmp_directory", "raw_tmp_directory",
}
JSON_PER_RUN_PATHS = {".metadata.node.id", ".metadata.node.hash", ".agents[].id"}


def strip_per_run(value):
    if isinstance(value, dict):
        return {k: strip_per_run(v) for k, v in value.items() if k not in JSON_PER_RUN}
    if isinstance(value, list):
        return [strip_per_run(v) for v in value]
    return value


class JsonIds:
    """A document's own handles, for comparing what they name: agents by KFD node, counters
    by name, kernels by name."""

    def __init__(self, tool, unordered_dispatches=False):
        self.unordered_dispatches = unordered_dispatches
        self.agents = {a["id"]["handle"]: a.get("node_id") for a in tool.get("agents", [])}
        self.counters = {c["id"]["handle"]: c["name"] for c in tool.get("counters", [])}
        self.kernels = {
            k.get("kernel_id", i): k.get("formatted_kernel_name", "")
            for i, k in enumerate(tool.get("kernel_symbols", []))
        }

    def named(self, key, value, parent):
        """`value` of `key` as what it names."""
        if parent == "agent_id" and key == "handle":
            return ("agent", self.agents.get(value, value))
        if parent in ("counter_id", "id") and key == "handle" and value in self.counters:
            return ("counter", self.counters[value])
        if key == "counter_id" and isinstance(value, int):
            return ("counter", self.counters.get(value, value))
        if key == "instance_id" and isinstance(value, int):
            return ("counter", self.counters.get(value >> 48, value >> 48), value & ((1 << 48) - 1))
        if key == "kernel_id":
            return ("kernel", self.kernels.get(value, value))
        return value


def list_key(generic, item, index, ids):
    """How items of the list at `generic` are matched between the two documents."""
    if not isinstance(item, dict):
        return index
    if ids.unordered_dispatches and generic.endswith((".counter_collection[]", ".kernel_dispatch[]")):
        return index
    if generic.endswith(".agents[]"):
        return f"node={item.get('node_id')}"
    if generic == ".counters[]":
        return f"{item['name']}@{ids.agents.get(item['agent_id']['handle'])}"
    if generic.endswith((".counter_collection[]", ".kernel_dispatch[]")):
        info = item.get("dispatch_info") or item.get("dispatch_data", {}).get("dispatch_info", {})
        return f"dispatch={info.get('dispatch_id')}"
    if generic.endswith(".kernel_symbols[]"):
        return f"kernel={item.get('formatted_kernel_name', '')}"
    return index


def flatten(value, ids, out, generic="", keyed="", key=None, parent=None):
    """`out[keyed path] = (generic path, leaf value)` for every leaf of `value`."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k in JSON_PER_RUN or f"{generic}.{k}" in JSON_PER_RUN_PATHS:
                continue
            flatten(v, ids, out, f"{generic}.{k}", f"{keyed}.{k}", k, key)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            label = list_key(generic + "[]", v, i, ids)
            flatten(v, ids, out, generic + "[]", f"{keyed}[{label}]", key, parent)
    else:
        out[keyed] = (generic, ids.named(key, value, parent))


def dispatch_order(record):
    """A dispatch record's kernel, sizes and values, what both tools' records have alike."""
    info = record.get("dispatch_info") or record["dispatch_data"]["dispatch_info"]
    keyed = [info.get(k) for k in ("kernel_id", "grid_size", "workgroup_size")]
    return json.dumps([keyed, record.get("records", [])], sort_keys=True)


def canonical_dispatches(tool, ids):
    """The document's dispatch records without their dispatch ids, queues and correlation ids,
    in a canonical order, for workloads whose dispatch ids differ from run to run."""
    def strip(record):
        record = strip_per_run(record)
        for value in record.get("records", []):
            value["counter_id"] = ids.counters.get(value["counter_id"]["handle"])
        for part in (record, record.get("dispatch_data", {})):
            part.pop("correlation_id", None)
            info = part.get("dispatch_info")
            if info:
                info.pop("dispatch_id", None)
                info.pop("queue_id", None)
                info["kernel_id"] = ids.named("kernel_id", info.get("kernel_id"), "dispatch_info")
        return record
    for kind, records in (("callback", tool["callback_records"]), ("buffer", tool["buffer_records"])):
        for name in ("counter_collection", "kernel_dispatch"):
            if name in records:
                records[name] = sorted((strip(r) for r in records[name]), key=dispatch_order)


def compare_json(report, theirs, ours, per_run=frozenset()):
    a, b = find(theirs, "results.json"), sorted(ours.glob("*.json"))
    b = [p for p in b if p.name != "plan.json"]
    if a is None or not b:
        report.differ("json", f"missing (rocprofv3: {a}, rtl-pmc: {b})")
        return
    ja, jb = json.loads(a.read_text()), json.loads(b[0].read_text())
    pa, pb = key_paths(ja), key_paths(jb)
    tool = ".rocprofiler-sdk-tool[]"
    only_a = sorted(p[len(tool):] for p in pa - pb if p.startswith(tool))
    only_b = sorted(p[len(tool):] for p in pb - pa if p.startswith(tool))
    for tool_name, only, known in (("rocprofv3", only_a, ONLY_ROCPROFV3_KEYS), ("rtl-pmc", only_b, ONLY_RTL_PMC_KEYS)):
        documented = [k for k in only if k.startswith(known)]
        others = [k for k in only if not k.startswith(known)]
        if others:
            report.differ(f"json keys only {tool_name} writes", f"{len(others)}: {others[:8]}")
        if documented:
            report.differ(f"json keys only {tool_name} writes (documented)", f"{len(documented)}: {documented[:4]}")
    ta, tb = ja["rocprofiler-sdk-tool"][0], jb["rocprofiler-sdk-tool"][0]
    unordered = "Dispatch_Id" in per_run
    ids_a, ids_b = JsonIds(ta, unordered), JsonIds(tb, unordered)
    if unordered:
        canonical_dispatches(ta, ids_a)
        canonical_dispatches(tb, ids_b)
    fa, fb = {}, {}
    flatten(ta, ids_a, fa)
    flatten(tb, ids_b, fb)
    differing = {}
    per_run_values = 0
    for keyed, (generic, value) in fa.items():
        if keyed not in fb:
            continue
        if fb[keyed][1] != value:
            if generic.endswith(".value") and report.per_run(value, fb[keyed][1]):
                per_run_values += 1
                continue
            differing.setdefault(generic, []).append((keyed, value, fb[keyed][1]))
    report.note("json counter values", per_run_values)
    for generic, wrong in sorted(differing.items()):
        keyed, x, y = wrong[0]
        total = sum(1 for g, _ in fa.values() if g == generic)
        report.differ(
            f"json value {generic}",
            f"{len(wrong)} of {total}, first at {keyed}: rocprofv3 {x!r}, rtl-pmc {y!r}"[:400],
        )
    # List items one document has and the other does not, once per list.
    present = {h for h, _ in fb.values()}
    items = {}
    for keyed, (generic, _) in fa.items():
        if keyed in fb or generic not in present:
            continue
        # The outermost list item of `keyed` that the other document lacks, if any.
        item, cut = None, 0
        while "]" in keyed[cut:]:
            cut = keyed.index("]", cut) + 1
            if not any(k.startswith(keyed[:cut]) for k in fb):
                item = keyed[:cut]
                break
        if item is None:
            continue
        depth = item.count("[")
        parts = generic.split("[]")
        lists = "[]".join(parts[:depth]) + "[]"
        items.setdefault(lists, set()).add(item)
    for lists, found in sorted(items.items()):
        report.differ(f"json items only rocprofv3 has {lists}", f"{len(found)}: {sorted(found)[:4]}"[:300])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rocprofv3", help="path of AMD's rocprofv3 launcher")
    parser.add_argument("--out", default="/tmp/rtl-pmc-compare", help="where both tools write")
    parser.add_argument("--rtl-pmc", default=str(ROOT / "target/debug/rtl-pmc"))
    parser.add_argument("--app", default=str(ROOT / "target/debug/rtl-demo-app"))
    parser.add_argument("--only", nargs="*", help="workload names to run (default: all)")
    args = parser.parse_args()
    # Each tool runs in its workload's directory.
    for name in ("rocprofv3", "rtl_pmc", "app"):
        if "/" in getattr(args, name):
            setattr(args, name, str(Path(getattr(args, name)).resolve()))
    total = documented = 0
    for name, arch, app_args, per_run in WORKLOADS:
        if args.only and name not in args.only:
            continue
        out = Path(args.out).resolve() / name
        subprocess.run(["rm", "-rf", str(out)], check=True)
        out.mkdir(parents=True)
        theirs, ours = profile(args.rocprofv3, args.rtl_pmc, args.app, arch, app_args, out)
        report = Report(name, differing_truths(out / "truth-rocprofv3.jsonl", out / "truth-rtl-pmc.jsonl"))
        print(f"{name}: rtl-pmc --sim {arch} ... -- rtl-demo-app {' '.join(app_args)}")
        by_dispatch = lambda r: int(r["Dispatch_Id"])
        by_counter = lambda r: (int(r["Dispatch_Id"]), r["Counter_Name"])
        compare_csv(report, theirs, ours, "kernel_trace.csv", by_dispatch, per_run)
        compare_csv(report, theirs, ours, "counter_collection.csv", by_counter, per_run)
        compare_csv(report, theirs, ours, "agent_info.csv", lambda r: r["Node_Id"], per_run)
        check_timestamps(report, "rocprofv3", theirs, out / "truth-rocprofv3.jsonl")
        check_timestamps(report, "rtl-pmc", ours, out / "truth-rtl-pmc.jsonl")
        compare_rocpd(report, theirs, ours, per_run)
        compare_json(report, theirs, ours, per_run)
        if report.differences == 0:
            print(f"  {name}: every compared file, column and value equal")
        total += report.differences
        documented += report.documented
    print(f"{total} differences, {documented} of them documented in docs/rocprofv3.md")
    sys.exit(1 if total > documented else 0)


if __name__ == "__main__":
    main()
