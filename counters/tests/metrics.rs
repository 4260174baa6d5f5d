//! Derived metrics checked against values computed by hand from the synthetic samples
//! (sample k of an event is base + k; n samples sum to n*base + n(n-1)/2).

mod common;

use common::{evaluate, reference, scalar, with_expressions};
use rtl_pmc_counters::{Dimension, Shape};

// MI300X: 8 XCCs, 304 CUs, 32 SEs (4 per XCC). GRBM: 8 samples; SQ: 32; TCC: 128; TA/TCP: 352.
const GRBM_GUI_ACTIVE: (&str, u64) = ("GRBM_GUI_ACTIVE", 1000); // max 1007
const GRBM_COUNT: (&str, u64) = ("GRBM_COUNT", 2000); // max 2007

#[test]
fn gfx942_memory_traffic() {
    let (catalog, topology) = reference("gfx942");
    let bases = [
        ("TCC_HIT", 10),
        ("TCC_MISS", 2),
        ("TCC_BUBBLE", 1),
        ("TCC_EA0_RDREQ", 100),
        ("TCC_EA0_RDREQ_32B", 20),
        ("TCC_EA0_WRREQ", 50),
        ("TCC_EA0_WRREQ_64B", 30),
    ];
    let names = [
        "TCC_HIT_sum",
        "TCC_MISS_sum",
        "FETCH_SIZE",
        "WRITE_SIZE",
        "TCC_EA0_RDREQ_sum",
    ];
    let values = evaluate(&catalog, &topology, &names, &bases);
    assert_eq!(scalar(&values, "TCC_HIT_sum"), 9408.0); // 128*10 + 8128
    assert_eq!(scalar(&values, "TCC_MISS_sum"), 8384.0); // 128*2 + 8128
    assert_eq!(scalar(&values, "TCC_EA0_RDREQ_sum"), 20928.0);
    // (8256*128 + (20928-8256-10688)*64 + 10688*32)/1024
    assert_eq!(scalar(&values, "FETCH_SIZE"), 1490.0);
    // ((14528-11968)*32 + 11968*64)/1024
    assert_eq!(scalar(&values, "WRITE_SIZE"), 828.0);
}

#[test]
fn gfx942_busy_and_occupancy() {
    let (catalog, topology) = reference("gfx942");
    let bases = [
        GRBM_GUI_ACTIVE,
        GRBM_COUNT,
        ("TCP_TCP_TA_DATA_STALL_CYCLES", 5),
        ("SQ_ACTIVE_INST_VALU", 40),
        ("SQ_WAVE_CYCLES", 1000),
        ("SQ_LEVEL_WAVES@2", 7),
        ("SQ_THREAD_CYCLES_VALU", 64),
        ("SQ_INST_CYCLES_SALU", 9),
        ("TA_TA_BUSY", 3),
    ];
    let names = [
        "GPU_UTIL",
        "MemUnitStalled",
        "VALUBusy",
        "OccupancyPercent",
        "MeanOccupancyPerCU",
        "VALUUtilization",
        "SALUBusy",
        "TA_BUSY_avr",
        "TA_TA_BUSY_sum",
        "TA_BUSY_max",
        "CU_NUM",
        "SE_NUM",
        "SIMD_NUM",
        "MAX_WAVE_SIZE",
    ];
    let values = evaluate(&catalog, &topology, &names, &bases);
    assert_eq!(scalar(&values, "GPU_UTIL"), 100.0 * 1007.0 / 2007.0);
    assert_eq!(
        scalar(&values, "MemUnitStalled"),
        100.0 * 356.0 / 1007.0 / 32.0
    );
    assert_eq!(scalar(&values, "VALUBusy"), 100.0 * 1776.0 / 304.0 / 1007.0);
    assert_eq!(
        scalar(&values, "OccupancyPercent"),
        400.0 * 32496.0 / 1007.0 / 304.0 / 32.0
    );
    assert_eq!(
        scalar(&values, "MeanOccupancyPerCU"),
        720.0 / 1007.0 / 304.0
    );
    assert_eq!(
        scalar(&values, "VALUUtilization"),
        100.0 * 2544.0 / (1776.0 * 64.0)
    );
    assert_eq!(scalar(&values, "SALUBusy"), 100.0 * 784.0 / 304.0 / 1007.0);
    assert_eq!(scalar(&values, "TA_BUSY_avr"), 178.5); // 3 + 351/2
    assert_eq!(scalar(&values, "TA_TA_BUSY_sum"), 62832.0); // 352*3 + 352*351/2
    assert_eq!(scalar(&values, "TA_BUSY_max"), 354.0);
    assert_eq!(scalar(&values, "CU_NUM"), 304.0);
    assert_eq!(scalar(&values, "SE_NUM"), 32.0);
    assert_eq!(scalar(&values, "SIMD_NUM"), 1216.0);
    assert_eq!(scalar(&values, "MAX_WAVE_SIZE"), 64.0);
}

#[test]
fn mean_occupancy_programs_the_high_resolution_accumulator() {
    let (catalog, topology) = reference("gfx942");
    let set = catalog.resolve(&["MeanOccupancyPerCU"], &topology).unwrap();
    let events: Vec<(String, u32, u32)> = set
        .events()
        .iter()
        .map(|e| (e.event.block.clone(), e.event.event, e.event.flags))
        .collect();
    assert_eq!(
        events,
        vec![("SQ".to_string(), 5, 2), ("GRBM".to_string(), 2, 0)]
    );
    assert_eq!(
        catalog
            .hardware_events("MeanOccupancyPerCU")
            .unwrap()
            .iter()
            .map(|e| (e.block_id, e.event, e.flags))
            .collect::<Vec<_>>(),
        vec![(3, 2, 0), (6, 5, 2)]
    );
}

#[test]
fn gfx90a_metrics_without_xcc() {
    // MI210: 1 XCC, 104 CUs, 8 SEs, 32 TCC instances.
    let (catalog, topology) = reference("gfx90a");
    let bases = [
        GRBM_GUI_ACTIVE,
        GRBM_COUNT,
        ("TCC_EA_RDREQ", 100),
        ("TCC_EA_RDREQ_32B", 20),
        ("SQ_WAVES", 4),
    ];
    let values = evaluate(
        &catalog,
        &topology,
        &["GPU_UTIL", "GPUBusy", "FETCH_SIZE", "SQ_WAVES"],
        &bases,
    );
    assert_eq!(scalar(&values, "GPU_UTIL"), 50.0);
    assert_eq!(scalar(&values, "GPUBusy"), 50.0);
    // RDREQ_sum = 3200 + 496, RDREQ_32B_sum = 640 + 496: (1136*32 + 2560*64)/1024
    assert_eq!(scalar(&values, "FETCH_SIZE"), 195.5);
    let waves = values.iter().find(|v| v.name == "SQ_WAVES").unwrap();
    assert_eq!(
        waves.shape,
        Shape::new(vec![(Dimension::Instance, 1), (Dimension::ShaderEngine, 8)])
    );
    assert_eq!(waves.values, vec![4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]);
    assert_eq!(waves.total, 60.0);
}

#[test]
fn per_dimension_values_keep_aqlprofile_order() {
    let (catalog, topology) = reference("gfx942");
    let values = evaluate(&catalog, &topology, &["SQ_WAVES"], &[("SQ_WAVES", 100)]);
    assert_eq!(
        values[0].shape.to_string(),
        "DIMENSION_XCC[0:7] DIMENSION_INSTANCE[0:0] DIMENSION_SHADER_ENGINE[0:3]"
    );
    assert_eq!(values[0].values.len(), 32);
    assert_eq!(values[0].values[5], 105.0);
    assert_eq!(values[0].shape.coordinates(5), vec![1, 0, 1]);
    assert_eq!(values[0].total, 3200.0 + 496.0);

    // RX 7900 XTX: SQ samples are per SE, SA and WGP (WGP fastest).
    let (catalog, topology) = reference("gfx1100");
    let values = evaluate(&catalog, &topology, &["SQ_WAVES"], &[("SQ_WAVES", 0)]);
    assert_eq!(
        values[0].shape.to_string(),
        "DIMENSION_SHADER_ENGINE[0:5] DIMENSION_SHADER_ARRAY[0:1] DIMENSION_WGP[0:3]"
    );
    assert_eq!(values[0].shape.coordinates(13), vec![1, 1, 1]);
}

#[test]
fn reduce_over_listed_dimensions_and_broadcast_by_coordinates() {
    let (mut catalog, topology) = reference("gfx942");
    with_expressions(
        &mut catalog,
        &[
            (
                "WAVES_PER_XCC",
                "reduce(SQ_WAVES,sum,[DIMENSION_SHADER_ENGINE, DIMENSION_INSTANCE])",
            ),
            (
                "HIT_VS_XCC_MEAN",
                "TCC_HIT - reduce(TCC_HIT,avr,[DIMENSION_INSTANCE])",
            ),
            ("WAVES_SHARE", "SQ_WAVES / reduce(SQ_WAVES, sum)"),
        ],
    );
    let values = evaluate(
        &catalog,
        &topology,
        &["WAVES_PER_XCC", "HIT_VS_XCC_MEAN", "WAVES_SHARE"],
        &[("SQ_WAVES", 10), ("TCC_HIT", 50)],
    );
    // XCC x holds samples 4x..4x+3: 4*10 + 16x + 6.
    assert_eq!(values[0].shape.to_string(), "DIMENSION_XCC[0:7]");
    assert_eq!(
        values[0].values,
        (0..8).map(|x| 46.0 + 16.0 * x as f64).collect::<Vec<_>>()
    );
    // (50 + 16x + i) - (50 + 16x + 7.5)
    assert_eq!(
        values[1].shape.to_string(),
        "DIMENSION_XCC[0:7] DIMENSION_INSTANCE[0:15]"
    );
    assert_eq!(values[1].values[17], 1.0 - 7.5);
    assert_eq!(values[1].total, 0.0);
    assert_eq!(values[2].values[0], 10.0 / 816.0);
}

#[test]
fn select_with_ranges_float_literals_unary_minus_and_v1_reductions() {
    let (mut catalog, topology) = reference("gfx942");
    with_expressions(
        &mut catalog,
        &[
            (
                "PICKED",
                "select(TCC_HIT,[DIMENSION_XCC=[1], DIMENSION_INSTANCE=[2:4,7]])",
            ),
            (
                "ONE_SE",
                "select(SQ_WAVES,[DIMENSION_XCC=[0:7], DIMENSION_SHADER_ENGINE=[3]])",
            ),
            ("HALF", "0.5*reduce(GRBM_COUNT,max) + 1.25e1 + .5"),
            ("NEGATED", "--TCC_HIT_sum * -1 + 1"),
            ("V1_SUM", "sum(TCC_HIT,16)"),
            ("V1_AVR", "avr(TCC_HIT,4)"),
            ("BY_ZERO", "reduce(GRBM_COUNT,max)/(SE_NUM-32)"),
        ],
    );
    let names = [
        "PICKED", "ONE_SE", "HALF", "NEGATED", "V1_SUM", "V1_AVR", "BY_ZERO",
    ];
    let values = evaluate(
        &catalog,
        &topology,
        &names,
        &[("TCC_HIT", 10), GRBM_COUNT, ("SQ_WAVES", 0)],
    );
    assert_eq!(values[0].shape.to_string(), "DIMENSION_INSTANCE[0:3]");
    assert_eq!(values[0].values, vec![28.0, 29.0, 30.0, 33.0]); // 10 + 16 + {2,3,4,7}
    assert_eq!(
        values[1].shape.to_string(),
        "DIMENSION_XCC[0:7] DIMENSION_INSTANCE[0:0]"
    );
    assert_eq!(
        values[1].values,
        vec![3.0, 7.0, 11.0, 15.0, 19.0, 23.0, 27.0, 31.0]
    );
    assert_eq!(scalar(&values, "HALF"), 1003.5 + 12.5 + 0.5);
    assert_eq!(scalar(&values, "NEGATED"), -9407.0);
    assert_eq!(scalar(&values, "V1_SUM"), 9408.0);
    // Instances 0..3 of each XCC: mean of 10 + 16x + i = 10 + 56 + 1.5
    assert_eq!(scalar(&values, "V1_AVR"), 67.5);
    assert_eq!(scalar(&values, "BY_ZERO"), 0.0);
}

#[test]
fn v1_reduction_over_fewer_instances_than_the_block_has() {
    let (mut catalog, topology) = reference("gfx90a");
    with_expressions(&mut catalog, &[("HALF_L2", "sum(TCC_HIT,16)")]);
    let values = evaluate(
        &catalog,
        &topology,
        &["HALF_L2", "TCC_HIT_sum"],
        &[("TCC_HIT", 10)],
    );
    assert_eq!(scalar(&values, "HALF_L2"), 160.0 + 120.0);
    assert_eq!(scalar(&values, "TCC_HIT_sum"), 320.0 + 496.0);
}

#[test]
fn gfx1100_memory_metrics() {
    // RX 7900 XTX: 32 GL2C channels; SQ per SE (6), SA (2) and WGP (4): 48 samples.
    let (catalog, topology) = reference("gfx1100");
    let bases = [
        ("GL2C_EA_RDREQ_32B", 1),
        ("GL2C_EA_RDREQ_64B", 2),
        ("GL2C_EA_RDREQ_96B", 3),
        ("GL2C_EA_RDREQ_128B", 4),
        ("GL2C_MC_WRREQ", 20),
        ("GL2C_EA_WRREQ_64B", 10),
        ("GL2C_HIT", 30),
        ("GL2C_MISS", 10),
        ("SQ_WAVES", 2),
    ];
    let names = ["FETCH_SIZE", "WRITE_SIZE", "L2CacheHit", "Wavefronts"];
    let values = evaluate(&catalog, &topology, &names, &bases);
    // (528*32 + 560*64 + 592*96 + 624*128)/1024
    assert_eq!(scalar(&values, "FETCH_SIZE"), 185.0);
    // ((1136 - 816)*32 + 816*64)/1024
    assert_eq!(scalar(&values, "WRITE_SIZE"), 61.0);
    // 100*1456/(1456 + 816)
    assert_eq!(scalar(&values, "L2CacheHit"), 100.0 * 1456.0 / 2272.0);
    // 48*2 + 48*47/2
    assert_eq!(scalar(&values, "Wavefronts"), 1224.0);
}
