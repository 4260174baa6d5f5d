//! rocprofv3 flags and job keys that rtl-pmc deliberately does not take: each is refused before
//! anything runs, with what to do instead, rather than being reported as unknown.

/// One refused option: its rocprofv3 flags, its job key, and why with what to use instead.
type Refused = (&'static [&'static str], &'static str, &'static str);

const TRACING: &str = "is rocprofv3 API and activity tracing, which rtl-pmc does not do (it collects hardware counters per dispatch, each with its start and end time); trace with rocprofv3";
const PC_SAMPLING: &str =
    "is rocprofv3 PC sampling, which rtl-pmc does not do; sample with rocprofv3";
const THREAD_TRACE: &str =
    "is rocprofv3 thread trace, which rtl-pmc does not do; trace with rocprofv3";
const PERFETTO: &str = "configures rocprofv3's Perfetto backend, which rtl-pmc does not use (it writes results.pftrace itself after the run); drop it";
const SUMMARY_SHAPE: &str = "shapes rocprofv3's per-domain tracing summary; rtl-pmc's summary has one domain, kernel dispatches in nanoseconds, with --summary-top N for its length; drop it";

const REFUSED: &[Refused] = &[
    (&["--hip-trace"], "hip_trace", TRACING),
    (&["--hip-runtime-trace"], "hip_runtime_trace", TRACING),
    (&["--hip-compiler-trace"], "hip_compiler_trace", TRACING),
    (&["--hsa-trace"], "hsa_trace", TRACING),
    (&["--hsa-core-trace"], "hsa_core_trace", TRACING),
    (&["--hsa-amd-trace"], "hsa_amd_trace", TRACING),
    (&["--hsa-image-trace"], "hsa_image_trace", TRACING),
    (&["--hsa-finalizer-trace"], "hsa_finalizer_trace", TRACING),
    (&["--marker-trace"], "marker_trace", TRACING),
    (&["--memory-copy-trace"], "memory_copy_trace", TRACING),
    (&["--memory-allocation-trace"], "memory_allocation_trace", TRACING),
    (&["--scratch-memory-trace"], "scratch_memory_trace", TRACING),
    (&["--rccl-trace"], "rccl_trace", TRACING),
    (&["--rocdecode-trace"], "rocdecode_trace", TRACING),
    (&["--rocjpeg-trace"], "rocjpeg_trace", TRACING),
    (&["--kokkos-trace"], "kokkos_trace", TRACING),
    (&["-s", "--sys-trace"], "sys_trace", TRACING),
    (&["-r", "--runtime-trace"], "runtime_trace", TRACING),
    (&["--pc-sampling-beta-enabled"], "pc_sampling_beta_enabled", PC_SAMPLING),
    (&["--pc-sampling-unit"], "pc_sampling_unit", PC_SAMPLING),
    (&["--pc-sampling-method"], "pc_sampling_method", PC_SAMPLING),
    (&["--pc-sampling-interval"], "pc_sampling_interval", PC_SAMPLING),
    (&["--att", "--advanced-thread-trace"], "advanced_thread_trace", THREAD_TRACE),
    (&["--perfetto-backend"], "perfetto_backend", PERFETTO),
    (&["--perfetto-buffer-size"], "perfetto_buffer_size", PERFETTO),
    (&["--perfetto-buffer-fill-policy"], "perfetto_buffer_fill_policy", PERFETTO),
    (&["--perfetto-shmem-size-hint"], "perfetto_shmem_size_hint", PERFETTO),
    (&["-D", "--summary-per-domain"], "summary_per_domain", SUMMARY_SHAPE),
    (&["--summary-groups"], "summary_groups", SUMMARY_SHAPE),
    (&["-u", "--summary-units"], "summary_units", SUMMARY_SHAPE),
    (&[], "agent_index", "chooses how the Agent_Id column names GPUs for the whole profile; give -A/--agent-index on the command line instead"),
    (&["--collection-period"], "collection_period", "samples counters over time, which rtl-pmc does not do (it counts per dispatch); choose dispatches with --kernel-iteration-range or a range: line instead"),
];

/// The message refusing command-line token `token` (before `--`), if it is a rocprofv3 flag
/// rtl-pmc does not take: `--flag` and `--flag=value` alike.
pub fn refused_flag(token: &str) -> Option<String> {
    let flag = token.split_once('=').map_or(token, |(f, _)| f);
    let (flags, _, reason) = REFUSED.iter().find(|(flags, _, _)| flags.contains(&flag))?;
    Some(format!("{} {reason}", flags.join("/")))
}

/// The message refusing job key `key` of a rocprofv3 YAML/JSON input, if rtl-pmc does not take
/// it.
pub fn refused_key(key: &str) -> Option<String> {
    let (_, _, reason) = REFUSED.iter().find(|(_, k, _)| *k == key)?;
    Some(format!("{key} {reason}"))
}

/// The first command-line argument before `--` that [`refused_flag`] refuses, with its message.
pub fn refused_in(arguments: &[String]) -> Option<String> {
    arguments
        .iter()
        .take_while(|a| a.as_str() != "--")
        .find_map(|a| refused_flag(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_keys_name_themselves_and_stop_at_the_application() {
        assert_eq!(
            refused_flag("--perfetto-buffer-size=4096").as_deref(),
            Some("--perfetto-buffer-size configures rocprofv3's Perfetto backend, which rtl-pmc does not use (it writes results.pftrace itself after the run); drop it")
        );
        assert_eq!(refused_flag("--pmc"), None);
        assert!(refused_key("hip_trace")
            .unwrap()
            .starts_with("hip_trace is rocprofv3 API and activity tracing"));
        assert_eq!(refused_key("kernel_trace"), None);
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(refused_in(&argv(&["--pmc", "X", "--", "app", "-s"])), None);
        assert!(refused_in(&argv(&["-s", "--", "app"])).is_some());
    }
}
