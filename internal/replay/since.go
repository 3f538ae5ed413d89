package replay

import (
	"context"

	"github.com/narad/narad/internal/client"
)

// Finding where --since starts, by binary search over replay reads.
//
// A partition's timestamps (unix seconds) do not decrease with the offset, so the
// first message stamped at or after since splits the partition in two: every probe
// tells which half to keep, and ⌈log2(n+1)⌉ reads find the start among n retained
// messages. The probes at and after the start are kept and printed without being
// read again.
//
// A partition whose order is broken (a clock stepped back on the node that wrote it)
// is still read correctly, meaning: every message from the start on whose stamp is in
// the range is printed, none is skipped. The search checks each probe against its two
// neighbours among the probes already made (the nearest one before since on its left,
// the nearest one at or after since on its right); a stamp outside them is a break,
// and the search stops there. It then falls back to the last good point: the offset
// just after the last probe stamped before since (the partition's oldest when there
// was none), from where Run reads on, message by message, printing only those in the
// range. Messages before that point are not read: a break that no probe saw is not
// known, and finding it would take the scan this search exists to avoid.

// Found is where one partition's --since read starts and what finding it cost.
type Found struct {
	Partition int
	// Start is the first offset to read.
	Start int64
	// Reads is the replay reads the search made (a 410 answer included).
	Reads int
	// Messages is how many the partition held when the search began.
	Messages int64
	// Broken is set when the probes showed timestamps going down: Start is then the
	// last good point, read on from rather than trusted.
	Broken bool
	// read holds the messages the search read at or after Start, by offset, so
	// that reading on from Start does not ask for them again.
	read map[int64]*client.Message
}

// findStart searches partition p (its stats as of st) for the first offset whose
// message is stamped at or after since (unix seconds).
func findStart(ctx context.Context, src Source, topic string, p int, st client.PartitionStats, since int64) (Found, error) {
	lo, hi := st.OldestOffset, st.HighWatermark
	f := Found{Partition: p, Messages: max(0, hi-lo)}
	// below is the stamp of the nearest probe left of the window (stamped before
	// since), above that of the nearest one at its right end (stamped at or after
	// since); nil: none yet.
	var below, above *int64
	var probes []*client.Message
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := src.Replay(ctx, topic, p, mid)
		f.Reads++
		if client.IsGone(err) {
			// Retention moved the partition's oldest past mid while we searched:
			// what is gone needs no searching, so the window starts at the new oldest.
			oldest, err := oldestPast(ctx, src, topic, p, mid)
			if err != nil {
				return f, err
			}
			lo, below = oldest, nil
			if hi <= lo {
				// The first message at or after since is gone too: the oldest kept
				// comes after it, so it is the start.
				hi, above = lo, nil
			}
			continue
		}
		if err != nil {
			return f, err
		}
		if m == nil {
			// Past the tail the stats gave: the partition shrank under us (the topic
			// was recreated). Nothing at or after mid to find.
			hi, above = mid, nil
			continue
		}
		probes = append(probes, m)
		if (below != nil && m.Timestamp < *below) || (above != nil && m.Timestamp > *above) {
			f.Broken = true
			break
		}
		ts := m.Timestamp
		if ts < since {
			lo, below = mid+1, &ts
		} else {
			hi, above = mid, &ts
		}
	}
	f.Start = lo
	for _, m := range probes {
		if m.Offset >= lo {
			if f.read == nil {
				f.read = make(map[int64]*client.Message)
			}
			f.read[m.Offset] = m
		}
	}
	return f, nil
}
