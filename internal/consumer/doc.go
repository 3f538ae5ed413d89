// Package consumer owns the one consume loop of `narad sub`: it takes batches sized to
// what the handler can take, hands each leased message to a Handler as a Delivery,
// makes sure every delivery is settled exactly once (giving back whatever a handler
// left), keeps the lease of everything held, and counts what happened. Printing
// (Printer, in this package), the exec supervisor (package supervisor) and hold mode
// (package hold) are Handlers of the same loop. How far the loop takes ahead of a
// handler is decided in one file, pipelining.go, from the one value a handler returns
// (Pipelining).
//
// Stops come in two strengths. A soft one (the first signal, the timeout, a closed
// output) takes nothing more: a consume already sent is let finish, since the node
// may be leasing a batch for it, and whatever it brings is given back at once; each
// consume long-polls at most Options.PollMax, so this wait is short. Settlements go
// on with their retries. The hard one (Run's ctx: the second signal) cuts the consume
// in flight (Result.AnswerLost says so), gives up every settlement retry
// (Result.Unconfirmed names each), and gives one prompt try to settlements asked for
// after it, so that Run returns promptly even when the node is gone.
//
// # Goroutines, and who owns what
//
//	Run (consumer.go), on its caller's goroutine
//	 ├─ taker loop (consumer.go: taker.loop): Slots → send → next → Handle, and the
//	 │    next consumes sent ahead (pipelining.go: sendAhead); owns what is on its
//	 │    way (out, asked, aside) and the count taken (received)
//	 ├─ watcher (consumer.go: stopWatch.watch): the soft stop, --timeout, the
//	 │    handler's output gone, the hard stop; owns `stopping`, closed once with
//	 │    the reason, and cancels the loop's waiting
//	 ├─ senders (consumer.go: taker.sender): one consume each at a time, kept for the
//	 │    run, one more whenever all are busy (at most batchAhead on their way for a
//	 │    v3.1 node, legacyParallel for an older one); answers go back to the loop on
//	 │    `results`, each message wrapped as a Delivery the moment it arrives
//	 ├─ keeper (keep.go): extends every held lease a third of a lease in, in batches,
//	 │    and loses a lease on a 410 or once it certainly lapsed; reads the settler's
//	 │    open and acking sets, and settles only what it loses
//	 ├─ abandon watcher (delivery.go: newSettler): turns Options.Abandon into the end
//	 │    of every settlement retry
//	 └─ the Handler's own:
//	     Printer (print.go): Handle renders and writes a batch on the loop's goroutine
//	       (a writer goroutine per batch only when a stop may have to give up a write
//	       that blocks); to a pipe (pipe.go) it queues the lines instead:
//	         pipe writer (pipe.go: pipeState.writer): puts lines into the pipe, waits
//	           until the reader took them and hands them to the ackers; owns the
//	           lines in the pipe (pipeState.cur, under its mutex) and gives each to
//	           exactly one of the ack, the give-back at a stop, the reader-gone end
//	         pipe watcher (pipe.go: pipeState.watcher): notices a reader gone while
//	           the writer is idle
//	     ackers (acker.go: Acker.acker): the one ack batcher, kept until Close: each
//	       takes what waits and sends it in one AckAll (the client cuts it into
//	       requests within the API's limits and retries 502/503); up to 4 at once,
//	       legacyParallel single acks side by side for an older node
//	     exec mode (package supervisor): a process goroutine per delivery
//	       (supervisor.go: process) waits for a slot, runs the command (exec.go, with
//	       two output pumps and a reaper), and settles once: acks through the same
//	       Acker (with a window), whose leases this package's keeper keeps
//
// Every settlement goes through the settler (delivery.go), which owns every
// delivery's state: what is open (held, not settled), what is being acked (settled,
// its lease still kept until the answer), the unconfirmed list, and the counters; it
// refuses a second settlement (counted as a bug).
package consumer
