//! C++ kernel names end to end: `rtl-pmc` profiles `rtl-demo-app --cpp`, whose fixture kernels
//! have Itanium-mangled symbols like HIP kernels, and records them demangled by default, as
//! symbols with `--mangled-kernels`, as base names with `--truncate-kernels`; kernel filters
//! match the recorded name, as rocprofv3's do. Every counter value is the simulator's ground
//! truth for the dispatch it is written for.

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use sim_support::{artifact, read_table, sim_env, total, Profile};

/// The kernel symbols (without `.kd`) the demo dispatches with `--kernel vadd --cpp`, in order,
/// as the ground truth names them.
const SYMBOLS: [&str; 4] = [
    "vadd",
    "_Z5scaleIfEvPT_S0_j",
    "_Z5scaleIjEvPT_S0_j",
    "_ZN4demo5twiceEPjj",
];

/// What `cpp_demangle` makes of [`SYMBOLS`].
const DEMANGLED: [&str; 4] = [
    "vadd",
    "void scale<float>(float*, float, unsigned int)",
    "void scale<unsigned int>(unsigned int*, unsigned int, unsigned int)",
    "demo::twice(unsigned int*, unsigned int)",
];

/// rocprofv3's truncation of [`DEMANGLED`].
const TRUNCATED: [&str; 4] = ["vadd", "scale", "scale", "twice"];

/// The counters collected, with ground truth for each.
const COUNTERS: [&str; 2] = ["SQ_WAVES", "SQ_INSTS_VALU"];

/// Runs `rtl-pmc --arch gfx942 -d OUT ARGS -- rtl-demo-app --kernel vadd --cpp --iterations 2`
/// on a simulated gfx942 with ground truth for [`COUNTERS`]; `files` are written to the test's
/// directory first, and `@name` in `args` stands for the path of file `name`.
fn profile(name: &str, args: &[&str], files: &[(&str, &str)]) -> Profile {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("kernel-names-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    for (file, text) in files {
        std::fs::write(dir.join(file), text).expect("input file written");
    }
    let args: Vec<String> = args
        .iter()
        .map(|a| match a.strip_prefix('@') {
            Some(file) => dir.join(file).display().to_string(),
            None => a.to_string(),
        })
        .collect();
    let out = dir.join("out");
    let truth = dir.join("truth.jsonl");
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(&dir)
        .args(["--arch", "gfx942", "-d"])
        .arg(&out)
        .args(&args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(["--kernel", "vadd", "--cpp", "--iterations", "2"])
        .envs(sim_env("gfx942"))
        .env("RTL_SIM_GROUND_TRUTH", &truth)
        .env("RTL_SIM_GROUND_TRUTH_COUNTERS", COUNTERS.join(","))
        .output()
        .expect("rtl-pmc starts");
    let truth = sim_support::read_ground_truth(&truth);
    let p = Profile { output, out, truth };
    assert_eq!(
        p.output.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&p.output.stdout),
        p.stderr()
    );
    p
}

impl Profile {
    /// The rows of CSV file `name` of the output directory, by column name.
    fn table(&self, name: &str) -> Vec<HashMap<String, String>> {
        match name.ends_with("counter_collection.csv") {
            true => read_table(&sim_support::process_file(&self.out, name)),
            false => read_table(&self.out.join(name)),
        }
    }

    /// The ground-truth dispatch that started and ended at these times.
    fn truth_at(&self, start: &str, end: &str) -> &serde_json::Value {
        let time = |text: &str| -> u64 {
            text.parse()
                .unwrap_or_else(|e| panic!("timestamp {text:?}: {e}"))
        };
        let (begin, finish) = (time(start), time(end));
        self.truth
            .iter()
            .find(|t| t["start"] == begin && t["end"] == finish)
            .unwrap_or_else(|| panic!("no ground-truth dispatch ran from {start} to {end}"))
    }

    /// Checks `results.csv` and `pass_1/counter_collection.csv` of a one-pass profile: one row
    /// per dispatch of `kernels` (indices into [`SYMBOLS`]) in dispatch order, each named
    /// `names[kernel]`, each counter its dispatch's ground truth.
    fn assert_names_and_values(&self, names: &[&str; 4], kernels: &[usize]) {
        let results = self.table("results.csv");
        let expected: Vec<&str> = kernels.iter().map(|&k| names[k]).collect();
        assert_eq!(column(&results, "KernelName"), expected);
        for row in &results {
            let t = self.truth_at(&row["BeginNs"], &row["EndNs"]);
            assert_eq!(row["KernelName"], display(names, t), "{row:?}");
            for counter in COUNTERS {
                assert_eq!(row[counter], total(t, counter).to_string(), "{row:?}");
            }
        }
        let collection = self.table("pass_1/counter_collection.csv");
        let expected: Vec<&str> = expected
            .iter()
            .flat_map(|name| [*name; COUNTERS.len()])
            .collect();
        assert_eq!(column(&collection, "Kernel_Name"), expected);
        for row in &collection {
            let t = self.truth_at(&row["Start_Timestamp"], &row["End_Timestamp"]);
            assert_eq!(row["Kernel_Name"], display(names, t), "{row:?}");
            let value = format!("{}.000000", total(t, &row["Counter_Name"]));
            assert_eq!(row["Counter_Value"], value, "{row:?}");
        }
    }
}

fn column<'a>(rows: &'a [HashMap<String, String>], name: &str) -> Vec<&'a str> {
    rows.iter().map(|r| r[name].as_str()).collect()
}

/// The name `names` gives the kernel of ground-truth dispatch `t`.
fn display<'a>(names: &[&'a str; 4], t: &serde_json::Value) -> &'a str {
    let symbol = t["kernel"].as_str().expect("a kernel symbol");
    let at = SYMBOLS
        .iter()
        .position(|s| *s == symbol)
        .unwrap_or_else(|| panic!("the demo ran an unexpected kernel {symbol}"));
    names[at]
}

/// Every dispatch of the two iterations, as indices into [`SYMBOLS`].
const ALL: [usize; 8] = [0, 1, 2, 3, 0, 1, 2, 3];

#[test]
fn names_are_demangled_by_default() {
    let p = profile("demangled", &["--pmc", "SQ_WAVES", "SQ_INSTS_VALU"], &[]);
    assert_eq!(p.truth.len(), 8);
    p.assert_names_and_values(&DEMANGLED, &ALL);
    assert!(
        p.stderr()
            .contains("\n  demo::twice(unsigned int*, unsigned int) "),
        "the summary shows demangled names:\n{}",
        p.stderr()
    );
}

#[test]
fn mangled_kernels_keeps_the_symbols() {
    let args = ["--mangled-kernels", "--pmc", "SQ_WAVES", "SQ_INSTS_VALU"];
    let p = profile("mangled", &args, &[]);
    p.assert_names_and_values(&SYMBOLS, &ALL);
}

#[test]
fn truncate_kernels_keeps_base_names_and_merges_passes_by_them() {
    // Two passes: the merge pairs dispatches by (process, name, occurrence), and both scale
    // instances are named `scale`, so the k-th `scale` of one pass meets the k-th of the other.
    let input = "pmc: SQ_WAVES\npmc: SQ_INSTS_VALU\n";
    let p = profile(
        "truncated",
        &["--truncate-kernels", "-i", "@input.txt"],
        &[("input.txt", input)],
    );
    assert_eq!(p.truth.len(), 16, "two runs of 8 dispatches");
    let second_pid = &p.truth[8]["pid"];
    assert_ne!(&p.truth[0]["pid"], second_pid);
    let results = p.table("results.csv");
    let expected: Vec<&str> = ALL.iter().map(|&k| TRUNCATED[k]).collect();
    assert_eq!(column(&results, "KernelName"), expected);
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for row in &results {
        let first = p.truth_at(&row["BeginNs"], &row["EndNs"]);
        assert_eq!(row["KernelName"], display(&TRUNCATED, first));
        assert_eq!(row["SQ_WAVES"], total(first, "SQ_WAVES").to_string());
        let symbol = first["kernel"].as_str().expect("a kernel symbol");
        let n = seen.entry(symbol).or_default();
        let second = p
            .truth
            .iter()
            .filter(|t| &t["pid"] == second_pid && t["kernel"] == symbol)
            .nth(*n)
            .expect("the second pass ran the same kernels");
        *n += 1;
        let valu = total(second, "SQ_INSTS_VALU").to_string();
        assert_eq!(row["SQ_INSTS_VALU"], valu, "{row:?}");
    }
    // A .txt input's passes are where rocprofv3 puts them: pmc_N/<hostname>/.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for pass in ["pmc_1", "pmc_2"] {
        let collection = p.table(&format!("{pass}/{}/counter_collection.csv", host.trim()));
        assert_eq!(column(&collection, "Kernel_Name"), expected, "{pass}");
    }
}

#[test]
fn include_regex_selects_one_kernel_by_its_demangled_name() {
    let args = [
        "--kernel-include-regex",
        r"^void scale<float>\(float\*, float, unsigned int\)$",
        "--pmc",
        "SQ_WAVES",
        "SQ_INSTS_VALU",
    ];
    let p = profile("include-demangled", &args, &[]);
    assert_eq!(p.truth.len(), 8, "every dispatch ran");
    p.assert_names_and_values(&DEMANGLED, &[1, 1]);
}

#[test]
fn exclude_regex_drops_a_namespace_and_include_regex_sees_mangled_names_if_asked() {
    let args = [
        "--kernel-exclude-regex",
        "^demo::",
        "--pmc",
        "SQ_WAVES",
        "SQ_INSTS_VALU",
    ];
    let p = profile("exclude-namespace", &args, &[]);
    p.assert_names_and_values(&DEMANGLED, &[0, 1, 2, 0, 1, 2]);

    let args = [
        "--mangled-kernels",
        "--kernel-include-regex",
        "^_ZN4demo",
        "--pmc",
        "SQ_WAVES",
        "SQ_INSTS_VALU",
    ];
    let p = profile("include-mangled", &args, &[]);
    p.assert_names_and_values(&SYMBOLS, &[3, 3]);
}

#[test]
fn yaml_job_with_truncate_kernels_filters_on_the_truncated_name() {
    // As in rocprofv3, the filter sees the name as it will be recorded: `^scale$` matches
    // both template instances once names are truncated, and nothing otherwise.
    let job = "jobs:\n  - pmc: [SQ_WAVES, SQ_INSTS_VALU]\n    truncate_kernels: true\n    \
               kernel_include_regex: '^scale$'\n";
    let p = profile(
        "yaml-truncate",
        &["-i", "@input.yaml"],
        &[("input.yaml", job)],
    );
    p.assert_names_and_values(&TRUNCATED, &[1, 2, 1, 2]);
}

#[test]
fn iteration_ranges_count_launches_per_kernel_even_when_truncated_names_coincide() {
    // rocprofv3 counts launches per kernel, not per recorded name: the second launch of
    // scale<float> and of scale<unsigned> are both launch 2, though both are named `scale`.
    let args = [
        "--truncate-kernels",
        "--kernel-iteration-range",
        "[2]",
        "--pmc",
        "SQ_WAVES",
        "SQ_INSTS_VALU",
    ];
    let p = profile("iteration-truncated", &args, &[]);
    p.assert_names_and_values(&TRUNCATED, &[0, 1, 2, 3]);
    let second_iteration = p.truth[4]["start"].as_u64().expect("a start time");
    for row in p.table("results.csv") {
        let begin: u64 = row["BeginNs"].parse().expect("a timestamp");
        assert!(
            begin >= second_iteration,
            "{row:?} ran in the first iteration"
        );
    }
}
