//! Plan files as the interposer reads them (`RunPlan::from_json`, then the dispatch selector
//! built from its filters): any text is a plan or an error, a plan survives a round trip through
//! `to_json`, and its selector decides dispatches without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtl_pmc::dispatch::selection::Selector;
use rtl_pmc::passes::plan_file::RunPlan;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(plan) = RunPlan::from_json(text) else {
        return;
    };
    let again = RunPlan::from_json(&plan.to_json()).expect("a written plan reads back");
    assert_eq!(again, plan);
    if let Ok(selector) = Selector::new(&plan.filters, plan.group_interval) {
        for (name, gpu) in [("empty", 0), ("vadd", 1), ("_Z4vaddPfS_S_i", 0)] {
            let groups = plan.agents.first().map_or(0, |a| a.groups.len());
            let _ = selector.decide(name, gpu, 1, groups);
        }
    }
});
