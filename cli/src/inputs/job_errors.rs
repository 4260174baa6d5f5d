//! The errors of a rocprofv3 `jobs:` file in rtl-pmc's words: the key at fault and what it
//! accepts, never the deserialiser's type names.

use serde_saphyr::Error;

/// What each key of a job (and the file's `jobs`) accepts, completing "KEY must be ...".
const ACCEPTED: &[(&str, &str)] = &[
    ("jobs", "a list of jobs, each a mapping of keys such as pmc"),
    ("pmc", "a list of counter names"),
    (
        "pmc_groups",
        "a list of groups, each a list of counter names",
    ),
    ("pmc_group_interval", "a number of dispatches, 1 or more"),
    ("kernel_include_regex", "a regular expression"),
    ("kernel_exclude_regex", "a regular expression"),
    ("roctx_include_regex", "a regular expression"),
    (
        "kernel_iteration_range",
        "launch ranges such as \"[1-2],[3-4]\", in one string or a list of strings",
    ),
    ("output_directory", "a directory"),
    ("output_file", "a file name"),
    (
        "output_format",
        "a format or a list of formats (csv, json, rocpd, pftrace or html)",
    ),
    ("summary_output_file", "stdout, stderr or a file name"),
    (
        "log_level",
        "a level (fatal, error, warning, info, trace, env or config)",
    ),
    ("preload", "a library or a list of libraries"),
    ("replay_mode", "application, kernel or auto"),
    (
        "replay_memory_budget",
        "a size (bytes, or a number with K, M, G or T)",
    ),
    ("anchor", "a counter name"),
    ("truncate_kernels", "true or false"),
    ("mangled_kernels", "true or false"),
    ("kernel_rename", "true or false"),
    ("selected_regions", "true or false"),
    ("summary", "true or false"),
    ("stats", "true or false"),
    ("output_config", "true or false"),
    ("list_avail", "true or false"),
    ("kernel_trace", "true or false"),
    ("spatial_multiplexing", "true or false"),
    ("disable_signal_handlers", "true or false"),
];

/// What `key` accepts.
fn accepted(key: &str) -> Option<&'static str> {
    ACCEPTED.iter().find(|(k, _)| *k == key).map(|(_, a)| *a)
}

/// The message of `error` (without its location) for the file `text`: a value that does not
/// fit names its key and what the key accepts, a repeated key and an unknown key say so; any
/// other error (a syntax error) keeps the parser's message.
pub(super) fn message(error: &Error, text: &str) -> String {
    let error = error.without_snippet();
    let keyed = |key: &str| accepted(key).map(|what| format!("{key} must be {what}"));
    let described = match error {
        Error::DuplicateMappingKey { key: Some(key), .. } => {
            Some(format!("{key} is given twice; give each key once"))
        }
        Error::DuplicateMappingKey { key: None, .. } => {
            Some("a key is given twice; give each key once".to_string())
        }
        Error::SerdeUnknownField {
            field, expected, ..
        } => Some(crate::unsupported::refused_key(field).unwrap_or_else(|| {
            format!("unknown key '{field}' (expected {})", expected.join(", "))
        })),
        Error::SerdeMissingField { field, .. } => Some(match accepted(field) {
            Some(what) => format!("no '{field}' key: it must be {what}"),
            None => format!("no '{field}' key"),
        }),
        Error::Message { .. }
        | Error::InvalidScalar { .. }
        | Error::SerdeInvalidType { .. }
        | Error::SerdeInvalidValue { .. }
        | Error::SerdeInvalidLength { .. }
        | Error::SerdeUnknownVariant { .. }
        | Error::InvalidBooleanStrict { .. }
        | Error::NullIntoString { .. }
        | Error::UnexpectedValueForUnit { .. }
        | Error::Unexpected { .. } => error
            .location()
            .and_then(|l| key_before(text, l.line(), l.column()))
            .and_then(|key| keyed(&key)),
        _ => None,
    };
    described.unwrap_or_else(|| {
        let message = error.to_string();
        strip_location(message.lines().next().unwrap_or(""))
    })
}

/// Drops a trailing " at line L column C" the parser may add (the location is printed first).
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// The last key of a job (or `jobs`) written before 1-based `line` and `column` of `text`: the
/// key whose value holds that place, in YAML (`key:`) and JSON (`"key":`) alike.
fn key_before(text: &str, line: u64, column: u64) -> Option<String> {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i as u64 + 1 == line {
            offset += l
                .char_indices()
                .nth(column.saturating_sub(1) as usize)
                .map_or(l.len(), |(at, _)| at);
            break;
        }
        offset += l.len();
    }
    let keys = regex::Regex::new(r#""?([A-Za-z_][A-Za-z0-9_]*)"?[ \t]*:"#).ok()?;
    keys.captures_iter(&text[..offset.min(text.len())])
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str())
        .filter(|k| accepted(k).is_some())
        .last()
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys named here are the keys a job file has: an unknown key lists them all.
    #[test]
    fn every_key_of_a_job_says_what_it_accepts() {
        let error = serde_saphyr::from_str::<super::super::JobsFile>("jobs:\n  - nothing: 1\n")
            .expect_err("an unknown key");
        let Error::SerdeUnknownField { expected, .. } = error.without_snippet() else {
            panic!("{error}");
        };
        let mut keys: Vec<&str> = ACCEPTED.iter().map(|(k, _)| *k).collect();
        keys.retain(|k| *k != "jobs");
        assert_eq!(keys.len(), expected.len());
        for key in expected {
            assert!(accepted(key).is_some(), "{key}");
        }
    }

    #[test]
    fn the_key_is_the_last_one_before_the_value() {
        let yaml = "jobs:\n  - pmc: [A]\n    pmc_groups: [[A, [1]]]\n";
        assert_eq!(key_before(yaml, 3, 23).as_deref(), Some("pmc_groups"));
        let json = "{\"jobs\": [{\"pmc\": [\"A\"], \"pmc_group_interval\": -3}]}";
        assert_eq!(
            key_before(json, 1, 47).as_deref(),
            Some("pmc_group_interval")
        );
        assert_eq!(key_before("jobs: 5\n", 1, 7).as_deref(), Some("jobs"));
        assert_eq!(key_before("- 5\n", 1, 3), None);
    }
}
