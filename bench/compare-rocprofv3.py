#!/usr/bin/env python3
"""Runs rtl-pmc and AMD's rocprofv3 on the same workloads of the simulated GPU and compares their
files column by column and value by value.

    python3 bench/compare-rocprofv3.py ROCPROFV3 [--out DIR] [--only NAME...]

ROCPROFV3 is the `rocprofv3` launcher of a rocprofiler-sdk built outside the repository (see
docs/rocprofv3.md). Both tools count `SQ_WAVES GRBM_COUNT` with a kernel trace and write CSV, JSON
and rocpd. rocprofv3 runs under `rtl-pmc --sim ARCH --exec`, so it sees the simulated GPU as a
ROCm machine.

Each run is a separate execution, so what differs from run to run by nature (timestamps, process
and thread ids, GUIDs) is compared with each run's own simulator ground truth or left out; every
other column must be equal. Rows are matched by dispatch id (and counter name). The script prints
one line per file and column that differs, and exits 1 if any does.
"""

import argparse
import csv
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COUNTERS = ["SQ_WAVES", "GRBM_COUNT"]

# name, --sim configuration, application arguments, columns that differ from run to run too
# (threads creating queues at once number them in either order, in any tool or none)
WORKLOADS = [
    ("gfx942", "gfx942", [], set()),
    ("gfx942-threads", "gfx942", ["--threads", "2", "--queues", "2", "--iterations", "3"], {"Queue_Id"}),
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
    with open(log, "w") as out:
        status = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
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


class Report:
    def __init__(self, workload):
        self.workload = workload
        self.differences = 0

    def differ(self, what, detail):
        self.differences += 1
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
    by_key = {key(r): r for r in rows_b}
    for column in head_a:
        if column in PER_RUN or column in per_run:
            continue
        wrong = [
            (key(r), r[column], by_key[key(r)][column])
            for r in rows_a
            if key(r) in by_key and r[column] != by_key[key(r)][column]
        ]
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


def compare_rocpd(report, theirs, ours):
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
        in_a = {strip_guid(n) for n in names(da, kind)}
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
    query = (
        "SELECT dispatch_id, counter_name, value FROM counters_collection "
        "ORDER BY dispatch_id, counter_name"
    )
    try:
        va, vb = da.execute(query).fetchall(), db.execute(query).fetchall()
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


def compare_json(report, theirs, ours):
    a, b = find(theirs, "results.json"), sorted(ours.glob("*.json"))
    b = [p for p in b if p.name != "plan.json"]
    if a is None or not b:
        report.differ("json", f"missing (rocprofv3: {a}, rtl-pmc: {b})")
        return
    ja, jb = json.loads(a.read_text()), json.loads(b[0].read_text())
    pa, pb = key_paths(ja), key_paths(jb)
    only_a, only_b = sorted(pa - pb), sorted(pb - pa)
    if only_a:
        report.differ("json keys only rocprofv3 writes", f"{len(only_a)}: {only_a[:8]}")
    if only_b:
        report.differ("json keys only rtl-pmc writes", f"{len(only_b)}: {only_b[:8]}")
    for name in ("kernel_dispatch",):
        ra = ja["rocprofiler-sdk-tool"][0]["buffer_records"].get(name, [])
        rb = jb["rocprofiler-sdk-tool"][0]["buffer_records"].get(name, [])
        if len(ra) != len(rb):
            report.differ(f"json buffer_records.{name}", f"{len(ra)} records against {len(rb)}")
    ca = ja["rocprofiler-sdk-tool"][0]["callback_records"].get("counter_collection", [])
    cb = jb["rocprofiler-sdk-tool"][0]["callback_records"].get("counter_collection", [])
    if len(ca) != len(cb):
        report.differ("json callback_records.counter_collection", f"{len(ca)} records against {len(cb)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rocprofv3", help="path of AMD's rocprofv3 launcher")
    parser.add_argument("--out", default="/tmp/rtl-pmc-compare", help="where both tools write")
    parser.add_argument("--rtl-pmc", default=str(ROOT / "target/debug/rtl-pmc"))
    parser.add_argument("--app", default=str(ROOT / "target/debug/rtl-demo-app"))
    parser.add_argument("--only", nargs="*", help="workload names to run (default: all)")
    args = parser.parse_args()
    total = 0
    for name, arch, app_args, per_run in WORKLOADS:
        if args.only and name not in args.only:
            continue
        out = Path(args.out) / name
        subprocess.run(["rm", "-rf", str(out)], check=True)
        out.mkdir(parents=True)
        theirs, ours = profile(args.rocprofv3, args.rtl_pmc, args.app, arch, app_args, out)
        report = Report(name)
        print(f"{name}: rtl-pmc --sim {arch} ... -- rtl-demo-app {' '.join(app_args)}")
        by_dispatch = lambda r: int(r["Dispatch_Id"])
        by_counter = lambda r: (int(r["Dispatch_Id"]), r["Counter_Name"])
        compare_csv(report, theirs, ours, "kernel_trace.csv", by_dispatch, per_run)
        compare_csv(report, theirs, ours, "counter_collection.csv", by_counter, per_run)
        compare_csv(report, theirs, ours, "agent_info.csv", lambda r: r["Node_Id"], per_run)
        check_timestamps(report, "rocprofv3", theirs, out / "truth-rocprofv3.jsonl")
        check_timestamps(report, "rtl-pmc", ours, out / "truth-rtl-pmc.jsonl")
        compare_rocpd(report, theirs, ours)
        compare_json(report, theirs, ours)
        if report.differences == 0:
            print(f"  {name}: every compared file, column and value equal")
        total += report.differences
    print(f"{total} differences")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
