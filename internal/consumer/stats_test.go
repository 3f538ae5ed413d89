package consumer

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestStatsJSONAndPairsAgree(t *testing.T) {
	s := Stats{Received: 1, Acked: 2, Nacked: 3, Failed: 4, TimedOut: 5, LeaseLost: 6, AckGone: 7, Retries: 8, Bugs: 9, DeadLettered: 10}
	var b bytes.Buffer
	if err := s.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	want := `{"received":1,"acked":2,"nacked":3,"failed":4,"timed_out":5,"lease_lost":6,"ack_gone":7,"retries":8,"bugs":9,"dead_lettered":10}` + "\n"
	if b.String() != want {
		t.Errorf("JSON %s, want %s", b.String(), want)
	}
	var m map[string]int64
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	pairs := s.Pairs()
	if len(pairs) != len(m) {
		t.Errorf("%d pairs, %d JSON keys", len(pairs), len(m))
	}
	for _, p := range pairs {
		if v, ok := m[p.Name]; !ok || v != p.Value {
			t.Errorf("pair %s=%d, JSON has %d (%v)", p.Name, p.Value, v, ok)
		}
	}
}

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Result
		want Outcome
	}{
		{"clean count", Result{Reason: StopCount}, OutcomeOK},
		{"output closed", Result{Reason: StopOutputClosed}, OutcomeOK},
		{"timeout, count unmet", Result{Reason: StopTimeout, CountUnmet: true}, OutcomeCountUnmet},
		{"timeout, no count", Result{Reason: StopTimeout}, OutcomeOK},
		{"interrupted beats all", Result{Reason: StopInterrupted, Declined: 1, Stats: Stats{LeaseLost: 1}}, OutcomeInterrupted},
		{"fatal", Result{Reason: StopFailed}, OutcomeFailed},
		{"declined", Result{Reason: StopCount, Declined: 1, Stats: Stats{LeaseLost: 1}}, OutcomeFailed},
		{"timed out", Result{Reason: StopCount, Stats: Stats{TimedOut: 1}}, OutcomeFailed},
		{"failed", Result{Reason: StopDrained, Stats: Stats{Failed: 1}}, OutcomeFailed},
		{"lease lost only", Result{Reason: StopCount, Stats: Stats{LeaseLost: 1, Acked: 3}}, OutcomeLeaseGone},
		{"ack gone only", Result{Reason: StopDrained, Stats: Stats{AckGone: 1}}, OutcomeLeaseGone},
	} {
		if got := tc.r.Outcome(); got != tc.want {
			t.Errorf("%s: outcome %v, want %v", tc.name, got, tc.want)
		}
	}
}
