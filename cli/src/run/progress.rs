//! One progress line per pass: a live spinner with the elapsed time and an estimate on a
//! terminal, plain start and end lines otherwise.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use rtl_pmc_profile::files::summary::duration;

/// Progress over every run of the application that rtl-pmc makes, whichever profile it writes.
pub struct Progress {
    total: usize,
    /// The run under way (1-based), counted over the whole command.
    current: usize,
    finished: Vec<Duration>,
    terminal: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Progress over `total` runs of the application, on stderr.
    pub fn new(total: usize) -> Progress {
        Progress {
            total,
            current: 0,
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

    /// The next run starts.
    pub fn start(&mut self, counters: &str) {
        self.current += 1;
        let estimate = match self.estimate() {
            Some(d) => format!(
                " (about {} each, {} left)",
                duration(d.as_nanos() as f64),
                duration(
                    (d * self.total.saturating_sub(self.current - 1) as u32).as_nanos() as f64
                )
            ),
            None => String::new(),
        };
        let line = format!(
            "[pass {}/{}] {counters}{estimate}",
            self.current, self.total
        );
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

    /// The run under way ended.
    pub fn finish(&mut self, elapsed: Duration, code: i32, dispatches: u64) {
        self.finished.push(elapsed);
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        eprintln!(
            "rtl-pmc: [pass {}/{}] done in {}: exit code {code}, {dispatches} dispatches",
            self.current,
            self.total,
            duration(elapsed.as_nanos() as f64)
        );
    }
}
