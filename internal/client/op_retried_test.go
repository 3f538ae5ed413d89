package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// TestRetriedSaysWhatTheClientDoes: against a node that answers 503 to everything,
// the operations Op.Retried calls sent once are sent once, and a read is tried again;
// the CLI's hint for a 503 says which it was.
func TestRetriedSaysWhatTheClientDoes(t *testing.T) {
	ctx := context.Background()
	three := 3
	calls := []struct {
		op   Op
		call func(c *Client) error
	}{
		{OpCreateTopic, func(c *Client) error { _, err := c.CreateTopic(ctx, TopicSpec{Name: "t"}); return err }},
		{OpEditTopic, func(c *Client) error { _, err := c.EditTopic(ctx, "t", TopicPatch{Partitions: &three}); return err }},
		{OpDeleteTopic, func(c *Client) error { return c.DeleteTopic(ctx, "t") }},
		{OpAttachChild, func(c *Client) error { _, err := c.AttachChild(ctx, "t", "c", 0); return err }},
		{OpDetachChild, func(c *Client) error { return c.DetachChild(ctx, "t", "c") }},
		{OpAddUser, func(c *Client) error { _, err := c.CreateUser(ctx, "u", "pw", nil); return err }},
		{OpSetGrants, func(c *Client) error { _, err := c.SetGrants(ctx, "u", nil); return err }},
		{OpSetPassword, func(c *Client) error { return c.SetPassword(ctx, "u", "new", "") }},
		{OpDeleteUser, func(c *Client) error { return c.DeleteUser(ctx, "u") }},
		{OpDecommission, func(c *Client) error { _, err := c.Decommission(ctx, "n", DecommissionStart); return err }},
		{OpCancelDecommission, func(c *Client) error { _, err := c.Decommission(ctx, "n", DecommissionCancel); return err }},
		{OpReady, func(c *Client) error { return c.Ready(ctx) }},
		{OpTopicInfo, func(c *Client) error { _, err := c.Topic(ctx, "t"); return err }},
		{OpListTopics, func(c *Client) error { _, err := c.ListTopics(ctx); return err }},
	}
	for _, k := range calls {
		n := newNode(t, func(w http.ResponseWriter, r *http.Request, i int, body []byte) {
			writeJSON(w, http.StatusServiceUnavailable, `{"error":"try again"}`)
		})
		c, _ := newClient(t, n.URL)
		err := k.call(c)
		var e *Error
		if !errors.As(err, &e) || e.Op != k.op {
			t.Errorf("%s: err %v, want an *Error of that op", k.op, err)
			continue
		}
		if sent, retried := len(n.requests()), k.op.Retried(); retried != (sent > 1) {
			t.Errorf("%s: sent %d times, but Retried() says %v", k.op, sent, retried)
		}
	}
}
