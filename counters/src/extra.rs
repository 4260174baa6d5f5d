//! Extra counters in rocprofiler-sdk's YAML schema (`rtl-pmc -E FILE`).

use std::path::Path;

use crate::catalog::Catalog;
use crate::Error;

impl Catalog {
    /// Appends the counters of a rocprofiler-sdk extra-counter YAML file (`-E`) that apply to
    /// this architecture. On error nothing is appended.
    pub fn add_extra_file(&mut self, path: &Path) -> Result<(), Error> {
        Err(Error::ExtraFile {
            path: path.to_path_buf(),
            line: 0,
            counter: None,
            message: "extra counter files are not supported yet".into(),
        })
    }
}
