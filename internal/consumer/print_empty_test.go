package consumer_test

import (
	"bytes"
	"context"
	"io"
	"slices"
	"testing"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// evenOnly renders the messages with an even offset and nothing at all for the
// others, as a --jq that selects some messages does.
type evenOnly struct{}

func (evenOnly) Append(dst []byte, m *client.Message) ([]byte, error) {
	if m.Offset%2 != 0 {
		return dst, nil
	}
	return append(append(dst, m.ReceiptHandle...), '\n'), nil
}

// nothing renders nothing for every message.
type nothing struct{}

func (nothing) Append(dst []byte, m *client.Message) ([]byte, error) { return dst, nil }

// A message whose record is empty is written once the records before it are: it is
// acked, never given back to be taken again, also when a whole batch printed nothing.
func TestPrinterAcksEmptyRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    consumer.LineRenderer
		want string
	}{
		{"some empty", evenOnly{}, "h0\nh2\n"},
		{"all empty", nothing{}, ""},
	} {
		for _, viaPipe := range []bool{false, true} {
			name := tc.name
			if viaPipe {
				name += " through a pipe"
			}
			t.Run(name, func(t *testing.T) {
				src := consumertest.New()
				src.Add("t", 4)
				var out bytes.Buffer
				var w io.Writer = &out
				read := make(chan struct{})
				if viaPipe {
					r, pw := pipe(t)
					w = pw
					go func() {
						defer close(read)
						_, _ = io.Copy(&out, r)
					}()
					defer func() {
						pw.Close()
						<-read
						if out.String() != tc.want {
							t.Errorf("printed %q, want %q", out.String(), tc.want)
						}
					}()
				}
				res := run(t, context.Background(), src, consumer.NewPrinter(w, tc.r), consumer.Options{Drain: true})
				if got := sorted(src.Handles(client.Ack)); !slices.Equal(got, []string{"h0", "h1", "h2", "h3"}) {
					t.Errorf("acked %v, want all four", got)
				}
				if got := src.Handles(client.Nack); len(got) != 0 {
					t.Errorf("nacked %v, want none", got)
				}
				if res.Stats.Acked != 4 {
					t.Errorf("stats %+v", res.Stats)
				}
				if !viaPipe && out.String() != tc.want {
					t.Errorf("printed %q, want %q", out.String(), tc.want)
				}
			})
		}
	}
}
