#!/usr/bin/env bash
# Installs everything airlink needs on a fresh Debian machine (as root, or with sudo) and
# builds the Python package with its Rust core into ./.venv. Safe to run again: every step
# is skipped when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: iproute2 and util-linux (unshare, nsenter) for network namespaces; iperf3,
# iputils-ping, tshark and tcptrace for emulation tests, benchmarks and reading the pcaps;
# ethtool for the gateway test's hosts (their own offloads); build tools for the Rust core.
apt_packages=(iproute2 util-linux iperf3 iputils-ping tshark tcptrace ethtool build-essential pkg-config)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 \
        || { echo "setup: apt-get install ${missing[*]} failed" >&2; exit 1; }
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
.venv/bin/python -m pip install -q -e '.[test]'
echo "setup: ready ($(.venv/bin/airlink --version))"
