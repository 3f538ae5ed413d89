package producer

import (
	"math"
	"sync/atomic"
	"time"
)

// Paced plays src at the pace its records were first produced: a record with a
// Timestamp is let through at its offset from the first such record, divided by
// factor (1 is real time, 60 a minute a second). A record the tape has already passed
// (an earlier timestamp than one let through) goes at once, and so does one without a
// timestamp or with bad input. Next waits on the real clock; a test runs it in a
// testing/synctest bubble. stop, when closed, ends a wait: the record then goes at
// once, for a run that stops reads no further.
func Paced(src Source, factor float64, stop <-chan struct{}) *Pacer {
	return &Pacer{src: src, factor: factor, stop: stop}
}

// Pacer is the Source Paced returns; Position may be read while it is read.
type Pacer struct {
	src    Source
	factor float64
	stop   <-chan struct{}

	start time.Time    // when the first timestamped record went
	first atomic.Int64 // its timestamp

	pos atomic.Int64 // the latest timestamp let through, unix seconds
	// hasPos: the first timestamped record went (start, first and pos are set).
	hasPos atomic.Bool
	// behind is the first record that came after the tape had passed its time.
	behind atomic.Pointer[Behind]
}

// Behind is a record whose timestamp was already passed when it was read: the tape is
// not in time order there.
type Behind struct {
	Pos int
	By  time.Duration
}

func (p *Pacer) Unit() string { return p.src.Unit() }

// Position is the tape's own time: the latest timestamp let through.
func (p *Pacer) Position() (pos, first time.Time, ok bool) {
	if !p.hasPos.Load() {
		return time.Time{}, time.Time{}, false
	}
	return time.Unix(p.pos.Load(), 0), time.Unix(p.first.Load(), 0), true
}

// FirstBehind is the first record read after the tape had passed its time, if any.
func (p *Pacer) FirstBehind() *Behind { return p.behind.Load() }

func (p *Pacer) Next() (*Record, error) {
	rec, err := p.src.Next()
	if err != nil || rec.Err != nil || rec.Timestamp == nil {
		return rec, err
	}
	ts := *rec.Timestamp
	if !p.hasPos.Load() {
		p.start = time.Now()
		p.first.Store(ts)
		p.pos.Store(ts)
		p.hasPos.Store(true)
		return rec, nil
	}
	if cur := p.pos.Load(); ts < cur {
		// Seconds are the timestamps' grain: a second back is the same moment.
		if by := time.Duration(cur-ts) * time.Second; by > time.Second && p.behind.Load() == nil {
			p.behind.Store(&Behind{Pos: rec.Pos, By: by})
		}
		return rec, nil
	}
	// A gap too long to wait out as a Duration waits for the stop.
	wait := min(float64(ts-p.first.Load())*float64(time.Second)/p.factor, math.MaxInt64/2)
	due := p.start.Add(time.Duration(wait))
	if d := time.Until(due); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-p.stop:
			t.Stop()
		}
	}
	p.pos.Store(ts)
	return rec, nil
}
