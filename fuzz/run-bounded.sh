#!/usr/bin/env bash
# The bounded fuzz run that ctest counts (the `fuzz` test).
#
# Usage: run-bounded.sh FUZZ_BUILD_DIR RESULT_XML
#
# Configures (once) a MOSAIC_ENABLE_FUZZING build of this source tree with
# clang-22 in FUZZ_BUILD_DIR, builds mosaic-fuzz there, writes the seed
# corpus and dictionary from the tests, and fuzzes for MOSAIC_FUZZ_SECONDS.
# Writes one JUnit test case to RESULT_XML: passed, failed (a crash, an
# assertion, a sanitizer report, a hang or a leak, with libFuzzer's report
# and the input's path), or skipped, exiting 77 (ctest's skip code), where
# clang-22 or libFuzzer is missing or MOSAIC_FUZZ_SECONDS is unset or 0.
# .ci/run sets it; locally the sanitized build would otherwise recompile
# after every change on each scripts/test.sh.
set -uo pipefail

build_dir=$1
result_xml=$2
source_root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${MOSAIC_FUZZ_SECONDS:-0}
mkdir -p "$(dirname "$result_xml")"

xml_escape() {
  sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' \
      -e 's/[^[:print:]\t]/?/g'
}

# write_result STATUS MESSAGE [DETAILS_FILE]: STATUS is passed, failed or
# skipped.
write_result() {
  local status=$1 message details=""
  message=$(printf '%s' "$2" | xml_escape | sed 's/"/\&quot;/g')
  if [[ -n ${3:-} && -f $3 ]]; then
    details=$(tail -n 60 "$3" | xml_escape)
  fi
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo '<testsuites><testsuite name="fuzz" tests="1">'
    echo '<testcase classname="fuzz" name="mosaic-fuzz">'
    case $status in
      failed) echo "<failure message=\"$message\">$details</failure>" ;;
      skipped) echo "<skipped message=\"$message\"/>" ;;
      passed) echo "<system-out>$message
$details</system-out>" ;;
    esac
    echo '</testcase></testsuite></testsuites>'
  } > "$result_xml"
  echo "fuzz: $status: $2"
}

clang=$(command -v clang-22 || true)
clangxx=$(command -v clang++-22 || true)
fuzzer_lib=""
if [[ -n $clangxx ]]; then
  fuzzer_lib=$("$clangxx" -print-file-name=libclang_rt.fuzzer-x86_64.a)
fi
if [[ -z $clang || -z $clangxx || ! -f $fuzzer_lib ]]; then
  write_result skipped "clang-22 or libFuzzer (libclang-rt-22-dev) is not installed"
  exit 77
fi
if [[ $seconds == 0 ]]; then
  write_result skipped "MOSAIC_FUZZ_SECONDS is unset or 0 (.ci/run sets it)"
  exit 77
fi

log="$build_dir/build.log"
mkdir -p "$build_dir"
if [[ ! -f $build_dir/build.ninja ]]; then
  if ! cmake -G Ninja -S "$source_root" -B "$build_dir" \
      -DCMAKE_C_COMPILER="$clang" -DCMAKE_CXX_COMPILER="$clangxx" \
      -DMOSAIC_ENABLE_FUZZING=ON > "$log" 2>&1; then
    write_result failed "configuring the fuzzing build failed" "$log"
    exit 1
  fi
fi
echo "fuzz: building mosaic-fuzz in $build_dir"
if ! ninja -C "$build_dir" ${MOSAIC_FUZZ_JOBS:+-j "$MOSAIC_FUZZ_JOBS"} \
    mosaic-fuzz >> "$log" 2>&1; then
  write_result failed "building mosaic-fuzz failed" "$log"
  exit 1
fi

work="$build_dir/fuzz-run"
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
python3 "$source_root/fuzz/make-corpus.py" "$source_root" "$work/seeds" \
  "$work/mlir.dict" || { write_result failed "make-corpus.py failed"; exit 1; }

# One job (CI machines have 2 cores), a fixed seed, 10 s for any one input,
# and the report of the whole run in $work/fuzz.log.
echo "fuzz: fuzzing for ${seconds}s"
"$build_dir/bin/mosaic-fuzz" -max_total_time="$seconds" -seed=1 \
  -timeout=10 -rss_limit_mb=4096 -only_ascii=1 -dict="$work/mlir.dict" \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
  "$work/corpus" "$work/seeds" > "$work/fuzz.log" 2>&1
status=$?
stats=$(grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' "$work/fuzz.log" | tr '\n' ' ')
if [[ $status != 0 ]]; then
  artifacts=$(ls "$work/artifacts")
  write_result failed "mosaic-fuzz failed (exit $status); input: $work/artifacts/$artifacts" "$work/fuzz.log"
  exit 1
fi
write_result passed "${seconds}s, no crash: $stats" "$work/fuzz.log"
