//! Quantiles of a series by selection rather than sorting, several from one copy of its
//! values: each order statistic is selected only among the values between two already in
//! their places.

/// The quantiles `qs` of the values present (linear between the two nearest). The middle
/// quantile is found first, so that a box table's quartiles each search half of the values.
pub(crate) fn quantiles<const N: usize>(values: &[f64], qs: [f64; N]) -> [f64; N] {
    let mut order = Ordering {
        values: values.iter().copied().filter(|x| !x.is_nan()).collect(),
        placed: Vec::with_capacity(N),
    };
    if order.values.is_empty() {
        return [f64::NAN; N];
    }
    let n = order.values.len() as f64;
    let last = order.values.len() - 1;
    let mut found = [f64::NAN; N];
    let middle_first = std::iter::once(N / 2).chain((0..N).filter(|&i| i != N / 2));
    for i in middle_first {
        let pos = qs[i] * (n - 1.0);
        let (lo, hi) = (
            (pos.floor() as usize).min(last),
            (pos.ceil() as usize).min(last),
        );
        let a = order.at(lo);
        let b = if hi > lo { order.after(lo) } else { a };
        found[i] = a + (b - a) * (pos - pos.floor());
    }
    found
}

/// Values of which those at `placed` are where sorting would put them (each with no greater
/// value before it and no smaller one after it).
struct Ordering {
    values: Vec<f64>,
    placed: Vec<usize>,
}

impl Ordering {
    /// The `k`-th value in order, put in its place.
    fn at(&mut self, k: usize) -> f64 {
        if !self.placed.contains(&k) {
            let (from, to) = self.between(k);
            self.values[from..to].select_nth_unstable_by(k - from, f64::total_cmp);
            self.placed.push(k);
        }
        self.values[k]
    }

    /// The value after the `k`-th in order, `k` being placed and not the last: the least of
    /// those between it and the next placed value.
    fn after(&self, k: usize) -> f64 {
        let (_, to) = self.between(k + 1);
        self.values[k + 1..to]
            .iter()
            .copied()
            .min_by(f64::total_cmp)
            .unwrap_or(self.values[k])
    }

    /// The positions from the one after the last placed before `k` to the first placed after
    /// it (or the ends).
    fn between(&self, k: usize) -> (usize, usize) {
        let from = self
            .placed
            .iter()
            .filter(|&&p| p < k)
            .max()
            .map_or(0, |p| p + 1);
        let to = self.placed.iter().filter(|&&p| p > k).min();
        (from, to.map_or(self.values.len(), |&p| p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quantiles of `values` from its present values sorted.
    fn by_sorting<const N: usize>(values: &[f64], qs: [f64; N]) -> [u64; N] {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        sorted.sort_by(f64::total_cmp);
        qs.map(|q| {
            let Some(last) = sorted.len().checked_sub(1) else {
                return f64::NAN.to_bits();
            };
            let at = q * last as f64;
            let (lo, hi) = (
                sorted[(at.floor() as usize).min(last)],
                sorted[(at.ceil() as usize).min(last)],
            );
            (lo + (hi - lo) * (at - at.floor())).to_bits()
        })
    }

    #[test]
    fn quantiles_in_any_order_are_those_of_the_sorted_values() {
        // Repeated values, both zeros, NaNs and infinities, in a scrambled order.
        let pool = [
            3.0,
            -0.0,
            0.0,
            7.5,
            f64::NAN,
            3.0,
            f64::INFINITY,
            -2.0,
            1e9,
            3.0,
        ];
        for len in 0..60 {
            let values: Vec<f64> = (0..len)
                .map(|i| pool[(i * 7 + i / 3) % pool.len()])
                .collect();
            let qs = [0.9, 0.1, 0.5, 0.5, 1.0, 0.0, 0.33];
            let found = quantiles(&values, qs).map(f64::to_bits);
            assert_eq!(found, by_sorting(&values, qs), "{values:?}");
            let quartiles = [0.25, 0.5, 0.75];
            let found = quantiles(&values, quartiles).map(f64::to_bits);
            assert_eq!(found, by_sorting(&values, quartiles), "{values:?}");
        }
    }
}
