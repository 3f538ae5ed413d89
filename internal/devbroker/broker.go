package devbroker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Errors of the Go API, matching the HTTP statuses 404 and 409.
var (
	ErrTopicNotFound = errTopicNotFound
	ErrTopicExists   = errors.New("topic already exists")
	// ErrConflict is a refusal by a rule (fan-out, schema history), 409 on the wire.
	ErrConflict = errors.New("conflict")
)

// Broker is an in-memory single-node Narad. It is safe for concurrent use.
type Broker struct {
	cfg         Config
	maxWait     time.Duration
	maxConsumes int
	defaultVis  time.Duration
	now         func() time.Time

	mu     sync.RWMutex
	topics map[string]*topic

	legacy    atomic.Bool
	ready     atomic.Bool
	closing   chan struct{} // closed by Close: wakes every waiter
	closeOnce sync.Once

	auth     *authenticator // nil: auth off
	faults   faults
	limiter  consumeLimiter
	waiters  atomic.Int64             // long polls asleep right now; tests wait on it
	requests map[string]*atomic.Int64 // fixed at New, so reads need no lock

	handler http.Handler
	logMu   sync.Mutex

	srvMu     sync.Mutex
	srv       *http.Server
	ln        net.Listener
	addr      string
	serveDone chan struct{}
	serveErr  error
	conns     map[net.Conn]http.ConnState // under srvMu
}

// New builds a broker from cfg without listening. It refuses a non-loopback address
// without users: a dev broker without auth must not be reachable from the network.
func New(cfg Config) (*Broker, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("%w address %q: %v", ErrInvalid, cfg.Addr, err)
	}
	if len(cfg.Users) == 0 && !isLoopback(cfg.Addr) {
		return nil, fmt.Errorf("%w address %q: refusing to listen beyond loopback without auth; add --user NAME:PASS:GRANTS or listen on 127.0.0.1", ErrInvalid, cfg.Addr)
	}
	b := &Broker{
		cfg:         cfg,
		maxWait:     cfg.MaxConsumeWait,
		maxConsumes: cfg.MaxConsumesPerIdentity,
		defaultVis:  cfg.DefaultVisibility,
		topics:      make(map[string]*topic),
		closing:     make(chan struct{}),
		requests:    make(map[string]*atomic.Int64),
		now:         cfg.Now,
	}
	if b.now == nil {
		b.now = time.Now
	}
	if err := orDefault(&b.maxWait, DefaultMaxConsumeWait, "max consume wait"); err != nil {
		return nil, err
	}
	if err := orDefault(&b.maxConsumes, DefaultMaxConsumesPerIdentity, "max consumes per identity"); err != nil {
		return nil, err
	}
	switch {
	case b.defaultVis == 0:
		b.defaultVis = DefaultVisibility
	case b.defaultVis < time.Millisecond:
		return nil, fmt.Errorf("%w default visibility %v: must be at least 1ms", ErrInvalid, b.defaultVis)
	}
	b.limiter.held = make(map[string]int)
	if len(cfg.Users) > 0 {
		a, err := newAuthenticator(cfg.Users, b.now)
		if err != nil {
			return nil, err
		}
		b.auth = a
	}
	for _, r := range cfg.Faults {
		if err := b.AddFault(r); err != nil {
			return nil, err
		}
	}
	for _, op := range []string{OpProduce, OpConsume, OpReplay, OpAck, OpExtend, OpNack, OpMetrics,
		OpCreateTopic, OpListTopics, OpTopicInfo, OpDeleteTopic, OpEditTopic, OpTopicSchema,
		OpAttachChild, OpListChildren, OpDetachChild} {
		b.requests[op] = new(atomic.Int64)
	}
	for _, spec := range cfg.Topics {
		if err := b.CreateTopic(spec); err != nil {
			return nil, err
		}
	}
	b.legacy.Store(cfg.Legacy)
	b.handler = b.routes()
	b.ready.Store(true)
	return b, nil
}

// Start is New, then listen and serve in the background. It returns once listening.
func Start(cfg Config) (*Broker, error) {
	b, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := b.Listen(); err != nil {
		return nil, err
	}
	return b, nil
}

// ListenAndServe serves in the foreground until ctx is cancelled, then stops cleanly and
// returns nil.
func (b *Broker) ListenAndServe(ctx context.Context) error {
	if err := b.Listen(); err != nil {
		return err
	}
	return b.Serve(ctx)
}

// Serve waits on a broker that is listening until ctx is cancelled, then stops it
// cleanly and returns nil; it returns the server's error if serving stops on its own.
// `narad dev` calls Listen, says where it listens, then Serve with SIGINT/SIGTERM
// wired to ctx.
func (b *Broker) Serve(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return b.Close()
	case <-b.serveDone:
		b.Close()
		return b.serveErr
	}
}

// Listen opens b's address and serves in the background; Start is New then Listen.
// It is separate so that a caller can tell bad configuration (New) from an address
// that cannot be had (Listen).
func (b *Broker) Listen() error {
	b.srvMu.Lock()
	defer b.srvMu.Unlock()
	if b.srv != nil {
		return errors.New("devbroker: already listening")
	}
	select {
	case <-b.closing:
		return errors.New("devbroker: closed")
	default:
	}
	ln, err := net.Listen("tcp", b.cfg.Addr)
	if err != nil {
		return fmt.Errorf("devbroker: %w", err)
	}
	errLog := io.Discard
	if b.cfg.Log != nil {
		errLog = b.cfg.Log
	}
	b.conns = make(map[net.Conn]http.ConnState)
	b.srv = &http.Server{
		Handler:           b.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(errLog, "devbroker: ", 0),
		ConnState:         b.trackConn,
	}
	b.ln = ln
	b.addr = ln.Addr().String()
	b.serveDone = make(chan struct{})
	go func() {
		defer close(b.serveDone)
		if err := b.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			b.serveErr = err
		}
	}()
	return nil
}

// Close stops serving and wakes every long poll, which then answers 204. In-flight
// requests get a few seconds to finish. It is safe to call more than once.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.ready.Store(false)
		close(b.closing)
		b.mu.RLock()
		for _, t := range b.topics {
			t.mu.Lock()
			if t.timer != nil {
				t.timer.Stop()
			}
			children := t.children
			t.mu.Unlock()
			for _, l := range children {
				l.stop()
			}
		}
		b.mu.RUnlock()
	})
	b.srvMu.Lock()
	srv, done := b.srv, b.serveDone
	if srv != nil {
		// Shutdown waits up to 5 s for a connection that was dialled but never sent a
		// request (a client's spare keep-alive connection): close those now, after the
		// listener, so that no new one arrives. Idle ones Shutdown closes itself.
		_ = b.ln.Close()
		for c, st := range b.conns {
			if st == http.StateNew {
				_ = c.Close()
			}
		}
	}
	b.srvMu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, net.ErrClosed) {
		srv.Close()
	}
	<-done
	return nil
}

func (b *Broker) trackConn(c net.Conn, st http.ConnState) {
	b.srvMu.Lock()
	defer b.srvMu.Unlock()
	switch st {
	case http.StateHijacked, http.StateClosed:
		delete(b.conns, c)
	default:
		b.conns[c] = st
	}
}

// Addr is "127.0.0.1:PORT" once listening, "" before.
func (b *Broker) Addr() string {
	b.srvMu.Lock()
	defer b.srvMu.Unlock()
	return b.addr
}

// URL is the base URL clients use, "http://127.0.0.1:PORT".
func (b *Broker) URL() string { return "http://" + b.Addr() }

// Handler serves the API, for tests that bring their own server (httptest).
func (b *Broker) Handler() http.Handler { return b.handler }

// SetLegacy switches the broker to answering like an older (v2/v3.0) node, or back.
func (b *Broker) SetLegacy(on bool) { b.legacy.Store(on) }

// SetReady sets what /readyz answers, for testing a client that waits for readiness.
func (b *Broker) SetReady(ready bool) { b.ready.Store(ready) }

// CreateTopic creates a topic as POST /v1/topics does, with the same defaults and
// rules. Its errors match ErrTopicExists, ErrInvalid, ErrTopicNotFound (a missing
// parent) or ErrConflict (a fan-out rule).
func (b *Broker) CreateTopic(spec TopicSpec) error {
	_, err := b.createTopic(spec, "")
	return err
}

// createTopic creates, and with spec.Parent attaches, a topic owned by owner ("" with
// security off). If the attach is refused nothing is created.
func (b *Broker) createTopic(spec TopicSpec, owner string) (*topic, error) {
	var history *schemaHistory
	if spec.Schema != "" {
		h, err := registerSchema(nil, []byte(spec.Schema))
		if err != nil {
			return nil, err
		}
		history = h
	}
	if spec.Parent == "" && spec.FanoutDelayMs != 0 {
		return nil, invalidf("fanout_delay_ms needs parent")
	}
	if err := checkDelay(spec.FanoutDelayMs); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var parent *topic
	if spec.Parent != "" {
		if parent = b.topics[spec.Parent]; parent == nil {
			return nil, notFoundf("parent topic %q not found", spec.Parent)
		}
		if spec.Partitions == 0 {
			spec.Partitions = parent.partitionCount()
		}
	}
	spec, err := spec.normalize(b.defaultVis)
	if err != nil {
		return nil, err
	}
	if _, ok := b.topics[spec.Name]; ok {
		return nil, &statusError{http.StatusConflict, fmt.Sprintf("topic %q already exists", spec.Name), ErrTopicExists}
	}
	t := newTopic(spec, owner, b.now)
	if history != nil {
		t.schema.Store(history)
	}
	if parent != nil {
		if err := b.attachLocked(parent, t, time.Duration(spec.FanoutDelayMs)*time.Millisecond); err != nil {
			return nil, err
		}
	}
	b.topics[spec.Name] = t
	return t, nil
}

// DeleteTopic deletes a topic and everything in it, and its fan-out links (its children
// stay, as standalone topics); its long polls answer 404.
func (b *Broker) DeleteTopic(name string) error {
	b.mu.Lock()
	t, ok := b.topics[name]
	if ok {
		delete(b.topics, name)
		b.unlinkLocked(t)
	}
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	t.remove()
	return nil
}

func (b *Broker) topic(name string) *topic {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.topics[name]
}

func (b *Broker) topicNames() []string {
	b.mu.RLock()
	names := make([]string, 0, len(b.topics))
	for n := range b.topics {
		names = append(names, n)
	}
	b.mu.RUnlock()
	sort.Strings(names)
	return names
}

// Produce adds a message as POST .../produce does (key "" means none), for tests that
// need data in place without HTTP. It returns where the message went.
func (b *Broker) Produce(topicName, key string, payload []byte) (partition int, offset int64, err error) {
	t := b.topic(topicName)
	if t == nil {
		return 0, 0, fmt.Errorf("%w: %q", ErrTopicNotFound, topicName)
	}
	if len(payload) == 0 || len(payload) > MaxMessageBytes {
		return 0, 0, fmt.Errorf("%w payload: must be 1 to %d bytes", ErrInvalid, MaxMessageBytes)
	}
	m := newMessage(key, key != "", payload)
	part, err := t.produce(m, -1, b.legacy.Load())
	return part, m.offset, err
}

func newMessage(key string, hasKey bool, payload []byte) *message {
	kind := classifyPayload(payload)
	return &message{
		key: key, hasKey: hasKey, payload: payload, kind: kind, heapIdx: -1,
		encSize: encodedMessageLen(key, hasKey, payload, kind),
	}
}

// Stats is a snapshot of a topic's state, for tests to assert what is left on the broker.
func (b *Broker) Stats(topicName string) (TopicStats, error) {
	t := b.topic(topicName)
	if t == nil {
		return TopicStats{}, fmt.Errorf("%w: %q", ErrTopicNotFound, topicName)
	}
	return t.stats()
}

// Requests is how many HTTP requests of op the broker has received (faulted and refused
// ones included): "produce", "consume", "replay", "ack", "extend", "nack" (a batch ack
// counts once, under its action), "metrics", "create_topic", "list_topics", "topic_info",
// "delete_topic", "edit_topic", "topic_schema", "attach_child", "list_children",
// "detach_child". An unknown op is 0.
func (b *Broker) Requests(op string) int {
	if c := b.requests[op]; c != nil {
		return int(c.Load())
	}
	return 0
}

func (b *Broker) count(op string) { b.requests[op].Add(1) }

// consumeLimiter bounds concurrent consumes per identity. A batch holds max units (at
// most the whole limit, so that a lone batch always fits) for as long as it runs,
// long poll included.
type consumeLimiter struct {
	mu   sync.Mutex
	held map[string]int
}

func (l *consumeLimiter) acquire(id string, cost, limit int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[id]+cost > limit {
		return false
	}
	l.held[id] += cost
	return true
}

func (l *consumeLimiter) release(id string, cost int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[id] -= cost; l.held[id] <= 0 {
		delete(l.held, id)
	}
}
