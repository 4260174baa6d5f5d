//! What `rtl-pmc` reads from the user before anything runs: the command line ([`args`]), the
//! `--pmc` groups and input files ([`inputs`]: rocprof v1 `input.txt`, rocprofv3 YAML/JSON
//! jobs), their kernel filters ([`filters`]), the rocprofv3 options it refuses ([`unsupported`]) and the
//! one error type ([`error`]); and `rtl-pmc analyze` ([`analyze`]), which reads a profile.
//!
//! The `rtl-pmc` binary is built on this library; the fuzz targets in `fuzz/` parse input files
//! through [`inputs::parse_input`] exactly as `rtl-pmc -i FILE` does.

#![warn(missing_docs)]

pub mod analyze;
pub mod args;
pub mod error;
pub mod filters;
pub mod inputs;
pub mod rocprof_compute;
pub mod unsupported;
