//! Many threads, queues and GPUs at once: counters are device-wide, so only the per-GPU chain of
//! counted dispatches keeps each dispatch's values its own.

mod common;

use common::{assert_matches_truth, plan, run_demo, scratch};
use rtl_pmc::passes::plan_file::KernelFilters;

const GROUP: &[&str] = &["SQ_WAVES", "GRBM_GUI_ACTIVE"];
/// 4 threads x 2 queues x 2 GPUs x 4 kernels = 64 dispatches per iteration.
const ITERATIONS: &str = "157";
const DISPATCHES: usize = 157 * 64;

fn concurrent(name: &str, env: &[(&str, &str)]) -> common::Run {
    let dir = scratch(name);
    let plan = plan(&dir, "gfx942", &[GROUP], KernelFilters::default(), 1);
    let args = [
        "--threads",
        "4",
        "--queues",
        "2",
        "--iterations",
        ITERATIONS,
        "--size",
        "256",
    ];
    run_demo(&dir, "gfx942x2", Some(&plan), env, GROUP, &args)
}

#[test]
fn four_threads_two_queues_two_gpus_every_dispatch_once_with_exact_values() {
    for mode in ["batch", "packet"] {
        let run = concurrent(
            &format!("concurrent-{mode}"),
            &[("RTL_SIM_INTERCEPT", mode)],
        );
        run.assert_success();
        assert!(
            run.stdout()
                .starts_with(&format!("rtl-demo-app: {DISPATCHES} dispatches verified")),
            "{}",
            run.stdout()
        );
        assert_eq!(assert_matches_truth(&run, &[GROUP]), DISPATCHES, "{mode}");
        let per_gpu = run.records.iter().filter(|r| r.gpu_index == 1).count();
        assert_eq!(per_gpu, DISPATCHES / 2);
    }
}

#[test]
fn without_the_chain_overlapping_kernels_mix_their_counts() {
    let run = concurrent("unserialised", &[("RTL_PMC_SERIALIZE", "0")]);
    run.assert_success();
    let wrong = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        assert_matches_truth(&run, &[GROUP])
    }));
    assert!(
        wrong.is_err(),
        "values matched although counted kernels overlapped"
    );
}
