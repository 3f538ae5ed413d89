package consumer_test

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/consumer/consumertest"
)

// TestRateBoundsWhatIsTaken: with Rate 20, no second window holds more than 20
// messages taken, no consume asks for more than a second's worth, and the run still
// takes everything. The clock is synctest's, so the figures are exact.
func TestRateBoundsWhatIsTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := consumertest.New()
		src.Add("t", 70)
		var out bytes.Buffer
		start := time.Now()
		res, err := consumer.Run(context.Background(), src, consumer.NewPrinter(&out, lines{}), consumer.Options{
			Topic: "t", Count: 70, Rate: 20,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stats.Acked != 70 {
			t.Fatalf("stats %+v", res.Stats)
		}
		// 20 at once, then 20 a second: the last of 70 is taken 2.5 s in.
		if took := time.Since(start); took < 2500*time.Millisecond {
			t.Errorf("took %v, want at least 2.5s at 20 a second", took)
		}
		cs := src.Consumes()
		for i, c := range cs {
			if c.Opts.Max > 20 {
				t.Errorf("consume %d asked for %d, more than a second's worth", i, c.Opts.Max)
			}
			inWindow := 0
			for _, d := range cs[i:] {
				if d.At.Sub(c.At) < time.Second {
					inWindow += d.Got
				}
			}
			if inWindow > 40 {
				// A full bucket (20) plus a second's refill (20) is the most any window can see.
				t.Errorf("%d messages taken within a second from consume %d", inWindow, i)
			}
		}
	})
}
