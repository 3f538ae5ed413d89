package consumer

import (
	"slices"
	"testing"

	"github.com/narad/narad/internal/client"
)

// With one message per consume, the answers that came back while one was handled are
// handed over with it, up to the first that brought nothing, which the loop still
// sees on its own and in its turn, followed by the rest.
func TestJoinReadyStopsAtAnAnswerWithoutMessages(t *testing.T) {
	one := func(h string) *call {
		return &call{n: 1, ds: []Delivery{{&delivery{msg: &client.Message{ReceiptHandle: h}}}}}
	}
	empty := &call{n: 1, res: &client.ConsumeResult{}}
	tk := &taker{results: make(chan *call, 8), out: 5, asked: 5}
	for _, c := range []*call{one("a"), one("b"), one("c"), empty, one("d")} {
		tk.results <- c
	}
	first := tk.next()
	joined := tk.joinReady(first.ds)
	var got []string
	for _, d := range joined {
		got = append(got, d.Message().ReceiptHandle)
	}
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("handed over %v together, want a, b and c", got)
	}
	if tk.out != 2 || tk.asked != 2 {
		t.Errorf("%d consumes (%d messages) counted on their way, want the empty one and d", tk.out, tk.asked)
	}
	if c := tk.next(); c != empty {
		t.Errorf("next answer %+v, want the empty one set aside", c)
	}
	if c := tk.next(); len(c.ds) != 1 || c.ds[0].Message().ReceiptHandle != "d" || tk.out != 0 || tk.asked != 0 {
		t.Errorf("last answer %+v with %d still counted on their way, want d and none", c, tk.out)
	}
}
