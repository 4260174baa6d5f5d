//! `RTL_SIM_GROUND_TRUTH`: one JSON line per dispatch, with the counters asked for.

use hsa_runtime64::gpu::{self, KernelRun};

#[test]
fn every_dispatch_appends_one_line_with_the_named_counters() {
    let path = std::env::temp_dir().join(format!("rtl-sim-truth-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    // The settings are read at the first dispatch of the process; this is the only test here.
    std::env::set_var("RTL_SIM_GROUND_TRUTH", &path);
    std::env::set_var(
        "RTL_SIM_GROUND_TRUTH_COUNTERS",
        "GRBM_COUNT, SQ_WAVES,NO_SUCH_COUNTER",
    );
    let mut k = KernelRun {
        agent_node_id: 2,
        arch: "gfx90a",
        device_index: 0,
        queue_id: 11,
        dispatch_index: 0,
        kernel: "_Z6kernelPf",
        grid: [640, 1, 1],
        workgroup: [64, 1, 1],
        group_segment_size: 0,
        private_segment_size: 0,
        wave_size: 64,
        start_ns: 1_000,
        end_ns: 2_000,
        computed: false,
        variation: None,
    };
    gpu::kernel_started(&k);
    k.dispatch_index = 1;
    k.start_ns = 3_000;
    k.end_ns = 3_500;
    gpu::kernel_started(&k);
    let text = std::fs::read_to_string(&path).expect("ground truth file");
    let _ = std::fs::remove_file(&path);
    let pid = std::process::id();
    // 1 us and 0.5 us at 1700 MHz; 10 single-wave workgroups over 8 shader engines.
    assert_eq!(
        text,
        format!(
            "{{\"pid\":{pid},\"agent\":2,\"queue\":11,\"kernel\":\"_Z6kernelPf\",\"dispatch\":0,\"start\":1000,\"end\":2000,\"computed\":false,\"counters\":{{\"GRBM_COUNT\":[1700],\"SQ_WAVES\":[2,2,1,1,1,1,1,1]}}}}\n\
             {{\"pid\":{pid},\"agent\":2,\"queue\":11,\"kernel\":\"_Z6kernelPf\",\"dispatch\":1,\"start\":3000,\"end\":3500,\"computed\":false,\"counters\":{{\"GRBM_COUNT\":[850],\"SQ_WAVES\":[2,2,1,1,1,1,1,1]}}}}\n"
        )
    );
}
