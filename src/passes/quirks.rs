//! Hardware events that AMD's aqlprofile programs or decodes wrongly, refused before anything
//! runs rather than reported with another counter's value.
//!
//! On the gfx9 family (MI100, MI200, MI300, MI350):
//! - the v2 API decodes the samples of the AID blocks ATC and RPB out of place: the read writes
//!   them at the front of the output buffer, once per pass, while the decoder takes them as
//!   ordinary per-XCC events in event order, so they and every event after them report other
//!   samples;
//! - SX and GDS selects are programmed with a constant 0, whatever event was asked for, so an
//!   event other than 0 would read event 0's value;
//! - SQ's accumulate selects (`SQ_ACCUM_PREV`, `SQ_ACCUM_PREV_HIRES`) integrate whatever counter
//!   the library placed in the slot before them, which the profile does not choose: asked for as
//!   counters of their own they read another counter's integral, or nothing in the first slot.
//!   `accumulate(COUNTER, LOW_RES|HIGH_RES)` asks for the same hardware correctly.

use std::fmt;

use rtl_pmc_counters::{Catalog, CounterKind};

/// Why aqlprofile cannot collect an event correctly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The v2 API reports the block's samples in the place of others.
    DecodedOutOfPlace {
        /// The block (`ATC` or `RPB`).
        block: String,
    },
    /// An SQ accumulate select, which integrates the counter of the slot before it.
    AccumulatesPrevious {
        /// The event asked for.
        event: u32,
    },
    /// The library programs the block's select with event 0.
    SelectIgnored {
        /// The block (`SX` or `GDS`).
        block: String,
        /// The event asked for.
        event: u32,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::DecodedOutOfPlace { block } => write!(
                f,
                "aqlprofile's v2 API decodes the samples of block {block} out of place on gfx9 GPUs: its values would be those of other counters"
            ),
            Refusal::AccumulatesPrevious { event } => write!(
                f,
                "SQ event {event} accumulates whatever counter aqlprofile places in the slot before it, which no profile chooses; ask for accumulate(COUNTER, LOW_RES) or accumulate(COUNTER, HIGH_RES) instead"
            ),
            Refusal::SelectIgnored { block, event } => write!(
                f,
                "aqlprofile programs block {block} with event 0 on gfx9 GPUs whatever the event asked for, so event {event} would read event 0's value"
            ),
        }
    }
}

/// Whether aqlprofile collects event `event` of block `block` wrongly on the architecture of
/// `catalog`, and why.
///
/// ```
/// use rtl_pmc::passes::{refusal, Refusal};
/// use rtl_pmc_counters::Catalog;
///
/// let (gfx942, gfx90a) = (Catalog::builtin("gfx942")?, Catalog::builtin("gfx90a")?);
/// assert_eq!(
///     refusal(&gfx942, "ATC", 3),
///     Some(Refusal::DecodedOutOfPlace { block: "ATC".into() })
/// );
/// assert_eq!(refusal(&gfx90a, "SX", 0), None);
/// assert!(refusal(&gfx90a, "GDS", 7).is_some());
/// assert_eq!(refusal(&Catalog::builtin("gfx1100")?, "SX", 7), None);
/// assert_eq!(
///     refusal(&gfx942, "SQ", 184),
///     Some(Refusal::AccumulatesPrevious { event: 184 })
/// );
/// # Ok::<(), rtl_pmc_counters::Error>(())
/// ```
pub fn refusal(catalog: &Catalog, block: &str, event: u32) -> Option<Refusal> {
    if !catalog.arch().starts_with("gfx9") {
        return None;
    }
    match block {
        "ATC" | "RPB" => Some(Refusal::DecodedOutOfPlace {
            block: block.to_string(),
        }),
        "SQ" | "SQ_CS" if is_accumulator(catalog, event) => {
            Some(Refusal::AccumulatesPrevious { event })
        }
        "SX" | "GDS" if event != 0 => Some(Refusal::SelectIgnored {
            block: block.to_string(),
            event,
        }),
        _ => None,
    }
}

/// Whether `event` is one of SQ's accumulate selects, which the catalog names
/// `SQ_ACCUM_PREV` (low resolution) and `SQ_ACCUM_PREV_HIRES` (high resolution).
fn is_accumulator(catalog: &Catalog, event: u32) -> bool {
    catalog.counters().any(|c| {
        matches!(c.name.as_str(), "SQ_ACCUM_PREV" | "SQ_ACCUM_PREV_HIRES")
            && matches!(&c.kind, CounterKind::Basic { block, event: id, .. }
                if block == "SQ" && *id == event)
    })
}

#[cfg(test)]
mod tests {
    use super::{refusal, Catalog};

    #[test]
    fn the_only_built_in_counters_refused_are_the_bare_sq_accumulators() {
        for arch in Catalog::architectures() {
            let catalog = Catalog::builtin(arch).expect("built in");
            for name in catalog.counter_names() {
                let Ok(events) = catalog.hardware_events(name) else {
                    continue;
                };
                for e in events {
                    let refused = refusal(&catalog, &e.block, e.event);
                    let accumulator = arch.starts_with("gfx9")
                        && matches!(name, "SQ_ACCUM_PREV" | "SQ_ACCUM_PREV_HIRES");
                    assert_eq!(refused.is_some(), accumulator, "{arch} {name}: {refused:?}");
                }
            }
        }
    }
}
