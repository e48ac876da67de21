#!/usr/bin/env bash
# Sets up airlink in ./.venv: the Python package with its Rust core (editable: maturin rebuilds
# the core when it changed), its test and docs tools, and, for emulation, Debian packages.
# Safe to run again: every step is skipped when its result is already there.
#
# Simulation needs no root and no Debian packages (only Python >= 3.11 and cargo). The Debian
# packages are for emulation and its tests; they are installed when this runs as root or with
# sudo on a machine with apt-get. SETUP_EMULATION=0 skips them; SETUP_EMULATION=1 insists on
# them (an error if they cannot be installed); unset, they are skipped, with a note, where they
# cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: iproute2 and util-linux (unshare, nsenter) for network namespaces; iperf3,
# iputils-ping, tshark and tcptrace for emulation tests, benchmarks and reading the pcaps;
# ethtool for the gateway test's hosts (their own offloads); build tools for the Rust core.
apt_packages=(iproute2 util-linux iperf3 iputils-ping tshark tcptrace ethtool build-essential pkg-config)
emulation=${SETUP_EMULATION:-auto}

SUDO=""
why_not=""
if [ "$emulation" = 0 ]; then
    why_not="SETUP_EMULATION=0"
elif ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
    why_not="no apt-get here (not Debian)"
elif [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo"
    else
        why_not="not root and no password-less sudo"
    fi
fi

if [ -z "$why_not" ]; then
    missing=()
    for p in "${apt_packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "setup: installing Debian packages for emulation and the Rust build: ${missing[*]}"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 \
            || { echo "setup: apt-get install ${missing[*]} failed" >&2; exit 1; }
    fi
elif [ "$emulation" = 1 ]; then
    echo "setup: SETUP_EMULATION=1 but the Debian packages cannot be installed: $why_not" >&2
    exit 1
else
    echo "setup: simulation only, Debian packages skipped ($why_not): emulation and its tests need" \
         "${apt_packages[*]} (run as root, or install them yourself)"
    command -v cc >/dev/null 2>&1 || echo "setup: warning: no C compiler (cc) found; the Rust build needs a linker" >&2
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install Rust (https://rustup.rs) and run again" >&2
    exit 1
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# Editable install: the Rust core is rebuilt by maturin (release profile) when it changed.
# The `test` extra brings pytest, hypothesis and Dask; `docs` mkdocs for `make docs`.
.venv/bin/python -m pip install -q -e '.[test,docs]'
echo "setup: ready ($(.venv/bin/airlink --version))"
