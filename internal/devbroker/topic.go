package devbroker

import (
	"container/heap"
	"context"
	crand "crypto/rand"
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// errTopicNotFound is what an operation on a deleted topic finds; errDelayedChild a
// produce straight into a delay child, which only its parent feeds (409).
var (
	errTopicNotFound = errors.New("topic not found")
	errDelayedChild  = conflictf("direct produce to a delayed child topic is not allowed")
)

const (
	textGone      = "receipt handle no longer matches an active reservation"
	textMalformed = "receipt handle is malformed"
)

type msgState uint8

const (
	stateAvailable msgState = iota
	stateInFlight
	stateAcked
)

// message is one produced message. The fields above the line never change after produce,
// so a response can be encoded from them after the topic lock is released.
type message struct {
	offset    int64
	key       string
	hasKey    bool
	payload   []byte
	kind      payloadKind
	encSize   int       // bound on its size in a response less the topic name, for cutting batches
	timestamp int64     // unix seconds, as the API reports it
	produced  time.Time // for retention, with the monotonic clock

	// Under topic.mu.
	state    msgState
	nonce    uint64    // of the current lease, when in flight
	deadline time.Time // of the current lease, when in flight
	heapIdx  int       // index in partition.ready, -1 when not there
}

// readyHeap holds a partition's available messages, lowest offset first, so that a
// message given back (nack, expiry) goes out again before newer ones: the closest an
// at-least-once queue gets to keeping per-key order.
type readyHeap []*message

func (h readyHeap) Len() int           { return len(h) }
func (h readyHeap) Less(i, j int) bool { return h[i].offset < h[j].offset }
func (h readyHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *readyHeap) Push(x any) {
	m := x.(*message)
	m.heapIdx = len(*h)
	*h = append(*h, m)
}
func (h *readyHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	m.heapIdx = -1
	return m
}

type partition struct {
	index int
	base  int64      // oldest retained offset
	msgs  []*message // msgs[i].offset == base+i
	size  int64      // retained payload and key bytes
	ready readyHeap

	inFlight int
	acked    int   // retained messages that are acked
	floor    int64 // oldest unacked offset; everything below it is acked or gone
	// ackedAhead counts acked messages above floor: the acks a partition holds past the
	// oldest unacked message, which max_acked_ahead_per_partition bounds.
	ackedAhead int
	delivered  int64 // messages handed to consumers, redeliveries included (for /metrics)
	lapsed     int64 // leases that ran out unsettled (for tests that prove none did)
}

func (p *partition) next() int64 { return p.base + int64(len(p.msgs)) }

func (p *partition) at(off int64) *message {
	if off < p.base || off >= p.next() {
		return nil
	}
	return p.msgs[off-p.base]
}

// advanceFloor moves floor past acked messages, which then no longer count as ahead.
func (p *partition) advanceFloor() {
	for p.floor < p.next() && p.msgs[p.floor-p.base].state == stateAcked {
		p.ackedAhead--
		p.floor++
	}
}

// trim drops messages older than retention. Messages are appended in time order, so the
// expired ones are a prefix.
func (p *partition) trim(now time.Time, retention time.Duration) {
	cutoff := now.Add(-retention)
	k := 0
	for k < len(p.msgs) && p.msgs[k].produced.Before(cutoff) {
		m := p.msgs[k]
		switch m.state {
		case stateInFlight:
			p.inFlight--
		case stateAvailable:
			heap.Remove(&p.ready, m.heapIdx)
		case stateAcked:
			p.acked--
			if m.offset > p.floor {
				p.ackedAhead--
			}
		}
		p.size -= int64(len(m.payload) + len(m.key))
		p.msgs[k] = nil
		k++
	}
	if k == 0 {
		return
	}
	p.msgs = p.msgs[k:]
	p.base += int64(k)
	if p.floor < p.base {
		p.floor = p.base
		p.advanceFloor()
	}
}

// candidate is the message this partition would hand out next, or nil when none may go:
// at max_in_flight nothing goes, and with a full acked-ahead window only the oldest
// unacked message may go, so that the window can drain.
func (p *partition) candidate(spec *TopicSpec) *message {
	if p.inFlight >= spec.MaxInFlightPerPartition {
		return nil
	}
	if p.ackedAhead >= spec.MaxAckedAheadPerPartition {
		if m := p.at(p.floor); m != nil && m.state == stateAvailable {
			return m
		}
		return nil
	}
	if len(p.ready) == 0 {
		return nil
	}
	return p.ready[0]
}

// lease is one entry of a topic's expiry queue. It is stale, and skipped, when the
// message it names was settled or re-leased since (nonce or deadline differ).
type lease struct {
	deadline time.Time
	part     int
	offset   int64
	nonce    uint64
}

// delivery is a message handed out by a consume, with the nonce of its new lease.
type delivery struct {
	m     *message
	part  int
	nonce uint64
}

type topic struct {
	// Fixed at creation, so read without the lock.
	name    string
	id      string // the incarnation: a topic created again under a name gets a new one
	owner   string // the user who created it; "" with security off
	created time.Time
	now     func() time.Time // the broker's clock

	// schema is the topic's schema history, nil without one. Histories are never
	// changed in place, so a produce validates against one without the lock.
	schema atomic.Pointer[schemaHistory]

	mu        sync.Mutex
	spec      TopicSpec // normalized; PATCH changes it, so read it under mu
	parts     []*partition
	produceRR int
	consumeRR int
	keySeq    int64 // legacy mode's invented keys
	rng       *rand.ChaCha8
	deleted   bool

	// Leases in deadline order. A FIFO is enough because every deadline is now plus the
	// topic's fixed visibility timeout, and now is read under mu, so deadlines are pushed
	// in non-decreasing order (an extend pushes a new entry and leaves the old one stale).
	leases     []lease
	leaseHead  int
	timer      *time.Timer
	timerArmed bool

	// notify is closed and replaced when a message may have become available. notifyUsed
	// saves the allocation while nobody waits.
	notify     chan struct{}
	notifyUsed bool

	// Fan-out: the links to this topic's children in attach order, and the link to its
	// parent when it is a child (a topic is never both).
	children []*link
	up       *link
}

func newTopic(spec TopicSpec, owner string, now func() time.Time) *topic {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails on a supported platform
	t := &topic{
		name: spec.Name, owner: owner, now: now, created: now(),
		spec: spec, rng: rand.NewChaCha8(seed), notify: make(chan struct{}),
	}
	t.id = strconv.FormatUint(t.rng.Uint64()|1<<63, 16) // always 16 hex digits
	t.parts = make([]*partition, spec.Partitions)
	for i := range t.parts {
		t.parts[i] = &partition{index: i}
	}
	return t
}

func (t *topic) retention() time.Duration { return retentionOf(t.spec.RetentionMs) }

func retentionOf(ms int64) time.Duration {
	// A retention past what a Duration holds (about 292 years) would wrap negative and
	// drop every message at once; it is as good as forever.
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// PartitionForKey is the partition a keyed message goes to: FNV-1a (32-bit) of the key,
// modulo the number of partitions.
func PartitionForKey(key string, partitions int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(partitions))
}

func (t *topic) wakeLocked() {
	if t.notifyUsed {
		close(t.notify)
		t.notify = make(chan struct{})
		t.notifyUsed = false
	}
}

// produce appends m (payload, key and kind filled in) to a partition: pin when >= 0, else
// by key, else round robin. It returns the partition and fills in m's offset. It
// refuses a delay child (errDelayedChild, 409) and a payload the topic's schema refuses
// (400), and copies the message into the topic's immediate children before it
// returns, so that a 202 means the copies are there too.
func (t *topic) produce(m *message, pin int, legacy bool) (int, error) {
	if h := t.schema.Load(); h != nil {
		if err := h.validate(t.name, m.payload); err != nil {
			return 0, err
		}
	}
	t.mu.Lock()
	if t.deleted {
		t.mu.Unlock()
		return 0, errTopicNotFound
	}
	if t.up != nil && t.up.delay > 0 {
		t.mu.Unlock()
		return 0, errDelayedChild
	}
	part := pin
	switch {
	case part >= 0:
	case m.hasKey:
		part = PartitionForKey(m.key, len(t.parts))
	default:
		part = t.produceRR % len(t.parts)
		t.produceRR++
	}
	if !m.hasKey && legacy {
		// An older node invented a key for a message produced without one.
		t.keySeq++
		m.key, m.hasKey = "key-"+strconv.FormatInt(t.keySeq, 10), true
		m.encSize += len(m.key) + 10
	}
	t.appendLocked(t.parts[part], m, t.now())
	t.wakeLocked()
	children := t.children
	t.mu.Unlock()
	for _, l := range children {
		l.pump()
	}
	return part, nil
}

// admit checks a payload against what the topic takes before anything is stored: the
// delay-child rule and the current schema (validated without the lock). A batch
// produce checks every message with it before storing any.
func (t *topic) admit(payload []byte) error {
	t.mu.Lock()
	delayed := t.up != nil && t.up.delay > 0
	t.mu.Unlock()
	if delayed {
		return errDelayedChild
	}
	if h := t.schema.Load(); h != nil {
		return h.validate(t.name, payload)
	}
	return nil
}

// appendLocked stores m at the tail of p, committed now.
func (t *topic) appendLocked(p *partition, m *message, now time.Time) {
	p.trim(now, t.retention())
	m.offset = p.next()
	m.produced = now
	m.timestamp = now.Unix()
	p.msgs = append(p.msgs, m)
	p.size += int64(len(m.payload) + len(m.key))
	heap.Push(&p.ready, m)
}

// take leases up to max messages (from partition pin when >= 0) and, when there are
// none, returns the channel to wait on. Partitions are visited in turn, starting one
// further on each call, so that no partition starves. Nothing is taken, and the
// channel is nil, once ctx is done: a long poll woken by a message given back may find
// its client gone, and what it took would wait out a lease held by nobody. Asked under
// the lock, so that a client gone before the look is always seen.
func (t *topic) take(ctx context.Context, pin, max int) ([]delivery, <-chan struct{}, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deleted {
		return nil, nil, errTopicNotFound
	}
	if ctx.Err() != nil {
		return nil, nil, nil
	}
	now := t.now()
	t.expireLocked(now)
	parts := t.parts
	if pin >= 0 {
		parts = parts[pin : pin+1]
	}
	for _, p := range parts {
		p.trim(now, t.retention())
	}
	start := t.consumeRR % len(parts)
	t.consumeRR++
	var out []delivery
	total := 0
	for len(out) < max {
		progress := false
		for i := 0; i < len(parts) && len(out) < max; i++ {
			p := parts[(start+i)%len(parts)]
			m := p.candidate(&t.spec)
			if m == nil {
				continue
			}
			// The first message always goes; later ones stop the batch at about 4 MiB
			// and never take it past 8 MiB.
			size := m.encSize + len(t.name)
			if len(out) > 0 && (total >= batchSoftBytes || total+size > batchHardBytes-len(`{"messages":[]}`+"\n")) {
				return out, nil, nil
			}
			heap.Remove(&p.ready, m.heapIdx)
			m.state = stateInFlight
			m.nonce = t.rng.Uint64()
			m.deadline = now.Add(t.spec.VisibilityTimeout)
			p.inFlight++
			p.delivered++
			t.pushLeaseLocked(lease{deadline: m.deadline, part: p.index, offset: m.offset, nonce: m.nonce}, now)
			out = append(out, delivery{m: m, part: p.index, nonce: m.nonce})
			total += size
			progress = true
		}
		if !progress {
			break
		}
	}
	if len(out) == 0 {
		t.notifyUsed = true
		return nil, t.notify, nil
	}
	return out, nil, nil
}

// action is what a settlement does with a lease.
type action uint8

const (
	actAck action = iota
	actExtend
	actNack
)

// settle applies act to each handle in order and returns a status (and error text) per
// handle, as a single ack of that handle would have answered. skip[i] leaves handle i
// untouched (it was malformed, or answered by an injected fault).
func (t *topic) settle(hs []handle, skip []bool, act action, legacy bool) ([]int, []string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deleted {
		return nil, nil, errTopicNotFound
	}
	now := t.now()
	t.expireLocked(now)
	status := make([]int, len(hs))
	texts := make([]string, len(hs))
	for i, h := range hs {
		if skip != nil && skip[i] {
			continue
		}
		status[i], texts[i] = t.settleLocked(h, act, legacy, now)
	}
	return status, texts, nil
}

func (t *topic) settleLocked(h handle, act action, legacy bool, now time.Time) (int, string) {
	if h.part >= len(t.parts) {
		return 410, textGone
	}
	p := t.parts[h.part]
	p.trim(now, t.retention())
	m := p.at(h.offset)
	if m == nil || m.state != stateInFlight || m.nonce != h.nonce {
		return 410, textGone
	}
	switch act {
	case actExtend:
		m.deadline = now.Add(t.spec.VisibilityTimeout)
		t.pushLeaseLocked(lease{deadline: m.deadline, part: p.index, offset: m.offset, nonce: m.nonce}, now)
		return 204, ""
	case actNack:
		m.state = stateAvailable
		p.inFlight--
		heap.Push(&p.ready, m)
		t.wakeLocked()
		return 204, ""
	}
	if legacy && m.offset > p.floor && p.ackedAhead >= t.spec.MaxAckedAheadPerPartition {
		// An older node refused the ack instead of holding it; the client must retry
		// once the oldest unacked message is settled.
		return 503, "acked-ahead window is full: retry after the oldest unacked message is settled"
	}
	m.state = stateAcked
	p.inFlight--
	p.acked++
	if m.offset == p.floor {
		p.floor++
		p.advanceFloor()
	} else {
		p.ackedAhead++
	}
	// The ack may have freed room under max_in_flight or the acked-ahead window.
	t.wakeLocked()
	return 204, ""
}

func (t *topic) pushLeaseLocked(l lease, now time.Time) {
	t.leases = append(t.leases, l)
	t.armLocked(now)
}

// armLocked makes sure the timer will fire by the earliest deadline, so that a waiter is
// woken when a lease runs out even if no other request touches the topic.
func (t *topic) armLocked(now time.Time) {
	if t.timerArmed || t.leaseHead == len(t.leases) || t.deleted {
		return
	}
	d := t.leases[t.leaseHead].deadline.Sub(now)
	if t.timer == nil {
		t.timer = time.AfterFunc(d, t.onTimer)
	} else {
		t.timer.Reset(d)
	}
	t.timerArmed = true
}

func (t *topic) onTimer() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timerArmed = false
	if t.deleted {
		return
	}
	now := t.now()
	t.expireLocked(now)
	t.armLocked(now)
}

// expireLocked makes every message whose lease ran out by now available again.
func (t *topic) expireLocked(now time.Time) {
	woke := false
	for t.leaseHead < len(t.leases) {
		l := t.leases[t.leaseHead]
		if l.deadline.After(now) {
			break
		}
		t.leases[t.leaseHead] = lease{}
		t.leaseHead++
		p := t.parts[l.part]
		m := p.at(l.offset)
		if m == nil || m.state != stateInFlight || m.nonce != l.nonce || !m.deadline.Equal(l.deadline) {
			continue // settled, re-leased or extended since
		}
		m.state = stateAvailable
		p.inFlight--
		p.lapsed++
		heap.Push(&p.ready, m)
		woke = true
	}
	// Reclaim the consumed front of the queue once it is most of the slice.
	if t.leaseHead > 1024 && t.leaseHead*2 > len(t.leases) {
		n := copy(t.leases, t.leases[t.leaseHead:])
		clear(t.leases[n:])
		t.leases = t.leases[:n]
		t.leaseHead = 0
	}
	if woke {
		t.wakeLocked()
	}
}

// replay reads one retained message by position: no lease, no state change. It answers
// 200 with the message, 204 past the tail or 410 before the oldest retained offset.
func (t *topic) replay(part int, off int64) (*message, int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deleted {
		return nil, 0, errTopicNotFound
	}
	p := t.parts[part]
	p.trim(t.now(), t.retention())
	switch {
	case off >= p.next():
		return nil, 204, nil
	case off < p.base:
		return nil, 410, nil
	}
	return p.at(off), 200, nil
}

// PartitionStats is one partition's state, for tests to inspect.
type PartitionStats struct {
	Index         int
	OldestOffset  int64 // oldest retained offset
	NextOffset    int64 // offset the next produce gets (also the high watermark)
	SizeBytes     int64 // retained payload and key bytes
	Available     int   // ready to be handed out (flow control aside)
	InFlight      int   // leased and not yet settled
	Acked         int   // retained messages that are acked
	AckedAhead    int   // acked messages past the oldest unacked one
	OldestUnacked int64 // equals NextOffset when everything retained is acked
	Delivered     int64 // messages handed to consumers, redeliveries included
	Lapsed        int64 // leases that ran out before the message was settled
}

// TopicStats is a topic's settings and per-partition state, for tests to inspect.
type TopicStats struct {
	Spec       TopicSpec
	Partitions []PartitionStats
}

// Available is the sum over partitions.
func (s TopicStats) Available() int { return s.sum(func(p PartitionStats) int { return p.Available }) }

// InFlight is the sum over partitions.
func (s TopicStats) InFlight() int { return s.sum(func(p PartitionStats) int { return p.InFlight }) }

// Acked is the sum over partitions.
func (s TopicStats) Acked() int { return s.sum(func(p PartitionStats) int { return p.Acked }) }

// Delivered is the sum over partitions: deliveries, redeliveries included.
func (s TopicStats) Delivered() int {
	return s.sum(func(p PartitionStats) int { return int(p.Delivered) })
}

// Lapsed is the sum over partitions: leases that ran out unsettled.
func (s TopicStats) Lapsed() int { return s.sum(func(p PartitionStats) int { return int(p.Lapsed) }) }

// Messages is the number of retained messages.
func (s TopicStats) Messages() int {
	return s.sum(func(p PartitionStats) int { return int(p.NextOffset - p.OldestOffset) })
}

func (s TopicStats) sum(f func(PartitionStats) int) int {
	n := 0
	for _, p := range s.Partitions {
		n += f(p)
	}
	return n
}

func (t *topic) stats() (TopicStats, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deleted {
		return TopicStats{}, errTopicNotFound
	}
	now := t.now()
	t.expireLocked(now)
	st := TopicStats{Spec: t.spec, Partitions: make([]PartitionStats, len(t.parts))}
	for i, p := range t.parts {
		p.trim(now, t.retention())
		st.Partitions[i] = PartitionStats{
			Index: i, OldestOffset: p.base, NextOffset: p.next(), SizeBytes: p.size,
			Available: len(p.ready), InFlight: p.inFlight, Acked: p.acked,
			AckedAhead: p.ackedAhead, OldestUnacked: p.floor,
			Delivered: p.delivered, Lapsed: p.lapsed,
		}
	}
	return st, nil
}

// remove marks the topic deleted and wakes its waiters, who then answer 404.
func (t *topic) remove() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deleted = true
	if t.timer != nil {
		t.timer.Stop()
	}
	t.notifyUsed = true
	t.wakeLocked()
}
