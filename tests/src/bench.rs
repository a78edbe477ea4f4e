//! What the benches share: two sides measured in pairs, run by run (A, B, A, B …), so that a change of the machine's
//! pace during the bench moves both sides of a pair alike; the verdict is the median of the per-pair ratios, printed
//! with its spread and the load average, never a ratio of two medians taken minutes apart.

use std::fmt;

/// The load average of the last 1, 5 and 15 minutes, as `/proc/loadavg` gives it (`?` when it cannot be read).
#[must_use]
pub fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    if fields.len() == 3 {
        fields.join(" ")
    } else {
        "?".to_owned()
    }
}

/// The measures of two sides taken in pairs: `a` is the side under test, `b` its reference.
#[derive(Debug, Clone, Default)]
pub struct Pairs {
    pairs: Vec<(f64, f64)>,
}

impl Pairs {
    /// No pair yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `a` then `b` (or `b` then `a` on every other pair, so that neither side always runs first) `runs` times
    /// and keeps each pair of measures (any unit, the same for both sides).
    ///
    /// # Errors
    /// The first error of either side.
    pub fn interleaved<E>(
        runs: usize,
        mut a: impl FnMut() -> Result<f64, E>,
        mut b: impl FnMut() -> Result<f64, E>,
    ) -> Result<Self, E> {
        let mut pairs = Self::new();
        for run in 0..runs {
            let (x, y) = if run % 2 == 0 {
                let x = a()?;
                (x, b()?)
            } else {
                let y = b()?;
                (a()?, y)
            };
            pairs.push(x, y);
        }
        Ok(pairs)
    }

    /// Adds one pair.
    pub fn push(&mut self, a: f64, b: f64) {
        self.pairs.push((a, b));
    }

    /// How many pairs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// No pair.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The spread of `a / b` over the pairs.
    #[must_use]
    pub fn ratios(&self) -> Spread {
        Spread::of(self.pairs.iter().map(|(a, b)| a / b).collect())
    }

    /// The spread of `a - b` over the pairs.
    #[must_use]
    pub fn differences(&self) -> Spread {
        Spread::of(self.pairs.iter().map(|(a, b)| a - b).collect())
    }

    /// The spread of side `a` alone.
    #[must_use]
    pub fn a(&self) -> Spread {
        Spread::of(self.pairs.iter().map(|(a, _)| *a).collect())
    }

    /// The spread of side `b` alone.
    #[must_use]
    pub fn b(&self) -> Spread {
        Spread::of(self.pairs.iter().map(|(_, b)| *b).collect())
    }
}

/// The median of some values and their spread: the 10th and 90th percentiles (the nearest rank), and how many.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median (for an even count, the upper of the two middle values).
    pub median: f64,
    /// The 10th percentile.
    pub p10: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// How many values.
    pub count: usize,
}

impl Spread {
    /// The spread of `values` (NaN for none).
    #[must_use]
    pub fn of(mut values: Vec<f64>) -> Self {
        if values.is_empty() {
            return Self {
                median: f64::NAN,
                p10: f64::NAN,
                p90: f64::NAN,
                count: 0,
            };
        }
        values.sort_by(f64::total_cmp);
        let at = |p: usize| values[(values.len() * p / 100).min(values.len() - 1)];
        Self {
            median: at(50),
            p10: at(10),
            p90: at(90),
            count: values.len(),
        }
    }
}

impl fmt::Display for Spread {
    /// `1.23 (p10 1.10, p90 1.40, 20 pairs)`, with the formatter's precision (2 when none).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = f.precision().unwrap_or(2);
        write!(
            f,
            "{:.p$} (p10 {:.p$}, p90 {:.p$}, {} pairs)",
            self.median, self.p10, self.p90, self.count
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_is_the_median_of_the_pairs_not_a_ratio_of_medians() {
        // The machine's pace halves halfway: each pair keeps a ratio of 2, the medians of the sides would not.
        let mut pairs = Pairs::new();
        for run in 0..10 {
            let pace = if run < 5 { 1.0 } else { 2.0 };
            pairs.push(2.0 * pace, pace);
        }
        assert!((pairs.ratios().median - 2.0).abs() < 1e-9);
        assert!((pairs.ratios().p90 - 2.0).abs() < 1e-9);
        assert_eq!(pairs.len(), 10);
    }

    #[test]
    fn interleaving_alternates_which_side_runs_first() {
        let order = std::cell::RefCell::new(Vec::new());
        let pairs = Pairs::interleaved::<()>(
            4,
            || {
                order.borrow_mut().push('a');
                Ok(3.0)
            },
            || {
                order.borrow_mut().push('b');
                Ok(1.0)
            },
        )
        .unwrap();
        assert_eq!(order.into_inner(), vec!['a', 'b', 'b', 'a', 'a', 'b', 'b', 'a']);
        assert_eq!(pairs.differences().median, 2.0);
        assert_eq!(format!("{:.1}", pairs.ratios()), "3.0 (p10 3.0, p90 3.0, 4 pairs)");
    }

    #[test]
    fn the_spread_has_its_percentiles_and_none_is_nan() {
        let spread = Spread::of((1..=10).map(f64::from).collect());
        assert_eq!((spread.p10, spread.median, spread.p90), (2.0, 6.0, 10.0));
        assert!(Spread::of(Vec::new()).median.is_nan());
    }
}
