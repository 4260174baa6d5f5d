//! Joining passes: each pass's dispatches are stored as they arrive, in start order, and
//! matched to the merged dispatches of the earlier passes ([`pass`]); the files each process of
//! a pass gets of its own ([`process_files`]).

use clap::ValueEnum;

use crate::model::Unmatched;

pub mod pass;
pub mod process_files;

/// How dispatches of different passes are matched. Always by process (its rank among the
/// run's processes, by pid), kernel, grid and workgroup sizes and the kernel's occurrence;
/// the rule says where the occurrence is counted and what else must agree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum PassMatch {
    /// The same GPU and queue (by its order of creation on the GPU in the process); occurrence
    /// counted per queue.
    #[default]
    Queue,
    /// The same GPU, any queue; occurrence counted per GPU (work moves between queues).
    Gpu,
    /// Any GPU and queue; occurrence counted per process (work moves between GPUs).
    Process,
}

impl PassMatch {
    /// The GPU and queue parts of the match key of a dispatch on GPU `agent`, queue `queue`
    /// (its creation order): 0 where the rule ignores them.
    pub fn lane(self, agent: u32, queue: u32) -> (u32, u32) {
        match self {
            PassMatch::Queue => (agent, queue),
            PassMatch::Gpu => (agent, 0),
            PassMatch::Process => (0, 0),
        }
    }
}

/// The one warning about dispatches not joined in every pass, if any: how many, per pass, and
/// the likely cause.
pub fn unmatched_warning(unmatched: &Unmatched, rule: PassMatch) -> Option<String> {
    let cause = match rule {
        PassMatch::Queue => "the application spreads its work over threads, queues or GPUs differently from run to run (--pass-match gpu matches on any queue of the GPU, --pass-match process on any GPU)",
        PassMatch::Gpu => "the application spreads its work over threads or GPUs differently from run to run (--pass-match process matches on any GPU)",
        PassMatch::Process => "the application launches different kernels, sizes or counts from run to run",
    };
    unmatched_warning_for(unmatched, cause)
}

/// [`unmatched_warning`] with the likely cause given.
pub fn unmatched_warning_for(unmatched: &Unmatched, cause: &str) -> Option<String> {
    if unmatched.incomplete == 0 {
        return None;
    }
    let per_pass: Vec<String> = unmatched
        .per_pass
        .iter()
        .map(|(pass, all, alone)| format!("pass {pass}: {alone} of {all}"))
        .collect();
    Some(format!(
        "{} of {} dispatches were not matched in every pass ({}); their counters from the passes that miss them are empty (None). Likely cause: {cause}",
        unmatched.incomplete,
        unmatched.merged,
        per_pass.join(", ")
    ))
}
