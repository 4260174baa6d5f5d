#!/bin/sh
# Builds the libFuzzer targets of fuzz/ and runs each for SECONDS seconds.
#
#   fuzz/run.sh SECONDS [TARGET...]
#
# Each target first replays fuzz/regressions/<target>/* (inputs that once failed), then fuzzes
# from the seeds in fuzz/corpus/<target>/ plus the inputs earlier runs found (kept under the
# target directory), with the tokens of fuzz/dict/<target>.dict when there is one. A crash
# leaves its input in <target dir>/fuzz/artifacts/<target>/ and makes the script exit 1; add
# that file to fuzz/regressions/<target>/ with the fix.
#
# Only the stable toolchain is needed: the coverage instrumentation cargo-fuzz would add is
# passed as plain -C flags. CARGO_TARGET_DIR defaults to target-fuzz/ at the workspace root.
set -eu

usage="usage: fuzz/run.sh SECONDS [expression|extra_counters|raw_records|plan_file|input_txt|input_yaml|input_json...]"
seconds=${1:?$usage}
shift
case $seconds in '' | *[!0-9]*) echo "$usage" >&2; exit 2 ;; esac
targets=${*:-expression extra_counters raw_records plan_file input_txt input_yaml input_json}

here=$(cd "$(dirname "$0")" && pwd)
target_dir=${CARGO_TARGET_DIR:-$here/../target-fuzz}
triple=$(rustc -vV | sed -n 's/^host: //p')

# What cargo-fuzz passes (without a sanitizer, which needs nightly): edge and comparison
# coverage for libFuzzer, debug assertions and overflow checks on.
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
export RUSTFLAGS

# With an explicit --target the flags reach only the target code, not build scripts.
cargo build --release --manifest-path "$here/Cargo.toml" --target "$triple" \
    --target-dir "$target_dir" --bins

status=0
for t in $targets; do
    bin=$target_dir/$triple/release/$t
    [ -x "$bin" ] || { echo "fuzz/run.sh: no target $t" >&2; exit 2; }
    work=$target_dir/fuzz/corpus/$t
    artifacts=$target_dir/fuzz/artifacts/$t
    mkdir -p "$work" "$artifacts" "$here/corpus/$t"
    if [ -d "$here/regressions/$t" ] && [ -n "$(ls -A "$here/regressions/$t")" ]; then
        echo "== $t: regressions"
        "$bin" "$here/regressions/$t"/* >/dev/null 2>&1 || {
            echo "fuzz/run.sh: $t fails on a regression input (fuzz/regressions/$t)" >&2
            status=1
            continue
        }
    fi
    dict=
    [ -f "$here/dict/$t.dict" ] && dict=-dict=$here/dict/$t.dict
    echo "== $t: fuzzing for $seconds s"
    if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        ${dict:+"$dict"} -artifact_prefix="$artifacts/" "$work" "$here/corpus/$t" \
        2>"$target_dir/fuzz/$t.log"; then
        echo "fuzz/run.sh: $t failed; input in $artifacts/, log in $target_dir/fuzz/$t.log" >&2
        tail -n 40 "$target_dir/fuzz/$t.log" >&2
        status=1
    else
        grep -E 'stat::number_of_executed_units|stat::new_units_added' "$target_dir/fuzz/$t.log" \
            | sed "s/^/$t: /"
    fi
done
exit $status
