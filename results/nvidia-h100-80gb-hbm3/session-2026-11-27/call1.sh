#!/bin/bash
# Issue 38 GPU call: ./run.sh test (both lanes), with memcheck over the new
# safety tests in parallel, then a short summary.
set -u
R=$PWD; W=/tmp/w; mkdir -p $W; cd $W
tar xJf $R/.carry/s38/bundle.tar.xz
cd $W/bundle; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
cat manifest.json
mkdir -p $OUT/test $OUT/san
(SANITIZE_ONLY="gpukern-gpu_cudarc_order gpukern-gpu_safety custom-kernels-app-reset custom-kernels-app-graph gpukern-foreign" SANITIZE_LIMIT=400 timeout 500 ./run.sh sanitize $OUT/san memcheck > $OUT/san/run.log 2>&1) &
start=$(date +%s)
timeout 530 ./run.sh test $OUT/test > $OUT/test/run.log 2>&1; echo "test rc=$? in $(( $(date +%s) - start )) s"
grep -E "^=== |^test result" $OUT/test/tests.log | paste - - | awk '{print $2, $5, $6, $7, $8}' | head -70
grep -E "FAILED|panicked|SKIP|failed" $OUT/test/tests.log | head -30
wait
grep -E "^memcheck " $OUT/san/run.log
cd $OUT && tar czf logs.tgz san test/tests.log test/run.log && cp test/verify.json test/cases.jsonl . 2>/dev/null; rm -rf test san; ls -la $OUT
