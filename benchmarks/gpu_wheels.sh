#!/usr/bin/env bash
# Download the wheels benchmarks/gpu.py needs beyond what a lent GPU machine already has
# (Python 3.12 on x86-64 Linux, with JAX, Flax, Optax, Orbax, Chex, rich, imageio,
# matplotlib, seaborn, PyYAML and protobuf), pure wheels or manylinux builds for that
# Python, without their dependencies: the list below is the whole closure. Versions are
# constraints.txt's where it pins one. The machine cannot reach a registry; install them
# there with
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   PYTHONPATH=/tmp/site:src python3 benchmarks/gpu.py
# Usage: bash benchmarks/gpu_wheels.sh [DIR] [PYTHON_VERSION]   (defaults: .whl 3.12)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-.whl}"
python_version="${2:-3.12}"
packages=(
    tyro docstring-parser typeguard  # rollax's configuration classes
    tensorboardX                     # rollax's metric sinks
    gymnax gymnasium farama-notifications six  # the stepping peer, MinAtar
    rejax distrax tfp-nightly dm-tree gast decorator  # the training peer
    craftax                          # Craftax-Classic
    brax jaxopt trimesh mujoco mujoco-core mujoco-mjx  # Brax's Ant and Humanoid (TD3)
    playground ml_collections lxml tqdm  # MuJoCo Playground's DM Control tasks (MJX, no Warp)
    ale-py                           # Atari on the host (envpool's 64 MB wheel does not fit)
)
specs=()
for name in "${packages[@]}"; do
    pinned=$(grep -i "^${name}==" constraints.txt || true)
    specs+=("${pinned:-$name}")
done
rm -rf "$dir"
mkdir -p "$dir"
python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$dir" \
    --python-version "$python_version" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 "${specs[@]}"
ls "$dir"
du -sh "$dir"
