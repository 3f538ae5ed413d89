package consumer

import (
	"context"
	"math"
	"time"

	"golang.org/x/time/rate"
)

// takeRate bounds how many messages a run takes a second (Options.Rate). A consume
// asks for no more than the limiter allows now, and waits for that before it is sent,
// so nothing taken waits for its turn in narad: what comes is handed over at once and
// no lease runs down because of the limit.
//
// A consume that brings fewer than it asked for has spent the tokens of the rest:
// the rate is a ceiling, never exceeded, and the bucket refills within a second.
type takeRate struct {
	lim   *rate.Limiter
	burst int
}

// newTakeRate allows perSecond messages a second, in requests of at most max (a
// second's worth when that is less).
func newTakeRate(perSecond float64, max int) *takeRate {
	burst := min(max, int(math.Max(1, math.Ceil(perSecond))))
	return &takeRate{lim: rate.NewLimiter(rate.Limit(perSecond), burst), burst: burst}
}

// wait waits until up to n messages may be taken and says how many (at least 1), or
// returns ctx's error.
func (r *takeRate) wait(ctx context.Context, n int) (int, error) {
	k := min(n, r.burst)
	res := r.lim.ReserveN(time.Now(), k)
	if d := res.Delay(); d > 0 && !pause(ctx, d) {
		res.Cancel()
		return 0, ctx.Err()
	}
	return k, nil
}

// now is how many of n messages may be taken without waiting, taken from the bucket.
func (r *takeRate) now(n int) int {
	k := min(n, r.burst, int(r.lim.Tokens()))
	if k < 1 || !r.lim.AllowN(time.Now(), k) {
		return 0
	}
	return k
}
