#!/usr/bin/env bash
# Builds the local control plane's programs from the Go module proxy into a cache outside the
# checkout ($DIHERA_CACHE, default ~/.cache/dihera). Versions are inputs, not copies:
#
#   ci/build-tools.sh [--kubernetes VERSION] [--argo VERSION] [TOOL...]
#   ci/build-tools.sh [--kubernetes VERSION] [--argo VERSION] --pair-dir
#
# (defaults: ci/versions.env; no TOOL, or the word `default` among them: the control plane's and the
# chart tools' programs). The wrapper modules that build Kubernetes, etcd and Argo are generated
# per version into $cache/src/<component>-<version>/ from the upstream module's own go.mod (Kubernetes'
# staging `replace` lines become their published v0.x twins; Argo's own replace lines are repeated).
# Binaries land in $cache/bin/<component>-<version>/, so several versions stay built side by side and
# share one Go build cache; $cache/pairs/<kubernetes>_<argo>/ links the set one control plane runs
# (the dev cluster starts the programs from there). Version-independent tools (kwok, helm, ct,
# helm-docs) go to $cache/bin, which the Makefile puts on PATH. A program already built with the same
# stamp (version, ldflags, loopback main) is skipped, so a warm run takes seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=ci/versions.env
source "$here/versions.env"
print_pair_dir=
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --kubernetes) KUBERNETES_VERSION=$2; shift 2 ;;
    --argo) ARGO_VERSION=$2; shift 2 ;;
    --pair-dir) print_pair_dir=1; shift ;;
    *) echo "usage: $0 [--kubernetes VERSION] [--argo VERSION] [--pair-dir | TOOL...]" >&2; exit 2 ;;
  esac
done
cache=${DIHERA_CACHE:-$HOME/.cache/dihera}
bin="$cache/bin"
pair="$cache/pairs/${KUBERNETES_VERSION}_${ARGO_VERSION}"
if [[ -n $print_pair_dir ]]; then echo "$pair"; exit 0; fi
# Cold, the module downloads (network) of the programs still to build overlap the compiling (CPU) of
# the current one: the first real build starts this script again, niced, in the background on the rest
# of the list in prefetch mode ($DIHERA_PREFETCH_SRC: its own wrapper dir), where a build is a
# `go list -deps` (it fetches the modules into the shared module cache) and nothing is installed. Best
# effort: a build fetches whatever the prefetch has not got yet; it is stopped when the builds are done.
prefetch=${DIHERA_PREFETCH_SRC:-}
src=${prefetch:-$cache/src}
mkdir -p "$bin" "$src" "$pair"
# -mod=mod: a generated wrapper's go.mod only names the upstream module; `go build` adds the rest of
# the requirements and writes go.sum, checked against GOSUMDB (reached through the module proxy).
export GOFLAGS=-mod=mod
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
# Every program is static (CGO off), as upstream releases them (Kubernetes, etcd, helm, CoreDNS, kwok,
# Argo, Kueue): the cgo build tag changes the standard library's net and everything above it, so with
# one setting for all, the programs share each compiled package of the same version and dependencies
# in the Go build cache (the standard library first of all) instead of compiling it once per setting
# (measured: no change in a cold build's time or the cache's size; docs/local-cluster.md). The stamps
# say `static`, so a program built otherwise before is rebuilt.
export CGO_ENABLED=0

log() { printf '[build-tools]%s %s\n' "${prefetch:+ prefetch:}" "$*" >&2; }

prefetch_pid=
prefetch_rest() { # start fetching the modules of the tools after the current one (${next[@]}), once
  [[ -n $prefetch || -n $prefetch_pid || ${#next[@]} -eq 0 ]] && return 0
  local dir
  dir=$(mktemp -d)
  DIHERA_PREFETCH_SRC=$dir setsid nice -n 10 bash "$0" --kubernetes "$KUBERNETES_VERSION" --argo "$ARGO_VERSION" \
    "${next[@]}" > "$cache/prefetch.log" 2>&1 < /dev/null {lock_fd}>&- &
  prefetch_pid=$!
  # shellcheck disable=SC2064 # expanded now: the pid and the dir
  trap "kill -- -$prefetch_pid 2>/dev/null || true; wait $prefetch_pid 2>/dev/null || true; rm -rf '$dir'" EXIT
  log "fetching the modules of ${next[*]} in the background (log: $cache/prefetch.log)"
}

# Two runs at once (`make test` builds Kueue in the background while a test's kueue-up may ask for it)
# build a program once: each tool is built holding its lock ($cache/locks), and the second run waits
# for it, then finds it built.
lock_fd=
lock_tool() { # lock_tool NAME: hold NAME's lock until the next lock_tool or the exit
  [[ -n $prefetch ]] && return 0
  [[ -n $lock_fd ]] && exec {lock_fd}>&-
  mkdir -p "$cache/locks"
  exec {lock_fd}> "$cache/locks/$1.lock"
  if ! flock -n "$lock_fd"; then
    log "$1: another ci/build-tools.sh is building it; waiting for that build"
    flock "$lock_fd"
  fi
}

prefetch_modules() { # prefetch_modules DIR PACKAGE [START]: `go list -deps` there (in the checkout: never writing its go.mod)
  local flags=$GOFLAGS start=${3:-$SECONDS}
  [[ $1 == "$here"/* ]] && flags=${flags/-mod=mod/-mod=readonly}
  if (cd "$1" && GOFLAGS=$flags go list -deps "$2" > /dev/null); then
    log "fetched the modules of $2 in $((SECONDS - start))s"
  else
    log "could not list $2 (its build fetches what it needs)"
  fi
}

# built PATH STAMP: true when PATH was built with STAMP (version, ldflags, sources; kept in DIR/.NAME.version),
# so a change of any rebuilds it.
stamp_file() { echo "$(dirname "$1")/.$(basename "$1").version"; }
built() { [[ -x "$1" && "$(cat "$(stamp_file "$1")" 2>/dev/null)" == "$2" ]]; }

# How every program is compiled: -s -w (in each ldflags) leave the debug info out of the binary, and
# -dwarf=false spares the compiler making it: 11-18 % less CPU for the same binary (kwok from an empty
# build cache: 285.6 -> 254.9 and 302.0 -> 248.8 CPU seconds, both orders). Not in the stamps: a program
# built before the flag is the same program.
GO_BUILD_FLAGS=(-trimpath -gcflags=all=-dwarf=false)

go_build() { # go_build MODULE_DIR OUT PACKAGE STAMP [LDFLAGS]
  local dir=$1 out=$2 pkg=$3 stamp="${4% static} static" ldflags=${5:-}
  built "$out" "$stamp" && return 0
  [[ -n $prefetch ]] && { prefetch_modules "$dir" "$pkg"; return 0; }
  prefetch_rest
  log "building $(basename "$out") ${stamp%% *}"
  local start=$SECONDS
  mkdir -p "$(dirname "$out")"
  (cd "$dir" && go build "${GO_BUILD_FLAGS[@]}" -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg")
  mv "$out.tmp" "$out"
  echo "$stamp" > "$(stamp_file "$out")"
  log "built $(basename "$out") $(basename "$(dirname "$out")") in $((SECONDS - start))s"
}

install_mod() { # install_mod NAME VERSION PACKAGE [LDFLAGS]
  local name=$1 version=$2 pkg=$3 ldflags=${4:-}
  built "$bin/$name" "$version $ldflags static" && return 0
  local start=$SECONDS tmp
  if [[ -n $prefetch ]]; then # a throw-away module requiring PACKAGE@VERSION
    tmp=$(mktemp -d -p "$src")
    (cd "$tmp" && go mod init dihera.local/prefetch > /dev/null 2>&1 && go get "$pkg@$version" > /dev/null 2>&1) || true
    prefetch_modules "$tmp" "$pkg" "$start"
    return 0
  fi
  prefetch_rest
  log "building $name $version"
  tmp=$(mktemp -d)
  GOBIN="$tmp" go install "${GO_BUILD_FLAGS[@]}" -ldflags "-s -w $ldflags" "$pkg@$version"
  mv "$tmp/$name" "$bin/$name"
  rm -rf "$tmp"
  echo "$version $ldflags static" > "$(stamp_file "$bin/$name")"
  log "built $name in $((SECONDS - start))s"
}

module_file() { # module_file MODULE VERSION FIELD: GoMod (the go.mod) or Dir (the extracted module)
  GOFLAGS= go mod download -json "$1@$2" | sed -n "s/^\t\"$3\": \"\(.*\)\",\?\$/\1/p"
}

# wrapper NAME GO_MOD UPSTREAM_DIR: writes $cache/src/NAME/go.mod when what we generate changed (go build
# adds requirements to it afterwards; .generated keeps what we wrote) and seeds go.sum with the upstream
# module's own go.sum: the checksum database does not know every pseudo-version upstream pins (go build
# asks GOSUMDB only for sums missing there, e.g. Kubernetes' published staging twins). Prints the dir.
wrapper() {
  local dir="$src/$1" content=$2 upstream=$3
  mkdir -p "$dir"
  if [[ "$(cat "$dir/.generated" 2>/dev/null)" != "$content" ]]; then
    printf '%s\n' "$content" > "$dir/go.mod"
    cat "$upstream/go.sum" "$dir/go.sum" 2>/dev/null | sort -u > "$dir/go.sum.tmp" || true
    mv "$dir/go.sum.tmp" "$dir/go.sum"
    printf '%s\n' "$content" > "$dir/.generated"
  fi
  echo "$dir"
}

go_line() { grep -m1 -E '^go [0-9.]+$' "$1"; }

# The Kubernetes wrapper: require k8s.io/kubernetes VERSION and replace each staging module (listed
# in that version's go.mod as `=> ./staging/...`) by its published twin v0.MINOR.PATCH.
kubernetes_wrapper() { # kubernetes_wrapper VERSION
  local v=$1 mod
  mod=$(module_file k8s.io/kubernetes "$v" GoMod)
  wrapper "kubernetes-$v" "// Generated by ci/build-tools.sh from k8s.io/kubernetes@$v's go.mod.
module dihera.local/tools/kubernetes

$(go_line "$mod")

require k8s.io/kubernetes $v

replace (
$(sed -n 's#^\t\(k8s\.io/[^ ]*\) => \./staging/.*#\t\1 => \1 '"v0.${v#v1.}"'#p' "$mod")
)" "$(module_file k8s.io/kubernetes "$v" Dir)"
}

k8s_ldflags() { # k8s_ldflags VERSION
  local v=$1 minor
  minor=$(echo "$v" | cut -d. -f2)
  echo "-X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
}

build_kubernetes() { # build_kubernetes VERSION PROGRAM (kube-apiserver, kubelet, ...)
  local v=$1 dir
  dir=$(kubernetes_wrapper "$v")
  go_build "$dir" "$bin/kubernetes-$v/$2" "k8s.io/kubernetes/cmd/$2" "$v $(k8s_ldflags "$v")" "$(k8s_ldflags "$v")"
}

# etcd: the newest pinned patch (ETCD_VERSIONS) of the minor line whose client Kubernetes uses.
etcd_version() { # etcd_version KUBERNETES_VERSION
  local client line v
  client=$(grep -m1 -E '^\s+go\.etcd\.io/etcd/client/v3 v' "$(module_file k8s.io/kubernetes "$1" GoMod)" | awk '{print $2}')
  line=$(echo "$client" | cut -d. -f1-2)
  for v in $ETCD_VERSIONS; do [[ $v == "$line".* ]] && { echo "$v"; return 0; }; done
  log "no etcd $line.x in ETCD_VERSIONS ($ETCD_VERSIONS) for Kubernetes $1 (its etcd client: $client)"
  return 1
}

build_etcd() { # build_etcd VERSION
  local v=$1 mod dir
  mod=$(module_file go.etcd.io/etcd/server/v3 "$v" GoMod)
  dir=$(wrapper "etcd-$v" "// Generated by ci/build-tools.sh.
module dihera.local/tools/etcd

$(go_line "$mod")

require go.etcd.io/etcd/server/v3 $v" "$(module_file go.etcd.io/etcd/server/v3 "$v" Dir)")
  go_build "$dir" "$bin/etcd-$v/etcd" go.etcd.io/etcd/server/v3 "$v"
}

argo_module() { echo "github.com/argoproj/argo-workflows/$(echo "$1" | cut -d. -f1)"; } # v4.1.4 -> .../v4

# The Argo wrapper: require argo-workflows/vN VERSION, repeat its own replace lines (go install
# refuses a module with replace lines), and hold the loopback main: the shared process shell
# (tools/argo/shell.go) and what differs by major version (tools/argo/vN/main.go).
argo_wrapper() { # argo_wrapper VERSION
  local v=$1 module mod main dir
  module=$(argo_module "$v")
  mod=$(module_file "$module" "$v" GoMod)
  main="$here/tools/argo/$(echo "$v" | cut -d. -f1)/main.go"
  [[ -f $main ]] || { log "no loopback main for Argo $v: $main"; return 1; }
  dir=$(wrapper "argo-$v" "// Generated by ci/build-tools.sh from $module@$v's go.mod.
module dihera.local/tools/argo

$(go_line "$mod")

require $module $v

$(sed -n '/^replace (/,/^)/p; /^replace [^(]/p' "$mod")" "$(module_file "$module" "$v" Dir)")
  mkdir -p "$dir/workflowcontroller"
  cp "$main" "$dir/workflowcontroller/main.go"
  cp "$here/tools/argo/shell.go" "$dir/workflowcontroller/shell.go"
  echo "$dir"
}

build_argo() { # build_argo VERSION PROGRAM (workflow-controller: the loopback main; argoexec, ...: upstream's)
  local v=$1 module dir pkg main_sum
  module=$(argo_module "$v")
  dir=$(argo_wrapper "$v")
  main_sum=$(cat "$dir/workflowcontroller/"*.go | sha256sum | cut -c1-12)
  case $2 in
    workflow-controller) pkg=./workflowcontroller ;;
    *) pkg="$module/cmd/$2" ;;
  esac
  go_build "$dir" "$bin/argo-$v/$2" "$pkg" "$v loopback-$main_sum static" "-X $module.version=$v"
  # Argo's CRDs ship in its module; copy them next to the binaries.
  if [[ $2 == workflow-controller && ! -d "$bin/argo-$v/crds" && -z $prefetch ]]; then
    mkdir -p "$bin/argo-$v/crds.tmp"
    cp "$(module_file "$module" "$v" Dir)"/manifests/base/crds/minimal/argoproj.io_*.yaml "$bin/argo-$v/crds.tmp/"
    chmod -R u+w "$bin/argo-$v/crds.tmp"
    mv "$bin/argo-$v/crds.tmp" "$bin/argo-$v/crds"
  fi
}

link() { [[ -n $prefetch ]] || ln -sfn "$1" "$pair/$2"; } # link TARGET NAME: one program of the pair's set

# Argo's workflow/executor/osspecific/signal_linux.go is a symlink to signal_darwin.go upstream, and
# module zips drop symlinks, so argoexec does not build from the proxy's zip: it is built from a copy
# of the module with that file restored, through a modfile of its own (the Argo wrapper's go.mod plus a
# replace line pointing at the copy).
argoexec_modfile() { # argoexec_modfile VERSION: prints the modfile's path
  local v=$1 module dir copy osdir
  module=$(argo_module "$v")
  dir=$(argo_wrapper "$v")
  copy="$src/argo-workflows-$v"
  osdir="$copy/workflow/executor/osspecific"
  if [[ ! -f "$osdir/signal_linux.go" ]]; then
    rm -rf "$copy"
    cp -r "$(module_file "$module" "$v" Dir)" "$copy" && chmod -R u+w "$copy"
    cp "$osdir/signal_darwin.go" "$osdir/signal_linux.go"
  fi
  cp "$dir/go.mod" "$dir/argoexec.go.mod"
  cp "$dir/go.sum" "$dir/argoexec.go.sum"
  echo "replace $module => $copy" >> "$dir/argoexec.go.mod"
  echo "$dir/argoexec.go.mod"
}

build_argoexec() { # build_argoexec VERSION: Argo's executor (init/wait containers), static for a scratch image
  local v=$1 module modfile
  module=$(argo_module "$v")
  modfile=$(argoexec_modfile "$v")
  GOFLAGS="$GOFLAGS -modfile=$modfile" go_build "$(dirname "$modfile")" "$bin/argo-$v/argoexec" \
    "$module/cmd/argoexec" "$v static" "-X $module.version=$v"
}

# -- The Argo UI and argo server (the default pair's; see ci/tools/argo/v4/server/main.go) ---------------
# The UI is built from the Argo module's ui/ sources with the machine's node (>= 20) and yarn 1 (from
# npm, installed into the cache). Its one dependency no registry serves, argo-ui (a GitHub git URL
# upstream), comes from third_party/argo-ui. ui_prepare is "the patch": it and the archive's sha256 key
# the built UI, so changing either rebuilds it.
ARGO_UI_COMMIT=54f36c723d9a0e5d3386689298cbb9c27767fa00
argo_ui_tgz="$here/../third_party/argo-ui/argo-ui-${ARGO_UI_COMMIT:0:7}.tgz"

ui_prepare() { # ui_prepare DIR: point a copy of Argo's ui/ at the vendored argo-ui and the npm registry
  local d=$1 git="git+https://github.com/argoproj/argo-ui.git#"
  if ! grep -q "\"argo-ui\": \"$git$ARGO_UI_COMMIT\"" "$d/package.json"; then
    log "Argo's ui/package.json wants argo-ui $(grep -o "\"argo-ui\": \"[^\"]*\"" "$d/package.json");" \
      "third_party/argo-ui holds commit $ARGO_UI_COMMIT: vendor that commit (third_party/argo-ui/README.md)"
    return 1
  fi
  cp "$argo_ui_tgz" "$d/argo-ui.tgz"
  sed -i "s|\"argo-ui\": \"$git$ARGO_UI_COMMIT\"|\"argo-ui\": \"file:./argo-ui.tgz\"|" "$d/package.json"
  # the lockfile: no entry for argo-ui (yarn adds the file's), the npm registry's host for the rest
  sed -i "/^\"argo-ui@git+/,/^\$/d; s|https://registry.yarnpkg.com/|https://registry.npmjs.org/|" "$d/yarn.lock"
  sed -i '/--install.frozen-lockfile/d' "$d/.yarnrc"
  # no source maps: 29 of dist/app's 32 MB, of no use to the embedded UI, and CPU-minutes of webpack
  sed -i "s|devtool: isProd ? '[a-z-]*'|devtool: isProd ? false|" "$d/webpack.config.js"
  grep -q "devtool: isProd ? false" "$d/webpack.config.js" ||
    log "ui/webpack.config.js: its devtool line changed; the build makes source maps (deleted after it)"
}

ui_key() { # a short hash of the patch, the vendored archive and yarn's version
  { declare -f ui_prepare; cat "$argo_ui_tgz"; echo "$YARN_VERSION"; } | sha256sum | cut -c1-12
}

yarn_bin() { # installs yarn YARN_VERSION from npm into the cache (not globally); prints its path
  local prefix="$cache/node/yarn-$YARN_VERSION"
  if [[ ! -x "$prefix/node_modules/.bin/yarn" ]]; then
    log "installing yarn $YARN_VERSION from npm into $prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "yarn@$YARN_VERSION" >&2
  fi
  echo "$prefix/node_modules/.bin/yarn"
}

ui_dir() { echo "$cache/ui/argo-$1/app"; }
ui_built() { [[ -d "$(ui_dir "$1")" && "$(cat "$(stamp_file "$(ui_dir "$1")")" 2>/dev/null)" == "$1 ui-$(ui_key)" ]]; }

build_argo_ui() { # build_argo_ui VERSION: $cache/ui/argo-VERSION/app, the files argo server embeds
  local v=$1 out stamp src mod yarn start=$SECONDS
  out=$(ui_dir "$v") stamp="$v ui-$(ui_key)"
  ui_built "$v" && return 0
  (cd "$(dirname "$argo_ui_tgz")" && sha256sum --quiet -c SHA256SUMS) || { log "third_party/argo-ui: checksum mismatch"; return 1; }
  [[ $(node --version 2>/dev/null) =~ ^v(2[0-9]|[3-9][0-9])\. ]] || { log "the Argo UI needs node >= 20 (found: $(node --version 2>&1))"; return 1; }
  yarn=$(yarn_bin)
  log "building the Argo UI $v (yarn install, then webpack: cold ~10 minutes)"
  # ui/ and the two API files its webpack config copies from ../api
  src="$cache/src/argo-ui-$v" mod=$(module_file "$(argo_module "$v")" "$v" Dir)
  rm -rf "$src" && mkdir -p "$src/api/openapi-spec" "$src/api/jsonschema" && cp -r "$mod/ui" "$src/ui"
  cp "$mod/api/openapi-spec/swagger.json" "$src/api/openapi-spec/" && cp "$mod/api/jsonschema/schema.json" "$src/api/jsonschema/"
  chmod -R u+w "$src"
  ui_prepare "$src/ui"
  (cd "$src/ui" && YARN_CACHE_FOLDER="$cache/yarn-cache" "$yarn" install --non-interactive --network-timeout 600000 >&2)
  log "yarn install: $((SECONDS - start))s"
  (cd "$src/ui" && NODE_OPTIONS=--max-old-space-size=4096 "$yarn" build >&2)
  find "$src/ui/dist/app" -name '*.map' -delete # source maps: 29 of the 32 MB, of no use to the embedded UI
  rm -rf "$out" && mkdir -p "$(dirname "$out")" && mv "$src/ui/dist/app" "$out"
  echo "$stamp" > "$(stamp_file "$out")"
  rm -rf "$src" # node_modules is ~0.5 GB; yarn's cache ($cache/yarn-cache) keeps the downloads
  log "built the Argo UI $v in $((SECONDS - start))s"
}

# argo server: Argo's apiserver package in a loopback main (ci/tools/argo/vN/server/main.go), built
# from a copy of the module that holds the built UI (ui/embed.go embeds ui/dist/app) and one patch
# (ci/tools/argo/vN/server/bind-host.patch: Run listens on ":PORT", every interface, with no option).
argo_server_modfile() { # argo_server_modfile VERSION: prints the modfile's path
  local v=$1 module dir copy server  # not 'src': wrapper() reads the global $src
  module=$(argo_module "$v")
  dir=$(argo_wrapper "$v")
  server="$here/tools/argo/$(echo "$v" | cut -d. -f1)/server"
  copy="$cache/src/argo-server-$v"
  rm -rf "$copy"
  cp -r "$(module_file "$module" "$v" Dir)" "$copy" && chmod -R u+w "$copy"
  patch -s -p1 -d "$copy" < "$server/bind-host.patch"
  mkdir -p "$copy/ui/dist" && cp -r "$(ui_dir "$v")" "$copy/ui/dist/app"
  mkdir -p "$dir/argoserver" && cp "$server/main.go" "$dir/argoserver/main.go"
  cp "$dir/go.mod" "$dir/argo-server.go.mod"
  cp "$dir/go.sum" "$dir/argo-server.go.sum"
  echo "replace $module => $copy" >> "$dir/argo-server.go.mod"
  echo "$dir/argo-server.go.mod"
}

build_argo_server() { # build_argo_server VERSION
  local v=$1 module server stamp modfile
  module=$(argo_module "$v")
  server="$here/tools/argo/$(echo "$v" | cut -d. -f1)/server"
  [[ -f $server/main.go ]] || { log "no loopback argo server main for Argo $v ($server/main.go): this pair runs no UI"; return 1; }
  build_argo_ui "$v"
  stamp="$v server-$(cat "$server"/* | sha256sum | cut -c1-12) ui-$(ui_key) static"
  built "$bin/argo-$v/argo-server" "$stamp" && return 0
  modfile=$(argo_server_modfile "$v")
  GOFLAGS="$GOFLAGS -modfile=$modfile" go_build "$(dirname "$modfile")" "$bin/argo-$v/argo-server" \
    ./argoserver "$stamp" "-X $module.version=$v"
  rm -rf "$cache/src/argo-server-$v" # ~0.1 GB; rebuilt from the module zip when needed
}

# Kueue's manager (opt-in, tool `kueue`: the tests that need it name it). Upstream's main
# (cmd/kueue/main.go) copied into a wrapper module with one literal replaced: the metrics certificate's
# fixed path becomes metricsCertDir() (ci/tools/kueue/metrics_cert_dir.go: $KUEUE_METRICS_CERT_DIR),
# everything else is set by flags and its configuration file (ci/devcluster/kueue.py). Its CRDs ship
# in the module; copied next to the binary. Cold: ~15 CPU-minutes, ~105 MiB.
build_kueue() { # build_kueue VERSION
  local v=$1 mod moddir dir sum literal='"/etc/kueue/metrics/certs"'
  mod=$(module_file sigs.k8s.io/kueue "$v" GoMod)
  moddir=$(module_file sigs.k8s.io/kueue "$v" Dir)
  dir=$(wrapper "kueue-$v" "// Generated by ci/build-tools.sh.
module dihera.local/tools/kueue

$(go_line "$mod")

require sigs.k8s.io/kueue $v" "$moddir")
  if [[ $(grep -c "$literal" "$moddir/cmd/kueue/main.go") != 1 ]]; then
    log "Kueue $v's cmd/kueue/main.go no longer holds $literal once: update ci/tools/kueue"; return 1
  fi
  mkdir -p "$dir/kueuemain"
  sed "s|$literal|metricsCertDir()|" "$moddir/cmd/kueue/main.go" > "$dir/kueuemain/main.go"
  cp "$here/tools/kueue/metrics_cert_dir.go" "$dir/kueuemain/"
  sum=$(cat "$dir/kueuemain/"*.go | sha256sum | cut -c1-12)
  go_build "$dir" "$bin/kueue-$v/kueue" ./kueuemain "$v main-$sum static" \
    "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$v"
  if [[ ! -d "$bin/kueue-$v/crds" && -z $prefetch ]]; then
    mkdir -p "$bin/kueue-$v/crds.tmp"
    cp "$moddir"/config/components/crd/bases/*.yaml "$bin/kueue-$v/crds.tmp/"
    chmod -R u+w "$bin/kueue-$v/crds.tmp"
    mv "$bin/kueue-$v/crds.tmp" "$bin/kueue-$v/crds"
  fi
  # its webhook configurations (service clientConfig): ci/devcluster/kueue.py points them at loopback
  [[ -n $prefetch ]] || install -m 644 "$moddir/config/components/webhook/manifests.yaml" "$bin/kueue-$v/webhooks.yaml"
}

build_seaweedfs() { # build_seaweedfs VERSION: `weed`, the object store (S3 gateway) of the real node's artifacts
  local v=$1 moddir copy
  built "$bin/seaweedfs-$v/weed" "$v static" && return 0
  moddir=$(module_file github.com/seaweedfs/seaweedfs "$v" Dir)
  [[ -n $prefetch ]] && { prefetch_modules "$moddir" ./weed; return 0; }
  # its go.mod has replace directives, which `go install PKG@VERSION` refuses: build in a copy of the module
  copy="$src/seaweedfs-$v"
  rm -rf "$copy"; cp -r "$moddir" "$copy"; chmod -R u+w "$copy"
  go_build "$copy" "$bin/seaweedfs-$v/weed" ./weed "$v static"
  rm -rf "$copy" # ~0.1 GB; copied from the module cache again when needed
}

own_program() { # own_program NAME: a small program of this repository (ci/tools/NAME), rebuilt when its source changes
  go_build "$here/tools/$1" "$bin/$1" . "src-$(cat "$here/tools/$1"/*.go | sha256sum | cut -c1-16)"
}


# argo-server by default only for an Argo major with a loopback argo server main (v4: the compat pair's v3 runs no UI)
has_server() { [[ -f "$here/tools/argo/$(echo "$ARGO_VERSION" | cut -d. -f1)/server/main.go" ]]; }
default="etcd kube-apiserver kube-controller-manager kube-scheduler kwok workflow-controller local-path-provisioner $(has_server && echo argo-server || true) helm ct helm-docs"
want=${*:-default}
want=${want//default/$default}

# The Argo UI's yarn install (network) and webpack build (~3.5 CPU-minutes) run in the background, niced,
# while the Go programs build; argo-server, which embeds the UI, is built last, once the UI is there.
ui_pid= ui_log="$cache/argo-ui-build.log"
if [[ -z $prefetch && " $want " == *" argo-server "* && $want != argo-server ]] && ! ui_built "$ARGO_VERSION"; then
  (renice -n 10 -p "$BASHPID" >/dev/null; build_argo_ui "$ARGO_VERSION") > "$ui_log" 2>&1 &
  ui_pid=$!
  log "building the Argo UI in the background (log: $ui_log)"
  want="$(echo " $want " | sed 's/ argo-server / /') argo-server"
fi
wait_ui() {
  [[ -n $ui_pid ]] || return 0
  if ! wait "$ui_pid"; then tail -n 40 "$ui_log" >&2; log "the Argo UI's build failed (log: $ui_log)"; return 1; fi
  grep -h '^\[build-tools\] \(yarn install\|built\)' "$ui_log" >&2 || true
}

read -ra tools <<< "$want"
for i in "${!tools[@]}"; do
  tool=${tools[i]} next=("${tools[@]:i+1}")
  lock_tool "$tool-$KUBERNETES_VERSION-$ARGO_VERSION"
  case $tool in
    etcd) ev=$(etcd_version "$KUBERNETES_VERSION"); build_etcd "$ev"; link "$bin/etcd-$ev/etcd" etcd ;;
    kube-apiserver|kube-controller-manager|kube-scheduler)
      build_kubernetes "$KUBERNETES_VERSION" "$tool"; link "$bin/kubernetes-$KUBERNETES_VERSION/$tool" "$tool" ;;
    workflow-controller) # Argo's controller package in a loopback-only process shell (see its main.go)
      build_argo "$ARGO_VERSION" workflow-controller
      link "$bin/argo-$ARGO_VERSION/workflow-controller" workflow-controller
      link "$bin/argo-$ARGO_VERSION/crds" argo-crds ;;
    local-path-provisioner) install_mod local-path-provisioner "$LOCAL_PATH_VERSION" \
            github.com/rancher/local-path-provisioner "-X main.VERSION=$LOCAL_PATH_VERSION"
      link "$bin/local-path-provisioner" local-path-provisioner ;;
    kwok) install_mod kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok \
            "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION"; link "$bin/kwok" kwok ;;
    helm) # without the Kubernetes version ldflags helm assumes v1.20 for .Capabilities and kubeVersion checks
      kminor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
      install_mod helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm \
        "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION $(printf -- '-X helm.sh/helm/v3/pkg/%s=%s ' \
          chartutil.k8sVersionMajor 1 chartutil.k8sVersionMinor "$kminor" \
          lint/rules.k8sVersionMajor 1 lint/rules.k8sVersionMinor "$kminor")" ;;
    helm-docs) install_mod helm-docs "$HELM_DOCS_VERSION" github.com/norwoodj/helm-docs/cmd/helm-docs ;;
    ct) go_build "$here/tools/ct" "$bin/ct" github.com/helm/chart-testing/v3/ct "$CT_VERSION" \
          "-X github.com/helm/chart-testing/v3/ct/cmd.Version=$CT_VERSION" ;;
    kubelet) # the real node's kubelet: its own version (cgroup v1 needs 1.35, within the supported skew)
      build_kubernetes "$KUBELET_VERSION" kubelet; link "$bin/kubernetes-$KUBELET_VERSION/kubelet" kubelet ;;
    coredns) # a small CoreDNS: only the plugins the real node's Corefile uses (see tools/coredns)
      go_build "$here/tools/coredns" "$bin/coredns-$COREDNS_VERSION/coredns" ./corednsmain \
        "$COREDNS_VERSION $(sha256sum "$here/tools/coredns/corednsmain/main.go" | cut -c1-12)"
      link "$bin/coredns-$COREDNS_VERSION/coredns" coredns ;;
    argo-ui) [[ -n $prefetch ]] || build_argo_ui "$ARGO_VERSION" ;; # the UI alone (make tools builds it in the background)
    argo-server) [[ -n $prefetch ]] && continue # its modules are the workflow-controller's
      wait_ui; build_argo_server "$ARGO_VERSION"; link "$bin/argo-$ARGO_VERSION/argo-server" argo-server ;;
    argoexec) build_argoexec "$ARGO_VERSION"; link "$bin/argo-$ARGO_VERSION/argoexec" argoexec ;;
    kueue) build_kueue "$KUEUE_VERSION"; link "$bin/kueue-$KUEUE_VERSION/kueue" kueue
      link "$bin/kueue-$KUEUE_VERSION/crds" kueue-crds
      link "$bin/kueue-$KUEUE_VERSION/webhooks.yaml" kueue-webhooks.yaml ;;
    seaweedfs) build_seaweedfs "$SEAWEEDFS_VERSION"; link "$bin/seaweedfs-$SEAWEEDFS_VERSION/weed" seaweedfs ;;
    pause|netns-forward) own_program "$tool"; link "$bin/$tool" "$tool" ;;
    *) log "unknown tool: $tool"; exit 2 ;;
  esac
done
[[ -n $prefetch ]] && { rm -rf "$src"; exit 0; }
log "all tools ready in $bin (Kubernetes $KUBERNETES_VERSION, Argo $ARGO_VERSION: $pair)"
