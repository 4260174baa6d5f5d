//! Topologies: KFD properties, named constants and dimension extents.

use std::collections::BTreeMap;

use rtl_pmc_counters::{Catalog, Topology};

fn kfd(props: &[(&str, u64)]) -> Topology {
    let map: BTreeMap<String, u64> = props.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    Topology::new(map).unwrap()
}

#[test]
fn topology_names_its_architecture() {
    for (arch, version) in [
        ("gfx942", 90402),
        ("gfx90a", 90010),
        ("gfx1100", 110000),
        ("gfx1201", 120001),
    ] {
        let text = format!("simd_count 8\nsimd_per_cu 4\narray_count 2\nsimd_arrays_per_engine 1\ngfx_target_version {version}\n");
        assert_eq!(
            Topology::from_kfd_properties(&text)
                .unwrap()
                .gfx_name()
                .as_deref(),
            Some(arch)
        );
    }
}

#[test]
fn named_constants_and_raw_properties() {
    let mi300x = Catalog::builtin("gfx942")
        .unwrap()
        .reference_gpu()
        .unwrap()
        .topology
        .clone();
    let constants: Vec<Option<f64>> = [
        "CU_NUM",
        "SE_NUM",
        "SIMD_NUM",
        "XCC_NUM",
        "MAX_WAVE_SIZE",
        "simd_count",
        "lds_size_in_kb",
        "num_gws",
    ]
    .iter()
    .map(|n| mi300x.constant(n))
    .collect();
    assert_eq!(
        constants,
        vec![
            Some(304.0),
            Some(32.0),
            Some(1216.0),
            Some(8.0),
            Some(64.0),
            Some(1216.0),
            Some(64.0),
            None
        ]
    );
    assert_eq!((mi300x.se_per_xcc(), mi300x.wgp_per_array()), (4, 5));
    // Without num_xcc (pre-MI300 kernels) a GPU has one XCC.
    let old = kfd(&[
        ("simd_count", 440),
        ("simd_per_cu", 4),
        ("array_count", 8),
        ("simd_arrays_per_engine", 1),
    ]);
    assert_eq!(
        (
            old.xcc_count(),
            old.constant("XCC_NUM"),
            old.constant("num_xcc")
        ),
        (1, Some(1.0), None)
    );
}

#[test]
fn texture_instances_follow_the_cu_count() {
    let catalog = Catalog::builtin("gfx90a").unwrap();
    let ta = catalog.block("TA").unwrap();
    let mi210 = &catalog.reference_gpu().unwrap().topology;
    let mi250x_gcd = kfd(&[
        ("simd_count", 440),
        ("simd_per_cu", 4),
        ("array_count", 8),
        ("simd_arrays_per_engine", 1),
    ]);
    assert_eq!((ta.instances(mi210), ta.instances(&mi250x_gcd)), (14, 15));
    let gfx950 = Catalog::builtin("gfx950").unwrap();
    let mi355x = &gfx950.reference_gpu().unwrap().topology;
    assert_eq!(gfx950.block("TCP").unwrap().instances(mi355x), 9);
    assert_eq!(gfx950.block("TCC").unwrap().instances(mi355x), 16);
    assert_eq!(
        gfx950.block("TD").unwrap().shape(mi355x).to_string(),
        "DIMENSION_XCC[0:7] DIMENSION_INSTANCE[0:8] DIMENSION_SHADER_ENGINE[0:3]"
    );
}

#[test]
fn rdna_blocks_read_per_array_and_wgp() {
    let catalog = Catalog::builtin("gfx1201").unwrap();
    let rx9070 = &catalog.reference_gpu().unwrap().topology;
    let shape = |block: &str| catalog.block(block).unwrap().shape(rx9070).to_string();
    assert_eq!(
        shape("SQ"),
        "DIMENSION_SHADER_ENGINE[0:3] DIMENSION_SHADER_ARRAY[0:1] DIMENSION_WGP[0:3]"
    );
    assert_eq!(
        shape("TA"),
        "DIMENSION_INSTANCE[0:1] DIMENSION_SHADER_ENGINE[0:3] DIMENSION_SHADER_ARRAY[0:1] DIMENSION_WGP[0:3]"
    );
    assert_eq!(shape("SQG"), "DIMENSION_SHADER_ENGINE[0:3]");
    assert_eq!(shape("GL2C"), "DIMENSION_INSTANCE[0:31]");
    // gfx9 SQ_CS shares SQ's registers; other blocks budget for themselves.
    let gfx942 = Catalog::builtin("gfx942").unwrap();
    // MI300 AID blocks are read once per pass, not per XCC.
    let mi300x = &gfx942.reference_gpu().unwrap().topology;
    assert_eq!(
        gfx942.block("RPB").unwrap().shape(mi300x).to_string(),
        "DIMENSION_INSTANCE[0:3]"
    );
    assert_eq!(
        gfx942.block("GCEA").unwrap().shape(mi300x).to_string(),
        "DIMENSION_XCC[0:7] DIMENSION_INSTANCE[0:31]"
    );
    assert_eq!(gfx942.block("SQ_CS").unwrap().budget, "SQ");
    assert_eq!(gfx942.block("TCC").unwrap().budget, "TCC");
}
