// Package metrics is a worker's Prometheus endpoint (sub --metrics-addr): /metrics,
// /healthz and /readyz on an address of its own. It owns the worker's registry (never
// the global one) and the few series only it counts (request and command durations);
// the message counters are the consumer's own, read at each scrape (consumer.Live),
// so what it serves is what --stats prints.
//
// Goroutines: the server's (Serve, and net/http's one per connection) read what the
// run's goroutines write: everything shared is atomic or a prometheus type, which
// locks itself.
package metrics

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
)

// Outcomes are the message counters served as narad_worker_messages_total's outcome
// label, in the order --stats prints them; retries and bugs are not outcomes of a
// message, and are left to --stats.
var Outcomes = []string{"received", "acked", "nacked", "failed", "timed_out", "lease_lost", "ack_gone", "dead_lettered"}

// commandBuckets span a command's life, from `true` (a millisecond) to the default
// --max-processing-time (5m).
var commandBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Worker is one sub run's metrics and probe state. Its methods are safe for
// concurrent use. The zero value is not usable: see NewWorker.
type Worker struct {
	topic string
	reg   *prometheus.Registry
	live  atomic.Pointer[runRef]

	commands prometheus.Observer // nil without a command
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	messages, inFlight, extends *prometheus.Desc

	// Readiness: taking messages (the run started and has not ended), the node
	// answered at least once, the node is not lost, no signal yet; busy: the last
	// consume was answered "try again later" (503 and the like), so nothing is taken
	// while the client retries it (for up to its budget, before the node counts as
	// lost).
	taking, reached, lost, stopping, busy atomic.Bool
}

// NewWorker returns the metrics of a worker on topic; exec adds the command duration
// histogram (exec mode).
func NewWorker(topic string, exec bool) *Worker {
	w := &Worker{
		topic: topic,
		reg:   prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "narad_worker_requests_total",
			Help: "Requests to the node by operation and HTTP status (code \"error\": no answer).",
		}, []string{"op", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "narad_worker_request_duration_seconds",
			Help:    "Time from sending a request to the node to its whole answer (or its transport error), by operation.",
			Buckets: prometheus.DefBuckets,
		}, []string{"op"}),
		messages: prometheus.NewDesc("narad_worker_messages_total",
			"Messages by outcome, the counters --stats prints.", []string{"topic", "outcome"}, nil),
		inFlight: prometheus.NewDesc("narad_worker_in_flight",
			"Messages held now: taken and not settled yet.", []string{"topic"}, nil),
		extends: prometheus.NewDesc("narad_worker_lease_extends_total",
			"Leases extended (one per message a node's 204 confirmed).", []string{"topic"}, nil),
	}
	w.reg.MustRegister(w.requests, w.latency, (*runCollector)(w),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if exec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "narad_worker_command_duration_seconds",
			Help:    "How long each command ran, from its start to its end however it ended.",
			Buckets: commandBuckets,
		}, []string{"topic"})
		w.reg.MustRegister(h)
		w.commands = h.WithLabelValues(topic)
	}
	return w
}

// Registry is the worker's own registry, for tests and for serving.
func (w *Worker) Registry() *prometheus.Registry { return w.reg }

// RunCounters is what is read of a run at each scrape: consumer.Live.
type RunCounters interface {
	Stats() consumer.Stats
	Held() int
	Extended() int64
}

type runRef struct{ RunCounters }

// Run says the run has started (for consumer.Options.Live), and these are its counters.
func (w *Worker) Run(l RunCounters) {
	w.live.Store(&runRef{l})
	w.taking.Store(true)
}

// Done says the run ended: nothing more is taken. The counters stay served.
func (w *Worker) Done() { w.taking.Store(false) }

// Stopping says a signal came: not ready from now on, whatever follows.
func (w *Worker) Stopping() { w.stopping.Store(true) }

// NodeLost and NodeBack follow consumer.Options' OnNodeLost and OnNodeBack.
func (w *Worker) NodeLost() { w.lost.Store(true) }
func (w *Worker) NodeBack() { w.lost.Store(false) }

// Command is supervisor.Options.OnCommand.
func (w *Worker) Command(took time.Duration) {
	if w.commands != nil {
		w.commands.Observe(took.Seconds())
	}
}

// Ready says whether the worker is taking messages from a node that answers, and if
// not, why not (the body of a 503).
func (w *Worker) Ready() (bool, string) {
	switch {
	case w.stopping.Load():
		return false, "stopping"
	case w.lost.Load():
		return false, "node lost"
	case !w.taking.Load():
		if w.live.Load() != nil {
			return false, "done"
		}
		return false, "starting"
	case !w.reached.Load():
		return false, "node not reached yet"
	case w.busy.Load():
		return false, "node busy"
	}
	return true, "ready"
}

// OnAnswer is a client hook: one request answered.
func (w *Worker) OnAnswer(e client.AnswerEvent) {
	op := e.Op.String()
	w.requests.WithLabelValues(op, strconv.Itoa(e.Status)).Inc()
	w.latency.WithLabelValues(op).Observe(e.Latency.Seconds())
	if e.Status < 500 {
		w.reached.Store(true)
	}
	if e.Op == client.OpConsume {
		w.busy.Store(client.ConsumeBusy(e.Status))
	}
}

// OnTransportError is a client hook: one request without an answer.
func (w *Worker) OnTransportError(e client.TransportErrorEvent) {
	op := e.Op.String()
	w.requests.WithLabelValues(op, "error").Inc()
	w.latency.WithLabelValues(op).Observe(e.Latency.Seconds())
}

// runCollector serves the run's own counters, read at each scrape.
type runCollector Worker

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.messages
	ch <- c.inFlight
	ch <- c.extends
}

func (c *runCollector) Collect(ch chan<- prometheus.Metric) {
	var s consumer.Stats
	var held int
	var extended int64
	if l := c.live.Load(); l != nil {
		s, held, extended = l.Stats(), l.Held(), l.Extended()
	}
	for _, p := range s.Pairs() {
		if !isOutcome(p.Name) {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.messages, prometheus.CounterValue, float64(p.Value), c.topic, p.Name)
	}
	ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(held), c.topic)
	ch <- prometheus.MustNewConstMetric(c.extends, prometheus.CounterValue, float64(extended), c.topic)
}

func isOutcome(name string) bool {
	for _, o := range Outcomes {
		if o == name {
			return true
		}
	}
	return false
}
