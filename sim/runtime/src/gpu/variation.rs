//! Per-dispatch variation of the value model (`RTL_SIM_VARIATION=SEED[:STREAM]`), so that estimates from
//! sampled dispatches can be checked against totals that really differ from dispatch to dispatch.
//!
//! Each kernel name gets a behaviour from the seed: stable (every dispatch reads the same),
//! noisy (each dispatch's work scaled by an independent factor in 0.7–1.3) or drifting (2% more
//! work per earlier dispatch of the kernel on its GPU, ±5% noise, and 10% more per earlier run
//! counted in `RTL_SIM_RUN_FILE`). The factor scales the kernel's duration and every count that
//! follows from its geometry, and the ground truth logs it, so the true values stay exact.

use super::model::hash;

/// How a kernel's dispatches differ from one another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Every dispatch of one launch configuration reads the same values.
    Stable,
    /// Each dispatch's work is scaled by an independent factor in 0.7–1.3.
    Noisy,
    /// Work grows by 2% per earlier dispatch of the kernel, with ±5% noise, and by 10% per run.
    Drifting,
}

impl Behaviour {
    /// The name the ground truth logs.
    pub fn name(self) -> &'static str {
        match self {
            Behaviour::Stable => "stable",
            Behaviour::Noisy => "noisy",
            Behaviour::Drifting => "drifting",
        }
    }
}

/// The scale factor unity, in thousandths.
pub const UNIT: u32 = 1000;

/// The behaviour of `kernel` under `seed`.
pub fn behaviour(seed: u64, kernel: &str) -> Behaviour {
    match hash(&[&seed.to_le_bytes(), kernel.as_bytes()]) % 3 {
        0 => Behaviour::Stable,
        1 => Behaviour::Noisy,
        _ => Behaviour::Drifting,
    }
}

/// The work factor, in thousandths, of the `occurrence`-th dispatch (from 0) of `kernel` on its
/// GPU in the `run`-th run (from 0). The noise also depends on `stream`, so that processes with
/// one seed (the ranks of a job: one program, different data) share kernel behaviours but not
/// values.
pub fn scale(seed: u64, stream: u64, kernel: &str, occurrence: u64, run: u64) -> u32 {
    let noise = |spread: u64| {
        let h = hash(&[
            &seed.to_le_bytes(),
            &stream.to_le_bytes(),
            kernel.as_bytes(),
            &occurrence.to_le_bytes(),
        ]);
        (UNIT as u64 - spread + h % (2 * spread + 1)) as u32
    };
    match behaviour(seed, kernel) {
        Behaviour::Stable => UNIT,
        Behaviour::Noisy => noise(300),
        Behaviour::Drifting => {
            let trend = u64::from(UNIT) + 20 * occurrence.min(10_000) + 100 * run.min(1000);
            (trend * u64::from(noise(50)) / u64::from(UNIT)) as u32
        }
    }
}

/// Applies a factor in thousandths to a count.
pub fn apply(value: u64, scale: u32) -> u64 {
    if scale == UNIT {
        return value;
    }
    (u128::from(value) * u128::from(scale) / u128::from(UNIT)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_is_unit_noisy_within_bounds_drifting_grows() {
        let find = |b: Behaviour| {
            (0..)
                .map(|i| format!("k{i}"))
                .find(|k| behaviour(7, k) == b)
                .expect("every behaviour occurs")
        };
        let stable = find(Behaviour::Stable);
        assert!((0..50).all(|i| scale(7, 0, &stable, i, 0) == UNIT));
        let noisy = find(Behaviour::Noisy);
        let values: Vec<u32> = (0..200).map(|i| scale(7, 0, &noisy, i, 0)).collect();
        assert!(values.iter().all(|&v| (700..=1300).contains(&v)));
        assert!(values.iter().any(|&v| v != values[0]));
        let drifting = find(Behaviour::Drifting);
        assert!(scale(7, 0, &drifting, 40, 0) > scale(7, 0, &drifting, 0, 0));
        assert!(scale(7, 0, &drifting, 0, 3) > scale(7, 0, &drifting, 0, 0));
        assert_eq!(scale(7, 0, &noisy, 5, 0), scale(7, 0, &noisy, 5, 0));
        assert_ne!(
            (0..8)
                .map(|i| scale(7, 0, &noisy, i, 0))
                .collect::<Vec<_>>(),
            (0..8)
                .map(|i| scale(7, 1, &noisy, i, 0))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn apply_scales_in_thousandths() {
        assert_eq!(apply(1000, 1300), 1300);
        assert_eq!(apply(7, UNIT), 7);
        assert_eq!(apply(999, 500), 499);
    }
}
