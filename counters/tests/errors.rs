//! Every error message of the engine, exactly.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{reference, with_expressions};
use rtl_pmc_counters::{Catalog, Error, Origin, Topology};

fn extra_error(arch: &str, body: &str) -> String {
    let mut catalog = Catalog::builtin(arch).unwrap();
    let before = catalog.len();
    let text = format!("rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n{body}");
    let error = catalog
        .add_extra_text(Path::new("extra.yaml"), &text)
        .unwrap_err();
    assert_eq!(catalog.len(), before, "a failed file must add nothing");
    error.to_string()
}

fn resolve_error(arch: &str, expression: &str) -> String {
    let (mut catalog, topology) = reference(arch);
    with_expressions(&mut catalog, &[("M", expression)]);
    catalog.resolve(&["M"], &topology).unwrap_err().to_string()
}

#[test]
fn unknown_architecture_lists_the_known_ones() {
    assert_eq!(
        Catalog::builtin("gfx9").unwrap_err().to_string(),
        "unknown GPU architecture 'gfx9' (known: gfx908, gfx90a, gfx940, gfx941, gfx942, gfx950, gfx1030, gfx1100, gfx1101, gfx1102, gfx1200, gfx1201)"
    );
}

#[test]
fn unknown_counter_suggests_close_names() {
    let catalog = Catalog::builtin("gfx942").unwrap();
    let error = catalog.hardware_events("SQ_WAVE").unwrap_err();
    assert_eq!(error.to_string(), "unknown counter 'SQ_WAVE' for gfx942; did you mean SQ_WAVES, SQ_WAVES_EQ_64, SQ_WAVES_LT_16?");
    let Error::UnknownCounter { suggestions, .. } = error else {
        panic!()
    };
    assert_eq!(suggestions[0], "SQ_WAVES");
    assert_eq!(
        catalog
            .hardware_events("NOTHING_LIKE_IT")
            .unwrap_err()
            .to_string(),
        "unknown counter 'NOTHING_LIKE_IT' for gfx942"
    );
}

#[test]
fn shape_mismatch_is_found_when_resolving() {
    assert_eq!(
        resolve_error("gfx942", "SQ_WAVES + TA_TA_BUSY"),
        "counter 'M': cannot combine values shaped DIMENSION_XCC[0:7] DIMENSION_INSTANCE[0:0] DIMENSION_SHADER_ENGINE[0:3] and DIMENSION_XCC[0:7] DIMENSION_INSTANCE[0:10] DIMENSION_SHADER_ENGINE[0:3]: DIMENSION_INSTANCE differs"
    );
}

#[test]
fn select_out_of_range_or_on_a_missing_dimension() {
    assert_eq!(
        resolve_error("gfx942", "select(TCC_HIT,[DIMENSION_INSTANCE=[14:16]])"),
        "counter 'M': select position 16 of DIMENSION_INSTANCE is out of range [0:15]"
    );
    assert_eq!(
        resolve_error("gfx90a", "select(TCC_HIT,[DIMENSION_XCC=[1]])"),
        "counter 'M': select on DIMENSION_XCC, which these values (DIMENSION_INSTANCE[0:31]) do not have"
    );
}

#[test]
fn v1_reduction_checks_instances() {
    assert_eq!(
        resolve_error("gfx942", "sum(TCC_HIT,32)"),
        "counter 'M': TCC_HIT has 16 instances on this GPU, fewer than the 32 asked for"
    );
    assert_eq!(
        resolve_error("gfx942", "sum(TCC_HIT_sum,1)"),
        "counter 'M': sum(TCC_HIT_sum, 1) needs DIMENSION_INSTANCE, but TCC_HIT_sum has DIMENSION_NONE"
    );
}

#[test]
fn accumulate_needs_a_basic_sq_counter() {
    let def = |expression: &str| {
        format!("    - name: M\n      definitions:\n        - architectures: [gfx942]\n          expression: {expression}\n")
    };
    assert_eq!(
        extra_error("gfx942", &def("accumulate(TCC_HIT, HIGH_RES)")),
        "extra.yaml:6: counter 'M': accumulate() with LOW_RES or HIGH_RES needs an SQ counter, but 'TCC_HIT' belongs to TCC"
    );
    assert_eq!(
        extra_error("gfx942", &def("accumulate(TCC_HIT_sum, NONE)")),
        "extra.yaml:6: counter 'M': accumulate() needs a basic counter, but 'TCC_HIT_sum' is derived"
    );
    let catalog = Catalog::builtin("gfx942").unwrap();
    let low_res = catalog.hardware_events("MeanOccupancyPerActiveCU").unwrap();
    assert_eq!(
        low_res
            .iter()
            .map(|e| (e.event, e.flags))
            .collect::<Vec<_>>(),
        vec![(5, 1), (13, 0)]
    );
}

#[test]
fn unknown_gpu_property_is_an_error_not_zero() {
    let (mut catalog, _) = reference("gfx942");
    with_expressions(&mut catalog, &[("M", "reduce(SQ_WAVES,sum)/num_gws")]);
    let props: BTreeMap<String, u64> = [
        ("simd_count", 1216),
        ("simd_per_cu", 4),
        ("array_count", 32),
        ("simd_arrays_per_engine", 1),
        ("num_xcc", 8),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let topology = Topology::new(props).unwrap();
    assert_eq!(
        catalog.resolve(&["M"], &topology).unwrap_err().to_string(),
        "counter 'M' needs the GPU property 'num_gws', which this GPU's topology does not report"
    );
    assert_eq!(
        Topology::new(BTreeMap::new()).unwrap_err().to_string(),
        "invalid GPU topology: property 'simd_count' is missing"
    );
    assert_eq!(
        Topology::from_kfd_properties("simd_count 8\nsimd_per_cu x\n")
            .unwrap_err()
            .to_string(),
        "invalid GPU topology: line 2: 'x' is not a number"
    );
}

#[test]
fn samples_must_match_the_events() {
    let (catalog, topology) = reference("gfx942");
    let set = catalog.resolve(&["GRBM_COUNT"], &topology).unwrap();
    assert_eq!(
        set.evaluate(&[vec![1u64; 3]]).unwrap_err().to_string(),
        "samples do not match the counter set: GRBM event 0 has 8 samples, 3 given"
    );
    assert_eq!(
        set.evaluate::<Vec<u64>>(&[]).unwrap_err().to_string(),
        "samples do not match the counter set: 1 events resolved, samples given for 0"
    );
}

#[test]
fn syntax_errors_name_counter_and_column() {
    assert_eq!(
        rtl_pmc_counters::Expr::parse("M", "reduce(SQ_WAVES,total)").unwrap_err().to_string(),
        "counter 'M': syntax error in expression 'reduce(SQ_WAVES,total)' at column 17: expected sum, avr, min or max"
    );
    assert_eq!(
        rtl_pmc_counters::Expr::parse("M", "select(X,[DIMENSION_SE=[0]])").unwrap_err().to_string(),
        "counter 'M': syntax error in expression 'select(X,[DIMENSION_SE=[0]])' at column 11: unknown dimension 'DIMENSION_SE' (known: DIMENSION_XCC, DIMENSION_AID, DIMENSION_AGENT, DIMENSION_INSTANCE, DIMENSION_SHADER_ENGINE, DIMENSION_SHADER_ARRAY, DIMENSION_WGP)"
    );
    assert_eq!(
        rtl_pmc_counters::Expr::parse("M", "select(X,[DIMENSION_XCC=[3:1]])").unwrap_err().to_string(),
        "counter 'M': syntax error in expression 'select(X,[DIMENSION_XCC=[3:1]])' at column 26: empty range 3:1"
    );
    assert_eq!(
        rtl_pmc_counters::Expr::parse("M", "(A+B")
            .unwrap_err()
            .to_string(),
        "counter 'M': syntax error in expression '(A+B' at column 5: expected an operator"
    );
}

#[test]
fn extra_file_errors_name_file_line_and_counter() {
    let def = |name: &str, archs: &str, rest: &str| {
        format!("    - name: {name}\n      description: d\n      definitions:\n        - architectures: [{archs}]\n{rest}")
    };
    assert_eq!(
        extra_error(
            "gfx942",
            &def(
                "SQ_WAVES",
                "gfx942",
                "          block: SQ\n          event: 5\n"
            )
        ),
        "extra.yaml:4: counter 'SQ_WAVES': redefines a built-in counter of gfx942 differently"
    );
    assert_eq!(
        extra_error(
            "gfx942",
            &(def("A", "gfx942", "          expression: B+1\n")
                + &def("B", "gfx942", "          expression: A*2\n"))
        ),
        "extra.yaml:7: counter 'A': depends on itself: A -> B -> A"
    );
    assert_eq!(
        extra_error(
            "gfx942",
            &def(
                "A",
                "gfx942",
                "          expression: SQ_WAVES_sum/NO_SUCH\n"
            )
        ),
        "extra.yaml:7: counter 'A': 'NO_SUCH' is neither a counter of gfx942 nor a GPU constant"
    );
    assert_eq!(
        extra_error(
            "gfx942",
            &def("A", "gfx942, mi300", "          expression: SQ_WAVES\n")
        ),
        "extra.yaml:7: counter 'A': 'mi300' is not a gfx architecture name (like gfx942)"
    );
    assert_eq!(
        extra_error("gfx942", &def("A", "gfx942", "          block: XYZ\n          event: 1\n")),
        "extra.yaml:7: counter 'A': gfx942 has no block 'XYZ' (blocks: CPC, CPF, GDS, GRBM, GRBM_SE, SPI, SQ, SQ_CS, SX, TA, TCA, TCC, TCP, TD, MCVML2, ATC, ATCL2, GCEA, RPB)"
    );
    assert_eq!(
        extra_error("gfx942", &def("A", "gfx942", "          block: SQ\n")),
        "extra.yaml:7: counter 'A': a definition needs either block and event, or expression"
    );
    assert_eq!(
        extra_error("gfx942", &def("A", "gfx942", "          expression: reduce(SQ_WAVES,sum)+\n")),
        "extra.yaml:7: counter 'A': syntax error in expression 'reduce(SQ_WAVES,sum)+' at column 22: expected a value"
    );
    assert_eq!(
        extra_error(
            "gfx942",
            &(def("A", "gfx942", "          expression: SQ_WAVES\n")
                + &def("A", "gfx90a", "          expression: SQ_WAVES\n"))
        ),
        "extra.yaml:9: counter 'A': defined twice in this file (first at line 4)"
    );
    assert_eq!(
        extra_error(
            "gfx942",
            &def(
                "TCC HIT",
                "gfx942",
                "          block: TCC\n          event: 17\n"
            )
        ),
        "extra.yaml:4: 'TCC HIT' is not a valid counter name"
    );
    assert_eq!(
        extra_error("gfx942", "    - name: [x]\n"),
        "extra.yaml:4: not a rocprofiler-sdk counter file: expected string scalar at line 4, column 13"
    );
}

#[test]
fn unreadable_extra_file() {
    let mut catalog = Catalog::builtin("gfx942").unwrap();
    assert_eq!(
        catalog
            .add_extra_file(Path::new("/nonexistent/extra.yaml"))
            .unwrap_err()
            .to_string(),
        "/nonexistent/extra.yaml: cannot read the file: No such file or directory (os error 2)"
    );
}

#[test]
fn restating_a_built_in_and_bracketed_aliases_are_accepted() {
    let text = "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n    - name: CPC_CPC_STAT_BUSY\n      description: restated\n      properties: []\n      definitions:\n        - architectures: [gfx940, gfx942]\n          block: CPC\n          event: 25\n    - name: TCC_HIT[0]\n      description: first channel of the first XCC\n      properties: []\n      definitions:\n        - architectures: [gfx942]\n          expression: select(TCC_HIT,[DIMENSION_XCC=[0], DIMENSION_INSTANCE=[0]])\n";
    let mut catalog = Catalog::builtin("gfx942").unwrap();
    let builtins = catalog.len();
    catalog.add_extra_text(Path::new("x.yaml"), text).unwrap();
    assert_eq!(catalog.len(), builtins + 1);
    assert_eq!(
        catalog.counter("CPC_CPC_STAT_BUSY").unwrap().origin,
        Origin::Builtin
    );
    let topology = catalog.reference_gpu().unwrap().topology.clone();
    assert!(catalog.shape("TCC_HIT[0]", &topology).unwrap().is_scalar());
}

#[test]
fn extra_counters_apply_by_exact_architecture() {
    let text = "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n    - name: W\n      description: waves per CU\n      properties: []\n      definitions:\n        - architectures: [gfx90a]\n          block: SQ\n          event: 4\n        - architectures: [gfx942, gfx950]\n          expression: reduce(SQ_WAVES,sum)/CU_NUM\n";
    let mut gfx942 = Catalog::builtin("gfx942").unwrap();
    gfx942.add_extra_text(Path::new("w.yaml"), text).unwrap();
    assert_eq!(gfx942.counter_names().last(), Some("W"));
    assert_eq!(gfx942.hardware_events("W").unwrap().len(), 1);
    let mut gfx9 = Catalog::builtin("gfx908").unwrap();
    gfx9.add_extra_text(Path::new("w.yaml"), text).unwrap();
    assert_eq!(
        gfx9.hardware_events("W").unwrap_err().to_string(),
        "counter 'W' is defined in w.yaml for gfx90a, gfx942, gfx950 only, not for gfx908"
    );
    // Restating the same definition changes nothing; a different one is refused.
    gfx942.add_extra_text(Path::new("same.yaml"), text).unwrap();
    assert_eq!(
        gfx942.counter("W").unwrap().origin,
        Origin::Extra {
            path: "w.yaml".into(),
            line: 11
        }
    );
    let changed = text.replace("/CU_NUM", "/SE_NUM");
    assert_eq!(
        gfx942
            .add_extra_text(Path::new("again.yaml"), &changed)
            .unwrap_err()
            .to_string(),
        "again.yaml:4: counter 'W': redefines already defined at w.yaml:11 differently"
    );
}

#[test]
fn rocprof_forms_name_counters_of_the_catalog() {
    let mut catalog = Catalog::builtin("gfx942").unwrap();
    let builtins = catalog.len();
    // Names that are no form of a known counter, and known counters, are left alone.
    for name in [
        "SQ_WAVES",
        "NOPE[3]",
        "NOPE_ACCUM",
        "TCC_HIT[]",
        "TCC_HIT[x]",
    ] {
        assert!(!catalog.add_rocprof_form(name).unwrap(), "{name}");
    }
    assert!(catalog.add_rocprof_form("TCC_HIT[15]").unwrap());
    assert!(catalog.add_rocprof_form("SQ_IFETCH_LEVEL_ACCUM").unwrap());
    assert!(catalog
        .add_rocprof_form("SQ_IFETCH_LEVEL_ACCUM_LOW_RES")
        .unwrap());
    assert_eq!(catalog.len(), builtins + 3);
    let expression = |name: &str| match &catalog.counter(name).unwrap().kind {
        rtl_pmc_counters::CounterKind::Derived { expression } => expression.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        expression("TCC_HIT[15]"),
        "select(TCC_HIT,[DIMENSION_INSTANCE=[15]])"
    );
    assert_eq!(
        expression("SQ_IFETCH_LEVEL_ACCUM"),
        "accumulate(SQ_IFETCH_LEVEL,HIGH_RES)"
    );
    assert_eq!(
        expression("SQ_IFETCH_LEVEL_ACCUM_LOW_RES"),
        "accumulate(SQ_IFETCH_LEVEL,LOW_RES)"
    );
    assert_eq!(
        catalog.counter("TCC_HIT[15]").unwrap().origin,
        Origin::RocprofForm
    );
    assert_eq!(
        catalog
            .add_rocprof_form("TCC_HIT[16]")
            .unwrap_err()
            .to_string(),
        "counter 'TCC_HIT[16]': TCC_HIT has instances 0-15 on gfx942"
    );
    // A form whose expression is refused adds nothing.
    let before = catalog.len();
    assert_eq!(
        catalog.add_rocprof_form("TCC_HIT_ACCUM").unwrap_err().to_string(),
        "counter 'TCC_HIT_ACCUM': accumulate() with LOW_RES or HIGH_RES needs an SQ counter, but 'TCC_HIT' belongs to TCC"
    );
    assert_eq!(catalog.len(), before);
}

#[test]
fn rocprof_compute_channel_counters_count_channels_across_xcds() {
    let mut catalog = Catalog::builtin("gfx942").unwrap();
    let builtins = catalog.len();
    assert!(!catalog.add_channel_counter("NOPE[3]", 8).unwrap());
    assert!(catalog.add_channel_counter("TCC_HIT[17]", 8).unwrap());
    assert!(catalog.add_channel_counter("TCC_HIT[127]", 8).unwrap());
    // One XCD: rocprof's own form.
    assert!(catalog.add_channel_counter("TCC_MISS[3]", 1).unwrap());
    assert_eq!(catalog.len(), builtins + 3);
    let expression = |name: &str| match &catalog.counter(name).unwrap().kind {
        rtl_pmc_counters::CounterKind::Derived { expression } => expression.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        expression("TCC_HIT[17]"),
        "select(TCC_HIT,[DIMENSION_XCC=[1], DIMENSION_INSTANCE=[1]])"
    );
    assert_eq!(
        expression("TCC_HIT[127]"),
        "select(TCC_HIT,[DIMENSION_XCC=[7], DIMENSION_INSTANCE=[15]])"
    );
    assert_eq!(
        expression("TCC_MISS[3]"),
        "select(TCC_MISS,[DIMENSION_INSTANCE=[3]])"
    );
    assert_eq!(
        catalog
            .add_channel_counter("TCC_HIT[128]", 8)
            .unwrap_err()
            .to_string(),
        "counter 'TCC_HIT[128]': TCC_HIT has channels 0-127 on gfx942 with 8 XCDs"
    );
    assert_eq!(catalog.len(), builtins + 3);
}
