//! Every file rtl-pmc writes. Writers take the neutral [`model`]; they do not know how the
//! data was collected.

pub mod atomic;
pub mod csv;
pub mod database;
pub mod estimates;
pub mod fast_map;
pub mod files;
pub mod json;
pub mod model;
pub mod pass;
pub mod perfetto;
pub mod process_files;
pub mod regions;
pub mod rocpd;
pub mod totals;

#[cfg(test)]
mod tests;
