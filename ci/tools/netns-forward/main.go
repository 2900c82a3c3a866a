// Command netns-forward relays TCP connections between network namespaces, so the real node's
// namespace (which has no route to anything) and the host meet only on loopback.
//
// Each -f argument is LISTEN_NS,LISTEN_ADDR,DIAL_NS,DIAL_ADDR where a namespace is a path to a
// network namespace file (/run/netns/NAME) or "host" for the namespace this program starts in:
//
//	netns-forward -f /run/netns/dihera-node,10.96.0.1:443,host,127.0.0.1:21002
//
// A socket keeps the namespace it was created in, so each listener and each outgoing connection
// is opened on a thread switched into its namespace (setns), and the thread is switched back.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
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

func relay(f forward, in net.Conn) {
	defer in.Close()
	var out net.Conn
	if err := inNS(f.dialNS, func() (err error) { out, err = net.Dial("tcp", f.dialAddr); return }); err != nil {
		log.Printf("dial %s in %s: %v", f.dialAddr, f.dialNS, err)
		return
	}
	defer out.Close()
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
	flag.Parse()
	if len(forwards) == 0 {
		log.Fatal("no -f given")
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
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
