//! The one error type of the counter engine.

use std::path::PathBuf;

/// Everything that can go wrong while loading definitions, resolving counter names or
/// evaluating samples. Each message names the architecture, file, line or counter at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// No built-in definitions exist for this architecture.
    #[error("unknown GPU architecture '{arch}' (known: {known})")]
    UnknownArchitecture {
        /// The architecture asked for.
        arch: String,
        /// The architectures with built-in definitions, comma separated.
        known: String,
    },
    /// A counter name that the catalog does not define.
    #[error("unknown counter '{name}' for {arch}{}", suggestion_text(.suggestions))]
    UnknownCounter {
        /// The name asked for.
        name: String,
        /// The catalog's architecture.
        arch: String,
        /// The closest defined names, best first (may be empty).
        suggestions: Vec<String>,
    },
    /// A counter that an extra file defines, but not for this architecture.
    #[error("counter '{name}' is defined in {} for {architectures} only, not for {arch}", .path.display())]
    NotForArchitecture {
        /// The name asked for.
        name: String,
        /// The catalog's architecture.
        arch: String,
        /// The extra file defining it.
        path: PathBuf,
        /// The architectures it is defined for, comma separated.
        architectures: String,
    },
    /// An expression names a topology property that the GPU does not report.
    #[error("counter '{counter}' needs the GPU property '{property}', which this GPU's topology does not report")]
    UnknownProperty {
        /// The counter whose expression needs the property.
        counter: String,
        /// The property name.
        property: String,
    },
    /// The topology lacks a property the engine needs, or holds an impossible value.
    #[error("invalid GPU topology: {0}")]
    InvalidTopology(String),
    /// A derived expression does not parse.
    #[error("counter '{counter}': syntax error in expression '{expression}' at column {column}: {message}")]
    Syntax {
        /// The counter defined by the expression.
        counter: String,
        /// The expression text.
        expression: String,
        /// 1-based column of the error in the expression.
        column: usize,
        /// What was expected.
        message: String,
    },
    /// An expression is well formed but meaningless: mismatched dimensions, a bad reduce
    /// operation, accumulate on a derived or non-SQ counter, a selection out of range...
    #[error("counter '{counter}': {message}")]
    Expression {
        /// The counter whose expression is at fault.
        counter: String,
        /// What is wrong.
        message: String,
    },
    /// A derived counter refers to itself, directly or through other counters.
    #[error("counter '{counter}' depends on itself: {}", .path.join(" -> "))]
    Cycle {
        /// The counter where the cycle was found.
        counter: String,
        /// The chain of names, ending with the repeated one.
        path: Vec<String>,
    },
    /// A problem in an extra-counter file (`-E`).
    #[error("{}{}: {}{message}", .path.display(), line_suffix(*.line), counter_prefix(.counter))]
    ExtraFile {
        /// The file.
        path: PathBuf,
        /// 1-based line of the counter or definition at fault (0 when the whole file is).
        line: u64,
        /// The counter at fault, if any.
        counter: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// The embedded architecture definitions are inconsistent (a build defect).
    #[error("built-in definitions of {arch} are broken: {message}")]
    Builtin {
        /// The architecture.
        arch: String,
        /// What is wrong.
        message: String,
    },
    /// Raw samples handed to [`crate::CounterSet::evaluate`] do not match the resolved events.
    #[error("samples do not match the counter set: {0}")]
    Samples(String),
}

impl Error {
    /// The message without the leading "counter 'NAME': " where the context names the counter
    /// already (errors inside extra-counter files).
    pub(crate) fn detail(&self) -> String {
        match self {
            Error::Expression { message, .. } => message.clone(),
            Error::Syntax {
                expression,
                column,
                message,
                ..
            } => {
                format!("syntax error in expression '{expression}' at column {column}: {message}")
            }
            Error::Cycle { path, .. } => format!("depends on itself: {}", path.join(" -> ")),
            other => other.to_string(),
        }
    }
}

fn suggestion_text(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", suggestions.join(", "))
    }
}

fn line_suffix(line: u64) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}")
    }
}

fn counter_prefix(counter: &Option<String>) -> String {
    match counter {
        Some(name) => format!("counter '{name}': "),
        None => String::new(),
    }
}
