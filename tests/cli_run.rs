//! `rtl-pmc` end to end on the simulated ROCm: the application runs once per pass under the
//! interposer, and the files it leaves hold exactly the simulator's ground-truth values.

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Output};

use sim_support::{artifact, sim_env, Profile};

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-run-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

impl Profile {
    fn file(&self, name: &str) -> String {
        let per_process =
            name.ends_with("/counter_collection.csv") || name.ends_with("/agent_info.csv");
        let path = match per_process {
            true => sim_support::process_file(&self.out, name),
            false => self.out.join(name),
        };
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}\nstderr:\n{}", path.display(), self.stderr()))
    }

    /// `results.csv` as (header, rows of fields).
    fn results(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let text = self.file("results.csv");
        let mut lines = text.lines();
        let header = lines
            .next()
            .expect("a header")
            .split(',')
            .map(str::to_string)
            .collect();
        let rows = lines
            .map(|l| {
                l.split(',')
                    .map(|f| f.trim_matches('"').to_string())
                    .collect()
            })
            .collect();
        (header, rows)
    }

    /// The processes of the ground truth, in the order they first appear.
    fn truth_pids(&self) -> Vec<u64> {
        let mut pids = Vec::new();
        for t in &self.truth {
            let pid = t["pid"].as_u64().expect("pid");
            if !pids.contains(&pid) {
                pids.push(pid);
            }
        }
        pids
    }
}

/// Sum of the ground-truth samples of `counter` in `line`.
fn truth_total(line: &serde_json::Value, counter: &str) -> u64 {
    line["counters"][counter]
        .as_array()
        .unwrap_or_else(|| panic!("no ground truth for {counter} in {line}"))
        .iter()
        .map(|v| v.as_u64().expect("a count"))
        .sum()
}

/// Runs `rtl-pmc ARGS -d OUT -- rtl-demo-app APP_ARGS` on a simulated gfx942 with ground truth
/// for `truth_counters`.
fn profile(name: &str, args: &[&str], app_args: &[&str], truth_counters: &[&str]) -> Profile {
    let dir = scratch(name);
    let out = dir.join("out");
    let (output, truth) = run_rtl_pmc(&dir, &out, args, app_args, truth_counters, &[]);
    Profile { output, out, truth }
}

/// Runs rtl-pmc in `dir` writing to `out`, with extra environment `env`; returns its output
/// and the ground truth.
fn run_rtl_pmc(
    dir: &std::path::Path,
    out: &std::path::Path,
    args: &[&str],
    app_args: &[&str],
    truth_counters: &[&str],
    env: &[(&str, &str)],
) -> (Output, Vec<serde_json::Value>) {
    let truth = dir.join("truth.jsonl");
    let mut command = Command::new(artifact("rtl-pmc"));
    command
        .current_dir(dir)
        .args(["--arch", "gfx942", "-d"])
        .arg(out)
        .args(args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(app_args)
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", truth_counters.join(","))
        .envs(env.iter().copied());
    let output = command.output().expect("rtl-pmc starts");
    (output, read_truth(&truth))
}

fn read_truth(path: &std::path::Path) -> Vec<serde_json::Value> {
    sim_support::read_ground_truth(path)
}

fn column(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

/// For each results row, the ground-truth line of the dispatch with the same begin/end times.
fn truth_by_time<'a>(
    p: &'a Profile,
    header: &[String],
    rows: &[Vec<String>],
) -> Vec<&'a serde_json::Value> {
    let (begin, end) = (column(header, "BeginNs"), column(header, "EndNs"));
    let by_time: HashMap<(String, String), &serde_json::Value> = p
        .truth
        .iter()
        .map(|t| ((t["start"].to_string(), t["end"].to_string()), t))
        .collect();
    rows.iter()
        .map(|r| {
            *by_time
                .get(&(r[begin].clone(), r[end].clone()))
                .unwrap_or_else(|| panic!("row {r:?} has no ground-truth dispatch"))
        })
        .collect()
}

const LEADING: &str = "Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,accum_vgpr,sgpr,wave_size,sig,obj";

#[test]
fn one_pmc_group_is_one_pass_with_ground_truth_values() {
    let p = profile(
        "pmc",
        &["--pmc", "SQ_WAVES", "TCC_HIT"],
        &[],
        &["SQ_WAVES", "TCC_HIT"],
    );
    p.assert_code(0);
    assert!(p.out.join("pass_1/plan.json").is_file());
    assert!(p.out.join("results.db").is_file());
    assert!(!p.out.join("pass_2").exists());
    let (header, rows) = p.results();
    assert_eq!(
        header.join(","),
        format!("{LEADING},SQ_WAVES,TCC_HIT,BeginNs,EndNs")
    );
    assert_eq!(rows.len(), 4);
    let kernels: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(kernels, ["vadd", "saxpy", "fill", "increment"]);
    let truth = truth_by_time(&p, &header, &rows);
    for (row, t) in rows.iter().zip(truth) {
        assert_eq!(
            row[column(&header, "SQ_WAVES")],
            truth_total(t, "SQ_WAVES").to_string()
        );
        assert_eq!(
            row[column(&header, "TCC_HIT")],
            truth_total(t, "TCC_HIT").to_string()
        );
        assert_eq!(row[2], t["agent"].to_string());
    }

    let collection = p.file("pass_1/counter_collection.csv");
    let lines: Vec<&str> = collection.lines().collect();
    assert_eq!(lines[0], "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"");
    assert_eq!(lines.len(), 1 + 4 * 2);
    let first = &p.truth[0];
    let fields: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(fields[15], "\"SQ_WAVES\"");
    assert_eq!(
        fields[16],
        format!("{}.000000", truth_total(first, "SQ_WAVES"))
    );
    assert_eq!(fields[17], first["start"].to_string());
    // rocprofv3's 53 columns: the simulated topology's CPU node, then its GPU.
    let agents = p.file("pass_1/agent_info.csv");
    let lines: Vec<&str> = agents.lines().collect();
    assert_eq!(lines.len(), 3, "{agents}");
    assert_eq!(lines[0].split(',').count(), 53, "{agents}");
    assert!(lines[1].starts_with("0,0,\"CPU\",64,"), "{agents}");
    // The values rocprofv3 gives on the same simulated topology: the CPU node's KFD `num_xcc`
    // (0), the GPU's 32 shader engines, rocprofiler-sdk's grid limits, KFD's gpu_id, the amdgpu
    // family libdrm reports (AI, 141) and the node's name as its model.
    let agent_field = |row: &str, name: &str| -> String {
        let header: Vec<&str> = lines[0].split(',').collect();
        let at = header
            .iter()
            .position(|h| *h == format!("\"{name}\""))
            .unwrap_or_else(|| panic!("no {name} in {agents}"));
        row.split(',').nth(at).unwrap().to_string()
    };
    assert_eq!(agent_field(lines[1], "Num_Xcc"), "0", "{agents}");
    assert_eq!(agent_field(lines[1], "Model_Name"), "\"\"", "{agents}");
    for (name, value) in [
        ("Num_Xcc", "8"),
        ("Num_Shader_Banks", "32"),
        ("Cu_Per_Engine", "9"),
        ("Grid_Max_Size", "4294967295"),
        ("Grid_Max_Dim_X", "2147483647"),
        ("Grid_Max_Dim_Y", "65535"),
        ("Grid_Max_Dim_Z", "65535"),
        ("Gpu_Id", "4096"),
        ("Family_Id", "141"),
    ] {
        assert_eq!(agent_field(lines[2], name), value, "{name} in {agents}");
    }
    assert!(
        lines[2].ends_with("\"gfx942\",\"AMD\",\"AMD Instinct MI300X\",\"gfx942\""),
        "{agents}"
    );
    assert!(
        p.stderr().contains("rtl-pmc: top kernels by total time"),
        "{}",
        p.stderr()
    );
}

#[test]
fn input_txt_with_two_pmc_lines_runs_two_passes_and_merges_them() {
    let dir = scratch("input-txt-file");
    let input = dir.join("input.txt");
    std::fs::write(&input, "# two passes\npmc: SQ_WAVES\npmc: TCC_HIT\n").unwrap();
    let p = profile(
        "input-txt",
        &["-i", input.to_str().unwrap()],
        &["--iterations", "2"],
        &["SQ_WAVES", "TCC_HIT"],
    );
    p.assert_code(0);
    // Where rocprofv3 puts a .txt input's passes: pmc_N/<hostname>/.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let (pass1, pass2) = (
        format!("pmc_1/{}", host.trim()),
        format!("pmc_2/{}", host.trim()),
    );
    for pass in [&pass1, &pass2] {
        for kind in ["counter_collection", "agent_info"] {
            assert!(sim_support::process_file(&p.out, &format!("{pass}/{kind}.csv")).is_file());
        }
    }
    assert!(p
        .file(&format!("{pass1}/counter_collection.csv"))
        .contains("\"SQ_WAVES\""));
    assert!(!p
        .file(&format!("{pass1}/counter_collection.csv"))
        .contains("\"TCC_HIT\""));
    assert!(p
        .file(&format!("{pass2}/counter_collection.csv"))
        .contains("\"TCC_HIT\""));
    let (header, rows) = p.results();
    assert_eq!(
        header.join(","),
        format!("{LEADING},SQ_WAVES,TCC_HIT,BeginNs,EndNs")
    );
    assert_eq!(rows.len(), 8);
    let pids = p.truth_pids();
    assert_eq!(pids.len(), 2, "one process per pass");
    // Pass 1's dispatches give the rows' times; pass 2's are matched by kernel and occurrence.
    let pass1: Vec<&serde_json::Value> = p.truth.iter().filter(|t| t["pid"] == pids[0]).collect();
    let pass2: Vec<&serde_json::Value> = p.truth.iter().filter(|t| t["pid"] == pids[1]).collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let truth = truth_by_time(&p, &header, &rows);
    for (row, t) in rows.iter().zip(truth) {
        assert_eq!(t["pid"], pids[0]);
        assert_eq!(
            row[column(&header, "SQ_WAVES")],
            truth_total(t, "SQ_WAVES").to_string()
        );
        let kernel = row[1].clone();
        let n = seen.entry(kernel.clone()).or_default();
        let second = pass2
            .iter()
            .filter(|t| t["kernel"] == kernel.as_str())
            .nth(*n)
            .expect("pass 2 ran the same kernels");
        *n += 1;
        assert_eq!(
            row[column(&header, "TCC_HIT")],
            truth_total(second, "TCC_HIT").to_string()
        );
    }
    assert_eq!(pass1.len(), 8);
}

#[test]
fn pmc_groups_alternate_every_four_dispatches() {
    let dir = scratch("pmc-groups-file");
    let input = dir.join("input.yaml");
    std::fs::write(
        &input,
        "jobs:\n  - pmc_groups: [[SQ_WAVES], [TCC_HIT]]\n    pmc_group_interval: 4\n",
    )
    .unwrap();
    let p = profile(
        "pmc-groups",
        &["-i", input.to_str().unwrap()],
        &["--iterations", "3"],
        &["SQ_WAVES", "TCC_HIT"],
    );
    p.assert_code(0);
    assert!(!p.out.join("pass_2").exists(), "pmc_groups is one run");
    let (header, rows) = p.results();
    assert_eq!(rows.len(), 12);
    let (waves, count) = (column(&header, "SQ_WAVES"), column(&header, "TCC_HIT"));
    let truth = truth_by_time(&p, &header, &rows);
    for (i, (row, t)) in rows.iter().zip(truth).enumerate() {
        if (i / 4) % 2 == 0 {
            assert_eq!(
                row[waves],
                truth_total(t, "SQ_WAVES").to_string(),
                "row {i}"
            );
            assert_eq!(row[count], "None", "row {i}");
        } else {
            assert_eq!(row[waves], "None", "row {i}");
            assert_eq!(row[count], truth_total(t, "TCC_HIT").to_string(), "row {i}");
        }
    }
}

#[test]
fn jobs_with_their_own_output_directory_are_profiles_of_their_own() {
    let dir = scratch("job-directories");
    let (a, b) = (dir.join("a"), dir.join("b"));
    let input = dir.join("input.yaml");
    std::fs::write(
        &input,
        format!(
            "jobs:\n  - pmc: [SQ_WAVES]\n    output_directory: {}\n  - pmc: [TCC_HIT]\n    \
             output_directory: {}\n  - pmc: [GRBM_COUNT]\n  - pmc: [SQ_WAVES]\n    \
             output_directory: {}\n",
            a.display(),
            b.display(),
            a.display()
        ),
    )
    .unwrap();
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(&dir)
        .args(["--arch", "gfx942", "-i"])
        .arg(&input)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(["--iterations", "2"])
        .envs(sim_env("gfx942"))
        .output()
        .expect("rtl-pmc starts");
    let p = Profile {
        output,
        out: dir.clone(),
        truth: Vec::new(),
    };
    p.assert_code(0);
    // The job without a directory writes to <hostname>/<pid> under the working directory, as
    // rocprofv3 does.
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let stderr = p.stderr();
    let default = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("rtl-pmc: results in "))
        .map(PathBuf::from)
        .find(|d| *d != a && *d != b)
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(default.parent(), Some(&*dir.join(hostname.trim())));
    assert!(default
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.parse::<u32>().is_ok()));
    for (out, passes, counter) in [
        (&a, 2, "SQ_WAVES"),
        (&b, 1, "TCC_HIT"),
        (&default, 1, "GRBM_COUNT"),
    ] {
        let profile = Profile {
            output: p.output.clone(),
            out: out.clone(),
            truth: Vec::new(),
        };
        for pass in 1..=passes {
            let path = format!("pass_{pass}/counter_collection.csv");
            assert!(sim_support::process_file(out, &path).is_file());
        }
        assert!(!out.join(format!("pass_{}", passes + 1)).exists());
        let (header, rows) = profile.results();
        assert_eq!(rows.len(), 8, "{}", out.display());
        assert_eq!(header.len(), 20, "{header:?}");
        let at = column(&header, counter);
        assert!(rows.iter().any(|r| r[at].parse::<u64>().unwrap() > 0));
        // Each demo dispatch is one 64-wave grid of 2.4 us at 2100 MHz on 8 XCCs.
        let every = match counter {
            "SQ_WAVES" => Some("64"),
            "GRBM_COUNT" => Some("40320"),
            _ => None,
        };
        if let Some(value) = every {
            assert!(rows.iter().all(|r| r[at] == value), "{rows:?}");
        }
        assert!(
            p.stderr()
                .contains(&format!("rtl-pmc: results in {}\n", out.display())),
            "{}",
            p.stderr()
        );
    }
}

#[test]
fn fetch_size_equals_its_formula_over_ground_truth() {
    let inputs = ["TCC_BUBBLE", "TCC_EA0_RDREQ", "TCC_EA0_RDREQ_32B"];
    let p = profile("fetch-size", &["--pmc", "FETCH_SIZE"], &[], &inputs);
    p.assert_code(0);
    let (header, rows) = p.results();
    assert_eq!(
        header.join(","),
        format!("{LEADING},FETCH_SIZE,BeginNs,EndNs")
    );
    let truth = truth_by_time(&p, &header, &rows);
    assert_eq!(rows.len(), 4);
    for (row, t) in rows.iter().zip(truth) {
        let [bubble, rdreq, rdreq32] = inputs.map(|c| truth_total(t, c) as f64);
        let expected =
            (bubble * 128.0 + (rdreq - bubble - rdreq32) * 64.0 + rdreq32 * 32.0) / 1024.0;
        let got: f64 = row[column(&header, "FETCH_SIZE")]
            .parse()
            .expect("a number");
        assert_eq!(got, expected, "{row:?}");
    }
}

#[test]
fn a_forking_application_is_merged_with_both_processes() {
    let p = profile("fork", &["--pmc", "SQ_WAVES"], &["--fork"], &["SQ_WAVES"]);
    p.assert_code(0);
    let pids = p.truth_pids();
    assert_eq!(pids.len(), 2, "parent and child dispatched");
    let raw: Vec<String> = std::fs::read_dir(p.out.join("pass_1"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".rtlraw"))
        .collect();
    assert_eq!(raw.len(), 2, "{raw:?}");
    let (header, rows) = p.results();
    assert_eq!(rows.len(), 8);
    let truth = truth_by_time(&p, &header, &rows);
    let pid = column(&header, "pid");
    for (row, t) in rows.iter().zip(truth) {
        assert_eq!(row[pid], t["pid"].to_string());
        assert_eq!(
            row[column(&header, "SQ_WAVES")],
            truth_total(t, "SQ_WAVES").to_string()
        );
    }
    // As rocprofv3 writes them: one file per process, named after it, holding its dispatches.
    for pid in pids {
        let collection = p.file(&format!("pass_1/{pid}_counter_collection.csv"));
        assert_eq!(collection.lines().count(), 1 + 4, "{collection}");
        assert!(collection
            .lines()
            .skip(1)
            .all(|l| l.split(',').nth(4) == Some(&pid.to_string())));
        assert!(p
            .file(&format!("pass_1/{pid}_agent_info.csv"))
            .starts_with("\"Node_Id\""));
    }
}

#[test]
fn the_applications_exit_status_is_passed_on_with_results_written() {
    let p = profile(
        "exit-3",
        &["--pmc", "SQ_WAVES", "--pmc", "TCC_HIT"],
        &["--exit-code", "3"],
        &["SQ_WAVES"],
    );
    p.assert_code(3);
    // The first pass failed: the run stops there, and what it collected is written.
    assert!(!p.out.join("pass_2").exists());
    let (header, rows) = p.results();
    assert_eq!(
        header.join(","),
        format!("{LEADING},SQ_WAVES,BeginNs,EndNs")
    );
    assert_eq!(rows.len(), 4);
    assert!(
        p.stderr().contains("exited with 3 in pass 1"),
        "{}",
        p.stderr()
    );
}

#[test]
fn continue_on_error_runs_every_pass_and_keeps_the_exit_status() {
    let p = profile(
        "continue",
        &[
            "--pmc",
            "SQ_WAVES",
            "--pmc",
            "TCC_HIT",
            "--continue-on-error",
        ],
        &["--exit-code", "3"],
        &["SQ_WAVES", "TCC_HIT"],
    );
    p.assert_code(3);
    let (header, rows) = p.results();
    assert_eq!(
        header.join(","),
        format!("{LEADING},SQ_WAVES,TCC_HIT,BeginNs,EndNs")
    );
    assert_eq!(rows.len(), 4);
    assert!(
        rows.iter().all(|r| !r.contains(&"None".to_string())),
        "{rows:?}"
    );
}

#[test]
fn a_crashing_application_exits_139_with_its_flushed_records_written() {
    let p = profile(
        "crash",
        &["--pmc", "SQ_WAVES"],
        &["--crash", "--iterations", "2"],
        &["SQ_WAVES"],
    );
    p.assert_code(128 + 11);
    let (header, rows) = p.results();
    assert_eq!(
        header.join(","),
        format!("{LEADING},SQ_WAVES,BeginNs,EndNs")
    );
    // The demo crashes right after its first iteration's 4 dispatches, well within the
    // interposer's flush interval, so anywhere from none to all of them reached the disk; those
    // that did are exact.
    assert!(rows.len() <= 4, "only the first iteration ran: {rows:?}");
    let truth = truth_by_time(&p, &header, &rows);
    for (row, t) in rows.iter().zip(truth) {
        assert_eq!(
            row[column(&header, "SQ_WAVES")],
            truth_total(t, "SQ_WAVES").to_string()
        );
    }
}

#[test]
fn every_format_is_written_on_request() {
    let p = profile(
        "formats",
        &[
            "--pmc",
            "SQ_WAVES",
            "--output-format",
            "csv,json,rocpd,pftrace",
            "-o",
            "prof",
        ],
        &[],
        &["SQ_WAVES"],
    );
    p.assert_code(0);
    for name in ["prof.csv", "prof.db", "prof.json", "prof.pftrace"] {
        assert!(p.out.join(name).is_file(), "{name} missing");
    }
    assert!(sim_support::process_file(&p.out, "pass_1/counter_collection.csv").is_file());
    let json: serde_json::Value = serde_json::from_str(&p.file("prof.json")).unwrap();
    // rocprofv3's layout: records of one {counter_id, value} per dimension position, the
    // counter found by its id in "counters".
    let tool = &json["rocprofiler-sdk-tool"][0];
    let waves = tool["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "SQ_WAVES")
        .expect("SQ_WAVES described")["id"]["handle"]
        .clone();
    let dispatches = tool["callback_records"]["counter_collection"]
        .as_array()
        .unwrap();
    assert_eq!(dispatches.len(), 4);
    for d in dispatches {
        let data = &d["dispatch_data"];
        let t = p
            .truth
            .iter()
            .find(|t| t["start"] == data["start_timestamp"] && t["end"] == data["end_timestamp"])
            .expect("a ground-truth dispatch");
        let samples: Vec<f64> = t["counters"]["SQ_WAVES"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let values: Vec<f64> = d["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["counter_id"]["handle"] == waves)
            .map(|r| r["value"].as_f64().unwrap())
            .collect();
        assert_eq!(values, samples);
        assert_eq!(
            d["rtl-pmc"]["counters"]["SQ_WAVES"].as_f64().unwrap(),
            samples.iter().sum::<f64>()
        );
        let kernel = data["dispatch_info"]["kernel_id"].as_u64().unwrap() as usize;
        assert_eq!(
            tool["kernel_symbols"][kernel]["formatted_kernel_name"],
            t["kernel"]
        );
        assert_eq!(d["rtl-pmc"]["pid"], t["pid"]);
    }
    let only_csv = profile(
        "formats-csv",
        &["--pmc", "SQ_WAVES", "--output-format", "csv"],
        &[],
        &[],
    );
    only_csv.assert_code(0);
    assert!(only_csv.out.join("results.csv").is_file());
    assert!(!only_csv.out.join("results.db").exists());
    let leftovers: Vec<_> = std::fs::read_dir(&only_csv.out)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial"))
        .collect();
    assert_eq!(leftovers, Vec::<String>::new());
}

#[test]
fn rank_directories_merge_into_one() {
    let dir = scratch("ranks");
    let template = dir.join("out").join("rank%rank%");
    let mut truth = Vec::new();
    for rank in ["0", "1"] {
        let (output, t) = run_rtl_pmc(
            &dir,
            &template,
            &["--pmc", "SQ_WAVES"],
            &[],
            &["SQ_WAVES"],
            &[("SLURM_PROCID", rank)],
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        truth = t;
    }
    assert!(dir.join("out/rank0/results.db").is_file());
    assert!(dir.join("out/rank1/results.db").is_file());
    let merged = dir.join("merged");
    let output = Command::new(artifact("rtl-pmc"))
        .args(["merge", "-d"])
        .arg(&merged)
        .arg(dir.join("out/rank0"))
        .arg(dir.join("out/rank1"))
        .output()
        .expect("rtl-pmc merge starts");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let p = Profile {
        output,
        out: merged,
        truth,
    };
    let (header, rows) = p.results();
    assert_eq!(rows.len(), 8);
    let pids = p.truth_pids();
    assert_eq!(
        pids.len(),
        2,
        "both ranks appended to one ground-truth file"
    );
    let pid = column(&header, "pid");
    let truth = truth_by_time(&p, &header, &rows);
    for (row, t) in rows.iter().zip(truth) {
        assert_eq!(row[pid], t["pid"].to_string());
        assert_eq!(
            row[column(&header, "SQ_WAVES")],
            truth_total(t, "SQ_WAVES").to_string()
        );
    }
    // One file per rank's process, each with its 4 dispatches.
    let files: Vec<String> = std::fs::read_dir(p.out.join("pass_1"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("_counter_collection.csv"))
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    for name in files {
        let rows = p.file(&format!("pass_1/{name}")).lines().count();
        assert_eq!(rows, 1 + 4, "{name}");
    }

    let missing = Command::new(artifact("rtl-pmc"))
        .args(["merge", "-d"])
        .arg(dir.join("merged2"))
        .arg(dir.join("nowhere"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        format!(
            "rtl-pmc: {}: no results.db (run with --output-format rocpd, the default)\n",
            dir.join("nowhere").display()
        )
    );
}

#[test]
fn ctrl_c_stops_the_run_and_writes_what_was_collected() {
    let dir = scratch("interrupt");
    let out = dir.join("out");
    let child = Command::new(artifact("rtl-pmc"))
        .current_dir(&dir)
        .args(["--arch", "gfx942", "-d"])
        .arg(&out)
        .args(["--pmc", "SQ_WAVES", "--pmc", "TCC_HIT", "--"])
        .arg(artifact("rtl-demo-app"))
        .args(["--iterations", "1000000"])
        .envs(sim_env("gfx942"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rtl-pmc starts");
    // Wait until the application has written records.
    let raw_written = || {
        std::fs::read_dir(out.join("pass_1"))
            .map(|entries| {
                entries.filter_map(|e| e.ok()).any(|e| {
                    e.path().extension().is_some_and(|x| x == "rtlraw")
                        && e.metadata().map(|m| m.len() > 2000).unwrap_or(false)
                })
            })
            .unwrap_or(false)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !raw_written() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(raw_written(), "the application wrote records within 60 s");
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("rtl-pmc: interrupted; writing what was collected"),
        "{stderr}"
    );
    assert!(!out.join("pass_2").exists());
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut lines = results.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!("{LEADING},SQ_WAVES,BeginNs,EndNs")
    );
    assert!(lines.count() > 0);
}

#[test]
fn sim_runs_the_passes_on_the_simulated_gpu_with_a_relative_output_directory() {
    let dir = scratch("sim-flag");
    let truth = dir.join("truth.jsonl");
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(&dir)
        .args(["--sim", "gfx942", "-d", "out", "--pmc", "SQ_WAVES", "--"])
        .arg(artifact("rtl-demo-app"))
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("RTL_PMC_KFD_TOPOLOGY")
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", "SQ_WAVES")
        .output()
        .expect("rtl-pmc starts");
    let p = Profile {
        output,
        out: dir.join("out"),
        truth: read_truth(&truth),
    };
    p.assert_code(0);
    let plan = p.file("pass_1/plan.json");
    assert!(
        plan.contains(&format!(
            "\"output_directory\": \"{}\"",
            dir.join("out/pass_1").display()
        )),
        "{plan}"
    );
    let (header, rows) = p.results();
    assert_eq!(rows.len(), 4);
    let truth = truth_by_time(&p, &header, &rows);
    for (row, t) in rows.iter().zip(truth) {
        assert_eq!(
            row[column(&header, "SQ_WAVES")],
            truth_total(t, "SQ_WAVES").to_string()
        );
    }
    // The simulated GPU's topology describes the agent.
    let agents = p.file("pass_1/agent_info.csv");
    let row: Vec<&str> = agents.lines().nth(2).unwrap().split(',').collect();
    assert_eq!(
        (row[0], row[4], row[12], row[13]),
        ("1", "1216", "8", "304"),
        "{agents}"
    );
}

#[test]
fn the_summary_recomputes_derived_counters_from_summed_inputs() {
    let inputs = ["SQ_ACTIVE_INST_VALU", "GRBM_GUI_ACTIVE"];
    let p = profile(
        "ratio",
        &["--pmc", "ValuPipeIssueUtil"],
        &["--iterations", "2"],
        &inputs,
    );
    p.assert_code(0);
    let conn = rusqlite::Connection::open(p.out.join("results.db")).unwrap();
    let stderr = p.stderr();
    for kernel in ["vadd", "saxpy", "fill", "increment"] {
        let lines: Vec<&serde_json::Value> =
            p.truth.iter().filter(|t| t["kernel"] == kernel).collect();
        assert_eq!(lines.len(), 2);
        // 100 * reduce(SQ_ACTIVE_INST_VALU, sum) / (reduce(GRBM_GUI_ACTIVE, max) * CU_NUM),
        // over the sums of both dispatches' inputs; CU_NUM is 304 on the simulated MI300X.
        let valu: u64 = lines.iter().map(|t| truth_total(t, inputs[0])).sum();
        let active: u64 = lines
            .iter()
            .map(|t| {
                let samples = t["counters"][inputs[1]].as_array().unwrap();
                samples.iter().map(|v| v.as_u64().unwrap()).max().unwrap()
            })
            .sum();
        let expected = 100.0 * valu as f64 / (active as f64 * 304.0);
        let (value, total, unit): (f64, f64, String) = conn
            .query_row(
                "SELECT value, total, unit FROM rtl_kernel_counters WHERE kernel = ?1",
                [kernel],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert!(
            (value - expected).abs() <= expected * 1e-12,
            "{kernel}: {value} vs {expected}"
        );
        assert_eq!(unit, "percent");
        // Summing the per-dispatch percentages would double it.
        assert!(
            (total - 2.0 * expected).abs() <= expected * 1e-9,
            "{kernel}: {total}"
        );
        let shown = format!("{expected:.*}", (3.0 - expected.log10().floor()) as usize);
        let shown = shown.trim_end_matches('0').trim_end_matches('.');
        assert!(
            stderr.contains(&format!("    ValuPipeIssueUtil={shown}%\n")),
            "{kernel}: {shown}\n{stderr}"
        );
    }
}
