#!/usr/bin/env bash
# Fills the ignored `.whl/` with the py3.12 wheels the lent GPU machine's image lacks (pydantic, sqlite-utils, the
# service's FastAPI stack), for `benchmarks/device_env.sh` to install there.  A new checkout has no `.whl/` (it is
# ignored): run this once on the CPU machine before the first device call, then carry `.whl`.
#
#   bash benchmarks/device_wheels.sh
#
# The image already has python-dateutil, tabulate, six, anyio, h11, annotated-doc, click and zipp (the device
# tool's KINDS.md lists its packages): two versions of one package stop the install, so those are left out.
# `gguf` (to load the embedded SmolLM2 for training on a GPU) is added with `--gguf`.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
packages=(
    pydantic pydantic-core annotated-types typing-inspection typing-extensions
    sqlite-utils sqlite-fts4 click-default-group
    fastapi starlette uvicorn opentelemetry-api
)
if [ "${1:-}" = "--gguf" ]; then
    packages+=(gguf)
fi
# pydantic pins one pydantic-core: take pydantic first, then the core it names
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d .whl pydantic
core=$(unzip -p .whl/pydantic-2*.whl '*/METADATA' | sed -n 's/^Requires-Dist: pydantic-core==\(.*\)$/\1/p' | tr -d '\r')
for name in "${packages[@]}"; do
    spec="$name"
    [ "$name" = pydantic-core ] && spec="pydantic-core==$core"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${platforms[@]}" -d .whl "$spec"
done
ls .whl
