#!/usr/bin/env bash
# Installs the Debian packages of the Argo UI's browser test (tests/integration/test_argo_ui.py): chromium,
# driven headless by Python playwright, which downloads no browser of its own. Idempotent: when every
# package is there it returns at once without touching apt. Needs root (CI runs as root). The UI's build
# needs node >= 20 (ci/build-tools.sh checks it): Debian 12's nodejs is 18, so it is not installed here.
set -euo pipefail
packages=(chromium fonts-liberation)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "[install-ui-packages] installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
