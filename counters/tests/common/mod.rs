//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::path::Path;

use rtl_pmc_counters::{Catalog, CounterKind, CounterValue, HwEvent, Topology};

/// The built-in catalog of `arch` and its reference GPU's topology.
pub fn reference(arch: &str) -> (Catalog, Topology) {
    let catalog = Catalog::builtin(arch).unwrap();
    let topology = catalog.reference_gpu().unwrap().topology.clone();
    (catalog, topology)
}

/// Adds derived counters `(name, expression)` for the catalog's architecture.
pub fn with_expressions(catalog: &mut Catalog, counters: &[(&str, &str)]) {
    let mut yaml = String::from("rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n");
    for (name, expression) in counters {
        yaml += &format!(
            "    - name: {name}\n      description: test\n      properties: []\n      definitions:\n        - architectures: [{}]\n          expression: \"{expression}\"\n",
            catalog.arch()
        );
    }
    catalog
        .add_extra_text(Path::new("test.yaml"), &yaml)
        .unwrap();
}

/// Evaluates `names` with synthetic samples: sample `k` of the event of basic counter `c`
/// (looked up in `bases`, with `accumulate(c, ...)` events keyed `c@flags`) is `base + k`.
pub fn evaluate(
    catalog: &Catalog,
    topology: &Topology,
    names: &[&str],
    bases: &[(&str, u64)],
) -> Vec<CounterValue> {
    let set = catalog.resolve(names, topology).unwrap();
    let samples: Vec<Vec<u64>> = set
        .events()
        .iter()
        .map(|e| {
            let base = base_of(catalog, &e.event, bases);
            (0..e.sample_count() as u64).map(|k| base + k).collect()
        })
        .collect();
    set.evaluate(&samples).unwrap()
}

fn base_of(catalog: &Catalog, event: &HwEvent, bases: &[(&str, u64)]) -> u64 {
    for (key, base) in bases {
        let (name, flags) = match key.split_once('@') {
            Some((name, flags)) => (name, flags.parse::<u32>().unwrap()),
            None => (*key, 0),
        };
        if let Some(CounterKind::Basic {
            block, event: id, ..
        }) = catalog.counter(name).map(|c| &c.kind)
        {
            if *block == event.block && *id == event.event && flags == event.flags {
                return *base;
            }
        }
    }
    panic!("no base value for {event:?}")
}

/// The value of the only counter, which must be a scalar.
pub fn scalar(values: &[CounterValue], name: &str) -> f64 {
    let value = values.iter().find(|v| v.name == name).unwrap();
    assert!(value.shape.is_scalar(), "{name} is shaped {}", value.shape);
    assert_eq!(value.values.len(), 1);
    assert_eq!(value.total, value.values[0]);
    value.total
}
