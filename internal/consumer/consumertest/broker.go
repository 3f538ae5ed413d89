package consumertest

import (
	"net/http"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/devbroker"
)

// Broker starts a devbroker with a 3-partition topic "t" whose visibility timeout is
// lease, and returns it with a client that retries fast. Both stop with the test.
func Broker(t testing.TB, lease time.Duration) (*devbroker.Broker, *client.Client) {
	t.Helper()
	b, err := devbroker.Start(devbroker.Config{Topics: []devbroker.TopicSpec{{Name: "t", Partitions: 3, VisibilityTimeout: lease}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	// The broker's Shutdown waits for connections the client dialled and never used;
	// closing them first keeps each test from paying that wait.
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(client.Config{BaseURL: b.URL(), HTTPClient: &http.Client{Transport: tr},
		Retry: client.RetryPolicy{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}
