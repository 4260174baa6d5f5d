//! `results.html` opened in a real browser: Debian's `chromium` renders the report of the
//! demo's profile headless; the rendered document holds every kernel and every counter value
//! of the profile, and the report fetches nothing. A screenshot is left in the test's output
//! directory.

#[path = "sim_support/mod.rs"]
mod sim_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sim_support::{artifact, query, read_ground_truth, read_table, sim_env, total};

/// The counters profiled: basic ones compared with the ground truth, and the derived ones the
/// roofline and the memory chart read.
const COUNTERS: [&str; 9] = [
    "SQ_WAVES",
    "GRBM_COUNT",
    "SQ_INSTS_VALU_FMA_F32",
    "SQ_INSTS_VALU_ADD_F32",
    "SQ_INSTS_VALU_MUL_F32",
    "FETCH_SIZE",
    "WRITE_SIZE",
    "TCC_HIT_sum",
    "TCC_MISS_sum",
];

const BASIC: [&str; 5] = [
    "SQ_WAVES",
    "GRBM_COUNT",
    "SQ_INSTS_VALU_FMA_F32",
    "SQ_INSTS_VALU_ADD_F32",
    "SQ_INSTS_VALU_MUL_F32",
];

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("html-report-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// `n` with grouped thousands, as the report prints counts.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Nanoseconds as the report prints durations.
fn duration(ns: u64) -> String {
    let ns = ns as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// Runs `rtl-pmc ARGS -d DIR/out -- rtl-demo-app APP_ARGS` on a simulated MI300X with `env`,
/// asserts that it succeeded and returns the output directory.
fn profile(dir: &Path, args: &[&str], app_args: &[&str], env: &[(&str, &str)]) -> PathBuf {
    let out = dir.join("out");
    let output = Command::new(artifact("rtl-pmc"))
        .current_dir(dir)
        .args(["--arch", "gfx942", "-d"])
        .arg(&out)
        .args(args)
        .arg("--")
        .arg(artifact("rtl-demo-app"))
        .args(app_args)
        .envs(sim_env("gfx942"))
        .envs(env.iter().copied())
        .output()
        .expect("rtl-pmc starts");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// Runs Debian's chromium headless on `page` with `extra` arguments (a fresh profile each time)
/// and returns its standard output.
fn chromium(dir: &Path, page: &Path, extra: &[String]) -> String {
    let profile = dir.join(format!("chromium-profile-{}", extra.len()));
    let _ = std::fs::remove_dir_all(&profile);
    let output = Command::new("timeout")
        .arg("120")
        .arg("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (.ci/setup installs Debian's chromium)");
    assert!(
        output.status.success(),
        "chromium failed: {:?}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("the DOM is UTF-8")
}

/// The part of `dom` from `start` to the next `end` after it.
fn between<'a>(dom: &'a str, start: &str, end: &str) -> &'a str {
    let from = dom
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in the rendered report"));
    let to = dom[from..]
        .find(end)
        .unwrap_or_else(|| panic!("no {end} after {start}"));
    &dom[from..from + to + end.len()]
}

#[test]
fn the_demos_report_renders_in_chromium_with_every_kernel_and_value() {
    let dir = scratch("demo");
    let truth_path = dir.join("truth.jsonl");
    let mut args = vec!["-f", "html", "csv", "--pmc"];
    args.extend(COUNTERS);
    let out = profile(
        &dir,
        &args,
        &[],
        &[
            ("RTL_SIM_GROUND_TRUTH", truth_path.to_str().unwrap()),
            ("RTL_SIM_GROUND_TRUTH_COUNTERS", &BASIC.join(",")),
        ],
    );
    let page = out.join("results.html");
    let html = std::fs::read_to_string(&page).expect("results.html written");

    // Self-contained: no script, no stylesheet, image or font to fetch.
    for reference in [
        "<script", "<link", "<img", "src=", "@import", "http://", "https://",
    ] {
        assert!(!html.contains(reference), "results.html holds {reference}");
    }
    assert!(html.split("url(").skip(1).all(|rest| rest.starts_with('#')));

    // Each kernel's totals from results.csv, which the ground truth backs for basic counters.
    let rows = read_table(&out.join("results.csv"));
    // The ground truth of the pass whose timestamps the merged rows carry.
    let times: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r["BeginNs"].clone(), r["EndNs"].clone()))
        .collect();
    let truth: Vec<serde_json::Value> = read_ground_truth(&truth_path)
        .into_iter()
        .filter(|t| times.contains(&(t["start"].to_string(), t["end"].to_string())))
        .collect();
    assert_eq!(rows.len(), truth.len());
    let mut kernels: BTreeMap<String, (u64, u64, BTreeMap<&str, f64>)> = BTreeMap::new();
    for row in &rows {
        let kernel = kernels.entry(row["KernelName"].clone()).or_default();
        let begin: u64 = row["BeginNs"].parse().unwrap();
        let end: u64 = row["EndNs"].parse().unwrap();
        kernel.0 += 1;
        kernel.1 += end - begin;
        for counter in COUNTERS {
            *kernel.2.entry(counter).or_default() += row[counter].parse::<f64>().unwrap();
        }
    }
    for (name, (_, _, values)) in &kernels {
        for counter in BASIC {
            let expected: u64 = truth
                .iter()
                .filter(|t| t["kernel"].as_str() == Some(name.as_str()))
                .map(|t| total(t, counter))
                .sum();
            assert_eq!(values[counter], expected as f64, "{name} {counter}");
        }
    }
    assert_eq!(kernels.len(), 4);

    let dom = chromium(&dir, &page, &["--dump-dom".to_string()]);
    let top = between(&dom, "<h2>Top kernels by time</h2>", "</table>");
    let mut points = 0;
    for (name, (calls, ns, values)) in &kernels {
        assert!(
            top.contains(&format!(">{name}</a>")),
            "{name} in the top kernels"
        );
        let section = between(&dom, &format!(r#"data-kernel="{name}""#), "</section>");
        assert!(
            section.contains(&format!(
                "{} call{} · {} total",
                grouped(*calls),
                if *calls == 1 { "" } else { "s" },
                duration(*ns)
            )),
            "{section}"
        );
        for counter in COUNTERS {
            let v = values[counter];
            assert!(v.fract() == 0.0 && v < 1e6, "{name} {counter} = {v}");
            let row = between(
                section,
                &format!(r#"<tr data-counter="{counter}">"#),
                "</tr>",
            );
            assert_eq!(
                row,
                format!(
                    r#"<tr data-counter="{counter}"><td class="name">{counter}</td><td class="num">{}</td><td class="muted">measured</td></tr>"#,
                    grouped(v as u64)
                ),
                "{name}"
            );
        }
        // The memory chart shows the L2 cache's counters and hit rate.
        let hits = values["TCC_HIT_sum"];
        let all = hits + values["TCC_MISS_sum"];
        assert!(section.contains(&format!(
            "<title>TCC_HIT_sum</title>HIT: {}<",
            grouped(hits as u64)
        )));
        if all > 0.0 {
            assert!(section.contains("hit rate: "), "{section}");
        }
        // A roofline point where the kernel did floating-point work and moved bytes.
        let operations = 128.0 * values["SQ_INSTS_VALU_FMA_F32"]
            + 64.0 * (values["SQ_INSTS_VALU_ADD_F32"] + values["SQ_INSTS_VALU_MUL_F32"]);
        let bytes = 1024.0 * (values["FETCH_SIZE"] + values["WRITE_SIZE"]);
        if operations > 0.0 && bytes > 0.0 {
            points += 1;
            assert!(
                dom.contains(&format!("<title>{name}: ")),
                "{name} has a roofline point"
            );
        }
    }
    assert_eq!(dom.matches(r#"<g class="point">"#).count(), points);
    assert!(points > 0);
    for ceiling in [
        "MFMA FP16 1.307 P FLOP/s",
        "FP32 163.4 T FLOP/s",
        "FP64 81.72 T FLOP/s",
        "HBM 5.3 T B/s",
        "L2 34.41 T B/s",
        "LDS 81.72 T B/s",
    ] {
        assert!(dom.contains(ceiling), "the roofline's {ceiling} ceiling");
    }

    // What a laptop screen shows first, and the whole report.
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html-report-screenshots");
    let _ = std::fs::create_dir_all(&shots);
    for (file, size) in [("laptop.png", "1440,900"), ("full.png", "1440,2600")] {
        let shot = shots.join(file);
        let _ = std::fs::remove_file(&shot);
        chromium(
            &dir,
            &page,
            &[
                format!("--screenshot={}", shot.display()),
                format!("--window-size={size}"),
            ],
        );
        let png = std::fs::read(&shot).expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{file}");
    }
}

/// A number as the report prints it (`40,320`, `87.35`, `1.235 M`), read back.
fn shown_number(text: &str) -> f64 {
    let mut parts = text.split(' ');
    let number: f64 = parts
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("{text} is not a number"));
    let scale = match parts.next() {
        None => 1.0,
        Some("M") => 1e6,
        Some("G") => 1e9,
        Some("T") => 1e12,
        Some("P") => 1e15,
        Some(other) => panic!("unit {other} in {text}"),
    };
    number * scale
}

/// Two counter groups rotating every 3 dispatches over the demo's 4 kernels, 6 iterations:
/// every kernel's counters are estimated from some of its dispatches. The rendered report shows
/// each estimate as its total ± half its 95% interval (to the 4 digits printed), with the
/// dispatches measured and whether it is reliable, as `results.db`'s `rtl_estimate` has them.
#[test]
fn estimated_counters_show_their_interval_in_the_rendered_report() {
    let dir = scratch("estimates");
    let input = dir.join("groups.yaml");
    std::fs::write(
        &input,
        "jobs:\n  - pmc_groups: [[SQ_WAVES], [SQ_INSTS_VALU]]\n    pmc_group_interval: 3\n",
    )
    .unwrap();
    let out = profile(
        &dir,
        &["-i", input.to_str().unwrap(), "-f", "html", "rocpd"],
        &["--iterations", "6"],
        &[("RTL_SIM_VARIATION", "5")],
    );
    let conn = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let estimates = query(
        &conn,
        "SELECT kernel, counter, dispatches, sampled, total, high95, reliable
         FROM rtl_estimate WHERE method = 'dispatches' ORDER BY kernel, counter",
    );
    // 4 kernels × 2 counters, each measured on some but not all of 6 dispatches.
    assert_eq!(estimates.len(), 8, "{estimates:?}");

    let dom = chromium(&dir, &out.join("results.html"), &["--dump-dom".to_string()]);
    for row in &estimates {
        let [kernel, counter, dispatches, sampled, total, high, reliable] = &row[..] else {
            panic!("{row:?}")
        };
        let number = |text: &str| text.parse::<f64>().unwrap();
        let (total, reliable) = (number(total), reliable == "1");
        let high = (high != "NULL").then(|| number(high));
        assert!(number(sampled) < number(dispatches) && number(sampled) > 0.0);
        let section = between(&dom, &format!(r#"data-kernel="{kernel}""#), "</section>");
        let row = between(
            section,
            &format!(r#"<tr data-counter="{counter}">"#),
            "</tr>",
        );
        let how = format!(
            r#"<td class="estimate">estimated from {sampled} of {dispatches} dispatches (95% interval){}</td>"#,
            if reliable { "" } else { ", unreliable" }
        );
        assert!(row.contains(&how), "{row}\n{how}");
        let cell = between(row, r#"<td class="num estimate">"#, "</td>");
        let text = &cell[r#"<td class="num estimate">"#.len()..cell.len() - "</td>".len()];
        let (value, half) = text.split_once(" ± ").unwrap_or_else(|| panic!("{text}"));
        let close = |shown: f64, exact: f64| (shown - exact).abs() <= 5e-4 * exact.abs() + 0.5;
        assert!(
            close(shown_number(value), total),
            "{kernel} {counter}: {text} vs {total}"
        );
        match high {
            Some(high) => assert!(
                close(shown_number(half), high - total),
                "{kernel} {counter}: {text} vs ± {}",
                high - total
            ),
            None => assert_eq!(half, "?"),
        }
    }
}

/// `rtl-pmc analyze DIR --html` on a profile of the demo with every vector FLOP counter: the
/// rendered report holds each kernel, its counters' totals, and its System Speed-of-Light from
/// the panel definitions with the values `analyze --csv` prints (to the 4 digits shown).
#[test]
fn analyze_writes_the_report_with_the_panels_speed_of_light() {
    let dir = scratch("analyze");
    let mut args = vec!["-f", "csv", "--pmc"];
    let flops: Vec<String> = ["F16", "F32", "F64"]
        .iter()
        .flat_map(|t| {
            ["ADD", "MUL", "TRANS", "FMA"]
                .iter()
                .map(move |op| format!("SQ_INSTS_VALU_{op}_{t}"))
        })
        .collect();
    args.extend(flops.iter().map(String::as_str));
    args.extend(["FETCH_SIZE", "WRITE_SIZE"]);
    let out = profile(&dir, &args, &[], &[]);
    let page = dir.join("analysis.html");
    let output = Command::new(artifact("rtl-pmc"))
        .arg("analyze")
        .arg(&out)
        .args(["--block", "2.1", "--csv", "--html"])
        .arg(&page)
        .output()
        .expect("rtl-pmc analyze starts");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let csv = String::from_utf8(output.stdout).unwrap();
    let cell = |kernel: &str, column: &str| -> f64 {
        let prefix = format!("{kernel},2.1.0,VALU FLOPs,{column},");
        csv.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{csv}"))
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let rows = read_table(&out.join("results.csv"));
    let dom = chromium(&dir, &page, &["--dump-dom".to_string()]);
    let mut kernels: Vec<&str> = rows.iter().map(|r| r["KernelName"].as_str()).collect();
    kernels.sort_unstable();
    kernels.dedup();
    assert_eq!(kernels.len(), 4);
    for kernel in kernels {
        let section = between(&dom, &format!(r#"data-kernel="{kernel}""#), "</section>");
        for counter in &flops {
            let total: f64 = rows
                .iter()
                .filter(|r| r["KernelName"] == kernel)
                .map(|r| r[counter.as_str()].parse::<f64>().unwrap())
                .sum();
            let row = between(
                section,
                &format!(r#"<tr data-counter="{counter}">"#),
                "</tr>",
            );
            assert!(
                row.contains(&format!(
                    r#"<td class="num">{}</td>"#,
                    grouped(total as u64)
                )),
                "{kernel} {counter} = {total}: {row}"
            );
        }
        let sol = between(section, r#"<tr data-metric="2.1.0">"#, "</tr>");
        let numbers: Vec<&str> = sol
            .split(r#"<td class="num">"#)
            .skip(1)
            .map(|c| c.split('<').next().unwrap())
            .collect();
        // Avg, Unit, Peak, Pct of Peak.
        assert_eq!(numbers[1], "GFLOP/s", "{sol}");
        for (shown, column) in [
            (numbers[0], "Avg"),
            (numbers[2], "Peak"),
            (numbers[3], "Pct of Peak"),
        ] {
            let exact = cell(kernel, column);
            assert!(
                (shown_number(shown) - exact).abs() <= 5e-4 * exact.abs() + 5e-4,
                "{kernel} {column}: {shown} vs {exact}"
            );
        }
    }
    assert_eq!(dom.matches(r#"<g class="point">"#).count(), 4);
}
