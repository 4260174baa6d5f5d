//! One progress line per pass: a live spinner with the elapsed time and an estimate on a
//! terminal, plain start and end lines otherwise.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::summary::duration;

/// Progress over the passes of a profile.
pub struct Progress {
    total: usize,
    finished: Vec<Duration>,
    terminal: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Progress over `total` passes, on stderr.
    pub fn new(total: usize) -> Progress {
        Progress {
            total,
            finished: Vec::new(),
            terminal: std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    /// The estimated time of one pass: the mean of those finished.
    fn estimate(&self) -> Option<Duration> {
        let n = self.finished.len() as u32;
        (n > 0).then(|| self.finished.iter().sum::<Duration>() / n)
    }

    /// A pass starts.
    pub fn start(&mut self, pass: u32, counters: &str) {
        let estimate = match self.estimate() {
            Some(d) => format!(
                " (about {} each, {} left)",
                duration(d.as_nanos() as f64),
                duration((d * (self.total + 1 - pass as usize) as u32).as_nanos() as f64)
            ),
            None => String::new(),
        };
        let line = format!("[pass {pass}/{}] {counters}{estimate}", self.total);
        if self.terminal {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                bar.set_style(style);
            }
            bar.set_message(line);
            bar.enable_steady_tick(Duration::from_millis(200));
            self.bar = Some(bar);
        } else {
            eprintln!("rtl-pmc: {line}");
        }
    }

    /// Called while the application runs.
    pub fn tick(&self) {}

    /// A pass ended.
    pub fn finish(&mut self, pass: u32, elapsed: Duration, code: i32, dispatches: u64) {
        self.finished.push(elapsed);
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        eprintln!(
            "rtl-pmc: [pass {pass}/{}] done in {}: exit code {code}, {dispatches} dispatches",
            self.total,
            duration(elapsed.as_nanos() as f64)
        );
    }
}
