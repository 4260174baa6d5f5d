//! Extra counters in rocprofiler-sdk's YAML schema (`rtl-pmc -E FILE`), appended to a catalog.
//!
//! ```yaml
//! rocprofiler-sdk:
//!   counters-schema-version: 1
//!   counters:
//!     - name: MY_WAVES_PER_CU
//!       description: Waves launched per compute unit
//!       properties: []
//!       definitions:
//!         - architectures: [gfx942, gfx950]
//!           expression: reduce(SQ_WAVES,sum)/CU_NUM
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::catalog::{Catalog, CounterDef, CounterKind, Origin};
use crate::expr::Expr;
use crate::Error;

#[derive(Deserialize)]
struct ExtraFile {
    #[serde(rename = "rocprofiler-sdk")]
    sdk: Spanned<ExtraBody>,
}

#[derive(Deserialize)]
struct ExtraBody {
    #[serde(rename = "counters-schema-version")]
    version: Spanned<u64>,
    #[serde(default)]
    counters: Vec<Spanned<ExtraCounter>>,
}

#[derive(Deserialize)]
struct ExtraCounter {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    unit: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    properties: Option<IgnoredAny>,
    #[serde(default)]
    definitions: Vec<Spanned<ExtraDefinition>>,
}

#[derive(Deserialize)]
struct ExtraDefinition {
    #[serde(default)]
    architectures: Vec<String>,
    #[serde(default)]
    block: Option<String>,
    #[serde(default)]
    event: Option<u64>,
    #[serde(default)]
    expression: Option<String>,
}

/// A counter an extra file defines only for other architectures.
#[derive(Clone, Debug)]
pub(crate) struct ForeignCounter {
    pub path: PathBuf,
    pub architectures: Vec<String>,
}

impl Catalog {
    /// Appends the counters of a rocprofiler-sdk extra-counter YAML file (`-E`) that apply to
    /// this architecture (exact name match, as in rocprofiler-sdk). Name clashes, unknown
    /// blocks or references, cycles, malformed architectures and syntax errors are
    /// [`Error::ExtraFile`] naming the file, line and counter; on error nothing is appended.
    pub fn add_extra_file(&mut self, path: &Path) -> Result<(), Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::ExtraFile {
            path: path.to_path_buf(),
            line: 0,
            counter: None,
            message: format!("cannot read the file: {e}"),
        })?;
        self.add_extra_text(path, &text)
    }

    /// Like [`Catalog::add_extra_file`], for file contents already read (`path` names it in errors).
    pub fn add_extra_text(&mut self, path: &Path, text: &str) -> Result<(), Error> {
        let before = self.len();
        let foreign_before = self.foreign.clone();
        let result = self.append_extra(path, text);
        if result.is_err() {
            self.truncate(before);
            self.foreign = foreign_before;
        }
        result
    }

    fn append_extra(&mut self, path: &Path, text: &str) -> Result<(), Error> {
        let fail = |line: u64, counter: Option<&str>, message: String| Error::ExtraFile {
            path: path.to_path_buf(),
            line,
            counter: counter.map(str::to_string),
            message,
        };
        let file: ExtraFile = serde_saphyr::from_str(text).map_err(|e| {
            let line = e.location().map(|l| l.line()).unwrap_or(0);
            let message = e.without_snippet().to_string();
            let message = message
                .lines()
                .next()
                .unwrap_or("malformed YAML")
                .to_string();
            fail(
                line,
                None,
                format!("not a rocprofiler-sdk counter file: {message}"),
            )
        })?;
        let body = file.sdk.value;
        if body.version.value != 1 {
            return Err(fail(
                body.version.referenced.line(),
                None,
                format!(
                    "counters-schema-version {} is not supported (only 1 is)",
                    body.version.value
                ),
            ));
        }
        let mut added: Vec<(String, u64)> = Vec::new();
        let mut seen: HashMap<String, u64> = HashMap::new();
        for counter in &body.counters {
            let line = counter.referenced.line();
            let entry = &counter.value;
            let name = entry.name.as_str();
            let here = |line: u64, message: String| fail(line, Some(name), message);
            if !is_counter_name(name) {
                return Err(fail(
                    line,
                    None,
                    format!("'{name}' is not a valid counter name"),
                ));
            }
            if let Some(first) = seen.insert(name.to_string(), line) {
                return Err(here(
                    line,
                    format!("defined twice in this file (first at line {first})"),
                ));
            }
            if entry.definitions.is_empty() {
                return Err(here(line, "has no definitions".into()));
            }
            let mut claimed: HashMap<&str, u64> = HashMap::new();
            let mut mine = None;
            for definition in &entry.definitions {
                let def_line = definition.referenced.line();
                let def = &definition.value;
                if def.architectures.is_empty() {
                    return Err(here(def_line, "a definition lists no architectures".into()));
                }
                for arch in &def.architectures {
                    if !is_architecture(arch) {
                        return Err(here(
                            def_line,
                            format!("'{arch}' is not a gfx architecture name (like gfx942)"),
                        ));
                    }
                    if let Some(first) = claimed.insert(arch, def_line) {
                        return Err(here(
                            def_line,
                            format!("{arch} has two definitions (the other at line {first})"),
                        ));
                    }
                }
                let kind = CounterKind::from_parts(
                    def.block.as_deref(),
                    def.event,
                    def.expression.as_deref(),
                )
                .ok_or_else(|| {
                    here(
                        def_line,
                        "a definition needs either block and event, or expression".into(),
                    )
                })?;
                if def.architectures.iter().any(|a| a == self.arch()) {
                    mine = Some((kind, def_line));
                }
            }
            let Some((kind, def_line)) = mine else {
                let architectures = claimed.keys().map(|a| a.to_string()).collect();
                self.foreign.insert(
                    name.to_string(),
                    ForeignCounter {
                        path: path.to_path_buf(),
                        architectures,
                    },
                );
                continue;
            };
            if let Some(existing) = self.counter(name) {
                // Restating a definition that is already in force changes nothing (rocprofv3's
                // own example file does this); a different definition would silently change
                // what the name means, so it is refused.
                if existing.kind == kind {
                    continue;
                }
                let where_ = match &existing.origin {
                    Origin::Builtin => format!("a built-in counter of {}", self.arch()),
                    Origin::RocprofForm => {
                        format!("rocprof's form of a counter of {}", self.arch())
                    }
                    Origin::Extra { path, line } => {
                        format!("already defined at {}:{line}", path.display())
                    }
                };
                return Err(here(line, format!("redefines {where_} differently")));
            }
            match &kind {
                CounterKind::Basic { block, .. } if self.block(block).is_none() => {
                    let known: Vec<&str> = self.blocks().map(|b| b.name.as_str()).collect();
                    return Err(here(
                        def_line,
                        format!(
                            "{} has no block '{block}' (blocks: {})",
                            self.arch(),
                            known.join(", ")
                        ),
                    ));
                }
                CounterKind::Derived { expression } => {
                    Expr::parse(name, expression).map_err(|e| here(def_line, e.detail()))?;
                }
                CounterKind::Basic { .. } => {}
            }
            let description = entry.description.clone();
            let unit = entry.unit.clone().filter(|u| !u.is_empty());
            let origin = Origin::Extra {
                path: path.to_path_buf(),
                line: def_line,
            };
            self.push(CounterDef::new(
                name.to_string(),
                description,
                unit,
                kind,
                origin,
            ))
            .map_err(|m| here(line, m))?;
            self.foreign.remove(name);
            added.push((name.to_string(), def_line));
        }
        // References and cycles are checked once every counter of the file is known, so
        // counters of one file may refer to each other in any order.
        for (name, line) in &added {
            self.hardware_events(name)
                .map_err(|e| fail(*line, Some(name), e.detail()))?;
        }
        Ok(())
    }
}

/// Counter names are identifiers, optionally with brackets (rocprof-style per-instance
/// aliases such as `TCC_HIT[0]`, which can be requested but not used inside expressions).
fn is_counter_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '[' | ']'))
}

fn is_architecture(name: &str) -> bool {
    name.strip_prefix("gfx").is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    })
}
