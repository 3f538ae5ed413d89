package devbroker

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Operations that faults and request counters name. A batch ack is one request of its
// action; for faults each of its handles counts as one ack (extend, nack), so a fault
// shows up as that handle's result, which is what a client must retry one by one.
const (
	OpProduce = "produce"
	OpConsume = "consume" // a leasing consume, single or batch
	OpReplay  = "replay"  // a consume with offset
	OpAck     = "ack"
	OpExtend  = "extend"
	OpNack    = "nack"
	OpMetrics = "metrics" // GET /metrics
	OpLatency = "latency" // fault rule only: delay every /v1 request
	OpReset   = "reset"   // fault rule only: drop the connection of some /v1 requests

	// Request counters only.
	OpCreateTopic  = "create_topic"
	OpListTopics   = "list_topics"
	OpTopicInfo    = "topic_info"
	OpDeleteTopic  = "delete_topic"
	OpEditTopic    = "edit_topic"
	OpTopicSchema  = "topic_schema"
	OpAttachChild  = "attach_child"
	OpListChildren = "list_children"
	OpDetachChild  = "detach_child"
)

var faultOps = map[string]bool{OpProduce: true, OpConsume: true, OpReplay: true, OpAck: true, OpExtend: true, OpNack: true,
	OpMetrics: true}

// FaultRule is one `--fault` flag. For an operation (ack, extend, nack, consume, replay,
// produce) a request answers Status with Probability; for latency every /v1 request is
// delayed by Latency; for reset a /v1 request has its connection dropped with
// Probability. A faulted request has no effect on state.
type FaultRule struct {
	Op          string
	Status      int
	Probability float64
	Latency     time.Duration
}

// String gives back the flag form.
func (f FaultRule) String() string {
	p := strconv.FormatFloat(f.Probability, 'g', -1, 64)
	switch f.Op {
	case OpLatency:
		return "latency=" + f.Latency.String()
	case OpReset:
		return "reset=" + p
	}
	return fmt.Sprintf("%s=%d:%s", f.Op, f.Status, p)
}

// ParseFault parses a `--fault` flag: "ack=503:0.2", "consume=503:0.1", "extend=410:1",
// "nack=503:1", "produce=503:0.5", "latency=5ms", "reset=0.01". A missing probability
// ("ack=503") means always.
func ParseFault(s string) (FaultRule, error) {
	op, val, ok := strings.Cut(s, "=")
	if !ok || val == "" {
		return FaultRule{}, fmt.Errorf("%w --fault %q: want OP=STATUS:PROBABILITY, latency=DURATION or reset=PROBABILITY", ErrInvalid, s)
	}
	f := FaultRule{Op: op}
	var err error
	switch {
	case op == OpLatency:
		f.Latency, err = time.ParseDuration(val)
		if err != nil || f.Latency <= 0 {
			return f, fmt.Errorf("%w --fault %q: latency must be a positive duration such as 5ms", ErrInvalid, s)
		}
		return f, nil
	case op == OpReset:
		f.Probability, err = parseProbability(val)
		if err != nil {
			return f, fmt.Errorf("%w --fault %q: %v", ErrInvalid, s, err)
		}
		return f, nil
	case !faultOps[op]:
		return f, fmt.Errorf("%w --fault %q: operation must be ack, extend, nack, consume, replay, produce, metrics, latency or reset", ErrInvalid, s)
	}
	st, prob, hasProb := strings.Cut(val, ":")
	f.Status, err = strconv.Atoi(st)
	if err != nil || f.Status < 400 || f.Status > 599 {
		return f, fmt.Errorf("%w --fault %q: status must be between 400 and 599", ErrInvalid, s)
	}
	f.Probability = 1
	if hasProb {
		if f.Probability, err = parseProbability(prob); err != nil {
			return f, fmt.Errorf("%w --fault %q: %v", ErrInvalid, s, err)
		}
	}
	return f, nil
}

func parseProbability(s string) (float64, error) {
	p, err := strconv.ParseFloat(s, 64)
	if err != nil || !(p > 0 && p <= 1) {
		return 0, fmt.Errorf("probability %q must be a number in (0, 1]", s)
	}
	return p, nil
}

func (f FaultRule) validate() error {
	_, err := ParseFault(f.String())
	return err
}

// fault is the decision for one operation: answer status instead of doing it.
type fault struct {
	status int  // 0: drop the connection
	plain  bool // answer text/plain, like a node relaying to a partition owner
}

func (f fault) text() string {
	if f.status == http.StatusGone {
		// The exact text a real 410 carries, so a client cannot tell the difference.
		return textGone
	}
	return "injected fault"
}

type pendingFault struct {
	n int
	fault
}

// faults decides which requests fail. Scripted failures (FailNext) come first, in the
// order they were added, then the probabilistic rules.
type faults struct {
	mu    sync.Mutex
	rules []FaultRule
	next  map[string][]pendingFault
}

func (fs *faults) decide(op string) (fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if q := fs.next[op]; len(q) > 0 {
		f := q[0].fault
		if q[0].n--; q[0].n == 0 {
			fs.next[op] = q[1:]
		}
		return f, true
	}
	for _, r := range fs.rules {
		if r.Op == op && rand.Float64() < r.Probability {
			return fault{status: r.Status}, true
		}
	}
	return fault{}, false
}

// latency is the total delay the latency rules put before every /v1 request.
func (fs *faults) latency() time.Duration {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var d time.Duration
	for _, r := range fs.rules {
		if r.Op == OpLatency {
			d += r.Latency
		}
	}
	return d
}

func (fs *faults) reset() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, r := range fs.rules {
		if r.Op == OpReset && rand.Float64() < r.Probability {
			return true
		}
	}
	return false
}

func (fs *faults) failNext(op string, n int, f fault) {
	if !faultOps[op] {
		panic(fmt.Sprintf("devbroker: FailNext: unknown operation %q (want ack, extend, nack, consume, replay, produce or metrics)", op))
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if n <= 0 {
		delete(fs.next, op)
		return
	}
	if fs.next == nil {
		fs.next = make(map[string][]pendingFault)
	}
	fs.next[op] = append(fs.next[op], pendingFault{n: n, fault: f})
}

// FailNext makes the next n requests of op ("ack", "extend", "nack", "consume",
// "replay", "produce") answer status with a JSON error and no effect on state; in a
// batch ack each handle counts as one. Status 0 drops the connection instead (a reset).
// Calls queue up; n <= 0 clears what is queued for op.
func (b *Broker) FailNext(op string, n int, status int) {
	b.faults.failNext(op, n, fault{status: status})
}

// FailNextPlain is FailNext with a text/plain body, as a node relaying to a partition
// owner answers 502 and 503: a client must show such a body, not fail decoding it.
func (b *Broker) FailNextPlain(op string, n int, status int) {
	b.faults.failNext(op, n, fault{status: status, plain: true})
}

// AddFault adds a rule, as a `--fault` flag does.
func (b *Broker) AddFault(r FaultRule) error {
	if err := r.validate(); err != nil {
		return err
	}
	b.faults.mu.Lock()
	defer b.faults.mu.Unlock()
	b.faults.rules = append(b.faults.rules, r)
	return nil
}

// ClearFaults removes every rule and every queued FailNext.
func (b *Broker) ClearFaults() {
	b.faults.mu.Lock()
	defer b.faults.mu.Unlock()
	b.faults.rules = nil
	b.faults.next = nil
}
