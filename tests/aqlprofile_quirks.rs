//! Quirks of AMD's aqlprofile that the simulated library reproduces, handled by the interposer
//! rather than inherited.
//!
//! The v2 API serves every agent registered after the first with the first one's block tables
//! and topology. On a machine with an MI300X (gfx942) and an MI210 (gfx90a), the interposer
//! collects counters on the MI300X and leaves the MI210's dispatches untouched, saying so once;
//! the legacy API names GPUs by their HSA agent and collects on both.

mod common;

use common::{assert_matches_truth, event, run_demo, scratch, warnings, Run};
use rtl_pmc::passes::plan_file::{AgentPlan, EventGroup, KernelFilters, RunPlan, PLAN_VERSION};

const GROUP: &[&str] = &["SQ_WAVES", "GRBM_COUNT"];
const DEVICES: &str = "gfx942-gfx90a";

/// The demo app on an MI300X and an MI210, collecting `GROUP` on both.
fn mixed_run(name: &str, env: &[(&str, &str)]) -> Run {
    let dir = scratch(name);
    let plan = RunPlan {
        version: PLAN_VERSION,
        pass: 1,
        output_directory: dir.join("out").display().to_string(),
        filters: KernelFilters::default(),
        group_interval: 1,
        agents: ["gfx942", "gfx90a"]
            .into_iter()
            .map(|arch| AgentPlan {
                arch: arch.into(),
                groups: vec![EventGroup {
                    counters: GROUP.iter().map(|n| n.to_string()).collect(),
                    events: GROUP.iter().map(|n| event(arch, n)).collect(),
                }],
            })
            .collect(),
        replay: None,
    };
    let path = dir.join("plan.json");
    plan.write(&path).expect("plan written");
    let run = run_demo(
        &dir,
        DEVICES,
        Some(&path),
        env,
        GROUP,
        &["--iterations", "2"],
    );
    run.assert_success();
    assert!(
        run.stdout().starts_with(
            "rtl-demo-app: 16 dispatches verified (vadd,saxpy,fill,increment) on 2 GPU(s) [gfx942,gfx90a]"
        ),
        "{}",
        run.stdout()
    );
    run
}

#[test]
fn a_gpu_unlike_the_first_registered_runs_unprofiled_with_one_warning() {
    let run = mixed_run("shared-tables-v2", &[]);
    assert_eq!(
        warnings(&run),
        ["rtl-pmc: aqlprofile's v2 API would program this GPU with the block tables and topology \
          of the first GPU registered (gfx942: 8 XCC, 32 SE, 304 CU, 1 SA per SE) instead of its \
          own (gfx90a: 1 XCC, 8 SE, 104 CU, 1 SA per SE); counters are not collected on GPU 2 \
          (gfx90a), its dispatches run unprofiled"]
    );
    assert_eq!(run.stderr().lines().count(), 1, "{}", run.stderr());
    assert_eq!(run.truth.len(), 16);
    let mi300x: Vec<serde_json::Value> = run
        .truth
        .iter()
        .filter(|t| t["agent"] == 1)
        .cloned()
        .collect();
    let run = Run {
        truth: mi300x,
        ..run
    };
    assert_eq!(assert_matches_truth(&run, &[GROUP]), 8);
    assert!(run.records.iter().all(|r| r.arch == "gfx942"));
}

#[test]
fn the_legacy_api_collects_on_both_gpus() {
    let run = mixed_run(
        "shared-tables-legacy",
        &[("RTL_PMC_AQLPROFILE_API", "legacy")],
    );
    assert_eq!(run.stderr(), "");
    assert_eq!(assert_matches_truth(&run, &[GROUP]), 16);
    let archs: std::collections::BTreeSet<&str> =
        run.records.iter().map(|r| r.arch.as_str()).collect();
    assert_eq!(archs.into_iter().collect::<Vec<_>>(), ["gfx90a", "gfx942"]);
}
