//! "Did you mean" suggestions for misspelt counter names.

/// Up to three of `candidates` closest to `name` (case-insensitive edit distance, or `name`
/// as a prefix), best first.
pub(crate) fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Vec<String> {
    let wanted = name.to_ascii_lowercase();
    let limit = (wanted.len() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = candidates
        .filter_map(|candidate| {
            let lower = candidate.to_ascii_lowercase();
            let mut distance = if lower == wanted {
                0
            } else {
                edit_distance(&wanted, &lower)
            };
            // A name that starts with what was typed is a good guess however long it is.
            if lower.starts_with(&wanted) {
                distance = distance.min(limit);
            }
            (distance <= limit).then_some((distance, candidate))
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_string())
        .collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_by_distance() {
        let names = ["SQ_WAVES", "SQ_WAVE_CYCLES", "GRBM_COUNT", "SQ_WAVES_sum"];
        assert_eq!(
            closest("SQ_WAVE", names.into_iter()),
            vec!["SQ_WAVES", "SQ_WAVES_sum", "SQ_WAVE_CYCLES"]
        );
        assert_eq!(
            closest("sq_waves", names.into_iter()),
            vec!["SQ_WAVES", "SQ_WAVES_sum"]
        );
        assert!(closest("XYZ", names.into_iter()).is_empty());
    }
}
