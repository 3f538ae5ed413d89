package devbroker

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Fan-out: a child topic receives a copy (same key, same payload) of every message
// committed to its parent after the attach, into its own partitions; a delay child
// receives each copy once the parent's commit time plus the delay has passed, on the
// broker's clock.
//
// Each link keeps a cursor per parent partition: the next parent offset to copy. A
// produce into a parent copies into its immediate children before it answers (so a
// 202 means the copies are there), and arms a timer for its delay children. Copies are
// read under the parent's lock and stored under the child's, never both at once; a
// link's own mutex makes one copier run at a time, so a partition's copies keep the
// parent's order. What a link has not copied yet is its lag.
//
// The rules are a real node's: a child has one parent and no children (so there are no
// cycles), a parent takes at most MaxChildren, a delay is at most a year and the
// parent's retention must hold the delay plus an hour.
const (
	MaxChildren    = 108
	MaxFanoutDelay = 365 * 24 * time.Hour
	// delayRetentionMargin is what a parent's retention must keep beyond a delay child's
	// delay, so that no message expires before its delayed copy is made.
	delayRetentionMargin = time.Hour
)

// link is one parent-to-child edge.
type link struct {
	parent, child *topic
	delay         time.Duration
	epoch         string  // this attachment; a new attach makes a new one
	attachOffsets []int64 // the parent's tails at the attach; never changes

	mu    sync.Mutex  // one copier at a time
	timer *time.Timer // under mu: the next held-back copy's due time

	// Under parent.mu.
	cursor   []int64 // next parent offset to copy, per parent partition
	detached bool
	dropped  int64 // parent messages that aged out before they were copied
}

// pump copies every message that is due into the child and arms the timer for the
// next one held back.
func (l *link) pump() {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.parent
	now := p.now()
	var copies []*message
	var next time.Time // the earliest held-back copy's due time
	p.mu.Lock()
	if l.detached || p.deleted {
		p.mu.Unlock()
		return
	}
	retention := p.retention()
	for i, part := range p.parts {
		if i == len(l.cursor) {
			l.cursor = append(l.cursor, 0) // a partition added since: copied from its first message
		}
		part.trim(now, retention)
		cur := l.cursor[i]
		if cur < part.base {
			l.dropped += part.base - cur
			cur = part.base
		}
		for ; cur < part.next(); cur++ {
			m := part.at(cur)
			if l.delay > 0 {
				if due := m.produced.Add(l.delay); due.After(now) {
					if next.IsZero() || due.Before(next) {
						next = due
					}
					break
				}
			}
			copies = append(copies, &message{
				key: m.key, hasKey: m.hasKey, payload: m.payload, kind: m.kind,
				encSize: m.encSize, heapIdx: -1,
			})
		}
		l.cursor[i] = cur
	}
	p.mu.Unlock()
	if len(copies) > 0 {
		l.child.appendCopies(copies)
	}
	switch {
	case next.IsZero():
		if l.timer != nil {
			l.timer.Stop()
		}
	case l.timer == nil:
		l.timer = time.AfterFunc(next.Sub(now), l.pump)
	default:
		l.timer.Reset(next.Sub(now))
	}
}

// stop ends a link's timer; the caller has marked it detached.
func (l *link) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
}

// lag is how many parent messages are not copied yet, held-back delayed ones included.
func (l *link) lag() int64 {
	p := l.parent
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for i, part := range p.parts {
		cur := int64(0)
		if i < len(l.cursor) {
			cur = l.cursor[i]
		}
		n += part.next() - max(cur, part.base)
	}
	return n
}

// partitionLag is lag for one parent partition, for /metrics.
func (l *link) partitionLag() []int64 {
	p := l.parent
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]int64, len(p.parts))
	for i, part := range p.parts {
		cur := int64(0)
		if i < len(l.cursor) {
			cur = l.cursor[i]
		}
		out[i] = part.next() - max(cur, part.base)
	}
	return out
}

// appendCopies stores fan-out copies, routed as a produce of them would be. A delay
// child takes them (only its parent feeds it); a deleted child drops them.
func (t *topic) appendCopies(ms []*message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deleted {
		return
	}
	now := t.now()
	for _, m := range ms {
		var part int
		if m.hasKey {
			part = PartitionForKey(m.key, len(t.parts))
		} else {
			part = t.produceRR % len(t.parts)
			t.produceRR++
		}
		t.appendLocked(t.parts[part], m, now)
	}
	t.wakeLocked()
}

// parentLink is the link that feeds t, nil unless t is a child.
func (t *topic) parentLink() *link {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.up
}

// childLinks are t's links to its children, in attach order.
func (t *topic) childLinks() []*link {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.children)
}

// statusError is an API error with its status. kind (ErrInvalid, ErrTopicNotFound,
// ErrConflict) lets a Go caller test it with errors.Is.
type statusError struct {
	status int
	text   string
	kind   error
}

func (e *statusError) Error() string        { return e.text }
func (e *statusError) Is(target error) bool { return e.kind != nil && target == e.kind }

func conflictf(format string, args ...any) error {
	return &statusError{http.StatusConflict, fmt.Sprintf(format, args...), ErrConflict}
}

func notFoundf(format string, args ...any) error {
	return &statusError{http.StatusNotFound, fmt.Sprintf(format, args...), ErrTopicNotFound}
}

func invalidf(format string, args ...any) error {
	return &statusError{http.StatusBadRequest, fmt.Sprintf(format, args...), ErrInvalid}
}

// checkDelay refuses a delay out of range (400).
func checkDelay(ms int64) error {
	if ms < 0 || ms > MaxFanoutDelay.Milliseconds() {
		return invalidf("delay_ms %d: must be from 0 to %d (one year)", ms, MaxFanoutDelay.Milliseconds())
	}
	return nil
}

// attachLocked links c under p with delay, checking the fan-out rules first. The
// caller holds b.mu for writing, which every change to links holds, so the links read
// here cannot change under it.
func (b *Broker) attachLocked(p, c *topic, delay time.Duration) error {
	switch {
	case p == c:
		return invalidf("topic %q cannot be attached to itself", p.name)
	case c.up != nil:
		return conflictf("topic %q is already a child of %q: a child has one parent", c.name, c.up.parent.name)
	case len(c.children) > 0:
		return conflictf("topic %q has children: a child cannot have children of its own", c.name)
	case p.up != nil:
		return conflictf("topic %q is a child of %q: a child cannot have children of its own", p.name, p.up.parent.name)
	case len(p.children) >= MaxChildren:
		return conflictf("topic %q has %d children, the most a parent takes", p.name, MaxChildren)
	}
	ps, cs := p.schema.Load(), c.schema.Load()
	switch {
	case cs != nil && ps == nil:
		return conflictf("topic %q has a schema and %q has none: a child with a schema cannot go under a parent without one", c.name, p.name)
	case cs != nil && !cs.equal(ps):
		return conflictf("the schema histories of %q and %q differ: a child must have its parent's history", c.name, p.name)
	}
	p.mu.Lock()
	if p.deleted || c.deleted {
		p.mu.Unlock()
		return notFoundf("topic %q not found", p.name)
	}
	if delay > 0 && p.retention() < delay+delayRetentionMargin {
		p.mu.Unlock()
		return conflictf("the retention of %q (%d ms) cannot hold a delay of %d ms: a parent keeps messages for at least the delay plus one hour",
			p.name, p.spec.RetentionMs, delay.Milliseconds())
	}
	l := &link{parent: p, child: c, delay: delay}
	for _, part := range p.parts {
		l.cursor = append(l.cursor, part.next())
	}
	l.attachOffsets = slices.Clone(l.cursor)
	l.epoch = strconv.FormatUint(p.rng.Uint64()|1<<63, 16)
	p.children = append(p.children, l)
	p.mu.Unlock()

	c.mu.Lock()
	c.up = l
	c.mu.Unlock()
	if cs == nil && ps != nil {
		c.schema.Store(ps) // a child adopts its parent's history
	}
	return nil
}

// detachLocked removes the link from p to c; the caller holds b.mu for writing. Copies
// held back for a delay child are dropped; what the child has stays.
func (b *Broker) detachLocked(p, c *topic) error {
	i := slices.IndexFunc(p.children, func(l *link) bool { return l.child == c })
	if i < 0 {
		return notFoundf("topic %q is not a child of %q", c.name, p.name)
	}
	l := p.children[i]
	p.mu.Lock()
	p.children = slices.Delete(slices.Clone(p.children), i, i+1)
	l.detached = true
	p.mu.Unlock()
	c.mu.Lock()
	c.up = nil
	c.mu.Unlock()
	l.stop()
	return nil
}

// unlinkLocked removes every link of a topic being deleted; the caller holds b.mu for
// writing. Its children become standalone topics, and it leaves its parent.
func (b *Broker) unlinkLocked(t *topic) {
	for _, l := range slices.Clone(t.children) {
		b.detachLocked(t, l.child)
	}
	if t.up != nil {
		b.detachLocked(t.up.parent, t)
	}
}

// Attach makes child a fan-out child of parent, as POST .../children does; delay 0
// makes an immediate child. Errors match ErrTopicNotFound, ErrInvalid or ErrConflict
// (whose text says which fan-out rule refused).
func (b *Broker) Attach(parent, child string, delay time.Duration) error {
	if err := checkDelay(delay.Milliseconds()); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p, c, err := b.linkEndsLocked(parent, child)
	if err != nil {
		return err
	}
	return b.attachLocked(p, c, delay)
}

// Detach ends the link from parent to child, as DELETE .../children/{child} does.
func (b *Broker) Detach(parent, child string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, c, err := b.linkEndsLocked(parent, child)
	if err != nil {
		return err
	}
	return b.detachLocked(p, c)
}

// linkEndsLocked finds the two topics of a link, naming the first that does not exist.
func (b *Broker) linkEndsLocked(parent, child string) (p, c *topic, err error) {
	p, c = b.topics[parent], b.topics[child]
	switch {
	case p == nil:
		return nil, nil, notFoundf("topic %q not found", parent)
	case c == nil:
		return nil, nil, notFoundf("topic %q not found", child)
	}
	return p, c, nil
}
