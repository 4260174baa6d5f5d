//! `--list-avail`: every counter of a catalog with its description, definition, unit and dimensions.

use std::fmt::Write;

use crate::catalog::{Catalog, CounterKind};
use crate::dimension::Shape;
use crate::topology::Topology;
use crate::Error;

/// How a listed counter is obtained.
#[derive(Clone, Debug, PartialEq)]
pub enum Definition {
    /// A hardware counter of this block.
    Block(String),
    /// A derived counter with this expression.
    Expression(String),
}

/// One counter as `--list-avail` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterListing {
    /// Counter name.
    pub name: String,
    /// What it measures.
    pub description: String,
    /// Block or expression.
    pub definition: Definition,
    /// Unit, when stated.
    pub unit: Option<String>,
    /// The dimensions of its values on the given GPU (`None` without a topology; an error
    /// when the counter cannot be resolved on it).
    pub dimensions: Option<Result<Shape, Error>>,
}

/// Lists every counter of `catalog` (in catalog order) whose name `filter` accepts, with its
/// dimensions on `topology` when one is given.
pub fn list_avail(
    catalog: &Catalog,
    topology: Option<&Topology>,
    filter: &dyn Fn(&str) -> bool,
) -> Vec<CounterListing> {
    catalog
        .counters()
        .filter(|c| filter(&c.name))
        .map(|c| CounterListing {
            name: c.name.clone(),
            description: c.description.clone(),
            definition: match &c.kind {
                CounterKind::Basic { block, .. } => Definition::Block(block.clone()),
                CounterKind::Derived { expression } => Definition::Expression(expression.clone()),
            },
            unit: c.unit.clone(),
            dimensions: topology.map(|t| catalog.shape(&c.name, t)),
        })
        .collect()
}

/// Formats listings like `rocprofv3 --list-avail`: `key:20` `:\t` value lines, counters
/// separated by blank lines.
pub fn format_list_avail(listings: &[CounterListing]) -> String {
    let mut out = String::new();
    for (i, listing) in listings.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut line = |key: &str, value: &str| {
            let _ = writeln!(out, "{key:20}:\t{value}");
        };
        line("Counter_Name", &listing.name);
        line("Description", &listing.description);
        match &listing.definition {
            Definition::Block(block) => line("Block", block),
            Definition::Expression(expression) => line("Expression", expression),
        }
        if let Some(unit) = &listing.unit {
            line("Unit", unit);
        }
        match &listing.dimensions {
            Some(Ok(shape)) => line("Dimensions", &shape.to_string()),
            Some(Err(error)) => line("Dimensions", &format!("unavailable: {error}")),
            None => {}
        }
    }
    out
}
