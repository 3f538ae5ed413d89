package consumer

import (
	"context"
	"fmt"
	"sync"

	"github.com/narad/narad/internal/client"
)

// undecodable is what the senders remember of messages that could not be decoded:
// which they have seen, by place, since a message given back comes back.
type undecodable struct {
	badMu   sync.Mutex
	badSeen map[[2]int64]bool
}

// seenBefore records m's place and reports whether it was recorded already.
func (u *undecodable) seenBefore(m *client.Message) bool {
	u.badMu.Lock()
	defer u.badMu.Unlock()
	if u.badSeen == nil {
		u.badSeen = map[[2]int64]bool{}
	}
	k := [2]int64{int64(m.Partition), m.Offset}
	if u.badSeen[k] {
		return true
	}
	u.badSeen[k] = true
	return false
}

// setAsideUndecodable keeps the messages of an answer that decode and deals with the
// others one by one, so that one message without a payload or with bad base64 does
// not stop the run (and every run restarted on the topic after it) with its batch
// given back: it is reported, with its place and why, and counted failed. The first
// time the run sees it, it is dead-lettered as the node sent it when the run has a
// dead-letter topic, else given back at once. A message given back comes back: seen
// again, it is left to its lease (not held, not given back), so that the run does not
// take it and give it back in a loop; the node hands it out again when the lease ends.
//
// Checking decodes into scratch, which is returned for the next answer; a JSON
// payload or a plain string is not copied, so the check costs a scan of each message.
func (t *taker) setAsideUndecodable(ctx context.Context, msgs []client.Message, scratch []byte) ([]client.Message, []byte) {
	kept := msgs[:0]
	var bad []client.Message
	var whys []error
	for i := range msgs {
		var err error
		if scratch, err = msgs[i].Check(scratch); err != nil {
			bad = append(bad, msgs[i])
			whys = append(whys, err)
			continue
		}
		if bad != nil {
			kept = append(kept, msgs[i]) // in place: msgs[i] is at or past where it goes
		} else {
			kept = msgs[:i+1] // nothing set aside yet: nothing moves
		}
	}
	for i := range bad {
		t.undecodableOne(ctx, &bad[i], whys[i])
	}
	return kept, scratch
}

// undecodableOne deals with m, which cannot be decoded for why (see
// setAsideUndecodable).
func (t *taker) undecodableOne(ctx context.Context, m *client.Message, why error) {
	if t.seenBefore(m) {
		if t.o.OnUndecodable != nil {
			t.o.OnUndecodable(m, why, "came back: left to its lease, so that it is not taken and given back in a loop")
		}
		return
	}
	t.c.received.Add(1)
	d := t.s.wrap([]client.Message{*m})[0]
	fate := "given back; the others go on"
	switch {
	case t.o.DeadLetterUndecodable == nil:
		_ = NackAll([]Delivery{d}, Failed)
	case len(m.Payload) == 0:
		_ = NackAll([]Delivery{d}, Failed)
		fate = "nothing to dead-letter: given back; the others go on"
	default:
		if err := t.o.DeadLetterUndecodable(ctx, m); err != nil {
			_ = NackAll([]Delivery{d}, Failed)
			fate = fmt.Sprintf("cannot dead-letter it (%v): given back; the others go on", err)
		} else {
			_ = d.DeadLettered(Failed)
			fate = "dead-lettered as the node sent it, and acked; the others go on"
		}
	}
	if t.o.OnUndecodable != nil {
		t.o.OnUndecodable(m, why, fate)
	}
}
