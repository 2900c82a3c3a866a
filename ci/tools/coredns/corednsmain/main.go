// Command coredns is CoreDNS with only the plugins the real node's Corefile uses: bind, errors,
// log, cache and kubernetes (serving cluster.local). No forward plugin: pods resolve nothing else.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
)

func init() {
	// The order plugins run in, as in CoreDNS's plugin.cfg.
	dnsserver.Directives = []string{"bind", "errors", "log", "cache", "kubernetes"}
}

func main() {
	coremain.Run()
}
