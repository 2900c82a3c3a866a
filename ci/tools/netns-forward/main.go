// Command netns-forward relays TCP connections between network namespaces, so the real node's
// namespace (which has no route to anything) and the host meet only on loopback.
//
// Each -f argument is LISTEN_NS,LISTEN_ADDR,DIAL_NS,DIAL_ADDR where a namespace is a path to a
// network namespace file (/run/netns/NAME) or "host" for the namespace this program starts in:
//
//	netns-forward -f /run/netns/dihera-node,10.96.0.1:443,host,127.0.0.1:21002
//
// -connect UNIX_SOCKET,NS,CIDR is an HTTP CONNECT proxy on a unix socket: a target inside CIDR is
// dialled inside NS, a loopback target in the host's namespace, any other refused. The API server
// reaches nodes and pods through it (its EgressSelectorConfiguration), so the real node's addresses
// are only ever dialled in its namespace and nothing is dialled beyond loopback and that namespace.
//
// A socket keeps the namespace it was created in, so each listener and each outgoing connection
// is opened on a thread switched into its namespace (setns), and the thread is switched back.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

type forward struct{ listenNS, listenAddr, dialNS, dialAddr string }

type specs []forward

func (s *specs) String() string { return fmt.Sprint(*s) }

func (s *specs) Set(value string) error {
	parts := strings.Split(value, ",")
	if len(parts) != 4 {
		return fmt.Errorf("-f %q: want LISTEN_NS,LISTEN_ADDR,DIAL_NS,DIAL_ADDR", value)
	}
	*s = append(*s, forward{parts[0], parts[1], parts[2], parts[3]})
	return nil
}

var hostNS *os.File

func nsFile(ns string) (*os.File, error) {
	if ns == "host" {
		return hostNS, nil
	}
	return os.Open(ns)
}

// inNS runs fn on a thread switched into network namespace ns.
func inNS(ns string, fn func() error) error {
	target, err := nsFile(ns)
	if err != nil {
		return err
	}
	if target != hostNS {
		defer target.Close()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", ns, err)
	}
	ferr := fn()
	if err := unix.Setns(int(hostNS.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread cannot be trusted any more: leaving it locked makes the runtime discard it.
		runtime.LockOSThread()
	}
	return ferr
}

func serve(f forward, ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			log.Fatalf("accept on %s: %v", f.listenAddr, err)
		}
		go relay(f, conn)
	}
}

func dialIn(ns, addr string) (net.Conn, error) {
	var out net.Conn
	err := inNS(ns, func() (err error) { out, err = net.Dial("tcp", addr); return })
	return out, err
}

func relay(f forward, in net.Conn) {
	defer in.Close()
	out, err := dialIn(f.dialNS, f.dialAddr)
	if err != nil {
		log.Printf("dial %s in %s: %v", f.dialAddr, f.dialNS, err)
		return
	}
	defer out.Close()
	pipeBoth(in, out)
}

type connectProxy struct {
	ns    string
	inner *net.IPNet
}

// where says in which namespace to dial target, or refuses it.
func (p connectProxy) where(target string) (string, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return "", err
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return "", fmt.Errorf("%s: not an IP address", target)
	case p.inner.Contains(ip):
		return p.ns, nil
	case ip.IsLoopback():
		return "host", nil
	}
	return "", fmt.Errorf("%s: neither in %s nor loopback: refused", target, p.inner)
}

// connect serves one HTTP CONNECT request: dial its target where it belongs, answer 200, then relay.
func (p connectProxy) connect(in net.Conn) {
	defer in.Close()
	reader := bufio.NewReader(in)
	req, err := http.ReadRequest(reader)
	if err != nil || req.Method != http.MethodConnect {
		_, _ = io.WriteString(in, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	ns, err := p.where(req.Host)
	if err != nil {
		log.Printf("CONNECT %v", err)
		_, _ = io.WriteString(in, "HTTP/1.1 403 Forbidden\r\n\r\n")
		return
	}
	out, err := dialIn(ns, req.Host)
	if err != nil {
		log.Printf("CONNECT %s in %s: %v", req.Host, ns, err)
		_, _ = io.WriteString(in, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer out.Close()
	if _, err := io.WriteString(in, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if n := reader.Buffered(); n > 0 { // bytes the client sent right after its request
		early, _ := reader.Peek(n)
		if _, err := out.Write(early); err != nil {
			return
		}
	}
	pipeBoth(in, out)
}

func serveConnect(spec string) {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		log.Fatalf("-connect %q: want UNIX_SOCKET,NS,CIDR", spec)
	}
	_, inner, err := net.ParseCIDR(parts[2])
	if err != nil {
		log.Fatalf("-connect %q: %v", spec, err)
	}
	proxy := connectProxy{parts[1], inner}
	_ = os.Remove(parts[0])
	ln, err := net.Listen("unix", parts[0])
	if err != nil {
		log.Fatalf("listen on %s: %v", parts[0], err)
	}
	log.Printf("CONNECT proxy on %s: %s in %s, loopback on the host", parts[0], parts[2], parts[1])
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				log.Fatalf("accept on %s: %v", parts[0], err)
			}
			go proxy.connect(conn)
		}
	}()
}

func pipeBoth(in, out net.Conn) {
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tcp, ok := dst.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	<-done
}

func main() {
	var forwards specs
	flag.Var(&forwards, "f", "LISTEN_NS,LISTEN_ADDR,DIAL_NS,DIAL_ADDR (repeatable)")
	connectSpec := flag.String("connect", "", "UNIX_SOCKET,NS,CIDR: an HTTP CONNECT proxy (CIDR dialled in NS)")
	flag.Parse()
	if len(forwards) == 0 && *connectSpec == "" {
		log.Fatal("no -f or -connect given")
	}
	var err error
	if hostNS, err = os.Open("/proc/self/ns/net"); err != nil {
		log.Fatal(err)
	}
	for _, f := range forwards {
		var ln net.Listener
		if err := inNS(f.listenNS, func() (err error) { ln, err = net.Listen("tcp", f.listenAddr); return }); err != nil {
			log.Fatalf("listen on %s in %s: %v", f.listenAddr, f.listenNS, err)
		}
		log.Printf("forwarding %s %s -> %s %s", f.listenNS, f.listenAddr, f.dialNS, f.dialAddr)
		go serve(f, ln)
	}
	if *connectSpec != "" {
		serveConnect(*connectSpec)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
