//! The moments of the counter values, gathered while the values are inserted ([`Sampled`]), so
//! that the estimates need not read every value back; and the sums ([`Moments`]) and possible
//! ranges ([`Range`]) the estimates are computed from.

use crate::fast_map::FastMap;
use crate::model::Dispatch;

/// Values are summed exactly, so that estimates do not depend on the order dispatches are read
/// in: scaled by 2^SCALE_BITS, values that are then integers (every count, and halves,
/// quarters, ... of them) go into 128-bit integer sums; any other value makes the moments fall
/// back to floating-point sums.
const SCALE_BITS: i32 = 10;

/// Count, sum and sum of squares of measured values, and how many were impossible.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Moments {
    pub(crate) n: u64,
    /// Σx and Σx², scaled by 2^SCALE_BITS and 2^(2·SCALE_BITS), while every value allowed it.
    pub(crate) exact: Option<(i128, i128)>,
    /// Σx and Σx² in floating point, always kept.
    pub(crate) sum: f64,
    pub(crate) squares: f64,
    /// Measured values outside the counter's possible range.
    pub(crate) outside: u64,
}

impl Moments {
    pub(crate) fn add(&mut self, x: f64) {
        if self.n == 0 {
            self.exact = Some((0, 0));
        }
        self.n += 1;
        self.sum += x;
        self.squares += x * x;
        let scaled = x * f64::from(1u32 << SCALE_BITS);
        self.exact = self.exact.and_then(|(s, q)| {
            if scaled.fract() != 0.0 || scaled.abs() >= 9.007_199_254_740_992e15 {
                return None;
            }
            let v = scaled as i128;
            Some((s.checked_add(v)?, q.checked_add(v.checked_mul(v)?)?))
        });
    }

    pub(crate) fn merge(&mut self, o: &Moments) {
        if o.n == 0 {
            return;
        }
        self.exact = match (self.n, self.exact, o.exact) {
            (0, _, e) => e,
            (_, Some((s, q)), Some((os, oq))) => s.checked_add(os).zip(q.checked_add(oq)),
            _ => None,
        };
        self.n += o.n;
        self.sum += o.sum;
        self.squares += o.squares;
        self.outside += o.outside;
    }

    /// Σx, exact whenever the values allowed it.
    pub(crate) fn total(&self) -> f64 {
        match self.exact {
            Some((s, _)) => s as f64 / f64::from(1u32 << SCALE_BITS),
            None => self.sum,
        }
    }

    /// The sample variance (divisor n − 1), from `n·Σx² − (Σx)²` computed exactly where it can
    /// be; never negative.
    pub(crate) fn variance(&self) -> Option<f64> {
        if self.n < 2 {
            return None;
        }
        let n = self.n as f64;
        let pairs = n * (n - 1.0);
        let exact = self.exact.and_then(|(s, q)| {
            let spread = (self.n as i128)
                .checked_mul(q)?
                .checked_sub(s.checked_mul(s)?)?;
            Some(spread as f64 / pairs / f64::from(1u32 << (2 * SCALE_BITS)))
        });
        let variance = exact.unwrap_or_else(|| (n * self.squares - self.sum * self.sum) / pairs);
        Some(variance.max(0.0))
    }
}

/// What values of a counter can be true.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Range {
    pub(crate) low: f64,
    pub(crate) high: Option<f64>,
}

impl Range {
    /// Counts are never negative; derived counters that are percentages lie in 0–100; other
    /// derived counters may be anything.
    pub(crate) fn of(derived: bool, unit: &str, description: &str) -> Option<Range> {
        let unit = unit.trim().to_ascii_lowercase();
        let percentage = matches!(unit.as_str(), "percent" | "%" | "pct")
            || description
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("percentage");
        match (derived, percentage) {
            (_, true) => Some(Range {
                low: 0.0,
                high: Some(100.0),
            }),
            (false, false) => Some(Range {
                low: 0.0,
                high: None,
            }),
            (true, false) => None,
        }
    }

    pub(crate) fn holds(&self, v: f64) -> bool {
        v >= self.low && self.high.is_none_or(|h| v <= h)
    }

    pub(crate) fn text(&self) -> String {
        match self.high {
            Some(h) => format!("{}–{}", self.low, h),
            None => format!("≥ {}", self.low),
        }
    }
}

/// Key of a stratum in SQL: kernel id, then grid, workgroup and the GPU's architecture (its
/// `gfx_target_version`).
pub(crate) type StratumKey = (i64, [u32; 7]);

/// One counter's sums in one stratum of one run, with the counter's possible range.
pub(crate) type Cell = (i64, Moments, Option<Range>);

/// One counter's sums in one stratum of one run as gathered: counter id, moments, least and
/// greatest value.
pub(crate) type GatheredCell = (i64, Moments, f64, f64);

/// The counters by id: name, derived, possible range.
pub(crate) type CounterRanges = FastMap<i64, (String, bool, Option<Range>)>;

/// The moments of the values of each stratum, run and counter, gathered while the values are
/// inserted, in the order they are stored (see [`Database::sampled`]), so that the estimates
/// need not read every value back. Each counter also keeps its least and greatest value: when
/// both lie in the counter's possible range, so does every value.
/// With them, per stratum and run its merged dispatches (while every pass was joined as it was
/// inserted), and per kernel and pass the dispatches and their total duration.
#[derive(Debug, Default)]
pub struct Sampled {
    pub(crate) cells: FastMap<(StratumKey, i64), Vec<GatheredCell>>,
    pub(crate) population: Option<FastMap<(StratumKey, i64), u64>>,
    pub(crate) durations: FastMap<(i64, u32), (u64, i64)>,
    /// Each GPU's `gfx_target_version`, by KFD node.
    pub(crate) versions: FastMap<u32, u32>,
}

impl Sampled {
    /// The stratum and run of dispatch `d` of kernel `kernel_id`, read from input `source`.
    pub(crate) fn stratum_key(
        &self,
        source: u32,
        d: &Dispatch,
        kernel_id: i64,
    ) -> (StratumKey, i64) {
        let [gx, gy, gz] = d.grid;
        let [wx, wy, wz] = d.workgroup;
        let arch = self.versions.get(&d.agent).copied().unwrap_or(0);
        (
            (kernel_id, [gx, gy, gz, wx, wy, wz, arch]),
            i64::from(source),
        )
    }

    /// The GPU of KFD node `node` has architecture `gfx_target_version`.
    pub fn set_agent(&mut self, node: u32, gfx_target_version: u32) {
        self.versions.insert(node, gfx_target_version);
    }
}

impl Sampled {
    /// Nothing yet.
    pub fn new() -> Sampled {
        Sampled {
            population: Some(FastMap::default()),
            ..Sampled::default()
        }
    }

    /// Adds dispatch `d` of kernel `kernel_id` in `pass`, read from input `source`, with its
    /// values (counter id, total).
    pub fn add(
        &mut self,
        source: u32,
        pass: u32,
        d: &Dispatch,
        kernel_id: i64,
        values: impl Iterator<Item = (i64, f64)>,
    ) {
        let duration = self.durations.entry((kernel_id, pass)).or_default();
        duration.0 += 1;
        duration.1 += d.end_ns as i64 - d.start_ns as i64;
        let key = self.stratum_key(source, d, kernel_id);
        let cell = self.cells.entry(key).or_default();
        for (pmc, v) in values {
            // A dispatch's counters come in the same order each time: the next slot is
            // usually the one wanted.
            let at = match cell.iter().position(|c| c.0 == pmc) {
                Some(at) => at,
                None => {
                    cell.push((pmc, Moments::default(), v, v));
                    cell.len() - 1
                }
            };
            let (_, moments, low, high) = &mut cell[at];
            moments.add(v);
            *low = low.min(v);
            *high = high.max(v);
        }
    }

    /// The part of these that a pass's values add to ([`Sampled::add`]), taken out so that
    /// another thread than the inserting one adds to them; [`Sampled::take_back`] puts it back.
    pub(crate) fn lend(&mut self) -> Sampled {
        Sampled {
            cells: std::mem::take(&mut self.cells),
            population: None,
            durations: std::mem::take(&mut self.durations),
            versions: self.versions.clone(),
        }
    }

    /// Puts back what [`Sampled::lend`] took, with what was added to it since.
    pub(crate) fn take_back(&mut self, lent: Sampled) {
        self.cells = lent.cells;
        self.durations = lent.durations;
    }

    /// Counts a new merged dispatch, `d` (of kernel `kernel_id`, from input `source`).
    pub fn add_merged(&mut self, source: u32, d: &Dispatch, kernel_id: i64) {
        let key = self.stratum_key(source, d, kernel_id);
        if let Some(population) = &mut self.population {
            *population.entry(key).or_default() += 1;
        }
    }

    /// Forgets the merged dispatches counted: a pass was joined in SQL.
    pub fn lose_population(&mut self) {
        self.population = None;
    }

    /// The cells of the estimates, each with its counter's range; `None` when some value lies
    /// outside its counter's range (or is not a number), whose count the moments lack.
    pub(crate) fn cells(
        &self,
        counters: &CounterRanges,
    ) -> Option<FastMap<(StratumKey, i64), Vec<Cell>>> {
        let mut cells: FastMap<(StratumKey, i64), Vec<Cell>> = FastMap::default();
        for (&key, per_counter) in &self.cells {
            let mut out = Vec::with_capacity(per_counter.len());
            for &(pmc, moments, low, high) in per_counter {
                let range = counters.get(&pmc).and_then(|c| c.2);
                let within = |v: f64| !v.is_nan() && range.is_none_or(|r| r.holds(v));
                if !within(low) || !within(high) {
                    return None;
                }
                out.push((pmc, moments, range));
            }
            cells.insert(key, out);
        }
        Some(cells)
    }
}
