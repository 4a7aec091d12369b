#!/bin/sh
# Make a stack's environment in a host folder (images/env.sh; its text is part of the
# environment's key). Run as root in a container FROM the stack's base, with no network:
#   sh env.sh FOLDER PYTHON_VERSION UID:GID
# FOLDER (under /stackmatrix, the host's stacks folder, where uv's cache also lives: one mount,
# so uv's hard links work) becomes a venv seen at /opt/stack, where every run mounts it
# read-only; uv installs the locked wheels from the wheel cache by hash, linked from its cache.
set -eu
dir=$1 version=$2 owner=$3
minor=$(echo "$version" | cut -d. -f1,2)
mkdir -p "$dir/bin" "$dir/lib/python$minor/site-packages"
ln -s lib "$dir/lib64"
ln -s /usr/bin/python3 "$dir/bin/python"
ln -s python "$dir/bin/python3"
ln -s python "$dir/bin/python$minor"
printf 'home = /usr/bin\ninclude-system-site-packages = false\nversion = %s\n' "$version" \
    > "$dir/pyvenv.cfg"
# uv, and the scripts it writes (#!/opt/stack/bin/python), see the path the runs mount it at.
mkdir -p /opt
ln -s "$dir" /opt/stack
uv pip install --python /opt/stack/bin/python --offline --no-index \
    --find-links /wheelhouse/wheels --no-deps --require-hashes --compile-bytecode \
    --link-mode hardlink -r /wheelhouse/meta/requirements.txt
# uv's own verdict on the set, kept for the record: a deliberate cuDNN swap breaks a pin.
uv pip check --python /opt/stack/bin/python > "$dir/pip-check.txt" 2>&1 || true
# Files the host's user can remove (`harness gc`) when the harness does not run as root.
[ "$owner" = "0:0" ] || chown -R "$owner" "$dir" "$UV_CACHE_DIR"
