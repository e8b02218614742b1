#!/bin/bash
# Mid-session check: the changed areas' GPU tests in parallel (norms, graphs of
# user kernels, PDL per stream, cudarc Result<()>), the candle GPU tests; the
# norms section (f32, bf16; torch eager) and candle-block, each alone.
set -u
R=$PWD; W=/tmp/w; mkdir -p $W; cd $W
unxz() { (command -v xz >/dev/null && tar xJf "$1") || python3 -c "import lzma,sys,shutil; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)" "$1" | tar xf -; }
unxz $R/.carry/h/bundle.tar.xz; tar xf $R/.carry/h/candle.tar
cd $W/bundle; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p $OUT/t; export GPUKERN_CASES=$OUT/cases-m.jsonl
start=$(date +%s)
for t in gpukern-gpu_norms gpukern-gpu_proptest_norms custom-kernels-app-graph custom-kernels-app-typed custom-kernels-app-pdl custom-kernels-app-gpu gpukern-gpu_pdl gpukern-errors gpukern-foreign gpukern-gpu_order gpukern-gpu_copies; do
  (timeout 120 ./tests/$t --include-ignored > $OUT/t/$t.log 2>&1; echo "rc=$?" >> $OUT/t/$t.log) &
done
(timeout 120 ./tests/gpukern-gpu_ops --include-ignored --skip huge > $OUT/t/gpukern-gpu_ops.log 2>&1; echo "rc=$?" >> $OUT/t/gpukern-gpu_ops.log) &
(cd $W/candle-gpu && timeout 120 ./run.sh test > $OUT/t/candle.log 2>&1; echo "rc=$?" >> $OUT/t/candle.log) &
wait; echo "tests in $(( $(date +%s) - start )) s"
for f in $OUT/t/*.log; do echo "$(basename $f .log) $(grep -E '^test result' $f | tail -1 | cut -c1-60) $(tail -1 $f)"; done
grep -h -E "^test .*FAILED|panicked at" -A3 $OUT/t/*.log | head -40
export PYTHONUNBUFFERED=1
start=$(date +%s)
timeout 130 ./report --peers --no-lead --no-ops --no-cpu --no-sweep --no-studies --no-chains --no-torch-compile --min-log2 24 --max-log2 24 --dtype f32,bf16 --out $OUT/norms > $OUT/norms.log 2>&1; echo "norms rc=$? in $(( $(date +%s) - start )) s"
start=$(date +%s)
(cd $W/candle-gpu && timeout 110 ./run.sh block --ops --iters 10 > $OUT/candle-block.log 2>&1); echo "candle-block rc=$? in $(( $(date +%s) - start )) s"
cd $OUT && tar czf m.tgz t norms norms.log candle-block.log cases-m.jsonl 2>/dev/null; ls
