//go:build tools

// Package tools pins the kubelet of the real node. It has its own wrapper module (a copy of
// ../kubernetes with the same staging replaces) so the kubelet stays at KUBELET_VERSION (1.35, the
// last minor that runs on cgroup v1) whatever Kubernetes version the control plane moves to.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kubelet"
)
