#!/usr/bin/env bash
# The GPU checks, in one run on a machine with a CUDA device (CI has none):
# the device-generic tests on CUDA (tests/test_devices.py, its TestDevicesCUDA class)
# and the benchmark suite in quick mode on the GPU. Uses the machine's own python3 and torch; torchcx from this tree.
#
#   OUT=/tmp/gpu bash tools/gpu_check.sh
#
# Each step has its own time limit, so that one that hangs leaves the others
# their time; everything is logged under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src:$PWD/tests${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # JAX beside torch on one GPU
PY=${PY:-python3}

$PY - <<'EOF' 2>&1 | tee "$OUT/machine.txt"
import platform, torch
print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.version.cuda)
print("device", torch.cuda.get_device_name() if torch.cuda.is_available() else "none")
import torchcx
print("torchcx", torchcx.__version__ if hasattr(torchcx, "__version__") else "?", "imported")
EOF

timeout "${TEST_S:-220}" $PY -m pytest -q -p no:cacheprovider -o addopts="" tests/test_devices.py -k cuda -rA 2>&1 \
    | tee "$OUT/tests.log" | grep -E "PASSED|FAILED|ERROR|passed|failed|error" | tail -30
echo "tests: exit ${PIPESTATUS[0]}"

timeout "${BENCH_S:-200}" $PY -m torchcx.bench --quick --device cuda --out "$OUT/bench" 2>&1 \
    | tee "$OUT/bench.log" | tail -40
echo "bench: exit ${PIPESTATUS[0]}"
