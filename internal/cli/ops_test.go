package cli

import (
	"reflect"
	"testing"

	"github.com/narad/narad/internal/client"
)

func TestParseGrants(t *testing.T) {
	got, err := parseGrants([]string{"consume:orders*,payments", "produce:orders", "admin"})
	if err != nil {
		t.Fatal(err)
	}
	want := []client.UserGrant{
		{Action: "consume", Patterns: []string{"orders*", "payments"}},
		{Action: "produce", Patterns: []string{"orders"}},
		{Action: "admin"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if s := formatGrants(got); s != "consume:orders*,payments produce:orders admin" {
		t.Errorf("formatGrants = %q", s)
	}
	for _, bad := range []string{"", "read:orders", "consume", "consume:", "consume:a,,b", "admin:orders",
		"consume:or*ders", "produce:bad name", "consume:\x1b[31m"} {
		if _, err := parseGrants([]string{bad}); err == nil || exitCodeFor(err) != ExitUsage {
			t.Errorf("parseGrants(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestParseQueueMetrics(t *testing.T) {
	text := []byte(`# HELP narad_inflight_size Messages leased right now.
# TYPE narad_inflight_size gauge
narad_inflight_size{partition="0",topic="orders"} 3
narad_inflight_size{topic="orders",partition="1"} 2
narad_inflight_size{partition="0",topic="events"} 0
narad_consumer_lag_messages{partition="0",topic="orders"} 10
narad_consumer_lag_messages{partition="1",topic="orders"} 5e0
narad_consumer_lag_messages_other{partition="1",topic="orders"} 99
narad_consumer_lag_messages{partition="1"} 7
narad_consumer_lag_messages{topic="broken"
narad_inflight_size{topic="x"} notanumber
`)
	m := parseQueueMetrics(text)
	if m.inFlight["orders"] != 5 || m.inFlight["events"] != 0 || len(m.inFlight) != 2 {
		t.Errorf("in flight = %v", m.inFlight)
	}
	if m.lag["orders"] != 15 || len(m.lag) != 1 {
		t.Errorf("lag = %v", m.lag)
	}
	rows := []TopicStatus{{Name: "orders"}, {Name: "events"}, {Name: "quiet"}, {Name: "gone", Error: "404"}}
	applyMetrics(rows, m)
	if rows[0].InFlight == nil || *rows[0].InFlight != 5 || *rows[0].Lag != 15 {
		t.Errorf("orders row = %+v", rows[0])
	}
	if rows[1].InFlight == nil || *rows[1].InFlight != 0 || rows[1].Lag != nil {
		t.Errorf("events row = %+v", rows[1])
	}
	if rows[2].InFlight != nil || rows[2].Lag != nil || rows[3].InFlight != nil {
		t.Errorf("rows without metrics got some: %+v", rows)
	}
}

func TestCheckPassword(t *testing.T) {
	for _, pw := range []string{"", string(make([]byte, 73))} {
		if _, err := checkPassword(pw); err == nil {
			t.Errorf("checkPassword(len %d) accepted", len(pw))
		}
	}
	if _, err := checkPassword(string(make([]byte, 72))); err != nil {
		t.Errorf("72 bytes refused: %v", err)
	}
}
