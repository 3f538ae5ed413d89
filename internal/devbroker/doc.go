// Package devbroker owns the in-memory, single-node Narad v3.1 broker that `narad dev`
// runs in the foreground and that tests start on 127.0.0.1:0.
//
// It is meant to be faithful rather than convenient: status codes, headers, bodies and
// error texts are those of API.md (shared/API.md) and of the v3.1 consuming guide, so
// that a client which passes against it also passes against a production node. Where
// production is loose (handles it never promised to keep secret, for instance) the dev
// broker is stricter, never looser, for the same reason.
//
// The pieces:
//   - config.go: Config, TopicSpec, User and the parsers of `narad dev` flags.
//   - broker.go: the Broker, its life cycle (New, Start, ListenAndServe, Close) and the
//     inspection API tests use (Stats, Requests).
//   - topic.go: one topic's queue state: messages, leases, flow control, waiters.
//   - encode.go: the exact JSON of a message (payload and key encodings, field order).
//   - handle.go: receipt handles, "PARTITION:OFFSET:NONCE" with a random nonce.
//   - http.go: the routes of API.md.
//   - auth.go: Basic auth, grants and the failed-login limit.
//   - faults.go: fault injection, from flags and from Go (FailNext).
//   - legacy mode (Config.Legacy, SetLegacy) makes the broker answer like a v2/v3.0
//     node, so the fallbacks of a client can be tested.
//
// State lives under one mutex per topic. No lock is held while a request long-polls: a
// waiter takes the topic's notification channel, which is closed (and replaced) when a
// produce, a nack, an ack that frees flow control, or a lease expiry may have made a
// message available.
package devbroker
