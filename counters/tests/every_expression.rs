//! Every counter of every built-in architecture resolves, type-checks and evaluates.

use std::collections::BTreeMap;

use rtl_pmc_counters::{Catalog, Topology};

/// A topology for architectures without a reference GPU in the definitions.
fn synthetic(arch: &str) -> Topology {
    let (simd_per_cu, arrays, per_engine, wave) = if arch.starts_with("gfx9") {
        (4, 8, 1, 64)
    } else {
        (2, 8, 2, 32)
    };
    let props: BTreeMap<String, u64> = [
        ("num_xcc", 1),
        ("simd_count", 40 * simd_per_cu),
        ("simd_per_cu", simd_per_cu),
        ("array_count", arrays),
        ("simd_arrays_per_engine", per_engine),
        ("cu_per_simd_array", 5),
        ("wave_front_size", wave),
        ("max_waves_per_simd", 16),
        ("lds_size_in_kb", 64),
        ("max_engine_clk_fcompute", 2000),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Topology::new(props).unwrap()
}

#[test]
fn every_counter_of_every_architecture_evaluates() {
    let mut checked = 0;
    for arch in Catalog::architectures() {
        let catalog = Catalog::builtin(arch).unwrap();
        let topology = match catalog.reference_gpu() {
            Some(gpu) => gpu.topology.clone(),
            None => synthetic(arch),
        };
        let names: Vec<&str> = catalog.counter_names().collect();
        for name in &names {
            let set = catalog
                .resolve(&[*name], &topology)
                .unwrap_or_else(|e| panic!("{arch}: {e}"));
            let samples: Vec<Vec<u64>> = set
                .events()
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    (0..e.sample_count() as u64)
                        .map(|k| 3 + k + i as u64)
                        .collect()
                })
                .collect();
            let values = set
                .evaluate(&samples)
                .unwrap_or_else(|e| panic!("{arch} {name}: {e}"));
            assert_eq!(values.len(), 1);
            assert!(
                values[0].values.iter().all(|v| v.is_finite()),
                "{arch} {name}: {:?}",
                values[0]
            );
            checked += 1;
        }
        // Everything at once shares events and evaluates the same way.
        let all = catalog.resolve(&names, &topology).unwrap();
        assert_eq!(all.counters().count(), names.len());
    }
    assert!(checked > 3000, "{checked}");
}
