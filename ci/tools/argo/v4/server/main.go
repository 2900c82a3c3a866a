// Command argo-server runs Argo's API server and UI (v4) for the local dev cluster,
// loopback only. It calls Argo's own apiserver package as upstream's `argo server`
// (cmd/argo/commands/server.go) does, with `--auth-mode=server --secure=false`;
// upstream listens on ":PORT", every interface, with no option to change it, so
// ci/build-tools.sh builds this main against a copy of the module patched with
// bind-host.patch (apiserver.BindHost) and holding the built UI (ui/dist/app).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"

	events "github.com/argoproj/argo-events/pkg/client/clientset/versioned"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/argoproj/argo-workflows/v4"
	wfclientset "github.com/argoproj/argo-workflows/v4/pkg/client/clientset/versioned"
	"github.com/argoproj/argo-workflows/v4/server/apiserver"
	"github.com/argoproj/argo-workflows/v4/server/auth"
	"github.com/argoproj/argo-workflows/v4/server/types"
	"github.com/argoproj/argo-workflows/v4/util/logging"
	"github.com/argoproj/argo-workflows/v4/workflow/common"
)

type options struct {
	kubeconfig, namespace, configMap, address, logLevel string
}

func parseOptions() (options, string, int, error) {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster")
	flag.StringVar(&o.namespace, "namespace", "argo", "namespace holding the controller's ConfigMap")
	flag.StringVar(&o.configMap, "configmap", common.ConfigMapName, "name of the controller's ConfigMap (links, columns)")
	flag.StringVar(&o.address, "address", "127.0.0.1:2746", "loopback host:port the API and the UI listen on")
	flag.StringVar(&o.logLevel, "loglevel", "info", "debug|info|warn|error")
	flag.Parse()
	host, port, err := net.SplitHostPort(o.address)
	number, portErr := strconv.Atoi(port)
	if err != nil || portErr != nil || !net.ParseIP(host).IsLoopback() {
		return o, "", 0, fmt.Errorf("--address %q: want a loopback host:port, e.g. 127.0.0.1:2746", o.address)
	}
	return o, host, number, nil
}

func clients(config *restclient.Config) *types.Clients {
	return &types.Clients{
		Dynamic:    dynamic.NewForConfigOrDie(config),
		Events:     events.NewForConfigOrDie(config),
		Kubernetes: kubernetes.NewForConfigOrDie(config),
		Workflow:   wfclientset.NewForConfigOrDie(config),
	}
}

func run() error {
	o, host, port, err := parseOptions()
	if err != nil {
		return err
	}
	level, err := logging.ParseLevel(o.logLevel)
	if err != nil {
		return err
	}
	ctx := logging.WithLogger(context.Background(), logging.NewSlogLogger(level, logging.Text))
	config, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	config = restclient.AddUserAgent(config, fmt.Sprintf("argo-workflows/%s argo-server", argo.GetVersion().Version))
	config.QPS, config.Burst = 20, 30
	modes := auth.Modes{}
	if err := modes.Add(string(auth.Server)); err != nil {
		return err
	}
	// upstream's defaults for every other option; no TLS (--secure=false): loopback only
	server, err := apiserver.NewArgoServer(ctx, apiserver.ArgoServerOpts{
		BaseHRef: "/", Namespace: o.namespace, SSONamespace: o.namespace, ConfigName: o.configMap,
		Clients: clients(config), RestConfig: config, AuthModes: modes, HSTS: true,
		EventOperationQueueSize: 16, EventWorkerCount: 4, XFrameOptions: "DENY", APIRateLimit: 1000,
		AllowedLinkProtocol: []string{"http", "https"},
	})
	if err != nil {
		return err
	}
	apiserver.BindHost = host
	server.Run(ctx, port, func(string) {}) // returns only if it cannot listen; SIGTERM ends the process
	return fmt.Errorf("the server stopped (could it listen on %s? see the lines above)", o.address)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "argo-server:", err)
		os.Exit(1)
	}
}
