#!/usr/bin/env python3
"""Generate the per-architecture counter definitions of rtl-pmc.

Reads the fact tables in arch-defs/data/ (counters.csv, blocks.csv, dimensions.csv,
topologies.csv, descriptions.csv) and writes:

  arch-defs/<arch>.yaml         one file per architecture: its own blocks and counters, the
                                shared groups it includes, and a reference topology
  arch-defs/shared/<group>.yaml definitions that several architectures have in identical form

A definition (block + event, or expression) that is identical on a set of architectures is
written once, in the shared group of exactly that set, and included by reference from each
architecture file: nothing is copied between files.

Architecture names match exactly, as in rocprofiler-sdk: the family labels of counters.csv
(gfx9, gfx10, gfx11, gfx12) apply only to an agent named exactly that, and no aqlprofile block
table exists for such a name, so family rows are not part of any architecture here.

Usage: python3 arch-defs/generate.py   (from anywhere; rewrites the YAML files in place)
"""

import csv
import json
import math
import os
import re
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
SHARED = os.path.join(HERE, "shared")

ARCHS = ["gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950",
         "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1200", "gfx1201"]

# Names for groups of architectures, used to name shared files. Longest first.
GROUP_NAMES = [
    (set(ARCHS), "all"),
    ({"gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"}, "gfx9-cdna"),
    ({"gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1200", "gfx1201"}, "rdna"),
    ({"gfx940", "gfx941", "gfx942"}, "gfx94x"),
    ({"gfx1100", "gfx1101", "gfx1102"}, "gfx11"),
    ({"gfx1200", "gfx1201"}, "gfx12"),
]

# Reference chip per architecture (product names of topologies.csv); see data/README.md.
REFERENCE_PRODUCT = {
    "gfx908": "MI100", "gfx90a": "MI210", "gfx940": "MI300A", "gfx941": "MI300X",
    "gfx942": "MI300X", "gfx950": "MI355X", "gfx1100": "Radeon RX 7900 XTX",
    "gfx1201": "Radeon RX 9070 XT",
}
# gfx1102's reference chip (Radeon PRO W7500) is known only by its geometry (data/README.md).
EXTRA_REFERENCE = {
    "gfx1102": ("Radeon PRO W7500", {"num_xcc": 1, "simd_count": 56, "simd_per_cu": 2,
                                     "array_count": 4, "simd_arrays_per_engine": 2,
                                     "wave_front_size": 32, "max_waves_per_simd": 16,
                                     "lds_size_in_kb": 64}),
}
TOPOLOGY_PROPERTIES = ["num_xcc", "simd_count", "simd_per_cu", "array_count",
                       "simd_arrays_per_engine", "cu_per_simd_array", "wave_front_size",
                       "max_waves_per_simd", "lds_size_in_kb", "gfx_target_version"]


def read_csv(name):
    with open(os.path.join(DATA, name), newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def group_name(archs):
    archs = set(archs)
    for members, name in GROUP_NAMES:
        if archs == members:
            return name
    parts = []
    for members, name in GROUP_NAMES[1:]:
        if members <= archs:
            parts.append((min(ARCHS.index(a) for a in members), name))
            archs -= members
    parts += [(ARCHS.index(a), a) for a in archs]
    return "_".join(name for _, name in sorted(parts))


def q(text):
    """A YAML double-quoted scalar (JSON string syntax is valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def block_dimensions(block, declared):
    """Sample layout below XCC, outermost first, as aqlprofile's buffer holds it."""
    dims = []
    if "INSTANCE" in declared:
        dims.append("INSTANCE")
    if block["per_se"] == "1":
        dims.append("SE")
    if block["per_sa"] == "1":
        dims.append("SA")
    if block["per_wgp"] == "1":
        dims.append("WGP")
    return dims


def block_record(row, declared):
    notes = row["notes"]
    scaled = "min(16, ceil(cu_count/array_count)+1)" in notes
    record = {
        "name": row["block"],
        "aql_block_id": int(row["aql_block_id"]),
        "counters_per_pass": int(row["counters_per_pass"]),
        # For CU-scaled blocks the table value is the cap (16); the instance count is computed
        # from the topology.
        "instances_per_xcc": 16 if scaled else int(row["instances_per_xcc"]),
        "dimensions": block_dimensions(row, declared),
    }
    if scaled:
        record["scaled_by_cus"] = True
    if re.search(r"attr [A-Z_|]*\bAID\b", notes):
        # Read once per pass ahead of the per-XCC data: no XCC coordinate.
        record["per_xcc"] = False
    if "alias of the SQ hardware block" in notes:
        record["budget"] = "SQ"
    if row["max_event_id"]:
        record["max_event_id"] = int(row["max_event_id"])
    return record


def block_yaml(record):
    fields = [f"name: {record['name']}", f"aql_block_id: {record['aql_block_id']}",
              f"counters_per_pass: {record['counters_per_pass']}",
              f"instances_per_xcc: {record['instances_per_xcc']}"]
    if record.get("scaled_by_cus"):
        fields.append("scaled_by_cus: true")
    if record.get("per_xcc") is False:
        fields.append("per_xcc: false")
    fields.append("dimensions: [" + ", ".join(record["dimensions"]) + "]")
    if "budget" in record:
        fields.append(f"budget: {record['budget']}")
    if "max_event_id" in record:
        fields.append(f"max_event_id: {record['max_event_id']}")
    return "  - {" + ", ".join(fields) + "}\n"


def counter_yaml(record, descriptions):
    name = record["name"]
    fields = [f"name: {name}"]
    if record["kind"] == "basic":
        fields += [f"block: {record['block']}", f"event: {record['event']}"]
    else:
        fields.append(f"expression: {q(record['expression'])}")
    if record["unit"]:
        fields.append(f"unit: {q(record['unit'])}")
    fields.append(f"description: {q(descriptions(name, record))}")
    return "  - {" + ", ".join(fields) + "}\n"


def fallback_description(name, record, describe):
    """Descriptions for counters without a hand-written one, built from the definition."""
    expression = record.get("expression", "")
    for op, phrase in (("sum", "summed over"), ("avr", "averaged over"),
                       ("min", "minimum over"), ("max", "maximum over")):
        if expression.replace(" ", "") and name.endswith("_" + op):
            base = name[: -len(op) - 1]
            if expression.replace(" ", "") == f"reduce({base},{op})":
                return f"{base} {phrase} every instance and dimension."
    if record["kind"] == "derived":
        return f"Computed as {expression}."
    return describe(record)


BLOCK_PHRASES = {
    "SQ": "Shader sequencer", "SQC": "Shader sequencer cache", "SPI": "Shader processor input",
    "TA": "Texture addresser", "TD": "Texture data unit", "TCP": "Vector L1 cache",
    "TCC": "L2 cache", "TCA": "L2 cache arbiter", "GL2C": "L2 cache", "GRBM": "Graphics engine",
    "CPC": "Compute command processor", "CPF": "Command processor fetcher",
}

# Words for the parts of hardware counter names, used to describe counters that have no
# hand-written description.
TOKEN_WORDS = {
    "INSTS": "instructions issued", "INST": "instruction", "STALL": "stall", "STALLED": "stalled",
    "REQ": "requests", "VALU": "vector ALU", "SALU": "scalar ALU", "BUSY": "busy cycles",
    "EA0": "to memory", "EA": "to memory", "MC": "to memory", "WRREQ": "write requests",
    "RDREQ": "read requests", "WRREQS": "write requests", "CYCLES": "cycles", "CYCLE": "cycles",
    "ATOMIC": "atomic", "LDS": "LDS", "READ": "read", "WRITE": "write", "RD": "read",
    "WR": "write", "MFMA": "matrix (MFMA)", "WAVEFRONTS": "wavefronts", "WAVEFRONT": "wavefronts",
    "UTCL1": "L1 TLB (UTCL1)", "UTCL2": "L2 TLB (UTCL2)", "FULL": "full",
    "32B": "of 32 bytes", "64B": "of 64 bytes", "96B": "of 96 bytes", "128B": "of 128 bytes",
    "CSN": "compute shader", "CSQ": "compute queue", "LEVEL": "in flight (accumulate for latency)",
    "DRAM": "to DRAM", "GMI": "to other dies over GMI", "IO": "to I/O (PCIe)",
    "FLAT": "flat", "ACTIVE": "active", "CREDIT": "credit", "WAVE": "wave", "WAVES": "waves",
    "DCACHE": "scalar data cache", "ICACHE": "instruction cache", "VMEM": "vector memory",
    "SMEM": "scalar memory", "BUFFER": "buffer", "FIFO": "FIFO", "TOTAL": "total",
    "MISS": "misses", "MISSES": "misses", "HIT": "hits", "HITS": "hits", "DATA": "data",
    "BY": "by", "LOAD": "load", "STORE": "store", "LATENCY": "latency (cycles, summed)",
    "TRANSLATION": "translation", "THREADGROUPS": "workgroups", "IDLE": "idle",
    "ADDR": "address", "RET": "return", "UNCACHED": "uncached", "WRITEBACK": "write-backs",
    "EVICT": "evictions", "PROBE": "probes", "SECTORS": "sectors", "WAIT": "waiting",
    "ANY": "any", "TAGCONFLICT": "tag conflict", "CONFLICT": "conflict", "BANK": "bank",
    "INFLIGHT": "in flight", "CACHE": "cache", "ACCESSES": "accesses", "COALESCED": "coalesced",
    "COALESCEABLE": "coalesceable", "COALESCABLE": "coalesceable", "WITH": "with",
    "WITHOUT": "without", "NORMAL": "normal", "PENDING": "pending", "UC": "uncached",
    "NC": "non-coherent", "CC": "coherent", "RW": "read-write", "OCCUPANCY": "occupancy",
    "F16": "FP16", "F32": "FP32", "F64": "FP64", "BF16": "BF16", "FP16": "FP16", "FP32": "FP32",
    "FP64": "FP64", "MOPS": "operations (in 512-op units)", "FLOPS": "floating-point ops",
    "TRANS": "transcendental", "FMA": "fused multiply-add", "ADD": "add", "MUL": "multiply",
    "INT32": "32-bit integer", "INT64": "64-bit integer", "TC": "texture cache", "TCC": "L2",
    "TCP": "vector L1", "TA": "texture addresser", "TD": "texture data", "SPI": "SPI",
    "GDS": "global data share", "STAT": "status", "NUM": "number of", "LT": "below",
    "EQ": "equal to", "LTE": "at most", "VOLATILE": "volatile", "STREAMING": "streaming",
    "BYPASS": "bypass", "REQUEST": "requests", "PERMISSION": "permission", "TAG": "tag",
}


def basic_fallback(record):
    """A description composed from the parts of a hardware counter's name."""
    block = record["block"]
    name = record["name"]
    rest = name[len(block) + 1:] if name.startswith(block + "_") else name
    tokens = [token for token in rest.split("_") if token]
    # Read as English: "vector ALU FP32 instructions issued", "read requests to memory".
    if len(tokens) > 1 and tokens[0] in ("INSTS", "INST"):
        tokens = tokens[1:] + tokens[:1]
    if len(tokens) > 1 and tokens[0] in ("EA", "EA0", "MC"):
        tokens[0], tokens[1] = tokens[1], tokens[0]
    words = [TOKEN_WORDS.get(token, token) for token in tokens]
    subject = BLOCK_PHRASES.get(block, f"{block} block")
    return f"{subject} event {record['event']}: " + " ".join(words) + "."


def main():
    counters = read_csv("counters.csv")
    blocks = read_csv("blocks.csv")
    dims = {(r["arch"], r["block"]): r["dimension_order"].split(" x ") for r in read_csv("dimensions.csv")}
    topologies = read_csv("topologies.csv")
    descriptions = {r["name"]: r["description"] for r in read_csv("descriptions.csv")}

    def describe(name, record):
        return descriptions.get(name) or fallback_description(name, record, basic_fallback)

    # Definition (as a hashable tuple) -> set of architectures that have it exactly.
    counter_archs = defaultdict(set)
    for row in counters:
        if row["arch"] in ARCHS:
            key = (row["name"], row["kind"], row["block"], row["event"], row["expression"], row["unit"])
            counter_archs[key].add(row["arch"])
    block_archs = defaultdict(set)
    block_of = {}
    for row in blocks:
        record = block_record(row, dims[(row["arch"], row["block"])])
        key = json.dumps(record, sort_keys=True)
        block_archs[key].add(row["arch"])
        block_of[key] = record

    # Check every basic counter's block exists on its architecture.
    arch_blocks = {(r["arch"], r["block"]) for r in blocks}
    for (name, kind, block, *_), archs in counter_archs.items():
        for arch in archs:
            if kind == "basic" and (arch, block) not in arch_blocks:
                sys.exit(f"{arch}: counter {name} uses block {block}, which {arch} does not have")

    groups = defaultdict(lambda: {"blocks": [], "counters": []})
    for key, archs in block_archs.items():
        groups[frozenset(archs)]["blocks"].append(block_of[key])
    for key, archs in counter_archs.items():
        name, kind, block, event, expression, unit = key
        groups[frozenset(archs)]["counters"].append(
            {"name": name, "kind": kind, "block": block, "event": event,
             "expression": expression, "unit": unit})

    header = "# Generated by arch-defs/generate.py from arch-defs/data/*.csv; edit those, not this file.\n"
    os.makedirs(SHARED, exist_ok=True)
    for old in os.listdir(SHARED):
        if old.endswith(".yaml"):
            os.remove(os.path.join(SHARED, old))

    def body(group):
        out = "blocks:\n" if group["blocks"] else "blocks: []\n"
        for record in sorted(group["blocks"], key=lambda r: (r["aql_block_id"], r["name"])):
            out += block_yaml(record)
        out += "counters:\n" if group["counters"] else "counters: []\n"
        for record in sorted(group["counters"], key=lambda r: r["name"]):
            out += counter_yaml(record, describe)
        return out

    includes = defaultdict(list)
    for archs, group in sorted(groups.items(), key=lambda g: (-len(g[0]), group_name(g[0]))):
        if len(archs) == 1:
            continue
        name = group_name(archs)
        for arch in archs:
            includes[arch].append(name)
        members = [a for a in ARCHS if a in archs]
        with open(os.path.join(SHARED, name + ".yaml"), "w", encoding="utf-8") as f:
            f.write(header + "architectures: [" + ", ".join(members) + "]\n" + body(group))

    for arch in ARCHS:
        own = groups.get(frozenset([arch]), {"blocks": [], "counters": []})
        text = header + f"architecture: {arch}\n"
        text += "include: [" + ", ".join(includes[arch]) + "]\n"
        reference = None
        if arch in REFERENCE_PRODUCT:
            row = next(r for r in topologies if r["product"] == REFERENCE_PRODUCT[arch])
            props = {p: int(row[p]) for p in TOPOLOGY_PROPERTIES}
            props["max_engine_clk_fcompute"] = int(row["max_engine_clk_fcompute_mhz"])
            reference = (row["product"], props)
        elif arch in EXTRA_REFERENCE:
            reference = EXTRA_REFERENCE[arch]
        if reference:
            product, props = reference
            text += "reference_topology:\n"
            text += f"  product: {q(product)}\n"
            text += "  properties: {" + ", ".join(f"{k}: {v}" for k, v in props.items()) + "}\n"
        text += body(own)
        with open(os.path.join(HERE, arch + ".yaml"), "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
