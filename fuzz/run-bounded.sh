#!/usr/bin/env bash
# The bounded fuzz runs that ctest counts (the `fuzz` and `fuzz-emulator`
# tests).
#
# Usage: run-bounded.sh TARGET FUZZ_BUILD_DIR RESULT_XML [MAIN_BUILD_DIR]
#
# TARGET is mosaic-fuzz (the compiler, MLIR inputs) or mosaic-emulator-fuzz
# (the PTX emulator, PTX inputs; its seeds include PTX that nvcc and
# mosaic-compile of the main build in MAIN_BUILD_DIR wrote). Configures
# (once) a MOSAIC_ENABLE_FUZZING build of this source tree with clang-22 in
# FUZZ_BUILD_DIR, builds TARGET there, writes the seed corpus and dictionary
# from the tests, and fuzzes for MOSAIC_FUZZ_SECONDS (mosaic-fuzz) or
# MOSAIC_EMULATOR_FUZZ_SECONDS (mosaic-emulator-fuzz; half of
# MOSAIC_FUZZ_SECONDS when unset). Writes one JUnit test case to RESULT_XML:
# passed, failed (a crash, an assertion, a sanitizer report, a hang or a
# leak, with libFuzzer's report and the input's path), or skipped, exiting
# 77 (ctest's skip code), where clang-22 or libFuzzer is missing or the
# seconds are unset or 0. .ci/run sets MOSAIC_FUZZ_SECONDS; locally the
# sanitized build would otherwise recompile after every change on each
# scripts/test.sh.
set -uo pipefail

target=$1
build_dir=$2
result_xml=$3
main_build_dir=${4:-}
source_root=$(cd "$(dirname "$0")/.." && pwd)
case $target in
  mosaic-fuzz)
    test_name=fuzz
    seconds=${MOSAIC_FUZZ_SECONDS:-0}
    work="$build_dir/fuzz-run"
    make_corpus=("$source_root/fuzz/make-corpus.py" "$source_root"
                 "$work/seeds" "$work/fuzz.dict")
    # libFuzzer's default length limit: the largest seed.
    target_flags=()
    ;;
  mosaic-emulator-fuzz)
    test_name=fuzz-emulator
    seconds=${MOSAIC_EMULATOR_FUZZ_SECONDS:-$(( ${MOSAIC_FUZZ_SECONDS:-0} / 2 ))}
    work="$build_dir/emulator-fuzz-run"
    make_corpus=("$source_root/emulator/fuzz/make-corpus.py" "$source_root"
                 "$main_build_dir" "$work/seeds" "$work/fuzz.dict")
    # The seeds are at most 56 KiB; longer mutants only parse slower.
    target_flags=(-max_len=65536)
    ;;
  *)
    echo "run-bounded.sh: unknown target \`$target'" >&2
    exit 2
    ;;
esac
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
    echo "<testsuites><testsuite name=\"$test_name\" tests=\"1\">"
    echo "<testcase classname=\"$test_name\" name=\"$target\">"
    case $status in
      failed) echo "<failure message=\"$message\">$details</failure>" ;;
      skipped) echo "<skipped message=\"$message\"/>" ;;
      passed) echo "<system-out>$message
$details</system-out>" ;;
    esac
    echo '</testcase></testsuite></testsuites>'
  } > "$result_xml"
  echo "$test_name: $status: $2"
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
  write_result skipped "the fuzzing seconds are unset or 0 (.ci/run sets MOSAIC_FUZZ_SECONDS)"
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
echo "$test_name: building $target in $build_dir"
if ! ninja -C "$build_dir" ${MOSAIC_FUZZ_JOBS:+-j "$MOSAIC_FUZZ_JOBS"} \
    "$target" >> "$log" 2>&1; then
  write_result failed "building $target failed" "$log"
  exit 1
fi

rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
python3 "${make_corpus[@]}" || {
  write_result failed "$(basename "$(dirname "${make_corpus[0]}")")/make-corpus.py failed"
  exit 1
}

# One job (CI machines have 2 cores), a fixed seed, 10 s for any one input,
# and the report of the whole run in $work/fuzz.log.
echo "$test_name: fuzzing for ${seconds}s"
"$build_dir/bin/$target" -max_total_time="$seconds" -seed=1 \
  -timeout=10 -rss_limit_mb=4096 -only_ascii=1 -dict="$work/fuzz.dict" \
  "${target_flags[@]}" -artifact_prefix="$work/artifacts/" \
  -print_final_stats=1 "$work/corpus" "$work/seeds" > "$work/fuzz.log" 2>&1
status=$?
stats=$(grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' "$work/fuzz.log" | tr '\n' ' ')
if [[ $status != 0 ]]; then
  artifacts=$(ls "$work/artifacts")
  write_result failed "$target failed (exit $status); input: $work/artifacts/$artifacts" "$work/fuzz.log"
  exit 1
fi
write_result passed "${seconds}s, no crash: $stats" "$work/fuzz.log"
