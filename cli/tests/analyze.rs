//! `rtl-pmc analyze` on extracts of rocprof-compute's real-GPU workloads
//! (`tests/data/analyze/README.md`): values equal to rocprof-compute's `analyze`, the tables as
//! printed, and bad input refused.

use std::path::PathBuf;
use std::process::{Command, Output};

fn data(gpu: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/analyze/{gpu}"))
}

fn analyze(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtl-pmc"))
        .arg("analyze")
        .args(args)
        .output()
        .expect("rtl-pmc runs")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value of `column` of metric `id` in `analyze --csv` output.
fn cell(csv: &str, id: &str, column: &str) -> String {
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    assert_eq!(
        reader.headers().unwrap().iter().collect::<Vec<_>>(),
        ["Kernel", "Metric_ID", "Metric", "Column", "Value", "Error"]
    );
    reader
        .records()
        .map(Result::unwrap)
        .find(|r| &r[1] == id && &r[3] == column)
        .map(|r| r[4].to_string())
        .unwrap_or_else(|| panic!("no {id} {column} in\n{csv}"))
}

/// Equal to rocprof-compute's value printed with 10 decimals ("" for no value).
fn assert_equal_to_rocprof_compute(mine: &str, theirs: &str, what: &str) {
    match theirs {
        "" | "inf" => assert_eq!(mine, theirs, "{what}"),
        _ => {
            let mine: f64 = mine.parse().unwrap_or_else(|_| panic!("{what}: '{mine}'"));
            let theirs: f64 = theirs.parse().unwrap();
            assert_eq!(format!("{mine:.10}"), format!("{theirs:.10}"), "{what}");
        }
    }
}

// (GPU, metric id, metric, Avg, Pct of Peak) as rocprof-compute's analyze prints them.
const SPEED_OF_LIGHT: &[(&str, &str, &str, &str, &str)] = &[
    (
        "MI200",
        "2.1.1",
        "VALU IOPs",
        "427.0323563102",
        "1.8869854546",
    ),
    ("MI200", "2.1.7", "Active CUs", "70.0", "67.3076923077"),
    ("MI200", "2.1.14", "IPC", "0.1773141575", "3.546283151"),
    (
        "MI200",
        "2.1.15",
        "Wavefront Occupancy",
        "1765.9653886175",
        "53.0638638407",
    ),
    ("MI200", "2.1.18", "vL1D Cache Hit Rate", "50.0", "50.0"),
    (
        "MI200",
        "2.1.19",
        "vL1D Cache BW",
        "1952.147914561",
        "17.2524384418",
    ),
    (
        "MI200",
        "2.1.20",
        "L2 Cache Hit Rate",
        "35.089733041",
        "35.089733041",
    ),
    (
        "MI200",
        "2.1.24",
        "L2-Fabric Read Latency",
        "701.0196357966",
        "",
    ),
    ("MI200", "2.1.30", "L1I Fetch Latency", "18.5034586589", ""),
    ("MI300X_A1", "2.1.1", "VALU IOPs", "inf", "inf"),
    ("MI300X_A1", "2.1.8", "Active CUs", "23.0", "7.5657894737"),
    ("MI300X_A1", "2.1.15", "IPC", "0.0684566591", "1.369133181"),
    (
        "MI300X_A1",
        "2.1.16",
        "Wavefront Occupancy",
        "456.7016527716",
        "4.6947127135",
    ),
    ("MI300X_A1", "2.1.19", "vL1D Cache Hit Rate", "62.5", "62.5"),
    ("MI300X_A1", "2.1.20", "vL1D Cache BW", "inf", "inf"),
    (
        "MI300X_A1",
        "2.1.21",
        "L2 Cache Hit Rate",
        "33.361660178",
        "33.361660178",
    ),
    (
        "MI300X_A1",
        "2.1.25",
        "L2-Fabric Read Latency",
        "1113.2377258096",
        "",
    ),
    (
        "MI300X_A1",
        "2.1.31",
        "L1I Fetch Latency",
        "27.1938069661",
        "",
    ),
    ("MI350", "2.1.1", "VALU IOPs", "287.2261121217", "inf"),
    ("MI350", "2.1.9", "Active CUs", "98.0", "76.5625"),
    ("MI350", "2.1.16", "IPC", "0.4014597454", "8.0291949076"),
    ("MI350", "2.1.17", "Wavefront Occupancy", "", ""),
    ("MI350", "2.1.20", "vL1D Cache Hit Rate", "62.5", "62.5"),
    ("MI350", "2.1.21", "vL1D Cache BW", "3676.4942351574", "inf"),
    (
        "MI350",
        "2.1.22",
        "L2 Cache Hit Rate",
        "33.7718575607",
        "33.7718575607",
    ),
    (
        "MI350",
        "2.1.26",
        "L2-Fabric Read Latency",
        "235.5813793355",
        "",
    ),
    ("MI350", "2.1.32", "L1I Fetch Latency", "", ""),
];

#[test]
fn speed_of_light_equals_rocprof_compute_on_real_gpus() {
    for gpu in ["MI200", "MI300X_A1", "MI350"] {
        let dir = data(gpu);
        let csv = stdout(&analyze(&[
            dir.to_str().unwrap(),
            "--block",
            "2.1",
            "--csv",
        ]));
        for (_, id, name, avg, pct) in SPEED_OF_LIGHT.iter().filter(|r| r.0 == gpu) {
            let what = format!("{gpu} {id} {name}");
            assert!(csv.contains(&format!(",{id},{name},Avg,")), "{what}");
            assert_equal_to_rocprof_compute(&cell(&csv, id, "Avg"), avg, &what);
            assert_equal_to_rocprof_compute(&cell(&csv, id, "Pct of Peak"), pct, &what);
        }
    }
}

#[test]
fn tables_print_the_selected_metrics_rounded() {
    let dir = data("MI200");
    let out = stdout(&analyze(&[
        dir.to_str().unwrap(),
        "-b",
        "2.1.7",
        "2.1.20",
        "-k",
        "vecCopy",
    ]));
    let expected = "\
Kernels by total time:
  100.00 %     52.320 us       3  vecCopy(double*, double*, double*, int, int) [clone .kd]

== vecCopy(double*, double*, double*, int, int) [clone .kd] (gfx90a on MI200; 3 dispatches, 52.320 us total)

2.1 System Speed-of-Light
Metric_ID  Metric             Avg    Unit  Peak    Pct of Peak
--------------------------------------------------------------
2.1.7      Active CUs         70.00  CUs   104.00        67.31
2.1.20     L2 Cache Hit Rate  35.09  pct   100.00        35.09
";
    assert!(out.ends_with(expected), "{out}");
    // Every constant with its source, before the kernels.
    assert!(
        out.contains("  max_sclk         = 1700       from sysinfo.csv max_sclk\n"),
        "{out}"
    );
    assert!(
        out.contains("  total_l2_chan    = 32         from sysinfo.csv total_l2_chan\n"),
        "{out}"
    );
}

#[test]
fn a_level_metric_without_its_accumulation_says_so() {
    // MI350's SQ_LEVEL_WAVES.csv has no accumulation column: occupancy has no value, as in
    // rocprof-compute, and the table says which input was missing.
    let dir = data("MI350");
    let out = stdout(&analyze(&[dir.to_str().unwrap(), "-b", "2.1.17"]));
    assert!(
        out.contains("\n2.1.17     Wavefront Occupancy       Wavefronts  4096.00\n"),
        "{out}"
    );
    assert!(
        out.contains("(no values where the profile lacks SQ_ACCUM_PREV_HIRES)\n"),
        "{out}"
    );
}

#[test]
fn bad_input_is_one_message_and_exit_2() {
    let dir = data("MI200");
    let d = dir.to_str().unwrap();
    for (args, message) in [
        (vec!["/nonexistent"], "rtl-pmc: analyze: /nonexistent: neither an rtl-pmc profile (results.csv) nor a rocprof-compute workload (pmc_perf.csv)\n"),
        (vec![d, "-b", "2.x"], "rtl-pmc: analyze: --block: block id '2.x': expected 'all', a section (2), a table (2.1) or a metric (2.1.0)\n"),
        (vec![d, "-b", "2.1.99"], "rtl-pmc: analyze: --block: block id '2.1.99': no such metric on gfx90a\n"),
        (vec![d, "-b", "42"], "rtl-pmc: analyze: --block: block id '42': no such section on gfx90a\n"),
        (vec![d, "--normal-unit", "per_hour"], "rtl-pmc: analyze: --normal-unit 'per_hour': expected per_kernel, per_wave, per_cycle or per_second\n"),
    ] {
        let out = analyze(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), message, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
