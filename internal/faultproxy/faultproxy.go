// Package faultproxy is an HTTP proxy for tests and benchmarks, on
// 127.0.0.1, in front of one server (nginx, an S3 gateway): it adds
// latency to every request, caps the bandwidth of all bodies together,
// and spoils the answers a test chooses (errors, throttling, a 200 for a
// ranged request, a reset or truncated body). It keeps the Host header,
// so signed S3 requests still verify.
package faultproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fault is what the proxy does to one answer.
type Fault int

const (
	None      Fault = iota
	Status500       // 500 Internal Server Error, no data
	SlowDown        // 503 with S3's SlowDown error
	Whole200        // the answer's status turned into 200, Content-Range dropped
	Reset           // half the body, then the connection reset (RST)
	Truncate        // half the body, then the connection closed (FIN)
	Trickle         // the body at TrickleRate, a few bytes at a time: never stalled, never done
	Silent          // no answer at all, until the client gives up
	Drop            // the connection reset before any answer, as a refused one fails
	BadTotal        // the total of a 206's Content-Range off by one (up at odd requests, down at even)
)

// TrickleRate is the rate of a Trickle answer's body, in bytes a second.
const TrickleRate = 200

func (f Fault) String() string {
	return [...]string{"none", "500", "503 SlowDown", "200 to a range", "reset", "truncated", "trickle", "silent", "dropped", "bad total"}[f]
}

// Proxy forwards to one upstream server.
type Proxy struct {
	URL string // http://127.0.0.1:PORT

	latency  time.Duration
	choose   atomic.Pointer[func(n int64, r *http.Request) Fault]
	upstream *url.URL
	srv      *http.Server
	client   *http.Client
	n        atomic.Int64
	bytes    atomic.Int64 // of bodies sent
	faults   atomic.Int64
	rate     *limiter
}

// Options of a proxy.
type Options struct {
	// Latency is added before each request is forwarded.
	Latency time.Duration
	// BytesPerSec caps all bodies together (0: no cap).
	BytesPerSec int64
}

// Start starts a proxy to upstream (http://host:port). Close stops it.
func Start(upstream string, o Options) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableCompression = true
	t.MaxIdleConnsPerHost = 64
	p := &Proxy{URL: "http://" + l.Addr().String(), upstream: u, latency: o.Latency, client: &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	if o.BytesPerSec > 0 {
		p.rate = &limiter{perSec: o.BytesPerSec, next: time.Now()}
	}
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(l)
	return p, nil
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error {
	p.client.CloseIdleConnections()
	return p.srv.Close()
}

// SetFaults sets what picks the fault for each request (n counts
// requests from 1); nil spoils none.
func (p *Proxy) SetFaults(choose func(n int64, r *http.Request) Fault) {
	if choose == nil {
		p.choose.Store(nil)
		return
	}
	p.choose.Store(&choose)
}

// Requests is how many requests the proxy has received.
func (p *Proxy) Requests() int64 { return p.n.Load() }

// Bytes is how many bytes of bodies the proxy has sent.
func (p *Proxy) Bytes() int64 { return p.bytes.Load() }

// StatsPath is a path the proxy answers itself, without counting or
// forwarding it, with "requests=N bytes=M" (Requests, Bytes): for
// scripts, which cannot call them.
const StatsPath = "/.faultproxy/stats"

// Faults is how many answers the proxy has spoiled.
func (p *Proxy) Faults() int64 { return p.faults.Load() }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == StatsPath {
		fmt.Fprintf(w, "requests=%d bytes=%d\n", p.n.Load(), p.bytes.Load())
		return
	}
	n := p.n.Add(1)
	if p.latency > 0 {
		select {
		case <-time.After(p.latency):
		case <-r.Context().Done():
			return
		}
	}
	fault := None
	if choose := p.choose.Load(); choose != nil {
		fault = (*choose)(n, r)
	}
	if fault != None {
		p.faults.Add(1)
	}
	switch fault {
	case Status500:
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	case SlowDown:
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		return
	case Silent:
		<-r.Context().Done()
		return
	case Drop:
		reset(w)
		return
	}
	out := r.Clone(context.WithoutCancel(r.Context()))
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.Host = r.Host
	resp, err := p.client.Do(out.WithContext(r.Context()))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	status := resp.StatusCode
	if fault == Whole200 && status == http.StatusPartialContent {
		status = http.StatusOK
		w.Header().Del("Content-Range")
	}
	if fault == BadTotal && status == http.StatusPartialContent {
		w.Header().Set("Content-Range", offByOne(resp.Header.Get("Content-Range"), n%2 == 1))
	}
	w.WriteHeader(status)
	body := io.Reader(resp.Body)
	if fault == Reset || fault == Truncate {
		n := resp.ContentLength / 2
		if n < 0 {
			n = 1024
		}
		body = io.LimitReader(resp.Body, n)
	}
	if fault == Trickle {
		trickle(r.Context(), w, body)
		return
	}
	p.copy(w, body)
	if fault == Reset || fault == Truncate {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if fault == Reset {
			reset(w)
		} else if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
	}
}

// reset closes the answer's connection with a TCP RST.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	c, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// offByOne is a Content-Range "bytes FIRST-LAST/TOTAL" with TOTAL one
// more (up) or one less; any other is left as it is.
func offByOne(cr string, up bool) string {
	rng, tot, ok := strings.Cut(cr, "/")
	total, err := strconv.ParseInt(tot, 10, 64)
	if !ok || err != nil {
		return cr
	}
	if up {
		total++
	} else {
		total--
	}
	return rng + "/" + strconv.FormatInt(total, 10)
}

// copy sends body at the capped rate.
func (p *Proxy) copy(w http.ResponseWriter, body io.Reader) {
	buf := make([]byte, 64<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if p.rate != nil {
				p.rate.wait(int64(n))
			}
			k, werr := w.Write(buf[:n])
			p.bytes.Add(int64(k))
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// trickle sends body at TrickleRate, a tenth of a second's worth at a
// time, until it ends or the client goes away.
func trickle(ctx context.Context, w http.ResponseWriter, body io.Reader) {
	f, _ := w.(http.Flusher)
	buf := make([]byte, TrickleRate/10)
	for {
		n, err := io.ReadFull(body, buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if f != nil {
				f.Flush()
			}
		}
		if err != nil {
			return
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

// limiter spaces writes so that all of them together go at most perSec
// bytes a second.
type limiter struct {
	mu     sync.Mutex
	perSec int64
	next   time.Time // when the link is free again
}

func (l *limiter) wait(n int64) {
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	at := l.next
	l.next = l.next.Add(time.Duration(n * int64(time.Second) / l.perSec))
	l.mu.Unlock()
	time.Sleep(time.Until(at))
}

// Every spoils every k-th request with the faults in turn: a Choose
// function.
func Every(k int64, faults ...Fault) func(int64, *http.Request) Fault {
	return func(n int64, _ *http.Request) Fault {
		if k <= 0 || n%k != 0 || len(faults) == 0 {
			return None
		}
		return faults[(n/k-1)%int64(len(faults))]
	}
}

// Sprinkle spoils about perMille requests in a thousand with each of
// the faults, picked by a hash of the request's number, so that the same
// requests are spoiled in every run: a Choose function.
func Sprinkle(perMille int, faults ...Fault) func(int64, *http.Request) Fault {
	return func(n int64, _ *http.Request) Fault {
		h := uint64(n) * 0x9e3779b97f4a7c15 // Fibonacci hashing
		i := int((h>>32)%1000) / max(perMille, 1)
		if perMille <= 0 || i >= len(faults) {
			return None
		}
		return faults[i]
	}
}

// String describes the proxy.
func (p *Proxy) String() string {
	return fmt.Sprintf("proxy %s -> %s (latency %v)", p.URL, p.upstream, p.latency) + rateString(p.rate)
}

func rateString(l *limiter) string {
	if l == nil {
		return ""
	}
	return ", " + strconv.FormatInt(l.perSec>>20, 10) + " MiB/s"
}
