// The process shell every Argo major shares: flags, the loopback guard, the
// client config, the signal context and the loopback /healthz server. It
// imports no Argo package; ci/build-tools.sh copies it beside the main.go of
// the major version it builds (v3/main.go, v4/main.go hold what differs).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// options are the command line of the loopback workflow-controller.
type options struct {
	kubeconfig, namespace, configMap, executorImage, healthAddr, logLevel string
	workers                                                               int
	executorPlugins                                                       bool
}

func parseOptions(defaultConfigMap string) (options, error) {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster")
	flag.StringVar(&o.namespace, "namespace", "argo", "namespace holding the controller's ConfigMap")
	flag.StringVar(&o.configMap, "configmap", defaultConfigMap, "name of the controller's ConfigMap")
	flag.StringVar(&o.executorImage, "executor-image", "", "executor image (overrides the ConfigMap)")
	flag.StringVar(&o.healthAddr, "health-address", "127.0.0.1:6060", "address of /healthz; empty disables it")
	flag.IntVar(&o.workers, "workflow-workers", 4, "number of workflow workers")
	flag.BoolVar(&o.executorPlugins, "executor-plugins", false, "load executor plugins (ConfigMaps labelled ExecutorPlugin)")
	flag.StringVar(&o.logLevel, "loglevel", "info", "debug|info|warn|error")
	flag.Parse()
	if host, _, err := net.SplitHostPort(o.healthAddr); o.healthAddr != "" && (err != nil || !net.ParseIP(host).IsLoopback()) {
		return o, fmt.Errorf("--health-address %q: want a loopback host:port", o.healthAddr)
	}
	return o, nil
}

func (o options) restConfig() (*rest.Config, error) {
	config, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, err
	}
	config.QPS, config.Burst = 50, 100
	return config, nil
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

// serveHealth serves healthz at o.healthAddr (a loopback address) until ctx ends.
func (o options) serveHealth(ctx context.Context, healthz http.Handler, failed func(error)) {
	if o.healthAddr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/healthz", healthz)
	srv := &http.Server{Addr: o.healthAddr, Handler: mux}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	go func() {
		if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			failed(err)
		}
	}()
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "workflow-controller:", err)
		os.Exit(1)
	}
}
