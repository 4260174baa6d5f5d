//! Counters that read 0 in every dispatch of a pass although they cannot on a GPU whose counters
//! work, gathered while the pass is written and reported in one warning at the end of the run,
//! like the all-zero reports users file against rocprofv3.

use rtl_pmc_profile::model::Dispatch;

/// The counters that count something in every dispatch, and why. A pass in which one of them
/// is 0 for every dispatch that collected it did not really count.
pub const NEVER_ZERO: &[(&str, &str)] = &[
    (
        "GRBM_COUNT",
        "counts every GPU clock cycle while counters run",
    ),
    (
        "GRBM_GUI_ACTIVE",
        "counts the cycles in which the GPU is busy, and a dispatch keeps it busy",
    ),
    (
        "SQ_WAVES",
        "counts the waves launched, and a dispatch launches at least one",
    ),
    (
        "SQ_WAVE_CYCLES",
        "counts the cycles waves spend on the compute units, and a launched wave spends some",
    ),
    (
        "SQ_BUSY_CYCLES",
        "counts the cycles in which the shader sequencers are busy, as they are while waves run",
    ),
];

/// What the warning gives as the usual causes.
const CAUSES: &str = "usual causes: the GPU's power management or clock gating stopping its \
                      counters, a GPU or aqlprofile version rtl-pmc does not support, or another \
                      tool collecting counters at the same time";

/// Per pass, the [`NEVER_ZERO`] counters seen and whether any dispatch read more than 0.
#[derive(Debug, Default)]
pub struct ZeroCounters {
    /// (pass, index in [`NEVER_ZERO`], some dispatch read more than 0), in first-seen order.
    seen: Vec<(u32, usize, bool)>,
}

impl ZeroCounters {
    /// Notes the values of one dispatch of `pass`.
    pub fn observe(&mut self, pass: u32, dispatch: &Dispatch) {
        for counter in &dispatch.counters {
            let Some(index) = NEVER_ZERO.iter().position(|(n, _)| *n == counter.name) else {
                continue;
            };
            let nonzero = counter.total != 0.0;
            match self
                .seen
                .iter_mut()
                .find(|(p, i, _)| *p == pass && *i == index)
            {
                Some(entry) => entry.2 |= nonzero,
                None => self.seen.push((pass, index, nonzero)),
            }
        }
    }

    /// The one warning for every counter that read 0 in every dispatch of a pass, if any did:
    /// the counters grouped by the passes they read 0 in, then the usual causes.
    pub fn warning(&self) -> Option<String> {
        // (counter, passes where it read only 0), in first-seen order.
        let mut zero: Vec<(usize, Vec<u32>)> = Vec::new();
        for &(pass, index, nonzero) in &self.seen {
            if nonzero {
                continue;
            }
            match zero.iter_mut().find(|(i, _)| *i == index) {
                Some((_, passes)) => passes.push(pass),
                None => zero.push((index, vec![pass])),
            }
        }
        // Counters that read 0 in the same passes share one clause.
        let mut clauses: Vec<(Vec<&str>, &[u32])> = Vec::new();
        for (index, passes) in &zero {
            let name = NEVER_ZERO[*index].0;
            match clauses.iter_mut().find(|(_, p)| *p == passes.as_slice()) {
                Some((names, _)) => names.push(name),
                None => clauses.push((vec![name], passes)),
            }
        }
        let text: Vec<String> = clauses
            .iter()
            .enumerate()
            .map(|(c, (names, passes))| {
                let numbers: Vec<String> = passes.iter().map(u32::to_string).collect();
                let passes = match numbers.len() {
                    1 => format!("pass {}", numbers[0]),
                    _ => format!("passes {}", and_list(&numbers)),
                };
                let verb = if c == 0 { "read 0 " } else { "" };
                format!("{} {verb}in every dispatch of {passes}", and_list(names))
            })
            .collect();
        if text.is_empty() {
            return None;
        }
        let they = if zero.len() == 1 {
            "it counts"
        } else {
            "they count"
        };
        Some(format!(
            "{}, though {they} in every dispatch on a GPU whose counters work; {CAUSES}",
            text.join("; ")
        ))
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[impl AsRef<str>]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        [rest @ .., last] => {
            let rest: Vec<&str> = rest.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", rest.join(", "), last.as_ref())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtl_pmc_profile::model::Counter;

    fn dispatch(values: &[(&str, f64)]) -> Dispatch {
        Dispatch {
            counters: values
                .iter()
                .map(|&(name, total)| Counter {
                    name: name.into(),
                    total,
                    ..Counter::default()
                })
                .collect(),
            ..Dispatch::default()
        }
    }

    #[test]
    fn counters_that_ever_count_give_no_warning() {
        let mut zeros = ZeroCounters::default();
        zeros.observe(1, &dispatch(&[("SQ_WAVES", 0.0), ("TCC_HIT", 0.0)]));
        zeros.observe(1, &dispatch(&[("SQ_WAVES", 4.0), ("TCC_HIT", 0.0)]));
        zeros.observe(2, &dispatch(&[("TCC_MISS", 0.0)]));
        assert_eq!(zeros.warning(), None);
    }

    #[test]
    fn counters_reading_zero_everywhere_are_grouped_by_pass() {
        let mut zeros = ZeroCounters::default();
        for _ in 0..3 {
            zeros.observe(1, &dispatch(&[("SQ_WAVES", 0.0), ("GRBM_COUNT", 0.0)]));
            zeros.observe(
                2,
                &dispatch(&[("GRBM_COUNT", 0.0), ("GRBM_GUI_ACTIVE", 0.0)]),
            );
            zeros.observe(
                3,
                &dispatch(&[("GRBM_COUNT", 0.0), ("SQ_WAVE_CYCLES", 9.0)]),
            );
        }
        assert_eq!(
            zeros.warning().unwrap(),
            format!(
                "SQ_WAVES read 0 in every dispatch of pass 1; GRBM_COUNT in every dispatch of \
                 passes 1, 2 and 3; GRBM_GUI_ACTIVE in every dispatch of pass 2, though they \
                 count in every dispatch on a GPU whose counters work; {CAUSES}"
            )
        );
        let mut one = ZeroCounters::default();
        one.observe(1, &dispatch(&[("SQ_WAVES", 0.0), ("GRBM_COUNT", 0.0)]));
        assert_eq!(
            one.warning().unwrap(),
            format!(
                "SQ_WAVES and GRBM_COUNT read 0 in every dispatch of pass 1, though they count \
                 in every dispatch on a GPU whose counters work; {CAUSES}"
            )
        );
    }
}
