// Command faultproxy runs internal/faultproxy in front of one server, for
// scripts/bench.sh: latency per request and a bandwidth cap, on
// 127.0.0.1. It prints its URL on stdout and serves until killed; a GET
// of URL/.faultproxy/stats answers with the requests it forwarded and
// the bytes of bodies it sent ("requests=N bytes=M").
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/npzfs/npzfs/internal/faultproxy"
)

func main() {
	upstream := flag.String("upstream", "", "the server to forward to (http://127.0.0.1:PORT)")
	latency := flag.Duration("latency", 20*time.Millisecond, "added before each request is forwarded")
	rate := flag.Int64("rate", 100_000_000, "bytes a second for all bodies together (0: no cap)")
	flag.Parse()
	if *upstream == "" {
		fmt.Fprintln(os.Stderr, "faultproxy: -upstream is required")
		os.Exit(2)
	}
	p, err := faultproxy.Start(*upstream, faultproxy.Options{Latency: *latency, BytesPerSec: *rate})
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultproxy:", err)
		os.Exit(1)
	}
	fmt.Println(p.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	p.Close()
}
