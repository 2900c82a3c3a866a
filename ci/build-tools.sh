#!/usr/bin/env bash
# Builds the local control plane's programs from the Go module proxy into a cache
# outside the checkout ($DIHERA_CACHE, default ~/.cache/dihera). A program whose
# pinned version is already built is skipped, so a second run takes seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=ci/versions.env
source "$here/versions.env"
cache=${DIHERA_CACHE:-$HOME/.cache/dihera}
bin="$cache/bin"
mkdir -p "$bin"
export GOFLAGS=-mod=mod
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

log() { printf '[build-tools] %s\n' "$*" >&2; }

# built NAME STAMP: true when $bin/NAME was built with STAMP (version and ldflags), so a change of
# either rebuilds it.
built() { [[ -x "$bin/$1" && "$(cat "$bin/.$1.version" 2>/dev/null)" == "$2" ]]; }
stamp() { echo "$2" > "$bin/.$1.version"; }

build_in() { # build_in WRAPPER_DIR NAME VERSION PACKAGE [LDFLAGS]
  local dir=$1 name=$2 version=$3 pkg=$4 ldflags=${5:-}
  built "$name" "$version" && return 0
  log "building $name $version"
  local start=$SECONDS
  (cd "$here/tools/$dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
  stamp "$name" "$version"
  log "built $name in $((SECONDS - start))s"
}

install_mod() { # install_mod NAME VERSION MODULE_PATH [LDFLAGS]
  local name=$1 version=$2 pkg=$3 ldflags=${4:-}
  built "$name" "$version $ldflags" && return 0
  log "building $name $version"
  local start=$SECONDS tmp
  tmp=$(mktemp -d)
  GOBIN="$tmp" go install -trimpath -ldflags "-s -w $ldflags" "$pkg@$version"
  mv "$tmp/$name" "$bin/$name"
  rm -rf "$tmp"
  stamp "$name" "$version $ldflags"
  log "built $name in $((SECONDS - start))s"
}

k8s_ldflags() { # k8s_ldflags [VERSION]: defaults to the control plane's KUBERNETES_VERSION
  local v=${1:-$KUBERNETES_VERSION} minor
  minor=$(echo "$v" | cut -d. -f2)
  echo "-X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
}

argo_major() { echo "${ARGO_VERSION%%.*}"; } # v3 or v4: the Go module's major suffix

# Argo's workflow/executor/osspecific/signal_linux.go is a symlink to signal_darwin.go upstream, and
# module zips drop symlinks (argoexec does not build from the proxy's zip). argoexec is built from a
# copy of the module with that file restored: a modfile of its own (tools/argo's, plus a replace line).
argoexec_modfile() {
  local mod src modfile="$cache/src/argoexec.go.mod"
  mod="github.com/argoproj/argo-workflows/$(argo_major)"
  src="$cache/src/argo-workflows-$ARGO_VERSION"
  if [[ ! -f "$src/workflow/executor/osspecific/signal_linux.go" ]]; then
    rm -rf "$src" && mkdir -p "$cache/src"
    cp -r "$(cd "$here/tools/argo" && go list -m -f '{{.Dir}}' "$mod")" "$src" && chmod -R u+w "$src"
    cp "$src/workflow/executor/osspecific/signal_darwin.go" "$src/workflow/executor/osspecific/signal_linux.go"
  fi
  cp "$here/tools/argo/go.mod" "$modfile" && cp "$here/tools/argo/go.sum" "${modfile%.mod}.sum"
  echo "replace $mod => $src" >> "$modfile"
  echo "$modfile"
}

want=${*:-etcd kube-apiserver kube-controller-manager kube-scheduler kwok workflow-controller helm ct helm-docs}
for tool in $want; do
  case $tool in
    etcd) build_in etcd etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 ;;
    kube-apiserver|kube-controller-manager|kube-scheduler)
      build_in kubernetes "$tool" "$KUBERNETES_VERSION" "k8s.io/kubernetes/cmd/$tool" "$(k8s_ldflags)" ;;
    kwok) install_mod kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok \
            "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" ;;
    workflow-controller) # Argo's controller package in a loopback-only process shell (see its main.go)
      build_in argo workflow-controller "$ARGO_VERSION+loopback-$(cat "$here"/tools/argo/workflowcontroller/*.go | sha256sum | cut -c1-12)" ./workflowcontroller \
        "-X github.com/argoproj/argo-workflows/v3.version=$ARGO_VERSION" ;;
    helm) # without the Kubernetes version ldflags helm assumes v1.20 for .Capabilities and kubeVersion checks
      kminor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
      install_mod helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm \
        "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION $(printf -- '-X helm.sh/helm/v3/pkg/%s=%s ' \
          chartutil.k8sVersionMajor 1 chartutil.k8sVersionMinor "$kminor" \
          lint/rules.k8sVersionMajor 1 lint/rules.k8sVersionMinor "$kminor")" ;;
    helm-docs) install_mod helm-docs "$HELM_DOCS_VERSION" github.com/norwoodj/helm-docs/cmd/helm-docs ;;
    ct) build_in ct ct "$CT_VERSION" github.com/helm/chart-testing/v3/ct \
          "-X github.com/helm/chart-testing/v3/ct/cmd.Version=$CT_VERSION" ;;
    kubelet) # the real node's kubelet: its own wrapper module and version (cgroup v1 needs 1.35)
      build_in kubelet kubelet "$KUBELET_VERSION" k8s.io/kubernetes/cmd/kubelet "$(k8s_ldflags "$KUBELET_VERSION")" ;;
    coredns) # a small CoreDNS: only the plugins the real node's Corefile uses (see tools/coredns)
      build_in coredns coredns "$COREDNS_VERSION" ./corednsmain ;;
    argoexec) # Argo's executor (init/wait containers), static so it runs in a scratch image
      CGO_ENABLED=0 GOFLAGS="$GOFLAGS -modfile=$(argoexec_modfile)" build_in argo argoexec "$ARGO_VERSION static" \
        "github.com/argoproj/argo-workflows/$(argo_major)/cmd/argoexec" \
        "-X github.com/argoproj/argo-workflows/$(argo_major).version=$ARGO_VERSION" ;;
    pause|netns-forward) # small programs of this repository: rebuilt when their source changes
      CGO_ENABLED=0 build_in "$tool" "$tool" "src-$(cat "$here/tools/$tool"/*.go | sha256sum | cut -c1-16)" . ;;
    *) log "unknown tool: $tool"; exit 2 ;;
  esac
done
# Argo's CRDs ship in its module; copy them next to the binaries.
argo_dir=$(cd "$here/tools/argo" && go list -m -f '{{.Dir}}' github.com/argoproj/argo-workflows/v3)
mkdir -p "$cache/argo-crds"
cp "$argo_dir"/manifests/base/crds/minimal/argoproj.io_*.yaml "$cache/argo-crds/"
chmod -R u+w "$cache/argo-crds"
log "all tools ready in $bin"
