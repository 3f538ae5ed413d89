package devbroker

import (
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults and limits of a v3.1 node, as API.md states them.
const (
	// DefaultDevAddr is where `narad dev` listens unless told otherwise.
	DefaultDevAddr = "127.0.0.1:7942"

	DefaultPartitions             = 3
	MinPartitions                 = 3
	MaxPartitions                 = 108
	DefaultVisibility             = 30 * time.Second
	DefaultRetention              = 7 * 24 * time.Hour
	DefaultMaxInFlight            = 1024
	DefaultMaxAckedAhead          = 1024
	DefaultMaxConsumeWait         = 10 * time.Second
	DefaultMaxConsumesPerIdentity = 1024

	// MaxMessageBytes is the largest produce body.
	MaxMessageBytes = 1 << 20
	// MaxBatch is the largest max of a batch consume and the most handles of a batch ack.
	MaxBatch = 100
	// MaxAckBodyBytes is the largest body of a batch ack.
	MaxAckBodyBytes = 64 << 10

	// A batch consume stops adding messages once it holds about batchSoftBytes and never
	// answers more than batchHardBytes, except that the first message always goes.
	batchSoftBytes = 4 << 20
	batchHardBytes = 8 << 20
)

// Config is what a Broker is built from. The zero value is a valid loopback broker with
// no topics, no auth and no faults.
type Config struct {
	Addr                   string        // listen address; "" means "127.0.0.1:0"
	Topics                 []TopicSpec   // created at start
	DefaultVisibility      time.Duration // default visibility timeout for new topics; 0 → 30s
	MaxConsumeWait         time.Duration // cap on wait; 0 → 10s
	MaxConsumesPerIdentity int           // 0 → 1024
	Users                  []User        // non-empty turns Basic auth on
	Faults                 []FaultRule   // from --fault flags
	Legacy                 bool          // behave like an older (v2/v3.0) node
	Log                    io.Writer     // optional: one line per request (method, path, status); nil = silent
	// Now is the broker's clock: message timestamps, retention, leases, delay children,
	// topic and user times. nil means time.Now; tests pass a clock they move by hand.
	Now func() time.Time
}

// TopicSpec describes a topic to create. Zero fields take the node's defaults.
type TopicSpec struct {
	Name                      string
	Partitions                int
	VisibilityTimeout         time.Duration
	RetentionMs               int64
	MaxInFlightPerPartition   int
	MaxAckedAheadPerPartition int
	// Parent makes the topic a fan-out child of that existing topic, with FanoutDelayMs
	// a delay child; Partitions then defaults to the parent's count.
	Parent        string
	FanoutDelayMs int64
	// Schema is a JSON Schema document registered as version 1; "" for none.
	Schema string
}

// User is one Basic auth identity and what it may do.
type User struct {
	Name, Password string
	Grants         []Grant
}

// Grant allows one action on the topics matching any of Patterns. A pattern is a topic
// name or a prefix ending in "*". Action "admin" needs no patterns and allows everything.
type Grant struct {
	Action   string // produce|consume|create|admin
	Patterns []string
}

// ErrInvalid wraps every validation error of a TopicSpec, a flag or a Config.
var ErrInvalid = errors.New("invalid")

// nameChars is a topic or user name's alphabet. Compiled on first use: every narad
// command links this package, and a compiled {1,255} cost 300 KB at each start.
var nameChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]+$`) })

func validTopicName(name string) bool {
	return len(name) <= 255 && nameChars().MatchString(name) && name != "." && name != ".."
}

// normalize fills in defaults and checks a spec against the rules of API.md, so that a
// topic created from Go is held to the same rules as one created over HTTP.
func (s TopicSpec) normalize(defVis time.Duration) (TopicSpec, error) {
	if !validTopicName(s.Name) {
		return s, fmt.Errorf(`%w topic name %q: it must match ^[A-Za-z0-9._-]{1,255}$ and not be "." or ".."`, ErrInvalid, s.Name)
	}
	switch {
	case s.Partitions == 0:
		s.Partitions = DefaultPartitions
	case s.Partitions < MinPartitions || s.Partitions > MaxPartitions:
		return s, fmt.Errorf("%w partitions %d: must be between %d and %d", ErrInvalid, s.Partitions, MinPartitions, MaxPartitions)
	}
	switch {
	case s.VisibilityTimeout == 0:
		s.VisibilityTimeout = defVis
	case s.VisibilityTimeout < time.Millisecond:
		return s, fmt.Errorf("%w visibility timeout %v: must be at least 1ms", ErrInvalid, s.VisibilityTimeout)
	}
	// The wire carries milliseconds; keep the Go side identical to what info reports.
	s.VisibilityTimeout = s.VisibilityTimeout.Truncate(time.Millisecond)
	if err := orDefault(&s.RetentionMs, DefaultRetention.Milliseconds(), "retention_ms"); err != nil {
		return s, err
	}
	if err := orDefault(&s.MaxInFlightPerPartition, DefaultMaxInFlight, "max_in_flight_per_partition"); err != nil {
		return s, err
	}
	if err := orDefault(&s.MaxAckedAheadPerPartition, DefaultMaxAckedAhead, "max_acked_ahead_per_partition"); err != nil {
		return s, err
	}
	return s, nil
}

// orDefault sets *v to def when it is zero (the API's "use the default") and refuses
// a negative value.
func orDefault[T ~int | ~int64](v *T, def T, what string) error {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		return fmt.Errorf("%w %s %v: must be positive", ErrInvalid, what, *v)
	}
	return nil
}

// ParseTopicFlag parses a `--topic` flag: "orders" or "orders:5".
func ParseTopicFlag(s string) (TopicSpec, error) {
	name, parts, hasParts := strings.Cut(s, ":")
	spec := TopicSpec{Name: name}
	if hasParts {
		n, err := strconv.Atoi(parts)
		if err != nil {
			return spec, fmt.Errorf("%w --topic %q: partitions must be a number, as in orders:5", ErrInvalid, s)
		}
		if n < MinPartitions || n > MaxPartitions {
			return spec, fmt.Errorf("%w --topic %q: partitions must be between %d and %d", ErrInvalid, s, MinPartitions, MaxPartitions)
		}
		spec.Partitions = n
	}
	if !validTopicName(name) {
		return spec, fmt.Errorf(`%w --topic %q: the name must match ^[A-Za-z0-9._-]{1,255}$ and not be "." or ".."`, ErrInvalid, s)
	}
	return spec, nil
}

// ParseUser parses a `--user` flag: "NAME:PASS:GRANT[,GRANT]" where the name and the
// password end at the first two colons and each grant is "action:pattern" or "admin",
// e.g. "app:s3cret:consume:orders*,produce:orders".
func ParseUser(s string) (User, error) {
	name, rest, ok1 := strings.Cut(s, ":")
	pass, grants, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || name == "" || pass == "" || grants == "" {
		return User{}, fmt.Errorf("%w --user %q: want NAME:PASS:GRANTS, e.g. app:s3cret:consume:orders*,produce:orders", ErrInvalid, redactUser(s))
	}
	u := User{Name: name, Password: pass}
	for _, g := range strings.Split(grants, ",") {
		grant, err := parseGrant(g)
		if err != nil {
			return User{}, fmt.Errorf("%w --user %q: %v", ErrInvalid, redactUser(s), err)
		}
		u.Grants = append(u.Grants, grant)
	}
	return u, nil
}

// redactUser keeps a password out of error messages, which end up in terminals and CI logs.
func redactUser(s string) string {
	name, rest, ok := strings.Cut(s, ":")
	if !ok {
		return s
	}
	_, grants, ok := strings.Cut(rest, ":")
	if !ok {
		return name + ":***"
	}
	return name + ":***:" + grants
}

func parseGrant(g string) (Grant, error) {
	if g == "admin" {
		return Grant{Action: "admin"}, nil
	}
	action, pattern, ok := strings.Cut(g, ":")
	switch {
	case !ok:
		return Grant{}, fmt.Errorf("grant %q: want action:pattern or admin", g)
	case action != "produce" && action != "consume" && action != "create":
		return Grant{}, fmt.Errorf("grant %q: action must be produce, consume, create or admin", g)
	case !validPattern(pattern):
		return Grant{}, fmt.Errorf("grant %q: pattern must be a topic name or a prefix ending in *", g)
	}
	return Grant{Action: action, Patterns: []string{pattern}}, nil
}

func validPattern(p string) bool {
	if p == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(p, "*"); ok {
		return len(prefix) <= 255 && nameChars().MatchString(prefix)
	}
	return validTopicName(p)
}

// isLoopback reports whether a listen address only accepts local connections. An empty
// host (":7942") listens on every interface, so it is not loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
