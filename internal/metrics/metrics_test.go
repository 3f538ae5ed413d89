package metrics

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
)

// fakeRun stands in for consumer.Live: counters a test moves by hand.
type fakeRun struct {
	mu       sync.Mutex
	s        consumer.Stats
	held     int
	extended int64
}

func (f *fakeRun) Stats() consumer.Stats { f.mu.Lock(); defer f.mu.Unlock(); return f.s }
func (f *fakeRun) Held() int             { f.mu.Lock(); defer f.mu.Unlock(); return f.held }
func (f *fakeRun) Extended() int64       { f.mu.Lock(); defer f.mu.Unlock(); return f.extended }

// gather returns the worker's series by name, each as "label=value,..." -> value.
func gather(t *testing.T, w *Worker) map[string]map[string]float64 {
	t.Helper()
	fams, err := w.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, fam := range fams {
		m := map[string]float64{}
		for _, s := range fam.GetMetric() {
			m[labels(s)] = value(s)
		}
		out[fam.GetName()] = m
	}
	return out
}

func labels(s *dto.Metric) string {
	var parts []string
	for _, l := range s.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}

func value(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Histogram != nil:
		return float64(s.Histogram.GetSampleCount())
	}
	return -1
}

// Every outcome is the run's own counter, read at the scrape: what --stats prints
// is what is served, then and later.
func TestMessagesAreTheRunsCounters(t *testing.T) {
	w := NewWorker("orders", false)
	run := &fakeRun{s: consumer.Stats{Received: 9, Acked: 4, Nacked: 3, Failed: 2, TimedOut: 1, LeaseLost: 5,
		AckGone: 6, Retries: 70, Bugs: 80, DeadLettered: 7}, held: 2, extended: 11}
	w.Run(run)
	check := func() {
		t.Helper()
		got := gather(t, w)
		s := run.Stats()
		want := map[string]int64{"received": s.Received, "acked": s.Acked, "nacked": s.Nacked, "failed": s.Failed,
			"timed_out": s.TimedOut, "lease_lost": s.LeaseLost, "ack_gone": s.AckGone, "dead_lettered": s.DeadLettered}
		msgs := got["narad_worker_messages_total"]
		if len(msgs) != len(want) {
			t.Errorf("messages_total has %d series, want %d: %v", len(msgs), len(want), msgs)
		}
		for outcome, n := range want {
			if v, ok := msgs["outcome="+outcome+",topic=orders"]; !ok || v != float64(n) {
				t.Errorf("messages_total{outcome=%s} = %v (present %v), want %d", outcome, v, ok, n)
			}
		}
		if v := got["narad_worker_in_flight"]["topic=orders"]; v != float64(run.Held()) {
			t.Errorf("in_flight = %v, want %d", v, run.Held())
		}
		if v := got["narad_worker_lease_extends_total"]["topic=orders"]; v != float64(run.Extended()) {
			t.Errorf("lease_extends_total = %v, want %d", v, run.Extended())
		}
	}
	check()
	run.mu.Lock()
	run.s.Received, run.s.Acked, run.held, run.extended = 20, 15, 0, 12
	run.mu.Unlock()
	check()
}

// Before the run starts the series are there, at zero: a scrape never finds them
// missing, and a rate() over a restart starts from 0.
func TestMessagesBeforeTheRun(t *testing.T) {
	got := gather(t, NewWorker("t", false))
	for _, o := range Outcomes {
		if v, ok := got["narad_worker_messages_total"]["outcome="+o+",topic=t"]; !ok || v != 0 {
			t.Errorf("%s before the run: %v (present %v)", o, v, ok)
		}
	}
}

func TestCommandDurationsOnlyInExecMode(t *testing.T) {
	w := NewWorker("t", true)
	w.Command(3 * time.Millisecond)
	w.Command(2 * time.Second)
	if v := gather(t, w)["narad_worker_command_duration_seconds"]["topic=t"]; v != 2 {
		t.Errorf("command_duration_seconds count = %v, want 2", v)
	}
	p := NewWorker("t", false)
	p.Command(time.Second) // never called in print mode; harmless if it were
	if _, ok := gather(t, p)["narad_worker_command_duration_seconds"]; ok {
		t.Error("print mode serves command_duration_seconds")
	}
}

func TestRequestsFromTheClientsHooks(t *testing.T) {
	w := NewWorker("t", false)
	ex := client.Exchange{Op: client.OpConsume}
	w.OnAnswer(client.AnswerEvent{Exchange: ex, Status: 200, Latency: time.Millisecond})
	w.OnAnswer(client.AnswerEvent{Exchange: ex, Status: 200, Latency: time.Millisecond})
	w.OnAnswer(client.AnswerEvent{Exchange: client.Exchange{Op: client.OpAck}, Status: 503})
	w.OnTransportError(client.TransportErrorEvent{Exchange: ex, Err: errors.New("refused")})
	got := gather(t, w)
	for series, n := range map[string]float64{"code=200,op=consume": 2, "code=503,op=ack": 1, "code=error,op=consume": 1} {
		if v := got["narad_worker_requests_total"][series]; v != n {
			t.Errorf("requests_total{%s} = %v, want %v", series, v, n)
		}
	}
	if v := got["narad_worker_request_duration_seconds"]["op=consume"]; v != 3 {
		t.Errorf("request_duration_seconds{op=consume} count = %v, want 3", v)
	}
}

// Ready means taking messages from a node that answers: not before the run, not
// before the node answered, not while it is lost, never again after a signal.
func TestReady(t *testing.T) {
	w := NewWorker("t", false)
	step := func(what string, want bool, why string) {
		t.Helper()
		ok, got := w.Ready()
		if ok != want || got != why {
			t.Errorf("%s: Ready() = %v %q, want %v %q", what, ok, got, want, why)
		}
	}
	step("before the run", false, "starting")
	w.Run(&fakeRun{})
	step("before the node answered", false, "node not reached yet")
	w.OnAnswer(client.AnswerEvent{Status: 503})
	step("after a 503", false, "node not reached yet")
	w.OnAnswer(client.AnswerEvent{Status: 200})
	step("taking", true, "ready")
	consume := client.Exchange{Op: client.OpConsume}
	w.OnAnswer(client.AnswerEvent{Exchange: consume, Status: 503})
	step("a consume answered 503", false, "node busy")
	w.OnAnswer(client.AnswerEvent{Exchange: client.Exchange{Op: client.OpAck}, Status: 204})
	step("an ack answered meanwhile", false, "node busy")
	w.OnAnswer(client.AnswerEvent{Exchange: consume, Status: 204})
	step("a consume answered again", true, "ready")
	w.OnAnswer(client.AnswerEvent{Exchange: client.Exchange{Op: client.OpAck}, Status: 503})
	step("an ack retried", true, "ready")
	w.NodeLost()
	step("node lost", false, "node lost")
	w.NodeBack()
	step("node back", true, "ready")
	w.Stopping()
	step("after a signal", false, "stopping")
	w.NodeLost()
	w.NodeBack()
	step("after a signal, node back", false, "stopping")
	w.Done()
	step("done", false, "stopping")

	d := NewWorker("t", false)
	d.Run(&fakeRun{})
	d.OnAnswer(client.AnswerEvent{Status: 200})
	d.Done()
	if ok, why := d.Ready(); ok || why != "done" {
		t.Errorf("after the run: %v %q", ok, why)
	}
}

func TestProbes(t *testing.T) {
	w := NewWorker("t", false)
	h := w.Handler()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 503 || body != "starting\n" {
		t.Errorf("/readyz before the run: %d %q", code, body)
	}
	w.Run(&fakeRun{s: consumer.Stats{Received: 3}})
	w.OnAnswer(client.AnswerEvent{Status: 200})
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	w.NodeLost()
	if code, body := get("/readyz"); code != 503 || body != "node lost\n" {
		t.Errorf("/readyz with the node lost: %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz with the node lost: %d", code)
	}
	code, body := get("/metrics")
	if code != 200 || !strings.Contains(body, `narad_worker_messages_total{outcome="received",topic="t"} 3`+"\n") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	if code, _ := get("/nosuch"); code != 404 {
		t.Errorf("/nosuch: %d", code)
	}
}

// The host decides whether other machines may scrape: loopback unless an address says
// otherwise, and any name but localhost is taken to say otherwise. Decided without
// listening anywhere.
func TestParseAddr(t *testing.T) {
	for _, c := range []struct {
		in, listen string
		public     bool
	}{
		{":9090", "127.0.0.1:9090", false},
		{"127.0.0.1:9090", "127.0.0.1:9090", false},
		{"127.8.0.1:0", "127.8.0.1:0", false},
		{"localhost:9090", "localhost:9090", false},
		{"LocalHost:9090", "LocalHost:9090", false},
		{"[::1]:9090", "[::1]:9090", false},
		{"0.0.0.0:9090", "0.0.0.0:9090", true},
		{"[::]:9090", "[::]:9090", true},
		{"10.1.2.3:9090", "10.1.2.3:9090", true},
		{"worker.example:9090", "worker.example:9090", true},
	} {
		a, err := ParseAddr(c.in)
		if err != nil || a.Listen != c.listen || a.Public != c.public {
			t.Errorf("ParseAddr(%q) = %+v, %v; want {%s %v}", c.in, a, err, c.listen, c.public)
		}
	}
	for _, bad := range []string{"9090", "127.0.0.1", "127.0.0.1:http", ":99999", ":-1", "", "a:b:c"} {
		if a, err := ParseAddr(bad); err == nil {
			t.Errorf("ParseAddr(%q) = %+v, want an error", bad, a)
		}
	}
}

func TestListenServesAndRefusesATakenPort(t *testing.T) {
	w := NewWorker("t", false)
	s, err := Listen("127.0.0.1:0", w)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + s.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
	if _, err := Listen(s.Addr(), w); err == nil {
		t.Error("a second Listen on the same port succeeded")
	} else if !isAddrInUse(err) {
		t.Errorf("second Listen: %v, want address in use", err)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if _, err := http.Get("http://" + s.Addr() + "/healthz"); err == nil {
		t.Error("served after Close")
	}
}

func isAddrInUse(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "address already in use")
}
