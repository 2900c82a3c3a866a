//go:build tools

// Package tools pins the chart-testing command this module builds.
package tools

import _ "github.com/helm/chart-testing/v3/ct"
