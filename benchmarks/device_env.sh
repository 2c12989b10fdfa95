# Sourced at the start of every call on the lent GPU machine (DEVELOPERS.md, "On the lent GPU machine"): the image
# lacks pydantic, sqlite-utils, gguf, FastAPI and friends, which travel as py3.12 wheels in the ignored `.whl/`
# (and Ray's in `.whl-ray/`).  They are installed once per machine into `.site/` (ignored, so it stays on a warm
# machine for the next call) and put on PYTHONPATH with the checkout.
#
#   source benchmarks/device_env.sh
set -o pipefail
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD/.site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
for dir in .whl .whl-ray; do
    if [ -d "$dir" ] && [ ! -e ".site/.from-$dir" ]; then
        python3 -m pip install -q --no-index --no-deps --target .site "$dir"/*.whl && touch ".site/.from-$dir"
    fi
done
python3 -c 'import pydantic, sqlite_utils, torch; print("device env:", torch.__version__, torch.cuda.device_count(), "GPUs")'
