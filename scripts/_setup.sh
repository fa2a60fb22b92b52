# Sourced by scripts/demo and scripts/test: make .venv if missing, install the project into it
# with MPICH from PyPI as the MPI (pass extras, e.g. "mpich,test"), and build the shim and the
# compiled mpirun client.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
extras=$1
python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "testbed needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
log=.venv/install.log
if ! { .venv/bin/python -m pip install --upgrade pip &&
       .venv/bin/python -m pip install -e ".[$extras]" &&
       .venv/bin/testbed shim --path &&
       .venv/bin/testbed client; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "installing the project failed (log above, also in $log)" >&2
    exit 1
fi
