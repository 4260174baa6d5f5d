//! Kernel filters: regular expressions and dispatch ranges, checked before anything runs.

use rtl_pmc::passes::plan_file::{DispatchRange, IterationRange};

/// Checks a kernel-name regular expression; the error says what is wrong with it.
pub fn check_regex(pattern: &str) -> Result<(), String> {
    regex::Regex::new(pattern).map(|_| ()).map_err(|e| {
        // The regex crate's message spans several lines; keep the last, which says why.
        let reason = e
            .to_string()
            .lines()
            .rfind(|l| l.starts_with("error:"))
            .map(|l| l.trim_start_matches("error:").trim().to_string())
            .unwrap_or_else(|| e.to_string());
        format!("bad regular expression '{pattern}': {reason}")
    })
}

/// Parses a rocprofv3 kernel iteration range: numbers and `A-B` ranges (inclusive, from 1),
/// separated by commas or spaces, in brackets that must pair up: `[1-2],[3-4]`, `[1, [3-5]]`,
/// `7`.
pub fn parse_iteration_range(text: &str) -> Result<Vec<IterationRange>, String> {
    let bad = |why: String| format!("bad kernel iteration range '{text}': {why}");
    let mut open = 0usize;
    for (i, c) in text.chars().enumerate() {
        match c {
            '[' => open += 1,
            ']' if open == 0 => {
                return Err(bad(format!("the ']' at character {} closes no '['", i + 1)))
            }
            ']' => open -= 1,
            _ => {}
        }
    }
    if open > 0 {
        return Err(bad(format!(
            "{open} '[' not closed; write ranges as [A-B],[C-D]"
        )));
    }
    let tokens: Vec<&str> = text
        .split(|c: char| c == '[' || c == ']' || c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.is_empty() {
        return Err(bad("no launch numbers".into()));
    }
    tokens
        .into_iter()
        .map(|token| {
            let number = |s: &str| {
                s.parse::<u64>()
                    .map_err(|_| bad(format!("'{s}' is not a launch number")))
            };
            let range = match token.split_once('-') {
                None => {
                    let n = number(token)?;
                    IterationRange { first: n, last: n }
                }
                Some((a, b)) => IterationRange {
                    first: number(a)?,
                    last: number(b)?,
                },
            };
            if range.first == 0 {
                return Err(bad(format!(
                    "'{token}' starts at launch 0; launches are counted from 1"
                )));
            }
            if range.first > range.last {
                return Err(bad(format!("'{token}' ends before it starts")));
            }
            Ok(range)
        })
        .collect()
}

/// Parses a rocprof v1 `range:` value: `A:B` (dispatches A to B-1), `A` (dispatch A only) or
/// `A:` (A onwards), dispatch indices counted from 0.
pub fn parse_dispatch_range(text: &str) -> Result<DispatchRange, String> {
    let bad = |why: &str| format!("bad dispatch range '{text}': {why}");
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| bad("expected A:B, A or A: with dispatch numbers"))
    };
    let range = match text.split_once(':') {
        None => {
            let start = number(text)?;
            // No dispatch follows the last index there is, so `A:` selects that one alone too.
            DispatchRange {
                start,
                end: start.checked_add(1),
            }
        }
        Some((a, "")) => DispatchRange {
            start: number(a)?,
            end: None,
        },
        Some((a, b)) => DispatchRange {
            start: number(a)?,
            end: Some(number(b)?),
        },
    };
    if range.end.is_some_and(|end| end <= range.start) {
        return Err(bad("the range is empty"));
    }
    Ok(range)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(first: u64, last: u64) -> IterationRange {
        IterationRange { first, last }
    }

    #[test]
    fn iteration_ranges_in_every_documented_form() {
        assert_eq!(
            parse_iteration_range("[1-2],[3-4]").unwrap(),
            vec![r(1, 2), r(3, 4)]
        );
        assert_eq!(
            parse_iteration_range("[1, [2-4]]").unwrap(),
            vec![r(1, 1), r(2, 4)]
        );
        assert_eq!(parse_iteration_range("[3]").unwrap(), vec![r(3, 3)]);
        assert_eq!(parse_iteration_range("2").unwrap(), vec![r(2, 2)]);
    }

    #[test]
    fn bad_iteration_ranges_say_why() {
        assert_eq!(
            parse_iteration_range("[5-3]").unwrap_err(),
            "bad kernel iteration range '[5-3]': '5-3' ends before it starts"
        );
        assert_eq!(
            parse_iteration_range("[1-x]").unwrap_err(),
            "bad kernel iteration range '[1-x]': 'x' is not a launch number"
        );
        assert_eq!(
            parse_iteration_range("[]").unwrap_err(),
            "bad kernel iteration range '[]': no launch numbers"
        );
        assert_eq!(
            parse_iteration_range("[0-2]").unwrap_err(),
            "bad kernel iteration range '[0-2]': '0-2' starts at launch 0; launches are counted from 1"
        );
        assert_eq!(
            parse_iteration_range("[1-2").unwrap_err(),
            "bad kernel iteration range '[1-2': 1 '[' not closed; write ranges as [A-B],[C-D]"
        );
        assert_eq!(
            parse_iteration_range("[2-3]]").unwrap_err(),
            "bad kernel iteration range '[2-3]]': the ']' at character 6 closes no '['"
        );
        assert_eq!(
            parse_iteration_range("1-2]").unwrap_err(),
            "bad kernel iteration range '1-2]': the ']' at character 4 closes no '['"
        );
        assert_eq!(
            parse_iteration_range("1-2-3").unwrap_err(),
            "bad kernel iteration range '1-2-3': '2-3' is not a launch number"
        );
    }

    #[test]
    fn dispatch_ranges_follow_rocprof() {
        let range = |start, end| DispatchRange { start, end };
        assert_eq!(parse_dispatch_range("1:4").unwrap(), range(1, Some(4)));
        assert_eq!(parse_dispatch_range("5").unwrap(), range(5, Some(6)));
        assert_eq!(parse_dispatch_range("7:").unwrap(), range(7, None));
        // fuzz/regressions/input_txt/range-last-index.txt
        assert_eq!(
            parse_dispatch_range("18446744073709551615").unwrap(),
            range(u64::MAX, None)
        );
        assert_eq!(
            parse_dispatch_range("4:4").unwrap_err(),
            "bad dispatch range '4:4': the range is empty"
        );
        assert_eq!(
            parse_dispatch_range("a:4").unwrap_err(),
            "bad dispatch range 'a:4': expected A:B, A or A: with dispatch numbers"
        );
    }

    #[test]
    fn regex_errors_are_one_line() {
        assert!(check_regex(".*_kernel").is_ok());
        assert_eq!(
            check_regex("copy(").unwrap_err(),
            "bad regular expression 'copy(': unclosed group"
        );
    }
}
