//! Pass planning: packing requested counters into passes within the hardware's per-block limits.
