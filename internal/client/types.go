// Package client owns the typed HTTP calls of the Narad v3.1 API (with the fallbacks an
// older node needs), the one error type and the one retry policy the CLI uses.
package client

import (
	"encoding/json"
	"time"
)

// Message is one message as the API hands it out, by consume or by replay.
// Payload is kept as the raw JSON bytes the node sent so that a JSON payload stays
// byte-for-byte what was produced; use PayloadBytes for the produced bytes.
type Message struct {
	Topic           string          `json:"topic"`
	Partition       int             `json:"partition"`
	Offset          int64           `json:"offset"`
	Key             *string         `json:"key,omitempty"`
	KeyEncoding     string          `json:"key_encoding,omitempty"`
	Payload         json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding,omitempty"`
	Timestamp       int64           `json:"timestamp"`
	ReceiptHandle   string          `json:"receipt_handle,omitempty"`
}

// ConsumeOptions are the query parameters of a consume.
type ConsumeOptions struct {
	// Wait long-polls for up to Wait; zero asks for an immediate answer.
	Wait time.Duration
	// Partition restricts the consume to one partition; nil means any.
	Partition *int
	// Max > 0 asks for a batch of up to Max (1..100) messages; 0 asks for the
	// single-message shape.
	Max int
	// Stop, when closed, ends the consume without another attempt; a request already
	// sent is left to finish, since the node may have leased messages for it.
	Stop <-chan struct{}
}

// ConsumeResult is what one consume answered. Messages is empty on 204.
type ConsumeResult struct {
	Messages []Message
	// Single is a batch asked for (Max > 0) and answered in the single-message shape:
	// a node older than v3.1, which hands out one message per consume whatever max says.
	Single bool
}

// ProduceOptions are the query parameters of a produce.
type ProduceOptions struct {
	Key       *string
	Partition *int
}

// Action is what a settlement does with a leased message.
type Action int

const (
	// Ack settles the message for good.
	Ack Action = iota
	// Extend renews the lease for a full visibility timeout from now.
	Extend
	// Nack gives the message back at once.
	Nack
)

// SettleResult is the final answer for one handle, after retries.
type SettleResult struct {
	Handle string
	// Status is 204 on success, 410 when the lease was gone, else the last status seen
	// (0 when the request never got an answer).
	Status int
	// Err explains any Status other than 204.
	Err string
	// Retries counts the extra attempts this handle needed.
	Retries int
}

// TopicSpec is the body of a topic create. Zero fields are left for the node's defaults.
type TopicSpec struct {
	Name                      string `json:"name"`
	Partitions                int    `json:"partitions,omitempty"`
	RetentionMs               int64  `json:"retention_ms,omitempty"`
	VisibilityTimeoutMs       int64  `json:"visibility_timeout_ms,omitempty"`
	MaxInFlightPerPartition   int    `json:"max_in_flight_per_partition,omitempty"`
	MaxAckedAheadPerPartition int    `json:"max_acked_ahead_per_partition,omitempty"`
	// Parent makes the new topic a fan-out child of that topic, FanoutDelayMs a delay child.
	Parent        string `json:"parent,omitempty"`
	FanoutDelayMs int64  `json:"fanout_delay_ms,omitempty"`
}

// Topic is a topic as the node describes it; PartitionStats only from topic info.
type Topic struct {
	Name                      string          `json:"name"`
	Partitions                int             `json:"partitions"`
	RetentionMs               int64           `json:"retention_ms"`
	VisibilityTimeoutMs       int64           `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition   int             `json:"max_in_flight_per_partition"`
	MaxAckedAheadPerPartition int             `json:"max_acked_ahead_per_partition"`
	CreatedAt                 int64           `json:"created_at,omitempty"`
	Parent                    string          `json:"parent,omitempty"`
	FanoutDelayMs             int64           `json:"fanout_delay_ms,omitempty"`
	Children                  []string        `json:"children,omitempty"`
	SchemaVersion             int             `json:"schema_version,omitempty"`
	Schema                    json.RawMessage `json:"schema,omitempty"`
	// Partial is a node answering with a partition owner down: the stats of the
	// missing partitions are placeholders, not to be summed.
	Partial        bool             `json:"partial,omitempty"`
	PartitionStats []PartitionStats `json:"partition_stats,omitempty"`
}

// VisibilityTimeout is the topic's lease: how long a consumed message stays hidden
// unless it is extended.
func (t *Topic) VisibilityTimeout() time.Duration {
	return time.Duration(t.VisibilityTimeoutMs) * time.Millisecond
}

// PartitionStats is one partition's positions, from topic info.
type PartitionStats struct {
	Index         int    `json:"index"`
	OldestOffset  int64  `json:"oldest_offset"`
	NextOffset    int64  `json:"next_offset"`
	HighWatermark int64  `json:"high_watermark"`
	SizeBytes     int64  `json:"size_bytes"`
	Owner         string `json:"owner_node,omitempty"`
	Status        string `json:"status,omitempty"`
}
