#!/bin/sh
# make fuzz: builds cumulus-fuzz with libFuzzer, coverage and AddressSanitizer, then
# runs every target (or those named in FUZZ_TARGETS) for FUZZ_SECONDS each, starting
# from the kept corpus (Tools/Fuzz/Corpus/<target>, read only) and a working corpus
# under .build-fuzz/corpus/<target> that grows between runs. Prints one line per
# target (executions, coverage, corpus) and fails if any target found a crash; the
# crashing input is kept as .build-fuzz/artifacts/<target>-crash-*.
#
# FUZZ_RUNS=N makes each target run N executions instead of for a time (the full run,
# `make fuzz-full`, is a million each): a count holds on a busy machine where a time
# does not. FUZZ_SECONDS then only caps a target that is far slower than expected.
set -eu
seconds=${FUZZ_SECONDS:-60}
runs=${FUZZ_RUNS:-}
build=${FUZZ_BUILD:-.build-fuzz}
swift=${SWIFT:-swift}

# The toolchain's libFuzzer without its main(): cumulus-fuzz has its own, which
# picks the target and hands the rest of the arguments to LLVMFuzzerRunDriver.
swiftc=$(command -v swiftc)
runtime=$(ls "$(dirname "$(readlink -f "$swiftc")")"/../lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a 2>/dev/null | head -n 1)
if [ -z "$runtime" ]; then
  echo "fuzz: this Swift toolchain has no libclang_rt.fuzzer_no_main (needed for -sanitize-coverage)" >&2
  exit 1
fi

$swift build -c release --build-path "$build" --product cumulus-fuzz \
  -Xswiftc -sanitize=address \
  -Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table \
  -Xswiftc -DCUMULUS_FUZZ \
  -Xlinker "$runtime" -Xlinker -lstdc++
binary="$build/release/cumulus-fuzz"

targets=${FUZZ_TARGETS:-"api-request predicate schema change-token notification-token query-cursor replication-message log-frame"}
mkdir -p "$build/artifacts" "$build/logs"
failed=0
total=0
printf '%-20s %12s %10s %8s %8s %8s  %s\n' target executions "execs/s" cov ft corpus result
for target in $targets; do
  work="$build/corpus/$target"
  mkdir -p "$work"
  log="$build/logs/$target.log"
  # Leak checks off: the shared fuzz world lives for the whole process by design.
  # Swift's backtracer off: libFuzzer reports the crash, and the backtracer's own
  # stack reads trip AddressSanitizer.
  if [ -n "$runs" ]; then limit="-runs=$runs"; else limit="-runs=-1"; fi
  if ASAN_OPTIONS=detect_leaks=0 SWIFT_BACKTRACE=enable=no "$binary" "$target" -max_total_time="$seconds" "$limit" -print_final_stats=1 \
      -detect_leaks=0 -rss_limit_mb=4096 -timeout=20 -artifact_prefix="$build/artifacts/$target-" \
      "$work" "Tools/Fuzz/Corpus/$target" >"$log" 2>&1; then
    result=ok
  else
    result="CRASH (see $log)"
    failed=1
  fi
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  # A count asked for and not reached (the time cap came first) is not a full run.
  if [ -n "$runs" ] && [ "${executed:-0}" -lt "$runs" ] && [ "$result" = ok ]; then
    result="SHORT (${executed:-0} of $runs executions in ${seconds} s)"
    failed=1
  fi
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
  cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
  corpus=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
  total=$((total + ${executed:-0}))
  printf '%-20s %12s %10s %8s %8s %8s  %s\n' "$target" "${executed:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "$result"
done
if [ -n "$runs" ]; then
  echo "all targets: $total executions, $runs asked of each"
else
  echo "all targets: $total executions in ${seconds} s each"
fi
exit $failed
