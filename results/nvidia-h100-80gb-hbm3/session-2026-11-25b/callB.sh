#!/bin/bash
# Final call B: the report in two runs (lead, ops, custom_sum, copies with
# peers; then the norms with torch eager), then, in the time left, the host
# cost of Gpu::binary before (def71dd's bench) and after, interleaved.
set -u
T0=$(date +%s); left() { echo $(( 570 - ($(date +%s) - T0) )); }
R=$PWD; W=/tmp/w; mkdir -p $W /tmp/b; cd $W
(command -v xz >/dev/null && tar xJf $R/.carry/h/bundle.tar.xz) || python3 -c "import lzma,sys,shutil; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)" $R/.carry/h/bundle.tar.xz | tar xf -
tar xzf $R/.carry/fb/base.tgz -C /tmp/b
cd $W/bundle; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export PYTHONUNBUFFERED=1
# memcheck of the example's graph test again, with run.sh's fix (it probes a
# module for optional globals: API errors, as the example's other tests).
cp $R/scripts/run.sh ./run.sh
mkdir -p $OUT/san-graph; SANITIZE_ONLY=custom-kernels-app-graph timeout 90 ./run.sh sanitize $OUT/san-graph memcheck > $OUT/san-graph/run.log 2>&1; grep -E "^memcheck" $OUT/san-graph/run.log
start=$(date +%s)
timeout $(( $(left) - 100 )) ./run.sh report --peers --no-cpu --no-sweep --no-studies --no-norms --no-chains --min-log2 20 --out $OUT/report > $OUT/report.log 2>&1; echo "report rc=$? in $(( $(date +%s) - start )) s"
tail -2 $OUT/report.log
start=$(date +%s)
timeout $(( $(left) - 5 < 100 ? $(left) - 5 : 100 )) ./report --peers --no-lead --no-ops --no-cpu --no-sweep --no-studies --no-chains --no-torch-compile --min-log2 24 --max-log2 24 --out $OUT/norms > $OUT/norms.log 2>&1; echo "norms rc=$? in $(( $(date +%s) - start )) s"
F="binary_mul_f32_1024|unary_neg_f32_1024"
for i in 1 2 3 4 5; do
  [ $(left) -gt 25 ] || break
  (cd /tmp/b/base && timeout 10 ./bench-host --bench "$F" --warm-up-time 1 --measurement-time 2 2>&1 | grep -E "^host|time:") >> $OUT/bh-base.log
  (cd $W/bundle && timeout 12 ./bench/gpukern-benches-host --bench "$F" --warm-up-time 1 --measurement-time 2 2>&1 | grep -E "^host|time:") >> $OUT/bh-new.log
done
paste - - < $OUT/bh-base.log | awk '{print "base", $1, $6}'; paste - - < $OUT/bh-new.log | awk '{print "new", $1, $6}'
cd $OUT && tar czf b.tgz report norms report.log norms.log bh-*.log san-graph 2>/dev/null; ls
