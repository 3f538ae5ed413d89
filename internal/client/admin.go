package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// The operator's calls: topic settings, fan-out children, users and grants, the
// cluster and the node's metrics. Writes are never retried (a retried PATCH or
// POST after an unseen success would apply twice or answer 409); reads are retried
// like every other read.

// TopicPatch is the body of a topic edit: only the fields set are sent, and the node
// applies them one after another (it is not a transaction).
type TopicPatch struct {
	Partitions                *int            `json:"partitions,omitempty"`
	RetentionMs               *int64          `json:"retention_ms,omitempty"`
	MaxInFlightPerPartition   *int            `json:"max_in_flight_per_partition,omitempty"`
	MaxAckedAheadPerPartition *int            `json:"max_acked_ahead_per_partition,omitempty"`
	Schema                    json.RawMessage `json:"schema,omitempty"`
}

// Empty reports a patch that would change nothing (the node answers it 400).
func (p TopicPatch) Empty() bool {
	return p.Partitions == nil && p.RetentionMs == nil && p.MaxInFlightPerPartition == nil &&
		p.MaxAckedAheadPerPartition == nil && len(p.Schema) == 0
}

// EditTopic changes a topic's settings and returns the topic as it now is.
func (c *Client) EditTopic(ctx context.Context, name string, p TopicPatch) (*Topic, error) {
	var t Topic
	if err := c.writeJSON(ctx, OpEditTopic, http.MethodPatch, topicPath(name, ""), p, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Child is one fan-out child as its parent lists it.
type Child struct {
	Name        string `json:"name"`
	DelayMs     int64  `json:"delay_ms"`
	LagMessages int64  `json:"lag_messages"`
	LagComplete bool   `json:"lag_complete"`
}

// Children lists a parent's fan-out children with their lag.
func (c *Client) Children(ctx context.Context, parent string) ([]Child, error) {
	var out struct {
		Children []Child `json:"children"`
	}
	if err := c.getJSON(ctx, OpListChildren, topicPath(parent, "/children"), nil, &out); err != nil {
		return nil, err
	}
	return out.Children, nil
}

// AttachChild makes child a fan-out child of parent (a delay child when delayMs > 0)
// and returns the parent as it now is.
func (c *Client) AttachChild(ctx context.Context, parent, child string, delayMs int64) (*Topic, error) {
	body := struct {
		Child   string `json:"child"`
		DelayMs int64  `json:"delay_ms"`
	}{child, delayMs}
	var t Topic
	if err := c.writeJSON(ctx, OpAttachChild, http.MethodPost, topicPath(parent, "/children"), body, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// DetachChild stops copying parent's messages into child; both topics and their data stay.
func (c *Client) DetachChild(ctx context.Context, parent, child string) error {
	return c.writeJSON(ctx, OpDetachChild, http.MethodDelete,
		topicPath(parent, "/children/"+url.PathEscape(child)), nil, nil)
}

// UserGrant is one grant of a user: an action over topic patterns.
type UserGrant struct {
	Action   string   `json:"action"`
	Patterns []string `json:"patterns,omitempty"`
}

// User is a user as the node describes it: never a password or its hash.
type User struct {
	Username    string      `json:"username"`
	Grants      []UserGrant `json:"grants"`
	Root        bool        `json:"root,omitempty"`
	CreatedAtMs int64       `json:"created_at_ms,omitempty"`
	UpdatedAtMs int64       `json:"updated_at_ms,omitempty"`
}

// Users lists the node's users.
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var users []User
	if err := c.getJSON(ctx, OpListUsers, "/v1/users", nil, &users); err != nil {
		return nil, err
	}
	return users, nil
}

// User describes one user.
func (c *Client) User(ctx context.Context, name string) (*User, error) {
	var u User
	if err := c.getJSON(ctx, OpShowUser, userPath(name, ""), nil, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// CreateUser adds a user with a password and grants.
func (c *Client) CreateUser(ctx context.Context, name, password string, grants []UserGrant) (*User, error) {
	body := struct {
		Username string      `json:"username"`
		Password string      `json:"password"`
		Grants   []UserGrant `json:"grants"`
	}{name, password, nonNilGrants(grants)}
	var u User
	if err := c.writeJSON(ctx, OpAddUser, http.MethodPost, "/v1/users", body, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// SetGrants replaces every grant of a user.
func (c *Client) SetGrants(ctx context.Context, name string, grants []UserGrant) (*User, error) {
	body := struct {
		Grants []UserGrant `json:"grants"`
	}{nonNilGrants(grants)}
	var u User
	if err := c.writeJSON(ctx, OpSetGrants, http.MethodPut, userPath(name, "/grants"), body, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// SetPassword changes a user's password; current is needed when users change their own.
func (c *Client) SetPassword(ctx context.Context, name, newPassword, current string) error {
	body := struct {
		NewPassword     string `json:"new_password"`
		CurrentPassword string `json:"current_password,omitempty"`
	}{newPassword, current}
	return c.writeJSON(ctx, OpSetPassword, http.MethodPut, userPath(name, "/password"), body, nil)
}

// DeleteUser removes a user.
func (c *Client) DeleteUser(ctx context.Context, name string) error {
	return c.writeJSON(ctx, OpDeleteUser, http.MethodDelete, userPath(name, ""), nil, nil)
}

func userPath(name, rest string) string { return "/v1/users/" + url.PathEscape(name) + rest }

func nonNilGrants(g []UserGrant) []UserGrant {
	if g == nil {
		return []UserGrant{}
	}
	return g
}

// Member is one node of the cluster.
type Member struct {
	ID              string `json:"id"`
	Addr            string `json:"addr"`
	Status          string `json:"status"`
	Draining        bool   `json:"draining"`
	OwnedPartitions int    `json:"owned_partitions"`
	OutboundMoves   int    `json:"outbound_moves"`
}

// Move is one partition moving between nodes.
type Move struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	From      string `json:"from"`
	To        string `json:"to"`
}

// Members lists the cluster's nodes.
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	var out struct {
		Members []Member `json:"members"`
	}
	if err := c.getJSON(ctx, OpClusterMembers, "/v1/cluster/members", nil, &out); err != nil {
		return nil, err
	}
	return out.Members, nil
}

// Moves lists the partitions moving between nodes.
func (c *Client) Moves(ctx context.Context) ([]Move, error) {
	var out struct {
		Moves []Move `json:"moves"`
	}
	if err := c.getJSON(ctx, OpClusterMoves, "/v1/cluster/moves", nil, &out); err != nil {
		return nil, err
	}
	return out.Moves, nil
}

// DecommissionMode is what a decommission call asks for.
type DecommissionMode int

const (
	// DecommissionStart drains the member's partitions away.
	DecommissionStart DecommissionMode = iota
	// DecommissionDryRun asks what a decommission would do, changing nothing.
	DecommissionDryRun
	// DecommissionCancel stops a decommission in progress.
	DecommissionCancel
)

// Decommission starts, previews or cancels draining a member. A dry run returns the
// node's verdict as the JSON it sent; the others return nil on success.
func (c *Client) Decommission(ctx context.Context, id string, mode DecommissionMode) (json.RawMessage, error) {
	path := "/v1/cluster/members/" + url.PathEscape(id) + "/decommission"
	r := &request{op: OpDecommission, method: http.MethodPost, path: path, ctype: "application/json"}
	switch mode {
	case DecommissionDryRun:
		r.query = "dry_run=true"
	case DecommissionCancel:
		r.op, r.method, r.ctype = OpCancelDecommission, http.MethodDelete, ""
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	if resp.status/100 != 2 {
		return nil, resp.err(r.op)
	}
	if mode == DecommissionDryRun && len(resp.body) > 0 {
		if !json.Valid(resp.body) {
			return nil, fmt.Errorf("%s: bad JSON in answer", r.op)
		}
		return json.RawMessage(resp.body), nil
	}
	return nil, nil
}

// Metrics fetches the node's Prometheus text.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	resp, err := c.bounded(ctx, &request{op: OpMetrics, method: http.MethodGet, path: "/metrics"})
	if err != nil {
		return nil, err
	}
	if resp.status != http.StatusOK {
		return nil, resp.err(OpMetrics)
	}
	return resp.body, nil
}

// writeJSON sends one write with body as JSON (nil: no body) and decodes a 2xx answer
// into out (nil: the answer is not read). Writes are not retried.
func (c *Client) writeJSON(ctx context.Context, op Op, method, path string, body, out any) error {
	r := &request{op: op, method: method, path: path}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		r.body, r.ctype = b, "application/json"
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	if resp.status/100 != 2 {
		return resp.err(op)
	}
	if out != nil && len(resp.body) > 0 {
		if err := json.Unmarshal(resp.body, out); err != nil {
			return fmt.Errorf("%s: bad JSON in answer: %w", op, err)
		}
	}
	return nil
}

// SchemaVersion is one registered version of a topic's schema.
type SchemaVersion struct {
	Version int             `json:"version"`
	Schema  json.RawMessage `json:"schema"`
}

// SchemaHistory is a topic's schema versions, oldest first; Version is the current one
// (0: the topic has no schema).
type SchemaHistory struct {
	Topic    string          `json:"topic"`
	Version  int             `json:"version"`
	Versions []SchemaVersion `json:"versions"`
}

// Schema reads a topic's schema history. A node without the schema route (a router's
// plain 404) is asked for the topic instead, whose current schema is all it has.
func (c *Client) Schema(ctx context.Context, topic string) (*SchemaHistory, error) {
	var h SchemaHistory
	err := c.getJSON(ctx, OpTopicSchema, topicPath(topic, "/schema"), nil, &h)
	if err == nil {
		return &h, nil
	}
	if !IsRouteMissing(err) {
		return nil, err
	}
	t, err := c.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	h = SchemaHistory{Topic: t.Name, Version: t.SchemaVersion}
	if len(t.Schema) > 0 && t.SchemaVersion > 0 {
		h.Versions = []SchemaVersion{{Version: t.SchemaVersion, Schema: t.Schema}}
	}
	return &h, nil
}
