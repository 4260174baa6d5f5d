//! Where each built-in counter stands in rocprofiler-sdk's counter definitions.
//!
//! rocprofiler-sdk numbers counters as it reads its definitions file, so its counter ids (and
//! rocprofv3's order of a dispatch's counters, which follows them) rank counters by their
//! position in that file. `arch-defs/data/rocprofiler_sdk_order.csv` lists the names in that
//! order.

use std::collections::HashMap;
use std::sync::OnceLock;

const ORDER: &str = include_str!("../../arch-defs/data/rocprofiler_sdk_order.csv");

/// The position of counter `name` in rocprofiler-sdk's definitions (from 0), `None` for a name
/// they do not define (an extra counter, rocprof's `NAME[i]` or `NAME_ACCUM` forms).
///
/// ```
/// use rtl_pmc_counters::rocprofiler_sdk_position;
///
/// // rocprofv3 lists GRBM_COUNT's values before SQ_WAVES', whatever order they were asked in.
/// assert!(rocprofiler_sdk_position("GRBM_COUNT") < rocprofiler_sdk_position("SQ_WAVES"));
/// assert_eq!(rocprofiler_sdk_position("MY_COUNTER"), None);
/// ```
pub fn rocprofiler_sdk_position(name: &str) -> Option<usize> {
    static POSITIONS: OnceLock<HashMap<&'static str, usize>> = OnceLock::new();
    POSITIONS
        .get_or_init(|| {
            ORDER
                .lines()
                .skip(1)
                .enumerate()
                .map(|(i, name)| (name.trim(), i))
                .collect()
        })
        .get(name)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Catalog;

    /// Every built-in counter of every architecture has a position, and each name one.
    #[test]
    fn every_builtin_counter_has_one_position() {
        let names: Vec<&str> = ORDER.lines().skip(1).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert_eq!(names.len(), 797);
        for arch in Catalog::architectures() {
            let catalog = Catalog::builtin(arch).unwrap();
            for name in catalog.counter_names() {
                assert!(rocprofiler_sdk_position(name).is_some(), "{arch} {name}");
            }
        }
        assert_eq!(rocprofiler_sdk_position("ALUStalledByLDS"), Some(0));
        assert_eq!(rocprofiler_sdk_position("CPC_ALWAYS_COUNT"), Some(14));
    }
}
