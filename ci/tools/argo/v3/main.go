// Command workflow-controller runs Argo's workflow controller for the local
// dev cluster. It calls Argo's own controller package; only the process shell
// differs from upstream's cmd/workflow-controller, which always serves /healthz
// (and, with ARGO_PPROF, pprof) on ":6060", every interface, a fixed port.
// Here the health server binds a given loopback address, there is no leader
// election (one replica), and no Prometheus server is started.
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

	log "github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	wfclientset "github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	cmdutil "github.com/argoproj/argo-workflows/v3/util/cmd"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/argoproj/argo-workflows/v3/workflow/controller"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "workflow-controller:", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	namespace := flag.String("namespace", "argo", "namespace holding the controller's ConfigMap")
	configMap := flag.String("configmap", common.ConfigMapName, "name of the controller's ConfigMap")
	executorImage := flag.String("executor-image", "", "executor image (overrides the ConfigMap)")
	healthAddr := flag.String("health-address", "127.0.0.1:6060", "address of /healthz; empty disables it")
	workers := flag.Int("workflow-workers", 4, "number of workflow workers")
	logLevel := flag.String("loglevel", "info", "debug|info|warn|error")
	flag.Parse()
	// Registers klog's -v, which the controller copies into every executor's --gloglevel (empty otherwise,
	// and argoexec refuses an empty value).
	cmdutil.SetGLogLevel(0)

	level, err := log.ParseLevel(*logLevel)
	if err != nil {
		return err
	}
	log.SetLevel(level)
	if host, _, err := net.SplitHostPort(*healthAddr); *healthAddr != "" && (err != nil || !net.ParseIP(host).IsLoopback()) {
		return fmt.Errorf("--health-address %q: want a loopback host:port", *healthAddr)
	}

	restConfig, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS, restConfig.Burst = 50, 100

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	wfc, err := controller.NewWorkflowController(ctx, restConfig,
		kubernetes.NewForConfigOrDie(restConfig), wfclientset.NewForConfigOrDie(restConfig),
		*namespace, "", *executorImage, "", "text", *configMap, false)
	if err != nil {
		return err
	}
	go wfc.Run(ctx, *workers, 2, 2, 2, 2)

	if *healthAddr != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", wfc.Healthz)
		srv := &http.Server{Addr: *healthAddr, Handler: mux}
		go func() { <-ctx.Done(); _ = srv.Close() }()
		go func() {
			if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
				log.WithError(err).Error("health server stopped")
			}
		}()
	}
	<-ctx.Done()
	return nil
}
