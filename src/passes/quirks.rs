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

/// Whether aqlprofile collects event `event` of block `block` wrongly on architecture `arch`,
/// and why.
///
/// ```
/// use rtl_pmc::passes::{refusal, Refusal};
///
/// assert_eq!(
///     refusal("gfx942", "ATC", 3),
///     Some(Refusal::DecodedOutOfPlace { block: "ATC".into() })
/// );
/// assert_eq!(refusal("gfx90a", "SX", 0), None);
/// assert!(refusal("gfx90a", "GDS", 7).is_some());
/// assert_eq!(refusal("gfx1100", "SX", 7), None);
/// assert_eq!(
///     refusal("gfx942", "SQ", 184),
///     Some(Refusal::AccumulatesPrevious { event: 184 })
/// );
/// ```
pub fn refusal(arch: &str, block: &str, event: u32) -> Option<Refusal> {
    if !arch.starts_with("gfx9") {
        return None;
    }
    match block {
        "ATC" | "RPB" => Some(Refusal::DecodedOutOfPlace {
            block: block.to_string(),
        }),
        "SQ" | "SQ_CS" if event == 1 || event == accumulate_high_resolution(arch) => {
            Some(Refusal::AccumulatesPrevious { event })
        }
        "SX" | "GDS" if event != 0 => Some(Refusal::SelectIgnored {
            block: block.to_string(),
            event,
        }),
        _ => None,
    }
}

/// SQ's high-resolution accumulate select on a gfx9 architecture (the low-resolution one is 1).
fn accumulate_high_resolution(arch: &str) -> u32 {
    match arch {
        a if a.starts_with("gfx908") => 158,
        a if a.starts_with("gfx94") => 184,
        a if a.starts_with("gfx95") => 200,
        _ => 185,
    }
}

#[cfg(test)]
mod tests {
    use super::refusal;
    use rtl_pmc_counters::Catalog;

    #[test]
    fn the_only_built_in_counters_refused_are_the_bare_sq_accumulators() {
        for arch in Catalog::architectures() {
            let catalog = Catalog::builtin(arch).expect("built in");
            for name in catalog.counter_names() {
                let Ok(events) = catalog.hardware_events(name) else {
                    continue;
                };
                for e in events {
                    let refused = refusal(arch, &e.block, e.event);
                    let accumulator = arch.starts_with("gfx9")
                        && matches!(name, "SQ_ACCUM_PREV" | "SQ_ACCUM_PREV_HIRES");
                    assert_eq!(refused.is_some(), accumulator, "{arch} {name}: {refused:?}");
                }
            }
        }
    }
}
