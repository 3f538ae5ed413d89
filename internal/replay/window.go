package replay

import (
	"context"
	"time"

	"github.com/narad/narad/internal/client"
)

// window is a read's time range (Options.Since, Options.Until) and what Run keeps
// per partition to apply it. Without either, every method lets everything through,
// so a read by position is exactly what it was.
type window struct {
	since, until int64 // unix seconds, inclusive
	hasSince     bool
	hasUntil     bool
	now          func() time.Time
	// untilOver is the first moment nothing more can be stamped at or before until.
	untilOver time.Time
	// read is what the search read at and after each partition's start, by offset,
	// to emit without reading it again.
	read map[int]map[int64]*client.Message
	// broken partitions were seen with a stamp going down (by the search or the
	// read): a message past until does not end them, as one later may be in range.
	broken map[int]bool
	// lastTS is each partition's latest stamp read, to see a break while reading.
	lastTS map[int]int64
	// ended partitions read a message past until: nothing after it can be in range.
	ended map[int]bool
}

// newWindow resolves o's range and, with Since, searches each partition's start
// into next before anything is read: all partitions are searched against the same
// topic stats, so the high watermarks are fresh for each.
func newWindow(ctx context.Context, src Source, t *client.Topic, parts []int, o Options, next map[int]int64) (*window, error) {
	w := &window{now: o.Now, read: map[int]map[int64]*client.Message{}, broken: map[int]bool{},
		lastTS: map[int]int64{}, ended: map[int]bool{}}
	if w.now == nil {
		w.now = time.Now
	}
	if !o.Until.IsZero() {
		w.hasUntil, w.until = true, o.Until.Unix()
		w.untilOver = time.Unix(w.until+1, 0)
	}
	if o.Since.IsZero() {
		return w, nil
	}
	w.hasSince, w.since = true, o.Since.Unix()
	for _, p := range parts {
		f, err := findStart(ctx, src, o.Topic, p, statsOf(t, p), w.since)
		if err != nil {
			return nil, err
		}
		next[p] = f.Start
		if f.read != nil {
			w.read[p] = f.read
		}
		w.broken[p] = f.Broken
		if o.OnFound != nil {
			o.OnFound(f)
		}
	}
	return w, nil
}

// next is the message at off in p: the one the search already holds, or a replay
// read. Each message the search holds is handed out once.
func (w *window) next(ctx context.Context, src Source, topic string, p int, off int64) (*client.Message, error) {
	if held := w.read[p]; held != nil {
		m := held[off]
		delete(held, off)
		if len(held) == 0 {
			delete(w.read, p)
		}
		if m != nil {
			return m, nil
		}
	}
	return src.Replay(ctx, topic, p, off)
}

// keep says whether m, just read from p, is in range and so emitted; a message past
// until ends p unless p's order was seen broken.
func (w *window) keep(p int, m *client.Message) bool {
	if !w.hasSince && !w.hasUntil {
		return true // a read by position: nothing to track
	}
	if last, ok := w.lastTS[p]; ok && m.Timestamp < last {
		w.broken[p] = true
	}
	w.lastTS[p] = max(m.Timestamp, w.lastTS[p])
	if w.hasUntil && m.Timestamp > w.until {
		if !w.broken[p] {
			w.ended[p] = true
		}
		return false
	}
	return !w.hasSince || m.Timestamp >= w.since
}

// over says the clock passed until: a follow reads to the tails once more and ends.
func (w *window) over() bool {
	return w.hasUntil && !w.now().Before(w.untilOver)
}

// pause is how long a follow that found nothing new waits: the poll interval, or
// less when until passes sooner.
func (w *window) pause(poll time.Duration) time.Duration {
	if !w.hasUntil {
		return poll
	}
	return max(0, min(poll, w.untilOver.Sub(w.now())))
}
