#!/bin/bash
# Final call A: ./run.sh test (its two lanes) with the sanitizer tools as
# parallel background jobs (memcheck in two halves, initcheck, racecheck,
# synccheck), then the candle bundle's GPU tests and its memcheck.
set -u
R=$PWD; W=/tmp/w; mkdir -p $W; cd $W
unxz() { (command -v xz >/dev/null && tar xJf "$1") || python3 -c "import lzma,sys,shutil; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)" "$1" | tar xf -; }
unxz $R/.carry/h/bundle.tar.xz; tar xf $R/.carry/h/candle.tar
cd $W/bundle; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
export SANITIZE_LIMIT=${SANITIZE_LIMIT:-300}
mkdir -p $OUT/san-mem1 $OUT/san-mem2 $OUT/san-init $OUT/san-race $OUT/san-sync $OUT/test $OUT/candle
MEM1="gpukern-gpu_add gpukern-gpu_studies gpukern-errors gpukern-gpu_hopper gpukern-gpu_ops gpukern-gpu_block custom-kernels-app-gpu custom-kernels-app-typed custom-kernels-app-pdl custom-kernels-app-graph"
MEM2="gpukern-gpu_math gpukern-gpu_pdl gpukern-gpu_norms gpukern-gpu_order gpukern-gpu_copies gpukern-gpu_exhaustive gpukern-foreign"
(SANITIZE_ONLY="$MEM1" timeout 530 ./run.sh sanitize $OUT/san-mem1 memcheck > $OUT/san-mem1/run.log 2>&1) &
(SANITIZE_ONLY="$MEM2" timeout 530 ./run.sh sanitize $OUT/san-mem2 memcheck > $OUT/san-mem2/run.log 2>&1) &
(timeout 530 ./run.sh sanitize $OUT/san-init initcheck > $OUT/san-init/run.log 2>&1) &
(timeout 530 ./run.sh sanitize $OUT/san-race racecheck > $OUT/san-race/run.log 2>&1) &
(timeout 530 ./run.sh sanitize $OUT/san-sync synccheck > $OUT/san-sync/run.log 2>&1) &
(cd $W/candle-gpu && timeout 200 ./run.sh test > $OUT/candle/test.log 2>&1; echo "rc=$?" >> $OUT/candle/test.log; timeout 200 ./run.sh sanitize memcheck > $OUT/candle/memcheck.log 2>&1; echo "rc=$?" >> $OUT/candle/memcheck.log) &
start=$(date +%s)
timeout 520 ./run.sh test $OUT/test > $OUT/test/run.log 2>&1; echo "test rc=$? in $(( $(date +%s) - start )) s"
grep -E "^=== |^test result" $OUT/test/tests.log | paste - - | awk '{print $2, $5, $6, $7, $8}' | head -60
grep -E "FAILED|panicked|SKIP" $OUT/test/tests.log | head -20
grep -o '"total[^}]*' $OUT/test/verify.json | head -3
wait
grep -E "^=== |^test result|ERROR SUMMARY|^rc=" $OUT/candle/*.log
python3 $R/.carry/h/merge_san.py $OUT > /dev/null
for d in mem1 mem2 init race sync; do echo "--- $d"; grep -E "^(memcheck|initcheck|racecheck|synccheck) " $OUT/san-$d/run.log | awk '{print $1,$2,$3,$4,$5,$NF}'; done
cd $OUT && tar czf logs.tgz san-* test/tests.log test/run.log candle && cp test/verify.json test/cases.jsonl . 2>/dev/null; rm -rf test/tests.log; ls $OUT
