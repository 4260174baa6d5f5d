//! What application and kernel replay measurably cost for one command, kept between runs so
//! that `--plan` can show it and `--replay-mode auto` can pick the cheaper one.
//!
//! After each profile, rtl-pmc records for the application's command line (its arguments and
//! the working directory) the wall time of one run of the application under application replay,
//! or, under kernel replay, the wall time of the one run with its passes and the bytes saved and
//! restored per replayed dispatch. The file is `$XDG_CACHE_HOME/rtl-pmc/replay-costs.json`
//! (`~/.cache/...` without `XDG_CACHE_HOME`; `RTL_PMC_REPLAY_COSTS` names another file). It is
//! a cache: a missing or unreadable file means nothing measured, and a failed write is ignored.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use rtl_pmc_profile::files::summary::{duration, grouped};

/// Names the cost file instead of the default place.
pub const COSTS_ENV: &str = "RTL_PMC_REPLAY_COSTS";

/// One application replay measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplicationRun {
    /// Mean wall time of one run of the application, ns.
    pub run_ns: u64,
}

/// One kernel replay measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelRun {
    /// Wall time of the one run, ns.
    pub run_ns: u64,
    /// Passes each dispatch ran.
    pub passes: u32,
    /// Dispatches replayed.
    pub replayed: u64,
    /// Mean bytes saved per replayed dispatch.
    pub saved: u64,
    /// Mean bytes restored per replayed dispatch.
    pub restored: u64,
}

/// What was measured for one command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measured {
    /// The latest application replay.
    #[serde(default)]
    pub application: Option<ApplicationRun>,
    /// The latest kernel replay.
    #[serde(default)]
    pub kernel: Option<KernelRun>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Costs {
    commands: BTreeMap<String, Measured>,
}

fn path() -> Option<PathBuf> {
    if let Some(file) = std::env::var_os(COSTS_ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(file));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("rtl-pmc").join("replay-costs.json"))
}

/// The key of a command: the working directory and the application's arguments.
fn key(app: &[String]) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut parts = vec![cwd.display().to_string()];
    parts.extend(app.iter().cloned());
    serde_json::to_string(&parts).unwrap_or_default()
}

fn read() -> Costs {
    path()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// What was measured for the command `app`, if anything.
pub fn load(app: &[String]) -> Option<Measured> {
    if app.is_empty() {
        return None;
    }
    read().commands.remove(&key(app))
}

/// Records a measurement for the command `app`.
pub fn store(app: &[String], update: impl FnOnce(&mut Measured)) {
    let Some(path) = path() else { return };
    let mut costs = read();
    update(costs.commands.entry(key(app)).or_default());
    let Ok(text) = serde_json::to_string_pretty(&costs) else {
        return;
    };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let temporary = path.with_extension(format!("partial-{}", std::process::id()));
    if std::fs::write(&temporary, text + "\n").is_ok() {
        let _ = std::fs::rename(&temporary, &path);
    }
}

impl Measured {
    /// The estimated wall time of `passes` passes with application replay, ns.
    pub fn application_ns(&self, passes: usize) -> Option<u64> {
        Some(self.application?.run_ns * passes as u64)
    }

    /// The estimated wall time of `passes` passes with kernel replay, ns: one run of the
    /// application, plus what each pass beyond the first cost in the measured kernel replay.
    pub fn kernel_ns(&self, passes: usize) -> Option<u64> {
        let app = self.application?.run_ns;
        let k = self.kernel?;
        let extra = k.run_ns.saturating_sub(app) / u64::from(k.passes.max(2) - 1);
        Some(app + extra * passes.saturating_sub(1) as u64)
    }

    /// The `--plan` lines with what was measured and the estimates for `passes` passes.
    pub fn render(&self, passes: usize) -> String {
        let ns = |v: u64| duration(v as f64);
        let mut parts = Vec::new();
        if let Some(k) = self.kernel {
            parts.push(format!(
                "kernel replay {} per run ({} passes; {} dispatches replayed, {} bytes saved and {} restored per dispatch on average)",
                ns(k.run_ns),
                k.passes,
                grouped(k.replayed),
                grouped(k.saved),
                grouped(k.restored)
            ));
        }
        if let Some(a) = self.application {
            parts.push(format!("application replay {} per run", ns(a.run_ns)));
        }
        if parts.is_empty() {
            return String::new();
        }
        let mut out = format!("measured for this command: {}\n", parts.join("; "));
        if let (Some(k), Some(a)) = (self.kernel_ns(passes), self.application_ns(passes)) {
            out.push_str(&format!(
                "estimate for {passes} passes: kernel replay {}, application replay {}\n",
                ns(k),
                ns(a)
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_replay_is_estimated_from_its_cost_per_extra_pass() {
        let m = Measured {
            application: Some(ApplicationRun { run_ns: 1_000 }),
            kernel: Some(KernelRun {
                run_ns: 1_600,
                passes: 3,
                replayed: 10,
                saved: 4096,
                restored: 8192,
            }),
        };
        // 300 ns per pass beyond the first.
        assert_eq!(m.kernel_ns(5), Some(2_200));
        assert_eq!(m.application_ns(5), Some(5_000));
        assert_eq!(
            m.render(5),
            "measured for this command: kernel replay 1.60 us per run (3 passes; 10 dispatches replayed, 4,096 bytes saved and 8,192 restored per dispatch on average); application replay 1.00 us per run\nestimate for 5 passes: kernel replay 2.20 us, application replay 5.00 us\n"
        );
        assert_eq!(Measured::default().render(2), "");
        let only_kernel = Measured {
            application: None,
            ..m
        };
        assert_eq!(only_kernel.kernel_ns(2), None);
    }
}
