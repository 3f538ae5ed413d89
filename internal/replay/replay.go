// Package replay reads a topic's history by position, partition by partition, with
// no lease and no receipt handle: it backs `narad replay` and `narad sub --peek`,
// which must never take a message from the real consumers.
package replay

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/narad/narad/internal/client"
)

// Source is the part of *client.Client a replay needs.
type Source interface {
	Topic(ctx context.Context, name string) (*client.Topic, error)
	Replay(ctx context.Context, topic string, partition int, offset int64) (*client.Message, error)
}

// Start says where each partition's read begins.
type Start int

const (
	// FromOldest starts at each partition's oldest retained offset.
	FromOldest Start = iota
	// FromTail starts at each partition's current high watermark: only new messages.
	FromTail
	// FromOffset starts at Options.Offset (one partition).
	FromOffset
)

// Options configure a read.
type Options struct {
	Topic string
	// Partition restricts the read to one partition; nil reads them all, in turn.
	Partition *int
	Start     Start
	Offset    int64
	// To stops each partition after this offset (inclusive); negative means the tail.
	To int64
	// Count stops after this many messages in all; 0 means no limit.
	Count int
	// Match, when set, emits only the messages it keeps (--filter, --grep), and
	// Count counts those: the read goes on until Count messages matched.
	Match *Matcher
	// Read, when set, counts every message read and handed to the window and Match,
	// kept or not: a watch from another goroutine tells a read that skips what it
	// reads (a filter that never matches) from one that has nothing to read.
	Read *atomic.Int64
	// Follow keeps polling at the tail instead of stopping there.
	Follow bool
	// PollInterval is the pause between sweeps that found nothing new (Follow).
	PollInterval time.Duration
	// PartitionCheck is how often a follow of every partition (no Partition) asks
	// the topic again while it finds nothing new, to follow partitions added since
	// it started; 0 means 5s.
	PartitionCheck time.Duration

	// Since, when set, starts each partition at its first message stamped at or
	// after it, found by the search in since.go (Start is then not used), and no
	// message stamped before it is emitted.
	Since time.Time
	// Until, when set, ends each partition after its last message stamped at or
	// before it. With Follow, once the clock has passed it (its whole second is
	// over, so nothing more can be stamped at or before it), each partition is read
	// to its tail one last time and the read ends.
	Until time.Time
	// Now is the clock Until is checked against with Follow; nil means time.Now.
	Now func() time.Time
	// OnFound, when set, hears where each partition's Since read starts and what
	// the search cost, before anything is emitted.
	OnFound func(Found)
	// OnNodeLost, when set with Follow, makes a node that answered and is then
	// unreachable a pause rather than the end (waitingSource): it hears the first
	// failure of each outage, and OnNodeBack the first answer after it.
	OnNodeLost func(error)
	OnNodeBack func()
	// OnGone, when set, hears of offsets a read asked for that retention had
	// dropped (a 410): partition p is read on from next, what was at from up to
	// next-1 is gone. Said, since the read would otherwise skip them without a word
	// (--offset 0 on a partition that keeps 3 on, or a backup slower than retention).
	OnGone func(p int, from, next int64)
	// OnTailUnknown, when set, hears of a partition a FromTail read cannot start yet:
	// topic info had no tail for it (a placeholder, its owner down, or no stats at
	// all). Starting it at 0 would show its whole history as new; it is started at its
	// tail once a later topic info has one, and OnTailFound hears that offset.
	OnTailUnknown func(p int)
	OnTailFound   func(p int, at int64)
}

// tailUnknown marks, in a reading's next, a partition whose tail topic info did not
// give (see Options.OnTailUnknown): read nothing of it until it is known.
const tailUnknown = -1

// ErrNoSuchPartition is bad input: the topic has no such partition.
var ErrNoSuchPartition = errors.New("no such partition")

// ErrStop may be returned by the emit callback to end the read without an error.
var ErrStop = errors.New("stop")

// Run reads messages and hands each to emit, in offset order within a partition.
// It returns the number of messages emitted.
func Run(ctx context.Context, src Source, o Options, emit func(*client.Message) error) (int, error) {
	t, err := src.Topic(ctx, o.Topic)
	if err != nil {
		return 0, err
	}
	parts, err := partitions(t, o.Partition)
	if err != nil {
		return 0, err
	}
	if o.Follow && o.OnNodeLost != nil {
		// The node answered: from here on, losing it is waited out.
		src = &waitingSource{Source: src, lost: o.OnNodeLost, back: o.OnNodeBack}
	}
	next := startOffsets(t, parts, o)
	for _, p := range parts {
		if next[p] == tailUnknown && o.OnTailUnknown != nil {
			o.OnTailUnknown(p)
		}
	}
	w, err := newWindow(ctx, src, t, parts, o, next)
	if err != nil {
		return 0, err
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	if o.PartitionCheck <= 0 {
		o.PartitionCheck = 5 * time.Second
	}
	r := &reading{src: src, o: o, parts: parts, next: next, w: w, emit: emit}
	checked := w.now()
	for {
		// last: the clock passed Until, so this sweep reads every partition to its
		// tail and is the final one.
		last := o.Follow && w.over()
		progressed, stop, err := r.sweep(ctx, last)
		if stop || err != nil {
			return r.emitted, err
		}
		if r.full() || !o.Follow || last || r.allDone() {
			return r.emitted, nil
		}
		if !progressed {
			if (o.Partition == nil || r.tailsUnknown()) && w.now().Sub(checked) >= o.PartitionCheck {
				checked = w.now()
				r.lookAgain(ctx)
			}
			if err := sleep(ctx, w.pause(o.PollInterval)); err != nil {
				return r.emitted, err
			}
		}
	}
}

// lookAgain asks for the topic again while a follow finds nothing new: it starts the
// partitions whose tail was unknown where it now is (findTails), and, reading every
// partition, follows the ones the topic gained since the read started (topic edit
// --partitions), from their oldest message: all of it came after the start. A
// consumer is handed them by the node; a follow that never asked again would miss
// them for good. A failed look is left to the next (the reads say what is wrong).
func (r *reading) lookAgain(ctx context.Context) {
	t, err := r.src.Topic(ctx, r.o.Topic)
	if err != nil {
		return
	}
	r.findTails(t)
	if r.o.Partition != nil {
		return
	}
	all, err := partitions(t, nil)
	if err != nil || len(all) <= len(r.parts) {
		return
	}
	for _, p := range all {
		if _, ok := r.next[p]; !ok {
			r.parts = append(r.parts, p)
			r.next[p] = statsOf(t, p).OldestOffset
		}
	}
}

// findTails starts each partition whose tail was unknown at the tail t gives it, if
// t has one now: messages written there meanwhile are not shown, as they would not
// have been had its owner answered when the read started.
func (r *reading) findTails(t *client.Topic) {
	for _, p := range r.parts {
		if r.next[p] != tailUnknown {
			continue
		}
		if st, ok := knownStats(t, p); ok {
			r.next[p] = st.HighWatermark
			if r.o.OnTailFound != nil {
				r.o.OnTailFound(p, st.HighWatermark)
			}
		}
	}
}

// tailsUnknown says some partition waits for its tail (see findTails).
func (r *reading) tailsUnknown() bool {
	for _, p := range r.parts {
		if r.next[p] == tailUnknown {
			return true
		}
	}
	return false
}

// startOffsets is where each partition's read begins, by o.Start (a Since read then
// moves it, see newWindow).
func startOffsets(t *client.Topic, parts []int, o Options) map[int]int64 {
	next := make(map[int]int64, len(parts))
	for _, p := range parts {
		st := statsOf(t, p)
		switch o.Start {
		case FromOldest:
			next[p] = st.OldestOffset
		case FromTail:
			next[p] = st.HighWatermark
			if _, ok := knownStats(t, p); !ok {
				next[p] = tailUnknown
			}
		case FromOffset:
			next[p] = o.Offset
		}
	}
	return next
}

// reading is one Run on its way: the offset to read next in each partition, and what
// was emitted.
type reading struct {
	src     Source
	o       Options
	parts   []int
	next    map[int]int64
	w       *window
	emit    func(*client.Message) error
	emitted int
}

// sweep reads each partition in turn; stop says the read is over (Count reached, emit
// asked to stop, or err).
func (r *reading) sweep(ctx context.Context, last bool) (progressed, stop bool, err error) {
	for _, p := range r.parts {
		// Without Follow each partition is read to its tail before the next one;
		// with Follow one message per partition per sweep keeps them all live.
		for !r.done(p) && r.next[p] != tailUnknown {
			if r.full() {
				return progressed, true, nil
			}
			m, err := r.w.next(ctx, r.src, r.o.Topic, p, r.next[p])
			if client.IsGone(err) {
				if err := r.skipGone(ctx, p); err != nil {
					return progressed, true, err
				}
				continue
			}
			if err != nil {
				return progressed, true, err
			}
			if m == nil {
				break // at the tail
			}
			// Past the offset asked, whatever the answer says: a node that answers with
			// an older message would otherwise have the read go round forever.
			r.next[p] = max(m.Offset, r.next[p]) + 1
			progressed = true
			if stop, err := r.deliver(ctx, p, m); stop || err != nil {
				return progressed, true, err
			}
			if r.o.Follow && !last {
				break
			}
		}
	}
	return progressed, false, nil
}

// skipGone moves partition p past offsets retention dropped, to what it still holds.
func (r *reading) skipGone(ctx context.Context, p int) error {
	oldest, err := oldestPast(ctx, r.src, r.o.Topic, p, r.next[p])
	if err != nil {
		return err
	}
	if r.o.OnGone != nil {
		r.o.OnGone(p, r.next[p], oldest)
	}
	r.next[p] = oldest
	return nil
}

// oldestPast is partition p's oldest retained offset once retention dropped off
// (a read of it answered 410); an error when nothing newer than off is retained.
func oldestPast(ctx context.Context, src Source, topic string, p int, off int64) (int64, error) {
	t, err := src.Topic(ctx, topic)
	if err != nil {
		return 0, err
	}
	oldest := statsOf(t, p).OldestOffset
	if oldest <= off {
		return 0, fmt.Errorf("replay partition %d offset %d: gone and no newer offset retained", p, off)
	}
	return oldest, nil
}

// deliver emits m when the window keeps it; stop says emit wants no more.
func (r *reading) deliver(ctx context.Context, p int, m *client.Message) (stop bool, err error) {
	if r.o.Read != nil {
		r.o.Read.Add(1)
	}
	if !r.w.keep(p, m) || r.o.Match != nil && !r.o.Match.Match(ctx, m) {
		return false, nil
	}
	r.emitted++
	if err := r.emit(m); err != nil {
		if errors.Is(err, ErrStop) {
			return true, nil
		}
		return true, err
	}
	return false, nil
}

// done says partition p is read to its end (To, or the end of the window).
func (r *reading) done(p int) bool { return r.o.To >= 0 && r.next[p] > r.o.To || r.w.ended[p] }

// full says Count messages were emitted.
func (r *reading) full() bool { return r.o.Count > 0 && r.emitted >= r.o.Count }

func (r *reading) allDone() bool {
	for _, p := range r.parts {
		if !r.done(p) {
			return false
		}
	}
	return true
}

// sleep waits d, or less when ctx ends first, and then says so.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

func partitions(t *client.Topic, only *int) ([]int, error) {
	n := t.Partitions
	if n == 0 {
		n = len(t.PartitionStats)
	}
	if only != nil {
		if *only < 0 || *only >= n {
			return nil, fmt.Errorf("%w: topic %s has partitions 0..%d, not %d (leave --partition out for all of them)", ErrNoSuchPartition, t.Name, n-1, *only)
		}
		return []int{*only}, nil
	}
	ps := make([]int, n)
	for i := range ps {
		ps[i] = i
	}
	return ps, nil
}

// knownStats is partition p's stats when topic info really gave them: not a
// placeholder for a partition whose owner is down (a v3.1 node answers those with zero
// statistics and a status other than ok, in a partial answer), nor none at all in a
// partial answer. (A node that gives no stats at all is read as before, from 0.)
func knownStats(t *client.Topic, p int) (client.PartitionStats, bool) {
	for _, st := range t.PartitionStats {
		if st.Index == p {
			return st, st.Status == "" || st.Status == "ok"
		}
	}
	return client.PartitionStats{Index: p}, !t.Partial
}

func statsOf(t *client.Topic, p int) client.PartitionStats {
	for _, st := range t.PartitionStats {
		if st.Index == p {
			return st
		}
	}
	return client.PartitionStats{Index: p}
}
