//! `--list-avail`: the counters of each GPU present, or of `--arch`.

use rtl_pmc_counters::{format_list_avail, list_avail, Topology};

use crate::planning::ArchCatalog;

/// What to list for: a detected GPU (with its topology) or an architecture alone.
pub struct Target<'a> {
    /// `GPU:<n>` index, counted over the GPUs listed.
    pub index: usize,
    /// The catalog of its architecture, extra counters included.
    pub catalog: &'a ArchCatalog,
    /// The GPU's topology; without it the architecture's reference GPU is used.
    pub topology: Option<&'a Topology>,
}

/// The listing text, in rocprofv3's layout: `GPU:<n>` and `Name:<gfx>` lines, then one block
/// of `key: value` lines per counter.
pub fn render(targets: &[Target<'_>]) -> String {
    let mut out = String::new();
    for target in targets {
        let catalog = &target.catalog.catalog;
        let topology = target
            .topology
            .or_else(|| catalog.reference_gpu().map(|g| &g.topology));
        out.push_str(&format!("GPU:{}\nName:{}\n", target.index, catalog.arch()));
        out.push_str(&format_list_avail(&list_avail(catalog, topology, &|_| {
            true
        })));
        out.push('\n');
    }
    out
}
