package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Address is a --metrics-addr made whole: Listen is what to listen on, and Public
// says it may be reachable from other machines (the metrics carry topic names, so
// that is worth a word).
type Address struct {
	Listen string
	Public bool
}

// ParseAddr reads a --metrics-addr HOST:PORT. An empty host is loopback
// (":9090" is 127.0.0.1:9090), as for everything else narad listens on: all
// interfaces have to be asked for (0.0.0.0:9090, [::]:9090). localhost and loopback
// IPs are not public; any other host is, names included (what a name resolves to is
// not known until it is listened on, and may change).
func ParseAddr(s string) (Address, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return Address{}, fmt.Errorf("not HOST:PORT (for example 127.0.0.1:9090, or 0.0.0.0:9090 for every interface)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return Address{}, fmt.Errorf("port %q is not 0..65535", port)
	}
	switch {
	case host == "":
		return Address{Listen: net.JoinHostPort("127.0.0.1", port)}, nil
	case strings.EqualFold(host, "localhost"):
		return Address{Listen: s}, nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return Address{Listen: s}, nil
	}
	return Address{Listen: s, Public: true}, nil
}

// Server serves a Worker's endpoints on a listener of its own.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Listen binds addr now, so that a port in use is known before anything is taken,
// and serves w on it until Close.
func Listen(addr string, w *Worker) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		ln: ln,
		srv: &http.Server{
			Handler:           w.Handler(),
			ReadHeaderTimeout: 10 * time.Second,
			// A scraper that stops reading must not hold a goroutine for months.
			WriteTimeout: time.Minute,
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // ErrServerClosed once closed; nothing else ends it
	}()
	return s, nil
}

// Addr is the address listened on (the port chosen, for port 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops serving: a scrape on its way gets a moment to finish.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	<-s.done
	return err
}

// Handler serves /metrics, /healthz and /readyz.
func (w *Worker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		// The process runs and serves: that is all liveness asks.
		text(rw, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, _ *http.Request) {
		ok, why := w.Ready()
		code := http.StatusOK
		if !ok {
			code = http.StatusServiceUnavailable
		}
		text(rw, code, why)
	})
	return mux
}

func text(rw http.ResponseWriter, code int, body string) {
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(code)
	_, _ = io.WriteString(rw, body+"\n")
}
