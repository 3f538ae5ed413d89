package cli

import (
	"fmt"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/supervisor"
)

// printRun is plain sub: each message printed with the output flags, then acked once
// its line is written (through a pipe, once the reader took it).
func printRun(opts *SubOptions) error {
	if err := opts.refuseClosedStdout(); err != nil {
		return err
	}
	r, err := opts.Output.renderer(opts.runEnv)
	if err != nil {
		return err
	}
	return consumeRun(opts, func(c *client.Client, _ *consumer.Options, _ *subMetrics) (consumer.Handler, *supervisor.Supervisor, error) {
		p := consumer.NewPrinter(iostreams.Unwrap(opts.IO.Out), r)
		p.ShutdownGrace(opts.ShutdownGrace)
		p.OnRenderCut(func(m *client.Message) {
			opts.notice(fmt.Sprintf("narad: --jq had not ended on p%d @%d when the run stopped: that message goes back unshown", m.Partition, m.Offset))
		})
		// Lines taken ahead, waiting behind a slow write or unread in a pipe keep their
		// leases: co.Lease 0, the run asks topic info for it only when one waits a while.
		opts.announceSub(c, opts.Topic, p.AcksWhenRead(), opts.NoAck)
		return p, nil, nil
	})
}
