// Command workflow-controller runs Argo's workflow controller (v3) for the local
// dev cluster. It calls Argo's own controller package; only the process shell
// (../shell.go) differs from upstream's cmd/workflow-controller, which always
// serves /healthz (and, with ARGO_PPROF, pprof) on ":6060", every interface, a
// fixed port. Here the health server binds a given loopback address, there is
// no leader election (one replica), and no Prometheus server is started.
package main

import (
	"net/http"

	log "github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"

	wfclientset "github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	cmdutil "github.com/argoproj/argo-workflows/v3/util/cmd"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	"github.com/argoproj/argo-workflows/v3/workflow/controller"
)

func run() error {
	o, err := parseOptions(common.ConfigMapName)
	if err != nil {
		return err
	}
	// Registers klog's -v, which the controller copies into every executor's --gloglevel (empty otherwise,
	// and argoexec refuses an empty value).
	cmdutil.SetGLogLevel(0)
	level, err := log.ParseLevel(o.logLevel)
	if err != nil {
		return err
	}
	log.SetLevel(level)
	config, err := o.restConfig()
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()

	wfc, err := controller.NewWorkflowController(ctx, config,
		kubernetes.NewForConfigOrDie(config), wfclientset.NewForConfigOrDie(config),
		o.namespace, "", o.executorImage, "", "text", o.configMap, o.executorPlugins)
	if err != nil {
		return err
	}
	go wfc.Run(ctx, o.workers, 2, 2, 2, 2)
	o.serveHealth(ctx, http.HandlerFunc(wfc.Healthz), func(err error) { log.WithError(err).Error("health server stopped") })
	<-ctx.Done()
	return nil
}
