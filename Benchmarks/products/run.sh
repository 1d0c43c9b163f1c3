#!/usr/bin/env bash
# Times the engine's products in every library, each library in its own process, in interleaved
# rounds (A, B, C, …, then A, B, C, … again), and writes a markdown table of each library's best
# round per shape. Everything it writes goes to $OUT (default Benchmarks/products/results).
#
#   Benchmarks/products/run.sh                          # 3 rounds, ≥ 0.2 s and 10 calls a shape: ~12–15 min idle
#   ROUNDS=1 SECONDS_PER_SHAPE=0.01 REPS=3 Benchmarks/products/run.sh   # a quick check that it all runs
#   LIBRARIES="openblas dnnl-matmul" ONLY=W6 Benchmarks/products/run.sh
#
# scipy-openblas comes from a virtual environment holding PyPI's scipy-openblas32 wheel
# ($SCIPY_OPENBLAS_VENV, default /tmp/sob: python3 -m venv /tmp/sob && /tmp/sob/bin/pip install scipy-openblas32).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/results}
rounds=${ROUNDS:-3}
seconds=${SECONDS_PER_SHAPE:-0.2}
reps=${REPS:-10}
threads=${THREADS:-2}
libraries=${LIBRARIES:-"openblas scipy-openblas blis blis-skx dnnl-sgemm dnnl-matmul"}
venv=${SCIPY_OPENBLAS_VENV:-/tmp/sob}

mkdir -p "$out"
cc -O2 -Wall -o "$out/products" "$here/products.c" -ldl -lm
"$out/products" --list > "$out/shapes.md"

# The wheel's library, as its own package names it.
sob=
if [[ " $libraries " == *" scipy-openblas "* ]]; then
    if ! sob=$("$venv/bin/python" -c 'import os, scipy_openblas32 as s; print(os.path.join(s.get_lib_dir(), s.get_library(True)))' 2>/dev/null); then
        echo "no scipy-openblas32 in $venv: scipy-openblas skipped" >&2
        libraries=${libraries/scipy-openblas/}
    fi
fi

# Every library's threads the same; OpenBLAS's native kernels (the environment pins Haswell).
export OPENBLAS_NUM_THREADS=$threads BLIS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
csv=$out/products.csv log=$out/products.log
: > "$csv"
echo "$(date -u '+%F %T UTC'); $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$log" >&2
header=--header
for round in $(seq 1 "$rounds"); do
    for library in $libraries; do
        args=("$library" --round "$round" --seconds "$seconds" --reps "$reps" $header)
        [[ $library == scipy-openblas ]] && args+=(--lib "$sob")
        [[ -n ${ONLY:-} ]] && args+=(--only "$ONLY")
        echo "round $round: $library (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$log" >&2
        env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$out/products" "${args[@]}" >> "$csv" 2>> "$log" ||
            echo "  $library: a shape failed its check, was not supported, or the library did not load: see $log" >&2
        header=
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log" >&2
{
    echo "$(head -1 "$log"); $rounds interleaved rounds, ≥ $seconds s and $reps calls a shape; $(tail -1 "$log")"
    echo
    python3 "$here/summarize.py" "$csv"
} > "$out/table.md"
cat "$out/table.md"
