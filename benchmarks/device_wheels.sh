#!/usr/bin/env bash
# Fills the ignored `.whl/` with the py3.12 wheels the lent GPU machine's image lacks (pydantic, sqlite-utils, the
# service's FastAPI stack), for `benchmarks/device_env.sh` to install there.  A new checkout has no `.whl/` (it is
# ignored): run this once on the CPU machine before the first device call, then carry `.whl`.
#
#   bash benchmarks/device_wheels.sh
#
# The image already has python-dateutil, tabulate, six, anyio, h11, annotated-doc, click and zipp (the device
# tool's KINDS.md lists its packages): two versions of one package stop the install, so those are left out.
# `gguf` (to load the embedded SmolLM2 for training on a GPU) is added with `--gguf`.  `--ray` fills `.whl-ray/`
# instead (the Ray executor's benchmarks and GPU tests): ray's wheel (79 MB) is over the 64 MiB a device call may
# carry, so it is rewritten without `ray/jars/` (Java workers only) and the dashboard's source maps, their lines
# dropped from its RECORD (~47 MB), beside jsonschema and the packages it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
if [ "${1:-}" = "--ray" ]; then
    mkdir -p .whl-ray
    for name in ray==2.60.0 jsonschema jsonschema-specifications referencing rpds-py; do
        python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
            "${platforms[@]}" -d .whl-ray "$name"
    done
    python3 - .whl-ray/ray-*.whl <<'PY'
import sys, zipfile, os
path = sys.argv[1]
dropped = lambda name: name.startswith("ray/jars/") or name.endswith(".map")
with zipfile.ZipFile(path) as src, zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_DEFLATED) as dst:
    for info in src.infolist():
        if dropped(info.filename):
            continue
        data = src.read(info)
        if info.filename.endswith(".dist-info/RECORD"):
            lines = data.decode().splitlines(keepends=True)
            data = "".join(line for line in lines if not dropped(line.split(",", 1)[0])).encode()
        dst.writestr(info, data)
os.replace(path + ".tmp", path)
PY
    ls -la .whl-ray
    exit 0
fi
mkdir -p .whl
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
