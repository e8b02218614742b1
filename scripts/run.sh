#!/usr/bin/env bash
# GPU bundle runner: needs an NVIDIA driver, no Rust. Made by `cargo xtask bundle`.
#
#   ./run.sh test [OUT]        all tests, GPU ones included (--include-ignored),
#                              but the exhaustive math sweep (below): fits one
#                              10-minute device call on an H100; writes
#                              OUT/tests.log, OUT/cases.jsonl, OUT/verify.json
#   ./run.sh exhaustive [OUT]  the exhaustive math sweep (gpu_math's
#                              math_exhaustive: every f32 input of every
#                              function, minutes); OUT/exhaustive.log,
#                              OUT/exhaustive-cases.jsonl, OUT/verify-exhaustive.json
#   ./run.sh bench [OUT]       the Criterion benches (cargo bench's executable)
#   ./run.sh examples [OUT]    every example (the cudarc one included); OUT/examples.log
#   ./run.sh report [ARGS]     the bandwidth report (see ./report --help)
#   ./run.sh sanitize [OUT] [TOOLS]
#                              GPU tests under compute-sanitizer (TOOLS: a comma
#                              list of memcheck, initcheck, racecheck, synccheck;
#                              default all); OUT/sanitizer.json
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-help}
shift || true

# The tests `test` leaves to `exhaustive`, as libtest arguments: each name
# here runs only there (the verify records list both sides).
exhaustive_skips=(--skip math_exhaustive)

# The binaries that need most of the device's memory (their huge-n cases):
# `test` runs them one after the other in a lane of their own, beside a lane
# with every other binary, so that all of them fit one 10-minute call.
huge_lane=" gpukern-gpu_huge gpukern-gpu_ops "

run_tests() { # $1 = out dir, $2 = lane (huge or rest), rest = extra args for every test binary
    local out=$1 lane=$2; shift 2
    local rc=0
    for t in "$here"/tests/*; do
        local name; name=$(basename "$t")
        local in_huge=no
        case "$huge_lane" in *" $name "*) in_huge=yes ;; esac
        case "$lane:$in_huge" in huge:no | rest:yes) continue ;; esac
        # Compile-fail tests (trybuild runs cargo), the proc-macro crate's
        # tests (linked to rustc's libstd) and xtask's (they read the
        # repository's sources) need a Rust checkout: CI runs them.
        case "$name" in
        gpukern-compile_fail | gpukern-device-printf_checks | gpukern-macros-* | xtask-*)
            echo "=== $name: left to CI (needs cargo, rustc or the sources)"
            continue ;;
        esac
        echo "=== $name"
        # The device crate's ignored tests are CPU-only exhaustive sweeps (hours
        # here); its GPU counterparts are gpu_math and gpu_exhaustive.
        case "$name" in
        gpukern-device-*) (cd "$here" && "$t" "$@") || rc=1 ;;
        *) (cd "$here" && "$t" --include-ignored "$@") || rc=1 ;;
        esac
    done
    return $rc
}

case "$cmd" in
test)
    out=${1:-$here/out}; mkdir -p "$out"
    rm -f "$out/cases.jsonl" "$out/cases-huge.jsonl" "$out/cases-rest.jsonl"
    # Two lanes at once (see huge_lane), each with its own log and cases
    # file, joined afterwards: tests.log has each binary's output in one piece.
    (GPUKERN_CASES="$out/cases-huge.jsonl" run_tests "$out" huge "${exhaustive_skips[@]}" > "$out/tests-huge.log" 2>&1) &
    huge=$!
    GPUKERN_CASES="$out/cases-rest.jsonl" run_tests "$out" rest "${exhaustive_skips[@]}" 2>&1 | tee "$out/tests-rest.log"
    rc=${PIPESTATUS[0]}
    wait $huge || rc=1
    cat "$out/tests-huge.log"
    cat "$out/tests-rest.log" "$out/tests-huge.log" > "$out/tests.log"
    cat "$out/cases-rest.jsonl" "$out/cases-huge.jsonl" > "$out/cases.jsonl" 2>/dev/null
    rm -f "$out/tests-rest.log" "$out/tests-huge.log" "$out/cases-rest.jsonl" "$out/cases-huge.jsonl"
    "$here/report" verify-record --cases "$out/cases.jsonl" --log "$out/tests.log" \
        --command "./run.sh test (each test binary with --include-ignored ${exhaustive_skips[*]}; those run in ./run.sh exhaustive; gpu_huge and gpu_ops in a lane beside the others)" \
        --out "$out/verify.json" || rc=1
    exit $rc
    ;;
exhaustive)
    out=${1:-$here/out}; mkdir -p "$out"
    rm -f "$out/exhaustive-cases.jsonl"
    export GPUKERN_CASES="$out/exhaustive-cases.jsonl"
    # Only the names `test` skips, each in the binary that has it.
    names=()
    for ((i = 1; i < ${#exhaustive_skips[@]}; i += 2)); do names+=("${exhaustive_skips[i]}"); done
    { echo "=== gpukern-gpu_math"
      cd "$here" && "$here/tests/gpukern-gpu_math" --include-ignored --exact "${names[@]}"; } 2>&1 | tee "$out/exhaustive.log"
    rc=${PIPESTATUS[0]}
    "$here/report" verify-record --cases "$out/exhaustive-cases.jsonl" --log "$out/exhaustive.log" \
        --command "./run.sh exhaustive (gpukern-gpu_math --include-ignored --exact ${names[*]}: the tests ./run.sh test skips)" \
        --out "$out/verify-exhaustive.json" || rc=1
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
examples)
    out=${1:-$here/out}; mkdir -p "$out"
    rm -f "$out/examples.log"
    rc=0
    for e in "$here"/examples/*; do
        echo "=== $(basename "$e")" | tee -a "$out/examples.log"
        (cd "$here" && "$e") 2>&1 | tee -a "$out/examples.log"
        [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    done
    exit $rc
    ;;
sanitize)
    # compute-sanitizer over the GPU tests: memcheck and initcheck on every GPU
    # test binary; racecheck and synccheck on the shared-memory kernels (the
    # seed-003 studies). Huge-n cases, the 4096^3 product, the deliberate fault
    # and the leak loop are skipped (hours under instrumentation, or faulting on
    # purpose); they run in `test`. Each tool gets a time limit; a timeout is
    # recorded as incomplete, never as clean.
    out=${1:-$here/out}; mkdir -p "$out"
    tools=${2:-memcheck,initcheck,racecheck,synccheck}
    export GPUKERN_SANITIZE=1
    skips=(--skip huge_n --skip kernel_fault --skip faulting_user_kernel --skip alloc_launch_free --skip concurrent_streams --skip math_exhaustive --skip device_assert --skip reset_is_atomic --skip correctly_rounded_for_every_pair)
    # Provenance: which GPU, driver, commit and PTX the record belongs to.
    commit=$(grep -o '"git_commit": *"[0-9a-f]*"' "$here/manifest.json" 2>/dev/null | grep -o '[0-9a-f]\{40\}')
    ptx=$(sha256sum "$here/kernels_gpu.ptx" 2>/dev/null | cut -d' ' -f1)
    ptx90=$(sha256sum "$here/kernels_gpu_sm90.ptx" 2>/dev/null | cut -d' ' -f1)
    smi=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0 2>/dev/null)
    json="{\"gpu\": \"${smi%%,*}\", \"driver\": \"${smi##*, }\", \"git_commit\": \"$commit\", \"ptx_sha256\": \"$ptx\", \"ptx_sm90_sha256\": \"$ptx90\", "
    sep=""
    rc=0
    run_tool() { # tool, time limit, binaries, extra sanitizer args...
        # SANITIZE_LIMIT overrides the per-binary time limit (parallel runs share the GPU).
        local tool=$1 limit=${SANITIZE_LIMIT:-$2} bins=$3; shift 3
        case ",$tools," in *",$tool,"*) ;; *) return 0 ;; esac
        # SANITIZE_ONLY="bin bin": run only these binaries (to split a long run
        # over several calls; the record then lists what ran).
        if [ -n "${SANITIZE_ONLY:-}" ]; then
            local keep=""
            for t in $bins; do case " $SANITIZE_ONLY " in *" $t "*) keep="$keep $t" ;; esac; done
            bins=${keep# }
            [ -n "$bins" ] || return 0
        fi
        local errors=0 status=complete
        for t in $bins; do
            [ -x "$here/tests/$t" ] || continue
            log="$out/sanitizer-$tool-$t.log"
            # The error tests provoke failing API calls on purpose (out of memory,
            # invalid PTX, missing kernel); memcheck would count those as errors.
            api=()
            # The reset races (gpu_safety, the example's reset test) see the
            # driver refuse calls on a context being reset, on purpose too.
            case "$t" in gpukern-errors|gpukern-gpu_safety|custom-kernels-app-gpu|custom-kernels-app-typed|custom-kernels-app-graph|custom-kernels-app-reset) api=(--report-api-errors no) ;; esac
            # The reset races free nothing a reset destroyed and leak, on
            # purpose, pinned memory a copy may still write: no leak check there.
            targs=("$@")
            case "$t" in gpukern-gpu_safety|custom-kernels-app-reset) targs=("${targs[@]/--leak-check/}"); targs=("${targs[@]/full/}") ;; esac
            timeout "$limit" compute-sanitizer --tool "$tool" ${targs[@]} "${api[@]}" --error-exitcode 1 --print-limit 20 \
                "$here/tests/$t" --include-ignored --test-threads 1 "${skips[@]}" >"$log" 2>&1
            code=$?
            [ $code = 124 ] && status=timeout
            # memcheck/initcheck/synccheck: "ERROR SUMMARY: N errors";
            # racecheck: "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
            # (Not the "N errors were not printed" line, which repeats a part of the count.)
            n=$(grep -Eo 'ERROR SUMMARY: [0-9]+ errors?$|\([0-9]+ errors' "$log" | grep -Eo '[0-9]+' | awk '{s+=$1} END {print s+0}')
            grep -qE 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" || status=no-summary
            grep -q "test result: ok" "$log" || status=tests-failed
            errors=$((errors + n))
            echo "$tool $t: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1) ($(grep -E '^test result' "$log" | tail -1)) exit=$code"
        done
        [ "$errors" = 0 ] && [ "$status" = complete ] || rc=1
        json+="$sep\"$tool\": {\"errors\": $errors, \"status\": \"$status\", \"binaries\": \"$bins\", \"args\": \"$*\", \"note\": \"${TOOL_NOTE:-}\"}"
        sep=", "
    }
    # racecheck and synccheck: the kernels with shared memory and barriers (the
    # seed-003 studies; the bulk-copy kernels with their mbarriers, in gpu_hopper; the block collectives, in gpu_block;
    # the norms' block reductions, in gpu_norms; their PDL twins, chains and
    # graphs, in gpu_norms_pdl).
    # gpu_exhaustive: its activation tests (2^16 inputs, the converged fallback's
    # vote); the 2^32-pair tests are skipped above.
    run_tool memcheck 270 "gpukern-gpu_add gpukern-gpu_studies gpukern-errors gpukern-foreign gpukern-gpu_cudarc_order gpukern-gpu_safety custom-kernels-app-reset gpukern-gpu_glu gpukern-gpu_pipeline gpukern-gpu_hopper gpukern-gpu_ops gpukern-gpu_block gpukern-gpu_math gpukern-gpu_pdl gpukern-gpu_norms gpukern-gpu_norms_pdl gpukern-gpu_plan gpukern-gpu_order gpukern-gpu_copies gpukern-gpu_exhaustive custom-kernels-app-gpu custom-kernels-app-typed custom-kernels-app-pdl custom-kernels-app-graph" --leak-check full --padding 512
    # initcheck does not see the global writes of the bulk-copy engine: every
    # byte a cp.async.bulk shared->global store wrote reads as uninitialized to it.
    export GPUKERN_NO_BULK_STORE=1
    TOOL_NOTE="the add_*_bulk_st kernels (written back by cp.async.bulk) are left out: initcheck does not track the copy engine's global writes" \
        run_tool initcheck 110 "gpukern-gpu_add gpukern-gpu_studies gpukern-gpu_hopper gpukern-gpu_ops custom-kernels-app-gpu"
    unset GPUKERN_NO_BULK_STORE
    run_tool racecheck 110 "gpukern-gpu_pipeline gpukern-gpu_studies gpukern-gpu_hopper gpukern-gpu_block gpukern-gpu_pdl gpukern-gpu_norms gpukern-gpu_norms_pdl custom-kernels-app-typed custom-kernels-app-pdl custom-kernels-app-graph"
    run_tool synccheck 60 "gpukern-gpu_pipeline gpukern-gpu_studies gpukern-gpu_hopper gpukern-gpu_block gpukern-gpu_pdl gpukern-gpu_norms gpukern-gpu_norms_pdl gpukern-gpu_exhaustive custom-kernels-app-typed custom-kernels-app-pdl custom-kernels-app-graph"
    json+=", \"command\": \"compute-sanitizer --tool T [--leak-check full --padding 512] [--report-api-errors no for gpukern-errors and the example's gpu, typed and graph tests, whose tests provoke API errors on purpose or probe a module for optional globals] --error-exitcode 1 <test binary> --include-ignored --test-threads 1 ${skips[*]} (GPUKERN_SANITIZE=1)\"}"
    echo "$json" | tee "$out/sanitizer.json"
    exit $rc
    ;;
*)
    sed -n '2,12p' "$0"
    ;;
esac
