package cli

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// StartFaultNode serves a node that fails in one way, on a loopback port, until
// stop is called: "502" answers every request with a plain-text 502 Bad Gateway (a
// relaying node whose partition owner is away); "silent" accepts connections and
// reads requests but never answers. Exported for the testscript command faultnode.
func StartFaultNode(mode string) (url string, stop func(), err error) {
	switch mode {
	case "502":
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "Bad Gateway\n")
		}))
		return s.URL, s.Close, nil
	case "silent":
		return startSilent(nil)
	}
	return "", nil, errors.New("fault node mode is 502 or silent")
}

func faultNode(t *testing.T, mode string) string {
	t.Helper()
	u, stop, err := StartFaultNode(mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return u
}

// startSilent serves a node that accepts connections and reads requests but never
// answers, until stop; took, when not nil, is closed at its first connection.
func startSilent(took chan struct{}) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if conns = append(conns, c); len(conns) == 1 && took != nil {
				close(took)
			}
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	stop = func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// acceptingNode is the silent fault node, and says when it took the first
// connection: the point where a run waits on it.
func acceptingNode(t *testing.T) (url string, took <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{})
	url, stop, err := startSilent(ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url, ch
}
