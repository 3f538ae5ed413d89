package consumer

import (
	"encoding/json"
	"io"
)

// Stats are a run's counters at one moment.
type Stats struct {
	// Received is every message a consume handed us.
	Received int64 `json:"received"`
	// Acked is acks the broker confirmed (204).
	Acked int64 `json:"acked"`
	// Nacked is messages given back (the broker answered 204, or 410: back either way).
	Nacked int64 `json:"nacked"`
	// Failed is messages that could not be handled (a command that did not start) plus
	// settlements that never got a final answer.
	Failed int64 `json:"failed"`
	// TimedOut is handling stopped for taking too long.
	TimedOut int64 `json:"timed_out"`
	// LeaseLost is leases that turned out gone (410) on extend: nothing was settled.
	LeaseLost int64 `json:"lease_lost"`
	// AckGone is acks answered 410: the message may be delivered again.
	AckGone int64 `json:"ack_gone"`
	// Retries is the extra settlement attempts the client needed (502/503 and the like).
	Retries int64 `json:"retries"`
	// Bugs is second settlements of one delivery, refused.
	Bugs int64 `json:"bugs"`
	// DeadLettered is messages copied to the dead-letter topic after failing for good,
	// then acked (exec mode).
	DeadLettered int64 `json:"dead_lettered"`
}

// Stat is one counter, by name, for a table.
type Stat struct {
	Name  string
	Value int64
}

// Pairs lists the counters in a fixed order, named as in WriteJSON.
func (s Stats) Pairs() []Stat {
	return []Stat{
		{"received", s.Received},
		{"acked", s.Acked},
		{"nacked", s.Nacked},
		{"failed", s.Failed},
		{"timed_out", s.TimedOut},
		{"lease_lost", s.LeaseLost},
		{"ack_gone", s.AckGone},
		{"retries", s.Retries},
		{"bugs", s.Bugs},
		{"dead_lettered", s.DeadLettered},
	}
}

// WriteJSON writes the counters as one JSON object on one line.
func (s Stats) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(s)
}
