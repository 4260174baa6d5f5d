//! Output path templates: `%pid%`, `%hostname%` and `%rank%` make one directory per process,
//! host or MPI/Slurm/torchrun rank.

/// Environment variables that give a process's rank, in the order they are consulted.
pub const RANK_VARIABLES: [&str; 5] = [
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "SLURM_PROCID",
    "RANK",
    "LOCAL_RANK",
];

/// The rank of this process from `lookup` (an environment), `0` when none is set.
pub fn rank(lookup: impl Fn(&str) -> Option<String>) -> String {
    RANK_VARIABLES
        .iter()
        .find_map(|v| lookup(v).filter(|s| !s.trim().is_empty()))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "0".to_string())
}

/// This machine's host name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// Replaces `%pid%`, `%hostname%` and `%rank%` in `template`.
pub fn expand(template: &str, pid: u32, hostname: &str, rank: &str) -> String {
    template
        .replace("%pid%", &pid.to_string())
        .replace("%hostname%", hostname)
        .replace("%rank%", rank)
}

/// [`expand`] with this process's pid, host name and rank.
pub fn expand_here(template: &str) -> String {
    expand(
        template,
        std::process::id(),
        &hostname(),
        &rank(|v| std::env::var(v).ok()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_expand_and_ranks_come_from_the_first_variable_set() {
        assert_eq!(
            expand("out/%hostname%/%rank%/p%pid%", 42, "node7", "3"),
            "out/node7/3/p42"
        );
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(rank(env(&[])), "0");
        assert_eq!(
            rank(env(&[("LOCAL_RANK", "5"), ("SLURM_PROCID", "2")])),
            "2"
        );
        assert_eq!(
            rank(env(&[("PMI_RANK", "1"), ("OMPI_COMM_WORLD_RANK", "4")])),
            "4"
        );
        assert_eq!(rank(env(&[("RANK", " 9 ")])), "9");
    }
}
