//! `rtl-pmc analyze` on a large profile: writes an rtl-pmc profile directory of N dispatches
//! (default 100,000) of 8 kernels on a gfx942 with every counter the chosen panels need
//! (`results.csv` and `pass_1/1_agent_info.csv`, values from a fixed pseudo-random sequence),
//! then times `rtl-pmc analyze DIR` on it, every panel, as the command does it.
//!
//! `cargo run --release -p rtl-pmc-cli --example analyze_bench -- [DISPATCHES] [--block ID...]`
//!
//! `--block` chooses which panels' counters the profile holds (default 2, System
//! Speed-of-Light; `all` for every panel, L2 channels included). `RTL_PMC_BENCH_KEEP=1` keeps
//! the directory (under the target directory's `tmp/`).

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use panels::{BlockId, CounterLayout};

const KERNELS: [&str; 8] = [
    "gemm_tile",
    "reduce_rows",
    "copy_h2d",
    "softmax",
    "layernorm",
    "attention",
    "scatter",
    "gather",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dispatches: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let blocks: Vec<String> = match args.iter().position(|a| a == "--block") {
        Some(at) => args[at + 1..].to_vec(),
        None => vec!["2".to_string()],
    };
    let ids: Vec<BlockId> = blocks
        .iter()
        .map(|b| BlockId::parse(b).expect("block id"))
        .collect();
    let set = panels::load("gfx942").expect("gfx942 panels");
    let layout = CounterLayout {
        num_xcd: 8,
        l2_channels_per_xcd: 16,
    };
    let needs = panels::counters_for_blocks(set, &ids, &layout).expect("blocks");
    let mut counters: Vec<String> = needs.counters.iter().cloned().collect();
    counters.extend(needs.levels.iter().map(|l| l.accumulate_name.clone()));

    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/tmp/analyze-bench");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("pass_1")).expect("bench directory");
    let start = Instant::now();
    write_agent_info(&dir.join("pass_1/1_agent_info.csv"));
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("results.csv")).unwrap());
    write!(out, "Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,accum_vgpr,sgpr,wave_size,sig,obj").unwrap();
    for c in &counters {
        write!(out, ",{c}").unwrap();
    }
    writeln!(out, ",BeginNs,EndNs").unwrap();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % 1_000_000
    };
    let mut time: u64 = 1_000_000_000;
    for i in 0..dispatches {
        let kernel = KERNELS[i % KERNELS.len()];
        write!(
            out,
            "{i},\"{kernel}\",1,1,{i},4242,4243,1048576,256,0,0,32,0,16,64,0x0,0x0"
        )
        .unwrap();
        for _ in &counters {
            write!(out, ",{}", next()).unwrap();
        }
        let duration = 10_000 + next() % 90_000;
        writeln!(out, ",{time},{}", time + duration).unwrap();
        time += duration + 1_000;
    }
    out.flush().unwrap();
    let size = std::fs::metadata(dir.join("results.csv")).unwrap().len();
    println!(
        "profile: {dispatches} dispatches x {} counters, results.csv {:.0} MiB, written in {:.2} s",
        counters.len(),
        size as f64 / (1 << 20) as f64,
        start.elapsed().as_secs_f64()
    );

    let start = Instant::now();
    let text = rtl_pmc_cli::analyze::run(&["analyze".to_string(), dir.display().to_string()])
        .expect("analyze runs");
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "rtl-pmc analyze: {:.2} s ({} lines of panels for {} kernels)",
        seconds,
        text.lines().count(),
        KERNELS.len()
    );
    if std::env::var_os("RTL_PMC_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The simulated MI300X's agent_info.csv rows that analyze reads.
fn write_agent_info(path: &std::path::Path) {
    std::fs::write(
        path,
        "Node_Id,Agent_Type,Name,Product_Name,Cu_Count,Simd_Per_Cu,Array_Count,Simd_Arrays_Per_Engine,Num_Xcc,Wave_Front_Size,Max_Waves_Per_Cu,Max_Engine_Clk_Fcompute\n\
         0,CPU,cpu,cpu,8,0,0,0,0,0,0,0\n\
         1,GPU,gfx942,AMD Instinct MI300X,304,4,32,1,8,64,32,2100\n",
    )
    .expect("agent_info.csv");
}
