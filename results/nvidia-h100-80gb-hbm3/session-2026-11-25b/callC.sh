#!/bin/bash
# Call C: norms before (the previous session's PTX, 9b88a34) and after (this
# bundle) in one run, f32 and bf16, torch eager; candle-block on the final bundle.
set -u
R=$PWD; W=/tmp/w; mkdir -p $W /tmp/old; cd $W
unxz() { (command -v xz >/dev/null && tar xJf "$1") || python3 -c "import lzma,sys,shutil; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)" "$1" | tar xf -; }
unxz $R/.carry/h/bundle.tar.xz; tar xf $R/.carry/h/candle.tar; (cd /tmp/old && unxz $R/.carry/f/bundle.tar.xz)
cd $W/bundle; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export PYTHONUNBUFFERED=1
N="--peers --no-lead --no-ops --no-cpu --no-sweep --no-studies --no-chains --no-torch-compile --min-log2 24 --max-log2 24 --dtype f32,bf16"
start=$(date +%s)
(cd /tmp/old/bundle && timeout 100 ./report $N --out $OUT/before > $OUT/before.log 2>&1); echo "before rc=$? in $(( $(date +%s) - start )) s"
start=$(date +%s)
timeout 100 ./report $N --out $OUT/after > $OUT/after.log 2>&1; echo "after rc=$? in $(( $(date +%s) - start )) s"
start=$(date +%s)
(cd $W/candle-gpu && timeout 80 ./run.sh block --ops --iters 10 > $OUT/candle-block.log 2>&1); echo "candle-block rc=$? in $(( $(date +%s) - start )) s"
cd $OUT && tar czf c.tgz before/report.md before/report.json after/report.md after/report.json candle-block.log && ls
