// Command workflow-controller runs Argo's workflow controller (v4) for the local
// dev cluster. It calls Argo's own controller package; only the process shell
// (../shell.go) differs from upstream's cmd/workflow-controller, which always
// serves /healthz (and, with ARGO_PPROF, pprof) on ":6060", every interface, a
// fixed port. Here the health server binds a given loopback address, there is
// no leader election (one replica), and no Prometheus server is started.
package main

import (
	"net/http"

	"k8s.io/client-go/kubernetes"

	wfclientset "github.com/argoproj/argo-workflows/v4/pkg/client/clientset/versioned"
	cmdutil "github.com/argoproj/argo-workflows/v4/util/cmd"
	"github.com/argoproj/argo-workflows/v4/util/logging"
	"github.com/argoproj/argo-workflows/v4/workflow/common"
	"github.com/argoproj/argo-workflows/v4/workflow/controller"
)

func run() error {
	o, err := parseOptions(common.ConfigMapName)
	if err != nil {
		return err
	}
	// Registers klog's -v, which the controller copies into every executor's --gloglevel (empty otherwise,
	// and argoexec refuses an empty value).
	cmdutil.SetGLogLevel(0)
	level, err := logging.ParseLevel(o.logLevel)
	if err != nil {
		return err
	}
	logger := logging.NewSlogLogger(level, logging.Text)
	config, err := o.restConfig()
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	ctx = logging.WithLogger(ctx, logger)

	wfc, err := controller.NewWorkflowController(ctx, config,
		kubernetes.NewForConfigOrDie(config), wfclientset.NewForConfigOrDie(config),
		o.namespace, "", o.executorImage, "", "text", o.configMap, o.executorPlugins, false)
	if err != nil {
		return err
	}
	go wfc.Run(ctx, o.workers, 2, 2, 2, 2)
	o.serveHealth(ctx, controller.LogMiddleware(logger, http.HandlerFunc(wfc.Healthz)), func(err error) {
		logger.WithError(err).Error(ctx, "health server stopped")
	})
	<-ctx.Done()
	return nil
}
