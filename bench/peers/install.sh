#!/usr/bin/env bash
# Install the peers `orbitmq bench --peers` drives: NATS JetStream and Redis Streams, from Debian packages.
# The Debian packages also install services; this script stops and disables them, because the bench
# starts its own servers on free 127.0.0.1 ports in temp directories and stops them by PID.
# The Python clients (nats-py, redis-py) come from the `bench` extra: pip install -e '.[bench]'.
set -euo pipefail

PEERS=(nats-server redis-server)
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
missing=()
for pkg in "${PEERS[@]}"; do
    candidate=$(apt-cache policy "$pkg" | awk '/Candidate:/ {print $2}')
    if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
        echo "install.sh: no Debian package $pkg on this machine's apt sources; skipping it" >&2
        continue
    fi
    if ! command -v "$pkg" >/dev/null 2>&1; then missing+=("$pkg"); fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    # policy-rc.d 101 keeps the packages' postinst from starting system-wide daemons we never use.
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
        $SUDO chmod +x /usr/sbin/policy-rc.d
        trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
for pkg in "${PEERS[@]}"; do
    if command -v "$pkg" >/dev/null 2>&1; then
        echo "install.sh: $pkg $("$pkg" --version 2>&1 | head -n 1)"
    fi
done
