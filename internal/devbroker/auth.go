package devbroker

import (
	"crypto/subtle"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// What a request needs to be allowed. permRead is topic info, its schema and its
// children, which any grant on the topic or owning it allows ("readable with a
// consume-only grant"); permList is any valid user; permManage (edit, delete, fan-out
// links) is owning the topic or admin; permAdmin is admin (users, cluster).
type permission uint8

const (
	permProduce permission = iota
	permConsume            // consume, replay, ack, extend, nack
	permCreate
	permRead
	permList
	permManage
	permAdmin
)

func (p permission) String() string {
	return [...]string{"produce", "consume", "create", "read", "list", "manage", "admin"}[p]
}

// As a real node: 5 failed logins for one user name, then 429, with one attempt back
// every 12 s, so a client that loops on 401 is stopped.
const (
	loginBurst  = 5
	loginRefill = 12 * time.Second
)

type loginBucket struct {
	tokens float64
	at     time.Time
}

// account is a user as the store holds it. The store never changes an account in
// place (a change replaces it), so a copy handed to a request stays consistent.
type account struct {
	User
	root             bool // the root admin: holds every right, the only one who grants admin
	created, updated time.Time
}

// authenticator is the user store (the --user flags, then the /v1/users routes) and
// the failed-login limit.
type authenticator struct {
	now func() time.Time // the broker's clock: failed logins come back with it

	mu    sync.Mutex
	users map[string]*account
	fails map[string]*loginBucket
}

// newAuthenticator builds the store from the --user flags. The root admin is the first
// user with the admin grant: like the bootstrap admin of a real node, it cannot be
// deleted and is the only one who can grant admin.
func newAuthenticator(users []User, clock func() time.Time) (*authenticator, error) {
	a := &authenticator{now: clock, users: make(map[string]*account), fails: make(map[string]*loginBucket)}
	now := clock()
	rooted := false
	for _, u := range users {
		if u.Name == "" || u.Password == "" || strings.Contains(u.Name, ":") {
			return nil, fmt.Errorf("%w user %q: a name (without colons) and a password are required", ErrInvalid, u.Name)
		}
		if _, dup := a.users[u.Name]; dup {
			return nil, fmt.Errorf("%w user %q: given twice", ErrInvalid, u.Name)
		}
		for _, g := range u.Grants {
			if g.Action == "admin" {
				continue
			}
			if g.Action != "produce" && g.Action != "consume" && g.Action != "create" {
				return nil, fmt.Errorf("%w user %q: grant action %q must be produce, consume, create or admin", ErrInvalid, u.Name, g.Action)
			}
			for _, p := range g.Patterns {
				if !validPattern(p) {
					return nil, fmt.Errorf("%w user %q: grant pattern %q must be a topic name or a prefix ending in *", ErrInvalid, u.Name, p)
				}
			}
		}
		acct := &account{User: u, created: now, updated: now}
		if !rooted && u.isAdmin() {
			acct.root, rooted = true, true
		}
		a.users[u.Name] = acct
	}
	return a, nil
}

func (u User) isAdmin() bool {
	for _, g := range u.Grants {
		if g.Action == "admin" {
			return true
		}
	}
	return false
}

// bucketLocked refills the bucket of name and returns it.
func (a *authenticator) bucketLocked(name string, now time.Time) *loginBucket {
	b := a.fails[name]
	if b == nil {
		if len(a.fails) > 10000 {
			// Guessed names must not grow the map for ever; full buckets carry nothing.
			for n, x := range a.fails {
				if x.tokens+now.Sub(x.at).Seconds()/loginRefill.Seconds() >= loginBurst {
					delete(a.fails, n)
				}
			}
		}
		b = &loginBucket{tokens: loginBurst, at: now}
		a.fails[name] = b
	}
	b.tokens = min(loginBurst, b.tokens+now.Sub(b.at).Seconds()/loginRefill.Seconds())
	b.at = now
	return b
}

// lockedFor is how long until a user name locked out after failed logins has an
// attempt back: what its 429's Retry-After says (API.md), in whole seconds.
func (a *authenticator) lockedFor(r *http.Request) int {
	name, _, _ := r.BasicAuth()
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.bucketLocked(name, a.now())
	return max(1, int(math.Ceil((1-b.tokens)*loginRefill.Seconds())))
}

// authenticate checks Basic credentials: a copy of the account, or a status and error
// text.
func (a *authenticator) authenticate(r *http.Request) (account, int, string) {
	name, pass, ok := r.BasicAuth()
	if !ok {
		return account{}, http.StatusUnauthorized, "authentication required"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.bucketLocked(name, a.now())
	if b.tokens < 1 {
		return account{}, http.StatusTooManyRequests, fmt.Sprintf("too many failed logins for user %q: try again later", name)
	}
	u, known := a.users[name]
	stored := ""
	if known {
		stored = u.Password
	}
	// Compare even for an unknown name, so timing does not tell which names exist.
	good := subtle.ConstantTimeCompare([]byte(pass), []byte(stored)) == 1
	if !known || !good {
		b.tokens--
		return account{}, http.StatusUnauthorized, "invalid user name or password"
	}
	return *u, 0, ""
}

func matchPattern(pattern, topic string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(topic, prefix)
	}
	return pattern == topic
}

// allowed reports whether u's grants let it do perm on topic (ownership aside).
func (u User) allowed(perm permission, topic string) bool {
	if perm == permList {
		return true
	}
	for _, g := range u.Grants {
		if g.Action == "admin" {
			return true
		}
		switch perm {
		case permAdmin, permManage:
			continue
		case permRead:
		default:
			if g.Action != perm.String() {
				continue
			}
		}
		for _, p := range g.Patterns {
			if matchPattern(p, topic) {
				return true
			}
		}
	}
	return false
}

// mayTopic reports whether u may do perm on the topic name, which is t when it exists:
// reading and managing a topic are also its owner's. A nil u is security off.
func (u *account) mayTopic(perm permission, name string, t *topic) bool {
	if u == nil || u.allowed(perm, name) {
		return true
	}
	return (perm == permRead || perm == permManage) && t != nil && t.owner != "" && t.owner == u.Name
}

// authenticate answers 401 or 429 and returns false when the credentials do not let the
// request go on; it comes before the body is read, and permit (or permitTopic) follows
// once the topic is known. u is nil when auth is off. identity is who the per-identity
// consume limit counts: the user, or the client's address when auth is off.
func (b *Broker) authenticate(w http.ResponseWriter, r *http.Request) (u *account, identity string, ok bool) {
	if b.auth == nil {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		return nil, "addr:" + host, true
	}
	user, status, text := b.auth.authenticate(r)
	if status != 0 {
		switch status {
		case http.StatusUnauthorized:
			w.Header().Set("WWW-Authenticate", `Basic realm="narad"`)
		case http.StatusTooManyRequests:
			w.Header().Set("Retry-After", strconv.Itoa(b.auth.lockedFor(r)))
		}
		writeError(w, status, text)
		return nil, "", false
	}
	return &user, "user:" + user.Name, true
}

// permit answers 403 and returns false when u may not do perm on topic.
func (b *Broker) permit(w http.ResponseWriter, u *account, perm permission, topic string) bool {
	if u == nil || u.allowed(perm, topic) {
		return true
	}
	deny(w, u, perm, topic)
	return false
}

// permitTopic is permit for an existing topic (or nil), whose owner may read and
// manage it.
func (b *Broker) permitTopic(w http.ResponseWriter, u *account, perm permission, name string, t *topic) bool {
	if u.mayTopic(perm, name, t) {
		return true
	}
	deny(w, u, perm, name)
	return false
}

// deny answers the 403 naming what u lacks.
func deny(w http.ResponseWriter, u *account, perm permission, topic string) {
	what := fmt.Sprintf("a %s grant for topic %q", perm, topic)
	switch perm {
	case permRead:
		what = fmt.Sprintf("a grant for topic %q", topic)
	case permManage:
		what = fmt.Sprintf("the admin grant and does not own topic %q", topic)
	case permAdmin:
		what = "the admin grant"
	}
	writeError(w, http.StatusForbidden, fmt.Sprintf("user %q lacks %s", u.Name, what))
}
