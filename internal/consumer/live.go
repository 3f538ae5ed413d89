package consumer

// Live is a run's counters as they move, for a reader outside the run that must
// agree with what the run reports (the metrics server reads it at each scrape): it
// reads the very counters Result.Stats is a snapshot of, so the two cannot disagree.
// It stays readable after the run ends, where it shows the final counts.
type Live struct {
	c *counters
	s *settler
}

// Stats are the counters now.
func (l Live) Stats() Stats { return l.c.snapshot() }

// Held is how many messages the run holds now: taken and not settled yet, waiting,
// being handled or with their ack on its way. With NoAck nothing is held (the
// leases lapse on their own).
func (l Live) Held() int {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return len(l.s.open) + len(l.s.acking)
}

// Extended is how many leases were extended (each message's 204 to an extend, the
// run's keeper's and a handler's own alike).
func (l Live) Extended() int64 { return l.c.extended.Load() }
