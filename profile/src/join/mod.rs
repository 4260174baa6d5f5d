//! Joining passes: each pass's dispatches are stored as they arrive, in start order, and
//! matched to the merged dispatches of the earlier passes ([`pass`]); the files each process of
//! a pass gets of its own ([`process_files`]).

use clap::ValueEnum;

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
