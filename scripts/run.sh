#!/usr/bin/env bash
# GPU bundle runner: needs an NVIDIA driver, no Rust. Made by `cargo xtask bundle`.
#
#   ./run.sh test [OUT]        all tests, GPU ones included (--include-ignored);
#                              writes OUT/tests.log, OUT/cases.jsonl, OUT/verify.json
#   ./run.sh bench [OUT]       the Criterion benches (cargo bench's executable)
#   ./run.sh report [ARGS]     the bandwidth report (see ./report --help)
#   ./run.sh sanitize [OUT]    GPU tests under compute-sanitizer memcheck and
#                              initcheck (huge-n tests skipped); OUT/sanitizer.json
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-help}
shift || true

run_tests() { # $1 = out dir, rest = extra args for every test binary
    local out=$1; shift
    local rc=0
    for t in "$here"/tests/*; do
        echo "=== $(basename "$t")"
        (cd "$here" && "$t" --include-ignored "$@") || rc=1
    done
    return $rc
}

case "$cmd" in
test)
    out=${1:-$here/out}; mkdir -p "$out"
    rm -f "$out/cases.jsonl"
    export GPUKERN_CASES="$out/cases.jsonl"
    run_tests "$out" 2>&1 | tee "$out/tests.log"
    rc=${PIPESTATUS[0]}
    "$here/report" verify-record --cases "$out/cases.jsonl" --log "$out/tests.log" \
        --command "./run.sh test (each test binary with --include-ignored)" --out "$out/verify.json" || rc=1
    exit $rc
    ;;
bench)
    out=${1:-$here/out}; mkdir -p "$out"
    rc=0
    for b in "$here"/bench/*; do
        (cd "$out" && "$b" --bench) 2>&1 | tee -a "$out/bench.log" || rc=1
    done
    exit $rc
    ;;
report)
    exec "$here/report" "$@"
    ;;
sanitize)
    out=${1:-$here/out}; mkdir -p "$out"
    gpu_tests=$(ls "$here"/tests/gpukern-gpu_add "$here"/tests/gpukern-errors 2>/dev/null)
    declare -A errors
    for tool in memcheck initcheck; do
        extra=()
        [ "$tool" = memcheck ] && extra=(--leak-check full --padding 512)
        total=0
        for t in $gpu_tests; do
            log="$out/sanitizer-$tool-$(basename "$t").log"
            # Huge-n cases take minutes under instrumentation, and the fault test
            # faults on purpose; both are skipped here and run in `test`.
            compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 1 --print-limit 20 \
                "$t" --include-ignored --test-threads 1 --skip huge_n --skip kernel_fault --skip alloc_launch_free >"$log" 2>&1
            n=$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$log" | awk '{s+=$3} END {print s+0}')
            total=$((total + n))
            grep -E 'ERROR SUMMARY|test result' "$log" | sed "s|^|$tool $(basename "$t"): |"
        done
        errors[$tool]=$total
    done
    printf '{"memcheck_errors": %s, "initcheck_errors": %s, "command": "compute-sanitizer --tool memcheck --leak-check full --padding 512 --error-exitcode 1 / --tool initcheck, each GPU test binary with --include-ignored --test-threads 1 --skip huge_n --skip kernel_fault --skip alloc_launch_free"}\n' \
        "${errors[memcheck]}" "${errors[initcheck]}" | tee "$out/sanitizer.json"
    [ "${errors[memcheck]}" = 0 ] && [ "${errors[initcheck]}" = 0 ]
    ;;
*)
    sed -n '2,12p' "$0"
    ;;
esac
