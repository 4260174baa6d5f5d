//! `--list-avail` listings.

use rtl_pmc_counters::{format_list_avail, list_avail, Catalog, Definition};

#[test]
fn lists_counters_with_reference_dimensions() {
    let catalog = Catalog::builtin("gfx942").unwrap();
    let gpu = catalog.reference_gpu().unwrap();
    assert_eq!(gpu.product, "MI300X");
    let wanted = ["SQ_WAVES", "GPU_UTIL", "TCC_HIT"];
    let listings = list_avail(&catalog, Some(&gpu.topology), &|n| wanted.contains(&n));
    assert_eq!(
        listings.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
        vec!["GPU_UTIL", "SQ_WAVES", "TCC_HIT"]
    );
    assert_eq!(listings[1].definition, Definition::Block("SQ".into()));
    assert_eq!(
        format_list_avail(&listings),
        "Counter_Name        :\tGPU_UTIL\n\
         Description         :\tPercentage of elapsed GPU clock cycles during which the graphics engine was active.\n\
         Expression          :\t100*reduce(GRBM_GUI_ACTIVE,max)/reduce(GRBM_COUNT,max)\n\
         Dimensions          :\tDIMENSION_NONE\n\
         \n\
         Counter_Name        :\tSQ_WAVES\n\
         Description         :\tNumber of waves sent to the shader sequencers, counted per shader engine.\n\
         Block               :\tSQ\n\
         Dimensions          :\tDIMENSION_XCC[0:7] DIMENSION_INSTANCE[0:0] DIMENSION_SHADER_ENGINE[0:3]\n\
         \n\
         Counter_Name        :\tTCC_HIT\n\
         Description         :\tL2 cache requests that hit.\n\
         Block               :\tTCC\n\
         Dimensions          :\tDIMENSION_XCC[0:7] DIMENSION_INSTANCE[0:15]\n"
    );
}

#[test]
fn units_are_listed_when_stated() {
    let catalog = Catalog::builtin("gfx942").unwrap();
    let listings = list_avail(&catalog, None, &|n| n == "LdsLatency");
    assert_eq!(listings[0].unit.as_deref(), Some("cycles"));
    assert!(format_list_avail(&listings).contains("\nUnit                :\tcycles\n"));
}

#[test]
fn without_a_topology_dimensions_are_left_out() {
    let catalog = Catalog::builtin("gfx1030").unwrap();
    assert!(catalog.reference_gpu().is_none());
    let listings = list_avail(&catalog, None, &|_| true);
    assert_eq!(listings.len(), catalog.len());
    assert!(listings
        .iter()
        .all(|l| l.dimensions.is_none() && !l.description.is_empty()));
}

#[test]
fn gfx90a_matches_rocprofv3_sample_listing() {
    // rocprofiler-sdk's documented list-avail sample shows gfx90a SQ as INSTANCE x SHADER_ENGINE[0:7].
    let catalog = Catalog::builtin("gfx90a").unwrap();
    let topology = &catalog.reference_gpu().unwrap().topology;
    assert_eq!(
        catalog.shape("SQ_WAVES", topology).unwrap().to_string(),
        "DIMENSION_INSTANCE[0:0] DIMENSION_SHADER_ENGINE[0:7]"
    );
    assert_eq!(
        catalog.shape("TA_TA_BUSY", topology).unwrap().to_string(),
        "DIMENSION_INSTANCE[0:13] DIMENSION_SHADER_ENGINE[0:7]"
    );
    assert_eq!(
        catalog.shape("TCC_HIT", topology).unwrap().to_string(),
        "DIMENSION_INSTANCE[0:31]"
    );
}
