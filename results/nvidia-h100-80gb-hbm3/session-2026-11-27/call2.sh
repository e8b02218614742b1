#!/bin/bash
# Final call: ./run.sh test on the merged main (both lanes), with sanitizer
# runs of the changed kernels and safety tests in parallel.
set -u
R=$PWD; W=/tmp/w; mkdir -p $W; cd $W
tar xJf $R/.carry/s2/bundle.tar.xz
cd $W/bundle; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
cat manifest.json
mkdir -p $OUT/test $OUT/san-mem $OUT/san-race $OUT/san-sync
NEW="gpukern-gpu_glu gpukern-gpu_pipeline gpukern-gpu_norms gpukern-gpu_cudarc_order gpukern-gpu_safety custom-kernels-app-reset custom-kernels-app-graph gpukern-foreign gpukern-gpu_copies"
(SANITIZE_ONLY="$NEW" SANITIZE_LIMIT=420 timeout 520 ./run.sh sanitize $OUT/san-mem memcheck > $OUT/san-mem/run.log 2>&1) &
(SANITIZE_ONLY="gpukern-gpu_pipeline gpukern-gpu_norms" SANITIZE_LIMIT=420 timeout 520 ./run.sh sanitize $OUT/san-race racecheck > $OUT/san-race/run.log 2>&1) &
(SANITIZE_ONLY="gpukern-gpu_pipeline gpukern-gpu_norms" SANITIZE_LIMIT=420 timeout 520 ./run.sh sanitize $OUT/san-sync synccheck > $OUT/san-sync/run.log 2>&1) &
start=$(date +%s)
timeout 530 ./run.sh test $OUT/test > $OUT/test/run.log 2>&1; echo "test rc=$? in $(( $(date +%s) - start )) s"
grep -E "^=== |^test result" $OUT/test/tests.log | paste - - | awk '{print $2, $5, $6, $7, $8}' | head -70
grep -E "panicked|SKIP" -A2 $OUT/test/tests.log | head -30
wait
for d in mem race sync; do grep -E "^(memcheck|racecheck|synccheck) " $OUT/san-$d/run.log; done
cd $OUT && tar czf logs.tgz san-* test/tests.log test/run.log && cp test/verify.json . 2>/dev/null; gzip -c test/cases.jsonl > cases.jsonl.gz; rm -rf test san-*; ls -la $OUT
