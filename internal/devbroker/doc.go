// Package devbroker owns the in-memory, single-node Narad v3.1 broker that `narad dev`
// runs in the foreground and that tests start on 127.0.0.1:0.
//
// It is meant to be faithful rather than convenient: status codes, headers, bodies and
// error texts are those of API.md (shared/API.md), of the v3.1 consuming guide and, where
// API.md leaves a question open, of a real node's HTTP reference, so that a client which
// passes against it also passes against a production node. Where production is loose
// (handles it never promised to keep secret, for instance) the dev broker is stricter,
// never looser, for the same reason. Request bodies are strict: an unknown field is a 400.
//
// The pieces:
//   - config.go: Config, TopicSpec, User and the parsers of `narad dev` flags.
//   - broker.go: the Broker, its life cycle (New, Start, ListenAndServe, Close), topic
//     creation and deletion, and the inspection API tests use (Stats, Requests).
//   - topic.go: one topic's queue state: messages, leases, flow control, waiters.
//   - fanout.go: fan-out and delay children (links with a cursor per parent partition,
//     copies, timers for delays); Attach and Detach from Go.
//   - schema.go: a topic's schema history and the subset of JSON Schema it enforces.
//   - encode.go: the exact JSON of a message (payload and key encodings, field order).
//   - handle.go: receipt handles, "PARTITION:OFFSET:NONCE" with a random nonce.
//   - http.go: the route table, produce and ack; consume.go: consume and replay;
//     http_topics.go: topics, schemas and children; users.go: users and grants (only
//     with security on; otherwise the router answers 404); cluster.go: the one-member
//     cluster; metrics.go: GET /metrics.
//   - auth.go: Basic auth, the user store shared by --user flags and /v1/users (the
//     first --user with admin is the root admin), grants, topic ownership (a topic's
//     creator reads and manages it) and the failed-login limit.
//   - faults.go: fault injection, from flags and from Go (FailNext).
//   - legacy mode (Config.Legacy, SetLegacy) makes the broker answer like a v2/v3.0
//     node, so the fallbacks of a client can be tested.
//
// How it differs from a real multi-node cluster: one member ("narad-0") owns every
// partition, so there are never moves, placeholders ("partial") or 421/502/503 relays
// (except injected faults); decommission is always refused (409: it is the only voter
// and no node can take its partitions) and forget refuses the leader (400); fan-out
// copies into immediate children before the parent's 202 rather than a moment after,
// and lag_complete is always true; metrics are read at the scrape, not every 5 s; a
// schema change is not checked for compatibility and only part of JSON Schema is
// enforced (see schema.go); retention_ms 0 means the node's default, as API.md says
// (a real node keeps messages forever), and there is no 1-hour minimum; nothing is
// durable.
//
// Time comes from Config.Now (time.Now by default): message timestamps, retention,
// leases, delay children and creation times, so tests move a clock instead of
// sleeping. Long polls and lease timers still run on real time; an operation on a
// topic first applies what its clock says is due.
//
// State lives under one mutex per topic, topology (which topics exist, fan-out links)
// under the broker's. No lock is held while a request long-polls: a waiter takes the
// topic's notification channel, which is closed (and replaced) when a produce, a
// fan-out copy, a nack, an ack that frees flow control, a raised cap, or a lease expiry
// may have made a message available.
package devbroker
