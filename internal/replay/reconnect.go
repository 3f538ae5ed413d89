package replay

import (
	"context"
	"time"

	"github.com/narad/narad/internal/client"
)

// The pauses between reads while a follow waits out a lost node: the first, doubling
// up to the longest, as a long-running sub waits (consumer.Options.ReconnectMax).
const (
	reconnectFirst = 250 * time.Millisecond
	reconnectMax   = 5 * time.Second
)

// waitingSource is a follow's source once the node has answered (Options.OnNodeLost
// set): a read that finds the node unreachable (down, restarting) is tried again
// after a pause, until it answers or ctx ends, rather than ending a watch that may
// have run for hours; so is one that keeps answering busy. The read asks for the same
// offset again, so nothing is skipped.
type waitingSource struct {
	Source
	lost func(error)
	back func()
	down bool // the node was lost and has not answered since
}

func (s *waitingSource) Replay(ctx context.Context, topic string, partition int, offset int64) (*client.Message, error) {
	pause := reconnectFirst
	for {
		m, err := s.Source.Replay(ctx, topic, partition, offset)
		// A node that keeps answering busy (503 past the retry budget: a partition
		// owner down or moving) is waited out as one that cannot be reached.
		waiting := client.IsUnreachable(err) || client.IsBusy(err)
		if !waiting || ctx.Err() != nil {
			if s.down && !waiting && (err == nil || client.StatusOf(err) != 0) {
				s.down = false
				if s.back != nil {
					s.back()
				}
			}
			return m, err
		}
		if !s.down {
			s.down = true
			s.lost(err)
		}
		if err := sleep(ctx, pause); err != nil {
			return nil, err
		}
		pause = min(2*pause, reconnectMax)
	}
}
