#!/usr/bin/env bash
# Installs the Debian packages of the local control plane's real node (containerd, runc, the CNI
# plugins) and of its image builds (buildah, mmdebstrap). Idempotent: when every package is there it
# returns at once without touching apt. Needs root (CI runs as root).
set -euo pipefail
packages=(containerd runc containernetworking-plugins buildah mmdebstrap)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "[install-node-packages] installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
