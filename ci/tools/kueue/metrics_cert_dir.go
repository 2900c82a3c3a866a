// The one addition to Kueue's own main (cmd/kueue/main.go, copied next to this file by
// ci/build-tools.sh). Without internal cert management that main reads the metrics server's
// certificate from a fixed path, /etc/kueue/metrics/certs (no flag, no configuration field), and
// exits when it is missing; the dev cluster keeps its certificates in its state dir, so the copy's
// one literal is replaced by a call to metricsCertDir (build-tools fails when the literal is gone).
package main

import "os"

// metricsCertDir is $KUEUE_METRICS_CERT_DIR (tls.crt, tls.key), else upstream's path.
func metricsCertDir() string {
	if dir := os.Getenv("KUEUE_METRICS_CERT_DIR"); dir != "" {
		return dir
	}
	return "/etc/kueue/metrics/certs"
}
