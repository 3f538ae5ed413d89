// Package consumertest provides a scripted, in-memory consumer.Source for tests of the
// consume loop and its handlers: it hands out queued messages, records every consume
// and settlement, and answers settlements with statuses a test chooses.
package consumertest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/narad/narad/internal/client"
)

// Consume is one recorded consume request.
type Consume struct {
	Opts client.ConsumeOptions
	Got  int
	// At is when the request was made.
	At time.Time
}

// Settle is one recorded settlement request.
type Settle struct {
	Action  client.Action
	Handles []string
	At      time.Time
	// CtxErr is the request context's error when the settlement was asked for: a
	// settlement must not be cancelled by a stop.
	CtxErr error
}

// Source is a fake consumer.Source. Its zero value is not usable; call New.
type Source struct {
	mu       sync.Mutex
	queue    []client.Message
	arrived  chan struct{} // closed and replaced whenever messages are added
	consumes []Consume
	settles  []Settle
	next     int

	// Status answers a settlement of one handle; nil answers 204 to everything.
	// It is called without the Source's lock held.
	Status     func(a client.Action, handle string) int
	consumeErr error
	// Over makes every consume return this many more messages than asked for, the
	// way a misbehaving node might.
	Over int
	// Single answers as a node older than v3.1 does: one message per consume whatever
	// max says, in the single-message shape.
	Single bool
	// Lease is the visibility timeout Topic tells; 0 makes Topic fail, as a node that
	// cannot be asked.
	Lease  time.Duration
	topics int
}

// New returns an empty Source.
func New() *Source { return &Source{arrived: make(chan struct{})} }

// Add queues n messages on topic, with payloads p0, p1, ... as JSON strings and
// receipt handles h<seq>.
func (s *Source) Add(topic string, n int) []client.Message {
	msgs := make([]client.Message, n)
	s.mu.Lock()
	for i := range msgs {
		seq := s.next
		s.next++
		msgs[i] = client.Message{
			Topic: topic, Partition: seq % 3, Offset: int64(seq),
			Payload:       []byte(fmt.Sprintf("%q", fmt.Sprintf("p%d", seq))),
			Timestamp:     1790623277,
			ReceiptHandle: fmt.Sprintf("h%d", seq),
		}
	}
	s.mu.Unlock()
	s.Push(msgs...)
	return msgs
}

// Push queues msgs as they are.
func (s *Source) Push(msgs ...client.Message) {
	s.mu.Lock()
	s.queue = append(s.queue, msgs...)
	close(s.arrived)
	s.arrived = make(chan struct{})
	s.mu.Unlock()
}

// FailNextConsume makes the next consume return err.
func (s *Source) FailNextConsume(err error) {
	s.mu.Lock()
	s.consumeErr = err
	s.mu.Unlock()
}

// Consume hands out up to o.Max queued messages (one when Max is 0), waiting up to
// o.Wait for the first.
func (s *Source) Consume(ctx context.Context, topic string, o client.ConsumeOptions) (*client.ConsumeResult, error) {
	at := time.Now()
	var deadline <-chan time.Time
	if o.Wait > 0 {
		t := time.NewTimer(o.Wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		s.mu.Lock()
		if err := s.consumeErr; err != nil {
			s.consumeErr = nil
			s.consumes = append(s.consumes, Consume{Opts: o, At: at})
			s.mu.Unlock()
			return nil, err
		}
		if len(s.queue) > 0 || o.Wait == 0 {
			n := min(max(o.Max, 1)+s.Over, len(s.queue))
			if s.Single {
				n = min(1, len(s.queue))
			}
			got := slices.Clone(s.queue[:n])
			s.queue = s.queue[n:]
			s.consumes = append(s.consumes, Consume{Opts: o, Got: n, At: at})
			s.mu.Unlock()
			return &client.ConsumeResult{Messages: got, Single: s.Single && n > 0 && o.Max > 0}, nil
		}
		arrived := s.arrived
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-deadline:
			s.mu.Lock()
			s.consumes = append(s.consumes, Consume{Opts: o, At: at})
			s.mu.Unlock()
			return &client.ConsumeResult{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Settle records the request and answers each handle with Status.
func (s *Source) Settle(ctx context.Context, topic string, a client.Action, handles []string) ([]client.SettleResult, error) {
	s.mu.Lock()
	s.settles = append(s.settles, Settle{Action: a, Handles: slices.Clone(handles), At: time.Now(), CtxErr: ctx.Err()})
	status := s.Status
	s.mu.Unlock()
	res := make([]client.SettleResult, len(handles))
	for i, h := range handles {
		res[i] = client.SettleResult{Handle: h, Status: 204}
		if status != nil {
			res[i].Status = status(a, h)
		}
		if res[i].Status != 204 {
			res[i].Err = fmt.Sprintf("status %d", res[i].Status)
		}
	}
	return res, nil
}

// Topic answers topic info with Lease as the visibility timeout, and counts the asking.
func (s *Source) Topic(ctx context.Context, name string) (*client.Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.topics++
	if s.Lease <= 0 {
		return nil, &client.Error{Op: client.OpTopicInfo, Status: 503, Message: "no lease set"}
	}
	return &client.Topic{Name: name, VisibilityTimeoutMs: s.Lease.Milliseconds()}, nil
}

// TopicAsks is how many times Topic was asked.
func (s *Source) TopicAsks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.topics
}

// Consumes returns the consumes so far.
func (s *Source) Consumes() []Consume {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.consumes)
}

// Settles returns the settlements so far.
func (s *Source) Settles() []Settle {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.settles)
}

// Handles returns, in order, every handle settled with a.
func (s *Source) Handles(a client.Action) []string {
	var hs []string
	for _, st := range s.Settles() {
		if st.Action == a {
			hs = append(hs, st.Handles...)
		}
	}
	return hs
}

// Len is how many messages are still queued.
func (s *Source) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}
