//! The interposer collecting counters on the simulated ROCm: every dispatch recorded exactly once
//! with the simulator's ground-truth values, in both intercept modes, with both aqlprofile APIs,
//! on ROCm 6 and 7 table layouts, and with the application's results unchanged.

mod common;

use common::{assert_matches_truth, plan, run_demo, scratch};
use rtl_pmc::passes::plan_file::KernelFilters;

const GROUP: &[&str] = &["SQ_WAVES", "SQ_INSTS_VALU", "TCC_HIT"];

fn counted_run(name: &str, env: &[(&str, &str)]) {
    let dir = scratch(name);
    let plan = plan(&dir, "gfx942", &[GROUP], KernelFilters::default(), 1);
    let run = run_demo(
        &dir,
        "gfx942",
        Some(&plan),
        env,
        GROUP,
        &["--iterations", "3"],
    );
    run.assert_success();
    assert!(
        run.stdout()
            .starts_with("rtl-demo-app: 12 dispatches verified"),
        "{}",
        run.stdout()
    );
    assert_eq!(run.stderr(), "");
    assert_eq!(assert_matches_truth(&run, &[GROUP]), 12);
    let kernels: Vec<&str> = run
        .records
        .iter()
        .take(4)
        .map(|r| r.kernel.as_str())
        .collect();
    assert_eq!(kernels, ["vadd", "saxpy", "fill", "increment"]);
    let first = &run.records[0];
    assert_eq!(
        (first.agent, first.gpu_index, first.arch.as_str()),
        (1, 0, "gfx942")
    );
    assert_eq!(
        (first.workgroup, first.wave_size, first.arch_vgpr),
        ([256, 1, 1], 64, 8)
    );
    assert_eq!(first.group, Some(0));
    let ids: Vec<u64> = run.records.iter().map(|r| r.dispatch).collect();
    assert_eq!(ids, (1..=12).collect::<Vec<u64>>());
}

#[test]
fn one_queue_rocm7_batched_intercept_v2() {
    counted_run(
        "rocm7-batch-v2",
        &[("RTL_SIM_ROCM", "7.0"), ("RTL_SIM_INTERCEPT", "batch")],
    );
}

#[test]
fn one_queue_rocm7_per_packet_intercept_v2() {
    counted_run(
        "rocm7-packet-v2",
        &[("RTL_SIM_ROCM", "7.0"), ("RTL_SIM_INTERCEPT", "packet")],
    );
}

#[test]
fn one_queue_rocm63_legacy_api_stop_copies() {
    counted_run(
        "rocm63-legacy-6",
        &[
            ("RTL_SIM_ROCM", "6.3"),
            ("RTL_PMC_AQLPROFILE_API", "legacy"),
            ("RTL_SIM_AQLPROFILE", "6"),
        ],
    );
}

#[test]
fn one_queue_rocm7_legacy_api_read_copies() {
    counted_run(
        "rocm7-legacy-7",
        &[
            ("RTL_SIM_ROCM", "7.0"),
            ("RTL_PMC_AQLPROFILE_API", "legacy"),
            ("RTL_SIM_AQLPROFILE", "7"),
        ],
    );
}

#[test]
fn one_queue_legacy_api_with_read_folded_into_stop() {
    counted_run(
        "legacy-read-api-0",
        &[
            ("RTL_PMC_AQLPROFILE_API", "legacy"),
            ("AQLPROFILE_READ_API", "0"),
        ],
    );
}

/// TA, TD and TCP sit beside each compute unit: AMD's legacy API reports their table count (16)
/// where the GPU has `ceil(CUs per shader array) + 1` (11 on an MI300X); the interposer programs
/// the instances the GPU has with either API, and every sample equals ground truth.
#[test]
fn both_apis_collect_the_per_cu_texture_blocks_on_the_instances_the_gpu_has() {
    const TEXTURE: &[&str] = &["TA_TA_BUSY", "TD_TD_BUSY", "TCP_TOTAL_CACHE_ACCESSES"];
    for api in ["legacy", "v2"] {
        let dir = scratch(&format!("texture-{api}"));
        let plan = plan(&dir, "gfx942", &[TEXTURE], KernelFilters::default(), 1);
        let env = [("RTL_PMC_AQLPROFILE_API", api)];
        let run = run_demo(&dir, "gfx942", Some(&plan), &env, TEXTURE, &[]);
        run.assert_success();
        assert_eq!(run.stderr(), "", "{api}");
        assert_eq!(assert_matches_truth(&run, &[TEXTURE]), 4, "{api}");
    }
}

/// A dispatch the filters leave out is kept out of the counting windows of the others, with one
/// queue or several: nothing to warn about, and every selected dispatch's values are its own.
#[test]
fn filters_on_several_queues_keep_unselected_dispatches_out_of_counting_windows() {
    const GROUP: &[&str] = &["SQ_WAVES"];
    let filters = KernelFilters {
        include_regex: Some("^vadd$".into()),
        ..KernelFilters::default()
    };
    for queues in ["1", "2"] {
        let dir = scratch(&format!("unselected-{queues}"));
        let plan = plan(&dir, "gfx942", &[GROUP], filters.clone(), 1);
        let args = ["--queues", queues, "--iterations", "2"];
        let run = run_demo(&dir, "gfx942", Some(&plan), &[], GROUP, &args);
        run.assert_success();
        assert_eq!(run.stderr(), "", "{queues} queue(s)");
        assert!(run.records.iter().all(|r| r.kernel == "vadd"));
        let selected = common::Run {
            truth: run
                .truth
                .iter()
                .filter(|t| t["kernel"] == "vadd")
                .cloned()
                .collect(),
            ..run
        };
        let expected = 2 * queues.parse::<usize>().unwrap();
        assert_eq!(assert_matches_truth(&selected, &[GROUP]), expected);
    }
}

#[test]
fn one_queue_rocm60_tables() {
    counted_run("rocm60", &[("RTL_SIM_ROCM", "6.0")]);
}

#[test]
fn groups_rotate_and_filters_select() {
    let dir = scratch("groups");
    let a: &[&str] = &["SQ_WAVES"];
    let b: &[&str] = &["GRBM_GUI_ACTIVE", "SQ_INSTS_VALU"];
    let filters = KernelFilters {
        exclude_regex: Some("^fill$".into()),
        ..KernelFilters::default()
    };
    let plan = plan(&dir, "gfx942", &[a, b], filters, 2);
    let truth: Vec<&str> = a.iter().chain(b).copied().collect();
    let run = run_demo(
        &dir,
        "gfx942",
        Some(&plan),
        &[],
        &truth,
        &["--iterations", "3"],
    );
    run.assert_success();
    // 12 dispatches, 3 of them fill: 9 counted, groups 0,0,1,1,0,0,1,1,0.
    let groups: Vec<Option<u32>> = run.records.iter().map(|r| r.group).collect();
    let g = |n| Some(n);
    assert_eq!(
        groups,
        [g(0), g(0), g(1), g(1), g(0), g(0), g(1), g(1), g(0)]
    );
    assert!(run.records.iter().all(|r| r.kernel != "fill"));
    let counted = common::Run {
        truth: run
            .truth
            .iter()
            .filter(|t| t["kernel"] != "fill")
            .cloned()
            .collect(),
        ..run
    };
    assert_eq!(assert_matches_truth(&counted, &[a, b]), 9);
}

#[test]
fn other_architectures_count_exactly_too() {
    for (arch, group) in [
        ("gfx90a", &["SQ_WAVES", "TCC_HIT"][..]),
        ("gfx950", &["SQ_WAVES", "SQ_INSTS_VALU"][..]),
        ("gfx1100", &["SQ_WAVES", "GL2C_HIT", "GRBM_GUI_ACTIVE"][..]),
    ] {
        let dir = scratch(&format!("arch-{arch}"));
        let plan = plan(&dir, arch, &[group], KernelFilters::default(), 1);
        let run = run_demo(&dir, arch, Some(&plan), &[], group, &["--iterations", "2"]);
        run.assert_success();
        assert_eq!(run.stderr(), "", "{arch}");
        assert_eq!(assert_matches_truth(&run, &[group]), 8, "{arch}");
        let vadd = run.records.iter().find(|r| r.kernel == "vadd").unwrap();
        let wave = if arch == "gfx1100" { 32 } else { 64 };
        assert_eq!((vadd.arch.as_str(), vadd.wave_size), (arch, wave));
    }
}

/// Work of another process on the GPU is the one thing rtl-pmc cannot keep out of a counting
/// window: with a KFD tree listing a queue of another process on the GPU (`gpu_id` of its
/// topology node, `proc/<pid>/queues/<queue>/gpuid`), that is said once, naming the process.
#[test]
fn another_process_with_queues_on_the_gpu_is_warned_about_once() {
    const GROUP: &[&str] = &["SQ_WAVES"];
    let dir = scratch("other-process");
    let kfd = dir.join("kfd");
    let write = |path: &str, text: &str| {
        let path = kfd.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("topology/nodes/1/gpu_id", "4660\n");
    write("proc/4000000/queues/0/gpuid", "4660\n");
    write("proc/4000001/queues/0/gpuid", "17\n");
    let topology = kfd.join("topology");
    let env = [("RTL_PMC_KFD_TOPOLOGY", topology.to_str().unwrap())];
    let plan = plan(&dir, "gfx942", &[GROUP], KernelFilters::default(), 1);
    let args = ["--queues", "2"];
    let run = run_demo(&dir, "gfx942", Some(&plan), &env, GROUP, &args);
    run.assert_success();
    assert_eq!(
        run.stderr(),
        "rtl-pmc: GPU 1 (gfx942) also runs work of process 4000000, which rtl-pmc cannot keep out of the counting windows (it orders this process's dispatches only): a counted dispatch that overlaps its work counts it too\n"
    );
    assert_eq!(assert_matches_truth(&run, &[GROUP]), 8);
}
