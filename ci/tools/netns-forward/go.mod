// netns-forward: loopback TCP forwarders between the host and the real node's network namespace.
module dihera.local/tools/netns-forward

go 1.25.0

require golang.org/x/sys v0.38.0
