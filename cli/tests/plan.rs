//! `rtl-pmc --plan` and input errors, through the built binary: every input form with its exact
//! plan, the examples of the rocprofv3 and rocprof v1 documentation, and every error message.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A scratch directory for one test's input files and fake KFD topology.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rtl-pmc-plan-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    /// A KFD topology with one CPU node and a GPU node per gfx_target_version.
    fn topology(&self, versions: &[u64]) -> String {
        let dir = self.0.join("topology");
        let node = |n: usize, text: String| {
            let d = dir.join("nodes").join(n.to_string());
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("properties"), text).unwrap();
        };
        node(
            0,
            "cpu_cores_count 8\nsimd_count 0\ngfx_target_version 0\n".into(),
        );
        for (i, v) in versions.iter().enumerate() {
            node(
                i + 1,
                format!(
                    "cpu_cores_count 0\nsimd_count 1216\nsimd_per_cu 4\narray_count 32\n\
                     simd_arrays_per_engine 1\ngfx_target_version {v}\n"
                ),
            );
        }
        dir.display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Output {
    stdout: String,
    stderr: String,
    code: i32,
}

/// Runs the binary in `dir` with no GPU visible unless `topology` is given.
fn rtl_pmc_in(dir: &Path, topology: Option<&str>, args: &[&str]) -> Output {
    let no_gpu = dir.join("no-topology");
    let out = Command::new(env!("CARGO_BIN_EXE_rtl-pmc"))
        .args(args)
        .current_dir(dir)
        .env(
            "RTL_PMC_KFD_TOPOLOGY",
            topology.map_or(no_gpu, PathBuf::from),
        )
        .output()
        .unwrap();
    Output {
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        code: out.status.code().unwrap_or(-1),
    }
}

fn rtl_pmc(args: &[&str]) -> Output {
    rtl_pmc_in(&std::env::temp_dir(), None, args)
}

/// Asserts a successful plan with exactly this stdout and these stderr notes.
fn assert_plan(out: &Output, stdout: &str, stderr: &str) {
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (0, stderr),
        "stdout: {}",
        out.stdout
    );
    assert_eq!(out.stdout, stdout);
}

/// Asserts an input error: exactly this one line on stderr, nothing on stdout, exit code 2.
fn assert_error(out: &Output, line: &str) {
    assert_eq!(out.stderr, format!("rtl-pmc: {line}\n"));
    assert_eq!((out.code, out.stdout.as_str()), (2, ""));
}

const V3_TXT: &str = "pmc: GPUBusy SQ_WAVES\npmc: GRBM_GUI_ACTIVE\n";

const V3_JSON: &str = r#"{
  "jobs": [
     {
        "pmc": ["SQ_WAVES", "GRBM_COUNT", "GRBM_GUI_ACTIVE"]
     },
     {
        "pmc": ["FETCH_SIZE", "WRITE_SIZE"],
        "kernel_include_regex": ".*_kernel",
        "kernel_exclude_regex": "multiply",
        "kernel_iteration_range": "[1-2],[3-4]",
        "output_file": "out",
        "output_format": [
           "csv",
           "json"
        ],
        "truncate_kernels": true
     }
  ]
}
"#;

/// rocprofv3's documented two-job input, verbatim (also run end to end by `tests/cli_outputs.rs`).
const V3_YAML: &str = include_str!("data/rocprofv3-jobs.yaml");

const V3_GROUPS_YAML: &str = r#"jobs:
  - pmc_groups: [["SQ_WAVES", "GRBM_COUNT"], ["GRBM_GUI_ACTIVE"]]
    pmc_group_interval: 4
"#;

const V3_GROUPS_JSON: &str = r#"{
   "jobs": [
      {
            "pmc_groups": [["SQ_WAVES", "GRBM_COUNT"], ["GRBM_GUI_ACTIVE"]],
            "pmc_group_interval": 4
      }
   ]
}
"#;

const V1_TXT: &str = "# Perf counters group 1
pmc : Wavefronts VALUInsts SALUInsts SFetchInsts FlatVMemInsts LDSInsts FlatLDSInsts GDSInsts VALUUtilization FetchSize
# Perf counters group 2
pmc : WriteSize L2CacheHit
# Filter by dispatches range, GPU index and kernel names
# supported range formats: \"3:9\", \"3:\", \"3\"
range: 1 : 4
gpu: 0 1 2 3
kernel: simple Pass1 simpleConvolutionPass2
";

const FETCH_WRITE_NOTE: &str =
    "does not fit one pass (TCC needs 5 counters (4 per pass)); split into 2 passes";

#[test]
fn pmc_groups_on_the_command_line() {
    let out = rtl_pmc(&[
        "--plan",
        "--arch",
        "gfx942",
        "--pmc",
        "SQ_WAVES",
        "GRBM_COUNT",
        "--pmc",
        "FETCH_SIZE,WRITE_SIZE",
    ]);
    assert_plan(
        &out,
        "pass 1: SQ_WAVES GRBM_COUNT\npass 2: FETCH_SIZE\npass 3: WRITE_SIZE\n\
         passes: 3 (lower bound: 3)\n",
        &format!("rtl-pmc: gfx942: --pmc group 2 {FETCH_WRITE_NOTE}\n"),
    );
}

#[test]
fn help_plan_example() {
    let help = rtl_pmc(&["--help"]).stdout;
    let example = "rtl-pmc --plan --arch gfx942 --pmc FETCH_SIZE WRITE_SIZE TCC_HIT TCC_MISS";
    assert!(help.contains(example), "{help}");
    let args: Vec<&str> = example.split(' ').skip(1).collect();
    assert_plan(
        &rtl_pmc(&args),
        "pass 1: FETCH_SIZE TCC_HIT\npass 2: WRITE_SIZE TCC_MISS\npasses: 2 (lower bound: 2)\n",
        "rtl-pmc: gfx942: --pmc group 1 does not fit one pass (TCC needs 7 counters (4 per pass)); split into 2 passes\n",
    );
}

#[test]
fn rocprofv3_text_example() {
    let s = Scratch::new("v3txt");
    let input = s.file("input.txt", V3_TXT);
    let out = rtl_pmc(&["--plan", "--arch", "gfx90a", "-i", &input]);
    assert_plan(
        &out,
        "pass 1: GPUBusy SQ_WAVES\npass 2: GRBM_GUI_ACTIVE\npasses: 2 (lower bound: 2)\n",
        "",
    );
}

#[test]
fn rocprofv3_json_and_yaml_examples() {
    let s = Scratch::new("v3jobs");
    for (name, text) in [("input.json", V3_JSON), ("input.yaml", V3_YAML)] {
        let input = s.file(name, text);
        let out = rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &input]);
        assert_plan(
            &out,
            "pass 1: SQ_WAVES GRBM_COUNT GRBM_GUI_ACTIVE\npass 2: FETCH_SIZE\npass 3: WRITE_SIZE\n\
             passes: 3 (lower bound: 3)\n",
            &format!("rtl-pmc: gfx942: {input} job 2 {FETCH_WRITE_NOTE}\n"),
        );
    }
}

#[test]
fn rocprofv3_multiplexing_examples() {
    let s = Scratch::new("v3groups");
    for (name, text) in [
        ("input.yaml", V3_GROUPS_YAML),
        ("input.json", V3_GROUPS_JSON),
    ] {
        let input = s.file(name, text);
        let out = rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &input]);
        assert_plan(
            &out,
            "pass 1: SQ_WAVES GRBM_COUNT | GRBM_GUI_ACTIVE (rotating every 4 dispatches)\n\
             passes: 1 (lower bound: 1)\n",
            "",
        );
    }
}

#[test]
fn rocprof_v1_example_is_split_where_it_does_not_fit() {
    let s = Scratch::new("v1");
    let input = s.file("input.txt", V1_TXT);
    let out = rtl_pmc(&["--plan", "--arch", "gfx90a", "-i", &input]);
    assert_plan(
        &out,
        "pass 1: Wavefronts VALUInsts SALUInsts SFetchInsts FlatVMemInsts LDSInsts FlatLDSInsts \
         GDSInsts FetchSize\npass 2: VALUUtilization\npass 3: WriteSize L2CacheHit\n\
         passes: 3 (lower bound: 3)\n",
        &format!(
            "rtl-pmc: gfx90a: {input}:2 does not fit one pass (SQ needs 10 counters (8 per \
             pass)); split into 2 passes\n"
        ),
    );
}

#[test]
fn command_line_groups_come_before_file_groups() {
    let s = Scratch::new("order");
    let input = s.file("input.txt", V3_TXT);
    let out = rtl_pmc(&[
        "--plan",
        "--arch",
        "gfx90a",
        "--pmc",
        "TA_TA_BUSY",
        "-i",
        &input,
    ]);
    assert_plan(
        &out,
        "pass 1: TA_TA_BUSY\npass 2: GPUBusy SQ_WAVES\npass 3: GRBM_GUI_ACTIVE\n\
         passes: 3 (lower bound: 3)\n",
        "",
    );
}

/// An extra-counter file in `s` defining `name` on gfx90a and gfx942 as `definition` (its
/// `block`+`event` or `expression` lines); the counter's definition is on line 8.
fn extra_counter_file(s: &Scratch, name: &str, definition: &str) -> String {
    s.file(
        "extra.yaml",
        &format!(
            "rocprofiler-sdk:
  counters-schema-version: 1
  counters:
    - name: {name}
      description: \"Unit: cycles\"
      properties: []
      definitions:
        - architectures: [gfx90a, gfx942]
{definition}"
        ),
    )
}

/// `--plan --arch ARCH -E EXTRA --pmc COUNTER SQ_WAVES`.
fn plan_extra(arch: &str, extra: &str, counter: &str) -> Output {
    rtl_pmc(&[
        "--plan", "--arch", arch, "-E", extra, "--pmc", counter, "SQ_WAVES",
    ])
}

#[test]
fn extra_counters_are_planned_like_built_in_ones() {
    let s = Scratch::new("extra");
    let extra = extra_counter_file(
        &s,
        "GRBM_GUI_ACTIVE_SUM",
        "          expression: reduce(GRBM_GUI_ACTIVE,max)*CU_NUM\n",
    );
    assert_plan(
        &plan_extra("gfx942", &extra, "GRBM_GUI_ACTIVE_SUM"),
        "pass 1: GRBM_GUI_ACTIVE_SUM SQ_WAVES\npasses: 1 (lower bound: 1)\n",
        "",
    );
}

#[test]
fn an_event_past_the_blocks_listed_events_is_planned_and_said() {
    // rocprof-compute's SQC_DCACHE_INFLIGHT_LEVEL: SQ event 337, which aqlprofile's gfx90a
    // tables do not reach (its SQ events end at 303) and no built-in counter of gfx90a names.
    let s = Scratch::new("past-events");
    let extra = extra_counter_file(
        &s,
        "SQC_DCACHE_INFLIGHT_LEVEL",
        "          block: SQ\n          event: 337\n",
    );
    let plan = |arch: &str| plan_extra(arch, &extra, "SQC_DCACHE_INFLIGHT_LEVEL");
    let stdout = "pass 1: SQC_DCACHE_INFLIGHT_LEVEL SQ_WAVES\npasses: 1 (lower bound: 1)\n";
    assert_plan(
        &plan("gfx90a"),
        stdout,
        &format!(
            "rtl-pmc: gfx90a: SQC_DCACHE_INFLIGHT_LEVEL ({extra}:8) is SQ event 337, past the \
             block's events aqlprofile lists (0-303) and no built-in counter's: it is collected as \
             given, and its value is whatever the GPU counts for that event\n"
        ),
    );
    // gfx942's SQ events reach 373: nothing to say.
    assert_plan(&plan("gfx942"), stdout, "");
}

#[test]
fn gpus_are_found_in_the_kfd_topology() {
    let s = Scratch::new("kfd");
    let one = s.topology(&[90010]);
    let out = rtl_pmc_in(&s.0, Some(&one), &["--plan", "--pmc", "GPUBusy"]);
    assert_plan(&out, "pass 1: GPUBusy\npasses: 1 (lower bound: 1)\n", "");
}

#[test]
fn every_architecture_present_is_planned() {
    let s = Scratch::new("kfd2");
    let two = s.topology(&[90402, 90010, 90402]);
    let out = rtl_pmc_in(
        &s.0,
        Some(&two),
        &[
            "--plan",
            "--pmc",
            "GRBM_COUNT",
            "GRBM_GUI_ACTIVE",
            "GRBM_CP_BUSY",
        ],
    );
    assert_plan(
        &out,
        "gfx942:\npass 1: GRBM_COUNT GRBM_GUI_ACTIVE\npass 2: GRBM_CP_BUSY\n\
         gfx90a:\npass 1: GRBM_COUNT GRBM_GUI_ACTIVE\npass 2: GRBM_CP_BUSY\n\
         passes: 2 (lower bound: 2)\n",
        "rtl-pmc: gfx942: --pmc group 1 does not fit one pass (GRBM needs 3 counters (2 per \
         pass)); split into 2 passes\n\
         rtl-pmc: gfx90a: --pmc group 1 does not fit one pass (GRBM needs 3 counters (2 per \
         pass)); split into 2 passes\n",
    );
    let out = rtl_pmc_in(&s.0, Some(&two), &["--plan", "--pmc", "GPUBusy"]);
    assert_error(
        &out,
        "--pmc: counter 'GPUBusy' is not available on gfx942 (it exists on gfx908, gfx90a, \
         gfx1030, gfx1100, gfx1101, gfx1102)",
    );
}

#[test]
fn counter_errors() {
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "--pmc", "SQ_WAVE"]),
        "--pmc: unknown counter 'SQ_WAVE' for gfx942; did you mean SQ_WAVES, SQ_WAVES_EQ_64, \
         SQ_WAVES_LT_16?",
    );
    let s = Scratch::new("counters");
    let txt = s.file(
        "input.txt",
        "pmc: SQ_WAVES\n# next\npmc:  GRBM_COUNT SQ_WAVEZ\n",
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &txt]),
        &format!("{txt}:3:18: unknown counter 'SQ_WAVEZ' for gfx942; did you mean SQ_WAVES?"),
    );
    let yaml = s.file("input.yaml", "jobs:\n  - pmc: [SQ_WAVES, SQ_WAVEZ]\n");
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &yaml]),
        &format!("{yaml}:2:21: unknown counter 'SQ_WAVEZ' for gfx942; did you mean SQ_WAVES?"),
    );
    let extra = s.file(
        "extra.yaml",
        "rocprofiler-sdk:
  counters-schema-version: 1
  counters:
    - name: GRBM_THREE
      description: three GRBM events
      properties: []
      definitions:
        - architectures: [gfx942]
          expression: GRBM_COUNT+GRBM_GUI_ACTIVE+GRBM_CP_BUSY
",
    );
    assert_error(
        &rtl_pmc(&[
            "--plan",
            "--arch",
            "gfx942",
            "-E",
            &extra,
            "--pmc",
            "GRBM_THREE",
        ]),
        "--pmc: gfx942: counter 'GRBM_THREE' cannot be collected in one pass: GRBM needs 3 \
         counters (2 per pass)",
    );
}

/// Extra counters on blocks aqlprofile collects wrongly on gfx9 GPUs, and one on SX event 0,
/// which it collects right.
const QUIRKY_COUNTERS: &str = "rocprofiler-sdk:
  counters-schema-version: 1
  counters:
    - name: MY_ATC
      description: an ATC event
      properties: []
      definitions:
        - architectures: [gfx90a, gfx942]
          block: ATC
          event: 3
    - name: MY_RPB
      description: an RPB event
      properties: []
      definitions:
        - architectures: [gfx942]
          block: RPB
          event: 1
    - name: MY_SX
      description: an SX event
      properties: []
      definitions:
        - architectures: [gfx942, gfx1100]
          block: SX
          event: 2
    - name: MY_SX_0
      description: SX event 0
      properties: []
      definitions:
        - architectures: [gfx942]
          block: SX
          event: 0
    - name: MY_GDS
      description: a GDS event
      properties: []
      definitions:
        - architectures: [gfx90a]
          block: GDS
          event: 5
    - name: MY_ATC_RATE
      description: ATC events per cycle
      properties: []
      definitions:
        - architectures: [gfx942]
          expression: MY_ATC/GRBM_COUNT
";

#[test]
fn counters_aqlprofile_collects_wrongly_are_refused() {
    let s = Scratch::new("quirks");
    let extra = s.file("extra.yaml", QUIRKY_COUNTERS);
    let plan = |arch: &str, counters: &[&str]| {
        let mut args = vec!["--plan", "--arch", arch, "-E", &extra, "--pmc"];
        args.extend_from_slice(counters);
        rtl_pmc(&args)
    };
    assert_error(
        &plan("gfx942", &["SQ_WAVES", "MY_ATC"]),
        "--pmc: counter 'MY_ATC' cannot be collected on gfx942: aqlprofile's v2 API decodes \
         the samples of block ATC out of place on gfx9 GPUs: its values would be those of other \
         counters",
    );
    assert_error(
        &plan("gfx90a", &["MY_ATC"]),
        "--pmc: counter 'MY_ATC' cannot be collected on gfx90a: aqlprofile's v2 API decodes \
         the samples of block ATC out of place on gfx9 GPUs: its values would be those of other \
         counters",
    );
    assert_error(
        &plan("gfx942", &["MY_RPB"]),
        "--pmc: counter 'MY_RPB' cannot be collected on gfx942: aqlprofile's v2 API decodes \
         the samples of block RPB out of place on gfx9 GPUs: its values would be those of other \
         counters",
    );
    assert_error(
        &plan("gfx942", &["MY_ATC_RATE"]),
        "--pmc: counter 'MY_ATC_RATE' cannot be collected on gfx942: it needs MY_ATC, and \
         aqlprofile's v2 API decodes the samples of block ATC out of place on gfx9 GPUs: its \
         values would be those of other counters",
    );
    assert_error(
        &plan("gfx942", &["MY_SX"]),
        "--pmc: counter 'MY_SX' cannot be collected on gfx942: aqlprofile programs block SX \
         with event 0 on gfx9 GPUs whatever the event asked for, so event 2 would read event \
         0's value",
    );
    assert_error(
        &plan("gfx90a", &["MY_GDS"]),
        "--pmc: counter 'MY_GDS' cannot be collected on gfx90a: aqlprofile programs block GDS \
         with event 0 on gfx9 GPUs whatever the event asked for, so event 5 would read event \
         0's value",
    );
    // SX event 0 reads what it asks for; RDNA programs SX selects with the event.
    assert_plan(
        &plan("gfx942", &["MY_SX_0"]),
        "pass 1: MY_SX_0\npasses: 1 (lower bound: 1)\n",
        "",
    );
    assert_plan(
        &plan("gfx1100", &["MY_SX"]),
        "pass 1: MY_SX\npasses: 1 (lower bound: 1)\n",
        "",
    );
    // From an input file, the refusal names the file, line and column; the application never runs.
    let txt = s.file("input.txt", "pmc: SQ_WAVES\npmc: GRBM_COUNT MY_ATC_RATE\n");
    let marker = s.0.join("ran");
    let topology = s.topology(&[90402]);
    let out = rtl_pmc_in(
        &s.0,
        Some(&topology),
        &[
            "-E",
            &extra,
            "-i",
            &txt,
            "--",
            "touch",
            marker.to_str().unwrap(),
        ],
    );
    assert_error(
        &out,
        &format!(
            "{txt}:2:17: counter 'MY_ATC_RATE' cannot be collected on gfx942: it needs MY_ATC, \
             and aqlprofile's v2 API decodes the samples of block ATC out of place on gfx9 GPUs: \
             its values would be those of other counters"
        ),
    );
    assert!(!marker.exists());
}

#[test]
fn strict_passes_refuses_a_split() {
    assert_error(
        &rtl_pmc(&[
            "--plan",
            "--strict-passes",
            "--arch",
            "gfx90a",
            "--pmc",
            "GRBM_COUNT",
            "GRBM_GUI_ACTIVE",
            "GRBM_CP_BUSY",
        ]),
        "gfx90a: --pmc group 1: the counters do not fit one pass (GRBM needs 3 counters (2 per \
         pass)); proposed split: pass 1: GRBM_COUNT GRBM_GUI_ACTIVE; pass 2: GRBM_CP_BUSY",
    );
}

#[test]
fn filter_errors() {
    let plan = |extra: &[&str]| {
        let mut args = vec!["--plan", "--arch", "gfx942", "--pmc", "SQ_WAVES"];
        args.extend_from_slice(extra);
        rtl_pmc(&args)
    };
    assert_error(
        &plan(&["--kernel-include-regex", "copy("]),
        "--kernel-include-regex: bad regular expression 'copy(': unclosed group",
    );
    assert_error(
        &plan(&["--kernel-exclude-regex", "[a-"]),
        "--kernel-exclude-regex: bad regular expression '[a-': unclosed character class",
    );
    assert_error(
        &plan(&["--kernel-iteration-range", "[3-1]"]),
        "--kernel-iteration-range: bad kernel iteration range '[3-1]': '3-1' ends before it \
         starts",
    );
    let s = Scratch::new("filters");
    let yaml = s.file(
        "input.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    kernel_iteration_range: \"[1-x]\"\n",
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &yaml]),
        &format!("{yaml}:3:29: bad kernel iteration range '[1-x]': 'x' is not a launch number"),
    );
    let json = s.file(
        "input.json",
        "{\"jobs\": [{\"pmc\": [\"SQ_WAVES\"], \"kernel_include_regex\": \"a(\"}]}\n",
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &json]),
        &format!("{json}:1:57: bad regular expression 'a(': unclosed group"),
    );
    assert_error(
        &plan(&["--roctx-include-regex", "step("]),
        "--roctx-include-regex: bad regular expression 'step(': unclosed group",
    );
    let roctx = s.file(
        "roctx.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    roctx_include_regex: \"[step\"\n",
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &roctx]),
        &format!("{roctx}:3:26: bad regular expression '[step': unclosed character class"),
    );
    let conflict = s.file(
        "conflict.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    roctx_include_regex: \"^a\"\n",
    );
    assert_error(
        &rtl_pmc(&[
            "--plan",
            "--arch",
            "gfx942",
            "--roctx-include-regex",
            "^b",
            "-i",
            &conflict,
        ]),
        &format!("{conflict}:3:26: roctx_include_regex conflicts with --roctx-include-regex on the command line"),
    );
    let txt = s.file("input.txt", "pmc: SQ_WAVES\nrange: 4:2\n");
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &txt]),
        &format!("{txt}:2:8: bad dispatch range '4:2': the range is empty"),
    );
}

/// A value that does not fit its key names the key and what it accepts, in YAML and JSON alike;
/// a repeated key says so; never the parser's type names.
#[test]
fn job_file_errors_name_the_key_and_what_it_accepts() {
    let s = Scratch::new("job-errors");
    let run = |path: &str| rtl_pmc(&["--plan", "--arch", "gfx942", "-i", path]);
    for (name, text, at, message) in [
        (
            "budget.yaml",
            "jobs:\n  - pmc: [SQ_WAVES]\n    replay_memory_budget: -5\n",
            "3:27",
            "replay_memory_budget must be a size (bytes, or a number with K, M, G or T)",
        ),
        (
            "twice.yaml",
            "jobs:\n  - pmc: [SQ_WAVES]\n    pmc: [GRBM_COUNT]\n",
            "3:5",
            "pmc is given twice; give each key once",
        ),
        (
            "interval.yaml",
            "jobs:\n  - pmc_groups: [[SQ_WAVES]]\n    pmc_group_interval: -3\n",
            "3:25",
            "pmc_group_interval must be a number of dispatches, 1 or more",
        ),
        (
            "interval.json",
            "{\"jobs\": [{\"pmc_groups\": [[\"SQ_WAVES\"]], \"pmc_group_interval\": 1.5}]}\n",
            "1:64",
            "pmc_group_interval must be a number of dispatches, 1 or more",
        ),
        (
            "twice.json",
            "{\"jobs\": [{\"pmc\": [\"SQ_WAVES\"], \"pmc\": [\"SQ_WAVES\"]}]}\n",
            "1:33",
            "pmc is given twice; give each key once",
        ),
        (
            "stats.yaml",
            "jobs:\n  - pmc: [SQ_WAVES]\n    stats: maybe\n",
            "3:12",
            "stats must be true or false",
        ),
        (
            "format.yaml",
            "jobs:\n  - pmc: [SQ_WAVES]\n    output_format: {csv: 1}\n",
            "3:20",
            "output_format must be a format or a list of formats (csv, json, rocpd, pftrace or html)",
        ),
        (
            "groups.yaml",
            "jobs:\n  - pmc_groups: [[SQ_WAVES, [GRBM_COUNT]]]\n",
            "2:29",
            "pmc_groups must be a list of groups, each a list of counter names",
        ),
        (
            "pmc.yaml",
            "jobs:\n  - pmc: SQ_WAVES\n",
            "2:10",
            "pmc must be a list of counter names",
        ),
        (
            "jobs.yaml",
            "jobs: 5\n",
            "1:7",
            "jobs must be a list of jobs, each a mapping of keys such as pmc",
        ),
        (
            "nojobs.yaml",
            "pmc: [SQ_WAVES]\n",
            "1:1",
            "unknown key 'pmc' (expected jobs)",
        ),
    ] {
        let path = s.file(name, text);
        assert_error(&run(&path), &format!("{path}:{at}: {message}"));
    }
}

/// rocprof-compute's input files: a `pmc:` line, then `gpu:`, `range:` and `kernel:` lines that
/// are empty unless the user filters, in which case the same filter is also on the command line.
#[test]
fn rocprof_compute_files_are_read_as_rocprofv3_reads_them() {
    let s = Scratch::new("rocprof-compute");
    let plan = |args: &[&str]| {
        let mut all = vec!["--plan", "--arch", "gfx942", "-A", "absolute"];
        all.extend_from_slice(args);
        rtl_pmc(&all)
    };
    let empty = s.file(
        "pmc_perf_0.txt",
        "pmc: SQ_WAVES GRBM_COUNT\n\ngpu:\nrange:\nkernel:\n",
    );
    assert_plan(
        &plan(&["-i", &empty]),
        "pass 1: SQ_WAVES GRBM_COUNT\npasses: 1 (lower bound: 1)\n",
        "",
    );
    // The timing-only file.
    let timestamps = s.file("timestamps.txt", "pmc:\n\ngpu:\nrange:\nkernel:\n");
    assert_plan(
        &plan(&["-i", &timestamps]),
        "pass 1: (kernel trace: no counters)\npasses: 1 (lower bound: 1)\n",
        "",
    );
    // Filters written into the file and given on the command line apply once: the command
    // line's (several dispatch ranges on a range line would be refused if it were read).
    let filtered = s.file(
        "filtered.txt",
        "pmc: SQ_WAVES\n\ngpu:\nrange: 4:7 12\nkernel: vadd,saxpy\n",
    );
    assert_plan(
        &plan(&[
            "-i",
            &filtered,
            "--kernel-include-regex",
            "vadd|saxpy",
            "--kernel-iteration-range",
            "[5-7,13]",
        ]),
        "pass 1: SQ_WAVES\npasses: 1 (lower bound: 1)\n",
        "",
    );
    assert_error(
        &plan(&["-i", &filtered]),
        &format!(
            "{filtered}:4:8: '4:7 12' names several dispatch ranges; a range line takes one (A:B, A or A:), or give --kernel-iteration-range"
        ),
    );
    let invalid = s.file(
        "invalid.txt",
        "pmc: SQ_WAVES\n\ngpu:\nrange: invalid\nkernel:\n",
    );
    assert_error(
        &plan(&["-i", &invalid]),
        &format!(
            "{invalid}:4:8: bad dispatch range 'invalid': expected A:B, A or A: with dispatch numbers"
        ),
    );
    // rocprof v1's forms: a counter on one instance, and the accumulator after a level counter.
    let v1 = s.file(
        "SQ_IFETCH_LEVEL.txt",
        "pmc: GRBM_COUNT SQ_WAVES SQ_IFETCH_LEVEL SQ_ACCUM_PREV_HIRES TCC_HIT[3]\n\ngpu:\nrange:\nkernel:\n",
    );
    assert_plan(
        &plan(&["-i", &v1]),
        "pass 1: GRBM_COUNT SQ_WAVES SQ_IFETCH_LEVEL SQ_IFETCH_LEVEL_ACCUM TCC_HIT[3]\npasses: 1 (lower bound: 1)\n",
        "",
    );
    let low = s.file("low.txt", "pmc: SQ_INST_LEVEL_LDS SQ_ACCUM_PREV\n");
    assert_plan(
        &plan(&["-i", &low]),
        "pass 1: SQ_INST_LEVEL_LDS SQ_INST_LEVEL_LDS_ACCUM_LOW_RES\npasses: 1 (lower bound: 1)\n",
        "",
    );
    let alone = s.file("alone.txt", "pmc: SQ_ACCUM_PREV_HIRES SQ_WAVES\n");
    assert_error(
        &plan(&["-i", &alone]),
        &format!(
            "{alone}:1:6: SQ_ACCUM_PREV_HIRES accumulates the counter written just before it on its line, and none is; put it after the counter to accumulate (e.g. pmc: SQ_INSTS_LEVEL_VMEM SQ_ACCUM_PREV_HIRES)"
        ),
    );
    let beyond = s.file("beyond.txt", "pmc: TCC_HIT[16]\n");
    assert_error(
        &plan(&["-i", &beyond]),
        &format!("{beyond}:1:6: counter 'TCC_HIT[16]': TCC_HIT has instances 0-15 on gfx942"),
    );
    // Its counter definitions come through ROCPROFILER_METRICS_PATH, a directory holding
    // counter_defs.yaml.
    let defs = s.0.join("defs");
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::write(
        defs.join("counter_defs.yaml"),
        "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: TCC_HIT[17]\n    description: TCC_HIT of channel 1 on XCC 1\n    properties: []\n    definitions:\n    - architectures:\n      - gfx942\n      expression: select(TCC_HIT,[DIMENSION_XCC=[1], DIMENSION_INSTANCE=[1]])\n",
    )
    .unwrap();
    let channel = s.file("channel.txt", "pmc: TCC_HIT[17]\n\ngpu:\nrange:\nkernel:\n");
    let with_path = |dir: &Path| {
        Command::new(env!("CARGO_BIN_EXE_rtl-pmc"))
            .args(["--plan", "--arch", "gfx942", "-i", &channel])
            .env("ROCPROFILER_METRICS_PATH", dir)
            .output()
            .unwrap()
    };
    let out = with_path(&defs);
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).as_ref()
        ),
        (Some(0), "pass 1: TCC_HIT[17]\npasses: 1 (lower bound: 1)\n")
    );
    let out = with_path(&s.0);
    assert_eq!(
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned()),
        (
            Some(2),
            format!(
                "rtl-pmc: ROCPROFILER_METRICS_PATH={}: no counter_defs.yaml there; point it at the directory holding that file, or unset it\n",
                s.0.display()
            )
        )
    );
    assert_error(
        &plan(&["-i", &channel]),
        &format!("{channel}:1:6: counter 'TCC_HIT[17]': TCC_HIT has instances 0-15 on gfx942"),
    );
    // The other agent numberings are taken; a wrong one names the three.
    for index in ["relative", "type-relative"] {
        assert_plan(
            &rtl_pmc(&["--plan", "--arch", "gfx942", "-A", index, "-i", &empty]),
            "pass 1: SQ_WAVES GRBM_COUNT\npasses: 1 (lower bound: 1)\n",
            "",
        );
    }
    let wrong = rtl_pmc(&["--plan", "--arch", "gfx942", "-A", "first", "-i", &empty]);
    assert_eq!(wrong.code, 2);
    assert!(
        wrong
            .stderr
            .contains("invalid value 'first' for '--agent-index <INDEX>'"),
        "{}",
        wrong.stderr
    );
    assert!(wrong
        .stderr
        .contains("[possible values: absolute, relative, type-relative]"));
}

#[test]
fn malformed_files() {
    let s = Scratch::new("files");
    let run = |path: &str| rtl_pmc(&["--plan", "--arch", "gfx942", "-i", path]);
    let yaml = s.file("bad.yaml", "jobs:\n  - pmc: [SQ_WAVES\n");
    assert_error(&run(&yaml), &format!("{yaml}:2:10: unclosed bracket '['"));
    let yaml = s.file(
        "key.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    kernel_regex: x\n",
    );
    assert_error(
        &run(&yaml),
        &format!(
            "{yaml}:3:5: unknown key 'kernel_regex' (expected pmc, pmc_groups, \
             pmc_group_interval, kernel_include_regex, kernel_exclude_regex, \
             kernel_iteration_range, output_directory, output_file, output_format, \
             truncate_kernels, mangled_kernels, kernel_rename, selected_regions, roctx_include_regex, \
             summary, summary_output_file, stats, output_config, \
             log_level, list_avail, kernel_trace, preload, replay_mode, replay_memory_budget, anchor, \
             spatial_multiplexing, disable_signal_handlers)"
        ),
    );
    let txt = s.file("bad.txt", "pmc: SQ_WAVES\n  hip: on\n");
    assert_error(
        &run(&txt),
        &format!("{txt}:2:3: unknown key 'hip' (expected pmc, range, kernel, kernels or gpu)"),
    );
    let txt = s.file("nokey.txt", "SQ_WAVES\n");
    assert_error(
        &run(&txt),
        &format!("{txt}:1:1: expected 'pmc:', 'range:', 'kernel:', 'kernels:' or 'gpu:'"),
    );
    let other = s.file("input.xml", "<metric/>");
    assert_error(
        &run(&other),
        &format!("{other}: unknown input file type (expected .txt, .yaml, .yml or .json)"),
    );
    let missing = s.0.join("missing.txt").display().to_string();
    assert_error(
        &run(&missing),
        &format!("{missing}: cannot read the input file: No such file or directory (os error 2)"),
    );
}

#[test]
fn file_settings_must_agree_with_the_command_line() {
    let s = Scratch::new("conflict");
    let yaml = s.file(
        "input.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    output_file: out\n    kernel_include_regex: copy\n",
    );
    let run = |extra: &[&str]| {
        let mut args = vec!["--plan", "--arch", "gfx942", "-i", &yaml];
        args.extend_from_slice(extra);
        rtl_pmc(&args)
    };
    assert_error(
        &run(&["-o", "other"]),
        &format!("{yaml}:3:18: output_file conflicts with --output-file on the command line"),
    );
    assert_error(
        &run(&["--kernel-include-regex", "add"]),
        &format!(
            "{yaml}:4:27: kernel_include_regex conflicts with --kernel-include-regex on the \
             command line"
        ),
    );
    assert_plan(
        &run(&["-o", "out", "--kernel-include-regex", "copy"]),
        "pass 1: SQ_WAVES\npasses: 1 (lower bound: 1)\n",
        "",
    );
}

#[test]
fn pmc_groups_rules() {
    let s = Scratch::new("groups");
    let groups = s.file("groups.yaml", V3_GROUPS_YAML);
    assert_error(
        &rtl_pmc(&[
            "--plan", "--arch", "gfx942", "--pmc", "SQ_WAVES", "-i", &groups,
        ]),
        &format!("{groups} job 1: pmc_groups cannot be combined with --pmc"),
    );
    let both = s.file(
        "both.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    pmc_groups: [[GRBM_COUNT]]\n",
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &both]),
        &format!("{both}:2:5: pmc and pmc_groups cannot be combined in one job"),
    );
    let zero = s.file(
        "zero.yaml",
        "jobs:\n  - pmc_groups: [[GRBM_COUNT]]\n    pmc_group_interval: 0\n",
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &zero]),
        &format!("{zero}:3:25: pmc_group_interval must be at least 1"),
    );
    // A group over the limit is split into rotating groups, never an abort mid-run.
    let big = s.file(
        "big.yaml",
        "jobs:\n  - pmc_groups: [[GRBM_COUNT, GRBM_GUI_ACTIVE, GRBM_CP_BUSY], [SQ_WAVES]]\n",
    );
    assert_plan(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &big]),
        "pass 1: GRBM_COUNT GRBM_GUI_ACTIVE | GRBM_CP_BUSY | SQ_WAVES (rotating every 1 \
         dispatches)\npasses: 1 (lower bound: 1)\n",
        &format!(
            "rtl-pmc: gfx942: {big} job 1 pmc_groups group 1 does not fit one pass (GRBM needs \
             3 counters (2 per pass)); split into 2 rotating groups\n"
        ),
    );
}

#[test]
fn kernel_trace_alone_is_one_run_without_counters() {
    let trace = "pass 1: (kernel trace: no counters)\npasses: 1 (lower bound: 1)\n";
    assert_plan(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "--kernel-trace"]),
        trace,
        "",
    );
    let s = Scratch::new("kernel-trace");
    let yaml = s.file("trace.yaml", "jobs:\n  - kernel_trace: true\n");
    assert_plan(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &yaml]),
        trace,
        "",
    );
    // With counters, kernel tracing adds no run.
    assert_plan(
        &rtl_pmc(&[
            "--plan",
            "--arch",
            "gfx942",
            "--kernel-trace",
            "--pmc",
            "SQ_WAVES",
        ]),
        "pass 1: SQ_WAVES\npasses: 1 (lower bound: 1)\n",
        "",
    );
    let empty = s.file("empty.yaml", "jobs:\n  - stats: true\n");
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &empty]),
        &format!(
            "{empty}:2:5: the job lists no counters (pmc, pmc_groups) and does not trace kernels (kernel_trace)"
        ),
    );
}

#[test]
fn nothing_to_do_errors() {
    assert_error(
        &rtl_pmc(&["--plan", "--pmc", "SQ_WAVES"]),
        &format!(
            "no AMD GPU found in {}; give --sim gfxNNN to run on a simulated GPU, or --arch gfxNNN to plan for one",
            std::env::temp_dir().join("no-topology").display()
        ),
    );
    // A run without a GPU: the application is not started.
    assert_error(
        &rtl_pmc(&["--pmc", "SQ_WAVES", "--", "/bin/false"]),
        &format!(
            "no AMD GPU found in {}; give --sim gfxNNN to run on a simulated GPU, or --arch gfxNNN to plan for one",
            std::env::temp_dir().join("no-topology").display()
        ),
    );
    assert_error(
        &rtl_pmc(&["--list-avail"]),
        &format!(
            "no AMD GPU found in {}; give --sim gfxNNN to list a simulated GPU's counters, or --arch gfxNNN to list an architecture's",
            std::env::temp_dir().join("no-topology").display()
        ),
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942"]),
        "nothing to collect: give --pmc COUNTER..., -i FILE or --kernel-trace",
    );
    assert_error(
        &rtl_pmc(&["--arch", "gfx942", "--pmc", "SQ_WAVES"]),
        "no application given: put it after --, e.g. rtl-pmc --pmc SQ_WAVES -- ./app",
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx999", "--pmc", "SQ_WAVES"]),
        "unknown GPU architecture 'gfx999' (known: gfx908, gfx90a, gfx940, gfx941, gfx942, \
         gfx950, gfx1030, gfx1100, gfx1101, gfx1102, gfx1200, gfx1201)",
    );
}

#[test]
fn plan_runs_nothing_even_with_an_application() {
    let s = Scratch::new("app");
    let marker = s.0.join("ran");
    let out = rtl_pmc(&[
        "--plan",
        "--arch",
        "gfx942",
        "--pmc",
        "SQ_WAVES",
        "--",
        "touch",
        marker.to_str().unwrap(),
    ]);
    assert_plan(&out, "pass 1: SQ_WAVES\npasses: 1 (lower bound: 1)\n", "");
    assert!(!marker.exists());
}

#[test]
fn list_avail_for_an_architecture() {
    let out = rtl_pmc(&["--list-avail", "--arch", "gfx942"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let head: Vec<&str> = out.stdout.lines().take(2).collect();
    assert_eq!(head, vec!["GPU:0", "Name:gfx942"]);
    assert!(out.stdout.contains("Counter_Name        :\tSQ_WAVES\n"));
}

/// Asserts that `--arch gfx942 --pmc SQ_WAVES ARGS -- touch ran` exits 2 with exactly the
/// message of each case, without running the application.
fn assert_refused_before_running(s: &Scratch, cases: Vec<(Vec<&str>, String)>) {
    let marker = s.0.join("ran");
    for (args, message) in cases {
        let mut argv = vec!["--arch", "gfx942", "--pmc", "SQ_WAVES"];
        argv.extend(args);
        argv.extend(["--", "touch", marker.to_str().unwrap()]);
        assert_error(&rtl_pmc_in(&s.0, None, &argv), &message);
        assert!(!marker.exists());
    }
}

#[test]
fn rocprofv3_options_rtl_pmc_does_not_take_are_refused_before_the_application() {
    let s = Scratch::new("refused");
    let yaml = s.file(
        "trace.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    hip_trace: true\n",
    );
    let agents = s.file(
        "agents.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    agent_index: absolute\n",
    );
    let tracing = "is rocprofv3 API and activity tracing, which rtl-pmc does not do (it collects hardware counters per dispatch, each with its start and end time); trace with rocprofv3";
    let cases = vec![
        (vec!["--hip-trace"], format!("--hip-trace {tracing}")),
        (vec!["-s"], format!("-s/--sys-trace {tracing}")),
        (
            vec!["--memory-copy-trace"],
            format!("--memory-copy-trace {tracing}"),
        ),
        (
            vec!["--pc-sampling-unit=time"],
            "--pc-sampling-unit is rocprofv3 PC sampling, which rtl-pmc does not do; sample with rocprofv3".into(),
        ),
        (
            vec!["--perfetto-buffer-size", "4096"],
            "--perfetto-buffer-size configures rocprofv3's Perfetto backend, which rtl-pmc does not use (it writes results.pftrace itself after the run); drop it".into(),
        ),
        (
            vec!["-u", "msec"],
            "-u/--summary-units shapes rocprofv3's per-domain tracing summary; rtl-pmc's summary has one domain, kernel dispatches in nanoseconds, with --summary-top N for its length; drop it".into(),
        ),
        (
            vec!["-i", yaml.as_str()],
            format!("{yaml}:3:5: hip_trace {tracing}"),
        ),
        (
            vec!["-i", agents.as_str()],
            format!("{agents}:3:5: agent_index chooses how the Agent_Id column names GPUs for the whole profile; give -A/--agent-index on the command line instead"),
        ),
    ];
    assert_refused_before_running(&s, cases);
}

#[test]
fn rocprofv3_settings_are_checked_before_the_application() {
    let s = Scratch::new("settings");
    let level = s.file(
        "level.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    log_level: loud\n",
    );
    let summary = s.file(
        "summary.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    summary_output_file: a/b\n",
    );
    let no_format = s.file(
        "no-format.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    output_format: \"\"\n",
    );
    let cases = vec![
        (
            vec!["-f", "otf2"],
            "-f/--output-format: 'otf2' is a rocprofv3 format rtl-pmc does not write; use pftrace for a timeline".to_string(),
        ),
        (
            vec!["--output-format", "csv, xml"],
            "-f/--output-format: unknown output format 'xml' (expected csv, json, rocpd, pftrace or html)".into(),
        ),
        (
            vec!["--log-level", "loud"],
            "--log-level: unknown level 'loud' (expected fatal, error, warning, info, trace, env or config)".into(),
        ),
        (
            vec!["-i", level.as_str()],
            format!("{level}:3:16: log_level: unknown level 'loud' (expected fatal, error, warning, info, trace, env or config)"),
        ),
        (
            vec!["--summary-output-file", "a/b"],
            "--summary-output-file: give stdout, stderr or a file name without a directory (the file goes to the output directory)".into(),
        ),
        (
            vec!["-i", summary.as_str()],
            format!("{summary}:3:26: summary_output_file: give stdout, stderr or a file name without a directory (the file goes to the output directory)"),
        ),
        (
            vec!["--log-level", "info", "-i", level.as_str()],
            format!("{level}:3:16: log_level: unknown level 'loud' (expected fatal, error, warning, info, trace, env or config)"),
        ),
        (
            vec!["-f", ""],
            "-f/--output-format: '' names no output format (expected csv, json, rocpd, pftrace or html)".into(),
        ),
        (
            vec!["-f", "csv", " , "],
            "-f/--output-format: ' , ' names no output format (expected csv, json, rocpd, pftrace or html)".into(),
        ),
        (
            vec!["-i", no_format.as_str()],
            format!("{no_format}:3:20: output_format: '' names no output format (expected csv, json, rocpd, pftrace or html)"),
        ),
        (
            vec!["--kernel-iteration-range", "[1-2"],
            "--kernel-iteration-range: bad kernel iteration range '[1-2': 1 '[' not closed; write ranges as [A-B],[C-D]".into(),
        ),
        (
            vec!["--kernel-iteration-range", "[2-3]]"],
            "--kernel-iteration-range: bad kernel iteration range '[2-3]]': the ']' at character 6 closes no '['".into(),
        ),
    ];
    assert_refused_before_running(&s, cases);
}

#[test]
fn rocprofv3_job_keys_and_format_spellings_are_taken() {
    let s = Scratch::new("keys");
    let yaml = s.file(
        "keys.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    list_avail: true\n    log_level: INFO\n    \
         preload: [libm.so.6]\n    stats: true\n    summary: true\n    \
         summary_output_file: stdout\n    output_config: true\n    output_format: \"CSV, json\"\n    \
         kernel_rename: true\n    selected_regions: true\n    roctx_include_regex: \"^step\"\n",
    );
    let listing = rtl_pmc(&["-L", "--arch", "gfx942"]).stdout;
    assert!(listing.starts_with("GPU:0\nName:gfx942\n"));
    let out = rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &yaml]);
    let plan = "pass 1: SQ_WAVES\npasses: 1 (lower bound: 1)\n";
    assert_plan(&out, &format!("{listing}{plan}"), "");
    for formats in [
        vec!["-f", "CSV, json", "PFTRACE"],
        vec!["--output-format", "csv,Json"],
    ] {
        let mut argv = vec!["--plan", "--arch", "gfx942", "--pmc", "SQ_WAVES"];
        argv.extend(formats);
        assert_plan(&rtl_pmc(&argv), plan, "");
    }
    // The job's formats are the command line's, spelt otherwise.
    let out = rtl_pmc(&[
        "--plan", "--arch", "gfx942", "-f", "json", "csv", "-i", &yaml,
    ]);
    assert_plan(&out, &format!("{listing}{plan}"), "");
}

#[test]
fn list_avail_without_arch_lists_the_gpus_found() {
    let s = Scratch::new("found");
    let topology = s.topology(&[90402, 90010]);
    let out = rtl_pmc_in(&s.0, Some(&topology), &["-L"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let heads: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("GPU:") || l.starts_with("Name:"))
        .collect();
    assert_eq!(heads, ["GPU:0", "Name:gfx942", "GPU:1", "Name:gfx90a"]);
    let sim = rtl_pmc(&["--list-avail", "--sim", "gfx942"]);
    assert_eq!(sim.code, 0, "{}", sim.stderr);
    assert!(sim.stdout.starts_with("GPU:0\nName:gfx942\n"));
}

#[test]
fn help_lists_every_flag_and_the_merge_command() {
    let long = rtl_pmc(&["--help"]);
    assert_eq!(long.code, 0);
    assert_eq!(rtl_pmc(&["help"]).stdout, long.stdout);
    for flag in [
        "--pmc",
        "--input",
        "--extra-counters",
        "--kernel-include-regex",
        "--kernel-exclude-regex",
        "--kernel-iteration-range",
        "--output-directory",
        "--output-file",
        "--output-format",
        "--truncate-kernels",
        "--mangled-kernels",
        "--summary",
        "--summary-output-file",
        "--stats",
        "--output-config",
        "--log-level",
        "--preload",
        "--strict-passes",
        "--plan",
        "--arch",
        "--list-avail",
        "--sim",
        "--print-env",
        "--pass-match",
        "--summary-top",
        "--continue-on-error",
        "--replay-mode",
        "--replay-memory-budget",
        "--agent-index",
        "-A,",
        "-L,",
        "-T,",
        "-M,",
        "-S,",
        "-f,",
        "-d,",
        "-o,",
        "-i,",
        "-E,",
        "--disable-signal-handlers",
        "rtl-pmc merge",
        "rtl-pmc finish",
        "rtl-pmc help",
    ] {
        assert!(long.stdout.contains(flag), "{flag} missing from --help");
    }
    // Every example of the guide's usage block, as written there.
    let guide = include_str!("../../docs/README.md");
    let usage = guide
        .split("## Usage\n")
        .nth(1)
        .and_then(|rest| rest.split("```sh-real\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("docs/README.md has a usage block");
    assert!(usage.lines().count() >= 10);
    for line in usage.lines() {
        assert!(
            long.stdout.contains(&format!("  {line}\n")),
            "README example '{line}' missing from --help"
        );
    }
    let merge = rtl_pmc(&["help", "merge"]);
    assert_eq!(merge.code, 0);
    assert!(
        merge
            .stdout
            .contains("Usage: rtl-pmc merge [OPTIONS] <DIR>..."),
        "{}",
        merge.stdout
    );
    let finish = rtl_pmc(&["help", "finish"]);
    assert_eq!(finish.code, 0);
    assert!(
        finish.stdout.contains("Usage: rtl-pmc finish <DIR>"),
        "{}",
        finish.stdout
    );
    assert_error(
        &rtl_pmc(&["help", "plan"]),
        "help: no help on 'plan'; try rtl-pmc help, rtl-pmc help merge or rtl-pmc help finish",
    );
}

const KERNEL_REPLAY_LINE: &str = "replay mode kernel: kernel replay: 1 run of the application, 2 passes per selected dispatch (memory budget 4294967296 bytes per dispatch); application replay: 2 runs, 1 pass per dispatch per run\n";

#[test]
fn replay_modes_are_planned_and_refused_where_they_cannot_apply() {
    let two = [
        "--plan",
        "--arch",
        "gfx942",
        "--pmc",
        "SQ_WAVES",
        "--pmc",
        "GRBM_COUNT",
    ];
    let plan = "pass 1: SQ_WAVES\npass 2: GRBM_COUNT\npasses: 2 (lower bound: 2)\n";
    let with = |extra: &[&str]| {
        let mut args = two.to_vec();
        args.extend_from_slice(extra);
        rtl_pmc(&args)
    };
    assert_plan(&with(&[]), plan, "");
    assert_plan(&with(&["--replay-mode", "application"]), plan, "");
    assert_plan(
        &with(&["--replay-mode", "kernel"]),
        &format!("{plan}{KERNEL_REPLAY_LINE}"),
        "",
    );
    assert_plan(
        &with(&["--replay-mode", "kernel", "--replay-memory-budget", "512M"]),
        &format!(
            "{plan}{}",
            KERNEL_REPLAY_LINE.replace("4294967296", "536870912")
        ),
        "",
    );
    assert_plan(
        &with(&["--replay-mode", "auto"]),
        &format!(
            "{plan}{}",
            KERNEL_REPLAY_LINE.replace("mode kernel", "mode auto")
        ),
        "",
    );
    assert_plan(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "--replay-mode", "kernel", "--pmc", "SQ_WAVES"]),
        "pass 1: SQ_WAVES\npasses: 1 (lower bound: 1)\nreplay mode kernel: application replay: 1 run of the application, 1 pass per dispatch per run (one pass, nothing to replay)\n",
        "",
    );
    assert_error(
        &with(&["--replay-mode", "kernel", "--replay-memory-budget", "12X"]),
        "--replay-memory-budget: '12X' is not a size (bytes, or a number with K, M, G or T)",
    );
    let bad = with(&["--replay-mode", "sideways"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr
            .contains("invalid value 'sideways' for '--replay-mode <MODE>'"),
        "{}",
        bad.stderr
    );

    let s = Scratch::new("replay");
    let groups = s.file("groups.yaml", V3_GROUPS_YAML);
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "--replay-mode", "kernel", "-i", &groups]),
        "--replay-mode kernel: pmc_groups rotate their groups over the dispatches of one run, while kernel replay collects every pass for each dispatch; use --replay-mode application",
    );
    assert_plan(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "--replay-mode", "auto", "-i", &groups]),
        "pass 1: SQ_WAVES GRBM_COUNT | GRBM_GUI_ACTIVE (rotating every 4 dispatches)\npasses: 1 (lower bound: 1)\nreplay mode auto: application replay: 1 run of the application, 1 pass per dispatch per run (one pass, nothing to replay)\n",
        "",
    );
    let filtered = s.file(
        "filtered.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    replay_mode: kernel\n  - pmc: [GRBM_COUNT]\n    kernel_include_regex: add\n    replay_mode: kernel\n",
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &filtered]),
        "--replay-mode kernel: its jobs select or name dispatches differently (kernel filters, kernel-name options or preloaded libraries), so their passes cannot share one run; use --replay-mode application",
    );
    let mixed = s.file(
        "mixed.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    replay_mode: kernel\n  - pmc: [GRBM_COUNT]\n",
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &mixed]),
        "the jobs writing to one output directory ask for different replay modes (kernel, application); give them one",
    );
    let keys = s.file(
        "keys.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    replay_mode: Kernel\n    replay_memory_budget: 1G\n  - pmc: [GRBM_COUNT]\n    replay_mode: kernel\n    replay_memory_budget: 1073741824\n",
    );
    assert_plan(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &keys]),
        &format!(
            "{plan}{}",
            KERNEL_REPLAY_LINE.replace("4294967296", "1073741824")
        ),
        "",
    );
    assert_error(
        &rtl_pmc(&[
            "--plan",
            "--arch",
            "gfx942",
            "--replay-mode",
            "auto",
            "-i",
            &keys,
        ]),
        &format!("{keys}:3:18: replay_mode conflicts with --replay-mode on the command line"),
    );
    let wrong = s.file(
        "wrong.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    replay_mode: sideways\n    replay_memory_budget: lots\n",
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &wrong]),
        &format!("{wrong}:3:18: replay_mode: 'sideways' is not application, kernel or auto"),
    );
    let budget = s.file(
        "budget.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    replay_memory_budget: lots\n",
    );
    assert_error(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &budget]),
        &format!(
            "{budget}:3:27: replay_memory_budget: 'lots' is not a size (bytes, or a number with K, M, G or T)"
        ),
    );
}

/// `--anchor` and the job key `anchor` put the counter in every pass with room; the flag and
/// the key naming different counters is one message; `--spatial-multiplexing` without a
/// launcher's rank and size is refused before the application runs.
#[test]
fn anchor_and_spatial_multiplexing() {
    let s = Scratch::new("anchor");
    let yaml = s.file(
        "anchor.yaml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    anchor: GRBM_COUNT\n  - pmc: [TCC_HIT]\n    anchor: GRBM_COUNT\n",
    );
    let plan =
        "pass 1: SQ_WAVES GRBM_COUNT\npass 2: TCC_HIT GRBM_COUNT\npasses: 2 (lower bound: 2)\n";
    assert_plan(
        &rtl_pmc(&["--plan", "--arch", "gfx942", "-i", &yaml]),
        plan,
        "",
    );
    assert_plan(
        &rtl_pmc(&[
            "--plan",
            "--arch",
            "gfx942",
            "--anchor",
            "GRBM_COUNT",
            "--pmc",
            "SQ_WAVES",
            "--pmc",
            "TCC_HIT",
        ]),
        plan,
        "",
    );
    assert_error(
        &rtl_pmc(&[
            "--plan", "--arch", "gfx942", "--anchor", "SQ_WAVES", "-i", &yaml,
        ]),
        &format!("{yaml}:3:13: anchor conflicts with --anchor on the command line"),
    );
    let out = rtl_pmc_in(
        &s.0,
        None,
        &[
            "--arch",
            "gfx942",
            "--spatial-multiplexing",
            "--pmc",
            "SQ_WAVES",
            "--",
            "true",
        ],
    );
    assert_error(
        &out,
        "--spatial-multiplexing: no rank below the number of ranks from a launcher (one \
         of OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, RANK, LOCAL_RANK, MPI_RANK, \
         MPI_LOCALRANKID, MPI_RANKID, MV2_COMM_WORLD_RANK and one of OMPI_COMM_WORLD_SIZE, \
         PMI_SIZE, SLURM_NTASKS, WORLD_SIZE, MPI_SIZE, MV2_COMM_WORLD_SIZE); run rtl-pmc under \
         mpirun, srun or torchrun, once per rank",
    );
}
