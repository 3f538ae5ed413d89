package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// ListTopics lists every topic, following next_page_token to the last page.
func (c *Client) ListTopics(ctx context.Context) ([]Topic, error) {
	var all []Topic
	seen := map[string]bool{}
	token := ""
	for {
		q := url.Values{}
		if token != "" {
			q.Set("page_token", token)
		}
		var page struct {
			Topics        []Topic `json:"topics"`
			NextPageToken string  `json:"next_page_token"`
		}
		if err := c.getJSON(ctx, OpListTopics, "/v1/topics", q, &page); err != nil {
			return nil, err
		}
		for i := range page.Topics {
			if err := checkPartitions(OpListTopics, &page.Topics[i]); err != nil {
				return nil, err
			}
		}
		all = append(all, page.Topics...)
		token = page.NextPageToken
		if token == "" {
			return all, nil
		}
		// A node that hands back a token it already gave would otherwise be listed forever.
		if seen[token] {
			return nil, fmt.Errorf("list topics: the node repeated page token %q", token)
		}
		seen[token] = true
	}
}

// Topic describes one topic, with its partitions' positions. A consume grant is enough.
func (c *Client) Topic(ctx context.Context, name string) (*Topic, error) {
	var t Topic
	if err := c.getJSON(ctx, OpTopicInfo, topicPath(name, ""), nil, &t); err != nil {
		return nil, err
	}
	if err := checkPartitions(OpTopicInfo, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// maxPartitions bounds the partition count a node's answer may give a topic: a node
// takes 3 to 108, and a count is what a reader of every partition makes a slice of
// (a negative one panicked; 2^31 would have run the machine out of memory).
const maxPartitions = 100_000

// checkPartitions refuses a topic whose partition count no node would give.
func checkPartitions(op Op, t *Topic) error {
	if t.Partitions < 0 || t.Partitions > maxPartitions {
		return fmt.Errorf("%s: bad answer: topic %q has %d partitions (a node gives 0 to %d)", op, t.Name, t.Partitions, maxPartitions)
	}
	return nil
}

// CreateTopic creates a topic; zero fields of spec are left to the node's defaults.
// It is not retried: a retry after an unseen success would answer 409.
func (c *Client) CreateTopic(ctx context.Context, spec TopicSpec) (*Topic, error) {
	body, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", OpCreateTopic, err)
	}
	resp, err := c.send(ctx, &request{op: OpCreateTopic, method: http.MethodPost, path: "/v1/topics",
		body: body, ctype: "application/json"})
	if err != nil {
		return nil, err
	}
	if resp.status/100 != 2 {
		return nil, resp.err(OpCreateTopic)
	}
	t := Topic{Name: spec.Name}
	if len(resp.body) > 0 {
		if err := json.Unmarshal(resp.body, &t); err != nil {
			return nil, fmt.Errorf("%s: bad JSON in answer: %w", OpCreateTopic, err)
		}
	}
	return &t, nil
}

// DeleteTopic deletes a topic and its messages. Not retried, like CreateTopic.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	resp, err := c.send(ctx, &request{op: OpDeleteTopic, method: http.MethodDelete, path: topicPath(name, "")})
	if err != nil {
		return err
	}
	if resp.status/100 != 2 {
		return resp.err(OpDeleteTopic)
	}
	return nil
}

// Ready asks /readyz: nil when the node serves, *Error (503) while it starts. It is
// a probe, so its answer is reported as is, never retried.
func (c *Client) Ready(ctx context.Context) error {
	resp, err := c.send(ctx, &request{op: OpReady, method: http.MethodGet, path: "/readyz"})
	if err != nil {
		return err
	}
	if resp.status != http.StatusOK {
		return resp.err(OpReady)
	}
	return nil
}

// getJSON is a read: retried like a produce, then decoded into v.
func (c *Client) getJSON(ctx context.Context, op Op, path string, q url.Values, v any) error {
	resp, err := c.bounded(ctx, &request{op: op, method: http.MethodGet, path: path, query: q.Encode()})
	if err != nil {
		return err
	}
	if resp.status != http.StatusOK {
		return resp.err(op)
	}
	if err := json.Unmarshal(resp.body, v); err != nil {
		return fmt.Errorf("%s: bad JSON in answer: %w", op, err)
	}
	return nil
}
