package cli

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/metrics"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/supervisor"
)

// subMetrics is sub's --metrics-addr: the worker's Prometheus endpoint and probes,
// fed by the run's own counters. A nil *subMetrics is no --metrics-addr, and every
// method is then a no-op.
type subMetrics struct {
	w    *metrics.Worker
	srv  *metrics.Server
	done chan struct{}
}

// startMetrics listens on --metrics-addr before anything is taken: a port that cannot
// be had is exit 2 with nothing consumed.
func startMetrics(opts *SubOptions) (*subMetrics, error) {
	if opts.MetricsAddr == "" {
		return nil, nil
	}
	addr, err := metrics.ParseAddr(opts.MetricsAddr)
	if err != nil {
		return nil, usageErrorf("invalid --metrics-addr %q: %v", opts.MetricsAddr, err)
	}
	if addr.Public {
		fmt.Fprintf(opts.IO.ErrOut, "narad: warning: --metrics-addr %s may be reachable from other machines, and the metrics name topics (127.0.0.1:PORT keeps them on this one)\n",
			render.Escape(opts.MetricsAddr))
	}
	w := metrics.NewWorker(opts.Topic, opts.Command != nil)
	srv, err := metrics.Listen(addr.Listen, w)
	if err != nil {
		why, hint := listenWhy(err)
		return nil, usageErrorf("--metrics-addr %s: %s (%s)", render.Escape(opts.MetricsAddr), why, hint)
	}
	if _, port, _ := net.SplitHostPort(addr.Listen); port == "0" {
		// The system chose the port: without this line nothing could scrape it.
		opts.notice(fmt.Sprintf("serving /metrics, /healthz and /readyz on http://%s", srv.Addr()))
	}
	m := &subMetrics{w: w, srv: srv, done: make(chan struct{})}
	go func() {
		select {
		case <-opts.Signals.Soft:
			w.Stopping()
		case <-m.done:
		}
	}()
	return m, nil
}

// listenWhy is a listen error without the "listen tcp ADDR:" the line says already,
// and what to do about it: another port helps only when the port is the trouble,
// not an address of another machine or a name that does not resolve.
func listenWhy(err error) (why, hint string) {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return "address already in use", "pick another port"
	case errors.Is(err, syscall.EACCES):
		return "permission denied", "ports below 1024 need privileges: pick one above"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "not an address of this machine", "use one of its own, or 127.0.0.1:PORT"
	}
	const other = "use an address of this machine, or 127.0.0.1:PORT"
	var dns *net.DNSError
	if errors.As(err, &dns) {
		// Not the resolver's address and reply: the name is what the user typed.
		return fmt.Sprintf("cannot resolve %s", render.Escape(dns.Name)), other
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error(), other
	}
	return err.Error(), other
}

// hooks are the client hooks that count requests.
func (m *subMetrics) hooks() []client.Hook {
	if m == nil {
		return nil
	}
	return []client.Hook{m.w}
}

// wire has the run report to the metrics: its counters, and the node lost and back
// (besides the notices already there).
func (m *subMetrics) wire(co *consumer.Options) {
	if m == nil {
		return
	}
	co.Live = func(l consumer.Live) { m.w.Run(l) }
	// Not ready once nothing more is taken, though running commands may still be
	// finishing: at --timeout as at --count reached (a signal says so already).
	co.OnStopTaking = m.w.Done
	lost, back := co.OnNodeLost, co.OnNodeBack
	co.OnNodeLost = func(err error) {
		m.w.NodeLost()
		if lost != nil {
			lost(err)
		}
	}
	co.OnNodeBack = func() {
		m.w.NodeBack()
		if back != nil {
			back()
		}
	}
}

// wireSupervisor has exec mode's commands timed.
func (m *subMetrics) wireSupervisor(so *supervisor.Options) {
	if m != nil {
		so.OnCommand = m.w.Command
	}
}

// close ends the endpoint once the run has ended.
func (m *subMetrics) close() {
	if m == nil {
		return
	}
	m.w.Done()
	close(m.done)
	_ = m.srv.Close()
}
